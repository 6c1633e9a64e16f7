/* The RTC's figures, pure: its calendar registers decoded (BCD or binary,
   12 or 24 h, per register B; MC146818A data sheet, "Data mode" and
   "24/12"), the seconds register's steps, and the rate of the TSC against
   the RTC's seconds, fitted over the TSC times of its second boundaries
   ("edges"), and held against the TSC's rate by another reference. No
   hardware header: compiled for the host and tested there. */
#ifndef CLOCKBENCH_RTC_FIT_H
#define CLOCKBENCH_RTC_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "xf.h"

/* The registers as read. */
struct rtc_raw {
    uint8_t sec, min, hour, day, month, year;
    uint8_t reg_b;   /* data mode (bit 2: binary) and hour mode (bit 1: 24 h) */
};

struct rtc_datetime {
    uint32_t year;   /* 2000 + the register: the century register's place varies (ACPI FADT CENTURY) */
    uint8_t month, day, hour, min, sec;
};

/* False when a field is out of range or not BCD in BCD mode; then only
   what decoded is meaningful. */
bool rtc_decode(const struct rtc_raw *raw, struct rtc_datetime *out);

/* Register B says 12-hour, yet the hour reads 0 or 13-23 with no PM bit:
   the device keeps 24-hour time whatever B says (decoded so, as Linux does). */
bool rtc_hour_ignores_mode(const struct rtc_raw *raw);
/* Seconds, minutes and hours only (day fields ignored). */
bool rtc_decode_clock(const struct rtc_raw *raw, uint32_t *seconds_of_day);

/* One second boundary: the update ended somewhere in [a, b] (TSC), and the
   clock then read seconds_of_day. */
struct rtc_edge {
    uint64_t a, b;
    uint32_t seconds_of_day;
};

#define RTC_DAY_S 86400u
/* The RTC crystal's tolerance, assumed (no part states one): a watch crystal
   is typically +-20 ppm at 25 C, more hot or cold and aged. The check of the
   TSC against the RTC and the calibration by the RTC both use it. */
#define RTC_TOLERANCE_PPM 100
#define RTC_TYPICAL_PPM 20
/* The RTC seconds from one edge to the next: their clock readings' difference
   modulo a day. */
static inline uint32_t rtc_seconds_between(uint32_t from_sod, uint32_t to_sod)
{
    return (to_sod + RTC_DAY_S - from_sod) % RTC_DAY_S;
}

/* The middle of a TSC bracket [a, b], rounded down, with no overflow. */
static inline uint64_t rtc_tsc_mid(uint64_t a, uint64_t b) { return a / 2 + b / 2 + (a & b & 1); }

/* One RTC second in TSC ticks by two edges, p before q: their middles'
   distance over the RTC seconds between them, kept only within 10 % of the
   estimate (two edges that do not agree with it say nothing of the second),
   else the estimate. */
uint64_t rtc_period_tsc(const struct rtc_edge *p, const struct rtc_edge *q, uint64_t tsc_hz_estimate);

/* Over consecutive edges: the least RTC count between two (0 when it never
   moved), and the least TSC time between two one RTC second apart (0 when
   no two are). */
void rtc_min_steps(const struct rtc_edge *e, uint32_t n, uint32_t *min_step_s, uint64_t *min_step_tsc);

/* Two reads of the seconds register one after the other. It counts 0-59
   and wraps (from 0x59 in BCD, 59 in binary): any other fall is backward. */
enum rtc_step { RTC_STEP_SAME, RTC_STEP_FORWARD, RTC_STEP_BACKWARD };
static inline enum rtc_step rtc_seconds_step(uint8_t prev, uint8_t now)
{
    if (now == prev)
        return RTC_STEP_SAME;
    if (now < prev && !(prev == 0x59 || prev == 59))
        return RTC_STEP_BACKWARD;
    return RTC_STEP_FORWARD;
}

#define RTC_FIT_MAX 512         /* edges fitted; more are thinned to every k-th */

struct rtc_fit {
    bool fitted;                /* at least 2 edges in one run */
    uint32_t edges;             /* given */
    uint32_t used;              /* fitted: of the longest run without a discontinuity, less the wide and the outliers */
    uint32_t wide;              /* left out: bracket over 4 times the narrowest and 2 us */
    uint32_t outliers;          /* left out: residual over 5 times the robust spread (at least the narrowest bracket, 1 us) */
    uint32_t discontinuities;   /* intervals where the RTC's count and the TSC disagree by a second or more */
    uint32_t backward;          /* of those, the RTC's clock went back (or stood still) */
    uint32_t span_s;            /* RTC seconds from the first edge fitted to the last */
    struct xf tsc_per_s;        /* slope: TSC ticks per RTC second */
    struct xf stderr_rel;       /* least-squares standard error of the slope / slope (0 with 2 edges) */
    struct xf bracket_rel;      /* the widest edge bracket over the span / slope: a bound */
    struct xf uncertainty_rel;  /* sqrt(stderr^2 + bracket^2) */
    uint64_t widest_tsc;        /* widest edge bracket fitted, TSC ticks */
    struct xf resid_rms_tsc;    /* residual RMS, TSC ticks (0 with 2 edges) */
};

/* Fits TSC time (bracket midpoints) against RTC seconds. tsc_hz_estimate
   (ticks per second, within a few %) tells a lost second from a late edge:
   an interval whose RTC count differs from its TSC time by half a second or
   more is a discontinuity, and only the longest run of edges without one is
   fitted, less its wide brackets and outliers. */
void rtc_fit_edges(const struct rtc_edge *e, uint32_t n, uint64_t tsc_hz_estimate, struct rtc_fit *out);

/* The RTC's step against the TSC between the two consecutive edges whose
   bracket middles hold at_tsc (a stop of the machine, say): count, the RTC
   seconds between them (exact; the edge after it is passed over for the
   next when that follows on, one RTC second later by the TSC: QEMU's first
   update after a resume can end late), less their TSC time at tsc_per_s (ticks
   per RTC second, +-u_rel): step_ns > 0 when the RTC ran ahead of the TSC
   (the TSC stood still while the wall clock ran). Its uncertainty, a bound:
   the two edges' half brackets and twice the fit's residual RMS (rms_tsc:
   edge timing beyond the brackets), and the TSC time's share of u_rel.
   False when no two edges hold at_tsc, or tsc_per_s is 0. */
struct rtc_jump {
    uint32_t after;          /* the edge after the step */
    uint32_t count_s;        /* RTC seconds between the edges */
    uint64_t from_tsc, to_tsc; /* the edges' bracket middles */
    struct xf step_ns, u_ns;
};
bool rtc_jump_across(const struct rtc_edge *e, uint32_t n, uint64_t at_tsc, struct xf tsc_per_s, struct xf u_rel,
                     struct xf rms_tsc, struct rtc_jump *out);
/* Where the RTC's count and the TSC time disagree most between consecutive
   edges (tsc_hz_estimate within a few %): the middle of that interval, or 0
   when none disagree by half a second or more. */
uint64_t rtc_largest_discontinuity(const struct rtc_edge *e, uint32_t n, uint64_t tsc_hz_estimate);
/* Of every interval where they disagree by half a second or more, the one
   whose step (rtc_jump_across at its middle) is largest: a stop, where a
   lone edge misread or late steps back at the next (its step, taken over
   to the edge after, is nothing). *at_tsc gets its middle. False when none. */
bool rtc_largest_jump(const struct rtc_edge *e, uint32_t n, uint64_t tsc_hz_estimate, struct xf tsc_per_s, struct xf u_rel,
                      struct xf rms_tsc, struct rtc_jump *out, uint64_t *at_tsc);

/* A rate by the RTC held against the same rate by another reference. */
struct rtc_vs {
    struct xf ppm;    /* the TSC's: from its rate by the drift reference; another counter's: from nominal */
    struct xf u_ppm;  /* standard uncertainty: the fit's and the other figure's in quadrature */
};
/* The TSC: tsc_per_rtc_s (the fit's slope, +-u_fit_ppm) over tsc_hz, its
   rate by the drift reference (+-u_tsc_ppm); *ratio gets that ratio. */
struct rtc_vs rtc_tsc_vs(struct xf tsc_per_rtc_s, struct xf u_fit_ppm, struct xf tsc_hz, struct xf u_tsc_ppm, struct xf *ratio);
/* Another counter, through the TSC: its ppm from nominal by the drift
   reference (ppm_ref +-u_ref), scaled by that ratio. */
struct rtc_vs rtc_counter_vs(struct xf ppm_ref, struct xf u_ref, struct xf ratio, struct xf u_fit_ppm);
/* Agreement within a tolerance: |ppm| <= tolerance_ppm + 3 u. */
bool rtc_agrees(struct rtc_vs v, uint32_t tolerance_ppm);

#endif

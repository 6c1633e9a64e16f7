/* Timer interrupt lateness, the pure part (experiment "timers"): rates and margins, wait modes, the HPET's route, tallies, the choice. */
#ifndef CLOCKBENCH_TIMER_ANALYSIS_H
#define CLOCKBENCH_TIMER_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acpi.h"
#include "latency.h"
#include "xf.h"

enum timer_id { TIMER_LAPIC, TIMER_DEADLINE, TIMER_HPET, TIMER_PIT, TIMER_COUNT };

#define TIMER_DELAYS 4
extern const uint32_t timer_delay_ns[TIMER_DELAYS]; /* 1 us, 10 us, 100 us, 1 ms */
#define TIMER_CHOICE_DELAY 2                        /* 100 us: the delay the choice compares */
#define TIMER_MAX_WAITS 9                           /* busy, hlt and up to 7 MWAIT hints */
#define TIMER_RATE_MARGIN_SIGMAS 3                  /* converted deadlines are pushed late by this many stated uncertainties */
#define TIMER_BOUND_DELAYS 20                       /* an event is lost this many delays after its deadline (or a floor) */

struct timer_wait {
    char name[16];
    bool mwait, hlt;
    uint32_t hint;                   /* MWAIT's EAX */
};

/* One timer at one delay in one way of waiting. */
struct timer_cell {
    bool ran;
    uint32_t asked, came, lost, passed_arming;
    uint32_t stray;                  /* interrupts on the vector before the device reached its target */
    uint32_t away;                   /* events left out: the CPU was away for over 1 ms (busy: a TSC gap; any wait: the reference
                                        stood still; idle: the event came after its bound, which the watchdog would have ended) */
    uint32_t away_reference;         /* of those, told by the reference standing still while the TSC ran */
    int64_t away_max;                /* the latest of those events, TSC ticks after the instant */
    bool stopped;                    /* too many lost in a row */
    /* lateness is from the instant the timer fires (timer_deadline.h); s.early
       counts events before the time asked for, s.bins[0] those before that
       instant */
    struct latency_summary s;        /* in TSC ticks */
    uint64_t width_p50, width_max;   /* its events' fire windows (the quantisation), median and widest, TSC ticks */
    uint64_t rate_u;                 /* how far the instant may be off by the rate (3 sigma), TSC ticks */
    struct timer_early_raw {         /* the first event before the time asked for, as read */
        uint64_t asked, earliest, t0, t1, count, entry, device; /* device: the HPET counter read; else the count written */
    } early_raw;
};

/* One timer's measurement on the boot CPU. */
struct timer_result {
    bool usable;
    char why[128];                   /* why not measured */
    char route[160];                 /* how its interrupt reaches the CPU */
    struct xf per_tsc;               /* its ticks per TSC tick (LAPIC, HPET, PIT) */
    struct xf per_tsc_u;             /* relative uncertainty of that */
    bool rate_known;
    uint64_t count[TIMER_DELAYS];    /* its ticks programmed for each delay */
    bool clean;                      /* busy waits: every event came: fit to be a watchdog */
    char idle_why[96];               /* why idle waits were not measured */
    struct timer_cell cell[TIMER_MAX_WAITS][TIMER_DELAYS];
};

/* --- rates and deadlines --- */

/* Ticks of a counter per TSC tick from two readings v0, v1 (modulo mask),
   each bracketed by TSC reads [a, b], with its relative uncertainty: the
   brackets over the TSC time between their midpoints, plus one tick of the
   counter over its count. False when either difference is 0. */
bool timer_rate_from_readings(uint64_t v0, uint64_t a0, uint64_t b0, uint64_t v1, uint64_t a1, uint64_t b1, uint64_t mask,
                              struct xf *ratio, struct xf *u);
/* A timer's own ticks for tsc_ticks, pushed late by TIMER_RATE_MARGIN_SIGMAS
   times the rate's uncertainty, rounded, plus 2 (the rounding and the tick
   under way): it cannot fire early unless its rate is wrong. */
uint64_t timer_ticks_for(struct xf per_tsc, struct xf per_tsc_u, uint64_t tsc_ticks);
/* TSC ticks for ticks of a timer (rounded). */
uint64_t timer_tsc_ticks_of(struct xf per_tsc, uint64_t ticks);
/* That margin, in ppm. */
struct xf timer_margin_ppm(struct xf per_tsc_u);
/* A rate's uncertainty against the TSC in ppm: its own plus the TSC's. */
struct xf timer_rate_u_ppm(struct xf per_tsc_u, struct xf tsc_u_ppm);
/* A timer's rate against a reference counter measured beside it:
   (timer/TSC) / (reference/TSC) x the reference's nominal rate, with the
   sum of the two relative uncertainties in ppm. */
void timer_rate_vs_reference(struct xf per_tsc, struct xf per_tsc_u, struct xf ref_per_tsc, struct xf ref_per_tsc_u,
                             struct xf ref_nominal_hz, struct xf *hz, struct xf *u_ppm);
/* TSC ticks for delay_ns at tsc_hz, rounded down (no 64-bit overflow for a TSC below 4 THz). */
uint64_t timer_delay_ticks(uint64_t tsc_hz, uint32_t delay_ns);
/* How long after its deadline an event counts as lost: TIMER_BOUND_DELAYS
   delays, at least min_ticks. */
uint64_t timer_bound_ticks(uint64_t delay_ticks, uint64_t min_ticks);
/* The first histogram edge, 250 ns in TSC ticks (at least 1). */
int64_t timer_bin_edge(uint64_t tsc_hz);

/* a - b for a comparator and counter of 32 or 64 bits, signed in that
   width: negative while a is before b. Inline: it runs between arming and
   waiting. */
static inline int64_t timer_distance(uint64_t a, uint64_t b, bool bits64)
{
    return bits64 ? (int64_t)(a - b) : (int32_t)((uint32_t)a - (uint32_t)b);
}

/* --- wait modes and routes --- */

/* busy, hlt, then MWAIT with each C-state CPUID leaf 5 EDX enumerates (C1
   always; hint (n - 1) << 4 for C(n), SDM vol. 2B, MWAIT, Table 4-11) when
   MONITOR/MWAIT is there (CPUID.1:ECX[3]) and leaf 5 is; note says which
   hints were asked or why none. Returns how many modes w holds. */
unsigned timer_waits_build(bool monitor, uint32_t max_leaf, uint32_t leaf5_edx, struct timer_wait w[TIMER_MAX_WAITS], char *note,
                           size_t note_size);
/* The I/O APIC input for HPET comparator 0 from its route capability
   (bit n: GSI n can be routed): above the ISA range first, then any but the
   8259's (0), the PIT's (2) and the RTC's (8). Returns the I/O APIC's index
   with *gsi and *pin, or -1 when no offered input is served. */
int timer_hpet_gsi(uint32_t caps, const struct acpi_info *a, uint32_t pins_of[ACPI_MAX_IOAPICS], uint32_t *gsi, uint32_t *pin);
/* The watchdog for an idle wait on timer id: another usable timer whose busy
   waits all came, never one that shares its vector (shared: the HPET and
   the PIT share one pin): for the APIC timers the PIT, else the HPET; for
   the HPET and PIT the APIC timer one-shot, else TSC-deadline, else the
   other. -1 when none. */
int timer_watchdog_for(const struct timer_result t[TIMER_COUNT], int id, bool shared);

/* --- how many events a cell takes, and what its tail is --- */

#define TIMER_P99_MIN_EVENTS 100     /* a p99 is stated only from this many events; below, the maximum stands in */
#define TIMER_P999_MIN_EVENTS 1000   /* and a p99.9 from this many */
#define TIMER_MAIN_BUDGET_NUM 5      /* a main cell's budget: the profile's cell budget x 5/2 */
#define TIMER_MAIN_BUDGET_DEN 2

/* The main rows: busy and hlt at 10 us and 100 us, where every profile
   takes at least TIMER_P99_MIN_EVENTS events (within a budget). */
bool timer_main_cell(const struct timer_wait *w, unsigned di);
/* Events and time budget for a cell: the profile's, raised for a main cell
   to TIMER_P99_MIN_EVENTS events and TIMER_MAIN_BUDGET_NUM/DEN times the
   budget; never above max_events. */
void timer_cell_plan(uint32_t events, uint64_t budget, bool main_cell, uint32_t max_events, uint32_t *cell_events,
                     uint64_t *cell_budget);
/* The tail a cell's sample carries: its p99 from TIMER_P99_MIN_EVENTS
   events, else its maximum (*is_max set). */
int64_t timer_tail(const struct timer_cell *c, bool *is_max);

/* --- time away --- */

/* TSC ticks during which a reference counter stood still while the TSC ran
   (a VM paused under KVM: QEMU's HPET and PM timer stop, the TSC runs on),
   from two bracketed readings [a0, b0], [a1, b1] and the counter's advance
   between them (unwrapped, lib/unwrap.h): the least TSC time that passed,
   a1 - b0, less the most the advance accounts for, advance + 1 ticks at
   the reference's rate pushed slow by TIMER_RATE_MARGIN_SIGMAS times its
   uncertainty. 0 when the advance accounts for it all. */
uint64_t timer_stood_still_tsc(uint64_t advance, uint64_t a0, uint64_t b0, uint64_t a1, uint64_t b1, struct xf ref_per_tsc,
                               struct xf ref_u);

/* --- tallies and the choice --- */

struct timer_tally {
    uint64_t asked, early, lost, stray;
};

enum timer_outcome { TIMER_ON_TIME, TIMER_EARLY, TIMER_LOST };

/* Adds a cell that ran. */
void timer_tally_add(struct timer_tally *t, const struct timer_cell *c);
/* Early if any came before its deadline, else lost if any never came. */
enum timer_outcome timer_tally_outcome(const struct timer_tally *t);
/* The timer for precise events: the lowest tail lateness (timer_tail)
   plus its quantisation (width_max) at TIMER_CHOICE_DELAY among usable timers none of whose cells had an event
   early or lost, over the first waits ways of waiting. -1 when none, else
   the timer, with the way of waiting in *wait. */
int timer_choose(const struct timer_result t[TIMER_COUNT], unsigned waits, unsigned *wait);

#endif

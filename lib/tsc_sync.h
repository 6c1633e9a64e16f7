/* Where another CPU's TSC stands relative to the boot CPU's, as an interval
   that must contain the truth. Pure: the exchanges are made by
   experiments/exp_cpus.c; the host tests feed made-up ones.

   One exchange: the boot CPU reads its TSC (before), asks; the other CPU,
   having seen the request, reads its own TSC (theirs) and answers; the boot
   CPU, having seen the answer, reads its TSC again (after). The other CPU's
   read happened between the boot CPU's two, so if its TSC is the boot CPU's
   plus an offset d, before < theirs - d < after, that is
       theirs - after < d < theirs - before.
   Every exchange bounds d this way; their intersection bounds it best (the
   bound from the shortest round trip alone is the classic one, FreeBSD's
   tsc.c and Linux's check_tsc_warp use the same causality). An empty
   intersection means the premise failed: the two TSCs moved against each
   other during the exchanges, or a read was not ordered. */
#ifndef CLOCKBENCH_TSC_SYNC_H
#define CLOCKBENCH_TSC_SYNC_H

#include <stdbool.h>
#include <stdint.h>

struct tsc_offset {
    uint32_t exchanges;
    int64_t lo, hi;            /* the other CPU's TSC minus the boot CPU's lies in [lo, hi] */
    uint64_t round_trip_min;   /* the shortest after - before */
    int64_t best_lo, best_hi;  /* the bounds from that shortest exchange alone */
};

void tsc_offset_init(struct tsc_offset *o);
/* One exchange, in TSC ticks (64-bit values; differences taken modulo 2^64
   so a wrap between them does not matter). Ignored when after < before
   (the boot CPU's own TSC went back: no bound can be taken). */
void tsc_offset_add(struct tsc_offset *o, uint64_t before, uint64_t theirs, uint64_t after);
/* At least one exchange and lo <= hi. */
bool tsc_offset_consistent(const struct tsc_offset *o);
/* The midpoint and half-width of [lo, hi] (rounded outwards: the
   half-width covers both ends from the rounded midpoint). */
int64_t tsc_offset_mid(const struct tsc_offset *o);
/* CPU i's TSC minus CPU j's, from each one's interval against the boot
   CPU: [lo_i - hi_j, hi_i - lo_j], saturated. Wider than a direct
   measurement between the two, but as sure: it must hold the truth when
   both intervals do. False when either interval is inconsistent. */
bool tsc_offset_between(const struct tsc_offset *i, const struct tsc_offset *j, int64_t *lo, int64_t *hi);
uint64_t tsc_offset_half(const struct tsc_offset *o);
/* Whether x lies in [lo, hi]. */
bool tsc_offset_contains(const struct tsc_offset *o, int64_t x);
/* The largest |d| the interval allows. */
uint64_t tsc_offset_worst(const struct tsc_offset *o);

/* The other CPU's TSC rate relative to the boot CPU's, from two offset
   intervals taken elapsed_ticks apart (boot CPU's TSC): d moved by
   d2 - d1, which lies in [lo2 - hi1, hi2 - lo1]. Gives the midpoint and the
   half-width in units of 10^-3 ppm (integer: no floating point in the
   kernel). False when either interval is inconsistent or elapsed is 0. */
bool tsc_offset_rate(const struct tsc_offset *first, const struct tsc_offset *second, uint64_t elapsed_ticks,
                     int64_t *rate_mppm, uint64_t *uncertainty_mppm);



/* tsc_skew=CPU:TICKS from the command line: CPU a decimal index, TICKS a
   decimal or 0x number with an optional sign, non-zero. False when the
   text is not of that form. */
bool tsc_skew_parse(const char *s, uint32_t *cpu, int64_t *ticks);
#endif

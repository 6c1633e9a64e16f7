/* Differences of a counter that may wrap, judged by the TSC time that
   passed between the two readings (STYLE: "a counter that can wrap is
   unwrapped by elapsed time, in one helper"). Pure.

   A reading is taken between two TSC reads [a, b]. Between a reading at
   [a0, b0] and a later one at [a1, b1] the TSC says at least a1 - b0 and at
   most b1 - a0 ticks passed. A counter that ran at its nominal rate (within
   rate_tol_ppm) advanced between those bounds times its rate; it cannot
   have advanced more (it does not run faster than that), but it may have
   advanced less (it was stopped while the TSC ran). While the largest
   possible advance is below one wrap, the modular difference is exact
   whatever happened; beyond that the counter cannot tell how many times it
   wrapped, and the step is a gap. */
#ifndef CLOCKBENCH_UNWRAP_H
#define CLOCKBENCH_UNWRAP_H

#include <stdbool.h>
#include <stdint.h>

struct unwrap_params {
    uint64_t mask;            /* (1 << width) - 1; ~0 for 64 bits */
    uint64_t counter_millihz; /* the counter's nominal rate, mHz (> 0) */
    uint64_t tsc_hz;          /* the TSC rate assumed for the bounds (> 0) */
    uint32_t rate_tol_ppm;    /* how far the true counter/TSC ratio may be from nominal/tsc_hz */
    uint64_t slack_ticks;     /* counter ticks allowed beyond the bounds: quantisation, latch delay */
};

enum step_kind {
    STEP_NORMAL,       /* advanced as much as the TSC time allows */
    STEP_SLOW,         /* advanced less than the TSC time requires: it stood still for part of it */
    STEP_FAST,         /* advanced more than the TSC time allows: the counter jumped, or the TSC stood still */
    STEP_BACKWARD,     /* went back by `backward` ticks */
    STEP_GAP,          /* the TSC time is longer than the counter can unwrap: advance unknown */
    STEP_TSC_BACKWARD, /* the second bracket starts before the first ends: the TSC went back */
};

struct step {
    enum step_kind kind;
    uint64_t advance;      /* counter ticks: the modular difference, for every kind but GAP, BACKWARD, TSC_BACKWARD */
    uint64_t backward;     /* ticks, for STEP_BACKWARD */
    uint64_t min_expected; /* counter ticks the TSC time requires (already less slack, floored at 0) */
    uint64_t max_expected; /* counter ticks the TSC time allows (already plus slack); saturates at ~0 */
};

/* Classifies the step from reading `prev` (bracket [a0, b0]) to `now`
   (bracket [a1, b1]); both readings are masked by the caller or not (they
   are masked here). With rate = counter_millihz / (1000 tsc_hz) and
   tol = rate_tol_ppm / 10^6, exactly (no rounding but the last):
     min_expected = floor((a1 - b0) rate (1 - tol)) - slack, floored at 0
                    (0 when tol >= 100%),
     max_expected = ceil((b1 - a0) rate (1 + tol)) + slack, saturated.
   Rules, in order:
   - a1 < b0 (as a signed difference: the later bracket starts before the
     earlier one ended), or a bracket that ends before it starts:
     TSC_BACKWARD, with every other field 0;
   - max_expected >= mask (a whole wrap could fit; at exactly mask the
     difference would still be unique, so this errs by one tick on the safe
     side): GAP;
   - d = (now - prev) & mask; d <= max_expected: SLOW if d < min_expected, else NORMAL;
   - else, for a counter narrower than 64 bits, the wrap-around distance
     (prev - now) & mask: BACKWARD when it is at most half the range,
     FAST otherwise; for 64 bits, BACKWARD when d >= 2^63, FAST otherwise. */
void unwrap_step(const struct unwrap_params *p, uint64_t prev, uint64_t a0, uint64_t b0, uint64_t now, uint64_t a1,
                 uint64_t b1, struct step *out);

/* The longest TSC time (ticks) over which the difference is still exact:
   max_expected stays below one wrap (b1 - a0 up to this is never GAP, one
   more is). ~0 for a 64-bit counter (unless it runs so much faster than
   the TSC that max_expected saturates); 0 when the slack alone is a wrap. */
uint64_t unwrap_limit_tsc(const struct unwrap_params *p);

/* Counter ticks the counter makes in tsc_ticks at its nominal rate:
   tsc_ticks * counter_millihz / (1000 * tsc_hz), exact (128-bit), rounded down. */
uint64_t unwrap_expected_ticks(const struct unwrap_params *p, uint64_t tsc_ticks);

#endif

/* The arithmetic of a cost measured in rounds (issue 48): each API's cost
   is taken in rounds spread over its language's measurement, interleaved
   across the language's APIs, and beside each round clockbench-os times a
   fixed reference loop and the bare read on the same CPU. The figure is
   the median over the rounds; its interval covers both each round's own
   interval and the variation between rounds, so that a run caught in a
   slow moment of the host does not claim a precision it does not have.
   Pure: compiled into the host test library too (tests/host). */
#ifndef CLOCKBENCH_OS_ROUNDS_H
#define CLOCKBENCH_OS_ROUNDS_H

#include <stdbool.h>

#define LANG_ROUNDS_MAX 15
/* a round whose reference loop took this much longer than the fastest
   round's ran on a slower host (a vCPU's speed here moves by up to 2x) */
#define LANG_ROUND_SLOW 1.25

struct lang_rounds {
    int n;
    double p50_ns[LANG_ROUNDS_MAX];       /* each round's p50 */
    double lo_ns[LANG_ROUNDS_MAX], hi_ns[LANG_ROUNDS_MAX]; /* each round's own 95% interval (its p50 when it has none) */
    double ref_ns[LANG_ROUNDS_MAX];       /* the reference loop in that round, 0 unknown */
    double bare_ns[LANG_ROUNDS_MAX];      /* the bare read's p50 in that round, 0 unknown */
};

struct lang_rounds_summary {
    int n;
    int median_round;        /* the round whose p50 is the median (the lower middle of an even count) */
    double p50_ns;           /* the median over the rounds */
    double lo_ns, hi_ns;     /* its interval (below) */
    double confidence;       /* that interval's coverage of the median by order statistics; 0 for one round */
    bool ratio_known;
    double ratio_p50;        /* the median over the rounds of p50 / the same round's bare read */
    bool speed_known;
    double speed_spread;     /* (slowest - fastest) / fastest reference loop over the rounds: how much the host's speed moved */
    int slow_rounds;         /* rounds whose reference loop took LANG_ROUND_SLOW times the fastest's or more */
};

/* The order statistics that hold the median of n rounds with at least 95%:
   the k-th lowest and k-th highest (1-based); for n under 6 no pair does,
   and k is 1 (the whole range: 94% for 5, 88% for 4, 75% for 3, 50% for 2).
   *coverage: the pair's exact coverage, 1 - 2 P(Bin(n, 1/2) < k). */
int lang_rounds_rank(int n, double *coverage);

/* Over the n rounds: the median round's p50; the interval from the k-th
   lowest of the rounds' lows to the k-th highest of their highs (k from
   lang_rounds_rank), so that it spans both each round's own uncertainty
   and the spread between rounds; the ratio to the bare read and the
   reference loop's spread where every round has them. False for n < 1. */
bool lang_rounds_summarise(const struct lang_rounds *r, struct lang_rounds_summary *s);

#endif

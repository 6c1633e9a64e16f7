/* The arithmetic of a cost measured in rounds (issue 48): each API's cost
   is taken in rounds spread over its language's measurement, interleaved
   across the language's APIs, and beside each round clockbench-os times a
   fixed reference loop and the bare read on the same CPU. The figure is
   the median over the rounds; its interval is the order statistics of the
   rounds' p50s that hold that median with 95%, widened by the timer's
   step, so that it covers the variation between rounds (the moments of
   the host, and the probe processes the rounds are spread over) and a
   run caught in a slow moment does not claim a precision it lacks.
   Pure: compiled into the host test library too (tests/host). */
#ifndef CLOCKBENCH_OS_ROUNDS_H
#define CLOCKBENCH_OS_ROUNDS_H

#include <stdbool.h>

#define LANG_ROUNDS_MAX 15
/* A round whose reference loop took this much longer than the fastest seen
   in the run ran while the host was slower. Measured here (2 vCPUs, EPYC,
   2026-12-07): at full speed the loop varies by about 3%; with it 5-7%
   slower CPython's calls took 68-76 ns instead of 58, with it 30-60%
   slower 100-110 ns: an interpreter slows far more than the loop does, so
   the line is drawn close. The figure is the host's at full speed, from
   the rounds run at it, when at least LANG_ROUNDS_FULL_MIN of them were. */
#define LANG_ROUND_SLOW 1.06
#define LANG_ROUNDS_FULL_MIN 3

struct lang_rounds {
    int n;
    double p50_ns[LANG_ROUNDS_MAX];       /* each round's p50 */
    double lo_ns[LANG_ROUNDS_MAX], hi_ns[LANG_ROUNDS_MAX]; /* each round's own 95% interval (its p50 when it has none): one round's figure */
    double step_ns;                       /* the timer's step per call: the interval is widened by it */
    double fastest_ref_ns;                /* the run's fastest reference loop so far (the host at full speed), 0 unknown */
    double ref_ns[LANG_ROUNDS_MAX];       /* the reference loop in that round, 0 unknown */
    double bare_ns[LANG_ROUNDS_MAX];      /* the bare read's p50 in that round, 0 unknown */
};

struct lang_rounds_summary {
    int n;
    int kept;                /* the rounds the figure is of: those at full speed, or all (below) */
    bool slow_throughout;    /* fewer than LANG_ROUNDS_FULL_MIN rounds at full speed: the figure is of every round, a slow host's */
    double p50_all_ns;       /* the median over every round, whatever the host's speed */
    int median_round;        /* the round whose p50 is the median (the lower middle of an even count) */
    double p50_ns;           /* the median over the rounds */
    double lo_ns, hi_ns;     /* its interval (below) */
    double confidence;       /* that interval's coverage of the median by order statistics; 0 for one round */
    bool ratio_known;
    double ratio_p50;        /* the median over the rounds of p50 / the same round's bare read */
    bool speed_known;
    double speed_spread;     /* (slowest - fastest) / fastest reference loop over the rounds: how much the host's speed moved */
    int slow_rounds;         /* rounds whose reference loop took over LANG_ROUND_SLOW times the run's fastest */
};

/* The order statistics that hold the median of n rounds with at least 95%:
   the k-th lowest and k-th highest (1-based); for n under 6 no pair does,
   and k is 1 (the whole range: 94% for 5, 88% for 4, 75% for 3, 50% for 2).
   *coverage: the pair's exact coverage, 1 - 2 P(Bin(n, 1/2) < k). */
int lang_rounds_rank(int n, double *coverage);

/* The rounds kept: those whose reference loop ran within LANG_ROUND_SLOW of
   the run's fastest, when there are LANG_ROUNDS_FULL_MIN of them; else every
   round (slow_throughout). Over those: the median round's p50; the
   interval from the k-th lowest to the k-th highest of their p50s (k from
   lang_rounds_rank), widened by step_ns on each side (one round: its own
   interval); the ratio to the bare read and the reference loop's spread
   (over every round) where every round has them. False for n < 1. */
bool lang_rounds_summarise(const struct lang_rounds *r, struct lang_rounds_summary *s);

#endif

/* Statistics over samples: exact percentiles (nearest rank over the sorted
   samples), mean and standard deviation, and the histogram of distinct
   values behind the sequential-reads table. Pure. */
#ifndef CLOCKBENCH_STATS_H
#define CLOCKBENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xf.h"

/* Ascending. scratch holds n values (a radix sort: a few passes over the
   data, where a comparison sort costs n log n; it matters on virtual CPUs
   that emulate every instruction). */
void stats_sort(uint64_t *v, size_t n, uint64_t *scratch);

/* Nearest rank: the smallest sample with at least per_mille/1000 of the
   samples at or below it (numpy: percentile(..., method="inverted_cdf")). */
uint64_t stats_percentile(const uint64_t *sorted, size_t n, unsigned per_mille);

struct summary {
    size_t n;
    uint64_t min, p50, p99, p999, max;
    struct xf mean, stddev; /* population standard deviation */
};

/* Sorts v in place (scratch: n values) and summarises it. Mean and
   deviation come from exact integer sums. n == 0 gives an all-zero summary. */
void stats_summarise(uint64_t *v, size_t n, uint64_t *scratch, struct summary *s);

/* A summary less a constant (the empty bracket's median): every figure,
   floored at 0, so that min <= p50 <= p99 <= max still holds; the
   deviation is unchanged. */
void stats_subtract(struct summary *s, uint64_t overhead);

/* Leaves out the pairs (a[i], b[i]) of which either is above `limit`: the
   bracketed read and its empty bracket that held a stop of the machine (a
   VM paused, migrated, restored, while the TSC ran on), which is no cost of
   a read. The rest keep their order; returns how many are kept. *longest
   gets the longest sample left out (0 when none). */
size_t stats_drop_pairs_above(uint64_t *a, uint64_t *b, size_t n, uint64_t limit, uint64_t *longest);

/* Greatest common divisor; gcd(0, b) = b. */
uint64_t stats_gcd(uint64_t a, uint64_t b);

/* The TSC's step from a staircase: mins[j] is the least bracketed time of
   j dependent additions (one cycle each), j = 0..n-1. A TSC that counts
   every tick climbs by a tick or two a step of j; one that advances in
   coarse steps (an AMD host's, about 10 ns: ../shared/PLATFORM.md) stays
   flat, then jumps by its step. Back-to-back reads cannot tell the two
   apart (their difference is RDTSC's own latency on both, and such a TSC
   still shows stray 1-tick differences), the staircase can. Returns the
   median of the positive jumps between successive minima (robust to a
   stray one), 0 when the minima never rose. */
uint64_t stats_staircase_step(const uint64_t *mins, size_t n);

/* A figure from single bracketed reads that lies within STEP_FEW steps of
   the TSC (including 0) cannot be told from the step's quantisation: it is
   printed as below the step, and a batch of reads between two brackets
   gives the per-read figure instead. A TSC that counts every tick (step 1)
   resolves everything. */
#define STEP_FEW 3
static inline bool stats_below_step(uint64_t ticks, uint64_t step) { return step > 1 && ticks < STEP_FEW * step; }

struct hist_bin {
    uint64_t value;
    uint64_t count;
};

/* Run-length encodes sorted values into (value, count) bins, ascending.
   Returns the number of distinct values; writes at most max bins. */
size_t stats_histogram(const uint64_t *sorted, size_t n, struct hist_bin *bins, size_t max);

#endif

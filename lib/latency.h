/* Timer lateness: how long after its deadline an interrupt handler ran,
   summarised the way cyclictest does (min, average, max) plus exact
   percentiles and a histogram with power-of-two bins. Values are signed
   TSC ticks: a negative one fired before its deadline. Pure. */
#ifndef CLOCKBENCH_LATENCY_H
#define CLOCKBENCH_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "xf.h"

/* Histogram bins: [<0] (early), then [0, e0), [e0, 2e0), [2e0, 4e0), ...,
   and the last bin open-ended. */
#define LATENCY_BINS 20

struct latency_summary {
    size_t n;
    uint64_t early;                        /* values below 0 */
    int64_t min, p50, p99, p999, max;
    struct xf mean;
    uint32_t bins[LATENCY_BINS];
};

/* Summarises v[0..n) (reordered); scratch holds n values. first_edge is
   the upper edge of the first non-negative bin, in the same unit as v. */
void latency_summarise(int64_t *v, size_t n, uint64_t *scratch, int64_t first_edge, struct latency_summary *s);
/* The lower edge of bin b (b >= 1): 0 for bin 1, then first_edge << (b - 2). */
int64_t latency_bin_low(unsigned b, int64_t first_edge);

#endif

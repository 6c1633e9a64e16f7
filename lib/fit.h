/* Least-squares straight line y = a + b x over (x, y) integer samples, with
   the slope's standard error and the residual RMS. Used for the frequency of
   one counter against another: x in TSC ticks, y in the other counter's
   ticks (both relative to the first sample, unwrapped). Pure.
   Sums are exact 128-bit integers; the rest is extended float (xf.h), so
   64-bit counter values lose nothing (IEEE doubles would round x above 2^53
   and lose most digits of x^2 long before that). */
#ifndef CLOCKBENCH_FIT_H
#define CLOCKBENCH_FIT_H

#include <stdbool.h>
#include <stdint.h>

#include "xf.h"

struct line_fit {
    uint32_t n;
    struct xf slope;        /* b, y units per x unit */
    struct xf intercept;    /* a */
    struct xf slope_stderr; /* standard error of b: sqrt(SSR / (n - 2) / Sxx) */
    struct xf resid_rms;    /* sqrt(SSR / n), in y units */
};

/* False when there are fewer than 3 points or all x are equal. */
bool fit_line(const int64_t *x, const int64_t *y, uint32_t n, struct line_fit *f);

#endif

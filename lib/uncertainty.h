/* How sure a measured frequency ratio is (docs/output.md, "What +- means").
   Three terms, all relative (a fraction of the ratio): 
   - statistical: the least-squares standard error of the common slope
     (segfit), which assumes independent residuals;
   - correlated noise: the whole window cut into equal sub-windows, each
     fitted (segments respected); the Allan deviation of their fractional
     frequencies, sigma(tau) = sqrt(sum (y_{k+1} - y_k)^2 / (2 (K - 1))),
     scaled to the window as sigma(tau) * sqrt(tau / T), where T is the
     span the sub-windows cover (T = K tau). For white frequency noise this
     equals the standard error; for quantisation that beats with the
     sampling (not white) or wandering rates it is larger, and it is what
     catches them;
   - quantisation: each segment's endpoints are uncertain by q (the caller
     passes one counter tick: the brackets' width and jitter are in the
     data, for the two terms above, while a tick's rounding can beat with
     the sampling and need not average out), so that segment's slope by
     q / span_s (span_s = x_last - x_first of the
     segment); the common slope weighs segments by their Sxx_s, so the term
     is (sum_s Sxx_s q / span_s) / (sum_s Sxx_s) / slope: a bound, since such
     errors need not average out.
   total = sqrt(max(statistical, correlated)^2 + quantisation^2).
   Pure. */
#ifndef CLOCKBENCH_UNCERTAINTY_H
#define CLOCKBENCH_UNCERTAINTY_H

#include <stdbool.h>
#include <stdint.h>

#include "segfit.h"
#include "xf.h"

#define SUBWINDOWS_MAX 64

struct subwindow {
    int64_t start_x;        /* the sub-window covers [start_x, start_x + len) */
    uint32_t n;             /* points in it */
    bool fitted;            /* a segfit over its points succeeded */
    struct xf slope, slope_stderr;
};

/* Cuts [x_first, x_last] = [x[0], x[n - 1]] into sub-windows of len_x
   (x must not decrease over the whole series: it is time) and fits each
   with segfit (segments respected). The last one, shorter, is kept only
   when x_last + 1 - start_x is at least half of len_x. A sub-window with
   too few points (a gap) is written all the same, unfitted, so that
   out[] stays in time order. At most max (<= SUBWINDOWS_MAX); returns
   how many were written. */
uint32_t subwindows_fit(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, int64_t len_x,
                        struct subwindow *out, uint32_t max);

struct freq_uncertainty {
    struct xf statistical;  /* relative */
    struct xf correlated;   /* relative; zero when fewer than 3 sub-windows fitted */
    struct xf quantisation; /* relative */
    struct xf total;        /* relative */
    uint32_t subwindows;    /* fitted sub-windows behind `correlated` (counted even when fewer than 3) */
};

/* f: the whole-window fit of (x, y, seg); quant_ticks: one counter tick plus
   the narrowest bracket, in y units; k: how many equal sub-windows to cut
   the fitted span into for the correlated term (clamped to 2..SUBWINDOWS_MAX).
   The fitted span runs from the first point of f's first segment to the
   last of its last; sub-windows of span / k + 1 cover it in exactly k.
   All zero when f's slope is zero. */
void freq_uncertainty(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, const struct seg_fit *f,
                      struct xf quant_ticks, uint32_t k, struct freq_uncertainty *u);

#endif

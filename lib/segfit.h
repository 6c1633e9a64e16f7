/* Least squares with one common slope and one intercept per segment, for a
   frequency measured across discontinuities: where a clock paused or jumped
   the series is cut into segments, each keeps its own offset, and only
   their shared rate is estimated. Pure; sums exact where they fit (as in
   fit.c), xf elsewhere.

   Model: y_i = a_{seg(i)} + b x_i + e_i. With Sxx_s, Sxy_s the centred sums
   of segment s: b = sum Sxy_s / sum Sxx_s; SSR the sum of squared residuals;
   var(b) = SSR / (n_used - S - 1) / sum Sxx_s, where S is the number of
   segments used (those with at least 2 points). */
#ifndef CLOCKBENCH_SEGFIT_H
#define CLOCKBENCH_SEGFIT_H

#include <stdbool.h>
#include <stdint.h>

#include "xf.h"

#define SEGFIT_MAX_SEGMENTS 64

struct seg_fit {
    uint32_t n;            /* points used (in segments of 2 or more points) */
    uint32_t segments;     /* segments used */
    uint32_t dropped;      /* points left out: lone points, and segments beyond SEGFIT_MAX_SEGMENTS */
    struct xf slope;       /* b, y units per x unit */
    struct xf slope_stderr;
    struct xf resid_rms;   /* sqrt(SSR / n), y units */
    uint32_t seg_id[SEGFIT_MAX_SEGMENTS];     /* the caller's segment number of each segment used */
    struct xf intercept[SEGFIT_MAX_SEGMENTS]; /* a_s, in the caller's coordinates */
    uint32_t seg_n[SEGFIT_MAX_SEGMENTS];      /* points in each segment used */
    struct xf seg_sxx[SEGFIT_MAX_SEGMENTS];   /* each segment's sum (x - mean x)^2, x units squared */
};

/* seg[i] is the segment of point i; seg is non-decreasing (a segment is a
   run of equal numbers); x is increasing within a segment. False (and f->n as counted) when fewer than 3 points in
   segments of 2 or more, or fewer than 1 degree of freedom, or sum Sxx is 0.
   Only the first SEGFIT_MAX_SEGMENTS segments of 2 or more points are used. */
bool segfit(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, struct seg_fit *f);

/* y_i minus the fitted line of its segment; zero for a point the fit did not use. */
struct xf segfit_residual(const struct seg_fit *f, int64_t x, int64_t y, uint32_t seg);

/* A step in the residuals that no cut explains: a level shift, the mean
   of the 32 residuals after a point minus the mean of the 32 before it,
   within one used segment; the largest. True, with *at = the first point
   after the step and *size (y units, signed), when it exceeds min_step
   (y units), k times its own noise, sigma * sqrt(2 / 32), where sigma
   comes from the differences of consecutive residuals (a single step
   barely moves that, where it inflates the RMS; a single outlier moves a
   level of 32 points by a 32nd only), and twice the fit's RMS (a true
   step of h leaves an RMS of h / 2 at most; a bump that comes back, or a
   wandering offset, does not pass); and it must persist: over up to 256
   points each side (and at least 64) the levels still differ by half as
   much, with the same sign. The caller cuts there and fits again.
   False otherwise, *at and *size then describing the largest found (0 and
   0 when no segment has 64 points). */
bool segfit_find_step(const struct seg_fit *f, const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n,
                      struct xf min_step, uint32_t k_rms, uint32_t *at, struct xf *size);

#endif

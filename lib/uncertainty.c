/* The uncertainty of a fitted frequency ratio (see uncertainty.h). */
#include "uncertainty.h"

static const struct xf xf_zero = {0, 0, false};

uint32_t subwindows_fit(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, int64_t len_x,
                        struct subwindow *out, uint32_t max)
{
    if (n == 0 || len_x <= 0)
        return 0;
    if (max > SUBWINDOWS_MAX)
        max = SUBWINDOWS_MAX;
    /* offsets from the first point, unsigned: x does not decrease, and a
       span of more than 2^63 cannot overflow them */
    uint64_t len = (uint64_t)len_x, last = (uint64_t)x[n - 1] - (uint64_t)x[0];
    uint32_t count = 0;
    for (uint32_t i = 0, w = 0; count < max; w++) {
        unsigned __int128 from = (unsigned __int128)w * len, to = from + len;
        if (from > last)
            break;
        if (to > last && 2 * (last + 1 - from) < len)
            break; /* a short last piece: too few x units to say anything alone */
        uint32_t j = i;
        while (j < n && (uint64_t)x[j] - (uint64_t)x[0] < to)
            j++;
        struct seg_fit f;
        struct subwindow *s = &out[count++];
        *s = (struct subwindow){.start_x = (int64_t)((uint64_t)x[0] + (uint64_t)from), .n = j - i};
        s->fitted = j > i && segfit(x + i, y + i, seg + i, j - i, &f);
        if (s->fitted) {
            s->slope = f.slope;
            s->slope_stderr = f.slope_stderr;
        }
        i = j;
    }
    return count;
}

/* Allan deviation of the sub-windows' fractional frequencies y_k = b_k / b,
   sigma(tau)^2 = sum (y_{k+1} - y_k)^2 / (2 P) over the P pairs of adjacent
   sub-windows both fitted (P = K - 1 when all are), scaled to the whole
   window by sqrt(tau / T) = 1 / sqrt(F), F the fitted sub-windows: for
   white frequency noise an average over F windows of length tau. */
static struct xf allan_relative(const struct subwindow *w, uint32_t count, struct xf slope, uint32_t *fitted)
{
    struct xf sum = xf_zero;
    uint32_t pairs = 0;
    *fitted = 0;
    for (uint32_t k = 0; k < count; k++) {
        if (!w[k].fitted)
            continue;
        ++*fitted;
        if (k == 0 || !w[k - 1].fitted)
            continue;
        struct xf d = xf_div(xf_sub(w[k].slope, w[k - 1].slope), slope);
        sum = xf_add(sum, xf_mul(d, d));
        pairs++;
    }
    if (*fitted < 3 || pairs == 0)
        return xf_zero;
    struct xf sigma = xf_sqrt(xf_div(sum, xf_from_u64(2 * (uint64_t)pairs)));
    return xf_div(sigma, xf_sqrt(xf_from_u64(*fitted)));
}

/* The segments segfit used are the first SEGFIT_MAX_SEGMENTS runs of two
   or more points; *first and *last bracket them. Each segment's slope is
   uncertain by q / span_s; the common slope weighs segment s by Sxx_s, so
   its uncertainty is bounded by (sum Sxx_s q / span_s) / (sum Sxx_s), made
   relative by |b|. */
static struct xf quantisation_relative(const int64_t *x, const uint32_t *seg, uint32_t n, const struct seg_fit *f,
                                       struct xf q, uint32_t *first, uint32_t *last)
{
    struct xf num = xf_zero, den = xf_zero;
    uint32_t used = 0;
    *first = *last = 0;
    for (uint32_t i = 0, j; i < n && used < f->segments; i = j) {
        for (j = i + 1; j < n && seg[j] == seg[i]; j++)
            ;
        if (j - i < 2)
            continue;
        if (used++ == 0)
            *first = i;
        *last = j - 1;
        struct xf sxx = f->seg_sxx[used - 1]; /* segfit's own, for these points */
        struct xf span = xf_from_i128((__int128)x[j - 1] - x[i]);
        if (xf_is_zero(span))
            continue;
        num = xf_add(num, xf_div(xf_mul(sxx, q), span));
        den = xf_add(den, sxx);
    }
    return xf_div(xf_div(num, den), xf_abs(f->slope));
}

void freq_uncertainty(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, const struct seg_fit *f,
                      struct xf quant_ticks, uint32_t k, struct freq_uncertainty *u)
{
    *u = (struct freq_uncertainty){0};
    if (xf_is_zero(f->slope) || f->segments == 0)
        return;
    struct xf slope = xf_abs(f->slope);
    u->statistical = xf_div(f->slope_stderr, slope);
    uint32_t first, last;
    u->quantisation = quantisation_relative(x, seg, n, f, quant_ticks, &first, &last);

    /* k equal sub-windows over the fitted span: len = span / k + 1 makes the
       k-th end past the last point, so none is left over */
    k = k < 2 ? 2 : k > SUBWINDOWS_MAX ? SUBWINDOWS_MAX : k;
    uint64_t span = (uint64_t)x[last] - (uint64_t)x[first];
    struct subwindow w[SUBWINDOWS_MAX];
    uint32_t count = 0;
    if (span / k + 1 <= (uint64_t)INT64_MAX)
        count = subwindows_fit(x + first, y + first, seg + first, last - first + 1, (int64_t)(span / k + 1), w, k);
    u->correlated = allan_relative(w, count, slope, &u->subwindows);

    struct xf wider = xf_cmp(u->correlated, u->statistical) > 0 ? u->correlated : u->statistical;
    u->total = xf_sqrt(xf_add(xf_mul(wider, wider), xf_mul(u->quantisation, u->quantisation)));
}

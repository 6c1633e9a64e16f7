/* Ordinary least squares (see fit.h): b = Sxy / Sxx about the means. */
#include "fit.h"

bool fit_line(const int64_t *x, const int64_t *y, uint32_t n, struct line_fit *f)
{
    *f = (struct line_fit){.n = n};
    if (n < 3)
        return false;
    __int128 sx = 0, sy = 0;
    for (uint32_t i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
    }
    struct xf xn = xf_from_u64(n);
    struct xf mx = xf_div(xf_from_i128(sx), xn), my = xf_div(xf_from_i128(sy), xn);
    struct xf sxx = {0, 0, false}, sxy = {0, 0, false};
    for (uint32_t i = 0; i < n; i++) {
        struct xf dx = xf_sub(xf_from_i64(x[i]), mx);
        struct xf dy = xf_sub(xf_from_i64(y[i]), my);
        sxx = xf_add(sxx, xf_mul(dx, dx));
        sxy = xf_add(sxy, xf_mul(dx, dy));
    }
    if (xf_is_zero(sxx))
        return false;
    f->slope = xf_div(sxy, sxx);
    f->intercept = xf_sub(my, xf_mul(f->slope, mx));
    struct xf ssr = {0, 0, false};
    for (uint32_t i = 0; i < n; i++) {
        struct xf dx = xf_sub(xf_from_i64(x[i]), mx);
        struct xf r = xf_sub(xf_sub(xf_from_i64(y[i]), my), xf_mul(f->slope, dx));
        ssr = xf_add(ssr, xf_mul(r, r));
    }
    f->slope_stderr = xf_sqrt(xf_div(xf_div(ssr, xf_from_u64(n - 2)), sxx));
    f->resid_rms = xf_sqrt(xf_div(ssr, xn));
    return true;
}

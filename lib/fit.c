/* Ordinary least squares (see fit.h): b = Sxy / Sxx about the means. */
#include "fit.h"

#include "u256.h"

/* The general path: means first, then sums of products about them, in xf. */
static bool fit_line_xf(const int64_t *x, const int64_t *y, uint32_t n, struct line_fit *f)
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

/* Differences b - a of unsigned 128-bit values, as a sign and a magnitude. */
static u128 udiff(u128 b, u128 a, bool *neg)
{
    *neg = b < a;
    return *neg ? a - b : b - a;
}

/* The fast path, when the sums fit: exact 128-bit sums of x, y, x^2, xy,
   y^2 relative to the first point, and one exact 256-bit expression for
   the residuals, D = Syy'Sxx' - Sxy'^2 (primes: the centred sums times n).
   Then b = Sxy'/Sxx', SSR = D/(n Sxx'), var(b) = D/(Sxx'^2 (n-2)).
   Bounds: n <= 2^14 and every offset below 2^50 keep each sum below 2^128. */
bool fit_line(const int64_t *x, const int64_t *y, uint32_t n, struct line_fit *f)
{
    *f = (struct line_fit){.n = n};
    if (n < 3)
        return false;
    bool fits = n <= (1u << 14);
    u128 sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (uint32_t i = 0; i < n && fits; i++) {
        int64_t dx = x[i] - x[0], dy = y[i] - y[0];
        if (dx < 0 || dy < 0 || dx >= (1ll << 50) || dy >= (1ll << 50)) {
            fits = false;
            break;
        }
        uint64_t ux = (uint64_t)dx, uy = (uint64_t)dy;
        sx += ux;
        sy += uy;
        sxx += (u128)ux * ux;
        sxy += (u128)ux * uy;
        syy += (u128)uy * uy;
    }
    if (!fits)
        return fit_line_xf(x, y, n, f);
    bool neg_xx, neg_xy, neg_yy;
    u128 Sxx = udiff(n * sxx, sx * sx, &neg_xx);
    u128 Sxy = udiff(n * sxy, sx * sy, &neg_xy);
    u128 Syy = udiff(n * syy, sy * sy, &neg_yy);
    if (Sxx == 0 || neg_xx)
        return false;
    struct xf xSxx = xf_from_u128(Sxx), xSxy = xf_from_u128(Sxy), xn = xf_from_u64(n);
    if (neg_xy)
        xSxy = xf_neg(xSxy);
    f->slope = xf_div(xSxy, xSxx);
    /* a = (sy - b sx) / n, back in the caller's coordinates */
    struct xf a_rel = xf_div(xf_sub(xf_from_u128(sy), xf_mul(f->slope, xf_from_u128(sx))), xn);
    f->intercept = xf_add(xf_sub(xf_from_i64(y[0]), xf_mul(f->slope, xf_from_i64(x[0]))), a_rel);
    struct xf D = u256_to_xf(u256_sub_floor(u256_mul128(Syy, Sxx), u256_mul128(Sxy, Sxy)));
    f->slope_stderr = xf_sqrt(xf_div(xf_div(D, xf_mul(xSxx, xSxx)), xf_from_u64(n - 2)));
    f->resid_rms = xf_sqrt(xf_div(D, xf_mul(xf_mul(xn, xn), xSxx)));
    return true;
}

/* Ordinary least squares (see fit.h): b = Sxy / Sxx about the means. */
#include "fit.h"

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

typedef unsigned __int128 u128;

struct u256 {
    u128 hi, lo;
};

static struct u256 mul128(u128 a, u128 b)
{
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    u128 p00 = (u128)a0 * b0, p01 = (u128)a0 * b1, p10 = (u128)a1 * b0, p11 = (u128)a1 * b1;
    u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;
    struct u256 r;
    r.lo = (mid << 64) | (uint64_t)p00;
    r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    return r;
}

static struct xf xf_from_u256(struct u256 v)
{
    if (!v.hi)
        return xf_from_u128(v.lo);
    int lead = v.hi >> 64 ? __builtin_clzll((uint64_t)(v.hi >> 64)) : 64 + __builtin_clzll((uint64_t)v.hi);
    int shift = 128 - lead; /* bits of hi in use */
    u128 top = (v.hi << (128 - shift)) | (shift == 128 ? 0 : v.lo >> shift);
    if (shift == 128)
        top = v.hi;
    return xf_ldexp(xf_from_u128(top), shift);
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
    struct u256 p = mul128(Syy, Sxx), q = mul128(Sxy, Sxy);
    struct u256 d = {0, 0};
    if (p.hi > q.hi || (p.hi == q.hi && p.lo >= q.lo)) {
        d.lo = p.lo - q.lo;
        d.hi = p.hi - q.hi - (p.lo < q.lo);
    }
    struct xf D = xf_from_u256(d);
    f->slope_stderr = xf_sqrt(xf_div(xf_div(D, xf_mul(xSxx, xSxx)), xf_from_u64(n - 2)));
    f->resid_rms = xf_sqrt(xf_div(D, xf_mul(xf_mul(xn, xn), xSxx)));
    return true;
}

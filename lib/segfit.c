/* Common-slope least squares across segments (see segfit.h). */
#include "segfit.h"

#include "u256.h"

#define STEP_SIDE 32     /* points each side of a candidate step */
#define STEP_CONFIRM 256 /* and how far it must persist */

/* What the fit needs from one segment, about its own means. */
struct seg_sums {
    int64_t x0, y0;       /* the origin the sums are relative to */
    struct xf mx, my;     /* means, relative to (x0, y0) */
    struct xf sxx, sxy;   /* centred sums: sum (x - mx)^2, sum (x - mx)(y - my) */
    struct xf ssr;        /* squared residuals about the segment's own line (about my when sxx is 0) */
};

/* The exact path, as in fit.c: sums of offsets from the segment's smallest
   x and y, all non-negative and below 2^50, n <= 2^14, so every sum and
   n * sum stays below 2^128. With primes for n times the centred sums,
   Sxx' = n sxx - sx^2, Sxy' = n sxy - sx sy, Syy' = n syy - sy^2 exactly,
   and the segment's own residuals come from one exact 256-bit number:
   SSR_s = (Syy' Sxx' - Sxy'^2) / (n Sxx'). False when the bounds do not hold. */
static bool sums_exact(const int64_t *x, const int64_t *y, uint32_t n, struct seg_sums *s)
{
    if (n > (1u << 14))
        return false;
    int64_t x0 = x[0], y0 = y[0];
    for (uint32_t i = 1; i < n; i++) {
        x0 = x[i] < x0 ? x[i] : x0;
        y0 = y[i] < y0 ? y[i] : y0;
    }
    u128 sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t dx = (uint64_t)x[i] - (uint64_t)x0, dy = (uint64_t)y[i] - (uint64_t)y0;
        if (dx >= (1ull << 50) || dy >= (1ull << 50))
            return false;
        sx += dx;
        sy += dy;
        sxx += (u128)dx * dx;
        sxy += (u128)dx * dy;
        syy += (u128)dy * dy;
    }
    bool neg = n * sxy < sx * sy;
    u128 Sxx = n * sxx - sx * sx, Syy = n * syy - sy * sy; /* >= 0 by Cauchy-Schwarz */
    u128 Sxy = neg ? sx * sy - n * sxy : n * sxy - sx * sy;
    struct xf xn = xf_from_u64(n), xSxx = xf_from_u128(Sxx), xSxy = xf_from_u128(Sxy);
    s->x0 = x0;
    s->y0 = y0;
    s->mx = xf_div(xf_from_u128(sx), xn);
    s->my = xf_div(xf_from_u128(sy), xn);
    s->sxx = xf_div(xSxx, xn);
    s->sxy = xf_div(neg ? xf_neg(xSxy) : xSxy, xn);
    if (Sxx == 0) {
        s->ssr = xf_div(xf_from_u128(Syy), xn);
    } else {
        struct u256 D = u256_sub_floor(u256_mul128(Syy, Sxx), u256_mul128(Sxy, Sxy));
        s->ssr = xf_div(u256_to_xf(D), xf_mul(xn, xSxx));
    }
    return true;
}

/* The general path, for long segments or offsets of 2^50 and more: means
   from exact 128-bit sums, then centred products in xf, and the residuals
   about the segment's own line summed directly (no cancellation). */
static void sums_xf(const int64_t *x, const int64_t *y, uint32_t n, struct seg_sums *s)
{
    __int128 sx = 0, sy = 0;
    s->x0 = x[0];
    s->y0 = y[0];
    for (uint32_t i = 0; i < n; i++) {
        sx += (__int128)x[i] - s->x0;
        sy += (__int128)y[i] - s->y0;
    }
    struct xf xn = xf_from_u64(n), zero = {0, 0, false};
    s->mx = xf_div(xf_from_i128(sx), xn);
    s->my = xf_div(xf_from_i128(sy), xn);
    struct xf sxx = zero, sxy = zero, syy = zero;
    for (uint32_t i = 0; i < n; i++) {
        struct xf dx = xf_sub(xf_from_i128((__int128)x[i] - s->x0), s->mx);
        struct xf dy = xf_sub(xf_from_i128((__int128)y[i] - s->y0), s->my);
        sxx = xf_add(sxx, xf_mul(dx, dx));
        sxy = xf_add(sxy, xf_mul(dx, dy));
        syy = xf_add(syy, xf_mul(dy, dy));
    }
    s->sxx = sxx;
    s->sxy = sxy;
    if (xf_is_zero(sxx)) {
        s->ssr = syy;
        return;
    }
    struct xf b = xf_div(sxy, sxx), ssr = zero;
    for (uint32_t i = 0; i < n; i++) {
        struct xf dx = xf_sub(xf_from_i128((__int128)x[i] - s->x0), s->mx);
        struct xf dy = xf_sub(xf_from_i128((__int128)y[i] - s->y0), s->my);
        struct xf r = xf_sub(dy, xf_mul(b, dx));
        ssr = xf_add(ssr, xf_mul(r, r));
    }
    s->ssr = ssr;
}

/* With one slope b for all segments the residual sum splits exactly into
   each segment's residuals about its own slope b_s = Sxy_s / Sxx_s and the
   cost of forcing b on it:
   SSR = sum_s SSR_s + sum_s Sxx_s (b_s - b)^2.
   Both parts are sums of non-negative terms, so a fit that is nearly
   perfect loses nothing to the cancellation that Syy - b Sxy would suffer. */
static struct xf common_ssr(const struct seg_sums *s, uint32_t count, struct xf b)
{
    struct xf ssr = {0, 0, false};
    for (uint32_t k = 0; k < count; k++) {
        ssr = xf_add(ssr, s[k].ssr);
        if (xf_is_zero(s[k].sxx))
            continue;
        struct xf d = xf_sub(xf_div(s[k].sxy, s[k].sxx), b);
        ssr = xf_add(ssr, xf_mul(s[k].sxx, xf_mul(d, d)));
    }
    return ssr;
}

bool segfit(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, struct seg_fit *f)
{
    struct seg_sums s[SEGFIT_MAX_SEGMENTS];
    *f = (struct seg_fit){0};
    uint32_t count = 0;
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && seg[j] == seg[i]; j++)
            ;
        uint32_t len = j - i;
        if (len < 2 || count == SEGFIT_MAX_SEGMENTS) {
            f->dropped += len;
            continue;
        }
        if (!sums_exact(x + i, y + i, len, &s[count]))
            sums_xf(x + i, y + i, len, &s[count]);
        f->seg_id[count] = seg[i];
        f->seg_n[count] = len;
        f->seg_sxx[count] = s[count].sxx;
        f->n += len;
        count++;
    }
    f->segments = count;
    /* one slope and `count` intercepts leave n - count - 1 degrees of freedom */
    if (f->n < 3 || f->n < count + 2)
        return false;
    struct xf sxx = {0, 0, false}, sxy = {0, 0, false};
    for (uint32_t k = 0; k < count; k++) {
        sxx = xf_add(sxx, s[k].sxx);
        sxy = xf_add(sxy, s[k].sxy);
    }
    if (xf_is_zero(sxx))
        return false;
    struct xf b = xf_div(sxy, sxx), ssr = common_ssr(s, count, b);
    f->slope = b;
    f->slope_stderr = xf_sqrt(xf_div(xf_div(ssr, xf_from_u64(f->n - count - 1)), sxx));
    f->resid_rms = xf_sqrt(xf_div(ssr, xf_from_u64(f->n)));
    /* a_s = (y0 + my) - b (x0 + mx), summed so the large terms meet once */
    for (uint32_t k = 0; k < count; k++) {
        struct xf far = xf_sub(xf_from_i64(s[k].y0), xf_mul(b, xf_from_i64(s[k].x0)));
        f->intercept[k] = xf_add(far, xf_sub(s[k].my, xf_mul(b, s[k].mx)));
    }
    return true;
}

/* The index of segment `seg` among those used, or -1: seg_id ascends,
   since segment numbers do not decrease along the series. */
static int used_index(const struct seg_fit *f, uint32_t seg)
{
    int lo = 0, hi = (int)f->segments - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (f->seg_id[mid] == seg)
            return mid;
        if (f->seg_id[mid] < seg)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

struct xf segfit_residual(const struct seg_fit *f, int64_t x, int64_t y, uint32_t seg)
{
    int k = used_index(f, seg);
    if (k < 0)
        return (struct xf){0, 0, false};
    return xf_sub(xf_sub(xf_from_i64(y), xf_mul(f->slope, xf_from_i64(x))), f->intercept[k]);
}

/* Residuals in thousandths of a y unit, as integers: cheap to sum. Each
   is formed in 128-bit fixed point with RESID_FRAC_BITS below the
   thousandth: 1000 b x from the slope's mantissa times x (one
   multiplication), less 1000 y and 1000 a_s, rounded to the nearest
   thousandth as xf_to_fixed rounds. In software floating point one took
   some 600 instructions, and a KVM run's analysis, every instruction
   emulated (PLATFORM.md), passes over every point of every reference. The
   xf path stays for what falls outside the fixed point's range. */
#define RESID_FRAC_BITS 20
#define RESID_LIMIT ((unsigned __int128)1 << 124)

struct resid_milli_fixed {
    bool ok;
    uint64_t b_m;     /* 1000 |b| x, in fixed point, is (b_m |x|) >> b_shift */
    int b_shift;
    bool b_neg;
    __int128 a[SEGFIT_MAX_SEGMENTS]; /* 1000 a_s, fixed point */
};

/* v in fixed point (RESID_FRAC_BITS), false when it does not fit below RESID_LIMIT. */
static bool xf_to_resid_fixed(struct xf v, __int128 *out)
{
    *out = 0;
    if (!v.m)
        return true;
    int32_t e = v.e + RESID_FRAC_BITS;
    unsigned __int128 mag;
    if (e >= 0) {
        if (e > 60)
            return false;
        mag = (unsigned __int128)v.m << e;
    } else {
        mag = e <= -64 ? 0 : (unsigned __int128)(v.m >> -e);
    }
    if (mag >= RESID_LIMIT)
        return false;
    *out = v.neg ? -(__int128)mag : (__int128)mag;
    return true;
}

static void resid_milli_prepare(const struct seg_fit *f, struct resid_milli_fixed *r)
{
    struct xf thousand = xf_from_u64(1000), b = xf_mul(f->slope, thousand);
    r->ok = true;
    r->b_m = b.m;
    r->b_neg = b.neg;
    r->b_shift = -(b.e + RESID_FRAC_BITS);
    if (b.m && (r->b_shift < 0 || r->b_shift > 127))
        r->ok = false;
    for (uint32_t k = 0; k < f->segments && r->ok; k++)
        r->ok = xf_to_resid_fixed(xf_mul(f->intercept[k], thousand), &r->a[k]);
}

static int64_t resid_milli(const struct seg_fit *f, const struct resid_milli_fixed *r, const int64_t *x, const int64_t *y,
                           const uint32_t *seg, uint32_t i)
{
    int k = used_index(f, seg[i]);
    if (k < 0)
        return 0;
    if (r->ok) {
        unsigned __int128 ax = (unsigned __int128)(x[i] < 0 ? 0 - (uint64_t)x[i] : (uint64_t)x[i]);
        unsigned __int128 bx = r->b_m ? (ax * r->b_m) >> r->b_shift : 0;
        unsigned __int128 ay = (unsigned __int128)(y[i] < 0 ? 0 - (uint64_t)y[i] : (uint64_t)y[i]) * 1000 << RESID_FRAC_BITS;
        if (bx < RESID_LIMIT) { /* ay is below 2^94 */
            __int128 v = ((x[i] < 0) != r->b_neg ? (__int128)bx : -(__int128)bx) + (y[i] < 0 ? -(__int128)ay : (__int128)ay) - r->a[k];
            unsigned __int128 mag = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
            mag = (mag + ((unsigned __int128)1 << (RESID_FRAC_BITS - 1))) >> RESID_FRAC_BITS;
            int64_t m = mag > INT64_MAX ? INT64_MAX : (int64_t)mag;
            return v < 0 ? -m : m;
        }
    }
    return xf_to_fixed(segfit_residual(f, x[i], y[i], seg[i]), 3);
}

bool segfit_find_step(const struct seg_fit *f, const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n,
                      struct xf min_step, uint32_t k, uint32_t *at, struct xf *size)
{
    *at = 0;
    *size = (struct xf){0, 0, false};
    /* One pass over the residuals (each costs a few hundred instructions in
       software floating point, a KVM run's analysis where every instruction
       is emulated, PLATFORM.md), for two things at once:
       - the noise: consecutive residuals differ by sqrt(2) sigma; one step
         among n differences barely moves this, where it inflates the RMS;
       - the candidate step: the last 2 STEP_SIDE residuals of the segment,
         with the sums of their older half and newer half kept as each point
         comes (summing the window again cost 64 steps a point). */
    unsigned __int128 ss = 0;
    uint64_t pairs = 0;
    int64_t prev = 0;
    int64_t ring[2 * STEP_SIDE];
    uint32_t filled = 0, head = 0; /* head: where the next residual goes; what it holds is 2 STEP_SIDE back */
    int64_t older = 0, newer = 0;
    int64_t best = 0;
    struct resid_milli_fixed fixed;
    resid_milli_prepare(f, &fixed);
    for (uint32_t i = 0; i < n; i++) {
        bool used = used_index(f, seg[i]) >= 0;
        if (!used || (i > 0 && seg[i] != seg[i - 1])) {
            filled = 0;
            older = newer = 0;
            if (!used)
                continue;
        }
        int64_t r = resid_milli(f, &fixed, x, y, seg, i);
        if (i > 0 && seg[i] == seg[i - 1]) {
            int64_t d = r - prev;
            ss += (unsigned __int128)((__int128)d * d);
            pairs++;
        }
        prev = r;
        if (filled >= STEP_SIDE) { /* the residual STEP_SIDE back moves from the newer half to the older */
            uint32_t mid = head >= STEP_SIDE ? head - STEP_SIDE : head + STEP_SIDE;
            newer -= ring[mid];
            older += ring[mid];
        }
        if (filled >= 2 * STEP_SIDE) /* and the one 2 STEP_SIDE back leaves */
            older -= ring[head];
        ring[head] = r;
        newer += r;
        head = head + 1 == 2 * STEP_SIDE ? 0 : head + 1;
        if (filled < 2 * STEP_SIDE)
            filled++;
        if (filled < 2 * STEP_SIDE)
            continue;
        /* points i - 2 STEP_SIDE + 1 .. i: the older STEP_SIDE and the newer */
        int64_t d = (newer - older) / STEP_SIDE;
        if ((d < 0 ? -d : d) > (best < 0 ? -best : best)) {
            best = d;
            *at = i + 1 - STEP_SIDE;
        }
    }
    if (pairs < 2 * STEP_SIDE) {
        *at = 0;
        return false;
    }
    struct xf sigma_milli = xf_sqrt(xf_div(xf_from_u128(ss), xf_from_u64(2 * pairs)));
    /* the level difference of STEP_SIDE points each side: its noise is
       sigma * sqrt(2 / STEP_SIDE) */
    struct xf noise = xf_mul(sigma_milli, xf_sqrt(xf_div(xf_from_u64(2), xf_from_u64(STEP_SIDE))));
    *size = xf_div(xf_from_i64(best), xf_from_u64(1000));
    struct xf mag = xf_abs(*size);
    if (best == 0)
        return false;
    /* a step persists: over up to STEP_CONFIRM points each side (within the
       segment) the levels must still differ by half as much; a bump of a
       few dozen points that comes back does not */
    uint32_t s0 = *at, s1 = *at;
    while (s0 > 0 && seg[s0 - 1] == seg[*at] && *at - s0 < STEP_CONFIRM)
        s0--;
    while (s1 < n && seg[s1] == seg[*at] && s1 - *at < STEP_CONFIRM)
        s1++;
    if (*at - s0 < 2 * STEP_SIDE || s1 - *at < 2 * STEP_SIDE)
        return false; /* too near an end of its segment to tell a step from a bump */
    int64_t before = 0, after = 0; /* 256 residuals of under 2^50 milli-units each */
    for (uint32_t i = s0; i < *at; i++)
        before += resid_milli(f, &fixed, x, y, seg, i);
    for (uint32_t i = *at; i < s1; i++)
        after += resid_milli(f, &fixed, x, y, seg, i);
    int64_t long_d = after / (int64_t)(s1 - *at) - before / (int64_t)(*at - s0);
    if ((long_d < 0 ? -long_d : long_d) * 2 < (best < 0 ? -best : best) || (long_d < 0) != (best < 0))
        return false;
    /* and twice the RMS: a true step of h leaves an RMS of h / 2 at most,
       where a bump that comes back, or a slowly wandering offset, does not */
    return best != 0 && xf_cmp(mag, min_step) > 0 && xf_cmp(xf_from_i64(best < 0 ? -best : best), xf_mul(xf_from_u64(k), noise)) > 0 &&
           xf_cmp(mag, xf_mul(xf_from_u64(2), f->resid_rms)) > 0;
}

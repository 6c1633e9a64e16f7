/* Extended-float arithmetic (see xf.h). Rounding: to nearest on
   normalisation, truncation in division; errors stay near 2^-63 relative. */
#include "xf.h"

typedef unsigned __int128 u128;

static int clz128(u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
    return hi ? __builtin_clzll(hi) : 64 + __builtin_clzll(lo);
}

/* mag * 2^e, rounded to 64 bits of mantissa. */
static struct xf normalize(u128 mag, int32_t e, bool neg)
{
    if (mag == 0)
        return (struct xf){0, 0, false};
    int shift = clz128(mag);
    mag <<= shift;
    e -= shift;
    uint64_t m = (uint64_t)(mag >> 64);
    bool round = (mag >> 63) & 1;
    e += 64;
    if (round) {
        m++;
        if (m == 0) {
            m = 1ull << 63;
            e++;
        }
    }
    return (struct xf){m, e, neg};
}

struct xf xf_from_u64(uint64_t v) { return normalize(v, 0, false); }
struct xf xf_from_i64(int64_t v) { return normalize(v < 0 ? (u128)(0 - (uint64_t)v) : (u128)v, 0, v < 0); }
struct xf xf_from_i128(__int128 v) { return normalize(v < 0 ? (u128)0 - (u128)v : (u128)v, 0, v < 0); }
bool xf_is_zero(struct xf a) { return a.m == 0; }
struct xf xf_neg(struct xf a)
{
    a.neg = a.m ? !a.neg : false;
    return a;
}
struct xf xf_abs(struct xf a)
{
    a.neg = false;
    return a;
}

struct xf xf_add(struct xf a, struct xf b)
{
    if (!a.m)
        return b;
    if (!b.m)
        return a;
    if (a.e < b.e || (a.e == b.e && a.m < b.m)) {
        struct xf t = a;
        a = b;
        b = t;
    }
    /* |a| >= |b|. 62 bits of headroom below each mantissa. */
    u128 A = (u128)a.m << 62;
    int32_t d = a.e - b.e;
    u128 B = d >= 126 ? 0 : ((u128)b.m << 62) >> d;
    u128 S = a.neg == b.neg ? A + B : A - B;
    return normalize(S, a.e - 62, a.neg);
}

struct xf xf_sub(struct xf a, struct xf b) { return xf_add(a, xf_neg(b)); }

struct xf xf_mul(struct xf a, struct xf b)
{
    if (!a.m || !b.m)
        return (struct xf){0, 0, false};
    return normalize((u128)a.m * b.m, a.e + b.e, a.neg != b.neg);
}

/* floor((hi:lo) / d) for hi < d: the one divq the hardware gives us. */
static uint64_t div128by64(uint64_t hi, uint64_t lo, uint64_t d)
{
    uint64_t q, r;
    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(d));
    return q;
}

struct xf xf_div(struct xf a, struct xf b)
{
    if (!a.m || !b.m)
        return (struct xf){0, 0, false};
    /* a.m * 2^63 / b.m: the high word a.m >> 1 is below b.m (b.m >= 2^63). */
    uint64_t q = div128by64(a.m >> 1, a.m << 63, b.m);
    return normalize(q, a.e - b.e - 63, a.neg != b.neg);
}

static uint64_t isqrt128(u128 v)
{
    u128 res = 0, bit = (u128)1 << 126;
    while (bit > v)
        bit >>= 2;
    while (bit) {
        if (v >= res + bit) {
            v -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    return (uint64_t)res;
}

struct xf xf_sqrt(struct xf a)
{
    if (!a.m || a.neg)
        return (struct xf){0, 0, false};
    /* make the exponent even, with as many mantissa bits as fit in 128 */
    u128 M;
    int32_t E;
    if (a.e & 1) {
        M = (u128)a.m << 63;
        E = a.e - 63;
    } else {
        M = (u128)a.m << 62;
        E = a.e - 62;
    }
    return normalize(isqrt128(M), E / 2, false);
}

int xf_cmp(struct xf a, struct xf b)
{
    struct xf d = xf_sub(a, b);
    return d.m == 0 ? 0 : d.neg ? -1 : 1;
}

struct xf xf_pow10(unsigned k)
{
    uint64_t p = 1;
    for (unsigned i = 0; i < k && i < 19; i++)
        p *= 10;
    return xf_from_u64(p);
}

int64_t xf_to_fixed(struct xf a, unsigned decimals)
{
    struct xf s = xf_mul(a, xf_pow10(decimals));
    if (!s.m)
        return 0;
    uint64_t mag;
    if (s.e >= 0) {
        mag = INT64_MAX; /* at least 2^63: saturate */
    } else if (s.e <= -65) {
        mag = 0;
    } else {
        int sh = -s.e;
        u128 full = (u128)s.m << 1; /* one extra bit for rounding */
        full >>= sh;
        mag = (uint64_t)((full + 1) >> 1);
        if (mag > INT64_MAX)
            mag = INT64_MAX;
    }
    return s.neg ? -(int64_t)mag : (int64_t)mag;
}

struct xf xf_ldexp(struct xf a, int32_t k)
{
    if (a.m)
        a.e += k;
    return a;
}

struct xf xf_from_u128(u128 v) { return normalize(v, 0, false); }

/* 256-bit unsigned products and differences, for the exact residual sums
   of the least-squares fits (fit.c, segfit.c). Pure, static inline. */
#ifndef CLOCKBENCH_U256_H
#define CLOCKBENCH_U256_H

#include <stdint.h>

#include "xf.h"

typedef unsigned __int128 u128;

struct u256 {
    u128 hi, lo;
};

static inline struct u256 u256_mul128(u128 a, u128 b)
{
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    u128 p00 = (u128)a0 * b0, p01 = (u128)a0 * b1, p10 = (u128)a1 * b0, p11 = (u128)a1 * b1;
    u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;
    return (struct u256){p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64), (mid << 64) | (uint64_t)p00};
}

/* a - b, floored at 0 (the callers' differences are sums of squares: never negative exactly). */
static inline struct u256 u256_sub_floor(struct u256 a, struct u256 b)
{
    if (a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo))
        return (struct u256){0, 0};
    return (struct u256){a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo};
}

/* The top 128 bits, scaled back: truncation costs under 2^-127 relative,
   below what xf keeps anyway. */
static inline struct xf u256_to_xf(struct u256 v)
{
    if (!v.hi)
        return xf_from_u128(v.lo);
    int used = 128 - (v.hi >> 64 ? __builtin_clzll((uint64_t)(v.hi >> 64)) : 64 + __builtin_clzll((uint64_t)v.hi));
    u128 top = used == 128 ? v.hi : (v.hi << (128 - used)) | (v.lo >> used);
    return xf_ldexp(xf_from_u128(top), used);
}

#endif

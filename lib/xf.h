/* A small software floating point number with a 64-bit mantissa ("extended
   float"), for the statistics. The kernel cannot use the FPU or SSE (see
   boot/entry.asm), and 64 bits of mantissa keep TSC values near 2^50 exact
   where IEEE doubles would round them. Sums are formed exactly in integers
   first; xf is used for the few ratios, products and roots after that.
   Pure; unit-tested on the host against exact rational arithmetic. */
#ifndef CLOCKBENCH_XF_H
#define CLOCKBENCH_XF_H

#include <stdbool.h>
#include <stdint.h>

/* value = (neg ? -1 : 1) * m * 2^e; m == 0 is zero, else bit 63 of m is set. */
struct xf {
    uint64_t m;
    int32_t e;
    bool neg;
};

struct xf xf_from_u64(uint64_t v);
struct xf xf_from_i64(int64_t v);
struct xf xf_from_i128(__int128 v);
struct xf xf_add(struct xf a, struct xf b);
struct xf xf_sub(struct xf a, struct xf b);
struct xf xf_mul(struct xf a, struct xf b);
struct xf xf_div(struct xf a, struct xf b); /* b == 0 gives 0 */
struct xf xf_sqrt(struct xf a);             /* a < 0 gives 0 */
struct xf xf_neg(struct xf a);
struct xf xf_abs(struct xf a);
int xf_cmp(struct xf a, struct xf b);
bool xf_is_zero(struct xf a);
/* round(a * 10^decimals) as an integer, saturated to the int64 range. */
int64_t xf_to_fixed(struct xf a, unsigned decimals);
struct xf xf_pow10(unsigned k); /* k <= 19 */
struct xf xf_ldexp(struct xf a, int32_t k); /* a * 2^k */
struct xf xf_from_u128(unsigned __int128 v);

#endif

/* Statistics (see stats.h). */
#include "stats.h"

#define RADIX_BITS 8
#define RADIX_BUCKETS (1u << RADIX_BITS)

/* LSD radix sort, RADIX_BITS per pass, only as many passes as the bits in
   which the values differ need: bits that are the same in every value
   (those above the highest that differs) cannot order them. Without this,
   latency_summarise's samples, offset by 2^63 to sort signed values, took
   all eight passes, a timer cell's few dozen samples 8 times the counting
   of 256 buckets: under a hypervisor that emulates every instruction, most
   of the sorting in a run. Stable, so each pass keeps the order of the
   previous one. */
void stats_sort(uint64_t *v, size_t n, uint64_t *scratch)
{
    if (n < 2)
        return;
    uint64_t any = 0, all = ~0ull;
    for (size_t i = 0; i < n; i++) {
        any |= v[i];
        all &= v[i];
    }
    uint64_t differ = any ^ all;
    uint64_t *src = v, *dst = scratch;
    size_t count[RADIX_BUCKETS]; /* on the stack: callers on different CPUs share nothing */
    for (unsigned shift = 0; shift < 64 && (differ >> shift); shift += RADIX_BITS) {
        for (unsigned k = 0; k < RADIX_BUCKETS; k++)
            count[k] = 0;
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & (RADIX_BUCKETS - 1)]++;
        size_t pos = 0;
        for (unsigned k = 0; k < RADIX_BUCKETS; k++) {
            size_t c = count[k];
            count[k] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & (RADIX_BUCKETS - 1)]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        for (size_t i = 0; i < n; i++)
            v[i] = src[i];
}

uint64_t stats_percentile(const uint64_t *sorted, size_t n, unsigned per_mille)
{
    if (n == 0)
        return 0;
    /* rank = ceil(p * n), 1-based */
    size_t rank = (size_t)(((uint64_t)per_mille * n + 999) / 1000); /* n < 2^50: no overflow */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

void stats_summarise(uint64_t *v, size_t n, uint64_t *scratch, struct summary *s)
{
    *s = (struct summary){0};
    if (n == 0)
        return;
    stats_sort(v, n, scratch);
    s->n = n;
    s->min = v[0];
    s->max = v[n - 1];
    s->p50 = stats_percentile(v, n, 500);
    s->p99 = stats_percentile(v, n, 990);
    s->p999 = stats_percentile(v, n, 999);
    /* Exact sums about the minimum (keeps the squares small):
       var = (n S2 - S1^2) / n^2 with S1 = sum(x - min), S2 = sum((x - min)^2).
       Exact while n (x - min)^2 stays below 2^128; beyond 2^40 ticks of
       spread the squares are taken in xf instead. */
    unsigned __int128 s1 = 0, s2 = 0;
    struct xf xs2 = {0, 0, false};
    bool wide = s->max - s->min >= (1ull << 40);
    for (size_t i = 0; i < n; i++) {
        uint64_t d = v[i] - s->min;
        s1 += d;
        if (wide) {
            struct xf x = xf_from_u64(d);
            xs2 = xf_add(xs2, xf_mul(x, x));
        } else {
            s2 += (unsigned __int128)d * d;
        }
    }
    struct xf xn = xf_from_u64(n), xs1 = xf_from_i128((__int128)s1);
    s->mean = xf_add(xf_from_u64(s->min), xf_div(xs1, xn));
    struct xf num;
    if (!wide && n < (1u << 20)) /* n*S2 < 2^120 and S1^2 < 2^120: exact */
        num = xf_from_i128((__int128)(n * s2 - s1 * s1));
    else
        num = xf_sub(xf_mul(xn, wide ? xs2 : xf_from_i128((__int128)s2)), xf_mul(xs1, xs1));
    struct xf var = xf_div(num, xf_mul(xn, xn));
    s->stddev = xf_sqrt(var.neg ? (struct xf){0, 0, false} : var);
}

size_t stats_histogram(const uint64_t *sorted, size_t n, struct hist_bin *bins, size_t max)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && sorted[j] == sorted[i])
            j++;
        if (distinct < max)
            bins[distinct] = (struct hist_bin){sorted[i], j - i};
        distinct++;
        i = j;
    }
    return distinct;
}

void stats_subtract(struct summary *s, uint64_t overhead)
{
    uint64_t *f[] = {&s->min, &s->p50, &s->p99, &s->p999, &s->max};
    for (int i = 0; i < 5; i++)
        *f[i] = *f[i] > overhead ? *f[i] - overhead : 0;
    struct xf mean = xf_sub(s->mean, xf_from_u64(overhead));
    s->mean = mean.neg ? xf_from_u64(0) : mean;
}

size_t stats_drop_pairs_above(uint64_t *a, uint64_t *b, size_t n, uint64_t limit, uint64_t *longest)
{
    size_t kept = 0;
    *longest = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t worst = a[i] > b[i] ? a[i] : b[i];
        if (worst > limit) {
            if (worst > *longest)
                *longest = worst;
            continue;
        }
        a[kept] = a[i];
        b[kept] = b[i];
        kept++;
    }
    return kept;
}

uint64_t stats_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t stats_staircase_step(const uint64_t *mins, size_t n)
{
    uint64_t jumps[256], scratch[256];
    size_t k = 0;
    for (size_t j = 1; j < n && k < sizeof jumps / sizeof *jumps; j++)
        if (mins[j] > mins[j - 1])
            jumps[k++] = mins[j] - mins[j - 1];
    if (!k)
        return 0;
    stats_sort(jumps, k, scratch);
    return jumps[k / 2];
}

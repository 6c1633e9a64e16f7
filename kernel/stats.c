/* Statistics (see stats.h). */
#include "stats.h"

/* Heapsort: O(n log n) worst case, in place, no recursion. */
static void sift_down(uint64_t *v, size_t start, size_t end)
{
    size_t root = start;
    while (2 * root + 1 < end) {
        size_t child = 2 * root + 1;
        if (child + 1 < end && v[child] < v[child + 1])
            child++;
        if (v[root] >= v[child])
            return;
        uint64_t t = v[root];
        v[root] = v[child];
        v[child] = t;
        root = child;
    }
}

void stats_sort(uint64_t *v, size_t n)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(v, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        uint64_t t = v[0];
        v[0] = v[end];
        v[end] = t;
        sift_down(v, 0, end);
    }
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

void stats_summarise(uint64_t *v, size_t n, struct summary *s)
{
    *s = (struct summary){0};
    if (n == 0)
        return;
    stats_sort(v, n);
    s->n = n;
    s->min = v[0];
    s->max = v[n - 1];
    s->p50 = stats_percentile(v, n, 500);
    s->p99 = stats_percentile(v, n, 990);
    s->p999 = stats_percentile(v, n, 999);
    unsigned __int128 sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    struct xf xn = xf_from_u64(n);
    s->mean = xf_div(xf_from_i128((__int128)sum), xn);
    /* second pass about the mean: no cancellation */
    struct xf ss = {0, 0, false};
    for (size_t i = 0; i < n; i++) {
        struct xf d = xf_sub(xf_from_u64(v[i]), s->mean);
        ss = xf_add(ss, xf_mul(d, d));
    }
    s->stddev = xf_sqrt(xf_div(ss, xn));
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

/* Lateness summaries (see latency.h). Signed values are sorted as unsigned
   ones with the sign bit flipped, which keeps their order. */
#include "latency.h"

#include "stats.h"

#define FLIP (1ull << 63)

int64_t latency_bin_low(unsigned b, int64_t first_edge)
{
    if (b <= 1)
        return 0;
    return first_edge << (b - 2);
}

static unsigned bin_of(int64_t v, int64_t first_edge)
{
    if (v < 0)
        return 0;
    unsigned b = 1;
    int64_t edge = first_edge;
    while (b < LATENCY_BINS - 1 && v >= edge) {
        b++;
        edge <<= 1;
    }
    return b;
}

void latency_summarise(int64_t *v, size_t n, uint64_t *scratch, int64_t first_edge, struct latency_summary *s)
{
    *s = (struct latency_summary){.n = n};
    if (!n)
        return;
    uint64_t *u = (uint64_t *)v;
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        s->early += v[i] < 0;
        s->bins[bin_of(v[i], first_edge > 0 ? first_edge : 1)]++;
        u[i] = (uint64_t)v[i] ^ FLIP;
    }
    stats_sort(u, n, scratch);
    s->min = (int64_t)(u[0] ^ FLIP);
    s->max = (int64_t)(u[n - 1] ^ FLIP);
    s->p50 = (int64_t)(stats_percentile(u, n, 500) ^ FLIP);
    s->p99 = (int64_t)(stats_percentile(u, n, 990) ^ FLIP);
    s->p999 = (int64_t)(stats_percentile(u, n, 999) ^ FLIP);
    s->mean = xf_div(xf_from_i64(sum), xf_from_u64(n));
    for (size_t i = 0; i < n; i++)
        u[i] ^= FLIP; /* v holds the sorted values again */
}

/* See os_rounds.h. */
#include "os_rounds.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int lang_rounds_rank(int n, double *coverage)
{
    /* [k-th lowest, k-th highest] holds the median with 1 - 2 P(X <= k-1),
       X ~ Bin(n, 1/2); term: P(X = j) = C(n, j) / 2^n, built up term by term */
    double term = ldexp(1.0, -n), cdf = term, tail = term; /* P(X <= 0) */
    int k = 1;
    for (int j = 1; 2 * j < n; j++) { /* k = j + 1 needs P(X <= j) */
        term = term * (double)(n - j + 1) / (double)j;
        if (2 * (cdf + term) > 0.05)
            break;
        cdf += term;
        tail = cdf;
        k = j + 1;
    }
    if (coverage)
        *coverage = n > 1 ? 1 - 2 * tail : 0;
    return k;
}

bool lang_rounds_summarise(const struct lang_rounds *r, struct lang_rounds_summary *s)
{
    *s = (struct lang_rounds_summary){0};
    int n = r->n;
    if (n < 1 || n > LANG_ROUNDS_MAX)
        return false;
    double p50[LANG_ROUNDS_MAX], lo[LANG_ROUNDS_MAX], hi[LANG_ROUNDS_MAX], ratio[LANG_ROUNDS_MAX];
    bool ratios = true, speeds = true;
    double fastest = INFINITY, slowest = 0;
    for (int i = 0; i < n; i++) {
        p50[i] = r->p50_ns[i];
        lo[i] = fmin(r->lo_ns[i], r->p50_ns[i]);
        hi[i] = fmax(r->hi_ns[i], r->p50_ns[i]);
        ratios &= r->bare_ns[i] > 0;
        ratio[i] = r->bare_ns[i] > 0 ? r->p50_ns[i] / r->bare_ns[i] : 0;
        speeds &= r->ref_ns[i] > 0;
        fastest = fmin(fastest, r->ref_ns[i]);
        slowest = fmax(slowest, r->ref_ns[i]);
    }
    qsort(p50, (size_t)n, sizeof *p50, cmp_double);
    qsort(lo, (size_t)n, sizeof *lo, cmp_double);
    qsort(hi, (size_t)n, sizeof *hi, cmp_double);
    s->n = n;
    s->p50_ns = p50[(n - 1) / 2];
    for (int i = 0; i < n; i++)
        if (r->p50_ns[i] == s->p50_ns) {
            s->median_round = i;
            break;
        }
    int k = lang_rounds_rank(n, &s->confidence);
    s->lo_ns = lo[k - 1];
    s->hi_ns = hi[n - k];
    if (ratios) {
        qsort(ratio, (size_t)n, sizeof *ratio, cmp_double);
        s->ratio_known = true;
        s->ratio_p50 = ratio[(n - 1) / 2];
    }
    if (speeds) {
        s->speed_known = true;
        s->speed_spread = slowest / fastest - 1;
        for (int i = 0; i < n; i++)
            s->slow_rounds += r->ref_ns[i] >= LANG_ROUND_SLOW * fastest;
    }
    return true;
}

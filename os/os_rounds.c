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

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(n - 1) / 2];
}

bool lang_rounds_summarise(const struct lang_rounds *r, struct lang_rounds_summary *s)
{
    *s = (struct lang_rounds_summary){0};
    int n = r->n;
    if (n < 1 || n > LANG_ROUNDS_MAX)
        return false;
    double all[LANG_ROUNDS_MAX], p50[LANG_ROUNDS_MAX], ratio[LANG_ROUNDS_MAX];
    int keep[LANG_ROUNDS_MAX], kept = 0;
    bool ratios = true, speeds = true;
    double fastest = INFINITY, slowest = 0;
    for (int i = 0; i < n; i++) {
        all[i] = r->p50_ns[i];
        ratios &= r->bare_ns[i] > 0;
        speeds &= r->ref_ns[i] > 0;
        fastest = fmin(fastest, r->ref_ns[i]);
        slowest = fmax(slowest, r->ref_ns[i]);
    }
    s->n = n;
    s->p50_all_ns = median_of(all, n);
    double full = fmin(r->fastest_ref_ns > 0 ? r->fastest_ref_ns : INFINITY, fastest);
    for (int i = 0; i < n; i++) {
        bool slow = speeds && r->ref_ns[i] > LANG_ROUND_SLOW * full;
        s->slow_rounds += slow;
        if (!slow)
            keep[kept++] = i;
    }
    if (kept < LANG_ROUNDS_FULL_MIN && kept < n) {
        s->slow_throughout = true;
        for (int i = kept = 0; i < n; i++)
            keep[kept++] = i;
    }
    s->kept = kept;
    for (int i = 0; i < kept; i++) {
        p50[i] = r->p50_ns[keep[i]];
        ratio[i] = ratios ? r->p50_ns[keep[i]] / r->bare_ns[keep[i]] : 0;
    }
    s->p50_ns = median_of(p50, kept);
    for (int i = 0; i < n; i++)
        if (r->p50_ns[i] == s->p50_ns) {
            s->median_round = i;
            break;
        }
    int k = lang_rounds_rank(kept, &s->confidence);
    if (kept == 1) {
        s->lo_ns = fmin(r->lo_ns[keep[0]], s->p50_ns);
        s->hi_ns = fmax(r->hi_ns[keep[0]], s->p50_ns);
    } else {
        s->lo_ns = fmax(0, p50[k - 1] - r->step_ns);
        s->hi_ns = p50[kept - k] + r->step_ns;
    }
    if (ratios) {
        s->ratio_known = true;
        s->ratio_p50 = median_of(ratio, kept);
    }
    if (speeds) {
        s->speed_known = true;
        s->speed_spread = slowest / fastest - 1;
    }
    return true;
}

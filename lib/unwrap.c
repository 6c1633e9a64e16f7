/* Counter differences unwrapped by elapsed TSC time (see unwrap.h). */
#include "unwrap.h"

typedef unsigned __int128 u128;

/* A 192-bit unsigned integer, w[0] least significant: the products
   tsc_ticks * counter_millihz * (10^6 +- tol_ppm) reach 2^161. */
struct u192 {
    uint64_t w[3];
};

/* floor((hi:lo) / d) for hi < d, the remainder in *rem: one divq. A u128
   division would call libgcc's __udivti3, which the kernel does not link. */
static uint64_t div128by64(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem)
{
    uint64_t q, r;
    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(d));
    *rem = r;
    return q;
}

static struct u192 u192_mul(u128 a, uint64_t b)
{
    u128 lo = (u128)(uint64_t)a * b, hi = (u128)(uint64_t)(a >> 64) * b;
    u128 mid = (lo >> 64) + (uint64_t)hi;
    return (struct u192){{(uint64_t)lo, (uint64_t)mid, (uint64_t)(hi >> 64) + (uint64_t)(mid >> 64)}};
}

/* v / d in place (schoolbook, one limb at a time), rounded down, or up when
   `up`. Rounding at each of several divisions in a row gives the same result
   as one division by their product: floor(floor(v/a)/b) = floor(v/(ab)),
   and likewise for the ceiling. */
static void u192_div(struct u192 *v, uint64_t d, bool up)
{
    uint64_t r = 0;
    for (int i = 2; i >= 0; i--)
        v->w[i] = div128by64(r, v->w[i], d, &r);
    if (up && r && ++v->w[0] == 0 && ++v->w[1] == 0)
        v->w[2]++;
}

static uint64_t u192_sat64(struct u192 v) { return v.w[1] || v.w[2] ? ~0ull : v.w[0]; }

/* floor or ceil(tsc_ticks * counter_millihz * ppm / (10^9 * tsc_hz)),
   saturated at ~0: the counter ticks in tsc_ticks at the nominal ratio
   scaled by ppm / 10^6. */
static uint64_t ticks_scaled(const struct unwrap_params *p, uint64_t tsc_ticks, uint64_t ppm, bool up)
{
    if (!p->tsc_hz)
        return ~0ull; /* against a divide fault: with no TSC rate, any advance is possible */
    struct u192 v = u192_mul((u128)tsc_ticks * p->counter_millihz, ppm);
    u192_div(&v, p->tsc_hz, up);
    u192_div(&v, 1000000000u, up);
    return u192_sat64(v);
}

uint64_t unwrap_expected_ticks(const struct unwrap_params *p, uint64_t tsc_ticks)
{
    return ticks_scaled(p, tsc_ticks, 1000000u, false);
}

/* The most the counter can advance in tsc_ticks: a rate up to tol above
   nominal, rounded up, plus the slack. */
static uint64_t max_expected(const struct unwrap_params *p, uint64_t tsc_ticks)
{
    uint64_t m = ticks_scaled(p, tsc_ticks, 1000000ull + p->rate_tol_ppm, true);
    return m > ~0ull - p->slack_ticks ? ~0ull : m + p->slack_ticks;
}

/* The least it must advance: a rate up to tol below nominal, rounded down,
   less the slack. A tolerance of 100% or more requires nothing. */
static uint64_t min_expected(const struct unwrap_params *p, uint64_t tsc_ticks)
{
    if (p->rate_tol_ppm >= 1000000u)
        return 0;
    uint64_t m = ticks_scaled(p, tsc_ticks, 1000000u - p->rate_tol_ppm, false);
    return m > p->slack_ticks ? m - p->slack_ticks : 0;
}

/* max_expected is non-decreasing in the TSC time, so the last time that
   stays below one wrap is found by bisection; the same function decides
   GAP in unwrap_step, so the two cannot disagree. */
uint64_t unwrap_limit_tsc(const struct unwrap_params *p)
{
    if (max_expected(p, ~0ull) < p->mask)
        return ~0ull;
    if (max_expected(p, 0) >= p->mask)
        return 0; /* the slack alone is a wrap: nothing is exact */
    uint64_t lo = 0, hi = ~0ull; /* max_expected(lo) < mask <= max_expected(hi) */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (max_expected(p, mid) < p->mask)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void unwrap_step(const struct unwrap_params *p, uint64_t prev, uint64_t a0, uint64_t b0, uint64_t now, uint64_t a1,
                 uint64_t b1, struct step *out)
{
    *out = (struct step){.kind = STEP_TSC_BACKWARD};
    /* signed differences: a TSC that went back shows as a huge unsigned one */
    if ((int64_t)(a1 - b0) < 0 || (int64_t)(b0 - a0) < 0 || (int64_t)(b1 - a1) < 0)
        return;
    out->min_expected = min_expected(p, a1 - b0);
    out->max_expected = max_expected(p, b1 - a0);
    if (out->max_expected >= p->mask) {
        out->kind = STEP_GAP;
        return;
    }
    uint64_t d = (now - prev) & p->mask;
    if (d <= out->max_expected) {
        out->kind = d < out->min_expected ? STEP_SLOW : STEP_NORMAL;
        out->advance = d;
        return;
    }
    /* Too far forward for the time: either a small step back seen modulo
       the width, or a jump ahead. Half the range decides; mask / 2 + 1 is
       half of the 2^width values (2^63 for 64 bits, with no overflow). */
    uint64_t back = (prev - now) & p->mask;
    if (back <= p->mask / 2 + 1) {
        out->kind = STEP_BACKWARD;
        out->backward = back;
    } else {
        out->kind = STEP_FAST;
        out->advance = d;
    }
}

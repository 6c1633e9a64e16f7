/* TSC offset intervals between CPUs (see tsc_sync.h). */
#include "tsc_sync.h"

#include "cmdline.h"

void tsc_offset_init(struct tsc_offset *o)
{
    *o = (struct tsc_offset){.lo = INT64_MIN, .hi = INT64_MAX, .round_trip_min = UINT64_MAX};
}

void tsc_offset_add(struct tsc_offset *o, uint64_t before, uint64_t theirs, uint64_t after)
{
    if ((int64_t)(after - before) < 0)
        return;
    int64_t lo = (int64_t)(theirs - after), hi = (int64_t)(theirs - before);
    o->exchanges++;
    if (lo > o->lo)
        o->lo = lo;
    if (hi < o->hi)
        o->hi = hi;
    uint64_t rt = after - before;
    if (rt < o->round_trip_min) {
        o->round_trip_min = rt;
        o->best_lo = lo;
        o->best_hi = hi;
    }
}

bool tsc_offset_consistent(const struct tsc_offset *o) { return o->exchanges > 0 && o->lo <= o->hi; }

/* floor((lo + hi) / 2) without overflow */
int64_t tsc_offset_mid(const struct tsc_offset *o)
{
    return (o->lo >> 1) + (o->hi >> 1) + (o->lo & o->hi & 1);
}

uint64_t tsc_offset_half(const struct tsc_offset *o)
{
    int64_t m = tsc_offset_mid(o);
    uint64_t up = (uint64_t)o->hi - (uint64_t)m, down = (uint64_t)m - (uint64_t)o->lo;
    return up > down ? up : down;
}

bool tsc_offset_contains(const struct tsc_offset *o, int64_t x) { return o->lo <= x && x <= o->hi; }

static uint64_t magnitude(int64_t v) { return v < 0 ? 0 - (uint64_t)v : (uint64_t)v; }

uint64_t tsc_offset_worst(const struct tsc_offset *o)
{
    uint64_t a = magnitude(o->lo), b = magnitude(o->hi);
    return a > b ? a : b;
}

/* n / d by shift and subtract: the kernel has no libgcc for __int128 division. */
static unsigned __int128 udiv128(unsigned __int128 n, uint64_t d)
{
    unsigned __int128 q = 0, r = 0;
    for (int i = 127; i >= 0; i--) {
        r = r << 1 | ((n >> i) & 1);
        if (r >= d) {
            r -= d;
            q |= (unsigned __int128)1 << i;
        }
    }
    return q;
}

bool tsc_offset_rate(const struct tsc_offset *first, const struct tsc_offset *second, uint64_t elapsed_ticks,
                     int64_t *rate_mppm, uint64_t *uncertainty_mppm)
{
    if (!tsc_offset_consistent(first) || !tsc_offset_consistent(second) || elapsed_ticks == 0 ||
        elapsed_ticks > UINT64_MAX / 2)
        return false;
    /* In 128 bits: offsets up to 2^64 times 10^9 (ppm in thousandths). */
    __int128 lo = (__int128)second->lo - first->hi, hi = (__int128)second->hi - first->lo;
    const unsigned __int128 scale = 1000000000;
    uint64_t den = 2 * elapsed_ticks;
    __int128 sum = lo + hi; /* twice the midpoint */
    unsigned __int128 mag = sum < 0 ? (unsigned __int128)(-sum) : (unsigned __int128)sum;
    /* midpoint rounded to nearest, half-width rounded up and widened by one
       unit for that rounding: [r - u, r + u] still covers [lo, hi] */
    unsigned __int128 r = udiv128(mag * scale + elapsed_ticks, den);
    unsigned __int128 u = udiv128((unsigned __int128)(hi - lo) * scale + den - 1, den) + 1;
    if (r > (unsigned __int128)INT64_MAX || u > (unsigned __int128)UINT64_MAX)
        return false;
    *rate_mppm = sum < 0 ? -(int64_t)r : (int64_t)r;
    *uncertainty_mppm = (uint64_t)u;
    return true;
}

bool tsc_skew_parse(const char *s, uint32_t *cpu, int64_t *ticks)
{
    if (!s)
        return false;
    char num[24];
    uint64_t c, t;
    const char *v = cmdline_split(s, ':', num, sizeof num);
    if (!v || !cmdline_parse_u64(num, &c) || c > UINT32_MAX)
        return false;
    bool negative = *v == '-';
    if (*v == '-' || *v == '+')
        v++;
    if (!cmdline_parse_u64(v, &t) || t == 0 || t > (uint64_t)INT64_MAX)
        return false;
    *cpu = (uint32_t)c;
    *ticks = negative ? -(int64_t)t : (int64_t)t;
    return true;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

bool tsc_offset_between(const struct tsc_offset *i, const struct tsc_offset *j, int64_t *lo, int64_t *hi)
{
    if (!tsc_offset_consistent(i) || !tsc_offset_consistent(j))
        return false;
    *lo = sat_sub(i->lo, j->hi);
    *hi = sat_sub(i->hi, j->lo);
    return true;
}

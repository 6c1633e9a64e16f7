/* When each timer fires (see timer_deadline.h). */
#include "timer_deadline.h"

#define PIT_COUNT_ZERO 65536u /* mode 0, binary: a count of 0 is 2^16 */

struct xf timer_tsc_per_tick(struct xf per_tsc, uint32_t divide)
{
    return xf_div(xf_from_u64(divide ? divide : 1), per_tsc);
}

/* floor and ceiling of a non-negative x */
static uint64_t floor_u64(struct xf x)
{
    int64_t r = xf_to_fixed(x, 0);
    if (r > 0 && xf_cmp(xf_from_i64(r), x) > 0)
        r--;
    return r > 0 ? (uint64_t)r : 0;
}

static uint64_t ceil_u64(struct xf x)
{
    int64_t r = xf_to_fixed(x, 0);
    if (r < 0)
        r = 0;
    if (xf_cmp(xf_from_i64(r), x) < 0)
        r++;
    return (uint64_t)r;
}

struct timer_fire timer_fire_of(enum timer_fire_mode mode, uint64_t t0, uint64_t t1, uint64_t count, struct xf tsc_per_tick)
{
    uint64_t bracket = t1 > t0 ? t1 - t0 : 0, ticks, extra = 0;
    switch (mode) {
    case TIMER_FIRE_TSC_DEADLINE:
        return (struct timer_fire){.earliest = count, .width = 0};
    case TIMER_FIRE_LAPIC_ONESHOT:
        if (!count) /* a count of 0 stops the timer: it never fires */
            return (struct timer_fire){.earliest = UINT64_MAX, .width = 0};
        ticks = count - 1;
        extra = 1; /* N-1 to N+1 ticks: the SDM's reading and QEMU's */
        break;
    case TIMER_FIRE_HPET_MATCH:
        if (!count) /* matched at the read's own tick: at once */
            return (struct timer_fire){.earliest = t0 > 0 ? t0 : 0, .width = bracket};
        ticks = count - 1;
        break;
    case TIMER_FIRE_PIT_MODE0:
        ticks = count ? count : PIT_COUNT_ZERO;
        break;
    default:
        return (struct timer_fire){.earliest = t0, .width = bracket};
    }
    /* floor for the earliest instant (never later than the hardware can
       fire), ceiling for the tick (never narrower) */
    struct timer_fire f;
    f.earliest = t0 + floor_u64(xf_mul(xf_from_u64(ticks), tsc_per_tick));
    f.width = ceil_u64(xf_mul(tsc_per_tick, xf_from_u64(1 + extra))) + bracket;
    return f;
}

uint64_t timer_fire_rate_u(uint64_t count, struct xf tsc_per_tick, struct xf rel_u, unsigned sigmas)
{
    return ceil_u64(xf_abs(xf_mul(xf_mul(xf_from_u64(count), tsc_per_tick), xf_mul(rel_u, xf_from_u64(sigmas)))));
}

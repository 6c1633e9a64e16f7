/* HPET driver: IA-PC HPET 1.0a, 2.3 (registers) and 2.3.9 (timer modes).
   Like Linux's hpet_enable(), it rejects a block that reads all ones, a
   period outside the specification's range, and a counter that does not
   move within a bounded time. */
#include "hpet.h"

#include "../lib/format.h"
#include "cpu.h"

/* Bounds for every wait: an iteration cap and a TSC deadline. 2^28 TSC
   ticks is 50-270 ms on CPUs of 1-5 GHz, far longer than any of the waits
   needs on a working HPET (each wants about 1 ms). */
#define HPET_WAIT_SPINS 2000000
#define HPET_WAIT_TSC (1ull << 28)

static bool wait_counter_moves(const struct hpet *h, uint64_t from)
{
    uint64_t t0 = rdtsc();
    for (int i = 0; i < HPET_WAIT_SPINS && rdtsc() - t0 < HPET_WAIT_TSC; i++)
        if (hpet_counter(h) != from)
            return true;
    return false;
}

bool hpet_init(struct hpet *h, uint64_t base, char *why, unsigned why_len)
{
    *h = (struct hpet){.base = base};
    uint64_t caps = hpet_read64(h, HPET_GCAP_ID);
    if ((uint32_t)caps == 0xFFFFFFFFu) {
        fmt_format(why, why_len, "registers at 0x%llx read all ones: no device there", (unsigned long long)base);
        goto fail;
    }
    uint32_t period = (uint32_t)(caps >> HPET_GCAP_PERIOD_SHIFT);
    if (period == 0 || period > HPET_MAX_PERIOD_FS) {
        fmt_format(why, why_len, "capabilities 0x%016llx give period %u fs, outside 0 < period <= %llu fs (HPET 1.0a, 2.3.4)",
                   (unsigned long long)caps, period, (unsigned long long)HPET_MAX_PERIOD_FS);
        goto fail;
    }
    h->caps = caps;
    h->period_fs = period;
    h->revision = (uint8_t)(caps & HPET_GCAP_REV_MASK);
    h->comparators = (uint8_t)(((caps >> HPET_GCAP_NUM_TIM_SHIFT) & HPET_GCAP_NUM_TIM_MASK) + 1);
    h->counter_64bit = caps & HPET_GCAP_COUNT_SIZE_CAP;
    h->legacy_capable = caps & HPET_GCAP_LEG_RT_CAP;
    h->vendor = (uint16_t)(caps >> HPET_GCAP_VENDOR_SHIFT);
    uint64_t t0conf = hpet_read64(h, HPET_TIMER_CONF(0));
    h->t0_periodic_capable = t0conf & HPET_TN_PER_INT_CAP;
    h->t0_64bit = t0conf & HPET_TN_SIZE_CAP;
    if (h->revision == 0) {
        fmt_format(why, why_len, "capabilities 0x%016llx: revision 0 is not a valid HPET", (unsigned long long)caps);
        goto fail;
    }

    /* Halt, route nothing to the legacy IRQs, zero, start (HPET 1.0a, 2.3.5
       and 2.3.7: the main counter may be written only while halted). */
    uint64_t conf = hpet_read64(h, HPET_GEN_CONF);
    conf &= ~(HPET_CONF_ENABLE | HPET_CONF_LEGACY);
    hpet_write64(h, HPET_GEN_CONF, conf);
    for (unsigned n = 0; n < h->comparators; n++)
        hpet_write64(h, HPET_TIMER_CONF(n), hpet_read64(h, HPET_TIMER_CONF(n)) & ~HPET_TN_INT_ENB);
    hpet_write64(h, HPET_MAIN_COUNTER, 0);
    hpet_write64(h, HPET_GEN_CONF, conf | HPET_CONF_ENABLE);
    if (!wait_counter_moves(h, hpet_counter(h))) {
        fmt_format(why, why_len, "main counter did not move within 2^28 TSC ticks after being enabled (stuck at %llu)",
                   (unsigned long long)hpet_counter(h));
        goto fail;
    }
    return true;
fail:
    h->base = 0;
    return false;
}

static bool wait_status(const struct hpet *h, uint64_t *seen_at)
{
    uint64_t t0 = rdtsc();
    for (int i = 0; i < HPET_WAIT_SPINS && rdtsc() - t0 < HPET_WAIT_TSC; i++) {
        if (hpet_read64(h, HPET_GINTR_STA) & 1) {
            *seen_at = hpet_counter(h);
            return true;
        }
    }
    return false;
}

void hpet_test_comparator(const struct hpet *h, uint64_t ahead, struct hpet_comparator_result *r)
{
    *r = (struct hpet_comparator_result){.ran = true};
    uint64_t mask = h->counter_64bit && h->t0_64bit ? ~0ull : 0xFFFFFFFFull;
    /* Level-triggered with the interrupt enabled at the HPET: the status bit
       is set on a match only then (HPET 1.0a, 2.3.11; QEMU's model sets it
       only for an enabled level-triggered timer). The CPU's interrupts stay
       off throughout, so nothing is ever delivered. */
    uint64_t base_conf = hpet_read64(h, HPET_TIMER_CONF(0)) & ~(HPET_TN_TYPE_PERIODIC | HPET_TN_VAL_SET | HPET_TN_INT_ENB);
    if (mask != ~0ull)
        base_conf |= HPET_TN_32MODE;
    uint64_t conf = base_conf | HPET_TN_INT_TYPE_LEVEL | HPET_TN_INT_ENB;

    hpet_write64(h, HPET_TIMER_CONF(0), base_conf);
    hpet_write64(h, HPET_GINTR_STA, 1); /* write 1 to clear */
    r->target = (hpet_counter(h) + ahead) & mask;
    hpet_write64(h, HPET_TIMER_COMPARATOR(0), r->target);
    hpet_write64(h, HPET_TIMER_CONF(0), conf);
    r->matched = wait_status(h, &r->seen_at);
    if (r->matched)
        r->late_ticks = (r->seen_at - r->target) & mask;
    else
        fmt_format(r->note, sizeof r->note, "no match seen within 2^28 TSC ticks (target %llu, counter %llu)",
                   (unsigned long long)r->target, (unsigned long long)hpet_counter(h));
    hpet_write64(h, HPET_TIMER_CONF(0), base_conf);
    hpet_write64(h, HPET_GINTR_STA, 1);

    if (!h->t0_periodic_capable || !r->matched)
        return;
    /* Periodic: VAL_SET lets the comparator write set the period
       accumulator (HPET 1.0a, 2.3.9.2.2), the second write the period.
       QEMU's model (hw/timer/hpet.c) takes the first value as the period
       too until the second write comes: a match in between, when the CPU
       is taken away for longer than `ahead` (a loaded host), moves the
       comparator on by that value, seconds away, and no period comes. A
       comparator more than two periods ahead is set again (3 tries), the
       status of that early match cleared. */
    r->periodic_tested = true;
    r->period_asked_ticks = ahead;
    for (int try = 0; try < 3; try++) {
        uint64_t start = (hpet_counter(h) + ahead) & mask;
        hpet_write64(h, HPET_TIMER_CONF(0), conf | HPET_TN_TYPE_PERIODIC | HPET_TN_VAL_SET);
        hpet_write64(h, HPET_TIMER_COMPARATOR(0), start);
        hpet_write64(h, HPET_TIMER_COMPARATOR(0), ahead);
        if (((hpet_read64(h, HPET_TIMER_COMPARATOR(0)) - hpet_counter(h)) & mask) <= 2 * ahead)
            break;
        hpet_write64(h, HPET_GINTR_STA, 1);
    }
    uint64_t first = 0, last = 0;
    const uint32_t want = 5;
    while (r->periods_seen <= want) {
        uint64_t seen;
        if (!wait_status(h, &seen))
            break;
        hpet_write64(h, HPET_GINTR_STA, 1);
        if (r->periods_seen == 0)
            first = seen;
        last = seen;
        r->periods_seen++;
    }
    hpet_write64(h, HPET_TIMER_CONF(0), base_conf);
    hpet_write64(h, HPET_GINTR_STA, 1);
    if (r->periods_seen > want) {
        r->periodic_ok = true;
        r->period_achieved_ticks_x1000 = ((last - first) & mask) * 1000 / want;
    } else {
        fmt_format(r->note, sizeof r->note, "periodic mode: %u of %u periods seen", r->periods_seen > 0 ? r->periods_seen - 1 : 0,
                   want);
    }
}

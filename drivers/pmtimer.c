/* ACPI PM timer driver. */
#include "pmtimer.h"

#include "../lib/format.h"

#define PM_WAIT_SPINS 1000000
#define PM_WAIT_TSC (1ull << 28) /* 50-270 ms at 1-5 GHz; the timer ticks every 279 ns */
#define PM_MONOTONIC_READS 2000
#define PM_VERIFY_TRIES 16

bool pmtimer_init(struct pmtimer *p, bool io, uint64_t address, bool width32, char *why, unsigned why_len)
{
    *p = (struct pmtimer){.io = io, .address = address, .width = width32 ? 32 : 24,
                          .mask = width32 ? 0xFFFFFFFFu : 0xFFFFFFu};
    if (io && address > 0xFFFC) {
        fmt_format(why, why_len, "I/O port 0x%llx is beyond the 64 KiB I/O space", (unsigned long long)address);
        return false;
    }
    uint32_t raw = p->io ? inl((uint16_t)address) : *(volatile uint32_t *)(uintptr_t)address;
    if (raw == 0xFFFFFFFFu) {
        fmt_format(why, why_len, "%s 0x%llx reads all ones: no timer there", io ? "port" : "address", (unsigned long long)address);
        return false;
    }
    uint32_t first = pmtimer_read(p);
    uint64_t t0 = rdtsc();
    bool moved = false;
    for (int i = 0; i < PM_WAIT_SPINS && rdtsc() - t0 < PM_WAIT_TSC; i++)
        if (pmtimer_read(p) != first) {
            moved = true;
            break;
        }
    if (!moved) {
        fmt_format(why, why_len, "counter stuck at 0x%x for 2^28 TSC ticks", first);
        return false;
    }
    /* A step "backwards" shows as a delta in the upper half of the range. */
    uint32_t prev = pmtimer_read(p);
    for (int i = 0; i < PM_MONOTONIC_READS; i++) {
        uint32_t v = pmtimer_read(p);
        if (pmtimer_delta(p, prev, v) > p->mask / 2) {
            fmt_format(why, why_len, "counter went backwards from 0x%x to 0x%x", prev, v);
            return false;
        }
        prev = v;
    }
    return true;
}

uint32_t pmtimer_read_verified(struct pmtimer *p)
{
    uint32_t v2 = 0;
    for (int i = 0; i < PM_VERIFY_TRIES; i++) {
        uint32_t v1 = pmtimer_read(p);
        v2 = pmtimer_read(p);
        uint32_t v3 = pmtimer_read(p);
        /* in order modulo the width: v1 <= v2 <= v3 along the way round */
        if (pmtimer_delta(p, v1, v2) <= pmtimer_delta(p, v1, v3))
            return v2;
        p->disagreements++;
    }
    return v2;
}

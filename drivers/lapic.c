/* Local APIC driver (see lapic.h): Intel SDM vol. 3A, 11.4, 11.6, 11.12. */
#include "lapic.h"

#define LAPIC_SEND_SPINS 1000000

bool lapic_init(struct lapic *l, uint64_t apic_base_msr, const char **why)
{
    *l = (struct lapic){.apic_base_msr = apic_base_msr};
    if (!(apic_base_msr & APIC_BASE_ENABLE)) {
        *why = "the local APIC is globally disabled (IA32_APIC_BASE bit 11 clear)";
        return false;
    }
    l->x2apic = apic_base_msr & APIC_BASE_EXTD;
    l->base = apic_base_msr & APIC_BASE_ADDR_MASK;
    return true;
}

void lapic_enable_x2apic(struct lapic *l)
{
    uint64_t v = rdmsr(MSR_APIC_BASE) | APIC_BASE_ENABLE | APIC_BASE_EXTD;
    wrmsr(MSR_APIC_BASE, v);
    l->apic_base_msr = v;
    l->x2apic = true;
}

uint32_t lapic_id(const struct lapic *l)
{
    uint32_t id = lapic_read(l, LAPIC_ID);
    return l->x2apic ? id : id >> LAPIC_ID_XAPIC_SHIFT;
}

bool lapic_send_ipi(const struct lapic *l, uint32_t dest, uint32_t icr_low, uint64_t deadline_ticks)
{
    if (l->x2apic) {
        /* One MSR write sends it; x2APIC has no delivery-status bit (11.12.9). */
        wrmsr(MSR_X2APIC_FIRST + (LAPIC_ICR_LOW >> 4), (uint64_t)dest << ICR_X2APIC_DEST_SHIFT | icr_low);
        return true;
    }
    /* The write of the low half sends it (11.6.1). */
    lapic_write(l, LAPIC_ICR_HIGH, dest << ICR_XAPIC_DEST_SHIFT);
    lapic_write(l, LAPIC_ICR_LOW, icr_low);
    uint64_t t0 = rdtsc();
    for (int i = 0; i < LAPIC_SEND_SPINS; i++) {
        if (!(lapic_read(l, LAPIC_ICR_LOW) & ICR_PENDING))
            return true;
        if (rdtsc() - t0 > deadline_ticks)
            break;
        cpu_relax();
    }
    return false;
}

void lapic_timer_free_run(const struct lapic *l)
{
    lapic_write(l, LAPIC_LVT_TIMER, LVT_MASKED | LVT_TIMER_PERIODIC);
    lapic_write(l, LAPIC_TIMER_DIVIDE, TIMER_DIVIDE_BY_1);
    lapic_write(l, LAPIC_TIMER_INITIAL, 0xFFFFFFFFu);
}

/* Target names and read sources (see reads.h). */
#include "reads.h"

#include "discover.h"
#include "smp.h"

const struct target_info target_info[TARGET_COUNT] = {
    [TARGET_RDTSC] = {"rdtsc", -1},
    [TARGET_RDTSCP] = {"rdtscp", -1},
    [TARGET_LFENCE_RDTSC] = {"lfence;rdtsc", -1},
    [TARGET_MFENCE_RDTSC] = {"mfence;rdtsc", -1},
    [TARGET_CPUID_RDTSC] = {"cpuid;rdtsc", -1},
    [TARGET_HPET] = {"hpet", COUNTER_HPET},
    [TARGET_ACPI_PM] = {"acpi_pm", COUNTER_ACPI_PM},
    [TARGET_PIT] = {"pit", COUNTER_PIT},
    [TARGET_LAPIC] = {"lapic", COUNTER_LAPIC},
    [TARGET_KVMCLOCK] = {"kvmclock", COUNTER_KVMCLOCK},
    [TARGET_HV_REF_COUNTER] = {"hv_ref_counter", COUNTER_HV_REF_COUNTER},
    [TARGET_HV_REF_PAGE] = {"hv_ref_page", COUNTER_HV_REF_PAGE},
};

bool counter_source(int counter, struct read_src *src)
{
    const struct counter *c = &counters[counter];
    *src = (struct read_src){.kind = READ_NONE, .mask = c->mask};
    if (!c->present)
        return false;
    switch (counter) {
    case COUNTER_TSC:
        src->kind = READ_RDTSC;
        return true;
    case COUNTER_HPET:
        src->kind = discovered.hpet.counter_64bit ? READ_HPET64 : READ_HPET32;
        src->addr = (uintptr_t)(discovered.hpet.base + HPET_MAIN_COUNTER);
        return true;
    case COUNTER_ACPI_PM:
        src->kind = discovered.pm.io ? READ_PM_IO : READ_PM_MMIO;
        src->port = (uint16_t)discovered.pm.address;
        src->addr = (uintptr_t)discovered.pm.address;
        return true;
    case COUNTER_PIT:
        src->kind = READ_PIT;
        return true;
    case COUNTER_KVMCLOCK:
        src->kind = READ_KVMCLOCK;
        src->addr = (uintptr_t)&kvmclock_page;
        return true;
    case COUNTER_HV_REF_COUNTER:
        src->kind = READ_HV_MSR;
        return true;
    case COUNTER_HV_REF_PAGE:
        src->kind = READ_HV_PAGE;
        src->addr = (uintptr_t)hv_page;
        return true;
    case COUNTER_LAPIC:
        src->kind = smp.lapic.x2apic ? READ_LAPIC_MSR : READ_LAPIC_MMIO;
        src->addr = (uintptr_t)(smp.lapic.base + LAPIC_TIMER_CURRENT);
        return true;
    }
    return false;
}

bool target_source(enum target_id t, struct read_src *src, const char **why)
{
    static const enum read_kind tsc_kind[TSC_VARIANT_COUNT] = {
        [TSC_RDTSC] = READ_RDTSC, [TSC_RDTSCP] = READ_RDTSCP, [TSC_LFENCE_RDTSC] = READ_LFENCE_RDTSC,
        [TSC_MFENCE_RDTSC] = READ_MFENCE_RDTSC, [TSC_CPUID_RDTSC] = READ_CPUID_RDTSC,
    };
    int c = target_info[t].counter;
    if (c < 0) {
        const struct tsc_variant *v = &tsc_variants[t - TARGET_RDTSC];
        *src = (struct read_src){.kind = tsc_kind[t - TARGET_RDTSC], .mask = ~0ull};
        *why = v->reason;
        return v->available;
    }
    *why = counters[c].reason;
    return counter_source(c, src);
}

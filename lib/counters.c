/* The counter table (see counters.h). Rows start absent; discover.c fills
   the discovery half. */
#include "counters.h"

struct counter counters[COUNTER_COUNT] = {
    [COUNTER_TSC] = {.name = "tsc", .reference_rank = 0, .advice_good = "the clock to use: cheapest read, finest step, invariant",
                     .nominal_accuracy_ppm = 0, .nominal_accuracy_source = "measured, not a reference"},
    /* IA-PC HPET 1.0a, 2.3.4: the main counter within +-0.05 % (500 ppm) */
    [COUNTER_HPET] = {.name = "hpet", .reference_rank = 1, .advice_good = "a good reference; too slow to read for timestamps",
                      .nominal_accuracy_ppm = 500, .nominal_accuracy_source = "the HPET's own crystal, HPET 1.0a 2.3.4"},
    /* ACPI states the rate (6.5, 4.8.3.3) but no tolerance; it is taken from
       the same 14.31818 MHz platform clock as the HPET on PCs, so the HPET's
       bound is used, labelled as an assumption */
    [COUNTER_ACPI_PM] = {.name = "acpi_pm", .reference_rank = 2, .advice_good = "a fallback reference: slow and coarse",
                         .nominal_accuracy_ppm = 500,
                         .nominal_accuracy_source = "the PM timer's crystal; ACPI states no tolerance, 500 ppm assumed"},
    [COUNTER_PIT] = {.name = "pit", .reference_rank = 3, .advice_good = "legacy: 16 bits, wraps every 55 ms; calibration only",
                     .nominal_accuracy_ppm = 500,
                     .nominal_accuracy_source = "the PIT's crystal; no tolerance stated, 500 ppm assumed"},
    /* The APIC timer's current count, free-running (periodic, masked, divide
       by 1): a counter too, but never a reference: its rate is the bus or
       crystal clock, often not stated anywhere (SDM vol. 3A, 11.5.4) */
    [COUNTER_LAPIC] = {.name = "lapic", .reference_rank = 0, .advice_good = "the APIC timer: for events, not for timestamps",
                       .nominal_accuracy_ppm = 500,
                       .nominal_accuracy_source = "the APIC timer's bus or crystal clock; no tolerance stated, 500 ppm assumed"},
    /* The paravirtual clocks are the TSC scaled by the hypervisor: never a
       reference, since they cannot disagree with the TSC except by the
       host's own calibration of it */
    /* ...except as a last resort, when nothing else is there (microVMs):
       then it checks the hypervisor's stated rate against the host's clock */
    [COUNTER_KVMCLOCK] = {.name = "kvmclock", .reference_rank = 0, .last_resort = true,
                          .advice_good = "KVM's paravirtual clock: what a Linux guest reads as kvm-clock",
                          .nominal_accuracy_ppm = 500,
                          .nominal_accuracy_source = "the host's calibration of its TSC; none stated, 500 ppm assumed"},
    [COUNTER_HV_REF_COUNTER] = {.name = "hv_ref_counter", .reference_rank = 0,
                                .advice_good = "Hyper-V's reference counter: an MSR read, a trap each time",
                                .nominal_accuracy_ppm = 500,
                                .nominal_accuracy_source = "the host's clock; none stated, 500 ppm assumed"},
    [COUNTER_HV_REF_PAGE] = {.name = "hv_ref_page", .reference_rank = 0,
                             .advice_good = "Hyper-V's reference TSC page: the TSC scaled, no trap",
                             .nominal_accuracy_ppm = 500,
                             .nominal_accuracy_source = "the host's calibration of its TSC; none stated, 500 ppm assumed"},
};

int counters_by_rank(int out[COUNTER_COUNT])
{
    int n = 0;
    for (unsigned rank = 1; rank < COUNTER_COUNT + 1; rank++)
        for (int c = 0; c < COUNTER_COUNT; c++)
            if (counters[c].reference_rank == rank && counters[c].present && !counters[c].set_aside)
                out[n++] = c;
    for (int c = 0; n == 0 && c < COUNTER_COUNT; c++)
        if (counters[c].last_resort && counters[c].present)
            out[n++] = c;
    return n;
}

bool counter_is_reference(int c)
{
    int order[COUNTER_COUNT];
    int n = counters_by_rank(order);
    for (int i = 0; i < n; i++)
        if (order[i] == c)
            return true;
    return false;
}

const char *counter_reference_role(int c)
{
    if (counters[c].reference_rank)
        return counters[c].set_aside ? "set aside" : "ranked";
    return counters[c].last_resort ? "last resort" : "no";
}

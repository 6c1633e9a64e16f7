/* Which clocksource Linux would choose on this machine, from what was
   found: each candidate's rating as Linux 6.x sets it (kernel/time/
   clocksource.c picks the highest rating), written out so the verdict can
   say why. Pure.
   - tsc 300 (arch/x86/kernel/tsc.c), when it behaved here and either the
     CPU reports an invariant TSC, or unsynchronized_tsc() would not mark it
     unstable: an Intel CPU, or a single CPU (it assumes only non-Intel
     machines with several CPUs and no constant TSC are unsynchronised);
     otherwise the TSC is left out. Seen: Debian's 6.1 under QEMU TCG, one
     CPU without an invariant TSC, runs on tsc (tests/fixtures/os-vm-tcg-q35.log);
   - kvm-clock 400, lowered to 299 when the CPU reports an invariant TSC
     (arch/x86/kernel/kvmclock.c: "Invariant TSC exposed by host means
     kvmclock is not necessary"); only when KVM is the detected hypervisor;
   - hyperv_clocksource_tsc_page 500 and hyperv_clocksource_msr 495,
     lowered to 250 and 245 when Hyper-V offers TSC_INVARIANT
     (drivers/clocksource/hyperv_timer.c); Hyper-V is detected first;
   - hpet 250, acpi_pm 200. */
#ifndef CLOCKBENCH_OS_CHOICE_H
#define CLOCKBENCH_OS_CHOICE_H

#include <stdbool.h>

struct os_choice_input {
    bool tsc, invariant_tsc, tsc_behaved;
    bool single_cpu, intel; /* the MADT enables one CPU; the vendor is GenuineIntel */
    bool kvm, kvmclock;
    bool hyperv, hv_page, hv_msr, hv_tsc_invariant;
    bool hpet, acpi_pm;
};

struct os_choice {
    const char *clock;     /* Linux's clocksource name, or 0 when none */
    int counter;           /* COUNTER_* it reads, -1 when none */
    int rating;
    char why[200];
};

void os_choice_make(const struct os_choice_input *in, struct os_choice *out);

#endif

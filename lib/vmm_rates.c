/* The VMMs' counter rates (see vmm_rates.h). Every row names the constant
   and the file it was read from: QEMU 7.2 and master (2026), Linux's KVM,
   Firecracker v1.16 and Cloud Hypervisor v53 (the versions ../shared/vmm
   holds). A VMM that changes a constant changes this table, nothing else. */
#include "vmm_rates.h"

#define MHZ_OF_HZ(hz) ((uint64_t)(hz) * 1000u)

/* Linux arch/x86/kvm/i8254.h: #define KVM_PIT_FREQ 1193181 */
#define KVM_PIT_HZ 1193181u
/* QEMU include/hw/timer/i8254.h: #define PIT_FREQ 1193182 */
#define QEMU_PIT_HZ 1193182u
/* Linux arch/x86/kvm/lapic.h: #define APIC_BUS_CYCLE_NS 1 (the timer counts
   ns: 1 GHz at divide by 1); KVM_CAP_X86_APIC_BUS_CYCLES_NS (Linux 6.10)
   lets a VMM change it, and none of these does */
#define KVM_APIC_HZ 1000000000u

#define KVM_PIT(v) {v, VDEV_PIT, "KVM's in-kernel PIT", MHZ_OF_HZ(KVM_PIT_HZ), "KVM_PIT_FREQ", "Linux arch/x86/kvm/i8254.h"}
#define KVM_LAPIC(v) {v, VDEV_APIC_TIMER, "KVM's APIC timer", MHZ_OF_HZ(KVM_APIC_HZ), "APIC_BUS_CYCLE_NS = 1", \
                      "Linux arch/x86/kvm/lapic.h"}
/* the pvclock ABI: system_time is in ns (Linux Documentation/virt/kvm/x86/msr.rst,
   MSR_KVM_SYSTEM_TIME_NEW: the pvclock ABI) */
#define KVMCLOCK(v) {v, VDEV_KVMCLOCK, "kvmclock", MHZ_OF_HZ(1000000000u), "system_time in ns", \
                     "Linux Documentation/virt/kvm/x86/msr.rst"}

static const struct vmm_rate table[] = {
    /* --- QEMU, TCG: every device in QEMU's user space, on QEMU_CLOCK_VIRTUAL (ns) --- */
    {VMM_QEMU_TCG, VDEV_PIT, "QEMU's PIT", MHZ_OF_HZ(QEMU_PIT_HZ), "PIT_FREQ", "QEMU include/hw/timer/i8254.h"},
    /* #define PM_TIMER_FREQUENCY 3579545, ACPI's 3.579545 MHz (acpi_pm_tmr_get_clock scales the virtual clock by it) */
    {VMM_QEMU_TCG, VDEV_PM_TIMER, "QEMU's ACPI PM timer", MHZ_OF_HZ(3579545u), "PM_TIMER_FREQUENCY", "QEMU include/hw/acpi/acpi.h"},
    /* #define HPET_CLK_PERIOD 10000000ULL (fs), used by hw/timer/hpet.c: 100 MHz */
    {VMM_QEMU_TCG, VDEV_HPET, "QEMU's HPET", MHZ_OF_HZ(100000000u), "HPET_CLK_PERIOD = 10,000,000 fs",
     "QEMU include/hw/timer/hpet.h"},
    /* apic_get_current_count: (QEMU_CLOCK_VIRTUAL ns - load time) >> count_shift,
       and count_shift = (v + 1) & 7 is 0 at divide by 1 (apic_register_write, 0x3e) */
    {VMM_QEMU_TCG, VDEV_APIC_TIMER, "QEMU's APIC timer", MHZ_OF_HZ(1000000000u), "QEMU_CLOCK_VIRTUAL, ns",
     "QEMU hw/intc/apic.c"},
    /* #define RTC_CLOCK_RATE 32768: the divider chain's input; the time steps at 1 Hz */
    {VMM_QEMU_TCG, VDEV_RTC, "QEMU's MC146818 RTC", MHZ_OF_HZ(1u), "RTC_CLOCK_RATE = 32768 Hz, divided to 1 Hz",
     "QEMU hw/rtc/mc146818rtc.c"},

    /* --- QEMU under KVM: the PIT is KVM's (kernel-irqchip=on, the default)
       or QEMU's own (kernel-irqchip=off or split: hw/i386/pc.c creates
       kvm-pit only when kvm_pit_in_kernel()); the guest cannot tell which.
       PM timer, HPET and RTC stay in QEMU's user space. --- */
    KVM_PIT(VMM_QEMU_KVM),
    {VMM_QEMU_KVM, VDEV_PIT, "QEMU's PIT", MHZ_OF_HZ(QEMU_PIT_HZ), "PIT_FREQ", "QEMU include/hw/timer/i8254.h"},
    {VMM_QEMU_KVM, VDEV_PM_TIMER, "QEMU's ACPI PM timer", MHZ_OF_HZ(3579545u), "PM_TIMER_FREQUENCY", "QEMU include/hw/acpi/acpi.h"},
    {VMM_QEMU_KVM, VDEV_HPET, "QEMU's HPET", MHZ_OF_HZ(100000000u), "HPET_CLK_PERIOD = 10,000,000 fs",
     "QEMU include/hw/timer/hpet.h"},
    /* QEMU's own APIC (kernel-irqchip=off) counts ns as well: 1 GHz either way */
    KVM_LAPIC(VMM_QEMU_KVM),
    KVMCLOCK(VMM_QEMU_KVM),
    {VMM_QEMU_KVM, VDEV_RTC, "QEMU's MC146818 RTC", MHZ_OF_HZ(1u), "RTC_CLOCK_RATE = 32768 Hz, divided to 1 Hz",
     "QEMU hw/rtc/mc146818rtc.c"},

    /* --- Firecracker: KVM's PIT (create_pit2 in src/vmm/src/arch/x86_64/vm.rs),
       KVM's APIC, kvmclock; no PM timer, HPET or RTC --- */
    KVM_PIT(VMM_FIRECRACKER),
    KVM_LAPIC(VMM_FIRECRACKER),
    KVMCLOCK(VMM_FIRECRACKER),

    /* --- Cloud Hypervisor: no PIT, no HPET --- */
    /* AcpiPmTimerDevice::read: Instant::now() ns * PM_TIMER_FREQUENCY_HZ (3_579_545) / 10^9 */
    {VMM_CLOUD_HYPERVISOR, VDEV_PM_TIMER, "Cloud Hypervisor's PM timer", MHZ_OF_HZ(3579545u), "PM_TIMER_FREQUENCY_HZ",
     "cloud-hypervisor devices/src/acpi.rs"},
    /* and it states the same 1 GHz in CPUID 0x40000010 EBX (arch/src/x86_64/mod.rs) */
    KVM_LAPIC(VMM_CLOUD_HYPERVISOR),
    KVMCLOCK(VMM_CLOUD_HYPERVISOR),
    /* Cmos::read: the seconds of clock_gettime(CLOCK_REALTIME), no divider */
    {VMM_CLOUD_HYPERVISOR, VDEV_RTC, "Cloud Hypervisor's CMOS RTC", MHZ_OF_HZ(1u), "CLOCK_REALTIME seconds",
     "cloud-hypervisor devices/src/legacy/cmos.rs"},
};

#define TABLE_ROWS (sizeof table / sizeof *table)

const struct vmm_rate *vmm_rate_table(unsigned *count)
{
    *count = TABLE_ROWS;
    return table;
}

const struct vmm_rate *vmm_rate_of(enum vmm_id vmm, enum vmm_device device, unsigned which)
{
    for (unsigned i = 0; i < TABLE_ROWS; i++)
        if (table[i].vmm == vmm && table[i].device == device && which-- == 0)
            return &table[i];
    return 0;
}

/* counted by the one lookup, so the two can never disagree on what a row
   of this machine and device is (the table is a few dozen rows) */
unsigned vmm_rate_candidates(enum vmm_id vmm, enum vmm_device device)
{
    unsigned n = 0;
    while (vmm_rate_of(vmm, device, n))
        n++;
    return n;
}

const char *vmm_name(enum vmm_id vmm)
{
    switch (vmm) {
    case VMM_QEMU_TCG: return "QEMU (TCG)";
    case VMM_QEMU_KVM: return "QEMU+KVM";
    case VMM_FIRECRACKER: return "Firecracker";
    case VMM_CLOUD_HYPERVISOR: return "Cloud Hypervisor";
    case VMM_UNKNOWN:
    case VMM_COUNT: break;
    }
    return "unidentified";
}

/* n / d by shift and subtract: the kernel links no libgcc (__udivti3);
   saturates at 2^64 - 1 */
static uint64_t div128_sat(unsigned __int128 n, uint64_t d)
{
    unsigned __int128 q = 0, r = 0;
    for (int i = 127; i >= 0; i--) {
        r = r << 1 | (uint64_t)(n >> i & 1);
        if (r >= d) {
            r -= d;
            q |= (unsigned __int128)1 << i;
        }
    }
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* |m - c| / c in parts per billion, rounded up (a distance is never understated) */
static uint64_t off_ppb(uint64_t m, uint64_t c)
{
    unsigned __int128 d = m > c ? m - c : c - m;
    return c ? div128_sat(d * 1000000000u + c - 1, c) : UINT64_MAX;
}

struct vmm_pick vmm_rate_unmeasured(uint64_t a, uint64_t b)
{
    uint64_t mid = a / 2 + b / 2 + (a % 2 + b % 2) / 2;
    return (struct vmm_pick){.chosen = -1, .millihz = mid, .spread_ppb = off_ppb(a > b ? a : b, mid)};
}

struct vmm_pick vmm_rate_pick(uint64_t a, uint64_t b, uint64_t measured, uint64_t u_ppb)
{
    struct vmm_pick p = vmm_rate_unmeasured(a, b);
    p.off_a_ppb = off_ppb(measured, a);
    p.off_b_ppb = off_ppb(measured, b);
    unsigned __int128 bound = (unsigned __int128)u_ppb * 3;
    bool a_fits = p.off_a_ppb <= bound, b_fits = p.off_b_ppb <= bound;
    if (a_fits != b_fits) {
        p.chosen = a_fits ? 0 : 1;
        p.millihz = a_fits ? a : b;
        p.spread_ppb = 0;
    }
    return p;
}

/* Discovery (see discover.h). Every device access that trusts a firmware
   claim runs inside probe_run(), so a fault there makes that counter
   absent, with the fault as the reason, instead of ending the run. */
#include "discover.h"

#include <stdarg.h>

#include "../drivers/pit.h"
#include "../drivers/rtc.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/format.h"
#include "../lib/string.h"
#include "../lib/xf.h"
#include "console.h"
#include "finish.h"
#include "paging.h"
#include "probe.h"
#include "reads.h"
#include "smp.h"

struct discovery discovered;

#define PM_VERIFY_READS 256

/* probe_fault=acpi|hpet|pm: a deliberate bad access inside that probe,
   which the probe mechanism must turn into "unavailable" (the robustness
   matrix boots with it). A non-canonical address raises #GP. */
static void maybe_inject_fault(const char *probe)
{
    const char *which = cmdline_get(&boot_cmdline, "probe_fault");
    if (which && !strcmp(which, probe))
        (void)*(volatile uint64_t *)0x8000000000000008ull;
}

static void set_absent(struct counter *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_absent(struct counter *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    c->present = false;
    fmt_vformat(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
}

static void set_present(struct counter *c, unsigned width)
{
    c->present = true;
    c->reason[0] = '\0';
    c->width_bits = width;
    c->mask = counter_mask(width);
}

/* --- ACPI, through identity mappings made on demand --- */
static const void *map_for_acpi(void *ctx, uint64_t phys, uint64_t len, const char **why)
{
    (void)ctx;
    if (!paging_map(phys, len, false, why))
        return 0;
    return (const void *)(uintptr_t)phys;
}

struct acpi_job {
    const struct boot_info *bi;
};

static void acpi_job_run(void *p)
{
    const struct boot_info *bi = ((struct acpi_job *)p)->bi;
    struct acpi_mapper m = {map_for_acpi, 0};
    maybe_inject_fault("acpi");
    acpi_discover(&m, bi->rsdp_new_present ? bi->rsdp_new : 0, bi->rsdp_new_len, bi->rsdp_old_present ? bi->rsdp_old : 0,
                  bi->protocol == BOOT_PVH ? ACPI_FROM_PVH : ACPI_FROM_MULTIBOOT2, &discovered.acpi);
}

/* --- CMOS RTC: whether the firmware rules it out before any port is read --- */
static void discover_rtc(void)
{
    const struct acpi_info *a = &discovered.acpi;
    /* ACPI 6.5, 5.2.9.3: "CMOS RTC Not Present"; Linux then registers no
       RTC (arch/x86/kernel/acpi/boot.c, acpi_parse_fadt) */
    if (a->iapc_boot_arch_valid && (a->iapc_boot_arch & ACPI_IAPC_CMOS_RTC_NOT_PRESENT))
        rtc_firmware_absent("FADT IAPC_BOOT_ARCH bit 5 says CMOS RTC Not Present: ports 0x70/0x71 left alone");
    /* Firecracker states no such thing (its IAPC_BOOT_ARCH has only bit 2,
       no VGA: src/vmm/src/acpi/x86_64.rs), yet decodes nothing at
       0x70/0x71 and logs every access. Its FADT names it (Hypervisor Vendor
       Identity "FIRECKVM"), which is the closest firmware statement there is. */
    else if (!strcmp(a->hypervisor_vendor, "FIRECKVM"))
        rtc_firmware_absent("Firecracker (FADT vendor FIRECKVM) has no CMOS RTC: ports 0x70/0x71 left alone");
}

/* --- nominal rates by the VMM that emulates the device (lib/vmm_rates.c) --- */
/* "1,193,181 Hz" or "1,193,181.5 Hz": a rate in mHz, grouped in thousands */
static void fmt_rate_hz(char *out, unsigned n, uint64_t millihz)
{
    char digits[24];
    uint64_t hz = millihz / 1000, frac = millihz % 1000;
    int len = fmt_format(digits, sizeof digits, "%llu", (unsigned long long)hz), at = 0;
    char grouped[32];
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            grouped[at++] = ',';
        grouped[at++] = digits[i];
    }
    grouped[at] = '\0';
    if (!frac) {
        fmt_format(out, n, "%s Hz", grouped);
        return;
    }
    char f[4] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10), '\0'};
    for (int i = 2; i > 0 && f[i] == '0'; i--)
        f[i] = '\0';
    fmt_format(out, n, "%s.%s Hz", grouped, f);
}

/* The identified VMM's rate for this device, when it has one: one row, or
   the midpoint of two (QEMU+KVM's PIT) with half their spread, until the
   drift experiment tells them apart (exp_drift.c). False on a machine not
   identified, or one whose VMM does not emulate the device. */
static bool nominal_by_vmm(struct counter *c, enum vmm_device device)
{
    enum vmm_id vmm = machine_vmm();
    unsigned n = vmm_rate_candidates(vmm, device);
    if (!n)
        return false;
    const struct vmm_rate *a = vmm_rate_of(vmm, device, 0), *b = n > 1 ? vmm_rate_of(vmm, device, 1) : 0;
    char hz[32];
    c->nominal_from = "vmm";
    c->nominal_vmm[0] = a;
    c->nominal_vmm[1] = b;
    /* the VMM's device counts its constant against the host's clock: that
       clock is what the absolute figure rests on */
    c->nominal_accuracy_source = "the host's clock, which the VMM's device counts; none stated, 500 ppm assumed";
    if (!b) {
        c->nominal_millihz = a->millihz;
        c->nominal_spread_ppb = 0;
        fmt_rate_hz(hz, sizeof hz, a->millihz);
        fmt_format(c->nominal_source, sizeof c->nominal_source, "%s, %s (%s)", a->model, hz, a->constant);
        return true;
    }
    struct vmm_pick p = vmm_rate_unmeasured(a->millihz, b->millihz);
    c->nominal_millihz = p.millihz;
    c->nominal_spread_ppb = (uint32_t)p.spread_ppb;
    fmt_rate_hz(hz, sizeof hz, p.millihz);
    fmt_format(c->nominal_source, sizeof c->nominal_source, "%s or %s, midway: %s (%s or %s)", a->model, b->model, hz,
               a->constant, b->constant);
    return true;
}

/* --- TSC --- */
static void discover_tsc(const struct cpu_info *ci)
{
    struct counter *c = &counters[COUNTER_TSC];
    if (!ci->tsc) {
        set_absent(c, "CPUID.1:EDX[4] clear: no time-stamp counter");
        return;
    }
    set_present(c, 64);
    fmt_format(c->access, sizeof c->access, "RDTSC instruction");
    /* Claimed, never measured: the crystal-based leaf first (it is the
       architectural statement), then the hypervisor's. */
    static const char *const preference[] = {"cpuid.15h", "cpuid.15h+16h", "cpuid.40000010h"};
    for (unsigned p = 0; p < sizeof preference / sizeof *preference; p++)
        for (int i = 0; i < ci->claim_count; i++)
            if (!strcmp(ci->claims[i].what, "tsc") && !strcmp(ci->claims[i].source, preference[p])) {
                c->nominal_millihz = ci->claims[i].hz * 1000;
                c->nominal_from = "claimed";
                fmt_format(c->nominal_source, sizeof c->nominal_source, "%s (claimed)", preference[p]);
                return;
            }
    fmt_format(c->nominal_source, sizeof c->nominal_source, "none: no CPUID leaf states it");
}

/* --- HPET --- */
struct hpet_job {
    uint64_t base;
    bool ok;
    char why[128];
};

static void hpet_job_run(void *p)
{
    struct hpet_job *j = p;
    maybe_inject_fault("hpet");
    j->ok = hpet_init(&discovered.hpet, j->base, j->why, sizeof j->why);
}

static void discover_hpet(void)
{
    struct counter *c = &counters[COUNTER_HPET];
    const struct acpi_info *a = &discovered.acpi;
    if (!a->hpet_found) {
        set_absent(c, "%s", a->hpet_reason[0] ? a->hpet_reason : a->rsdp_found ? "no HPET table" : "no ACPI tables found");
        return;
    }
    if (a->hpet_base.space_id != ACPI_GAS_MEMORY) {
        set_absent(c, "HPET table gives address space %u, not system memory (0)", a->hpet_base.space_id);
        return;
    }
    if (cmdline_get(&boot_cmdline, "safe")) {
        set_absent(c, "not programmed: safe mode (command line 'safe')");
        return;
    }
    const char *why = "";
    if (!paging_map(a->hpet_base.address, HPET_MMIO_SIZE, true, &why)) {
        set_absent(c, "base 0x%llx from the HPET table cannot be mapped: %s", (unsigned long long)a->hpet_base.address, why);
        return;
    }
    struct hpet_job job = {.base = a->hpet_base.address};
    struct probe_fault fault;
    if (!probe_run(hpet_job_run, &job, &fault)) {
        discovered.hpet.base = 0;
        set_absent(c, "fault probing base 0x%llx: %s", (unsigned long long)a->hpet_base.address, fault.text);
        return;
    }
    if (!job.ok) {
        set_absent(c, "%s", job.why);
        return;
    }
    const struct hpet *h = &discovered.hpet;
    set_present(c, h->counter_64bit ? 64 : 32);
    fmt_format(c->access, sizeof c->access, "MMIO 0x%llx", (unsigned long long)h->base);
    c->nominal_millihz = 1000000000000000000ull / h->period_fs;
    c->nominal_from = "device";
    fmt_format(c->nominal_source, sizeof c->nominal_source, "HPET capabilities: period %u fs", h->period_fs);
    /* the device states its own period; the VMM's constant is named beside
       it where the two agree (QEMU's HPET_CLK_PERIOD) */
    const struct vmm_rate *v = vmm_rate_of(machine_vmm(), VDEV_HPET, 0);
    if (v && v->millihz == c->nominal_millihz)
        c->nominal_vmm[0] = v;
}

/* --- ACPI PM timer --- */
struct pm_job {
    bool io;
    uint64_t address;
    bool width32;
    bool ok;
    char why[128];
};

static void pm_job_run(void *p)
{
    struct pm_job *j = p;
    maybe_inject_fault("pm");
    j->ok = pmtimer_init(&discovered.pm, j->io, j->address, j->width32, j->why, sizeof j->why);
    /* The broken-latch check (Linux acpi_pm.c): count triple reads that disagree. */
    for (int i = 0; j->ok && i < PM_VERIFY_READS; i++)
        (void)pmtimer_read_verified(&discovered.pm);
}

static void discover_pm(void)
{
    struct counter *c = &counters[COUNTER_ACPI_PM];
    const struct acpi_info *a = &discovered.acpi;
    if (!a->pm_timer_found) {
        set_absent(c, "%s", a->pm_timer_reason[0] ? a->pm_timer_reason : a->rsdp_found ? "no PM timer in the FADT" : "no ACPI tables found");
        return;
    }
    struct pm_job job = {.io = a->pm_timer.space_id == ACPI_GAS_IO, .address = a->pm_timer.address, .width32 = a->pm_timer_32bit};
    const char *why = "";
    if (!job.io && !paging_map(job.address, 4, true, &why)) {
        set_absent(c, "address 0x%llx from the FADT cannot be mapped: %s", (unsigned long long)job.address, why);
        return;
    }
    struct probe_fault fault;
    if (!probe_run(pm_job_run, &job, &fault)) {
        set_absent(c, "fault probing %s 0x%llx: %s", job.io ? "port" : "address", (unsigned long long)job.address, fault.text);
        return;
    }
    if (!job.ok) {
        set_absent(c, "%s", job.why);
        return;
    }
    set_present(c, discovered.pm.width);
    fmt_format(c->access, sizeof c->access, "%s 0x%llx (FADT %s)", job.io ? "I/O port" : "MMIO", (unsigned long long)job.address,
               a->pm_timer_field);
    if (!nominal_by_vmm(c, VDEV_PM_TIMER)) {
        c->nominal_millihz = (uint64_t)PMTIMER_HZ * 1000;
        c->nominal_from = "spec";
        fmt_format(c->nominal_source, sizeof c->nominal_source, "ACPI 6.5, 4.8.3.3 (nominal)");
    }
    /* it answered: measured, but where the OS ignores it on a hardware-reduced
       machine it is never the default reference (lib/acpi.c, choose_pm_timer) */
    c->set_aside = a->pm_timer_set_aside;
    fmt_format(c->note, sizeof c->note, "%s", a->pm_timer_os_note ? a->pm_timer_os_note : "");
}

/* --- PIT --- */
static void discover_pit(void)
{
    struct counter *c = &counters[COUNTER_PIT];
    if (cmdline_get(&boot_cmdline, "safe")) {
        set_absent(c, "not programmed: safe mode (command line 'safe')");
        return;
    }
    const char *ruled_out = machine_pit_ruled_out();
    if (ruled_out) {
        set_absent(c, "%s", ruled_out);
        return;
    }
    char why[128];
    if (!pit_init(why, sizeof why)) {
        set_absent(c, "%s", why);
        return;
    }
    set_present(c, 16);
    fmt_format(c->access, sizeof c->access, "I/O ports 0x42/0x43, gate 0x61");
    /* under a VMM the PIT counts the VMM's constant, not the crystal's
       figure: KVM's 1,193,181 Hz is 0.56 ppm below it (issue 37) */
    if (!nominal_by_vmm(c, VDEV_PIT)) {
        c->nominal_millihz = PIT_MILLIHZ;
        c->nominal_from = "crystal";
        fmt_format(c->nominal_source, sizeof c->nominal_source, "14.31818 MHz / 12 (nominal)");
    }
}

/* --- local APIC timer, as a counter --- */
#define LAPIC_MOVE_SPINS 100000
#define LAPIC_ESTIMATE_SPINS 2000000

static void lapic_free_run_job(void *unused)
{
    (void)unused;
    lapic_timer_free_run(&smp.lapic);
}

/* Its rate when nothing states it: counted against the best reference for
   about 10 ms of that reference, in millihertz; 0 when there is none. */
static uint64_t lapic_startup_estimate(const char **against)
{
    int order[COUNTER_COUNT];
    if (!counters_by_rank(order))
        return 0;
    int ref = order[0];
    struct read_src rs, ls;
    if (!counter_source(ref, &rs) || !counter_source(COUNTER_LAPIC, &ls))
        return 0;
    uint64_t want = counters[ref].nominal_millihz / 100000; /* 10 ms of reference ticks */
    uint64_t r0 = read_value(rs.kind, &rs), l0 = read_value(ls.kind, &ls), r1 = r0, l1 = l0;
    for (uint32_t i = 0; i < LAPIC_ESTIMATE_SPINS && counter_delta(&counters[ref], r0, r1) < want; i++) {
        r1 = read_value(rs.kind, &rs);
        l1 = read_value(ls.kind, &ls);
    }
    uint64_t dr = counter_delta(&counters[ref], r0, r1), dl = counter_delta(&counters[COUNTER_LAPIC], l0, l1);
    if (dr < want)
        return 0;
    *against = counters[ref].name;
    return (uint64_t)xf_to_fixed(xf_div(xf_mul(xf_from_u64(dl), xf_from_u64(counters[ref].nominal_millihz)), xf_from_u64(dr)), 0);
}

static void discover_lapic(const struct cpu_info *ci)
{
    struct counter *c = &counters[COUNTER_LAPIC];
    if (!smp_bsp_apic()) {
        set_absent(c, "%s", smp.why[0] ? smp.why : "the local APIC is not usable");
        return;
    }
    struct probe_fault fault;
    if (!probe_run(lapic_free_run_job, 0, &fault)) {
        set_absent(c, "programming the APIC timer faulted: %s", fault.text);
        return;
    }
    set_present(c, 32);
    struct read_src s;
    counter_source(COUNTER_LAPIC, &s);
    uint64_t a = read_value(s.kind, &s), b = a;
    for (uint32_t i = 0; i < LAPIC_MOVE_SPINS && b == a; i++)
        b = read_value(s.kind, &s);
    if (b == a) {
        set_absent(c, "the APIC timer's current count does not move (%u reads)", LAPIC_MOVE_SPINS);
        return;
    }
    fmt_format(c->access, sizeof c->access, smp.lapic.x2apic ? "x2APIC MSR 0x839 (current count)" : "MMIO 0x%llx (current count)",
               (unsigned long long)(smp.lapic.base + LAPIC_TIMER_CURRENT));
    /* SDM vol. 3A, 11.5.4: with CPUID leaf 0x15 enumerated, the timer runs
       at the core crystal clock; a hypervisor's timing leaf 0x40000010
       states its APIC bus rate in EBX */
    for (int i = 0; i < ci->claim_count; i++)
        if ((!strcmp(ci->claims[i].what, "crystal") && !strcmp(ci->claims[i].source, "cpuid.15h")) ||
            (!strcmp(ci->claims[i].what, "bus") && !strcmp(ci->claims[i].source, "cpuid.40000010h"))) {
            c->nominal_millihz = ci->claims[i].hz * 1000;
            c->nominal_from = "claimed";
            fmt_format(c->nominal_source, sizeof c->nominal_source, "%s %s (claimed)", ci->claims[i].source, ci->claims[i].what);
            return;
        }
    /* no claim: the VMM's APIC counts ns (1 GHz at divide by 1) */
    if (nominal_by_vmm(c, VDEV_APIC_TIMER))
        return;
    const char *against = "";
    c->nominal_millihz = lapic_startup_estimate(&against);
    c->nominal_estimated = true;
    c->nominal_from = "estimate";
    if (c->nominal_millihz)
        fmt_format(c->nominal_source, sizeof c->nominal_source, "not stated: 10 ms against %s at start-up", against);
    else
        fmt_format(c->nominal_source, sizeof c->nominal_source, "not stated");
}

/* --- paravirtual clocks --- */
#define PV_SETTLE_SPINS 1000000
#define HV_BETWEEN_CHECKS 256

volatile struct pvclock_vcpu_time_info kvmclock_page __attribute__((aligned(64)));
static uint8_t hv_page_storage[4096] __attribute__((aligned(4096)));
volatile struct hv_tsc_page *const hv_page = (volatile struct hv_tsc_page *)hv_page_storage;

static bool signature_is(uint32_t leaf, const char *want)
{
    struct cpuid_regs r = cpuid(leaf, 0);
    uint32_t regs[3] = {r.ebx, r.ecx, r.edx};
    for (int i = 0; i < 12; i++)
        if ((char)(regs[i / 4] >> (8 * (i % 4))) != want[i])
            return false;
    return true;
}

static void discover_kvmclock(const struct cpu_info *ci)
{
    struct counter *c = &counters[COUNTER_KVMCLOCK];
    struct pvclocks *pv = &discovered.pv;
    if (!ci->hypervisor) {
        set_absent(c, "no hypervisor (CPUID.1:ECX[31] clear): no paravirtual clock");
        return;
    }
    if (ci->max_hv_leaf >= KVM_CPUID_SIGNATURE_LOW + KVM_CPUID_FEATURES && signature_is(KVM_CPUID_SIGNATURE_LOW, "KVMKVMKVM\0\0\0"))
        pv->kvm_base = KVM_CPUID_SIGNATURE_LOW;
    else if (signature_is(KVM_CPUID_SIGNATURE_HIGH, "KVMKVMKVM\0\0\0"))
        pv->kvm_base = KVM_CPUID_SIGNATURE_HIGH;
    else {
        set_absent(c, "the hypervisor (\"%s\") is not KVM: no kvmclock", ci->hv_vendor);
        return;
    }
    pv->kvm_features = cpuid(pv->kvm_base + KVM_CPUID_FEATURES, 0).eax;
    if (!(pv->kvm_features & KVM_FEATURE_CLOCKSOURCE2)) {
        set_absent(c, "KVM does not offer kvmclock (CPUID 0x%x EAX bit 3 clear)", pv->kvm_base + KVM_CPUID_FEATURES);
        return;
    }
    pv->stable_bit_meaningful = pv->kvm_features & KVM_FEATURE_CLOCKSOURCE_STABLE_BIT;
    struct probe_fault fault;
    uint64_t gpa = (uint64_t)(uintptr_t)&kvmclock_page; /* identity-mapped: virtual = physical */
    if (!msr_write_safe(MSR_KVM_SYSTEM_TIME_NEW, gpa | KVM_SYSTEM_TIME_ENABLE, &fault)) {
        set_absent(c, "registering the page (MSR 0x%x) faulted: %s", MSR_KVM_SYSTEM_TIME_NEW, fault.text);
        return;
    }
    pv->kvmclock_on = true;
    /* the version must settle: even and not 0, and the same on both sides of a read */
    uint32_t i;
    for (i = 0; i < PV_SETTLE_SPINS; i++) {
        uint32_t v = kvmclock_page.version;
        if (v && !(v & 1) && kvmclock_page.version == v)
            break;
        pv->version_retries++;
        cpu_relax();
    }
    if (i == PV_SETTLE_SPINS) {
        set_absent(c, "the pvclock page never settled (version 0x%x after %u reads)", kvmclock_page.version, PV_SETTLE_SPINS);
        return;
    }
    pv->mul = kvmclock_page.tsc_to_system_mul;
    pv->shift = kvmclock_page.tsc_shift;
    pv->stable_bit = kvmclock_page.flags & PVCLOCK_TSC_STABLE_BIT;
    uint64_t a = kvmclock_read(&kvmclock_page), b = a;
    for (i = 0; i < PV_SETTLE_SPINS && b == a; i++)
        b = kvmclock_read(&kvmclock_page);
    if (b == a) {
        set_absent(c, "kvmclock does not move (%u reads)", PV_SETTLE_SPINS);
        return;
    }
    set_present(c, 64);
    fmt_format(c->access, sizeof c->access, "pvclock page 0x%llx, MSR 0x%x", (unsigned long long)gpa, MSR_KVM_SYSTEM_TIME_NEW);
    c->nominal_millihz = 1000000000000ull; /* ns */
    c->nominal_from = "spec";
    fmt_format(c->nominal_source, sizeof c->nominal_source, "ns by definition (nominal)");
}

static void discover_hyperv(const struct cpu_info *ci)
{
    struct counter *m = &counters[COUNTER_HV_REF_COUNTER], *p = &counters[COUNTER_HV_REF_PAGE];
    struct pvclocks *pv = &discovered.pv;
    pv->hyperv = ci->hypervisor && ci->max_hv_leaf >= HV_CPUID_FEATURES && signature_is(HV_CPUID_SIGNATURE, "Microsoft Hv");
    if (!pv->hyperv) {
        const char *why = ci->hypervisor ? "the hypervisor offers no Hyper-V interface (CPUID 0x40000000 is not \"Microsoft Hv\")"
                                         : "no hypervisor (CPUID.1:ECX[31] clear)";
        set_absent(m, "%s", why);
        set_absent(p, "%s", why);
        return;
    }
    pv->hv_features = cpuid(HV_CPUID_FEATURES, 0).eax;
    struct probe_fault fault;
    uint64_t v = 0;
    if (pv->hv_features & HV_ACCESS_FREQUENCY_MSRS) {
        if (msr_read_safe(HV_X64_MSR_TSC_FREQUENCY, &v, &fault))
            pv->hv_tsc_hz = v;
        if (msr_read_safe(HV_X64_MSR_APIC_FREQUENCY, &v, &fault))
            pv->hv_apic_hz = v;
    }
    if (!(pv->hv_features & HV_MSR_TIME_REF_COUNT_AVAILABLE))
        set_absent(m, "not offered (CPUID 0x40000003 EAX bit 1 clear; QEMU: hv-time)");
    else if (!msr_read_safe(HV_X64_MSR_TIME_REF_COUNT, &v, &fault))
        set_absent(m, "reading MSR 0x%x faulted: %s", HV_X64_MSR_TIME_REF_COUNT, fault.text);
    else {
        set_present(m, 64);
        fmt_format(m->access, sizeof m->access, "MSR 0x%x", HV_X64_MSR_TIME_REF_COUNT);
        m->nominal_millihz = 10000000000ull; /* 100 ns units */
        m->nominal_from = "spec";
        fmt_format(m->nominal_source, sizeof m->nominal_source, "100 ns units, Hyper-V TLFS 12.4 (nominal)");
    }
    if (!(pv->hv_features & HV_MSR_REFERENCE_TSC_AVAILABLE)) {
        set_absent(p, "not offered (CPUID 0x40000003 EAX bit 9 clear; QEMU: hv-time)");
        return;
    }
    uint64_t gpa = (uint64_t)(uintptr_t)hv_page_storage;
    if (!msr_write_safe(HV_X64_MSR_REFERENCE_TSC, gpa | HV_REFERENCE_TSC_ENABLE, &fault)) {
        set_absent(p, "enabling the page (MSR 0x%x) faulted: %s", HV_X64_MSR_REFERENCE_TSC, fault.text);
        return;
    }
    pv->hv_page_on = true;
    uint32_t i;
    for (i = 0; i < PV_SETTLE_SPINS && !hv_page->tsc_sequence; i++)
        cpu_relax();
    pv->hv_page_valid = hv_page->tsc_sequence != 0;
    if (!pv->hv_page_valid) {
        set_absent(p, "its sequence stays 0: the hypervisor says the page is not valid (the MSR is the fallback)");
        return;
    }
    set_present(p, 64);
    fmt_format(p->access, sizeof p->access, "reference TSC page 0x%llx", (unsigned long long)gpa);
    p->nominal_millihz = 10000000000ull;
    p->nominal_from = "spec";
    fmt_format(p->nominal_source, sizeof p->nominal_source, "100 ns units, Hyper-V TLFS 12.7 (nominal)");
    /* every MSR reading must lie between two page readings taken around it */
    if (m->present)
        for (i = 0; i < HV_BETWEEN_CHECKS; i++) {
            uint64_t before = hv_page_read(hv_page), msr = rdmsr(HV_X64_MSR_TIME_REF_COUNT), after = hv_page_read(hv_page);
            pv->hv_between_checked++;
            pv->hv_between_outside += msr < before || msr > after;
        }
}

void discover_release(void)
{
    struct probe_fault fault;
    if (discovered.pv.kvmclock_on && msr_write_safe(MSR_KVM_SYSTEM_TIME_NEW, 0, &fault))
        discovered.pv.kvmclock_on = false;
    if (discovered.pv.hv_page_on && msr_write_safe(HV_X64_MSR_REFERENCE_TSC, 0, &fault))
        discovered.pv.hv_page_on = false;
}

void discover_all(const struct boot_info *bi, const struct cpu_probe *cpu)
{
    struct acpi_job job = {bi};
    struct probe_fault fault;
    if (!probe_run(acpi_job_run, &job, &fault)) {
        discovered.acpi_faulted = true;
        fmt_format(discovered.acpi_fault, sizeof discovered.acpi_fault, "%s", fault.text);
        /* keep what was parsed before the fault, but trust no half-read counter */
        discovered.acpi.hpet_found = discovered.acpi.pm_timer_found = false;
        fmt_format(discovered.acpi.hpet_reason, sizeof discovered.acpi.hpet_reason, "fault reading the ACPI tables: %s", fault.text);
        fmt_format(discovered.acpi.pm_timer_reason, sizeof discovered.acpi.pm_timer_reason, "fault reading the ACPI tables: %s", fault.text);
    }
    smp_use(bi, &discovered.acpi);
    run_finish_use(&discovered.acpi);
    if (!machine_vga_ruled_out())
        console_hide_cursor();
    discover_rtc();
    tsc_variants_probe(&cpu->info, &discovered.lfence);
    discover_tsc(&cpu->info);
    discover_hpet();
    discover_pm();
    discover_pit();
    discover_lapic(&cpu->info);
    discover_kvmclock(&cpu->info);
    discover_hyperv(&cpu->info);
}

/* Where each counter is read, from what discovery found (see discover.h). */
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

/* Discovery (see discover.h). Every device access that trusts a firmware
   claim runs inside probe_run(), so a fault there makes that counter
   absent, with the fault as the reason, instead of ending the run. */
#include "discover.h"

#include <stdarg.h>

#include "../drivers/pit.h"
#include "cmdline.h"
#include "counters.h"
#include "format.h"
#include "paging.h"
#include "probe.h"
#include "string.h"

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
                  &discovered.acpi);
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
    fmt_format(c->nominal_source, sizeof c->nominal_source, "HPET capabilities: period %u fs", h->period_fs);
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
    c->nominal_millihz = (uint64_t)PMTIMER_HZ * 1000;
    fmt_format(c->nominal_source, sizeof c->nominal_source, "ACPI 6.5, 4.8.3.3 (nominal)");
}

/* --- PIT --- */
static void discover_pit(void)
{
    struct counter *c = &counters[COUNTER_PIT];
    if (cmdline_get(&boot_cmdline, "safe")) {
        set_absent(c, "not programmed: safe mode (command line 'safe')");
        return;
    }
    char why[128];
    if (!pit_init(why, sizeof why)) {
        set_absent(c, "%s", why);
        return;
    }
    set_present(c, 16);
    fmt_format(c->access, sizeof c->access, "I/O ports 0x42/0x43, gate 0x61");
    c->nominal_millihz = PIT_MILLIHZ;
    fmt_format(c->nominal_source, sizeof c->nominal_source, "14.31818 MHz / 12 (nominal)");
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
    tsc_variants_probe(&cpu->info, &discovered.lfence);
    discover_tsc(&cpu->info);
    discover_hpet();
    discover_pm();
    discover_pit();
}

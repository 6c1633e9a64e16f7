/* Experiment "timers", set-up: each timer's rate and interrupt route (Intel SDM vol. 3A 11.5.4; IA-PC HPET 1.0a 2.3.8-2.3.9; 8254). */
#include "exp_timers_setup.h"

#include "../drivers/cpu.h"
#include "../drivers/hpet.h"
#include "../drivers/ioapic.h"
#include "../drivers/lapic.h"
#include "../drivers/pit.h"
#include "../kernel/discover.h"
#include "../kernel/interrupts.h"
#include "../kernel/paging.h"
#include "../kernel/probe.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
#include "../lib/counters.h"
#include "../lib/deadline_errata.h"
#include "../lib/format.h"
#include "../lib/string.h"
#include "../lib/timer_analysis.h"
#include "../lib/unwrap.h"
#include "exp_timers_state.h"

#define PIT_IRQ 0
#define PIT_PROBE_COUNT 1193    /* about 1 ms of the PIT's 1.193182 MHz */
#define PIT_PROBE_WAIT_MS 20    /* of the loop's own time: time away does not count */
#define PIT_PROBE_MOST_MS 2000  /* and 2 s by the TSC in all, whatever the loop sees */
#define PIT_FALLBACK_GSI 2      /* where boards without an IRQ 0 override wire it anyway */
#define HPET_TN_INT_ROUTE_SHIFT 9
#define HPET_TN_INT_ROUTE_MASK 0x1Full
#define HPET_TN_FSB_EN (1ull << 14)
#define HPET_TN_FSB_CAP (1ull << 15)
#define HPET_TN_ROUTE_CAP_SHIFT 32
#define HPET_FSB_ROUTE(n) (0x110 + 0x20 * (n))
#define MSI_ADDRESS_BASE 0xFEE00000ull /* SDM vol. 3A, 11.11.1 */
#define   MSI_DEST_SHIFT 12
#define CPUID1_ECX_MONITOR (1u << 3)
#define RATE_TOL_ESTIMATED_PPM 300000 /* as kernel/results.c allows an unchecked TSC estimate */

/* I/O APIC state: found through the MADT */
static struct ioapic ioapics[ACPI_MAX_IOAPICS];
static uint32_t ioapic_pins[ACPI_MAX_IOAPICS];
static int hpet_ioapic = -1, pit_ioapic = -1;
static uint32_t hpet_pin, hpet_gsi, pit_pin;
static bool pit_active_low, pit_level;
static uint64_t hpet_saved_conf, hpet_saved_t0;
static bool hpet_fsb, hpet_legacy;
static uint32_t route_dest = 0;

/* Where ISA IRQ 0 arrives (the PIT's input, and the HPET's in legacy
   replacement): fills pit_ioapic, pit_pin and its trigger. */
static bool have_pit_pin(void)
{
    uint32_t gsi = acpi_isa_irq_gsi(&discovered.acpi, 0, &pit_active_low, &pit_level);
    pit_ioapic = acpi_ioapic_of_gsi(&discovered.acpi, gsi, ioapic_pins, &pit_pin);
    return pit_ioapic >= 0;
}

/* The two readings' brackets over the TSC time, plus one tick of the
   counter over its count (timer_rate_from_readings); the window's gaps and
   the counter's step judged as the drift phase judges them. */
bool timers_rate_against_tsc(int counter, struct xf *ratio, struct xf *u, struct timers_window *w)
{
    struct read_src src;
    if (!counter_source(counter, &src))
        return false;
    struct unwrap_params up;
    unwrap_params_of(counter, &up);
    /* a rate only estimated at start-up (the APIC timer's, 10 ms against a
       reference: "not stated") cannot judge a step to 1 %: judge it only
       for what no rate explains */
    if (!strncmp(counters[counter].nominal_source, "not stated", 10) && up.rate_tol_ppm < RATE_TOL_ESTIMATED_PPM)
        up.rate_tol_ppm = RATE_TOL_ESTIMATED_PPM;
    uint64_t gap = ms_to_tsc(1);
    *w = (struct timers_window){.measured = true};
    bool ok = false;
    for (uint32_t t = 0; t < TIMERS_RATE_TRIES; t++) {
        uint64_t a0, b0, a1, b1;
        uint64_t v0 = read_bracketed(&src, &a0, &b0);
        /* a fixed window: the PIT wraps in 55 ms */
        uint64_t end = b0 + ms_to_tsc(TIMERS_RATE_WINDOW_MS), last = b0;
        for (uint64_t now = rdtsc(); now < end; now = rdtsc()) {
            if (now - last > gap) {
                w->gaps++;
                w->gap_max = now - last > w->gap_max ? now - last : w->gap_max;
            }
            last = now;
            cpu_relax();
        }
        uint64_t v1 = read_bracketed(&src, &a1, &b1);
        struct step st;
        unwrap_step(&up, v0, a0, b0, v1, a1, b1, &st);
        w->tries = t + 1;
        w->last_kind = (int)st.kind;
        ok = timer_rate_from_readings(v0, a0, b0, v1, a1, b1, counters[counter].mask, ratio, u);
        /* a gap in which the counter ran on with the TSC (a stop of the
           whole machine) bends no rate; one in which it stood still, or
           jumped, or that was too long to unwrap, does: measure again */
        if (st.kind == STEP_NORMAL)
            break;
        w->disturbed_kind = (int)st.kind;
    }
    return ok;
}

void timers_disarm(int id)
{
    const struct hpet *h = &discovered.hpet;
    switch (id) {
    case TIMER_LAPIC:
        lapic_write(&smp.lapic, LAPIC_TIMER_INITIAL, 0);
        break;
    case TIMER_DEADLINE:
        wrmsr(MSR_TSC_DEADLINE, 0); /* armed only once the safe write in setup_lapic_timers succeeded */
        break;
    case TIMER_HPET: {
        /* half a wrap ahead: 21 s for a 32-bit comparator at 100 MHz */
        uint64_t now = hpet_counter(h);
        hpet_write64(h, HPET_TIMER_COMPARATOR(0), h->t0_64bit ? now + (1ull << 62) : (uint32_t)(now + 0x7FFFFFFFu));
        break;
    }
    case TIMER_PIT:
        /* the control word alone: OUT stays low until a count is written */
        outb(PIT_COMMAND, PIT_SELECT_CH0 | PIT_ACCESS_LOHI | PIT_MODE_TERMINAL);
        break;
    }
}

/* On the pc machine (and PCs like it) the HPET may only reach GSI 2, the
   PIT's input: the pin is then routed to the vector of whichever of the two
   a cell uses, and neither is the other's watchdog. */
bool timers_pin_shared(void)
{
    return hpet_legacy || (hpet_ioapic >= 0 && hpet_ioapic == pit_ioapic && hpet_pin == pit_pin);
}

void timers_route_shared_pin(int id, int wd)
{
    if (!timers_pin_shared())
        return;
    int user = (id == TIMER_HPET || id == TIMER_PIT) ? id : wd;
    const struct hpet *h = &discovered.hpet;
    if (hpet_legacy && (user == TIMER_HPET || user == TIMER_PIT)) {
        uint64_t conf = hpet_read64(h, HPET_GEN_CONF);
        hpet_write64(h, HPET_GEN_CONF, user == TIMER_HPET ? conf | HPET_CONF_LEGACY : conf & ~HPET_CONF_LEGACY);
    }
    if (user == TIMER_HPET)
        ioapic_route(&ioapics[hpet_ioapic], hpet_pin, VEC_TIMER_HPET, route_dest, hpet_legacy && pit_level,
                     hpet_legacy && pit_active_low, false);
    else if (user == TIMER_PIT)
        ioapic_route(&ioapics[pit_ioapic], pit_pin, VEC_TIMER_PIT, route_dest, pit_level, pit_active_low, false);
}

void timers_route_to(uint32_t dest)
{
    route_dest = dest; /* a shared pin is routed per cell (timers_route_shared_pin) */
    const struct hpet *h = &discovered.hpet;
    if (timers_state.timer[TIMER_HPET].usable) {
        if (hpet_fsb)
            hpet_write64(h, HPET_FSB_ROUTE(0), (MSI_ADDRESS_BASE | (uint64_t)dest << MSI_DEST_SHIFT) << 32 | VEC_TIMER_HPET);
        else if (hpet_ioapic >= 0)
            ioapic_route(&ioapics[hpet_ioapic], hpet_pin, VEC_TIMER_HPET, dest, false, false, false);
    }
    if (timers_state.timer[TIMER_PIT].usable && pit_ioapic >= 0)
        ioapic_route(&ioapics[pit_ioapic], pit_pin, VEC_TIMER_PIT, dest, pit_level, pit_active_low, false);
}

/* --- each timer --- */

static bool setup_ioapics(const char **why)
{
    const struct acpi_info *a = &discovered.acpi;
    if (!a->ioapic_count) {
        *why = a->madt_found ? "the MADT lists no I/O APIC" : "no MADT: no I/O APIC is known";
        return false;
    }
    for (uint32_t i = 0; i < a->ioapic_count; i++) {
        ioapic_pins[i] = 0;
        if (!paging_map(a->ioapics[i].address, IOAPIC_MMIO_SIZE, true, why))
            return false;
        if (!ioapic_init(&ioapics[i], a->ioapics[i].address, a->ioapics[i].gsi_base, why))
            return false;
        ioapic_pins[i] = ioapics[i].pins;
    }
    return true;
}

/* The microcode revision (Intel SDM vol. 4, IA32_BIOS_SIGN_ID: write 0,
   CPUID(1), read bits 63:32) against the fix's; both accesses through the
   safe path: Bochs (ignore_bad_msrs=0) and some hypervisors refuse the
   write with a #GP, which ended the run before (issue 37). */
static void errata_note(const struct deadline_erratum *e, bool deadline)
{
    char *note = timers_state.errata_note;
    size_t size = sizeof timers_state.errata_note;
    uint64_t rev = 0;
    struct probe_fault f;
    char name[48];
    bool ok = msr_write_safe(MSR_BIOS_SIGN_ID, 0, &f);
    if (ok) {
        (void)cpuid(1, 0);
        ok = msr_read_safe(MSR_BIOS_SIGN_ID, &rev, &f);
    }
    if (!ok) {
        fmt_format(note, size, "%s is listed with a TSC-deadline erratum (fixed in microcode 0x%x); the revision could not be read: %s faulted",
                   e->part, e->min_microcode, msr_name(MSR_BIOS_SIGN_ID, name));
        report_note("%s faulted: %s; the microcode revision is not known", name, f.text);
        return;
    }
    uint32_t mc = (uint32_t)(rev >> 32);
    fmt_format(note, size, "%s: microcode 0x%x %s 0x%x, the first with the TSC-deadline fix%s", e->part, mc,
               mc >= e->min_microcode ? ">=" : "<", e->min_microcode,
               !deadline ? " (no TSC-deadline mode offered here)"
               : mc >= e->min_microcode ? "" : ": the timer may misfire (Linux falls back to the one-shot timer)");
}

static void setup_lapic_timers(const struct cpu_info *ci)
{
    struct timer_result *l = &timers_state.timer[TIMER_LAPIC], *d = &timers_state.timer[TIMER_DEADLINE];
    fmt_format(l->route, sizeof l->route, "local APIC LVT timer, vector 0x%x", VEC_TIMER_LAPIC);
    fmt_format(d->route, sizeof d->route, "local APIC LVT timer, vector 0x%x; MSR 0x6E0", VEC_TIMER_LAPIC);
    if (!counters[COUNTER_LAPIC].present) {
        fmt_format(l->why, sizeof l->why, "%s", counters[COUNTER_LAPIC].reason);
        fmt_format(d->why, sizeof d->why, "%s", counters[COUNTER_LAPIC].reason);
        return;
    }
    lapic_timer_free_run(&smp.lapic);
    if (!timers_rate_against_tsc(COUNTER_LAPIC, &l->per_tsc, &l->per_tsc_u, &timers_state.window[TIMER_LAPIC]))
        fmt_format(l->why, sizeof l->why, "its current count did not move against the TSC");
    else
        l->usable = l->rate_known = true;
    /* Linux's errata table: report a listed part with old microcode (read
       whether or not deadline mode is offered here: an emulator of the part
       may hide it) */
    const struct deadline_erratum *e = deadline_erratum_of(ci->family, ci->model, ci->stepping);
    if (e)
        errata_note(e, ci->tsc_deadline);
    if (!ci->tsc_deadline) {
        fmt_format(d->why, sizeof d->why, "CPUID.1:ECX[24] clear: no TSC-deadline mode");
        return;
    }
    /* CPUID's bit is a claim: a hypervisor may still refuse the MSR */
    struct probe_fault f;
    char name[48];
    if (!msr_write_safe(MSR_TSC_DEADLINE, 0, &f)) {
        fmt_format(d->why, sizeof d->why, "writing %s faulted: %s", msr_name(MSR_TSC_DEADLINE, name), f.text);
        return;
    }
    d->usable = true;
    d->per_tsc = xf_from_u64(1);
    d->per_tsc_u = xf_from_u64(0);
    d->rate_known = true;
}

static void hpet_job(void *unused)
{
    (void)unused;
    struct timer_result *t = &timers_state.timer[TIMER_HPET];
    const struct hpet *h = &discovered.hpet;
    hpet_saved_conf = hpet_read64(h, HPET_GEN_CONF);
    hpet_saved_t0 = hpet_read64(h, HPET_TIMER_CONF(0));
    uint64_t caps = hpet_saved_t0 >> HPET_TN_ROUTE_CAP_SHIFT;
    timers_state.hpet_route_caps = caps;
    /* GSI 2 is not used directly: QEMU under KVM does not route it to the
       I/O APIC at all (ISA IRQ 2 is the cascade), so the PIT's input is
       reached the way firmware and Linux reach it, by legacy replacement
       (below) */
    hpet_legacy = false;
    hpet_ioapic = timer_hpet_gsi((uint32_t)caps, &discovered.acpi, ioapic_pins, &hpet_gsi, &hpet_pin);
    uint64_t conf = hpet_saved_t0 & ~(HPET_TN_INT_TYPE_LEVEL | HPET_TN_TYPE_PERIODIC | HPET_TN_INT_ENB | HPET_TN_FSB_EN |
                                      (HPET_TN_INT_ROUTE_MASK << HPET_TN_INT_ROUTE_SHIFT) | HPET_TN_32MODE);
    if (!h->t0_64bit)
        conf |= HPET_TN_32MODE;
    if (hpet_ioapic >= 0) {
        conf |= (uint64_t)hpet_gsi << HPET_TN_INT_ROUTE_SHIFT;
        fmt_format(t->route, sizeof t->route, "I/O APIC %d pin %u (GSI %u), vector 0x%x, edge", hpet_ioapic, hpet_pin, hpet_gsi,
                   VEC_TIMER_HPET);
    } else if (hpet_saved_t0 & HPET_TN_FSB_CAP) {
        hpet_fsb = true;
        hpet_write64(h, HPET_FSB_ROUTE(0), (MSI_ADDRESS_BASE | (uint64_t)smp.bsp_apic_id << MSI_DEST_SHIFT) << 32 | VEC_TIMER_HPET);
        conf |= HPET_TN_FSB_EN;
        fmt_format(t->route, sizeof t->route, "FSB (MSI) to APIC %u, vector 0x%x", smp.bsp_apic_id, VEC_TIMER_HPET);
    } else if (h->legacy_capable && have_pit_pin()) {
        /* legacy replacement (HPET 1.0a, 2.3.9.1): comparator 0 takes IRQ 0
           from the PIT; set for the HPET's cells only, cleared for the PIT's */
        hpet_legacy = true;
        hpet_ioapic = pit_ioapic;
        hpet_pin = pit_pin;
        fmt_format(t->route, sizeof t->route, "legacy replacement: IRQ 0 (I/O APIC %d pin %u), vector 0x%x, edge; shared with the PIT",
                   pit_ioapic, pit_pin, VEC_TIMER_HPET);
    } else {
        fmt_format(t->why, sizeof t->why,
                   "comparator 0 offers no usable I/O APIC input (route capability 0x%llx; GSI 0 is the 8259's) and no FSB delivery",
                   (unsigned long long)caps);
        return;
    }
    /* legacy replacement would take comparator 0 to IRQ 0 (set per cell when that is the route) */
    hpet_write64(h, HPET_GEN_CONF, (hpet_saved_conf & ~HPET_CONF_LEGACY) | HPET_CONF_ENABLE);
    hpet_write64(h, HPET_TIMER_CONF(0), conf);
    timers_disarm(TIMER_HPET);
    hpet_write64(h, HPET_TIMER_CONF(0), conf | HPET_TN_INT_ENB);
    if (hpet_ioapic >= 0 && !hpet_legacy)
        ioapic_route(&ioapics[hpet_ioapic], hpet_pin, VEC_TIMER_HPET, smp.bsp_apic_id, false, false, false);
    t->usable = true;
}

static void hpet_restore(void)
{
    const struct hpet *h = &discovered.hpet;
    hpet_write64(h, HPET_TIMER_CONF(0), hpet_saved_t0 & ~HPET_TN_INT_ENB);
    hpet_write64(h, HPET_GEN_CONF, hpet_saved_conf | HPET_CONF_ENABLE);
    if (hpet_ioapic >= 0)
        ioapic_mask(&ioapics[hpet_ioapic], hpet_pin);
}

static void setup_hpet(void)
{
    struct timer_result *h = &timers_state.timer[TIMER_HPET];
    if (!counters[COUNTER_HPET].present)
        fmt_format(h->why, sizeof h->why, "%s", counters[COUNTER_HPET].reason);
    else if (!probe_run(hpet_job, 0, &timers_state.fault)) {
        fmt_format(h->why, sizeof h->why, "programming comparator 0 faulted: %s", timers_state.fault.text);
        h->usable = false;
    }
    if (h->usable) {
        if (!timers_rate_against_tsc(COUNTER_HPET, &h->per_tsc, &h->per_tsc_u, &timers_state.window[TIMER_HPET])) {
            h->usable = false;
            fmt_format(h->why, sizeof h->why, "its counter did not move against the TSC");
            hpet_restore();
        }
    }
}

/* Whether channel 0 reaches VEC_TIMER_PIT through the route just set: one
   count of about 1 ms, waited for up to PIT_PROBE_WAIT_MS of this loop's
   own time (a stop of the machine meanwhile does not count). */
static bool pit_reaches_vector(void)
{
    irq_expect(VEC_TIMER_PIT, true);
    uint64_t before = irq.count[VEC_TIMER_PIT], bound = ms_to_tsc(PIT_PROBE_WAIT_MS), gap = ms_to_tsc(1);
    outb(PIT_COMMAND, PIT_SELECT_CH0 | PIT_ACCESS_LOHI | PIT_MODE_TERMINAL);
    outb(PIT_CH0_DATA, (uint8_t)PIT_PROBE_COUNT);
    outb(PIT_CH0_DATA, (uint8_t)(PIT_PROBE_COUNT >> 8));
    irq_enable();
    uint64_t first = rdtsc(), most = ms_to_tsc(PIT_PROBE_MOST_MS);
    for (uint64_t last = first, waited = 0; irq.count[VEC_TIMER_PIT] == before && waited < bound && last - first < most;) {
        uint64_t now = rdtsc();
        waited += now - last < gap ? now - last : 0;
        last = now;
        cpu_relax();
    }
    irq_disable();
    timers_disarm(TIMER_PIT);
    return irq.count[VEC_TIMER_PIT] != before;
}

static void setup_pit(bool have_ioapic, const char *ioapic_why)
{
    struct timer_result *t = &timers_state.timer[TIMER_PIT];
    if (!counters[COUNTER_PIT].present) {
        fmt_format(t->why, sizeof t->why, "%s", counters[COUNTER_PIT].reason);
        return;
    }
    if (!have_ioapic) {
        fmt_format(t->why, sizeof t->why, "IRQ 0 needs an I/O APIC: %s", ioapic_why);
        return;
    }
    bool low, level;
    uint32_t gsi = acpi_isa_irq_gsi(&discovered.acpi, PIT_IRQ, &low, &level);
    if (!have_pit_pin()) {
        fmt_format(t->why, sizeof t->why, "IRQ 0 arrives at GSI %u, which no I/O APIC serves", gsi);
        return;
    }
    /* Firmware leaves channel 0 periodic (18.2 Hz); a control word alone
       does not stop every emulation of it (KVM's keeps its timer until a
       count is loaded), so load a count of 2, with the pin still masked,
       and let it run out before the pin is opened */
    outb(PIT_COMMAND, PIT_SELECT_CH0 | PIT_ACCESS_LOHI | PIT_MODE_TERMINAL);
    outb(PIT_CH0_DATA, 2);
    outb(PIT_CH0_DATA, 0);
    for (uint64_t end = rdtsc() + ms_to_tsc(1); rdtsc() < end;)
        cpu_relax();
    timers_disarm(TIMER_PIT);
    ioapic_route(&ioapics[pit_ioapic], pit_pin, VEC_TIMER_PIT, smp.bsp_apic_id, pit_level, pit_active_low, false);
    const char *moved = "";
    if (!pit_reaches_vector()) {
        /* An IRQ 0 with no override in the MADT is GSI 0 by the ACPI
           specification (5.2.12.5), yet QEMU's microvm, for one, wires the
           PIT to I/O APIC input 2 as a PC does and states no override: try
           GSI 2 before giving up, as Linux's check_timer() does */
        int first_ioapic = pit_ioapic;
        uint32_t first_pin = pit_pin, pin2;
        int ioapic2 = gsi == PIT_IRQ ? acpi_ioapic_of_gsi(&discovered.acpi, PIT_FALLBACK_GSI, ioapic_pins, &pin2) : -1;
        ioapic_mask(&ioapics[first_ioapic], first_pin);
        bool found = false;
        if (ioapic2 >= 0) {
            pit_ioapic = ioapic2;
            pit_pin = pin2;
            pit_level = pit_active_low = false; /* ISA: edge, active high */
            ioapic_route(&ioapics[pit_ioapic], pit_pin, VEC_TIMER_PIT, smp.bsp_apic_id, false, false, false);
            found = pit_reaches_vector();
            if (!found)
                ioapic_mask(&ioapics[pit_ioapic], pit_pin);
        }
        if (!found) {
            pit_ioapic = -1;
            fmt_format(t->why, sizeof t->why, "IRQ 0 never came in a %u ms probe at GSI %u%s", PIT_PROBE_WAIT_MS, gsi,
                       ioapic2 >= 0 ? " nor at GSI 2" : "");
            return;
        }
        gsi = PIT_FALLBACK_GSI;
        if (hpet_legacy) { /* legacy replacement drives the PIT's wire */
            hpet_ioapic = pit_ioapic;
            hpet_pin = pit_pin;
            fmt_format(timers_state.timer[TIMER_HPET].route, sizeof timers_state.timer[TIMER_HPET].route,
                       "legacy replacement: IRQ 0 (I/O APIC %d pin %u, GSI 2: none came at the MADT's GSI 0), vector 0x%x, "
                       "edge; shared with the PIT", pit_ioapic, pit_pin, VEC_TIMER_HPET);
        }
        moved = "; the MADT says GSI 0 (no override), where it never came";
    }
    fmt_format(t->route, sizeof t->route, "IRQ 0 -> GSI %u (I/O APIC %d pin %u), vector 0x%x, %s%s", gsi, pit_ioapic, pit_pin,
               VEC_TIMER_PIT, pit_level ? "level" : "edge", moved);
    /* the counter is channel 2: the same input clock as channel 0 */
    if (timers_rate_against_tsc(COUNTER_PIT, &t->per_tsc, &t->per_tsc_u, &timers_state.window[TIMER_PIT]))
        t->usable = t->rate_known = true;
    else
        fmt_format(t->why, sizeof t->why, "its counter did not move against the TSC");
}

static void setup_waits(const struct cpu_info *ci)
{
    const struct cpuid_leaf *l1 = &boot_cpu.leaves[CPUID_IDX_1];
    bool monitor = l1->valid && (l1->ecx & CPUID1_ECX_MONITOR);
    uint32_t leaf5_edx = monitor && ci->max_leaf >= 5 ? cpuid(5, 0).edx : 0;
    timers_state.wait_count = timer_waits_build(monitor, ci->max_leaf, leaf5_edx, timers_state.wait, timers_state.mwait_note,
                                                sizeof timers_state.mwait_note);
}

void timers_setup(const struct cpu_info *ci)
{
    hpet_ioapic = pit_ioapic = -1;
    hpet_fsb = false;
    route_dest = smp.bsp_apic_id;
    setup_waits(ci);
    setup_lapic_timers(ci);
    const char *io_why = "";
    bool have_ioapic = setup_ioapics(&io_why);
    if (!have_ioapic)
        for (uint32_t i = 0; i < ACPI_MAX_IOAPICS; i++)
            ioapic_pins[i] = 0;
    setup_hpet();
    setup_pit(have_ioapic, io_why);
    if (timers_pin_shared() && !hpet_legacy) {
        char *route = timers_state.timer[TIMER_HPET].route;
        unsigned used = (unsigned)strlen(route);
        fmt_format(route + used, sizeof timers_state.timer[TIMER_HPET].route - used, "; shared with the PIT");
    }
    int order[COUNTER_COUNT];
    timers_state.ref_counter = -1;
    if (counters_by_rank(order)) {
        if (timers_rate_against_tsc(order[0], &timers_state.ref_per_tsc, &timers_state.ref_per_tsc_u, &timers_state.ref_window))
            timers_state.ref_counter = order[0];
    }
}

void timers_stop(void)
{
    for (int id = 0; id < TIMER_COUNT; id++)
        if (timers_state.timer[id].usable)
            timers_disarm(id);
    if (counters[COUNTER_LAPIC].present)
        lapic_timer_free_run(&smp.lapic);
    if (pit_ioapic >= 0)
        ioapic_mask(&ioapics[pit_ioapic], pit_pin);
    if (timers_state.timer[TIMER_HPET].usable)
        hpet_restore();
}

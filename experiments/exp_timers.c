/* Experiment "timers": when I ask for an event at TSC time T, when does my
   code run? Each timer is armed for T (its own ticks converted with the
   rate measured here against the TSC, rounded so that a rate error cannot
   make it fire early), and the TSC is read by the first instructions of
   the interrupt stub (boot/irq.asm). Lateness = that reading - T, kept for
   many events at several delays and in several ways of waiting: spinning
   with interrupts on, HLT, and MWAIT with each C-state hint CPUID leaf 5
   enumerates. What cyclictest does under Linux and kvm-unit-tests'
   tscdeadline_latency does in a guest, without an OS in between.

   Timers: the local APIC timer one-shot and in TSC-deadline mode (Intel
   SDM vol. 3A, 11.5.4 and 11.5.4.1), HPET comparator 0 through the I/O
   APIC or FSB delivery (IA-PC HPET 1.0a, 2.3.8-2.3.9), PIT channel 0 on
   IRQ 0 (8254 mode 0). Interrupts are on only inside this experiment's
   waits; every wait is bounded by the TSC, and an idle wait additionally
   by a second timer (the watchdog) so that HLT cannot sleep forever. */
#include "../drivers/cpuinfo.h"
#include "../drivers/hpet.h"
#include "../drivers/ioapic.h"
#include "../drivers/pit.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/interrupts.h"
#include "../kernel/paging.h"
#include "../kernel/probe.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/deadline_errata.h"
#include "../lib/latency.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "experiment.h"

#define DELAYS 4
static const uint32_t delay_ns[DELAYS] = {1000, 10000, 100000, 1000000};
#define MAX_WAITS 9                 /* busy, hlt and up to 7 MWAIT hints */
#define MAX_EVENTS 1024             /* per cell, at most (soak) */
#define LOST_IN_A_ROW 3             /* a cell stops after this many never came */
#define BOUND_MIN_MS 200            /* an event is lost this long after its deadline (or 20 delays) */
#define PIT_WATCHDOG_MAX 60000      /* PIT ticks: channel 0 counts 16 bits */
#define RATE_WINDOW_MS 40           /* the PIT wraps in 55 ms */
#define RATE_MARGIN_SIGMAS 3        /* converted deadlines are pushed late by this many stated uncertainties */
#define PIT_CH0_DATA 0x40
#define   PIT_SELECT_CH0 (0u << 6)
#define   PIT_MODE_TERMINAL (0u << 1) /* mode 0: OUT rises when the count reaches 0 */
#define PIT_IRQ 0
#define HPET_TN_INT_ROUTE_SHIFT 9
#define HPET_TN_INT_ROUTE_MASK 0x1Full
#define HPET_TN_FSB_EN (1ull << 14)
#define HPET_TN_FSB_CAP (1ull << 15)
#define HPET_TN_ROUTE_CAP_SHIFT 32
#define HPET_FSB_ROUTE(n) (0x110 + 0x20 * (n))
#define MSI_ADDRESS_BASE 0xFEE00000ull /* SDM vol. 3A, 11.11.1 */
#define   MSI_DEST_SHIFT 12
#define CPUID1_ECX_MONITOR (1u << 3)
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID5_ECX_EMX (1u << 0)
#define MSR_BIOS_SIGN_ID 0x8Bu         /* microcode revision in bits 63:32 after CPUID(1) */

enum timer_id { TIMER_LAPIC, TIMER_DEADLINE, TIMER_HPET, TIMER_PIT, TIMER_COUNT };
static const char *const timer_name[TIMER_COUNT] = {"lapic", "tsc_deadline", "hpet", "pit"};
static const char *const timer_title[TIMER_COUNT] = {
    "local APIC timer, one-shot", "local APIC timer, TSC-deadline mode", "HPET comparator 0", "PIT channel 0 (IRQ 0)"};
static const uint8_t timer_vector[TIMER_COUNT] = {VEC_TIMER_LAPIC, VEC_TIMER_LAPIC, VEC_TIMER_HPET, VEC_TIMER_PIT};

struct wait_mode {
    char name[16];
    bool mwait, hlt;
    uint32_t hint;
};

struct cell {
    bool ran;
    uint32_t asked, came, lost, passed_arming;
    uint32_t stray;                  /* interrupts on the vector before the device reached its target */
    uint32_t away;                   /* busy waits during which the CPU was away for over 1 ms */
    bool stopped;                    /* LOST_IN_A_ROW reached */
    struct latency_summary s;        /* in TSC ticks */
};

struct timer {
    bool usable;
    char why[128];                   /* why not measured */
    char route[96];                  /* how its interrupt reaches the CPU */
    struct xf per_tsc;               /* its ticks per TSC tick (LAPIC, HPET, PIT) */
    struct xf per_tsc_u;             /* relative uncertainty of that */
    bool rate_known;
    uint64_t count[DELAYS];          /* its ticks programmed for each delay */
    bool clean;                      /* busy waits: every event came: fit to be a watchdog */
    char idle_why[96];               /* why idle waits were not measured */
    struct cell cell[MAX_WAITS][DELAYS];
};

static struct timer timers[TIMER_COUNT];
static struct wait_mode waits[MAX_WAITS];
static unsigned wait_count;
static char mwait_note[128];
static char errata_note[160];
static bool skipped_all;
static char skipped_why[128];
static uint64_t delay_ticks[DELAYS];
static uint64_t unexpected_seen, spurious_seen;
static uint8_t last_unexpected;
static bool faulted;
static struct probe_fault fault;
static const char *fault_where = "";
static struct xf ref_per_tsc, ref_per_tsc_u;  /* the best reference, for the APIC timer's rate against it */
static int ref_counter = -1;

/* I/O APIC state: found through the MADT */
static struct ioapic ioapics[ACPI_MAX_IOAPICS];
static uint32_t ioapic_pins[ACPI_MAX_IOAPICS];
static int hpet_ioapic = -1, pit_ioapic = -1;
static uint32_t hpet_pin, hpet_gsi, pit_pin;
static bool pit_active_low, pit_level;
static uint64_t hpet_saved_conf, hpet_saved_t0;
static bool hpet_fsb, hpet_legacy;

/* Where ISA IRQ 0 arrives (the PIT's input, and the HPET's in legacy
   replacement): fills pit_ioapic, pit_pin and its trigger. */
static bool have_pit_pin(void)
{
    uint32_t gsi = acpi_isa_irq_gsi(&discovered.acpi, 0, &pit_active_low, &pit_level);
    pit_ioapic = acpi_ioapic_of_gsi(&discovered.acpi, gsi, ioapic_pins, &pit_pin);
    return pit_ioapic >= 0;
}

static uint64_t hpet_target;        /* the comparator value last armed */
static int64_t samples[MAX_EVENTS];
static uint64_t scratch[MAX_EVENTS];

/* --- rates --- */

/* Ticks of src per TSC tick over about RATE_WINDOW_MS, with its relative
   uncertainty: the two readings' brackets over the TSC time, plus one tick
   of the counter over its count. */
static bool rate_against_tsc(const struct read_src *src, uint64_t mask, struct xf *ratio, struct xf *u)
{
    uint64_t a0, b0, a1, b1;
    uint64_t v0 = read_bracketed(src, &a0, &b0);
    uint64_t end = b0 + ms_to_tsc(RATE_WINDOW_MS);
    while (rdtsc() < end)
        cpu_relax();
    uint64_t v1 = read_bracketed(src, &a1, &b1);
    uint64_t dv = (v1 - v0) & mask;
    uint64_t dt = (a1 + b1) / 2 - (a0 + b0) / 2;
    if (!dv || !dt)
        return false;
    *ratio = xf_div(xf_from_u64(dv), xf_from_u64(dt));
    *u = xf_add(xf_div(xf_from_u64((b0 - a0) + (b1 - a1)), xf_from_u64(dt)), xf_div(xf_from_u64(1), xf_from_u64(dv)));
    return true;
}

/* Its own ticks for d TSC ticks, pushed late by the rate's uncertainty, and
   one more for the tick under way. */
static uint64_t ticks_for(const struct timer *t, uint64_t d)
{
    struct xf late = xf_add(xf_from_u64(1), xf_mul(xf_from_u64(RATE_MARGIN_SIGMAS), t->per_tsc_u));
    return (uint64_t)xf_to_fixed(xf_mul(xf_mul(xf_from_u64(d), t->per_tsc), late), 0) + 2;
}

/* --- arming: the deadline T is the TSC read just before the write that
   arms; the device counts from after that write, so it cannot fire before
   T + d unless its rate is wrong --- */

static inline uint64_t arm(int id, unsigned di, uint64_t count)
{
    const struct lapic *l = &smp.lapic;
    const struct hpet *h = &discovered.hpet;
    uint64_t t0;
    switch (id) {
    case TIMER_LAPIC:
        t0 = rdtsc();
        lapic_write(l, LAPIC_TIMER_INITIAL, (uint32_t)count);
        return t0 + (di < DELAYS ? delay_ticks[di] : 0);
    case TIMER_DEADLINE:
        t0 = rdtsc();
        wrmsr(MSR_TSC_DEADLINE, t0 + count);
        return t0 + count;
    case TIMER_HPET: {
        t0 = rdtsc();
        uint64_t now = hpet_counter(h);
        hpet_target = h->t0_64bit ? now + count : (uint32_t)(now + count);
        hpet_write64(h, HPET_TIMER_COMPARATOR(0), hpet_target);
        return t0 + (di < DELAYS ? delay_ticks[di] : 0);
    }
    case TIMER_PIT:
        outb(PIT_COMMAND, PIT_SELECT_CH0 | PIT_ACCESS_LOHI | PIT_MODE_TERMINAL);
        t0 = rdtsc();
        outb(PIT_CH0_DATA, (uint8_t)count);
        outb(PIT_CH0_DATA, (uint8_t)(count >> 8));
        return t0 + (di < DELAYS ? delay_ticks[di] : 0);
    }
    return 0;
}

static void disarm(int id)
{
    const struct hpet *h = &discovered.hpet;
    switch (id) {
    case TIMER_LAPIC:
        lapic_write(&smp.lapic, LAPIC_TIMER_INITIAL, 0);
        break;
    case TIMER_DEADLINE:
        wrmsr(MSR_TSC_DEADLINE, 0);
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

/* An interrupt on the vector although the device has not reached what it
   was armed for: not this event's (a late or doubled one from before). */
static bool stray(int id)
{
    const struct hpet *h = &discovered.hpet;
    switch (id) {
    case TIMER_LAPIC: /* a one-shot count stops at 0 (SDM 11.5.4) */
        return lapic_read(&smp.lapic, LAPIC_TIMER_CURRENT) != 0;
    case TIMER_DEADLINE: /* the MSR reads 0 once it has fired (SDM 11.5.4.1) */
        return rdmsr(MSR_TSC_DEADLINE) != 0;
    case TIMER_HPET: {
        uint64_t now = hpet_counter(h);
        return h->t0_64bit ? (int64_t)(now - hpet_target) < 0 : (int32_t)((uint32_t)now - (uint32_t)hpet_target) < 0;
    }
    }
    return false; /* the PIT's channel 0 keeps counting past 0: nothing to check */
}

/* Puts the LAPIC timer in the mode a timer needs (both use one LVT). */
static void lapic_mode(int id)
{
    const struct lapic *l = &smp.lapic;
    if (id == TIMER_DEADLINE) {
        lapic_write(l, LAPIC_LVT_TIMER, LVT_TIMER_TSC_DEADLINE | VEC_TIMER_LAPIC);
        /* SDM 11.5.4.1: in xAPIC mode the MMIO write to the LVT and a
           later WRMSR to IA32_TSC_DEADLINE are not ordered without MFENCE */
        if (!l->x2apic)
            __asm__ volatile("mfence" ::: "memory");
    } else if (id == TIMER_LAPIC) {
        lapic_write(l, LAPIC_TIMER_INITIAL, 0);
        lapic_write(l, LAPIC_LVT_TIMER, LVT_TIMER_ONESHOT | VEC_TIMER_LAPIC);
        lapic_write(l, LAPIC_TIMER_DIVIDE, TIMER_DIVIDE_BY_1);
    }
}

/* --- waiting --- */

static inline void monitor(const volatile void *p)
{
    __asm__ volatile("monitor" ::"a"(p), "c"(0), "d"(0) : "memory");
}

static uint64_t gap_ticks, away_cap_ticks; /* what counts as time away from a busy wait, and its most */

/* Interrupts on only here. Returns whether vector came (its count moved
   from before) by TSC bound. A busy wait that sees the TSC step by more
   than 1 ms between two of its reads was away (a paused VM, a preempted
   host, an SMI): the bound moves out by that time, up to 10 s in all, so an
   interrupt that comes late because the machine stopped is late, not lost.
   *away tells whether that happened. */
static bool wait_for(uint8_t vector, uint64_t before, const struct wait_mode *w, uint64_t bound, bool *away)
{
    volatile uint64_t *count = &irq.count[vector];
    volatile uint64_t *wd = &irq.total; /* an idle wait ends at any interrupt: the caller re-arms the watchdog */
    uint64_t wd_before = *wd;
    *away = false;
    if (!w->hlt && !w->mwait) {
        uint64_t last = rdtsc(), extended = 0;
        irq_enable();
        while (*count == before) {
            uint64_t now = rdtsc();
            if (now - last > gap_ticks && extended < away_cap_ticks) {
                bound += now - last;
                extended += now - last;
                *away = true;
            }
            last = now;
            if (now >= bound)
                break;
            cpu_relax();
        }
        irq_disable();
    } else if (w->hlt) {
        /* an idle wait also ends when the watchdog fires: the caller re-arms it */
        while (*count == before && *wd == wd_before && rdtsc() < bound)
            __asm__ volatile("sti; hlt; cli" ::: "memory");
    } else {
        while (*count == before && *wd == wd_before && rdtsc() < bound) {
            monitor(count);
            if (*count == before)
                /* the NOP opens a window with IF set after MWAIT: QEMU's TCG,
                   with more than one CPU, makes MWAIT a pause that leaves
                   the STI shadow in force, so "sti; mwait; cli" would
                   never let an interrupt in there */
                __asm__ volatile("sti; mwait; nop; cli" ::"a"(w->hint), "c"(0) : "memory");
        }
    }
    return *count != before;
}

/* Lets an interrupt that is already pending in (a late one) arrive now, so
   that it is not taken for the next event's. */
static void drain(void)
{
    irq_enable();
    for (int i = 0; i < 4; i++)
        cpu_relax();
    irq_disable();
}

/* On the pc machine (and PCs like it) the HPET may only reach GSI 2, the
   PIT's input: the pin is then routed to the vector of whichever of the two
   a cell uses, and neither is the other's watchdog. */
static bool pin_shared(void)
{
    return hpet_legacy || (hpet_ioapic >= 0 && hpet_ioapic == pit_ioapic && hpet_pin == pit_pin);
}

static uint32_t route_dest = 0;

static void route_shared_pin(int id, int wd)
{
    if (!pin_shared())
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

/* The watchdog for an idle wait on timer id: another timer whose busy
   waits all came, never one that shares its vector. -1 when none. */
static int watchdog_for(int id)
{
    static const int prefer[TIMER_COUNT][3] = {
        [TIMER_LAPIC] = {TIMER_HPET, TIMER_PIT, -1},
        [TIMER_DEADLINE] = {TIMER_HPET, TIMER_PIT, -1},
        [TIMER_HPET] = {TIMER_LAPIC, TIMER_DEADLINE, TIMER_PIT},
        [TIMER_PIT] = {TIMER_LAPIC, TIMER_DEADLINE, TIMER_HPET},
    };
    for (int i = 0; i < 3; i++) {
        int w = prefer[id][i];
        if (w >= 0 && timers[w].usable && timers[w].clean && !(pin_shared() && (w == TIMER_HPET || w == TIMER_PIT) &&
                                                               (id == TIMER_HPET || id == TIMER_PIT)))
            return w;
    }
    return -1;
}

/* One cell: events of timer id armed di ahead (count: its ticks for that),
   waiting in waits[wi], into *c. */
static void run_cell_into(int id, unsigned wi, unsigned di, uint32_t events, uint64_t budget_ticks, uint64_t count, struct cell *c)
{
    const struct wait_mode *w = &waits[wi];
    uint8_t vec = timer_vector[id];
    uint64_t bound_after = delay_ticks[di] * 20 > ms_to_tsc(BOUND_MIN_MS) ? delay_ticks[di] * 20 : ms_to_tsc(BOUND_MIN_MS);
    int wd = (w->hlt || w->mwait) ? watchdog_for(id) : -1;
    uint64_t wd_ticks = 0;
    if (wd >= 0) {
        /* past the whole bound, or as far as the watchdog can count (the
           PIT: 16 bits); an idle wait re-arms it each time it fires first */
        uint64_t span = delay_ticks[di] + bound_after + ms_to_tsc(1);
        if (wd == TIMER_PIT) {
            uint64_t most = (uint64_t)xf_to_fixed(xf_div(xf_from_u64(PIT_WATCHDOG_MAX), timers[TIMER_PIT].per_tsc), 0);
            span = span < most ? span : most;
        }
        wd_ticks = wd == TIMER_DEADLINE ? span : ticks_for(&timers[wd], span);
    }
    route_shared_pin(id, wd);
    *c = (struct cell){.ran = true};
    uint32_t in_a_row = 0, n = 0;
    uint64_t start = rdtsc();
    lapic_mode(id);
    if (wd >= 0)
        lapic_mode(wd);
    for (uint32_t e = 0; e < events && rdtsc() - start < budget_ticks; e++) {
        drain();
        if (wd >= 0)
            (void)arm(wd, DELAYS, wd_ticks);
        uint64_t before = irq.count[vec];
        uint64_t deadline = arm(id, di, count);
        if (id == TIMER_HPET) {
            uint64_t now = hpet_counter(&discovered.hpet);
            uint64_t cmp = hpet_read64(&discovered.hpet, HPET_TIMER_COMPARATOR(0));
            int64_t left = discovered.hpet.t0_64bit ? (int64_t)(cmp - now) : (int32_t)((uint32_t)cmp - (uint32_t)now);
            if (left <= 0 && irq.count[vec] == before)
                c->passed_arming++;
        }
        c->asked++;
        bool came, away, was_away = false;
        for (;;) {
            came = wait_for(vec, before, w, deadline + bound_after, &away);
            was_away = was_away || away;
            if (came && stray(id)) {
                c->stray++;
                before = irq.count[vec];
                continue;
            }
            if (came || wd < 0 || rdtsc() >= deadline + bound_after)
                break;
            /* woken by the watchdog (or anything else) before the bound:
               arm the watchdog again, so the next halt has a waker too */
            (void)arm(wd, DELAYS, wd_ticks);
        }
        away = was_away;
        if (wd >= 0)
            disarm(wd);
        c->away += away;
        if (!came) {
            disarm(id);
            c->lost++;
            if (++in_a_row >= LOST_IN_A_ROW) {
                c->stopped = true;
                break;
            }
            continue;
        }
        in_a_row = 0;
        samples[n++] = (int64_t)(irq.entry_tsc[vec] - deadline);
    }
    c->came = n;
    int64_t edge = (int64_t)(results.tsc_estimate_hz / 4000000); /* 250 ns */
    latency_summarise(samples, n, scratch, edge > 0 ? edge : 1, &c->s);
}

static void run_cell(int id, unsigned wi, unsigned di, uint32_t events, uint64_t budget_ticks)
{
    run_cell_into(id, wi, di, events, budget_ticks, timers[id].count[di], &timers[id].cell[wi][di]);
}

/* --- set-up of each timer --- */

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

static void setup_lapic_timers(const struct cpu_info *ci)
{
    struct timer *l = &timers[TIMER_LAPIC], *d = &timers[TIMER_DEADLINE];
    fmt_format(l->route, sizeof l->route, "local APIC LVT timer, vector 0x%x", VEC_TIMER_LAPIC);
    fmt_format(d->route, sizeof d->route, "local APIC LVT timer, vector 0x%x; MSR 0x6E0", VEC_TIMER_LAPIC);
    if (!counters[COUNTER_LAPIC].present) {
        fmt_format(l->why, sizeof l->why, "%s", counters[COUNTER_LAPIC].reason);
        fmt_format(d->why, sizeof d->why, "%s", counters[COUNTER_LAPIC].reason);
        return;
    }
    struct read_src s;
    counter_source(COUNTER_LAPIC, &s);
    lapic_timer_free_run(&smp.lapic);
    if (!rate_against_tsc(&s, counters[COUNTER_LAPIC].mask, &l->per_tsc, &l->per_tsc_u))
        fmt_format(l->why, sizeof l->why, "its current count did not move against the TSC");
    else
        l->usable = l->rate_known = true;
    if (!ci->tsc_deadline) {
        fmt_format(d->why, sizeof d->why, "CPUID.1:ECX[24] clear: no TSC-deadline mode");
        return;
    }
    d->usable = true;
    d->per_tsc = xf_from_u64(1);
    d->per_tsc_u = xf_from_u64(0);
    d->rate_known = true;
    /* Linux's errata table: report a listed part with old microcode */
    const struct deadline_erratum *e = deadline_erratum_of(ci->family, ci->model, ci->stepping);
    if (e) {
        uint64_t rev = 0;
        struct probe_fault f;
        wrmsr(MSR_BIOS_SIGN_ID, 0);
        (void)cpuid(1, 0);
        if (msr_read_safe(MSR_BIOS_SIGN_ID, &rev, &f)) {
            uint32_t mc = (uint32_t)(rev >> 32);
            fmt_format(errata_note, sizeof errata_note, "%s: microcode 0x%x %s 0x%x, the first with the TSC-deadline fix%s", e->part, mc,
                       mc >= e->min_microcode ? ">=" : "<", e->min_microcode,
                       mc >= e->min_microcode ? "" : ": the timer may misfire (Linux falls back to the one-shot timer)");
        } else
            fmt_format(errata_note, sizeof errata_note, "%s is listed with a TSC-deadline erratum (fixed in microcode 0x%x); the revision could not be read",
                       e->part, e->min_microcode);
    }
}

static void hpet_job(void *unused)
{
    (void)unused;
    struct timer *t = &timers[TIMER_HPET];
    const struct hpet *h = &discovered.hpet;
    hpet_saved_conf = hpet_read64(h, HPET_GEN_CONF);
    hpet_saved_t0 = hpet_read64(h, HPET_TIMER_CONF(0));
    uint64_t caps = hpet_saved_t0 >> HPET_TN_ROUTE_CAP_SHIFT;
    /* an I/O APIC input the comparator offers: above the ISA range first,
       then any but the 8259's, the PIT's and the RTC's. GSI 2 is not used
       directly: QEMU under KVM does not route it to the I/O APIC at all
       (ISA IRQ 2 is the cascade), so the PIT's input is reached the way
       firmware and Linux reach it, by legacy replacement (below) */
    static const uint32_t avoid_first[] = {0, 2, 8};
    hpet_ioapic = -1;
    hpet_legacy = false;
    for (int pass = 0; pass < 2 && hpet_ioapic < 0; pass++)
        for (uint32_t gsi = 0; gsi < 32 && hpet_ioapic < 0; gsi++) {
            if (!(caps & (1ull << gsi)))
                continue;
            bool avoided = gsi == avoid_first[0] || gsi == avoid_first[1] || gsi == avoid_first[2];
            if ((pass == 0 && gsi < 16) || avoided)
                continue;
            uint32_t pin;
            int at = acpi_ioapic_of_gsi(&discovered.acpi, gsi, ioapic_pins, &pin);
            if (at >= 0) {
                hpet_ioapic = at;
                hpet_gsi = gsi;
                hpet_pin = pin;
            }
        }
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
    disarm(TIMER_HPET);
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

static void setup_pit(bool have_ioapic, const char *ioapic_why)
{
    struct timer *t = &timers[TIMER_PIT];
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
    disarm(TIMER_PIT);
    ioapic_route(&ioapics[pit_ioapic], pit_pin, VEC_TIMER_PIT, smp.bsp_apic_id, pit_level, pit_active_low, false);
    fmt_format(t->route, sizeof t->route, "IRQ 0 -> GSI %u (I/O APIC %d pin %u), vector 0x%x, %s", gsi, pit_ioapic, pit_pin,
               VEC_TIMER_PIT, pit_level ? "level" : "edge");
    struct read_src s;
    counter_source(COUNTER_PIT, &s); /* channel 2: the same input clock as channel 0 */
    if (rate_against_tsc(&s, counters[COUNTER_PIT].mask, &t->per_tsc, &t->per_tsc_u))
        t->usable = t->rate_known = true;
    else
        fmt_format(t->why, sizeof t->why, "its counter did not move against the TSC");
}

static void build_waits(const struct cpu_info *ci)
{
    wait_count = 0;
    waits[wait_count++] = (struct wait_mode){.name = "busy"};
    waits[wait_count++] = (struct wait_mode){.name = "hlt", .hlt = true};
    const struct cpuid_leaf *l1 = &boot_cpu.leaves[CPUID_IDX_1];
    if (!l1->valid || !(l1->ecx & CPUID1_ECX_MONITOR)) {
        fmt_format(mwait_note, sizeof mwait_note, "MWAIT not measured: CPUID.1:ECX[3] (MONITOR/MWAIT) is clear");
        return;
    }
    if (ci->max_leaf < 5) {
        fmt_format(mwait_note, sizeof mwait_note, "MWAIT not measured: CPUID leaf 5 is not there to enumerate its C-states");
        return;
    }
    struct cpuid_regs l5 = cpuid(5, 0);
    /* EDX bits 4n+3:4n: sub-states of C-state n; the hint for C(n), n >= 1,
       is (n - 1) << 4 (SDM vol. 2B, MWAIT, Table 4-11). C1 is always asked. */
    unsigned used = (unsigned)fmt_format(mwait_note, sizeof mwait_note, "MWAIT hints asked (leaf 5 EDX 0x%x; the CPU may demote them):",
                                         l5.edx);
    for (unsigned n = 1; n <= 7 && wait_count < MAX_WAITS; n++) {
        unsigned subs = (l5.edx >> (4 * n)) & 0xF;
        if (n > 1 && !subs)
            continue;
        struct wait_mode *w = &waits[wait_count++];
        *w = (struct wait_mode){.mwait = true, .hint = (n - 1) << 4};
        fmt_format(w->name, sizeof w->name, "mwait_c%u", n);
        if (used < sizeof mwait_note)
            used += (unsigned)fmt_format(mwait_note + used, sizeof mwait_note - used, " 0x%02x (C%u)", w->hint, n);
    }
    (void)CPUID5_ECX_EMX;
}

struct wait_job {
    unsigned wi;
    uint32_t events;
    uint64_t budget;
    int current;
};

static void wait_job_run(void *p)
{
    struct wait_job *j = p;
    for (int id = 0; id < TIMER_COUNT; id++) {
        struct timer *t = &timers[id];
        if (!t->usable)
            continue;
        if (j->wi > 0 && watchdog_for(id) < 0) {
            if (!t->idle_why[0])
                fmt_format(t->idle_why, sizeof t->idle_why, "no second timer came every time in busy waits: an idle wait could not be bounded");
            continue;
        }
        j->current = id;
        for (unsigned di = 0; di < DELAYS; di++)
            run_cell(id, j->wi, di, j->events, j->budget);
        disarm(id);
        if (j->wi == 0) {
            t->clean = true;
            for (unsigned di = 0; di < DELAYS; di++)
                t->clean = t->clean && t->cell[0][di].lost == 0;
        }
    }
    j->current = -1;
}

static void stop_everything(void)
{
    irq_disable();
    for (int id = 0; id < TIMER_COUNT; id++)
        if (timers[id].usable)
            disarm(id);
    if (counters[COUNTER_LAPIC].present)
        lapic_timer_free_run(&smp.lapic);
    if (pit_ioapic >= 0)
        ioapic_mask(&ioapics[pit_ioapic], pit_pin);
    if (timers[TIMER_HPET].usable)
        hpet_restore();
    drain();
}

/* --- every other CPU: its own local APIC timer, one-shot and TSC-deadline,
   busy and HLT (the HPET or PIT, routed to that CPU, as the watchdog) --- */
#define AP_TIMERS 2   /* TIMER_LAPIC, TIMER_DEADLINE */
#define AP_WAITS 2    /* busy, hlt */

struct ap_row {
    bool tried, ran;
    char why[96];
    struct xf per_tsc, per_tsc_u;        /* its APIC timer against its TSC */
    struct cell cell[AP_TIMERS][AP_WAITS][DELAYS];
};
static struct ap_row ap_rows[PERCPU_MAX];

struct ap_job {
    int index;
    uint32_t events;
    uint64_t budget;
};

/* Sends the HPET's and the PIT's interrupts to APIC ID dest. */
static void route_to(uint32_t dest)
{
    route_dest = dest; /* a shared pin is routed per cell (route_shared_pin) */
    const struct hpet *h = &discovered.hpet;
    if (timers[TIMER_HPET].usable) {
        if (hpet_fsb)
            hpet_write64(h, HPET_FSB_ROUTE(0), (MSI_ADDRESS_BASE | (uint64_t)dest << MSI_DEST_SHIFT) << 32 | VEC_TIMER_HPET);
        else if (hpet_ioapic >= 0)
            ioapic_route(&ioapics[hpet_ioapic], hpet_pin, VEC_TIMER_HPET, dest, false, false, false);
    }
    if (timers[TIMER_PIT].usable && pit_ioapic >= 0)
        ioapic_route(&ioapics[pit_ioapic], pit_pin, VEC_TIMER_PIT, dest, pit_level, pit_active_low, false);
}

static void ap_timer_job(void *p)
{
    struct ap_job *j = p;
    struct ap_row *row = &ap_rows[j->index];
    const struct lapic *l = &smp.lapic; /* the same mode on every CPU; the registers are this CPU's */
    uint32_t svr = lapic_read(l, LAPIC_SVR);
    lapic_write(l, LAPIC_SVR, (svr & ~LAPIC_SVR_VECTOR_MASK) | LAPIC_SVR_ENABLE | VEC_SPURIOUS);
    lapic_write(l, LAPIC_TPR, 0);
    lapic_timer_free_run(l);
    struct read_src s;
    counter_source(COUNTER_LAPIC, &s);
    if (!rate_against_tsc(&s, counters[COUNTER_LAPIC].mask, &row->per_tsc, &row->per_tsc_u)) {
        fmt_format(row->why, sizeof row->why, "its APIC timer's count did not move against its TSC");
        lapic_write(l, LAPIC_SVR, svr);
        return;
    }
    struct timer saved = timers[TIMER_LAPIC];
    timers[TIMER_LAPIC].per_tsc = row->per_tsc;
    timers[TIMER_LAPIC].per_tsc_u = row->per_tsc_u;
    for (unsigned wi = 0; wi < AP_WAITS && wi < wait_count; wi++)
        for (int t = 0; t < AP_TIMERS; t++) {
            int id = t == 0 ? TIMER_LAPIC : TIMER_DEADLINE;
            if (!timers[id].usable || (wi > 0 && watchdog_for(id) < 0))
                continue;
            for (unsigned di = 0; di < DELAYS; di++) {
                uint64_t count = id == TIMER_DEADLINE ? delay_ticks[di] : ticks_for(&timers[TIMER_LAPIC], delay_ticks[di]);
                run_cell_into(id, wi, di, j->events, j->budget, count, &row->cell[t][wi][di]);
            }
            disarm(id);
        }
    timers[TIMER_LAPIC].per_tsc = saved.per_tsc;
    timers[TIMER_LAPIC].per_tsc_u = saved.per_tsc_u;
    irq_disable();
    lapic_timer_free_run(l);
    lapic_write(l, LAPIC_SVR, svr);
    row->ran = true;
}

static void measure_aps(const struct profile *p)
{
    if (!timers[TIMER_LAPIC].usable)
        return;
    smp_start();
    uint32_t events = p->timer_events < MAX_EVENTS ? p->timer_events : MAX_EVENTS;
    uint64_t budget = ms_to_tsc(p->timer_cell_ms);
    /* every cell at its budget, plus the rate window and slack */
    uint64_t job_budget = budget * AP_TIMERS * AP_WAITS * DELAYS + ms_to_tsc(RATE_WINDOW_MS + 2000);
    for (uint32_t i = 1; i < smp.running && i < PERCPU_MAX; i++) {
        struct ap_row *row = &ap_rows[i];
        *row = (struct ap_row){.tried = true};
        const struct smp_cpu *cpu = smp_cpu_of((int)i);
        if (!cpu) {
            fmt_format(row->why, sizeof row->why, "not running");
            continue;
        }
        route_to(cpu->apic_id);
        struct ap_job j = {.index = (int)i, .events = events, .budget = budget};
        bool job_faulted = false;
        struct probe_fault f;
        bool done = smp_run((int)i, ap_timer_job, &j, job_budget, &job_faulted, &f);
        route_to(smp.bsp_apic_id);
        if (!done)
            fmt_format(row->why, sizeof row->why, "its job did not finish in time: the CPU is left behind");
        else if (job_faulted)
            fmt_format(row->why, sizeof row->why, "a CPU exception: %s", f.text);
        if (!done || job_faulted)
            row->ran = false;
    }
    if (!experiment_chosen("cpus"))
        smp_park_all(); /* nothing else needs them; a later smp_start does nothing */
}

static void timers_measure(const struct profile *p)
{
    memset(timers, 0, sizeof timers);
    memset(ap_rows, 0, sizeof ap_rows);
    skipped_all = faulted = false;
    errata_note[0] = mwait_note[0] = '\0';
    hpet_ioapic = pit_ioapic = -1;
    hpet_fsb = false;
    const char *why = "";
    if (!irq_setup(&why)) {
        skipped_all = true;
        fmt_format(skipped_why, sizeof skipped_why, "no interrupts without a local APIC: %s", why);
        return;
    }
    for (unsigned di = 0; di < DELAYS; di++)
        delay_ticks[di] = results.tsc_estimate_hz / 1000 * delay_ns[di] / 1000000;
    route_dest = smp.bsp_apic_id;
    gap_ticks = ms_to_tsc(1);
    away_cap_ticks = ms_to_tsc(10000);
    const struct cpu_info *ci = &boot_cpu.info;
    build_waits(ci);
    setup_lapic_timers(ci);
    const char *io_why = "";
    bool have_ioapic = setup_ioapics(&io_why);
    if (!have_ioapic)
        for (uint32_t i = 0; i < ACPI_MAX_IOAPICS; i++)
            ioapic_pins[i] = 0;
    struct timer *h = &timers[TIMER_HPET];
    if (!counters[COUNTER_HPET].present)
        fmt_format(h->why, sizeof h->why, "%s", counters[COUNTER_HPET].reason);
    else if (!probe_run(hpet_job, 0, &fault)) {
        fmt_format(h->why, sizeof h->why, "programming comparator 0 faulted: %s", fault.text);
        h->usable = false;
    }
    if (h->usable) {
        struct read_src s;
        counter_source(COUNTER_HPET, &s);
        if (!rate_against_tsc(&s, counters[COUNTER_HPET].mask, &h->per_tsc, &h->per_tsc_u)) {
            h->usable = false;
            fmt_format(h->why, sizeof h->why, "its counter did not move against the TSC");
            hpet_restore();
        }
    }
    setup_pit(have_ioapic, io_why);
    if (pin_shared() && !hpet_legacy) {
        unsigned used = (unsigned)strlen(timers[TIMER_HPET].route);
        fmt_format(timers[TIMER_HPET].route + used, sizeof timers[TIMER_HPET].route - used, "; shared with the PIT");
    }
    int order[COUNTER_COUNT];
    ref_counter = -1;
    if (counters_by_rank(order)) {
        struct read_src s;
        counter_source(order[0], &s);
        if (rate_against_tsc(&s, counters[order[0]].mask, &ref_per_tsc, &ref_per_tsc_u))
            ref_counter = order[0];
    }
    for (int id = 0; id < TIMER_COUNT; id++)
        if (timers[id].usable)
            for (unsigned di = 0; di < DELAYS; di++)
                timers[id].count[di] = id == TIMER_DEADLINE ? delay_ticks[di] : ticks_for(&timers[id], delay_ticks[di]);
    for (int id = 0; id < TIMER_COUNT; id++)
        irq_expect(timer_vector[id], true);
    uint64_t unexpected0 = irq.unexpected, spurious0 = irq.spurious;
    for (unsigned wi = 0; wi < wait_count; wi++) {
        struct wait_job j = {.wi = wi, .events = p->timer_events < MAX_EVENTS ? p->timer_events : MAX_EVENTS,
                             .budget = ms_to_tsc(p->timer_cell_ms), .current = -1};
        if (!probe_run(wait_job_run, &j, &fault)) {
            stop_everything();
            if (!faulted) {
                faulted = true;
                fault_where = waits[wi].name;
            }
            /* a wait mode that faults (MWAIT where it is not allowed) is
               dropped for every timer; the others go on */
            for (int id = 0; id < TIMER_COUNT; id++)
                for (unsigned di = 0; di < DELAYS; di++)
                    timers[id].cell[wi][di].ran = false;
            if (wi == 0)
                break;
        }
    }
    if (!faulted)
        measure_aps(p);
    stop_everything();
    unexpected_seen = irq.unexpected - unexpected0;
    spurious_seen = irq.spurious - spurious0;
    last_unexpected = irq.last_unexpected;
}

/* --- report --- */

static const char *us_cell(char buf[FMT_FIXED_CHARS], int64_t ticks)
{
    struct xf us = xf_div(tsc_ticks_to_ns(xf_from_i64(ticks)), xf_from_u64(1000));
    return xs(buf, us, xf_cmp(xf_abs(us), xf_from_u64(10000)) < 0 ? 1 : 0);
}

static void record_ns(struct record *r, const char *key, int64_t ticks)
{
    record_i64(r, key, xf_to_fixed(tsc_ticks_to_ns(xf_from_i64(ticks)), 0));
}

static struct xf rate_hz(const struct timer *t) { return xf_mul(t->per_tsc, results.tsc_hz); }

static struct xf rel_ppm(struct xf u) { return xf_mul(u, xf_from_u64(1000000)); }

static void report_rates(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    const struct timer *l = &timers[TIMER_LAPIC];
    if (!l->rate_known)
        return;
    struct xf hz = rate_hz(l);
    struct xf u = rel_ppm(xf_add(l->per_tsc_u, xf_div(results.tsc_uncertainty_ppm, xf_from_u64(1000000))));
    kprintf("  APIC timer rate (divide by 1): %s MHz +- %s ppm against the TSC", xs(a, xf_div(hz, xf_from_u64(1000000)), 6),
            xs(b, u, 0));
    struct record r;
    record_begin(&r, "apic_timer");
    record_xf_fixed(&r, "hz", hz, 3);
    record_xf_fixed(&r, "uncertainty_ppm", u, 1);
    record_str(&r, "nominal_source", counters[COUNTER_LAPIC].nominal_source);
    if (ref_counter >= 0) {
        /* against the reference directly: (apic/tsc) / (ref/tsc) * ref's nominal */
        struct xf vs_ref = xf_mul(xf_div(l->per_tsc, ref_per_tsc), nominal_hz(ref_counter));
        struct xf u_ref = rel_ppm(xf_add(l->per_tsc_u, ref_per_tsc_u));
        kprintf(";\n  and %s MHz +- %s ppm against the %s (nominal rate, +-%u ppm)", xs(c, xf_div(vs_ref, xf_from_u64(1000000)), 6),
                xs(d, u_ref, 0), counters[ref_counter].name, counters[ref_counter].nominal_accuracy_ppm);
        record_str(&r, "reference", counters[ref_counter].name);
        record_xf_fixed(&r, "hz_vs_reference", vs_ref, 3);
        record_xf_fixed(&r, "uncertainty_vs_reference_ppm", u_ref, 1);
        record_u64(&r, "reference_nominal_accuracy_ppm", counters[ref_counter].nominal_accuracy_ppm);
    }
    kprintf("\n");
    if (counters[COUNTER_LAPIC].nominal_millihz && strncmp(counters[COUNTER_LAPIC].nominal_source, "not stated", 10))
        kprintf("  Stated: %s MHz, %s\n", xs(a, xf_div(nominal_hz(COUNTER_LAPIC), xf_from_u64(1000000)), 6),
                counters[COUNTER_LAPIC].nominal_source);
    emit(&r);
}

static const char *check_name(int id)
{
    static char name[40];
    fmt_format(name, sizeof name, "timer interrupts: %s", timer_name[id]);
    return name;
}

/* One cell's timer_latency record: CPU 0's from its tables, the APs' from theirs. */
static void record_cell(unsigned cpu, int id, unsigned wi, unsigned di, const struct cell *c)
{
    struct record tr;
    record_begin(&tr, "timer_latency");
    record_u64(&tr, "cpu", cpu);
    record_str(&tr, "timer", timer_name[id]);
    record_str(&tr, "wait", waits[wi].name);
    if (waits[wi].mwait)
        record_hex(&tr, "mwait_hint", waits[wi].hint);
    record_u64(&tr, "delay_ns", delay_ns[di]);
    record_u64(&tr, "asked", c->asked);
    record_u64(&tr, "n", c->came);
    if (c->came) {
        record_ns(&tr, "min_ns", c->s.min);
        record_ns(&tr, "p50_ns", c->s.p50);
        record_i64(&tr, "mean_ns", xf_to_fixed(tsc_ticks_to_ns(c->s.mean), 0));
        record_ns(&tr, "p99_ns", c->s.p99);
        record_ns(&tr, "p999_ns", c->s.p999);
        record_ns(&tr, "max_ns", c->s.max);
    }
    record_u64(&tr, "early", c->s.early);
    record_u64(&tr, "lost", c->lost);
    record_u64(&tr, "stray", c->stray);
    record_u64(&tr, "away", c->away);
    if (id == TIMER_HPET)
        record_u64(&tr, "passed_while_arming", c->passed_arming);
    emit(&tr);
}

static void report_timer(int id)
{
    const struct timer *t = &timers[id];
    char cells[9][FMT_FIXED_CHARS];
    kprintf("\n  %s: %s\n", timer_name[id], timer_title[id]);
    if (t->route[0])
        kprintf("    route: %s\n", t->route);
    struct record r;
    record_begin(&r, "timer");
    record_str(&r, "timer", timer_name[id]);
    record_bool(&r, "measured", t->usable);
    record_str(&r, "reason", t->usable ? 0 : t->why);
    record_str(&r, "route", t->route[0] ? t->route : 0);
    if (id == TIMER_HPET && counters[COUNTER_HPET].present)
        record_hex(&r, "route_capability", hpet_saved_t0 >> HPET_TN_ROUTE_CAP_SHIFT);
    if (t->usable && t->rate_known && id != TIMER_DEADLINE) {
        record_xf_fixed(&r, "rate_hz", rate_hz(t), 3);
        record_xf_fixed(&r, "rate_margin_ppm", rel_ppm(xf_mul(xf_from_u64(RATE_MARGIN_SIGMAS), t->per_tsc_u)), 1);
    }
    record_str(&r, "idle_reason", t->idle_why[0] ? t->idle_why : 0);
    emit(&r);
    if (!t->usable) {
        kprintf("    not measured: %s\n", t->why);
        check_skip(check_name(id), "not measured: %s", t->why);
        return;
    }
    if (id != TIMER_DEADLINE)
        kprintf("    rate margin: +%s ppm (3 sigma), so a rate error cannot fire it early\n",
                xs(cells[0], rel_ppm(xf_mul(xf_from_u64(RATE_MARGIN_SIGMAS), t->per_tsc_u)), 0));
    kprintf("    %-9s %6s %4s %7s %7s %7s %7s %7s %5s %4s\n", "wait", "delay", "n", "min us", "avg us", "p50 us", "p99 us", "max us",
            "early", "lost");
    uint64_t early = 0, lost = 0, asked = 0, strays = 0;
    for (unsigned wi = 0; wi < wait_count; wi++)
        for (unsigned di = 0; di < DELAYS; di++) {
            const struct cell *c = &t->cell[wi][di];
            if (!c->ran)
                continue;
            early += c->s.early;
            lost += c->lost;
            strays += c->stray;
            asked += c->asked;
            char delay[16];
            fmt_format(delay, sizeof delay, delay_ns[di] >= 1000000 ? "%u ms" : "%u us",
                       delay_ns[di] >= 1000000 ? delay_ns[di] / 1000000 : delay_ns[di] / 1000);
            if (c->came)
                kprintf("    %-9s %6s %4u %7s %7s %7s %7s %7s %5llu %4u%s\n", waits[wi].name, delay, c->came, us_cell(cells[0], c->s.min),
                        xs(cells[1], xf_div(tsc_ticks_to_ns(c->s.mean), xf_from_u64(1000)), 1), us_cell(cells[2], c->s.p50),
                        us_cell(cells[3], c->s.p99), us_cell(cells[5], c->s.max), (unsigned long long)c->s.early, c->lost,
                        c->stopped ? " stopped" : "");
            else
                kprintf("    %-9s %6s %4u %7s %7s %7s %7s %7s %5s %4u%s\n", waits[wi].name, delay, 0u, "-", "-", "-", "-", "-", "-", c->lost,
                        c->stopped ? " none came" : "");
            record_cell(0, id, wi, di, c);
            if (c->came) {
                struct record hr;
                record_begin(&hr, "timer_histogram");
                record_str(&hr, "timer", timer_name[id]);
                record_str(&hr, "wait", waits[wi].name);
                record_u64(&hr, "delay_ns", delay_ns[di]);
                int64_t edge = (int64_t)(results.tsc_estimate_hz / 4000000);
                record_array_begin(&hr, "bin_low_ns"); /* bin 0: early (below 0) */
                record_array_i64(&hr, -1);
                for (unsigned b = 1; b < LATENCY_BINS; b++)
                    record_array_i64(&hr, xf_to_fixed(tsc_ticks_to_ns(xf_from_i64(latency_bin_low(b, edge > 0 ? edge : 1))), 0));
                record_array_end(&hr);
                record_array_begin(&hr, "counts");
                for (unsigned b = 0; b < LATENCY_BINS; b++)
                    record_array_u64(&hr, c->s.bins[b]);
                record_array_end(&hr);
                emit(&hr);
            }
        }
    /* wake-up cost: each idle wait's median minus the busy one's */
    bool negative = false;
    for (unsigned wi = 1; wi < wait_count; wi++) {
        bool any = false;
        for (unsigned di = 0; di < DELAYS; di++) {
            const struct cell *busy = &t->cell[0][di], *idle = &t->cell[wi][di];
            if (!busy->came || !idle->came)
                continue;
            if (!any)
                kprintf("    wake-up cost, %s - busy, p50 us:", waits[wi].name);
            kprintf("%s %s @%u%s", any ? "," : "", us_cell(cells[0], idle->s.p50 - busy->s.p50),
                    delay_ns[di] >= 1000000 ? delay_ns[di] / 1000000 : delay_ns[di] / 1000, delay_ns[di] >= 1000000 ? "ms" : "us");
            any = true;
            negative = negative || idle->s.p50 < busy->s.p50;
        }
        if (any)
            kprintf("\n");
    }
    if (negative)
        kprintf("    (negative: a spinning CPU hears later than an idle one, as when an\n"
                "    emulator or hypervisor delivers interrupts when the guest stops, on HLT)\n");
    if (t->idle_why[0])
        kprintf("    idle waits not measured: %s\n", t->idle_why);
    if (strays)
        kprintf("    %llu interrupt(s) came before the device reached its target: counted as\n"
                "    stray (a late or doubled delivery), not as events\n", (unsigned long long)strays);
    if (early)
        check_fail(check_name(id), "%llu of %llu interrupts came before their deadline", (unsigned long long)early, (unsigned long long)asked);
    else if (lost)
        check_fail(check_name(id), "%llu of %llu interrupts never came (within %u ms or 20 delays of the deadline)", (unsigned long long)lost,
                   (unsigned long long)asked, BOUND_MIN_MS);
    else
        check_pass(check_name(id), "%llu interrupts, none early, none lost", (unsigned long long)asked);
}

/* The timer and way of waiting to use for precise events: the lowest p99
   lateness at 100 us ahead, among timers with none early and none lost. */
static void report_choice(void)
{
    const unsigned di = 2;
    int best = -1;
    unsigned best_w = 0;
    for (int id = 0; id < TIMER_COUNT; id++) {
        const struct timer *t = &timers[id];
        if (!t->usable)
            continue;
        bool ok = true;
        for (unsigned wi = 0; wi < wait_count; wi++)
            for (unsigned d = 0; d < DELAYS; d++)
                ok = ok && !t->cell[wi][d].s.early && !t->cell[wi][d].lost;
        for (unsigned wi = 0; ok && wi < wait_count; wi++)
            if (t->cell[wi][di].came && (best < 0 || t->cell[wi][di].s.p99 < timers[best].cell[best_w][di].s.p99)) {
                best = id;
                best_w = wi;
            }
    }
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    struct record r;
    record_begin(&r, "timer_choice");
    if (best < 0) {
        fmt_format(results.timer_choice, sizeof results.timer_choice,
                   "no timer delivered every interrupt on time: none to recommend for precise events");
        kprintf("\n  Verdict: %s\n", results.timer_choice);
        record_null(&r, "timer");
        emit(&r);
        return;
    }
    const struct cell *c = &timers[best].cell[best_w][di];
    fmt_format(results.timer_choice, sizeof results.timer_choice, "%s, waiting %s: %s us late (p50), %s us (p99) at 100 us ahead",
               timer_name[best], best_w ? waits[best_w].name : "busy (spinning)", us_cell(a, c->s.p50), us_cell(b, c->s.p99));
    kprintf("\n  Verdict: for precise events here use %s, waiting %s:\n"
            "  at 100 us ahead the handler runs %s us late (p50), %s us (p99)\n",
            timer_name[best], best_w ? waits[best_w].name : "busy", us_cell(a, c->s.p50), us_cell(b, c->s.p99));
    record_str(&r, "timer", timer_name[best]);
    record_str(&r, "wait", waits[best_w].name);
    record_u64(&r, "delay_ns", delay_ns[di]);
    record_ns(&r, "p50_ns", c->s.p50);
    record_ns(&r, "p99_ns", c->s.p99);
    emit(&r);
}


/* One line per CPU, timer and wait at 100 us ahead; the records hold every
   delay. CPU 0's rows repeat its tables above, for comparison. */
static void report_every_cpu(void)
{
    unsigned tried = 0;
    for (unsigned i = 1; i < PERCPU_MAX; i++)
        tried += ap_rows[i].tried;
    if (!tried)
        return;
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], m[FMT_FIXED_CHARS];
    kprintf("\n  Every CPU: its own APIC timer, 100 us ahead (the records hold every delay)\n");
    kprintf("    %3s  %-12s %-5s %4s %8s %8s %8s %5s %4s\n", "CPU", "timer", "wait", "n", "p50 us", "p99 us", "max us", "early", "lost");
    uint64_t early = 0, lost = 0, asked = 0;
    unsigned measured = 0;
    for (unsigned i = 0; i < PERCPU_MAX; i++) {
        const struct ap_row *row = &ap_rows[i];
        if (i > 0 && !row->tried)
            continue;
        if (i > 0 && !row->ran) {
            kprintf("    %3u  not measured: %s\n", i, row->why);
            continue;
        }
        measured += i > 0;
        for (int t = 0; t < AP_TIMERS; t++) {
            int id = t == 0 ? TIMER_LAPIC : TIMER_DEADLINE;
            for (unsigned wi = 0; wi < AP_WAITS && wi < wait_count; wi++) {
                const struct cell *c = i == 0 ? &timers[id].cell[wi][2] : &row->cell[t][wi][2];
                if (!c->ran)
                    continue;
                if (c->came)
                    kprintf("    %3u  %-12s %-5s %4u %8s %8s %8s %5llu %4u\n", i, timer_name[id], waits[wi].name, c->came, us_cell(a, c->s.p50),
                            us_cell(b, c->s.p99), us_cell(m, c->s.max), (unsigned long long)c->s.early, c->lost);
                else
                    kprintf("    %3u  %-12s %-5s %4u %8s %8s %8s %5s %4u\n", i, timer_name[id], waits[wi].name, 0u, "-", "-", "-", "-", c->lost);
                if (i == 0)
                    continue;
                for (unsigned di = 0; di < DELAYS; di++) {
                    const struct cell *d = &row->cell[t][wi][di];
                    if (!d->ran)
                        continue;
                    record_cell(i, id, wi, di, d);
                    early += d->s.early;
                    lost += d->lost;
                    asked += d->asked;
                }
            }
        }
    }
    if (early)
        check_fail("timer interrupts: every CPU", "%llu of %llu interrupts came before their deadline", (unsigned long long)early,
                   (unsigned long long)asked);
    else if (lost)
        check_fail("timer interrupts: every CPU", "%llu of %llu interrupts never came", (unsigned long long)lost, (unsigned long long)asked);
    else if (measured < tried)
        check_skip("timer interrupts: every CPU", "%u of %u other CPUs measured: none early, none lost", measured, tried);
    else
        check_pass("timer interrupts: every CPU", "%u other CPU(s), %llu interrupts, none early, none lost", measured,
                   (unsigned long long)asked);
}

static void timers_report(void)
{
    kprintf("\n== Timer interrupts ==\n");
    if (skipped_all) {
        kprintf("  Not measured: %s\n", skipped_why);
        check_skip("timer interrupts", "%s", skipped_why);
        fmt_format(results.timer_choice, sizeof results.timer_choice, "not measured: %s", skipped_why);
        return;
    }
    kprintf("  How late the handler runs after the deadline a timer was armed for:\n"
            "  the TSC read at the interrupt stub's entry minus the deadline, as\n"
            "  cyclictest measures, with no OS in between. busy = spinning with\n"
            "  interrupts on; hlt and mwait = idle. Figures in microseconds.\n");
    report_rates();
    if (mwait_note[0])
        kprintf("  %s\n", mwait_note);
    if (errata_note[0])
        kprintf("  TSC-deadline errata: %s\n", errata_note);
    for (int id = 0; id < TIMER_COUNT; id++)
        report_timer(id);
    report_every_cpu();
    if (faulted) {
        kprintf("  A CPU exception ended the %s waits: %s\n", fault_where, fault.text);
        check_fail("timer waits", "%s waits faulted: %s", fault_where, fault.text);
    }
    struct record r;
    record_begin(&r, "interrupts");
    record_u64(&r, "unexpected", unexpected_seen);
    if (unexpected_seen)
        record_u64(&r, "last_unexpected_vector", last_unexpected);
    record_u64(&r, "spurious", spurious_seen);
    record_str(&r, "mwait", mwait_note);
    if (errata_note[0])
        record_str(&r, "tsc_deadline_errata", errata_note);
    emit(&r);
    if (unexpected_seen)
        check_fail("unexpected interrupts", "%llu interrupts no one armed arrived (last vector 0x%x)", (unsigned long long)unexpected_seen,
                   last_unexpected);
    else
        check_pass("unexpected interrupts", "none (%llu on the spurious vector)", (unsigned long long)spurious_seen);
    report_choice();
}

const struct experiment exp_timers = {
    .name = "timers",
    .what = "timer interrupt lateness: LAPIC, TSC-deadline, HPET, PIT; busy and idle",
    .needs_tsc = true,
    .measure = timers_measure,
    .report = timers_report,
};

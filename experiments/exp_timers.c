/* Experiment "timers", measurement: interrupt lateness of the LAPIC, TSC-deadline, HPET and PIT timers, busy and idle, on every CPU. */
#include "../drivers/cpu.h"
#include "../drivers/cpuinfo.h"
#include "../drivers/hpet.h"
#include "../drivers/lapic.h"
#include "../drivers/pit.h"
#include "../kernel/discover.h"
#include "../kernel/interrupts.h"
#include "../kernel/probe.h"
#include "../kernel/progress.h"
#include "../kernel/reads.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/format.h"
#include "../lib/latency.h"
#include "../lib/string.h"
#include "../lib/timer_analysis.h"
#include "../lib/timer_deadline.h"
#include "../lib/unwrap.h"
#include "exp_timers_state.h"
#include "exp_timers_setup.h"
#include "experiment.h"

/* When I ask for an event at TSC time T, when does my code run? Each timer
   is armed for T (its own ticks converted with the rate measured here
   against the TSC, rounded so that a rate error cannot make it fire early),
   and the TSC is read by the first instructions of the interrupt stub
   (boot/irq.asm). Lateness = that reading - T, kept for many events at
   several delays and in several ways of waiting: spinning with interrupts
   on, HLT, and MWAIT with each C-state hint CPUID leaf 5 enumerates. What
   cyclictest does under Linux and kvm-unit-tests' tscdeadline_latency does
   in a guest, without an OS in between.

   Timers: the local APIC timer one-shot and in TSC-deadline mode (Intel
   SDM vol. 3A, 11.5.4 and 11.5.4.1), HPET comparator 0 through the I/O
   APIC or FSB delivery (IA-PC HPET 1.0a, 2.3.8-2.3.9), PIT channel 0 on
   IRQ 0 (8254 mode 0). Interrupts are on only inside this experiment's
   waits; every wait is bounded by the TSC, and an idle wait additionally
   by a second timer (the watchdog) so that HLT cannot sleep forever. */

#define MAX_EVENTS 1024             /* per cell, at most (soak) */
#define LOST_IN_A_ROW 3             /* a cell stops after this many never came */
#define TIMERS_AWAY_LATE_MS 10      /* a wait ending this far past its bound or watchdog: the machine was away */
#define PIT_WATCHDOG_MAX 60000      /* PIT ticks: channel 0 counts 16 bits */
#define TIMERS_AWAY_CAP_MS 10000    /* a busy wait's bound moves out by time away, up to this */
#define AP_JOB_SLACK_MS 2000        /* an AP job's end: its cells' budgets, its rate windows and this */

struct timers_state timers_state;

static const uint8_t timer_vector[TIMER_COUNT] = {VEC_TIMER_LAPIC, VEC_TIMER_LAPIC, VEC_TIMER_HPET, VEC_TIMER_PIT};
static uint64_t delay_ticks[TIMER_DELAYS];
static uint64_t hpet_target;        /* the comparator value last armed */
static int64_t samples[MAX_EVENTS];
static int64_t widths[MAX_EVENTS];  /* each event's fire window (lib/timer_deadline.h) */
static uint64_t scratch[MAX_EVENTS];

/* --- arming: the deadline T asked for is the TSC read just before the
   write that arms plus the delay; the count was pushed late (the rate
   margin), so the device cannot fire before T unless its rate is wrong.
   Lateness is measured from the instant the device fires by its own
   semantics and tick (lib/timer_deadline.h), from the TSC read just before
   (t0) and after (t1) the access that sets it going --- */

struct armed {
    uint64_t t0, t1, count;  /* count: the ticks armed (the TSC-deadline: the target TSC) */
    uint64_t device;         /* the HPET counter read; else the count */
};

static const enum timer_fire_mode fire_mode[TIMER_COUNT] = {TIMER_FIRE_LAPIC_ONESHOT, TIMER_FIRE_TSC_DEADLINE, TIMER_FIRE_HPET_MATCH,
                                                            TIMER_FIRE_PIT_MODE0};

static inline uint64_t arm(int id, unsigned di, uint64_t count, struct armed *a)
{
    const struct lapic *l = &smp.lapic;
    const struct hpet *h = &discovered.hpet;
    uint64_t t0;
    a->count = a->device = count;
    switch (id) {
    case TIMER_LAPIC:
        t0 = rdtsc();
        lapic_write(l, LAPIC_TIMER_INITIAL, (uint32_t)count);
        a->t1 = rdtsc();
        a->t0 = t0;
        return t0 + (di < TIMER_DELAYS ? delay_ticks[di] : 0);
    case TIMER_DEADLINE:
        t0 = rdtsc();
        /* raw inside the timed arm: setup_lapic_timers wrote it through the
           safe path first, and only then is deadline mode usable */
        wrmsr(MSR_TSC_DEADLINE, t0 + count);
        a->t0 = a->t1 = t0;
        a->count = a->device = t0 + count;
        return t0 + count;
    case TIMER_HPET: {
        t0 = rdtsc();
        uint64_t now = hpet_counter(h);
        a->t1 = rdtsc();
        hpet_target = h->t0_64bit ? now + count : (uint32_t)(now + count);
        hpet_write64(h, HPET_TIMER_COMPARATOR(0), hpet_target);
        a->t0 = t0;
        a->device = now;
        return t0 + (di < TIMER_DELAYS ? delay_ticks[di] : 0);
    }
    case TIMER_PIT:
        /* lo/hi access: the count starts with its high byte's write */
        outb(PIT_COMMAND, PIT_SELECT_CH0 | PIT_ACCESS_LOHI | PIT_MODE_TERMINAL);
        outb(PIT_CH0_DATA, (uint8_t)count);
        t0 = rdtsc();
        outb(PIT_CH0_DATA, (uint8_t)(count >> 8));
        a->t1 = rdtsc();
        a->t0 = t0;
        return t0 + (di < TIMER_DELAYS ? delay_ticks[di] : 0);
    }
    return 0;
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
    case TIMER_HPET:
        return timer_distance(hpet_counter(h), hpet_target, h->t0_64bit) < 0;
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
static uint64_t away_late_ticks;           /* a wait that ends this far past what should have ended it was away */
/* the second clock every wait is checked against (the best reference:
   under KVM a pause stops QEMU's HPET and PM timer, the TSC runs on) */
static struct read_src ref_src;
static struct unwrap_params ref_up;
static bool have_ref;

struct ref_reading {
    uint64_t v, a, b;
    bool valid;
};
/* The boot CPU's last reading of the reference after a wait, kept from
   cell to cell and wait to wait, so that a pause between two cells is seen
   as one between events. Each other CPU keeps its own in its job (its TSC
   need not agree, and a CPU left behind by its job's time limit must not
   write the boot CPU's). */
static struct ref_reading bsp_ref_prev;

/* TSC ticks the reference stood still while the TSC ran between a reading
   v0 at [a0, b0] and v1 at [a1, b1] (unwrapped by lib/unwrap.h; a step too
   long to unwrap counts whole). Over the least TSC time, b0 to a1; pass
   b0 = a0 and a1 = b1 for the most, brackets included. */
static uint64_t ref_still(uint64_t v0, uint64_t a0, uint64_t b0, uint64_t v1, uint64_t a1, uint64_t b1)
{
    struct step stp;
    unwrap_step(&ref_up, v0, a0 ? a0 : b0, b0, v1, a1, b1 ? b1 : a1, &stp);
    if (stp.kind == STEP_GAP)
        return a1 - b0;
    if (stp.kind != STEP_NORMAL && stp.kind != STEP_SLOW)
        return 0;
    return timer_stood_still_tsc(stp.advance, a0, b0, a1, b1, timers_state.ref_per_tsc, timers_state.ref_per_tsc_u);
}

/* Interrupts on only here. Returns whether vector came (its count moved
   from before) by TSC bound. A busy wait that sees the TSC step by more
   than 1 ms between two of its reads was away (a paused VM, a preempted
   host, an SMI): the bound moves out by that time, up to 10 s in all, so an
   interrupt that comes late because the machine stopped is late, not lost.
   *away tells whether that happened. */
static bool wait_for(uint8_t vector, uint64_t before, const struct timer_wait *w, uint64_t bound, bool *away, uint64_t *gap_max)
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
            if (now - last > gap_ticks) {
                *away = true;
                *gap_max = now - last > *gap_max ? now - last : *gap_max;
                if (extended < away_cap_ticks) {
                    bound += now - last;
                    extended += now - last;
                }
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

static int watchdog_for(int id) { return timer_watchdog_for(timers_state.timer, id, timers_pin_shared()); }

/* One cell: events of timer id armed di ahead (count: its ticks for that,
   at id_per_tsc +- id_per_tsc_u of its ticks per TSC tick), waiting in the
   wi-th way, into *c. With end_tsc (not 0) no event starts whose wait could
   run past it: true when that cut the cell short. */
static bool run_cell_into(int id, unsigned wi, unsigned di, uint32_t events, uint64_t budget_ticks, uint64_t count, struct xf id_per_tsc,
                          struct xf id_per_tsc_u, uint64_t end_tsc, struct timer_cell *c, struct ref_reading *ref_prev)
{
    const struct timer_result *timers = timers_state.timer;
    const struct timer_wait *w = &timers_state.wait[wi];
    uint8_t vec = timer_vector[id];
    uint64_t bound_after = timer_bound_ticks(delay_ticks[di], ms_to_tsc(TIMERS_BOUND_MIN_MS));
    int wd = (w->hlt || w->mwait) ? watchdog_for(id) : -1;
    uint64_t wd_ticks = 0, wd_span = 0;
    if (wd >= 0) {
        /* past the whole bound, or as far as the watchdog can count (the
           PIT: 16 bits); an idle wait re-arms it each time it fires first */
        uint64_t span = delay_ticks[di] + bound_after + ms_to_tsc(1);
        if (wd == TIMER_PIT) {
            uint64_t most = timer_tsc_ticks_of(timers[TIMER_PIT].per_tsc, PIT_WATCHDOG_MAX);
            span = span < most ? span : most;
        }
        wd_ticks = wd == TIMER_DEADLINE ? span : timer_ticks_for(timers[wd].per_tsc, timers[wd].per_tsc_u, span);
        wd_span = span;
    }
    timers_route_shared_pin(id, wd);
    *c = (struct timer_cell){.ran = true};
    /* the clock it counts: the APIC timer's at divide by 1 (lapic_mode) */
    struct xf tsc_per_tick = id == TIMER_DEADLINE ? xf_from_u64(1) : timer_tsc_per_tick(id_per_tsc, 1);
    if (id != TIMER_DEADLINE)
        c->rate_u = timer_fire_rate_u(count, tsc_per_tick, id_per_tsc_u, TIMER_RATE_MARGIN_SIGMAS);
    /* an event's wait, at most: its delay and bound, or the watchdog's span
       if that is longer (an idle wait re-arms it), and the busy wait once
       more after a stop (the time away itself is not foreseeable) */
    uint64_t event_most = delay_ticks[di] + 2 * bound_after + (wd_span > bound_after ? wd_span : 0) + ms_to_tsc(1);
    bool cut = false;
    uint32_t early = 0;
    struct armed armed = {0}, wd_armed = {0};
    uint32_t in_a_row = 0, n = 0;
    uint64_t start = rdtsc();
    lapic_mode(id);
    if (wd >= 0)
        lapic_mode(wd);
    for (uint32_t e = 0; e < events && rdtsc() - start < budget_ticks; e++) {
        if (end_tsc && (int64_t)(end_tsc - rdtsc()) < (int64_t)event_most) {
            cut = true;
            break;
        }
        drain();
        if (wd >= 0)
            (void)arm(wd, TIMER_DELAYS, wd_ticks, &wd_armed);
        uint64_t ra0 = 0, rb0 = 0, rv0 = have_ref ? read_bracketed(&ref_src, &ra0, &rb0) : 0;
        if (have_ref && ref_prev->valid) {
            /* between events too, the reads' own brackets included (a pause
               lands where the CPU leaves the guest: often at an HPET access,
               the watchdog's or these reads): it touches no event's figure,
               but it is said */
            uint64_t still = ref_still(ref_prev->v, 0, ref_prev->a, rv0, rb0, 0);
            if (still > gap_ticks) {
                timers_state.between_stops++;
                timers_state.between_stop_max = still > timers_state.between_stop_max ? still : timers_state.between_stop_max;
            }
        }
        uint64_t before = irq.count[vec];
        uint64_t deadline = arm(id, di, count, &armed);
        if (id == TIMER_HPET) {
            uint64_t now = hpet_counter(&discovered.hpet);
            uint64_t cmp = hpet_read64(&discovered.hpet, HPET_TIMER_COMPARATOR(0));
            if (timer_distance(cmp, now, discovered.hpet.t0_64bit) <= 0 && irq.count[vec] == before)
                c->passed_arming++;
        }
        c->asked++;
        bool came, away, was_away = false;
        uint64_t gap_max = 0;
        for (;;) {
            came = wait_for(vec, before, w, deadline + bound_after, &away, &gap_max);
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
            (void)arm(wd, TIMER_DELAYS, wd_ticks, &wd_armed);
        }
        away = was_away;
        /* what should have ended the wait, and when: its bound, or for an
           idle wait the watchdog last armed, if that is due later (the PIT
           counts 50 ms at most and is re-armed each time it fires first) */
        uint64_t due = deadline + bound_after, ended = rdtsc();
        if (wd >= 0 && wd_armed.t1 + wd_span > due)
            due = wd_armed.t1 + wd_span;
        /* (a busy wait that saw the TSC step has moved its bound out by
           the step, and is marked away already) */
        if (!came && !was_away && (int64_t)(ended - due) > (int64_t)away_late_ticks) {
            /* the wait ended well past what should have ended it: the
               machine was away. A stop while arming leaves a bound already
               passed when the wait begins; one while halted wakes this CPU
               to every due timer at once, the watchdog's perhaps first.
               Either way this interrupt may be on its way: one more busy
               wait, as long as the bound */
            static const struct timer_wait busy = {.name = "busy"};
            uint64_t again = ended + bound_after;
            bool again_away = false;
            away = true;
            gap_max = ended - due > gap_max ? ended - due : gap_max;
            for (;;) {
                came = wait_for(vec, before, &busy, again, &again_away, &gap_max);
                if (!came || !stray(id))
                    break;
                c->stray++;
                before = irq.count[vec];
            }
        }
        if (wd >= 0)
            timers_disarm(wd);
        /* an arming that took over 1 ms by the TSC was a stop too: the
           event's figure would hold it (its window is that wide) */
        if (armed.t1 - armed.t0 > gap_ticks) {
            away = true;
            gap_max = armed.t1 - armed.t0 > gap_max ? armed.t1 - armed.t0 : gap_max;
        }
        if (away) {
            timers_state.busy_gaps++;
            timers_state.busy_gap_max = gap_max > timers_state.busy_gap_max ? gap_max : timers_state.busy_gap_max;
        }
        bool by_ref = false;
        if (have_ref) {
            /* every wait, idle ones too: did the reference stand still while the TSC ran? */
            uint64_t ra1, rb1, rv1 = read_bracketed(&ref_src, &ra1, &rb1);
            uint64_t still = ref_still(rv0, ra0, rb0, rv1, ra1, rb1);
            by_ref = still > gap_ticks;
            if (by_ref) {
                timers_state.ref_stops++;
                timers_state.ref_stop_max = still > timers_state.ref_stop_max ? still : timers_state.ref_stop_max;
            }
            *ref_prev = (struct ref_reading){.v = rv1, .a = ra1, .b = rb1, .valid = true};
        }
        if (!came) {
            timers_disarm(id);
            c->lost++;
            if (++in_a_row >= LOST_IN_A_ROW) {
                c->stopped = true;
                break;
            }
            continue;
        }
        in_a_row = 0;
        uint64_t entry = irq.entry_tsc[vec];
        struct timer_fire f = timer_fire_of(fire_mode[id], armed.t0, armed.t1, armed.count, tsc_per_tick);
        /* every wait ends at its bound (an idle one by the watchdog too): an
           event later than that, with no gap seen, means neither the timer
           nor the wait got the CPU, which only a stop of the whole machine
           explains (every clock ran on), as between arming and waiting */
        bool beyond = !away && !by_ref && (int64_t)(entry - deadline) > (int64_t)bound_after;
        if (beyond) {
            timers_state.idle_beyond++;
            timers_state.idle_beyond_max = entry - deadline > timers_state.idle_beyond_max ? entry - deadline : timers_state.idle_beyond_max;
        }
        if (away || by_ref || beyond) {
            /* late because the machine was away: counted, left out of the figures */
            c->away++;
            c->away_reference += by_ref;
            int64_t late = (int64_t)(entry - f.earliest);
            c->away_max = late > c->away_max ? late : c->away_max;
            continue;
        }
        widths[n] = (int64_t)f.width;
        if ((int64_t)(entry - deadline) < 0 && !early++)
            c->early_raw = (struct timer_early_raw){.asked = deadline, .earliest = f.earliest, .t0 = armed.t0, .t1 = armed.t1,
                                                    .count = armed.count, .entry = entry, .device = armed.device};
        samples[n++] = (int64_t)(entry - f.earliest);
    }
    c->came = n;
    latency_summarise(samples, n, scratch, timer_bin_edge(results.tsc_estimate_hz), &c->s);
    c->s.early = early; /* before the time asked for; s.bins[0]: before the instant it fires */
    struct latency_summary ws;
    latency_summarise(widths, n, scratch, 1, &ws);
    c->width_p50 = (uint64_t)ws.p50;
    c->width_max = (uint64_t)ws.max;
    return cut;
}

static void run_cell(int id, unsigned wi, unsigned di, uint32_t events, uint64_t budget_ticks)
{
    struct timer_result *t = &timers_state.timer[id];
    uint32_t n;
    uint64_t budget;
    timer_cell_plan(events, budget_ticks, timer_main_cell(&timers_state.wait[wi], di), MAX_EVENTS, &n, &budget);
    (void)run_cell_into(id, wi, di, n, budget, t->count[di], t->per_tsc, t->per_tsc_u, 0, &t->cell[wi][di], &bsp_ref_prev);
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
        struct timer_result *t = &timers_state.timer[id];
        if (!t->usable)
            continue;
        if (j->wi > 0 && watchdog_for(id) < 0) {
            if (!t->idle_why[0])
                fmt_format(t->idle_why, sizeof t->idle_why, "no second timer came every time in busy waits: an idle wait could not be bounded");
            continue;
        }
        j->current = id;
        for (unsigned di = 0; di < TIMER_DELAYS; di++)
            run_cell(id, j->wi, di, j->events, j->budget);
        timers_disarm(id);
        if (j->wi == 0) {
            t->clean = true;
            for (unsigned di = 0; di < TIMER_DELAYS; di++)
                t->clean = t->clean && t->cell[0][di].lost == 0;
        }
    }
    j->current = -1;
}

static void stop_everything(void)
{
    irq_disable();
    timers_stop();
    drain();
}

/* --- every other CPU: its own local APIC timer, one-shot and TSC-deadline,
   busy and HLT (the HPET or PIT, routed to that CPU, as the watchdog) --- */

struct ap_job {
    int index;
    uint32_t events;
    uint64_t budget;
    uint64_t end_tsc;   /* no event starts whose wait could run past this (the boot CPU's TSC, read here too: the cpus phase measures how far they agree) */
};

static void ap_timer_job(void *p)
{
    struct ap_job *j = p;
    struct timers_ap_row *row = &timers_state.ap[j->index];
    struct ref_reading ref_prev = {0}; /* this CPU's own (bsp_ref_prev) */
    const struct timer_result *timers = timers_state.timer;
    const struct lapic *l = &smp.lapic; /* the same mode on every CPU; the registers are this CPU's */
    uint32_t svr = lapic_read(l, LAPIC_SVR);
    lapic_write(l, LAPIC_SVR, (svr & ~LAPIC_SVR_VECTOR_MASK) | LAPIC_SVR_ENABLE | VEC_SPURIOUS);
    lapic_write(l, LAPIC_TPR, 0);
    lapic_timer_free_run(l);
    if (!timers_rate_against_tsc(COUNTER_LAPIC, &row->per_tsc, &row->per_tsc_u, &row->window)) {
        fmt_format(row->why, sizeof row->why, "its APIC timer's count did not move against its TSC");
        lapic_write(l, LAPIC_SVR, svr);
        return;
    }
    for (unsigned wi = 0; wi < TIMERS_AP_WAITS && wi < timers_state.wait_count; wi++)
        for (int t = 0; t < TIMERS_AP_TIMERS; t++) {
            int id = t == 0 ? TIMER_LAPIC : TIMER_DEADLINE;
            if (!timers[id].usable || (wi > 0 && watchdog_for(id) < 0))
                continue;
            /* its own APIC timer's rate; the TSC-deadline counts the TSC */
            struct xf per_tsc = id == TIMER_DEADLINE ? timers[id].per_tsc : row->per_tsc;
            struct xf per_tsc_u = id == TIMER_DEADLINE ? timers[id].per_tsc_u : row->per_tsc_u;
            for (unsigned di = 0; di < TIMER_DELAYS; di++) {
                row->cells++;
                uint64_t count = id == TIMER_DEADLINE ? delay_ticks[di] : timer_ticks_for(per_tsc, per_tsc_u, delay_ticks[di]);
                if (run_cell_into(id, wi, di, j->events, j->budget, count, per_tsc, per_tsc_u, j->end_tsc, &row->cell[t][wi][di], &ref_prev))
                    row->cells_cut++;
            }
            timers_disarm(id);
        }
    irq_disable();
    lapic_timer_free_run(l);
    lapic_write(l, LAPIC_SVR, svr);
    row->ran = true;
}

static void measure_aps(const struct profile *p)
{
    if (!timers_state.timer[TIMER_LAPIC].usable)
        return;
    smp_start();
    uint32_t events = p->timer_events < MAX_EVENTS ? p->timer_events : MAX_EVENTS;
    uint64_t budget = ms_to_tsc(p->timer_cell_ms);
    /* Its end: every cell at its budget, its rate windows, and slack. A cell
       ends at its budget plus the event under way, which under load (an
       emulated CPU whose host thread waits for a core) can be its whole
       bound, so the job itself starts no event whose wait could run past
       its end. The boot CPU waits past the end as long as the last event
       can take (its bound moved out by time away, then waited for once
       more) and, from the end on, wakes the CPU every 10 ms (smp_wait_past):
       an idle wait whose interrupts never reach that CPU ends at its next
       wake-up, past its bound. */
    uint64_t job_ticks = budget * TIMERS_AP_TIMERS * TIMERS_AP_WAITS * TIMER_DELAYS +
                         ms_to_tsc(TIMERS_RATE_WINDOW_MS * TIMERS_RATE_TRIES + AP_JOB_SLACK_MS);
    uint64_t forced_ms; /* timers_ap_ms=: a known answer for a job cut at its end */
    if (cmdline_get_u64(&boot_cmdline, "timers_ap_ms", &forced_ms))
        job_ticks = ms_to_tsc(forced_ms);
    uint64_t grace = ms_to_tsc(TIMERS_AWAY_CAP_MS + 3 * TIMERS_BOUND_MIN_MS + 1000) +
                     3 * timer_bound_ticks(delay_ticks[TIMER_DELAYS - 1], 0);
    for (uint32_t i = 1; i < smp.running && i < PERCPU_MAX; i++) {
        struct timers_ap_row *row = &timers_state.ap[i];
        *row = (struct timers_ap_row){.tried = true};
        const struct smp_cpu *cpu = smp_cpu_of((int)i);
        if (!cpu) {
            fmt_format(row->why, sizeof row->why, "not running");
            continue;
        }
        timers_route_to(cpu->apic_id);
        row->job_ms = (uint32_t)(job_ticks / ms_to_tsc(1));
        struct ap_job j = {.index = (int)i, .events = events, .budget = budget, .end_tsc = rdtsc() + job_ticks};
        bool job_faulted = false;
        struct probe_fault f;
        uint64_t t0 = rdtsc();
        bool posted = smp_post((int)i, ap_timer_job, &j);
        bool done = posted && smp_wait_past((int)i, job_ticks, grace, &job_faulted, &f);
        row->took_ms = (uint32_t)((rdtsc() - t0) / ms_to_tsc(1));
        timers_route_to(smp.bsp_apic_id);
        if (!posted)
            fmt_format(row->why, sizeof row->why, "it takes no jobs: %s", cpu->reason[0] ? cpu->reason : "busy");
        else if (!done)
            fmt_format(row->why, sizeof row->why, "its job did not end within %llu ms of its %u ms: the CPU is left behind",
                       (unsigned long long)(grace / ms_to_tsc(1)), row->job_ms);
        else if (job_faulted)
            fmt_format(row->why, sizeof row->why, "a CPU exception: %s", f.text);
        if (!done || job_faulted)
            row->ran = false;
    }
    if (!experiment_chosen("cpus") && !experiment_chosen("stolen"))
        smp_park_all(); /* nothing else needs them; a later smp_start does nothing */
}

static void timers_measure(const struct profile *p)
{
    struct timers_state *st = &timers_state;
    memset(st, 0, sizeof *st);
    uint64_t phase_start = rdtsc();
    st->ref_counter = -1;
    st->fault_where = "";
    bsp_ref_prev = (struct ref_reading){0};
    const char *why = "";
    if (!irq_setup(&why)) {
        st->skipped_all = true;
        fmt_format(st->skipped_why, sizeof st->skipped_why, "no interrupts without a local APIC: %s", why);
        return;
    }
    for (unsigned di = 0; di < TIMER_DELAYS; di++)
        delay_ticks[di] = timer_delay_ticks(results.tsc_estimate_hz, timer_delay_ns[di]);
    gap_ticks = ms_to_tsc(1);
    away_cap_ticks = ms_to_tsc(TIMERS_AWAY_CAP_MS);
    away_late_ticks = ms_to_tsc(TIMERS_AWAY_LATE_MS);
    timers_setup(&boot_cpu.info);
    have_ref = st->ref_counter >= 0 && counter_source(st->ref_counter, &ref_src);
    if (have_ref)
        unwrap_params_of(st->ref_counter, &ref_up);
    for (int id = 0; id < TIMER_COUNT; id++) {
        struct timer_result *t = &st->timer[id];
        if (t->usable)
            for (unsigned di = 0; di < TIMER_DELAYS; di++)
                t->count[di] = id == TIMER_DEADLINE ? delay_ticks[di] : timer_ticks_for(t->per_tsc, t->per_tsc_u, delay_ticks[di]);
    }
    for (int id = 0; id < TIMER_COUNT; id++)
        irq_expect(timer_vector[id], true);
    uint64_t unexpected0 = irq.unexpected, spurious0 = irq.spurious;
    for (unsigned wi = 0; wi < st->wait_count; wi++) {
        if (wi > 0) /* the idle waits begin: a mark a test can stop the machine at */
            progress("timers", wi * 100 / st->wait_count, PROGRESS_UNKNOWN);
        struct wait_job j = {.wi = wi, .events = p->timer_events < MAX_EVENTS ? p->timer_events : MAX_EVENTS,
                             .budget = ms_to_tsc(p->timer_cell_ms), .current = -1};
        if (!probe_run(wait_job_run, &j, &st->fault)) {
            stop_everything();
            if (!st->faulted) {
                st->faulted = true;
                st->fault_where = st->wait[wi].name;
            }
            /* a wait mode that faults (MWAIT where it is not allowed) is
               dropped for every timer; the others go on */
            for (int id = 0; id < TIMER_COUNT; id++)
                for (unsigned di = 0; di < TIMER_DELAYS; di++)
                    st->timer[id].cell[wi][di].ran = false;
            if (wi == 0)
                break;
        }
    }
    if (!st->faulted)
        measure_aps(p);
    stop_everything();
    st->phase_ticks = rdtsc() - phase_start;
    st->cell_ms = p->timer_cell_ms;
    st->unexpected = irq.unexpected - unexpected0;
    st->spurious = irq.spurious - spurious0;
    st->last_unexpected = irq.last_unexpected;
}

const struct experiment exp_timers = {
    .name = "timers",
    .what = "timer interrupt lateness: LAPIC, TSC-deadline, HPET, PIT; busy and idle",
    .needs_tsc = true,
    .measure = timers_measure,
    .report = timers_report,
};

/* Experiment "timers", report: rates, a lateness table per timer and per CPU, the timer_* records, the checks and the choice. */
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/percpu.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/counters.h"
#include "../lib/format.h"
#include "../lib/latency.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "../lib/timer_analysis.h"
#include "../lib/unwrap.h"
#include "../lib/xf.h"
#include "exp_timers_setup.h"
#include "exp_timers_state.h"

static const char *const timer_name[TIMER_COUNT] = {"lapic", "tsc_deadline", "hpet", "pit"};
static const char *const timer_title[TIMER_COUNT] = {
    "local APIC timer, one-shot", "local APIC timer, TSC-deadline mode", "HPET comparator 0", "PIT channel 0 (IRQ 0)"};

static const struct timers_state *const st = &timers_state;

static const char *us_cell(char buf[FMT_FIXED_CHARS], int64_t ticks)
{
    struct xf us = xf_div(tsc_ticks_to_ns(xf_from_i64(ticks)), xf_from_u64(1000));
    return xs(buf, us, xf_cmp(xf_abs(us), xf_from_u64(10000)) < 0 ? 1 : 0);
}

static void record_ns(struct record *r, const char *key, int64_t ticks)
{
    record_i64(r, key, xf_to_fixed(tsc_ticks_to_ns(xf_from_i64(ticks)), 0));
}

static struct xf rate_hz(const struct timer_result *t) { return xf_mul(t->per_tsc, results.tsc_hz); }

static void report_rates(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    const struct timer_result *l = &st->timer[TIMER_LAPIC];
    if (!l->rate_known)
        return;
    struct xf hz = rate_hz(l);
    struct xf u = timer_rate_u_ppm(l->per_tsc_u, results.tsc_uncertainty_ppm);
    kprintf("  APIC timer rate (divide by 1): %s MHz +- %s ppm against the TSC", xs(a, xf_div(hz, xf_from_u64(1000000)), 6),
            xs(b, u, 0));
    struct record r;
    record_begin(&r, "apic_timer");
    record_xf_fixed(&r, "hz", hz, 3);
    record_xf_fixed(&r, "uncertainty_ppm", u, 1);
    record_str(&r, "nominal_source", counters[COUNTER_LAPIC].nominal_source);
    int ref = st->ref_counter;
    if (ref >= 0) {
        /* against the reference directly: (apic/tsc) / (ref/tsc) * ref's nominal */
        struct xf vs_ref, u_ref;
        timer_rate_vs_reference(l->per_tsc, l->per_tsc_u, st->ref_per_tsc, st->ref_per_tsc_u, nominal_hz(ref), &vs_ref, &u_ref);
        kprintf(";\n  and %s MHz +- %s ppm against the %s (nominal rate, +-%u ppm)", xs(c, xf_div(vs_ref, xf_from_u64(1000000)), 6),
                xs(d, u_ref, 0), counters[ref].name, counters[ref].nominal_accuracy_ppm);
        record_str(&r, "reference", counters[ref].name);
        record_xf_fixed(&r, "hz_vs_reference", vs_ref, 3);
        record_xf_fixed(&r, "uncertainty_vs_reference_ppm", u_ref, 1);
        record_u64(&r, "reference_nominal_accuracy_ppm", counters[ref].nominal_accuracy_ppm);
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
static void record_cell(unsigned cpu, int id, unsigned wi, unsigned di, const struct timer_cell *c)
{
    struct record tr;
    record_begin(&tr, "timer_latency");
    record_u64(&tr, "cpu", cpu);
    record_str(&tr, "timer", timer_name[id]);
    record_str(&tr, "wait", st->wait[wi].name);
    if (st->wait[wi].mwait)
        record_hex(&tr, "mwait_hint", st->wait[wi].hint);
    record_u64(&tr, "delay_ns", timer_delay_ns[di]);
    record_u64(&tr, "asked", c->asked);
    record_u64(&tr, "n", c->came);
    if (c->came) {
        record_ns(&tr, "min_ns", c->s.min);
        record_ns(&tr, "p50_ns", c->s.p50);
        record_i64(&tr, "mean_ns", xf_to_fixed(tsc_ticks_to_ns(c->s.mean), 0));
        /* a percentile only where the sample carries it */
        if (c->came >= TIMER_P99_MIN_EVENTS)
            record_ns(&tr, "p99_ns", c->s.p99);
        else
            record_null(&tr, "p99_ns");
        if (c->came >= TIMER_P999_MIN_EVENTS)
            record_ns(&tr, "p999_ns", c->s.p999);
        else
            record_null(&tr, "p999_ns");
        record_ns(&tr, "max_ns", c->s.max);
    }
    record_u64(&tr, "early", c->s.early);
    record_u64(&tr, "lost", c->lost);
    record_u64(&tr, "stray", c->stray);
    record_u64(&tr, "away", c->away);
    record_u64(&tr, "away_reference", c->away_reference);
    if (c->away)
        record_ns(&tr, "away_max_ns", c->away_max);
    if (id == TIMER_HPET)
        record_u64(&tr, "passed_while_arming", c->passed_arming);
    if (c->came) {
        record_ns(&tr, "quantisation_ns", (int64_t)c->width_max);
        record_ns(&tr, "quantisation_p50_ns", (int64_t)c->width_p50);
        record_ns(&tr, "rate_uncertainty_ns", (int64_t)c->rate_u);
        record_u64(&tr, "before_instant", c->s.bins[0]);
    }
    emit(&tr);
    if (c->s.early) {
        /* the first early event as read: what explains it */
        const struct timer_early_raw *e = &c->early_raw;
        struct record er;
        record_begin(&er, "timer_early");
        record_u64(&er, "cpu", cpu);
        record_str(&er, "timer", timer_name[id]);
        record_str(&er, "wait", st->wait[wi].name);
        record_u64(&er, "delay_ns", timer_delay_ns[di]);
        record_u64(&er, "early", c->s.early);
        record_u64(&er, "asked_tsc", e->asked);
        record_u64(&er, "earliest_tsc", e->earliest);
        record_u64(&er, "entry_tsc", e->entry);
        record_u64(&er, "arm_tsc_before", e->t0);
        record_u64(&er, "arm_tsc_after", e->t1);
        record_u64(&er, "count", e->count);
        record_u64(&er, id == TIMER_HPET ? "counter_read" : "count_written", e->device);
        record_ns(&er, "before_asked_ns", (int64_t)(e->asked - e->entry));
        emit(&er);
    }
}

/* One line: what a row's lateness is measured from, and how much of each
   figure may be the timer's own tick (lib/timer_deadline.h). */
static void report_instant(int id, const struct timer_result *t, struct record *r)
{
    char tick[FMT_FIXED_CHARS], q[FMT_FIXED_CHARS], qw[FMT_FIXED_CHARS], ru[FMT_FIXED_CHARS], phase[64];
    uint64_t width = 0, width_p50 = 0, rate_u = 0;
    for (unsigned wi = 0; wi < st->wait_count; wi++)
        for (unsigned di = 0; di < TIMER_DELAYS; di++) {
            const struct timer_cell *c = &t->cell[wi][di];
            if (c->ran && c->came) {
                width = c->width_max > width ? c->width_max : width;
                width_p50 = c->width_p50 > width_p50 ? c->width_p50 : width_p50;
                rate_u = c->rate_u > rate_u ? c->rate_u : rate_u;
            }
        }
    struct xf tick_ns = id == TIMER_DEADLINE ? xf_from_u64(0) : tsc_ticks_to_ns(xf_div(xf_from_u64(1), t->per_tsc));
    xs(tick, tick_ns, 1);
    xs(q, tsc_ticks_to_ns(xf_from_u64(width_p50)), 0);
    xs(qw, tsc_ticks_to_ns(xf_from_u64(width)), 0);
    xs(ru, tsc_ticks_to_ns(xf_from_u64(rate_u)), 0);
    /* the median event's window, and the widest when an arming took longer */
    if (width > 2 * width_p50)
        fmt_format(phase, sizeof phase, "phase <= %s ns (one %s ns)", q, qw);
    else
        fmt_format(phase, sizeof phase, "phase <= %s ns", qw);
    switch (id) {
    case TIMER_LAPIC:
        kprintf("    instant: its count reaches 0, N-1..N+1 ticks (%s ns) after the write\n", tick);
        break;
    case TIMER_DEADLINE:
        kprintf("    instant: the TSC reaches the deadline; no phase\n");
        break;
    case TIMER_HPET:
        kprintf("    instant: the tick (%s ns) at which the counter meets the comparator\n", tick);
        break;
    case TIMER_PIT:
        kprintf("    instant: OUT goes high, N+1 input clocks (%s ns) after the write\n", tick);
        break;
    }
    if (id != TIMER_DEADLINE)
        kprintf("    %s; margin +%s ppm: instant +- %s ns\n", phase,
                xs(tick, timer_margin_ppm(t->per_tsc_u), 0), ru);
    if (id != TIMER_DEADLINE)
        record_xf_fixed(r, "tick_ns", tick_ns, 3);
    record_ns(r, "quantisation_ns", (int64_t)width);
    record_ns(r, "quantisation_p50_ns", (int64_t)width_p50);
    record_ns(r, "rate_uncertainty_ns", (int64_t)rate_u);
}

static void report_timer(int id)
{
    const struct timer_result *t = &st->timer[id];
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
        record_hex(&r, "route_capability", st->hpet_route_caps);
    if (t->usable && t->rate_known && id != TIMER_DEADLINE) {
        record_xf_fixed(&r, "rate_hz", rate_hz(t), 3);
        record_xf_fixed(&r, "rate_margin_ppm", timer_margin_ppm(t->per_tsc_u), 1);
    }
    record_str(&r, "idle_reason", t->idle_why[0] ? t->idle_why : 0);
    if (!t->usable) {
        emit(&r);
        kprintf("    not measured: %s\n", t->why);
        check_skip(check_name(id), "not measured: %s", t->why);
        return;
    }
    report_instant(id, t, &r);
    emit(&r);
    kprintf("    %-9s %6s %4s %7s %7s %7s %7s %7s %5s %4s\n", "wait", "delay", "n", "min us", "avg us", "p50 us", "p99 us", "max us",
            "early", "lost");
    struct timer_tally tally = {0};
    bool any_max = false, main_short = false;
    for (unsigned wi = 0; wi < st->wait_count; wi++)
        for (unsigned di = 0; di < TIMER_DELAYS; di++) {
            const struct timer_cell *c = &t->cell[wi][di];
            if (!c->ran)
                continue;
            timer_tally_add(&tally, c);
            any_max = any_max || (c->came && c->came < TIMER_P99_MIN_EVENTS);
            main_short = main_short || (timer_main_cell(&st->wait[wi], di) && c->came < TIMER_P99_MIN_EVENTS);
            char delay[16];
            fmt_format(delay, sizeof delay, timer_delay_ns[di] >= 1000000 ? "%u ms" : "%u us",
                       timer_delay_ns[di] >= 1000000 ? timer_delay_ns[di] / 1000000 : timer_delay_ns[di] / 1000);
            if (c->came)
                kprintf("    %-9s %6s %4u %7s %7s %7s %7s %7s %5llu %4u%s\n", st->wait[wi].name, delay, c->came, us_cell(cells[0], c->s.min),
                        xs(cells[1], xf_div(tsc_ticks_to_ns(c->s.mean), xf_from_u64(1000)), 1), us_cell(cells[2], c->s.p50),
                        c->came >= TIMER_P99_MIN_EVENTS ? us_cell(cells[3], c->s.p99) : "=max", us_cell(cells[5], c->s.max),
                        (unsigned long long)c->s.early, c->lost,
                        c->stopped ? " stopped" : "");
            else
                kprintf("    %-9s %6s %4u %7s %7s %7s %7s %7s %5s %4u%s\n", st->wait[wi].name, delay, 0u, "-", "-", "-", "-", "-", "-", c->lost,
                        c->stopped ? " none came" : "");
            record_cell(0, id, wi, di, c);
            if (c->came) {
                struct record hr;
                record_begin(&hr, "timer_histogram");
                record_str(&hr, "timer", timer_name[id]);
                record_str(&hr, "wait", st->wait[wi].name);
                record_u64(&hr, "delay_ns", timer_delay_ns[di]);
                int64_t edge = timer_bin_edge(results.tsc_estimate_hz);
                record_array_begin(&hr, "bin_low_ns"); /* bin 0: early (below 0) */
                record_array_i64(&hr, -1);
                for (unsigned b = 1; b < LATENCY_BINS; b++)
                    record_array_i64(&hr, xf_to_fixed(tsc_ticks_to_ns(xf_from_i64(latency_bin_low(b, edge))), 0));
                record_array_end(&hr);
                record_array_begin(&hr, "counts");
                for (unsigned b = 0; b < LATENCY_BINS; b++)
                    record_array_u64(&hr, c->s.bins[b]);
                record_array_end(&hr);
                emit(&hr);
            }
        }
    if (any_max)
        kprintf("    =max: fewer than %u events, too few for a p99: the max column is the tail\n", TIMER_P99_MIN_EVENTS);
    uint64_t away = 0, away_ref = 0;
    int64_t away_max = 0;
    for (unsigned wi = 0; wi < st->wait_count; wi++)
        for (unsigned di = 0; di < TIMER_DELAYS; di++) {
            const struct timer_cell *c = &t->cell[wi][di];
            away += c->away;
            away_ref += c->away_reference;
            away_max = c->away_max > away_max ? c->away_max : away_max;
        }
    if (away)
        kprintf("    %llu event%s left out, the machine away (%llu told by the reference\n"
                "    standing still); the latest came %s us late\n",
                (unsigned long long)away, away == 1 ? "" : "s", (unsigned long long)away_ref, us_cell(cells[0], away_max));
    if (main_short)
        kprintf("    busy or hlt at 10 or 100 us took fewer than %u events within %u ms a cell:\n"
                "    no p99 there in this profile on this machine\n",
                TIMER_P99_MIN_EVENTS, st->cell_ms * TIMER_MAIN_BUDGET_NUM / TIMER_MAIN_BUDGET_DEN);
    /* wake-up cost: each idle wait's median minus the busy one's */
    bool negative = false;
    for (unsigned wi = 1; wi < st->wait_count; wi++) {
        bool any = false;
        for (unsigned di = 0; di < TIMER_DELAYS; di++) {
            const struct timer_cell *busy = &t->cell[0][di], *idle = &t->cell[wi][di];
            if (!busy->came || !idle->came)
                continue;
            if (!any)
                kprintf("    wake-up cost, %s - busy, p50 us:", st->wait[wi].name);
            kprintf("%s %s @%u%s", any ? "," : "", us_cell(cells[0], idle->s.p50 - busy->s.p50),
                    timer_delay_ns[di] >= 1000000 ? timer_delay_ns[di] / 1000000 : timer_delay_ns[di] / 1000, timer_delay_ns[di] >= 1000000 ? "ms" : "us");
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
    if (tally.stray)
        kprintf("    %llu interrupt%s came before the device reached its target: counted as\n"
                "    stray (a late or doubled delivery), not as events\n", (unsigned long long)tally.stray,
                tally.stray == 1 ? "" : "s");
    switch (timer_tally_outcome(&tally)) {
    case TIMER_EARLY:
        check_fail(check_name(id), "%llu of %llu interrupts came before their deadline", (unsigned long long)tally.early,
                   (unsigned long long)tally.asked);
        break;
    case TIMER_LOST:
        check_fail(check_name(id), "%llu of %llu interrupts never came (within %u ms or %u delays of the deadline)",
                   (unsigned long long)tally.lost, (unsigned long long)tally.asked, TIMERS_BOUND_MIN_MS, TIMER_BOUND_DELAYS);
        break;
    case TIMER_ON_TIME:
        check_pass(check_name(id), "%llu interrupts, none early, none lost", (unsigned long long)tally.asked);
        break;
    }
}

/* The timer and way of waiting to use for precise events: the lowest p99
   lateness at 100 us ahead, among timers with none early and none lost. */
static void report_choice(void)
{
    const unsigned di = TIMER_CHOICE_DELAY;
    unsigned best_w;
    int best = timer_choose(st->timer, st->wait_count, &best_w);
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
    const struct timer_cell *c = &st->timer[best].cell[best_w][di];
    char q[FMT_FIXED_CHARS], tail_what[40];
    xs(q, tsc_ticks_to_ns(xf_from_u64(c->width_max)), 0);
    bool is_max;
    int64_t tail = timer_tail(c, &is_max);
    if (is_max)
        fmt_format(tail_what, sizeof tail_what, "the max of %u", c->came);
    else
        fmt_format(tail_what, sizeof tail_what, "p99");
    char phase[64] = "";
    if (c->width_max)
        fmt_format(phase, sizeof phase, ", up to %s ns of its tick's phase besides", q);
    fmt_format(results.timer_choice, sizeof results.timer_choice, "%s, waiting %s: %s us late (p50), %s us (%s) at 100 us ahead%s",
               timer_name[best], best_w ? st->wait[best_w].name : "busy (spinning)", us_cell(a, c->s.p50), us_cell(b, tail), tail_what,
               phase);
    kprintf("\n  Verdict: for precise events here use %s, waiting %s:\n"
            "  at 100 us ahead the handler runs %s us late (p50), %s us (%s)%s\n",
            timer_name[best], best_w ? st->wait[best_w].name : "busy", us_cell(a, c->s.p50), us_cell(b, tail), tail_what,
            c->width_max ? "," : "");
    if (c->width_max)
        kprintf("  with up to %s ns of its tick's phase besides\n", q);
    record_str(&r, "timer", timer_name[best]);
    record_str(&r, "wait", st->wait[best_w].name);
    record_u64(&r, "delay_ns", timer_delay_ns[di]);
    record_ns(&r, "p50_ns", c->s.p50);
    if (is_max)
        record_null(&r, "p99_ns");
    else
        record_ns(&r, "p99_ns", c->s.p99);
    record_ns(&r, "max_ns", c->s.max);
    record_u64(&r, "n", c->came);
    record_ns(&r, "quantisation_ns", (int64_t)c->width_max);
    emit(&r);
}


/* One line per CPU, timer and wait at 100 us ahead; the records hold every
   delay. CPU 0's rows repeat its tables above, for comparison. */
static void report_every_cpu(void)
{
    unsigned tried = 0;
    for (unsigned i = 1; i < PERCPU_MAX; i++)
        tried += st->ap[i].tried;
    if (!tried)
        return;
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], m[FMT_FIXED_CHARS];
    kprintf("\n  Every CPU: its own APIC timer, 100 us ahead (the records hold every delay)\n");
    kprintf("    %3s  %-12s %-5s %4s %8s %8s %8s %5s %4s\n", "CPU", "timer", "wait", "n", "p50 us", "p99 us", "max us", "early", "lost");
    struct timer_tally tally = {0};
    unsigned measured = 0, cut = 0;
    for (unsigned i = 0; i < PERCPU_MAX; i++) {
        const struct timers_ap_row *row = &st->ap[i];
        if (i > 0 && !row->tried)
            continue;
        if (i > 0) {
            struct record r;
            record_begin(&r, "timer_cpu");
            record_u64(&r, "cpu", i);
            record_bool(&r, "measured", row->ran);
            record_str(&r, "reason", row->ran ? 0 : row->why);
            record_u64(&r, "job_ms", row->job_ms);
            record_u64(&r, "took_ms", row->took_ms);
            record_u64(&r, "cells", row->cells);
            record_u64(&r, "cells_cut", row->cells_cut);
            emit(&r);
        }
        if (i > 0 && !row->ran) {
            kprintf("    %3u  not measured: %s\n", i, row->why);
            continue;
        }
        if (i > 0 && row->cells_cut) {
            kprintf("    %3u  %u of %u cells cut short at its job's end, %u ms after it began: no event starts whose wait "
                    "could run past it (events left out, not lost)\n",
                    i, row->cells_cut, row->cells, row->job_ms);
            cut++;
        }
        measured += i > 0;
        for (int t = 0; t < TIMERS_AP_TIMERS; t++) {
            int id = t == 0 ? TIMER_LAPIC : TIMER_DEADLINE;
            for (unsigned wi = 0; wi < TIMERS_AP_WAITS && wi < st->wait_count; wi++) {
                const struct timer_cell *c = i == 0 ? &st->timer[id].cell[wi][TIMER_CHOICE_DELAY] : &row->cell[t][wi][TIMER_CHOICE_DELAY];
                if (!c->ran)
                    continue;
                if (c->came)
                    kprintf("    %3u  %-12s %-5s %4u %8s %8s %8s %5llu %4u\n", i, timer_name[id], st->wait[wi].name, c->came, us_cell(a, c->s.p50),
                            c->came >= TIMER_P99_MIN_EVENTS ? us_cell(b, c->s.p99) : "=max", us_cell(m, c->s.max),
                            (unsigned long long)c->s.early, c->lost);
                else
                    kprintf("    %3u  %-12s %-5s %4u %8s %8s %8s %5s %4u\n", i, timer_name[id], st->wait[wi].name, 0u, "-", "-", "-", "-", c->lost);
                if (i == 0)
                    continue;
                for (unsigned di = 0; di < TIMER_DELAYS; di++) {
                    const struct timer_cell *d = &row->cell[t][wi][di];
                    if (!d->ran)
                        continue;
                    record_cell(i, id, wi, di, d);
                    timer_tally_add(&tally, d);
                }
            }
        }
    }
    enum timer_outcome outcome = timer_tally_outcome(&tally);
    if (outcome == TIMER_EARLY)
        check_fail("timer interrupts: every CPU", "%llu of %llu interrupts came before their deadline", (unsigned long long)tally.early,
                   (unsigned long long)tally.asked);
    else if (outcome == TIMER_LOST)
        check_fail("timer interrupts: every CPU", "%llu of %llu interrupts never came", (unsigned long long)tally.lost,
                   (unsigned long long)tally.asked);
    else if (measured < tried)
        check_skip("timer interrupts: every CPU", "%u of %u other CPUs measured: none early, none lost", measured, tried);
    else if (cut && !tally.asked)
        check_skip("timer interrupts: every CPU", "%u other CPU%s measured, no event asked: every cell cut short at its job's end",
                   measured, measured == 1 ? "" : "s");
    else if (cut)
        check_pass("timer interrupts: every CPU", "%u other CPU%s, %llu interrupts, none early, none lost; %u cut short at its job's end",
                   measured, measured == 1 ? "" : "s", (unsigned long long)tally.asked, cut);
    else
        check_pass("timer interrupts: every CPU", "%u other CPU%s, %llu interrupts, none early, none lost", measured,
                   measured == 1 ? "" : "s", (unsigned long long)tally.asked);
}

static const char *const step_name[] = {
    [STEP_NORMAL] = "normal", [STEP_SLOW] = "reference stood still", [STEP_FAST] = "reference jumped",
    [STEP_BACKWARD] = "reference went back", [STEP_GAP] = "gap", [STEP_TSC_BACKWARD] = "tsc went back",
};

static const char *step_text(int k) { return k >= 0 && k <= STEP_TSC_BACKWARD ? step_name[k] : "?"; }

/* One rate window's record, and a line when it was disturbed. */
static void report_window(unsigned cpu, const char *counter, const struct timers_window *w)
{
    if (!w->measured)
        return;
    struct record r;
    record_begin(&r, "timer_rate_window");
    record_u64(&r, "cpu", cpu);
    record_str(&r, "counter", counter);
    record_u64(&r, "window_ms", TIMERS_RATE_WINDOW_MS);
    record_u64(&r, "tries", w->tries);
    record_u64(&r, "gaps", w->gaps);
    record_ns(&r, "gap_max_ns", (int64_t)w->gap_max);
    record_str(&r, "step", step_text(w->last_kind));
    record_str(&r, "disturbed", w->tries > 1 || w->last_kind != STEP_NORMAL ? step_text(w->disturbed_kind) : 0);
    emit(&r);
    char a[FMT_FIXED_CHARS];
    xs(a, xf_div(tsc_ticks_to_ns(xf_from_u64(w->gap_max)), xf_from_u64(1000000)), 1);
    if (w->tries > 1 || w->last_kind != STEP_NORMAL)
        kprintf("  rate window, CPU %u %s: %s, measured %u time%s, the last %s\n", cpu, counter,
                step_text(w->disturbed_kind), w->tries, w->tries == 1 ? "" : "s",
                w->last_kind == STEP_NORMAL ? "clean" : "still not: its rate is suspect");
    else if (w->gaps)
        kprintf("  rate window, CPU %u %s: %u TSC stop%s up to %s ms; the %s ran on alike\n", cpu, counter, w->gaps,
                w->gaps == 1 ? "" : "s", a, counter);
}

static void report_windows(void)
{
    static const int counter_of[TIMER_COUNT] = {COUNTER_LAPIC, -1, COUNTER_HPET, COUNTER_PIT};
    for (int id = 0; id < TIMER_COUNT; id++)
        if (counter_of[id] >= 0)
            report_window(0, counters[counter_of[id]].name, &st->window[id]);
    if (st->ref_counter >= 0)
        report_window(0, counters[st->ref_counter].name, &st->ref_window);
    for (unsigned i = 1; i < PERCPU_MAX; i++)
        if (st->ap[i].tried)
            report_window(i, counters[COUNTER_LAPIC].name, &st->ap[i].window);
}

/* What the phase can and cannot tell about time away (STYLE: a
   discontinuity is a finding, never silent noise). */
static void report_away(void)
{
    char a[FMT_FIXED_CHARS];
    if (st->ref_counter >= 0) {
        kprintf("  Time away: every wait is checked against the %s; a pause that stops it\n"
                "  while the TSC runs on (a VM paused under KVM) marks the event away.\n",
                counters[st->ref_counter].name);
        if (st->ref_stops)
            kprintf("  %llu wait%s saw it stand still, the longest %s ms.\n", (unsigned long long)st->ref_stops,
                    st->ref_stops == 1 ? "" : "s",
                    xs(a, xf_div(tsc_ticks_to_ns(xf_from_u64(st->ref_stop_max)), xf_from_u64(1000000)), 1));
        if (st->between_stops)
            kprintf("  Between events and cells, %llu stretch%s in which the TSC ran over\n"
                    "  1 ms more than the %s (a pause, or a read of it held up), the longest\n"
                    "  %s ms: no figure holds %s.\n", (unsigned long long)st->between_stops,
                    st->between_stops == 1 ? "" : "es", counters[st->ref_counter].name,
                    xs(a, xf_div(tsc_ticks_to_ns(xf_from_u64(st->between_stop_max)), xf_from_u64(1000000)), 1),
                    st->between_stops == 1 ? "it" : "them");
    } else
        kprintf("  Time away: no second clock to check the waits against.\n");
    kprintf("  A stop with every clock running on (a SIGSTOP of an emulator) cannot\n"
            "  be told inside an idle wait shorter than its bound (%u ms): the idle\n"
            "  figures cannot exclude one.\n", TIMERS_BOUND_MIN_MS);
    if (st->idle_beyond)
        kprintf("  %llu event%s came after %s bound, the latest %s ms late: only a\n"
                "  stop of the whole machine explains that (the wait, or its watchdog,\n"
                "  would have ended first): left out, as away.\n", (unsigned long long)st->idle_beyond,
                st->idle_beyond == 1 ? "" : "s", st->idle_beyond == 1 ? "its" : "their",
                xs(a, xf_div(tsc_ticks_to_ns(xf_from_u64(st->idle_beyond_max)), xf_from_u64(1000000)), 1));
    if (st->busy_gaps)
        kprintf("  Busy waits and armings saw %llu such stop%s during the phase, the\n  longest %s ms.\n", (unsigned long long)st->busy_gaps,
                st->busy_gaps == 1 ? "" : "s",
                xs(a, xf_div(tsc_ticks_to_ns(xf_from_u64(st->busy_gap_max)), xf_from_u64(1000000)), 1));
    else
        kprintf("  Busy waits and armings saw none during the phase (a step of the TSC\n  over 1 ms).\n");
}

void timers_report(void)
{
    kprintf("\n== Timer interrupts ==\n");
    if (st->skipped_all) {
        kprintf("  Not measured: %s\n", st->skipped_why);
        check_skip("timer interrupts", "%s", st->skipped_why);
        fmt_format(results.timer_choice, sizeof results.timer_choice, "not measured: %s", st->skipped_why);
        return;
    }
    kprintf("  How late the handler runs after its timer fires: the TSC read at the\n"
            "  interrupt stub's entry minus the instant the timer fires by its own\n"
            "  semantics and tick (each timer's line says which), as cyclictest\n"
            "  measures, with no OS in between. \"phase <= x ns\": how much of each\n"
            "  figure may be that tick's phase and the arming's own time (the\n"
            "  median event's; \"one\" the widest). The count is pushed late by\n"
            "  the rate's margin (3 sigma), so a rate error cannot fire it early;\n"
            "  \"+-\": how far that uncertainty moves the instant.\n"
            "  busy = spinning with interrupts on; hlt and mwait = idle. Figures in\n"
            "  microseconds.\n");
    report_rates();
    if (st->mwait_note[0])
        kprintf("  %s\n", st->mwait_note);
    if (st->errata_note[0])
        kprintf("  TSC-deadline errata: %s\n", st->errata_note);
    for (int id = 0; id < TIMER_COUNT; id++)
        report_timer(id);
    report_every_cpu();
    if (st->faulted) {
        kprintf("  A CPU exception ended the %s waits: %s\n", st->fault_where, st->fault.text);
        check_fail("timer waits", "%s waits faulted: %s", st->fault_where, st->fault.text);
    }
    char ms[FMT_FIXED_CHARS];
    kprintf("\n  The phase took %s ms (TSC).\n", xs(ms, xf_div(tsc_ticks_to_ns(xf_from_u64(st->phase_ticks)), xf_from_u64(1000000)), 0));
    report_windows();
    report_away();
    struct record r;
    record_begin(&r, "interrupts");
    record_xf_fixed(&r, "phase_ms", xf_div(tsc_ticks_to_ns(xf_from_u64(st->phase_ticks)), xf_from_u64(1000000)), 1);
    record_u64(&r, "busy_gaps", st->busy_gaps);
    record_ns(&r, "busy_gap_max_ns", (int64_t)st->busy_gap_max);
    record_str(&r, "away_reference", st->ref_counter >= 0 ? counters[st->ref_counter].name : 0);
    record_u64(&r, "beyond_bound", st->idle_beyond);
    record_ns(&r, "beyond_bound_max_ns", (int64_t)st->idle_beyond_max);
    record_u64(&r, "reference_stops", st->ref_stops);
    record_ns(&r, "reference_stop_max_ns", (int64_t)st->ref_stop_max);
    record_u64(&r, "reference_stops_between", st->between_stops);
    record_ns(&r, "reference_stop_between_max_ns", (int64_t)st->between_stop_max);
    record_u64(&r, "unexpected", st->unexpected);
    if (st->unexpected)
        record_u64(&r, "last_unexpected_vector", st->last_unexpected);
    record_u64(&r, "spurious", st->spurious);
    record_str(&r, "mwait", st->mwait_note);
    if (st->errata_note[0])
        record_str(&r, "tsc_deadline_errata", st->errata_note);
    emit(&r);
    if (st->unexpected)
        check_fail("unexpected interrupts", "%llu interrupts no one armed arrived (last vector 0x%x)", (unsigned long long)st->unexpected,
                   st->last_unexpected);
    else
        check_pass("unexpected interrupts", "none (%llu on the spurious vector)", (unsigned long long)st->spurious);
    report_choice();
}

/* Experiment "rtc", its report: the date, the TSC's rate by the RTC against the drift's reference, the checks. */
#include "exp_rtc_report.h"

#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/finish.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/counters.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/rtc_fit.h"
#include "../lib/xf.h"

#define COARSE_SPAN_S 10         /* under this the figure is coarse */

static bool stuck(const struct rtc_run *run)
{
    return run->present && (run->never_updated || (!run->updates_seen && run->window_tsc >= ms_to_tsc(RTC_STUCK_WINDOW_MS)));
}

static void counter_record(const struct rtc_run *run)
{
    struct record r;
    record_begin(&r, "counter");
    record_str(&r, "name", "rtc");
    record_bool(&r, "present", run->present);
    record_str(&r, "reason", run->present ? 0 : run->reason);
    record_fixed(&r, "nominal_hz", 1000, 3);
    /* the same 1 Hz either way; under an identified VMM its source is cited
       (lib/vmm_rates.c: QEMU's RTC_CLOCK_RATE, Cloud Hypervisor's host seconds) */
    const struct vmm_rate *v = vmm_rate_of(machine_vmm(), VDEV_RTC, 0);
    char source[128], constant[128];
    if (v) {
        fmt_format(source, sizeof source, "%s, 1 Hz (%s; nominal)", v->model, v->constant);
        fmt_format(constant, sizeof constant, "%s, %s", v->constant, v->file);
    }
    record_str(&r, "nominal_source", v ? source : "32.768 kHz crystal / 32768 (nominal)");
    record_str(&r, "nominal_from", v ? "vmm" : "crystal");
    record_str(&r, "nominal_vmm", v ? vmm_name(v->vmm) : 0);
    record_str(&r, "nominal_constant", v ? constant : 0);
    record_null(&r, "nominal_spread_ppm");
    record_null(&r, "width_bits");
    record_str(&r, "access", "CMOS ports 0x70/0x71");
    emit(&r);
}

static void cost_records(const struct rtc_run *run)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    if (!run->cost_done)
        return;
    const struct summary *s = &run->cost;
    kprintf("  one read of the seconds register (index write, data read): p50 %s ns, max %s ns\n",
            xs(a, tsc_ticks_ns(s->p50), 1), xs(b, tsc_ticks_ns(s->max), 1));
    struct record r;
    record_begin(&r, "latency");
    record_str(&r, "counter", "rtc");
    record_u64(&r, "n", s->n);
    record_xf_fixed(&r, "min_ns", tsc_ticks_ns(s->min), 3);
    record_xf_fixed(&r, "p50_ns", tsc_ticks_ns(s->p50), 3);
    record_xf_fixed(&r, "mean_ns", tsc_ticks_to_ns(s->mean), 3);
    record_xf_fixed(&r, "p99_ns", tsc_ticks_ns(s->p99), 3);
    record_xf_fixed(&r, "p999_ns", tsc_ticks_ns(s->p999), 3);
    record_xf_fixed(&r, "max_ns", tsc_ticks_ns(s->max), 3);
    record_xf_fixed(&r, "stddev_ns", tsc_ticks_to_ns(s->stddev), 3);
    record_u64(&r, "min_ticks", s->min);
    record_u64(&r, "p50_ticks", s->p50);
    record_u64(&r, "max_ticks", s->max);
    record_u64(&r, "bracket_overhead_ticks", run->bracket_overhead);
    emit(&r);

    record_begin(&r, "resolution");
    record_str(&r, "counter", "rtc");
    if (run->min_step_tsc)
        record_xf_fixed(&r, "min_step_ns", tsc_ticks_ns(run->min_step_tsc), 3);
    else
        record_null(&r, "min_step_ns");
    record_u64(&r, "nominal_tick_ns", 1000000000ull);
    if (run->min_step_s)
        record_u64(&r, "min_step_ticks", run->min_step_s);
    else
        record_null(&r, "min_step_ticks");
    record_u64(&r, "step_gcd_ticks", 1);
    record_u64(&r, "reads", run->reads);
    record_u64(&r, "deltas", run->reads ? run->reads - 1 : 0);
    record_u64(&r, "zero_deltas", run->zero_deltas);
    record_u64(&r, "distinct", run->distinct);
    record_u64(&r, "backward", run->backward);
    record_u64(&r, "largest_backward_ticks", 0);
    record_u64(&r, "gap_deltas", 0);
    emit(&r);

    record_begin(&r, "monotonicity");
    record_str(&r, "counter", "rtc");
    record_u64(&r, "reads", run->reads + run->edge_count);
    record_u64(&r, "backward", run->backward + run->fit.backward);
    record_null(&r, "largest_backward_ticks");
    record_u64(&r, "discontinuities", run->fit.discontinuities);
    record_bool(&r, "stuck", stuck(run));
    emit(&r);
}

/* A counter's rate by the RTC, through the TSC (rtc_counter_vs), when the
   drift measured its rate: false otherwise. */
static bool counter_vs_rtc(int c, struct xf ratio, struct xf u_fit_ppm, struct rtc_vs *v)
{
    if (!counters[c].present || !results.tsc_measured)
        return false;
    if (c == results.reference)
        *v = rtc_counter_vs(xf_from_u64(0), results.tsc_uncertainty_ppm, ratio, u_fit_ppm);
    else if (results.counter[c].has_ppm)
        *v = rtc_counter_vs(results.counter[c].ppm_vs_nominal, results.counter[c].uncertainty_ppm, ratio, u_fit_ppm);
    else
        return false;
    return true;
}

static void rtc_report_main(const struct rtc_run *run)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    kprintf("\n== The RTC (CMOS real-time clock: its own 32.768 kHz crystal) ==\n");
    counter_record(run);
    struct record r;
    record_begin(&r, "rtc");
    record_bool(&r, "present", run->present);
    if (!run->present) {
        record_str(&r, "reason", run->reason);
        emit(&r);
        kprintf("  absent: %s\n", run->reason);
        check_skip("TSC agrees with the RTC", "no RTC: %s", run->reason);
        return;
    }
    char date[16], time[16];
    if (run->date_valid) {
        fmt_format(date, sizeof date, "%04u-%02u-%02u", run->date.year, run->date.month, run->date.day);
        fmt_format(time, sizeof time, "%02u:%02u:%02u", run->date.hour, run->date.min, run->date.sec);
        kprintf("  Run measured from %s %s (RTC, no time zone; read as the %s window opened)\n", date, time,
                run->own_window ? "RTC's" : "drift");
    } else {
        kprintf("  date and time not read: %s\n", run->date_why);
    }
    kprintf("  registers: %s, %s, battery %s (register D 0x%02x)\n", (run->rtc.reg_b & RTC_B_DM_BINARY) ? "binary" : "BCD",
            (run->rtc.reg_b & RTC_B_24H) ? "24 h" : "12 h", run->rtc.battery_ok ? "held (VRT set)" : "FAILED (VRT clear)",
            run->rtc.reg_d);
    record_str(&r, "date", run->date_valid ? date : 0);
    record_str(&r, "time", run->date_valid ? time : 0);
    record_str(&r, "date_problem", run->date_valid ? 0 : run->date_why);
    record_bool(&r, "bcd", !(run->rtc.reg_b & RTC_B_DM_BINARY));
    record_bool(&r, "hour_24", run->rtc.reg_b & RTC_B_24H);
    if (run->hour_mode_ignored) {
        record_bool(&r, "hour_mode_ignored", true);
        kprintf("  register B says 12-hour, but the hour reads %u with no PM bit: the RTC keeps 24-hour\n"
                "  time whatever B says; read as 24-hour, as Linux reads it\n", run->date.hour);
    }
    record_bool(&r, "battery_ok", run->rtc.battery_ok);
    record_u64(&r, "edges", run->edge_count);
    record_u64(&r, "edges_used", run->fit.used);
    record_u64(&r, "edges_wide", run->fit.wide);
    record_u64(&r, "edges_outliers", run->fit.outliers);
    record_u64(&r, "discontinuities", run->fit.discontinuities);
    record_u64(&r, "span_s", run->fit.span_s);
    record_xf_fixed(&r, "window_s", tsc_ticks_s(run->window_tsc), 3);
    record_str(&r, "window", run->own_window ? "own" : "drift");
    if (run->fit.used) /* the widest bracket among the edges fitted; with none fitted there is no figure */
        record_xf_fixed(&r, "widest_edge_ns", tsc_ticks_ns(run->fit.widest_tsc), 1);
    else
        record_null(&r, "widest_edge_ns");
    record_xf_fixed(&r, "longest_spin_us", xf_div(tsc_ticks_ns(run->longest_spin_tsc), xf_from_u64(1000)), 1);
    record_xf_fixed(&r, "phase_wait_ms", xf_div(tsc_ticks_ns(run->phase_wait_tsc), xf_from_u64(1000000)), 1);
    record_xf_fixed(&r, "longest_call_us", xf_div(tsc_ticks_ns(run->longest_call_tsc), xf_from_u64(1000)), 1);
    record_bool(&r, "edges_full", run->edges_overflowed);
    record_u64(&r, "polls", run->polls);
    record_u64(&r, "missed", run->missed);
    record_xf_fixed(&r, "call_gap_us", xf_div(tsc_ticks_ns(run->call_gap_tsc), xf_from_u64(1000)), 1);
    record_u64(&r, "bad_clock_reads", run->bad_clock_reads);
    record_str(&r, "stopped", run->stopped_why);
    record_u64(&r, "tolerance_ppm", RTC_TOLERANCE_PPM);

    /* the bracket in ns under 1 us (a 30 ns bracket is not "0.0 us") */
    struct xf widest_ns = tsc_ticks_ns(run->fit.widest_tsc);
    bool in_us = xf_cmp(widest_ns, xf_from_u64(1000)) >= 0;
    char edges_text[FMT_FIXED_CHARS + 32];
    if (!run->fit.used)
        fmt_format(edges_text, sizeof edges_text, "no edges fitted");
    else
        fmt_format(edges_text, sizeof edges_text, "widest bracket %s %s", xs(b, in_us ? xf_div(widest_ns, xf_from_u64(1000)) : widest_ns, 1),
                   in_us ? "us" : "ns");
    kprintf("  %u second boundar%s (UIP falling) timed by the TSC over %s s; %s\n", run->edge_count,
            run->edge_count == 1 ? "y" : "ies", xs(a, tsc_ticks_s(run->window_tsc), 1), edges_text);
    if (run->missed)
        kprintf("  %llu watch%s missed a boundary (the loop away, or the prediction off)\n",
                (unsigned long long)run->missed, run->missed == 1 ? "" : "es");
    if (run->fit.wide || run->fit.outliers)
        kprintf("  left out of the fit: %u with a wide bracket (the CPU away), %u off the line\n", run->fit.wide,
                run->fit.outliers);
    if (run->edges_overflowed)
        report_note("the first %d edges are kept; later ones were timed but not kept", RTC_EDGES_MAX);
    if (run->stopped_why)
        report_note("polling stopped: %s", run->stopped_why);
    if (run->fit.discontinuities)
        kprintf("  %u discontinuit%s (the RTC's count and the TSC disagreed by a second or more); the longest run\n"
                "  without one is fitted\n", run->fit.discontinuities, run->fit.discontinuities == 1 ? "y" : "ies");
    if (stuck(run)) {
        kprintf("  the RTC never finished an update in %s s: it does not count\n", xs(a, tsc_ticks_s(run->window_tsc), 1));
        record_bool(&r, "stuck", true);
        emit(&r);
        check_fail("RTC counts", "no update ended in %s s", a);
        check_skip("TSC agrees with the RTC", "the RTC does not count");
        cost_records(run);
        return;
    }
    uint32_t updates = run->edge_count + (uint32_t)run->bad_clock_reads;
    if (run->updates_seen)
        check_pass("RTC counts", "%u update%s timed in %s s", updates, updates == 1 ? "" : "s",
                   xs(a, tsc_ticks_s(run->window_tsc), 1));
    else
        check_skip("RTC counts", "the window (%s s) was too short to see an update end", xs(a, tsc_ticks_s(run->window_tsc), 1));
    if (!run->fit.fitted) {
        emit(&r);
        check_skip("TSC agrees with the RTC", "%u edge%s timed, %llu missed: two one second apart or more are needed",
                   run->edge_count, run->edge_count == 1 ? "" : "s", (unsigned long long)run->missed);
        cost_records(run);
        return;
    }
    struct xf u_fit_ppm = ppm_of(run->fit.uncertainty_rel);
    record_xf_fixed(&r, "tsc_hz", run->fit.tsc_per_s, 3);
    record_xf_fixed(&r, "fit_uncertainty_ppm", u_fit_ppm, 6);
    record_xf_fixed(&r, "stderr_ppm", ppm_of(run->fit.stderr_rel), 6);
    record_xf_fixed(&r, "bracket_ppm", ppm_of(run->fit.bracket_rel), 6);
    record_str(&r, "reference", results.tsc_measured ? counters[results.reference].name : 0);
    kprintf("  tsc by the rtc %17s Hz, +-%s ppm (edge timing over %u s)\n", xs(a, run->fit.tsc_per_s, 3), xs(b, u_fit_ppm, 3),
            run->fit.span_s);
    bool coarse = run->fit.span_s < COARSE_SPAN_S;
    record_bool(&r, "coarse", coarse);
    if (!results.tsc_measured) {
        record_null(&r, "ppm_tsc_vs_rtc");
        record_null(&r, "uncertainty_ppm");
        emit(&r);
        kprintf("  no measured TSC rate to hold it against (%s)\n", results.tsc_hz_source);
        check_skip("TSC agrees with the RTC", "the TSC's rate was not measured against a reference (drift did not run or fit)");
        cost_records(run);
        return;
    }
    /* the TSC's rate by the RTC over its rate by the reference */
    struct xf ratio;
    struct rtc_vs tsc = rtc_tsc_vs(run->fit.tsc_per_s, u_fit_ppm, results.tsc_hz, results.tsc_uncertainty_ppm, &ratio);
    const char *refname = counters[results.reference].name;
    record_xf_fixed(&r, "ppm_tsc_vs_rtc", tsc.ppm, 6);
    record_xf_fixed(&r, "uncertainty_ppm", tsc.u_ppm, 6);
    kprintf("  that is %s ppm from its rate by the %s, +-%s ppm\n", xs(a, tsc.ppm, 3), refname, xs(b, tsc.u_ppm, 3));
    static const int others[] = {COUNTER_HPET, COUNTER_ACPI_PM};
    static const char *const keys[][2] = {{"hpet_ppm_vs_rtc", "hpet_uncertainty_ppm"},
                                          {"acpi_pm_ppm_vs_rtc", "acpi_pm_uncertainty_ppm"}};
    for (unsigned i = 0; i < 2; i++) {
        struct rtc_vs v;
        if (!counter_vs_rtc(others[i], ratio, u_fit_ppm, &v)) {
            record_null(&r, keys[i][0]);
            record_null(&r, keys[i][1]);
            continue;
        }
        record_xf_fixed(&r, keys[i][0], v.ppm, 6);
        record_xf_fixed(&r, keys[i][1], v.u_ppm, 6);
        kprintf("  %-7s vs rtc %s ppm from nominal, +-%s ppm (through the TSC)\n", counters[others[i]].name, xs(a, v.ppm, 3),
                xs(b, v.u_ppm, 3));
    }
    emit(&r);
    kprintf("  The RTC runs from a 32.768 kHz watch crystal, typically +-%u ppm at 25 C and\n"
            "  worse hot, cold or aged: an independent check of the main crystal, not a\n"
            "  better one (assumed +-%u ppm for the check)\n", RTC_TYPICAL_PPM, RTC_TOLERANCE_PPM);
    if (coarse)
        report_note("coarse: %u s between the first and last edge (%u edges); the standard profile's 60 s makes the "
                    "figure meaningful", run->fit.span_s, run->fit.used);
    xs(a, tsc.ppm, 3);
    xs(b, tsc.u_ppm, 3);
    if (rtc_agrees(tsc, RTC_TOLERANCE_PPM))
        check_pass("TSC agrees with the RTC", "%s ppm from its rate by the %s, +-%s (limit %u ppm, the RTC's assumed, + 3 u)",
                   a, refname, b, RTC_TOLERANCE_PPM);
    else
        check_fail("TSC agrees with the RTC", "%s ppm from its rate by the %s, +-%s (limit %u ppm, the RTC's assumed, + 3 u)",
                   a, refname, b, RTC_TOLERANCE_PPM);
    /* the verdict: both crystals' tolerances */
    uint32_t both = RTC_TOLERANCE_PPM + results.tsc_absolute_ppm;
    bool agree = rtc_agrees(tsc, both);
    xs(c, tsc.u_ppm, 3);
    kprintf("  Verdict: the main crystal (%s) and the RTC %s within their tolerances:\n"
            "  %s ppm +-%s (limit %u ppm: the RTC's %u assumed, the %s's %u, + 3 u)%s\n", refname,
            agree ? "agree" : "DISAGREE", a, c, both, RTC_TOLERANCE_PPM, refname, results.tsc_absolute_ppm,
            coarse ? "; coarse" : "");
    fmt_format(results.rtc_choice, sizeof results.rtc_choice, "the main crystal (%s) and the RTC %s within their tolerances (%s ppm +-%s%s)",
               refname, agree ? "agree" : "DISAGREE", a, c, coarse ? ", coarse" : "");
    cost_records(run);
}

/* A stop of the machine in the drift window, clock by clock (exp_rtc.c
   stop_find): how long by the wall clock, and what each clock did. */
static void stop_report(const struct stop_found *f)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    if (!f->found)
        return;
    kprintf("\n== A stop of the machine (a VM paused, migrated or restored) ==\n");
    kprintf("  at %s s into the drift window (%s): %s s +-%s by the wall clock\n",
            xs(a, tsc_ticks_s(f->at_tsc), 3), f->seen_by, xs(b, xf_div(f->wall_ns, xf_from_u64(1000000000ull)), 6),
            xs(c, xf_div(f->u_wall_ns, xf_from_u64(1000000000ull)), 6));
    if (f->rtc_known)
        kprintf("  the RTC stepped %s s +-%s against the TSC (edges %u RTC s apart,\n    %s)\n",
                xs(a, xf_div(f->rtc.step_ns, xf_from_u64(1000000000ull)), 6),
                xs(b, xf_div(f->rtc.u_ns, xf_from_u64(1000000000ull)), 6), f->rtc.count_s,
                f->rtc_coarse ? "the seconds register's changes: no two UIP edges hold it" : "UIP's fall timed by the TSC");
    else
        kprintf("  no two RTC edges hold it: its length is the TSC's advance alone\n");
    kprintf("  Rate figures leave it out (each series is cut there, the RTC's fit\n  takes the longest run without it)\n");
    struct record r;
    record_begin(&r, "stop");
    record_str(&r, "seen_by", f->seen_by);
    record_xf_fixed(&r, "at_s", tsc_ticks_s(f->at_tsc), 6);
    record_xf_fixed(&r, "wall_ns", f->wall_ns, 0);
    record_xf_fixed(&r, "uncertainty_ns", f->u_wall_ns, 0);
    record_xf_fixed(&r, "tsc_ns", f->tsc_ns, 0);
    if (f->rtc_known) {
        record_xf_fixed(&r, "rtc_step_ns", f->rtc.step_ns, 0);
        record_xf_fixed(&r, "rtc_step_uncertainty_ns", f->rtc.u_ns, 0);
        record_str(&r, "rtc_edges", f->rtc_coarse ? "seconds" : "uip");
    } else {
        record_null(&r, "rtc_step_ns");
        record_null(&r, "rtc_step_uncertainty_ns");
        record_null(&r, "rtc_edges");
    }
    emit(&r);
    for (uint32_t i = 0; i < f->clock_count; i++) {
        const struct stop_clock *k = &f->clock[i];
        struct xf s = xf_div(k->advanced_ns, xf_from_u64(1000000000ull)), u = xf_div(k->u_ns, xf_from_u64(1000000000ull));
        if (!k->known)
            kprintf("  %-8s cannot tell: %s\n", k->name, k->how);
        else if (k->verdict == STOP_STOOD_STILL)
            kprintf("  %-8s stood still: advanced %s s +-%s (%s)\n", k->name, xs(a, s, 6), xs(b, u, 6), k->how);
        else if (k->verdict == STOP_RAN_ON)
            kprintf("  %-8s ran on: jumped %s s +-%s as the guest sees it (%s)\n", k->name, xs(a, s, 6), xs(b, u, 6), k->how);
        else if (k->verdict == STOP_PARTLY)
            kprintf("  %-8s partly: advanced %s s +-%s of the stop's %s s (%s)\n", k->name, xs(a, s, 6), xs(b, u, 6),
                    xs(c, xf_div(f->wall_ns, xf_from_u64(1000000000ull)), 3), k->how);
        else
            kprintf("  %-8s advanced %s s +-%s: the stop is too short to tell (%s)\n", k->name, xs(a, s, 6), xs(d, u, 6), k->how);
        record_begin(&r, "stop_clock");
        record_str(&r, "clock", k->name);
        record_str(&r, "verdict", k->known ? stop_verdict_names[k->verdict] : "unknown");
        if (k->known) {
            record_xf_fixed(&r, "advanced_ns", k->advanced_ns, 0);
            record_xf_fixed(&r, "uncertainty_ns", k->u_ns, 0);
        } else {
            record_null(&r, "advanced_ns");
            record_null(&r, "uncertainty_ns");
        }
        record_str(&r, "how", k->how);
        emit(&r);
    }
}

/* One counter's advance over the whole run against the TSC's: its step, a
   bound from its tolerance and the TSC rate's uncertainty, into the record
   and a line; true when it stepped beyond that and 10 ms (a stop). */
/* The stop outside the drift window, sized by the clock that saw it best. */
struct run_stop {
    bool found;
    const char *by;
    struct xf ns, u_ns;
};

/* A clock that stepped against the TSC sizes the stop when it states it
   more tightly than the one before. */
static void run_stop_offer(struct run_stop *st, const char *by, struct xf step, struct xf u)
{
    if (st->found && xf_cmp(u, st->u_ns) >= 0)
        return;
    *st = (struct run_stop){.found = true, .by = by, .ns = xf_abs(step), .u_ns = u};
}

static bool whole_run_step(struct record *r, const char *label, const char *key, const char *u_key, struct xf advanced_ns,
                           struct xf tsc_ns, uint32_t tolerance_ppm, struct xf u_rate, struct run_stop *st, const char *by)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    struct xf one_s = xf_from_u64(1000000000ull);
    struct xf step = xf_sub(advanced_ns, tsc_ns);
    struct xf u = xf_add(xf_div(xf_mul(tsc_ns, xf_from_u64(tolerance_ppm)), xf_from_u64(1000000)), u_rate);
    bool stepped = xf_cmp(xf_abs(step), xf_add(u, xf_from_u64(10000000))) > 0;
    if (stepped)
        run_stop_offer(st, by, step, u);
    record_xf_fixed(r, key, step, 0);
    record_xf_fixed(r, u_key, u, 0);
    kprintf("  %s %s s +-%s against the TSC%s\n", label, xs(a, xf_div(step, one_s), 6), xs(b, xf_div(u, one_s), 6),
            stepped ? ": one of the two stood still while the other ran (a stop)" : "");
    return stepped;
}

/* Over the whole run, from before the first experiment to after the last:
   the RTC's count (whole seconds, so +-1 s), the 64-bit HPET's and
   kvmclock's against the TSC. A stop outside the drift window shows here,
   and only here. (The PM timer and the PIT wrap within seconds: they
   cannot say how far they went over a whole run.) */
static void whole_run_report(const struct rtc_run *run)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    const struct run_mark *m0 = &run->mark[0], *m1 = &run->mark[1];
    if (!m0->tsc || m1->tsc <= m0->tsc || !results.tsc_measured)
        return;
    struct xf one_s = xf_from_u64(1000000000ull);
    struct xf tsc_ns = tsc_ticks_ns(m1->tsc - m0->tsc);
    /* the TSC's rate's own uncertainty over that time */
    struct xf u_rate = xf_div(xf_mul(tsc_ns, results.tsc_uncertainty_ppm), xf_from_u64(1000000));
    bool any = false;
    /* the HPET and kvmclock size a stop to their tolerance of the run (ms);
       the RTC, read to the whole second, only where neither saw it */
    struct run_stop st = {0}, by_rtc = {0};
    struct record r;
    record_begin(&r, "run_clocks");
    record_xf_fixed(&r, "tsc_s", xf_div(tsc_ns, one_s), 6);
    if (m0->rtc_ok && m1->rtc_ok) {
        /* each read is the second it fell in: their difference is within 1 s of the time between them */
        struct xf rtc_step = xf_sub(xf_mul(xf_from_u64(rtc_seconds_between(m0->sod, m1->sod)), one_s), tsc_ns);
        struct xf u = xf_add(one_s, u_rate);
        bool stepped = xf_cmp(xf_abs(rtc_step), u) > 0;
        any = any || stepped;
        if (stepped)
            run_stop_offer(&by_rtc, "rtc", rtc_step, u);
        record_xf_fixed(&r, "rtc_step_ns", rtc_step, 0);
        record_xf_fixed(&r, "rtc_step_uncertainty_ns", u, 0);
        kprintf("\n  Over the whole run (%s s by the TSC) the RTC ran %s s +-%s against\n  the TSC%s\n",
                xs(a, xf_div(tsc_ns, one_s), 3), xs(b, xf_div(rtc_step, one_s), 3), xs(c, xf_div(u, one_s), 3),
                stepped ? ": the machine stood still while the wall clock ran (a stop)" : "");
    } else {
        record_null(&r, "rtc_step_ns");
        record_null(&r, "rtc_step_uncertainty_ns");
    }
    if (m0->hpet_ok && m1->hpet_ok && discovered.hpet.period_fs) {
        struct xf hpet_ns = xf_div(xf_mul(xf_from_u64(m1->hpet - m0->hpet), xf_from_u64(discovered.hpet.period_fs)),
                                   xf_from_u64(1000000));
        /* its nominal period against the TSC's rate by the drift (if measured against the HPET, the same thing) */
        any = whole_run_step(&r, "the HPET", "hpet_step_ns", "hpet_step_uncertainty_ns", hpet_ns, tsc_ns,
                             counters[COUNTER_HPET].nominal_accuracy_ppm, u_rate, &st, "hpet") || any;
    } else {
        record_null(&r, "hpet_step_ns");
        record_null(&r, "hpet_step_uncertainty_ns");
    }
    if (m0->kvmclock_ok && m1->kvmclock_ok && m1->kvmclock >= m0->kvmclock) {
        /* its rate is the hypervisor's scaling of the TSC, within its stated tolerance, against the TSC's measured rate */
        any = whole_run_step(&r, "kvmclock", "kvmclock_step_ns", "kvmclock_step_uncertainty_ns",
                             xf_from_u64(m1->kvmclock - m0->kvmclock), tsc_ns,
                             counters[COUNTER_KVMCLOCK].nominal_accuracy_ppm, u_rate, &st, "kvmclock") || any;
    } else {
        record_null(&r, "kvmclock_step_ns");
        record_null(&r, "kvmclock_step_uncertainty_ns");
    }
    record_bool(&r, "stopped", any);
    bool rtc_only = !st.found;
    if (rtc_only)
        st = by_rtc;
    if (st.found) {
        record_xf_fixed(&r, "stop_ns", st.ns, 0);
        record_xf_fixed(&r, "stop_uncertainty_ns", st.u_ns, 0);
        record_str(&r, "stop_sized_by", st.by);
        if (rtc_only)
            kprintf("  The stop: %s s +-%s, sized by the RTC (whole seconds: no HPET or\n  kvmclock saw it)\n",
                    xs(a, xf_div(st.ns, one_s), 3), xs(b, xf_div(st.u_ns, one_s), 3));
        else
            kprintf("  The stop: %s s +-%s, sized by %s\n", xs(a, xf_div(st.ns, one_s), 6), xs(b, xf_div(st.u_ns, one_s), 6),
                    st.by);
    } else {
        record_null(&r, "stop_ns");
        record_null(&r, "stop_uncertainty_ns");
        record_null(&r, "stop_sized_by");
    }
    emit(&r);
    if (any && !run->stop.found)
        kprintf("  The drift window saw no stop: it came in another phase, whose figures\n"
                "  leave out what their own checks of the time away caught\n");
}

void rtc_report_run(const struct rtc_run *run)
{
    rtc_report_main(run);
    stop_report(&run->stop);
    whole_run_report(run);
}

/* Experiment "drift", its report: the window, each counter's discontinuities, the frequencies, stability and claims. */
#include "exp_drift_state.h"

#include "../drivers/cpuinfo.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/profile.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/counters.h"
#include "../lib/drift_analysis.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/segfit.h"
#include "../lib/string.h"
#include "../lib/uncertainty.h"
#include "../lib/xf.h"

/* A residual step no larger than half its reads' bracket: each reading is
   known only to lie within its bracket of two TSC reads, so the reads'
   timing may have moved, not a clock (discontinuity_records says so). */
static bool within_bracket(const struct drift_event *ev, const void *ctx)
{
    const struct series *s = ctx;
    struct xf cnt_ns = counter_ticks_ns(s->counter, xf_from_i64(ev->counter_ticks));
    return ev->kind == EV_RESIDUAL_STEP && xf_cmp(xf_abs(cnt_ns), tsc_ticks_ns(s->min_width / 2)) <= 0;
}

/* A series' events counted once (lib/drift_analysis.h, drift_count_events),
   in the words the records, the HTML report and the store use. */
static struct drift_counts series_counts(const struct series *s)
{
    return drift_count_events(&s->t, within_bracket, s);
}

static void counts_lines(const char *name, struct drift_counts c, bool reference)
{
    kprintf("  %s:%s\n", name, reference ? "" : " in its own series (no reference: these say nothing of the TSC)");
    if (c.discontinuities)
        kprintf("    %u discontinuit%s: a clock stood still, jumped or went back (each cuts\n      every series)\n",
                c.discontinuities, c.discontinuities == 1 ? "y" : "ies");
    if (c.gaps)
        kprintf("    %u gap%s: the loop was away and every clock ran on (they split nothing)\n", c.gaps, c.gaps == 1 ? "" : "s");
    if (c.too_long)
        kprintf("    %u gap%s too long for %s to unwrap (its count across is lost: cut there)\n", c.too_long,
                c.too_long == 1 ? "" : "s", name);
    if (c.within_bracket)
        kprintf("    %u residual step%s within the reads' brackets: their timing, not a clock\n", c.within_bracket,
                c.within_bracket == 1 ? "" : "s");
}

static void discontinuity_records(const struct series *s)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    const char *name = counters[s->counter].name;
    /* each reading is known only to lie within its bracket of two TSC reads;
       the midpoint stands for it, so a read that moves within its bracket
       (an emulator's lock taken before the clock is read rather than after)
       shifts the residuals by up to half the bracket with no clock stepping */
    struct xf half_ns = tsc_ticks_ns(s->min_width / 2);
    for (uint32_t e = 0; e < s->t.event_count && e < DRIFT_EVENTS_KEPT; e++) {
        const struct drift_event *ev = &s->t.events[e];
        struct xf at_s = tsc_ticks_s(ev->at_tsc);
        struct xf tsc_ns = tsc_ticks_ns(ev->tsc_ticks);
        struct xf cnt_ns = counter_ticks_ns(s->counter, xf_from_i64(ev->counter_ticks));
        struct xf tsc_us = xf_div(tsc_ns, xf_from_u64(1000)), cnt_us = xf_div(cnt_ns, xf_from_u64(1000));
        if (ev->kind == EV_RESIDUAL_STEP && xf_cmp(xf_abs(cnt_ns), half_ns) <= 0)
            kprintf("    at %s s: a step of %s us in %s's residuals, within its reads'\n"
                    "      brackets (+-%s us): the reads' timing may have moved, not a clock\n",
                    xs(a, at_s, 3), xs(b, cnt_us, 3), name, xs(c, xf_div(half_ns, xf_from_u64(1000)), 3));
        else if (ev->kind == EV_RESIDUAL_STEP)
            kprintf("    at %s s: a step of %s us in %s's residuals\n", xs(a, at_s, 3), xs(b, cnt_us, 3), name);
        else if (ev->kind == EV_TSC_BACK)
            kprintf("    at %s s: the TSC went back %s us\n", xs(a, at_s, 3), xs(b, tsc_us, 1));
        else if (ev->counter_known)
            kprintf("    at %s s: %s; the TSC advanced %s us, %s %s us\n", xs(a, at_s, 3), drift_event_names[ev->kind],
                    xs(b, tsc_us, 1), name, xs(c, cnt_us, 1));
        else
            kprintf("    at %s s: %s; the TSC advanced %s us, longer than %s can unwrap\n", xs(a, at_s, 3),
                    drift_event_names[ev->kind], xs(b, tsc_us, 1), name);
        struct record r;
        record_begin(&r, "discontinuity");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", name);
        record_str(&r, "kind", drift_event_names[ev->kind]);
        record_xf_fixed(&r, "at_s", at_s, 6);
        record_xf_fixed(&r, "tsc_ns", tsc_ns, 1);
        if (ev->counter_known)
            record_xf_fixed(&r, "counter_ns", cnt_ns, 1);
        else
            record_null(&r, "counter_ns");
        record_xf_fixed(&r, "bracket_half_ns", half_ns, 1);
        emit(&r);
    }
    if (s->t.event_count > DRIFT_EVENTS_KEPT)
        kprintf("    and %u more, not listed: those that cut the fit come first, then\n"
                "    the longest gaps\n", s->t.event_count - DRIFT_EVENTS_KEPT);
}

static int reference_counter(const char *name)
{
    for (int c = 0; c < COUNTER_COUNT; c++)
        if (!strcmp(counters[c].name, name))
            return c;
    return 0;
}

static void frequency_record(const char *counter, const char *reference, struct xf hz, bool has_nominal, struct xf ppm,
                             const struct freq_uncertainty *u, uint32_t absolute_ppm, const struct series *s, struct xf resid_ns)
{
    struct record r;
    record_begin(&r, "frequency");
    record_str(&r, "counter", counter);
    record_str(&r, "reference", reference);
    record_xf_fixed(&r, "hz", hz, 3);
    if (has_nominal)
        record_xf_fixed(&r, "ppm_vs_nominal", ppm, 6);
    else
        record_null(&r, "ppm_vs_nominal");
    record_xf_fixed(&r, "stderr_ppm", ppm_of(u->statistical), 6);
    record_xf_fixed(&r, "correlated_ppm", ppm_of(u->correlated), 6);
    record_xf_fixed(&r, "quantisation_ppm", ppm_of(u->quantisation), 6);
    record_xf_fixed(&r, "uncertainty_ppm", ppm_of(u->total), 6);
    if (s->counter == COUNTER_KVMCLOCK)
        record_xf_fixed(&r, "bracket_drift_ppm", ppm_of(s->bracket_drift), 6);
    record_u64(&r, "absolute_uncertainty_ppm", absolute_ppm);
    /* the reference's nominal rate the figure rests on, and where it is from */
    const struct counter *ref = &counters[reference_counter(reference)];
    record_fixed(&r, "reference_nominal_hz", (int64_t)ref->nominal_millihz, 3);
    record_str(&r, "reference_nominal_source", ref->nominal_source);
    record_str(&r, "reference_nominal_from", ref->nominal_from);
    record_fixed(&r, "nominal_spread_ppm", (int64_t)(ref->nominal_spread_ppb + (strcmp(counter, "tsc") ? counters[s->counter].nominal_spread_ppb : 0)), 3);
    record_xf_fixed(&r, "window_s", tsc_ticks_s(s->span_tsc), 6);
    record_xf_fixed(&r, "away_s", tsc_ticks_s(s->t.away_tsc), 6);
    record_u64(&r, "samples", s->fit.n);
    record_u64(&r, "segments", s->fit.segments);
    record_u64(&r, "dropped", s->fit.dropped);
    struct drift_counts dc = series_counts(s);
    record_u64(&r, "discontinuities", dc.discontinuities);
    record_u64(&r, "gaps", dc.gaps);
    record_u64(&r, "too_long", dc.too_long);
    record_u64(&r, "within_bracket", dc.within_bracket);
    record_xf_fixed(&r, "resid_rms_ns", resid_ns, 3);
    if (!strcmp(counter, "tsc")) {
        /* which reference the TSC's rate rests on, and why (docs/output.md) */
        bool used = results.reference >= 0 && !strcmp(reference, counters[results.reference].name);
        record_bool(&r, "used", used);
        record_str(&r, "reference_why", used ? results.tsc_reference_why : 0);
        if (used && results.tsc_stated_hz)
            record_u64(&r, "stated_hz", results.tsc_stated_hz);
        if (s->counter == COUNTER_KVMCLOCK) {
            if (drift_st.kv_tracked) {
                record_u64(&r, "kvmclock_page_updates", (drift_st.kv_version_end - drift_st.kv_version_start) / 2);
                record_bool(&r, "kvmclock_scale_changed", drift_st.kv_scale_changed);
            } else {
                record_null(&r, "kvmclock_page_updates");
                record_null(&r, "kvmclock_scale_changed");
            }
        }
    }
    emit(&r);
}

/* The fit's residuals in ps at the counter's nominal rate, against time, in parts. */
static void residual_records(const struct series *s)
{
    struct xf nom = nominal_hz(s->counter);
    uint32_t parts = (s->resid_count + RESIDUALS_PER_RECORD - 1) / RESIDUALS_PER_RECORD;
    for (uint32_t part = 0; part < parts; part++) {
        uint32_t from = part * RESIDUALS_PER_RECORD, to = from + RESIDUALS_PER_RECORD;
        if (to > s->resid_count)
            to = s->resid_count;
        struct record r;
        record_begin(&r, "residuals");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", counters[s->counter].name);
        record_u64(&r, "part", part);
        record_u64(&r, "parts", parts);
        record_array_begin(&r, "t_ms");
        for (uint32_t i = from; i < to; i++)
            record_array_u64(&r, (uint64_t)xf_to_fixed(tsc_ticks_s((uint64_t)s->resid_x[i]), 3));
        record_array_end(&r);
        record_array_begin(&r, "resid_ps");
        for (uint32_t i = from; i < to; i++)
            record_array_i64(&r, xf_to_fixed(xf_div(xf_mul(xf_from_i64(s->resid_mticks[i]), xf_from_u64(1000000000ull)), nom), 0));
        record_array_end(&r);
        emit(&r);
    }
}

static void report_tsc_against(const struct series *s)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    struct xf nom = nominal_hz(s->counter);
    struct xf hz = xf_div(nom, s->fit.slope);
    struct xf resid_ns = xf_div(xf_mul(s->fit.resid_rms, xf_from_u64(1000000000ull)), nom);
    bool claimed = counters[COUNTER_TSC].nominal_millihz != 0;
    struct xf tsc_nom = xf_div(xf_from_u64(counters[COUNTER_TSC].nominal_millihz), xf_from_u64(1000));
    struct xf ppm = claimed ? ppm_of(xf_sub(xf_div(hz, tsc_nom), xf_from_u64(1))) : xf_from_u64(0);
    const char *name = counters[s->counter].name;
    struct freq_uncertainty u = drift_tsc_uncertainty(s);
    kprintf("  tsc vs %-8s %17s Hz, relative to the %s +-%s ppm\n", name, xs(a, hz, 3), name,
            xs(b, ppm_of(u.total), 4));
    if (s->counter == results.reference)
        kprintf("    the TSC's reference: %s\n", results.tsc_reference_why);
    if (s->counter == COUNTER_KVMCLOCK && results.tsc_stated_hz) {
        struct xf off = ppm_of(xf_sub(xf_div(hz, xf_from_u64(results.tsc_stated_hz)), xf_from_u64(1)));
        kprintf("    kvmclock's mul/shift state %llu Hz: the fit is %s ppm from it\n"
                "    (kvmclock is the host's time scaled from this TSC at that rate: this\n"
                "    checks the hypervisor's stated rate against the host's clock at its\n"
                "    update points, not a crystal; the +- holds its +-%u Hz rounding and\n"
                "    +-%s ppm for the reads' drift in their brackets)\n",
                (unsigned long long)results.tsc_stated_hz, xs(c, off, 4), KVMCLOCK_RATE_ROUNDING_HZ,
                xs(d, ppm_of(s->bracket_drift), 4));
    }
    if (s->counter == COUNTER_KVMCLOCK) {
        uint32_t updates = (drift_st.kv_version_end - drift_st.kv_version_start) / 2;
        if (!drift_st.kv_tracked)
            kprintf("    kvmclock's page was being written at the window's start or end: its\n"
                    "    updates in the window are not counted\n");
        else if (updates)
            kprintf("    the host wrote kvmclock's page %u time%s in the window, re-anchoring it to\n"
                    "    its own clock: the fit holds those steps, not the stated rate alone\n%s",
                    updates, updates == 1 ? "" : "s",
                    drift_st.kv_scale_changed ? "    (and the host changed kvmclock's mul/shift)\n" : "");
        else
            kprintf("    the host did not write kvmclock's page in the window: kvmclock ran at\n"
                    "    its stated mul/shift throughout\n");
    }
    /* the rate the figure rests on, where it is a VMM's constant or still open between two */
    if (counters[s->counter].nominal_from && !strcmp(counters[s->counter].nominal_from, "vmm"))
        kprintf("    nominal: %s%s\n", counters[s->counter].nominal_source,
                counters[s->counter].nominal_spread_ppb ? ", its spread in the +-" : "");
    kprintf("    absolute +-%u ppm (%s)\n", counters[s->counter].nominal_accuracy_ppm,
            counters[s->counter].nominal_accuracy_source);
    kprintf("    %u samples, %u segment%s; RMS %s ns; statistical +-%s ppm\n", s->fit.n, s->fit.segments,
            s->fit.segments == 1 ? "" : "s",
            xs(c, resid_ns, 1), xs(d, ppm_of(s->unc.statistical), 4));
    if (s->fit.dropped)
        kprintf("    %u samples left out: lone samples between cuts, or past %d segments\n", s->fit.dropped,
                SEGFIT_MAX_SEGMENTS);
    if (claimed)
        kprintf("    %s ppm from the claimed nominal\n", xs(a, ppm, 3));
    frequency_record("tsc", name, hz, claimed, ppm, &u, counters[s->counter].nominal_accuracy_ppm, s, resid_ns);
    residual_records(s);
}

static void report_pair(const struct series *s, const struct series *ref)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    /* f_c = f_ref * b_c / b_ref, both slopes in counter ticks per TSC tick */
    struct xf nom_ref = nominal_hz(ref->counter), nom = nominal_hz(s->counter);
    struct xf hz = xf_div(xf_mul(nom_ref, s->fit.slope), ref->fit.slope);
    struct freq_uncertainty u = s->unc;
    /* both fits' terms add (conservative: their TSC noise partly cancels) */
#define ADD_Q(f) u.f = xf_sqrt(xf_add(xf_mul(s->unc.f, s->unc.f), xf_mul(ref->unc.f, ref->unc.f)))
    ADD_Q(statistical);
    ADD_Q(correlated);
    ADD_Q(quantisation);
    ADD_Q(total);
#undef ADD_Q
    /* a nominal still open between two VMM rates, either side's: a bound on top */
    u.total = xf_add(u.total, xf_add(nominal_spread(s->counter), nominal_spread(ref->counter)));
    struct xf ppm = ppm_of(xf_sub(xf_div(hz, nom), xf_from_u64(1)));
    struct xf resid_ns = xf_div(xf_mul(s->fit.resid_rms, xf_from_u64(1000000000ull)), nom);
    const char *name = counters[s->counter].name, *refname = counters[ref->counter].name;
    if (counters[s->counter].nominal_estimated) {
        /* nothing states its rate: the measured one is the finding, with no
           nominal to hold it against */
        kprintf("  %-7s vs %-8s %14s Hz (no nominal rate is stated),\n    relative to the %s +-%s ppm\n", name, refname,
                xs(a, hz, 3), refname, xs(c, ppm_of(u.total), 3));
        frequency_record(name, refname, hz, false, ppm, &u, counters[ref->counter].nominal_accuracy_ppm, s, resid_ns);
        return;
    }
    kprintf("  %-7s vs %-8s %14s Hz, %s ppm vs nominal,\n    relative to the %s +-%s ppm\n", name, refname, xs(a, hz, 3),
            xs(b, ppm, 3), refname, xs(c, ppm_of(u.total), 3));
    frequency_record(name, refname, hz, true, ppm, &u, counters[ref->counter].nominal_accuracy_ppm, s, resid_ns);
    struct counter_findings *f = &results.counter[s->counter];
    f->has_ppm = true;
    f->ppm_vs_nominal = ppm;
    f->uncertainty_ppm = ppm_of(u.total);
    /* the limit is the crystal's; the measurement's own uncertainty is allowed on top */
    /* the counter's crystal bound (counters.c) and the measurement's own uncertainty */
    uint32_t tolerance_ppm = counters[s->counter].nominal_accuracy_ppm;
    struct xf limit = xf_add(xf_from_u64(tolerance_ppm), xf_mul(xf_from_u64(3), ppm_of(u.total)));
    if (xf_cmp(xf_abs(ppm), limit) <= 0)
        check_pass("frequency within tolerance", "%s: %s ppm from nominal against %s (limit %u ppm + 3 u)", name, b,
                   refname, tolerance_ppm);
    else
        check_fail("frequency within tolerance", "%s: %s ppm from nominal against %s (limit %u ppm + 3 u)", name, b,
                   refname, tolerance_ppm);
}

static void report_stability(const struct series *s)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    if (s->sub_count < 2)
        return;
    struct xf nom = nominal_hz(s->counter);
    kprintf("  tsc vs %s over %s s sub-windows, ppm from the whole-window fit:\n   ", counters[s->counter].name,
            xs(b, tsc_ticks_s((uint64_t)s->sub_len), 1));
    uint32_t shown = 0;
    for (uint32_t i = 0; i < s->sub_count && shown < 12; i++)
        if (s->sub[i].fitted) {
            kprintf(" %s", xs(a, ppm_of(xf_sub(xf_div(s->fit.slope, s->sub[i].slope), xf_from_u64(1))), 3));
            shown++;
        }
    kprintf("%s\n", s->sub_count > 12 ? " ... (all in the records)" : "");
    for (uint32_t i = 0; i < s->sub_count; i++) {
        const struct subwindow *w = &s->sub[i];
        if (!w->fitted)
            continue;
        struct record r;
        record_begin(&r, "stability");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", counters[s->counter].name);
        record_xf_fixed(&r, "start_s", tsc_ticks_s((uint64_t)w->start_x), 3);
        record_xf_fixed(&r, "length_s", tsc_ticks_s((uint64_t)s->sub_len), 3);
        record_xf_fixed(&r, "hz", xf_div(nom, w->slope), 3);
        record_xf_fixed(&r, "ppm_vs_window", ppm_of(xf_sub(xf_div(s->fit.slope, w->slope), xf_from_u64(1))), 6);
        record_xf_fixed(&r, "stderr_ppm", ppm_of(xf_div(w->slope_stderr, w->slope)), 6);
        record_u64(&r, "samples", w->n);
        emit(&r);
    }
}

static void report_window(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    struct xf asked = xf_div(xf_from_u64(results.profile->drift_ms), xf_from_u64(1000));
    struct xf ran = tsc_ticks_s(drift_st.window_ran_tsc), away = tsc_ticks_s(drift_st.window_away_tsc);
    kprintf("  window: %s s asked, %s s ran by the TSC, %s s of it away\n", xs(a, asked, 3), xs(b, ran, 3), xs(c, away, 3));
    /* within a factor of 2 of what was asked, once the time away is taken out */
    struct xf sampled = xf_sub(ran, away);
    if (xf_cmp(sampled, xf_div(asked, xf_from_u64(2))) < 0 || xf_cmp(sampled, xf_mul(asked, xf_from_u64(2))) > 0)
        report_note("the window did not run for the time asked (%s s sampled of %s s): the quick TSC estimate that sized "
                    "it was off, or the window was capped", xs(a, sampled, 3), xs(b, asked, 3));
    struct record r;
    record_begin(&r, "drift_window");
    record_xf_fixed(&r, "asked_s", asked, 3);
    record_xf_fixed(&r, "ran_s", ran, 6);
    record_xf_fixed(&r, "away_s", away, 6);
    record_u64(&r, "slots", drift_st.slots);
    emit(&r);
}


/* The quick estimate that sized every phase, held against the rate the
   drift window measured (issue 30, item 7). The measured rate is the one
   to trust: it is a fit over seconds of narrow brackets against the same
   or a better reference, cut at every discontinuity, with an uncertainty
   computed from its own residuals; the estimate is 50 ms of windows whose
   only self-check is that they agree with each other (and, when there is
   one, with a second reference), so a bias every window shares (a
   reference that ran off its rate for a moment, a single reference with
   nothing to compare, cal_bias=) passes it. Every ns figure in the reports
   already uses the measured rate (results.tsc_hz: every experiment
   measures before any reports); what the estimate sized is named in the
   record and, when they disagree, in a note with the factor. */
#define SIZED_WITH_ESTIMATE "window lengths (drift, stolen-time scan), the timers' asked delays (delay_ns), " \
                            "the stolen-time scan's 100 ns floor, the drift's 1 % step bound"
static void report_estimate_against_rate(void)
{
    char a[FMT_FIXED_CHARS];
    uint64_t measured_mhz = (uint64_t)xf_to_fixed(results.tsc_hz, 3);
    uint64_t measured_u = (uint64_t)xf_to_fixed(results.tsc_uncertainty_ppm, 0) + 1;
    uint64_t est_u = results.tsc_estimate_checked ? results.tsc_estimate_u_ppm : 0;
    struct cal_vs_drift j;
    if (!cal_vs_drift_judge(results.tsc_estimate_hz, est_u, measured_mhz, measured_u, &j))
        return;
    struct record r;
    record_begin(&r, "calibration_check");
    record_u64(&r, "estimate_hz", results.tsc_estimate_hz);
    if (est_u)
        record_u64(&r, "estimate_uncertainty_ppm", est_u);
    else
        record_null(&r, "estimate_uncertainty_ppm");
    record_str(&r, "estimate_source", results.tsc_estimate_source);
    record_fixed(&r, "measured_hz", (int64_t)measured_mhz, 3);
    record_u64(&r, "measured_uncertainty_ppm", measured_u);
    record_str(&r, "reference", counters[results.reference].name);
    record_i64(&r, "off_ppm", j.off_ppm);
    record_u64(&r, "limit_ppm", j.limit_ppm);
    record_bool(&r, "agree", j.agree);
    record_str(&r, "sized_with_estimate", SIZED_WITH_ESTIMATE);
    emit(&r);
    kprintf("  the quick estimate (%llu Hz, %s) is %lld ppm from the measured rate\n    %s Hz (limit %llu ppm)\n",
            (unsigned long long)results.tsc_estimate_hz, results.tsc_estimate_source, (long long)j.off_ppm,
            xs(a, results.tsc_hz, 0), (unsigned long long)j.limit_ppm);
    if (j.agree) {
        if (results.tsc_estimate_checked)
            check_pass("quick TSC estimate agrees with the measured rate", "%lld ppm (limit %llu)", (long long)j.off_ppm,
                       (unsigned long long)j.limit_ppm);
        return;
    }
    /* a factor of 1.000000 means the sized figure is right; the figure, to 4 decimals */
    int64_t factor_e4 = 10000 + (j.off_ppm >= 0 ? (j.off_ppm + 50) / 100 : -((-j.off_ppm + 50) / 100));
    report_note("the quick TSC estimate was %lld ppm off the measured rate: every ns figure uses the measured rate, but "
                "what the estimate sized came out %lld.%04lld times the length asked (%s)",
                (long long)j.off_ppm, (long long)(factor_e4 / 10000), (long long)(factor_e4 % 10000), SIZED_WITH_ESTIMATE);
    if (results.tsc_estimate_checked)
        check_fail("quick TSC estimate agrees with the measured rate",
                   "%lld ppm, past its stated +-%llu ppm (limit %llu): the calibration's checks let a wrong estimate through",
                   (long long)j.off_ppm, (unsigned long long)est_u, (unsigned long long)j.limit_ppm);
}

/* Which of two VMM rates a counter has (exp_drift.c, choose_nominals). */
static void report_nominal_choice(void)
{
    const struct nominal_choice *ch = &drift_st.choice;
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    if (ch->counter < 0)
        return;
    const char *name = counters[ch->counter].name;
    struct record r;
    record_begin(&r, "nominal_choice");
    record_str(&r, "counter", name);
    record_str(&r, "reference", ch->reference >= 0 ? counters[ch->reference].name : 0);
    record_fixed(&r, "a_hz", (int64_t)ch->rows[0]->millihz, 3);
    record_str(&r, "a_constant", ch->rows[0]->constant);
    record_fixed(&r, "b_hz", (int64_t)ch->rows[1]->millihz, 3);
    record_str(&r, "b_constant", ch->rows[1]->constant);
    if (ch->reference >= 0) {
        record_fixed(&r, "measured_hz", (int64_t)ch->measured_millihz, 3);
        record_fixed(&r, "uncertainty_ppm", (int64_t)ch->u_ppb, 3);
        record_fixed(&r, "off_a_ppm", (int64_t)ch->pick.off_a_ppb, 3);
        record_fixed(&r, "off_b_ppm", (int64_t)ch->pick.off_b_ppb, 3);
    } else {
        record_null(&r, "measured_hz");
        record_null(&r, "uncertainty_ppm");
        record_null(&r, "off_a_ppm");
        record_null(&r, "off_b_ppm");
    }
    record_str(&r, "chosen", ch->pick.chosen >= 0 ? ch->rows[ch->pick.chosen]->constant : 0);
    record_fixed(&r, "nominal_hz", (int64_t)counters[ch->counter].nominal_millihz, 3);
    record_fixed(&r, "spread_ppm", (int64_t)counters[ch->counter].nominal_spread_ppb, 3);
    emit(&r);
    kprintf("  %s: %s (%s Hz) or %s (%s Hz)?\n", name, ch->rows[0]->model, fmt_fixed(a, (int64_t)ch->rows[0]->millihz, 3, 0),
            ch->rows[1]->model, fmt_fixed(b, (int64_t)ch->rows[1]->millihz, 3, 0));
    if (ch->reference < 0) {
        kprintf("    no other reference to tell them apart: midway, +-%s ppm added\n",
                fmt_fixed(c, counters[ch->counter].nominal_spread_ppb, 3, 3));
        return;
    }
    kprintf("    measured %s Hz +-%s ppm against %s:", fmt_fixed(a, (int64_t)ch->measured_millihz, 3, 3),
            fmt_fixed(b, (int64_t)ch->u_ppb, 3, 3), counters[ch->reference].name);
    if (ch->pick.chosen >= 0)
        kprintf(" %s\n", ch->rows[ch->pick.chosen]->constant);
    else
        kprintf(" cannot tell\n    (%s and %s ppm off): midway, +-%s ppm added\n", fmt_fixed(c, (int64_t)ch->pick.off_a_ppb, 3, 3),
                fmt_fixed(d, (int64_t)ch->pick.off_b_ppb, 3, 3), fmt_fixed(a, counters[ch->counter].nominal_spread_ppb, 3, 3));
}

void drift_report(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    kprintf("\n== Frequency and drift (one rate fitted over bracketed samples) ==\n");
    if (drift_st.skip_reason) {
        check_skip("TSC frequency", "%s", drift_st.skip_reason);
        return;
    }
    int references = 0;
    for (int k = 0; k < drift_st.series_count; k++)
        references += counter_is_reference(drift_st.series[k].counter);
    if (references == 0) {
        kprintf("  no counter besides the TSC that can be a reference: nothing to measure the TSC against\n");
        check_skip("TSC frequency", "no HPET, PM timer or PIT (nor kvmclock) to measure it against; ns figures use %s",
                   results.tsc_hz_source);
        return;
    }
    report_window();
    if (!results.tsc_estimate_checked)
        report_note("the TSC estimate is %s, not a measurement, so steps are judged with a 30 %% rate bound and small "
                    "discontinuities may pass unseen", results.tsc_estimate_source);
    if (drift_st.cuts.overflowed)
        report_note("more than %d cuts; the later ones were not applied", DRIFT_CUTS_MAX);
    const struct drift_inject *in = &drift_st.inject;
    if (in->kind != INJECT_NONE)
        kprintf("  Injected: %s of %llu ms at %llu s%s%s\n", in->kind == INJECT_HPET_HALT ? "HPET halt" : "TSC jump",
                (unsigned long long)in->ms, (unsigned long long)(in->at_ms / 1000),
                in->started ? "" : " (never reached: the window was shorter)",
                in->kind == INJECT_TSC_JUMP && in->faulted ? "; the write faulted (see the note): nothing moved"
                : in->kind == INJECT_TSC_JUMP && in->started && in->moved_tsc < ms_to_tsc(in->ms) / 2
                    ? "; the TSC did not move (this CPU ignores the write)" : "");
    if (in->kind == INJECT_HPET_HALT && in->done) {
        /* the halt as done, by the TSC read at its stop and at its start: the truth a
           discontinuity is checked against (the loop may have been away as it was due) */
        char h[FMT_FIXED_CHARS];
        kprintf("  the HPET stood still for %s ms as done (its stop and start by the TSC)\n",
                xs(h, xf_mul(tsc_ticks_s(in->halted_tsc), xf_from_u64(1000)), 3));
        struct record r;
        record_begin(&r, "inject");
        record_str(&r, "kind", "hpet_halt");
        record_u64(&r, "asked_ms", in->ms);
        record_u64(&r, "at_ms", in->at_ms);
        record_xf_fixed(&r, "done_ms", xf_mul(tsc_ticks_s(in->halted_tsc), xf_from_u64(1000)), 3);
        emit(&r);
    }
    for (int k = 0; k < drift_st.series_count; k++) {
        const struct series *s = &drift_st.series[k];
        kprintf("  %s: kept %u of %u samples (brackets within twice the narrowest,\n    %llu TSC ticks); %llu reads, %llu wraps\n",
                counters[s->counter].name, s->kept, s->slots_filled, (unsigned long long)s->min_width,
                (unsigned long long)s->t.reads, (unsigned long long)s->t.wraps);
        if (s->t.stalls)
            kprintf("  %s: %llu stall%s (no change while the TSC ran), the longest %s us\n", counters[s->counter].name,
                    (unsigned long long)s->t.stalls, s->t.stalls == 1 ? "" : "s", xs(a, xf_div(tsc_ticks_ns(s->t.longest_stall_tsc), xf_from_u64(1000)), 1));
        if (s->t.event_count && !counter_is_reference(s->counter))
            counts_lines(counters[s->counter].name, series_counts(s), false);
        else if (s->t.event_count) {
            counts_lines(counters[s->counter].name, series_counts(s), true);
            discontinuity_records(s);
        }
    }
    report_nominal_choice();
    for (int k = 0; k < drift_st.series_count; k++) {
        const struct series *s = &drift_st.series[k];
        if (!counter_is_reference(s->counter))
            continue; /* the TSC is measured against references only */
        if (usable(s))
            report_tsc_against(s);
        else
            kprintf("  tsc vs %s: no figure: %s\n", counters[s->counter].name,
                    s->stuck ? "the counter got stuck" : "the data left after cutting at discontinuities cannot support one");
    }
    const struct series *ref = results.reference >= 0 ? series_of(results.reference) : 0;
    if (!ref) {
        check_fail("TSC frequency", "no reference counter gave a usable fit");
        return;
    }
    for (int k = 0; k < drift_st.series_count; k++)
        if (&drift_st.series[k] != ref && usable(&drift_st.series[k]))
            report_pair(&drift_st.series[k], ref);
    report_stability(ref);
    report_estimate_against_rate();

    /* the measured TSC against every claim, within the crystal's accuracy and our uncertainty */
    const struct cpu_info *ci = &boot_cpu.info;
    for (int i = 0; i < ci->claim_count; i++) {
        if (strcmp(ci->claims[i].what, "tsc"))
            continue;
        struct xf ppm = ppm_of(xf_sub(xf_div(results.tsc_hz, xf_from_u64(ci->claims[i].hz)), xf_from_u64(1)));
        xs(a, ppm, 3);
        /* the reference's own crystal limits how well a claim can be checked */
        struct xf limit = xf_add(xf_from_u64(results.tsc_absolute_ppm), xf_mul(xf_from_u64(3), results.tsc_uncertainty_ppm));
        if (xf_cmp(xf_abs(ppm), limit) <= 0)
            check_pass("TSC frequency matches its claim", "%s says %llu Hz; measured %s Hz (%s ppm)", ci->claims[i].source,
                       (unsigned long long)ci->claims[i].hz, xs(b, results.tsc_hz, 0), a);
        else
            check_fail("TSC frequency matches its claim", "%s says %llu Hz; measured %s Hz (%s ppm, limit %u + 3 u)",
                       ci->claims[i].source, (unsigned long long)ci->claims[i].hz, xs(b, results.tsc_hz, 0), a, results.tsc_absolute_ppm);
    }
}

/* Experiment "drift", its measurement: every counter read against the TSC over a window, fitted across discontinuities. */
#include "../drivers/cpuinfo.h"
#include "../drivers/pvclock.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/probe.h"
#include "../kernel/progress.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/cmdline.h"
#include "../lib/drift_analysis.h"
#include "../lib/pvclock.h"
#include "../lib/record.h"
#include "../lib/segfit.h"
#include "../lib/string.h"
#include "../lib/uncertainty.h"
#include "../lib/unwrap.h"
#include "exp_drift_state.h"
#include "experiment.h"

/* Every counter is read between two serialised TSC reads, round and round,
   for the whole window, and each reading judged as it comes
   (drift_analysis.h). The rate is one least-squares slope common to all
   segments, each with its own offset (segfit.h), so a pause bends nothing.
   A step in the residuals that no event explains is cut the same way. The
   uncertainty covers statistics, correlated noise and quantisation
   (uncertainty.h). */

#define STOP_BACKWARD_MS 500     /* a step back across this long away is a stop's, not the counter's (exp_rtc.c STOP_MIN_MS) */
#define GAP_REPORT_MS 10         /* the loop away this long: reported even when every clock ran */
#define STUCK_MS 100             /* no change for this long, while the loop ran: stuck */
#define UNCERTAINTY_SUBWINDOWS 8
#define RESIDUAL_STEP_K 6        /* a level shift in the residuals this many times its noise ... */
#define RESIDUAL_STEP_TICKS 3    /* ... and this many counter ticks is a cut */
#define RESIDUAL_CUTS_MAX 4
#define WINDOW_CAP_FACTOR 3      /* the window may run this many times what was asked, to make up for gaps */


struct drift_run drift_st;
static const struct window_rider *rider; /* the RTC's edges, timed in this window too (exp_rtc.c), or 0 */

static void inject_parse(void)
{
    struct drift_inject *in = &drift_st.inject;
    in->kind = INJECT_NONE;
    const char *v = cmdline_get(&boot_cmdline, "inject");
    if (!v)
        return;
    char kind[16], num[24];
    const char *rest = cmdline_split(v, ':', kind, sizeof kind);
    const char *at = rest ? cmdline_split(rest, '@', num, sizeof num) : 0;
    bool ok = at && cmdline_parse_u64(num, &in->ms) && cmdline_parse_u64(at, &in->at_ms) && in->ms > 0 && in->ms <= 60000;
    in->at_ms *= 1000; /* given in seconds */
    if (ok && !strcmp(kind, "hpet_halt") && counters[COUNTER_HPET].present)
        in->kind = INJECT_HPET_HALT;
    else if (ok && !strcmp(kind, "tsc_jump"))
        in->kind = INJECT_TSC_JUMP;
    else
        kprintf("Note: inject=%s is not hpet_halt:MS@S or tsc_jump:MS@S (with an HPET for\n"
                "      hpet_halt); nothing is injected\n", v);
}

/* IA32_TSC_ADJUST where CPUID says it exists (a write there moves the TSC
   by the same amount, Intel SDM vol. 3B, 18.17.3), else IA32_TSC itself;
   each access through the safe path: false with the MSR named in why. */
static bool tsc_jump(uint64_t delta, char *why, unsigned why_len)
{
    struct probe_fault fault;
    char name[48];
    uint64_t adjust = 0;
    uint32_t msr = boot_cpu.info.tsc_adjust ? MSR_TSC_ADJUST : MSR_TSC;
    bool ok = msr == MSR_TSC_ADJUST ? msr_read_safe(msr, &adjust, &fault) && msr_write_safe(msr, adjust + delta, &fault)
                                    : msr_write_safe(msr, rdtsc() + delta, &fault);
    if (!ok)
        fmt_format(why, why_len, "%s faulted: %s", msr_name(msr, name), fault.text);
    return ok;
}

/* Called between reads, outside any bracket. */
static void inject_tick(uint64_t now, uint64_t start)
{
    struct drift_inject *in = &drift_st.inject;
    if (in->kind == INJECT_NONE || in->done)
        return;
    if (!in->started && now - start >= ms_to_tsc(in->at_ms)) {
        in->started = true;
        in->until_tsc = now + ms_to_tsc(in->ms);
        if (in->kind == INJECT_HPET_HALT) {
            in->at_tsc = rdtsc();
            hpet_set_running(&discovered.hpet, false);
        } else {
            char why[160];
            uint64_t before = rdtsc();
            in->faulted = !tsc_jump(ms_to_tsc(in->ms), why, sizeof why);
            if (in->faulted)
                report_note("moving the TSC: %s; nothing injected", why);
            in->moved_tsc = rdtsc() - before;
            in->done = true;
        }
    } else if (in->started && now >= in->until_tsc) {
        hpet_set_running(&discovered.hpet, true);
        in->halted_tsc = rdtsc() - in->at_tsc;
        in->done = true;
    }
}

/* One read of one counter, judged and stored. A counter that stands still
   is read on to the end of the window: it may resume (a discontinuity), or
   not (stuck). A sample taken while the counter stands still says nothing
   of its rate. */
static void sample_one(struct series *s, uint64_t start, uint64_t slot_len, uint64_t sampled_tsc, uint64_t gap_tsc)
{
    uint64_t a, b;
    uint64_t v = read_bracketed(&s->src, &a, &b) & s->src.mask;
    drift_track_read(&s->t, v, a, b, start, gap_tsc, s->stall_tsc);
    uint64_t slot = sampled_tsc / slot_len;
    if (!s->t.in_stall && slot < drift_st.slots && (s->w[slot] == 0 || b - a + 1 < s->w[slot])) {
        s->x[slot] = (int64_t)(drift_mid(a, b) - start);
        s->yv[slot] = (int64_t)s->t.y;
        s->sg[slot] = s->t.seg;
        s->w[slot] = (uint32_t)(b - a + 1 < 0xFFFFFFFFu ? b - a + 1 : 0xFFFFFFFEu);
    }
}

static void sample_all(uint64_t window)
{
    uint64_t slot_len = window / drift_st.slots ? window / drift_st.slots : 1;
    uint64_t gap_tsc = ms_to_tsc(GAP_REPORT_MS), stuck_tsc = ms_to_tsc(STUCK_MS);
    /* a stall: no change for 10 nominal ticks and at least 10 us */
    for (int k = 0; k < drift_st.series_count; k++)
        drift_st.series[k].stall_tsc =
            drift_stall_tsc(results.tsc_estimate_hz, drift_st.series[k].t.up.counter_millihz, ms_to_tsc(1) / 100);
    uint64_t start = bracket_begin();
    drift_st.window_start_tsc = start;
    for (int k = 0; k < drift_st.series_count; k++) {
        struct series *s = &drift_st.series[k];
        uint64_t a, b;
        uint64_t v = read_bracketed(&s->src, &a, &b) & s->src.mask;
        drift_track_begin(&s->t, v, a, b);
    }
    uint64_t prev = start, sampled = 0, away = 0;
    uint64_t cap = window * WINDOW_CAP_FACTOR + ms_to_tsc(10000);
    uint64_t one_s = ms_to_tsc(1000) ? ms_to_tsc(1000) : 1, next_progress = start + one_s;
    for (uint64_t it = 0; it < 4000000000ull; it++) {
        for (int k = 0; k < drift_st.series_count; k++)
            sample_one(&drift_st.series[k], start, slot_len, sampled, gap_tsc);
        /* time that counts toward the window: not the time the loop was away */
        uint64_t now = bracket_end();
        inject_tick(now, start);
        if (rider)
            rider->poll(now); /* the RTC's: returns at once unless an edge is near; holds the loop 5 ms at most */
        uint64_t step = now - prev;
        prev = now;
        if (step > gap_tsc)
            away += step;
        else
            sampled += step;
        if (sampled >= window || now - start >= cap)
            break;
        if (now >= next_progress) {
            /* some 70 bytes: 6 ms at 115200 baud, under the GAP_REPORT_MS a
               gap needs; a stall while they go out is a gap like any other */
            progress("drift", (unsigned)(sampled * 100 / window), (int64_t)((window - sampled + one_s - 1) / one_s));
            next_progress = now + one_s;
        }
    }
    if (rider)
        rider->end();
    if (drift_st.inject.kind == INJECT_HPET_HALT && drift_st.inject.started && !drift_st.inject.done)
        hpet_set_running(&discovered.hpet, true);
    drift_st.window_ran_tsc = prev - start;
    drift_st.window_away_tsc = away;
    /* stuck: it stood still, while we watched, for the last STUCK_MS or more
       of the window and never moved again; one that stood still and then
       went on is a discontinuity instead */
    for (int k = 0; k < drift_st.series_count; k++) {
        struct series *s = &drift_st.series[k];
        s->span_tsc = drift_st.window_ran_tsc;
        if (s->t.still_tsc > stuck_tsc) {
            s->stuck = true;
            s->stuck_at_tsc = s->t.lc_b - start;
        }
    }
}

/* Keeps the narrow samples and gathers the series' cut times. */
static void prepare(struct series *s)
{
    s->kept = drift_keep_narrow(s->x, s->yv, s->sg, s->w, drift_st.slots, &s->slots_filled, &s->min_width);
    drift_cuts_from_events(&drift_st.cuts, &s->t);
}

static void fit_series(struct series *s)
{
    drift_cuts_apply(&drift_st.cuts, s->x, s->sg, s->kept, s->cut_sg);
    s->fitted = s->kept >= 3 && segfit(s->x, s->yv, s->cut_sg, s->kept, &s->fit);
}

/* A step in the residuals that no event explains: cut there, in every series. */
static bool find_residual_step(struct series *s)
{
    uint32_t at;
    struct xf size;
    /* only a reference's residuals can tell a step on the TSC's side; the
       APIC timer and the paravirtual clocks are measured, not trusted to */
    if (!counter_is_reference(s->counter))
        return false;
    if (!s->fitted || !segfit_find_step(&s->fit, s->x, s->yv, s->cut_sg, s->kept, xf_from_u64(RESIDUAL_STEP_TICKS),
                                        RESIDUAL_STEP_K, &at, &size))
        return false;
    drift_track_event(&s->t, EV_RESIDUAL_STEP, (uint64_t)s->x[at], 0, true, xf_to_fixed(size, 0));
    drift_cuts_add(&drift_st.cuts, (uint64_t)s->x[at]);
    return true;
}

static void analyse_all(void)
{
    drift_st.cuts.count = 0;
    drift_st.cuts.overflowed = false;
    for (int k = 0; k < drift_st.series_count; k++)
        prepare(&drift_st.series[k]);
    for (int round = 0; round <= RESIDUAL_CUTS_MAX; round++) {
        bool more = false;
        for (int k = 0; k < drift_st.series_count; k++)
            fit_series(&drift_st.series[k]);
        for (int k = 0; round < RESIDUAL_CUTS_MAX && k < drift_st.series_count; k++)
            more |= find_residual_step(&drift_st.series[k]);
        if (!more)
            break;
    }
    for (int k = 0; k < drift_st.series_count; k++) {
        struct series *s = &drift_st.series[k];
        uint32_t n = s->kept;
        if (!s->fitted)
            continue;
        /* quantisation: one counter tick. The brackets' width and jitter are
           in the data, so the statistical and correlated terms see them; the
           tick's rounding can beat with the sampling and need not average out. */
        freq_uncertainty(s->x, s->yv, s->cut_sg, n, &s->fit, xf_from_u64(1), UNCERTAINTY_SUBWINDOWS, &s->unc);
        /* kvmclock is a function of the TSC read inside its own read (no
           crystal of its own, no noise between the host's page writes): what
           its fit can get wrong is where that read sat in each bracket, and a
           steady move of it looks like a rate, unseen by the statistical
           terms. Seen: 2.2 u off the stated scaling with no page write
           (issue 37). So the bound is stated, in the total. */
        s->bracket_drift = xf_from_u64(0);
        if (s->counter == COUNTER_KVMCLOCK) {
            s->bracket_drift = drift_bracket_drift(s->unc.quantisation, drift_keep_limit(s->min_width), s->fit.slope);
            s->unc.total = xf_sqrt(xf_add(xf_mul(s->unc.total, s->unc.total), xf_mul(s->bracket_drift, s->bracket_drift)));
        }
        /* stability: 1 s sub-windows, longer when the window holds more than SUBWINDOWS_MAX */
        uint64_t one_s = results.tsc_estimate_hz;
        uint64_t span = (uint64_t)(s->x[n - 1] - s->x[0]);
        s->sub_len = drift_sub_len(span, one_s, SUBWINDOWS_MAX);
        s->sub_count = subwindows_fit(s->x, s->yv, s->cut_sg, n, s->sub_len, s->sub, SUBWINDOWS_MAX);
        for (uint32_t j = 0; j < RESIDUALS_KEEP && j < n; j++) {
            uint32_t i = drift_residual_index(j, n, RESIDUALS_KEEP);
            s->resid_x[j] = s->x[i];
            s->resid_mticks[j] = xf_to_fixed(segfit_residual(&s->fit, s->x[i], s->yv[i], s->cut_sg[i]), 3);
            s->resid_count = j + 1;
        }
    }
}

/* The page's version when no write is under way (an odd version is a
   write in progress); false if it never settled within a bounded wait. */
static bool kvmclock_version_even(uint32_t *out)
{
    for (int tries = 0; tries < PVCLOCK_READ_TRIES; tries++) {
        uint32_t v = kvmclock_page.version;
        if (!(v & 1)) {
            *out = v;
            return true;
        }
        cpu_relax();
    }
    return false;
}

/* KVM derives kvmclock's mul/shift from the host's TSC rate in kHz
   (arch/x86/kvm/x86.c, kvm_guest_time_update: kvm_get_time_scale(NSEC_PER_SEC,
   tgt_tsc_khz * 1000)), so between the host's updates kvmclock runs at that
   rounded rate: up to half a kHz off the host's own clock. That rounding is
   added, in quadrature, to the quantisation and the total. */
struct xf nominal_spread(int counter)
{
    return xf_div(xf_from_u64(counters[counter].nominal_spread_ppb), xf_from_u64(1000000000ull));
}

struct freq_uncertainty drift_tsc_uncertainty(const struct series *s)
{
    struct freq_uncertainty u = s->unc;
    /* a nominal still open between two VMM rates: the bound on top */
    u.total = xf_add(u.total, nominal_spread(s->counter));
    uint64_t stated = s->counter == COUNTER_KVMCLOCK ? pvclock_tsc_hz(discovered.pv.mul, discovered.pv.shift) : 0;
    if (!stated)
        return u;
    struct xf r = xf_div(xf_from_u64(KVMCLOCK_RATE_ROUNDING_HZ), xf_from_u64(stated));
    u.quantisation = xf_sqrt(xf_add(xf_mul(u.quantisation, u.quantisation), xf_mul(r, r)));
    u.total = xf_sqrt(xf_add(xf_mul(u.total, u.total), xf_mul(r, r)));
    return u;
}

/* Why c is the reference: what ranked above it and was not used. */
static void reference_why(int c)
{
    char *w = results.tsc_reference_why;
    size_t cap = sizeof results.tsc_reference_why;
    results.tsc_reference_brief = c == COUNTER_KVMCLOCK ? "no HPET, PM timer or PIT: KVM's stated rate vs the host's clock"
                                                        : "the best reference present";
    if (c == COUNTER_KVMCLOCK) {
        fmt_format(w, cap, "no HPET, PM timer or PIT answered: kvmclock, the host's clock scaled from this TSC by "
                           "KVM's stated mul/shift, so this tests that stated rate, not an independent crystal");
        return;
    }
    size_t len = fmt_format(w, cap, "the best reference present (hpet, then acpi_pm, then pit)");
    bool first = true;
    for (int k = 0; k < COUNTER_COUNT; k++) {
        const struct counter *b = &counters[k];
        if (!b->reference_rank || b->reference_rank >= counters[c].reference_rank || len + 8 >= cap)
            continue;
        const char *what = !b->present ? "absent" : b->set_aside ? b->note : "no usable fit";
        len += fmt_format(w + len, cap - len, "%s %s: %s", first ? ";" : ",", b->name, what);
        first = false;
    }
}

/* QEMU+KVM's PIT is KVM's in-kernel one or QEMU's own, 0.84 ppm apart
   (lib/vmm_rates.c), and the guest cannot ask which: the fit against the
   best other reference (the HPET or the PM timer, whose rates are QEMU's
   exactly) chooses when its uncertainty separates them; otherwise the
   midpoint and half the spread stand, and every figure relative to the PIT
   carries that spread. */
static void choose_nominals(void)
{
    struct nominal_choice *ch = &drift_st.choice;
    *ch = (struct nominal_choice){.counter = -1, .reference = -1};
    for (int k = 0; k < drift_st.series_count && ch->counter < 0; k++) {
        const struct series *s = &drift_st.series[k];
        struct counter *c = &counters[s->counter];
        if (!c->nominal_vmm[1] || !usable(s))
            continue;
        ch->counter = s->counter;
        ch->rows[0] = c->nominal_vmm[0];
        ch->rows[1] = c->nominal_vmm[1];
        int order[COUNTER_COUNT];
        int n = counters_by_rank(order);
        const struct series *ref = 0;
        for (int i = 0; i < n && !ref; i++) {
            const struct series *r = series_of(order[i]);
            if (order[i] != s->counter && !counters[order[i]].nominal_vmm[1] && r && usable(r))
                ref = r;
        }
        if (!ref)
            continue;
        ch->reference = ref->counter;
        /* f = f_ref * b_c / b_ref; both fits' uncertainties in quadrature, as report_pair */
        struct xf hz = xf_div(xf_mul(nominal_hz(ref->counter), s->fit.slope), ref->fit.slope);
        struct xf u = xf_sqrt(xf_add(xf_mul(s->unc.total, s->unc.total), xf_mul(ref->unc.total, ref->unc.total)));
        ch->measured_millihz = (uint64_t)xf_to_fixed(hz, 3);
        ch->u_ppb = (uint64_t)xf_to_fixed(xf_mul(u, xf_from_u64(1000000000ull)), 0) + 1;
        ch->pick = vmm_rate_pick(ch->rows[0]->millihz, ch->rows[1]->millihz, ch->measured_millihz, ch->u_ppb);
        if (ch->pick.chosen < 0)
            continue;
        const struct vmm_rate *v = ch->rows[ch->pick.chosen];
        c->nominal_millihz = v->millihz;
        c->nominal_spread_ppb = 0;
        c->nominal_vmm[0] = v;
        c->nominal_vmm[1] = 0;
        fmt_format(c->nominal_source, sizeof c->nominal_source, "%s (%s), chosen against %s", v->model, v->constant,
                   counters[ref->counter].name);
    }
}

/* The TSC's rate from the best reference that gave a usable fit. */
static void publish_tsc_rate(void)
{
    int order[COUNTER_COUNT];
    int n = counters_by_rank(order);
    results.reference = -1;
    for (int i = 0; i < n && results.reference < 0; i++) {
        const struct series *s = series_of(order[i]);
        if (!s || !usable(s))
            continue;
        struct freq_uncertainty u = drift_tsc_uncertainty(s);
        results.reference = order[i];
        results.tsc_measured = true;
        results.tsc_hz = xf_div(nominal_hz(order[i]), s->fit.slope);
        results.tsc_stderr_ppm = ppm_of(u.statistical);
        results.tsc_uncertainty_ppm = ppm_of(u.total);
        results.tsc_absolute_ppm = counters[order[i]].nominal_accuracy_ppm;
        fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "measured against %s", counters[order[i]].name);
        reference_why(order[i]);
        if (order[i] == COUNTER_KVMCLOCK)
            results.tsc_stated_hz = pvclock_tsc_hz(discovered.pv.mul, discovered.pv.shift);
    }
    if (results.tsc_measured)
        return;
    if (counters[COUNTER_TSC].nominal_millihz) {
        results.tsc_hz = xf_div(xf_from_u64(counters[COUNTER_TSC].nominal_millihz), xf_from_u64(1000));
        fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "nominal: %s", counters[COUNTER_TSC].nominal_source);
    } else {
        results.tsc_hz = xf_from_u64(results.tsc_estimate_hz);
        /* an estimate measured (against a counter or the RTC) is no nominal figure: it says what it rests on */
        fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "%s%s",
                   results.tsc_estimate_checked ? "the quick estimate against " : "nominal: ", results.tsc_estimate_source);
    }
}

static void drift_measure(const struct profile *p)
{
    drift_st.window_asked_tsc = ms_to_tsc(p->drift_ms);
    uint64_t slots64 = (uint64_t)p->slots_per_s * p->drift_ms / 1000;
    drift_st.slots = (uint32_t)(slots64 < 3 ? 3 : slots64 > PROFILE_MAX_SLOTS ? PROFILE_MAX_SLOTS : slots64);
    drift_st.series_count = 0;
    drift_st.skip_reason = 0;
    inject_parse();
    /* the RTC's edges are timed in this window too (exp_rtc.c); it finds
       their phase first, before the window's start is announced */
    rider = experiments_window_rider();
    if (rider)
        rider->begin();
    struct record r;
    record_begin(&r, "phase");
    record_str(&r, "experiment", "drift");
    record_str(&r, "event", "start");
    record_u64(&r, "window_ms", p->drift_ms);
    emit(&r);
    uint64_t mark = memory_mark();
    for (int c = 0; c < COUNTER_COUNT; c++) {
        if (c == COUNTER_TSC || !counters[c].present)
            continue;
        struct series *s = &drift_st.series[drift_st.series_count];
        *s = (struct series){.counter = c};
        if (!counter_source(c, &s->src))
            continue;
        unwrap_params_of(c, &s->t.up);
        s->x = memory_alloc(drift_st.slots * sizeof *s->x);
        s->yv = memory_alloc(drift_st.slots * sizeof *s->yv);
        s->sg = memory_alloc(drift_st.slots * sizeof *s->sg);
        s->w = memory_alloc(drift_st.slots * sizeof *s->w);
        s->cut_sg = memory_alloc(drift_st.slots * sizeof *s->cut_sg);
        if (!s->x || !s->yv || !s->sg || !s->w || !s->cut_sg) {
            drift_st.skip_reason = "no memory for the samples (the memory map gave no usable region)";
            break;
        }
        memset(s->w, 0, drift_st.slots * sizeof *s->w);
        drift_st.series_count++;
    }
    if (drift_st.skip_reason)
        drift_st.series_count = 0;
    if (drift_st.series_count) {
        drift_st.kv_tracked = discovered.pv.kvmclock_on && kvmclock_version_even(&drift_st.kv_version_start);
        sample_all(drift_st.window_asked_tsc);
        if (drift_st.kv_tracked) {
            drift_st.kv_tracked = kvmclock_version_even(&drift_st.kv_version_end);
            drift_st.kv_scale_changed = kvmclock_page.tsc_to_system_mul != discovered.pv.mul ||
                                        kvmclock_page.tsc_shift != discovered.pv.shift;
        }
        analyse_all();
    }
    memory_release(mark);
    record_begin(&r, "phase");
    record_str(&r, "experiment", "drift");
    record_str(&r, "event", "end");
    emit(&r);
    choose_nominals();
    publish_tsc_rate();
    results.drift_start_tsc = drift_st.series_count ? drift_st.window_start_tsc : 0;
    uint32_t notes = 0;
    for (int k = 0; k < drift_st.series_count; k++) {
        const struct series *s = &drift_st.series[k];
        struct counter_findings *f = &results.counter[s->counter];
        f->drift_done = true;
        f->fitted = s->fitted;
        f->stuck = s->stuck;
        /* a step back over which the loop was away half a second or more
           is a stop of the machine (a VM restored with the counter's
           saved state: the LAPIC's count across a migration under KVM),
           named by the stop's report, not the counter running back */
        uint64_t across = 0, largest = 0;
        for (uint32_t e = 0; e < s->t.event_count && e < DRIFT_EVENTS_KEPT; e++) {
            const struct drift_event *ev = &s->t.events[e];
            if (ev->kind != EV_BACKWARD)
                continue;
            if (ev->tsc_ticks >= ms_to_tsc(STOP_BACKWARD_MS))
                across++;
            else if ((uint64_t)-ev->counter_ticks > largest)
                largest = (uint64_t)-ev->counter_ticks;
        }
        f->backward_across_stops = across;
        f->backward = s->t.backward - across;
        f->largest_backward = across ? largest : s->t.largest_backward;
        f->wraps = s->t.wraps;
        f->stalls = s->t.stalls;
        f->longest_stall_tsc = s->t.longest_stall_tsc;
        f->event_count = s->t.event_count;
        memcpy(f->events, s->t.events, sizeof f->events);
        f->min_width_tsc = s->min_width;
        if (!counter_is_reference(s->counter))
            continue; /* its discontinuities are its own, not the TSC's (see report) */
        for (uint32_t e = 0; e < s->t.event_count && e < DRIFT_EVENTS_KEPT; e++) {
            if (notes >= sizeof results.disc / sizeof *results.disc)
                break;
            const struct drift_event *ev = &s->t.events[e];
            results.disc[notes++] = (struct discontinuity_note){
                .reference = s->counter, .kind = drift_event_names[ev->kind],
                .at_ms = (uint64_t)xf_to_fixed(tsc_ticks_s(ev->at_tsc), 3),
                .tsc_us = xf_to_fixed(xf_div(tsc_ticks_ns(ev->tsc_ticks), xf_from_u64(1000)), 0),
                .counter_us = xf_to_fixed(xf_div(counter_ticks_ns(s->counter, xf_from_i64(ev->counter_ticks)), xf_from_u64(1000)), 0),
                .counter_known = ev->counter_known};
        }
        results.disc_count = notes;
        if (s->t.tsc_back > results.tsc_back_in_drift)
            results.tsc_back_in_drift = s->t.tsc_back;
        results.discontinuities += s->t.event_count;
    }
}

const struct experiment exp_drift = {
    .name = "drift",
    .what = "every counter's rate against the TSC, across discontinuities",
    .needs_tsc = true,
    .measure = drift_measure,
    .report = drift_report,
};

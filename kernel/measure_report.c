/* The measurement sections of the report: read cost, sequential reads,
   monotonicity, frequency and drift, stolen time, and the verdict. Every
   ns figure uses measured.tsc_hz and the report says where it came from. */
#include "checks.h"
#include "console.h"
#include "cpuinfo.h"
#include "discover.h"
#include "format.h"
#include "measure.h"
#include "memory.h"
#include "record.h"
#include "string.h"

#define TOLERANCE_PPM 500 /* HPET 1.0a, 2.3.4: +-0.05 % over 1 ms; the same bound for the others */
#define HIST_RECORD_BINS 64
#define HEAD_ROWS 6

static void emit(struct record *r) { console_emit_record(r); }

/* An xf as a decimal string with `decimals` digits. */
static const char *xs(char buf[FMT_FIXED_CHARS], struct xf v, unsigned decimals)
{
    return fmt_fixed(buf, xf_to_fixed(v, decimals), decimals, decimals);
}

/* A table cell in ns: one decimal while it fits in 8 characters. */
static const char *ns_cell(char buf[FMT_FIXED_CHARS], struct xf ns)
{
    return xs(buf, ns, xf_cmp(ns, xf_from_u64(100000)) < 0 ? 1 : 0);
}

static struct xf ticks_ns(uint64_t ticks) { return tsc_ticks_to_ns(xf_from_u64(ticks)); }

static struct xf nominal_hz(int counter) { return xf_div(xf_from_u64(counters[counter].nominal_mhz), xf_from_u64(1000)); }

/* Counter ticks to ns at the counter's nominal rate (TSC: the measured rate). */
static struct xf counter_ticks_ns(const struct target *t, struct xf ticks)
{
    if (t->counter < 0)
        return tsc_ticks_to_ns(ticks);
    return xf_div(xf_mul(ticks, xf_from_u64(1000000000ull)), nominal_hz(t->counter));
}

static struct xf ppm_of(struct xf ratio_minus_one) { return xf_mul(ratio_minus_one, xf_from_u64(1000000)); }

static const struct target *target_named(const char *name)
{
    for (int i = 0; i < measured.target_count; i++)
        if (!strcmp(measured.targets[i].name, name))
            return &measured.targets[i];
    return 0;
}

static const struct freq_series *series_of(int counter)
{
    for (int i = 0; i < measured.series_count; i++)
        if (measured.series[i].counter == counter)
            return &measured.series[i];
    return 0;
}

/* --- read cost --- */

static void report_latency(void)
{
    char b[7][FMT_FIXED_CHARS];
    const struct profile *p = measured.profile;
    kprintf("\n== Read cost (ns; TSC %s MHz, %s) ==\n", xs(b[0], xf_div(measured.tsc_hz, xf_from_u64(1000000)), 3),
            measured.tsc_hz_source);
    kprintf("  %u reads per TSC variant, %u per other counter, each between two\n", p->latency_fast, p->latency_slow);
    kprintf("  serialised TSC reads, the cost of an empty bracket subtracted\n");
    kprintf("  %-12s %8s %8s %8s %8s %8s %8s %8s\n", "", "min", "p50", "mean", "p99", "p99.9", "max", "stddev");
    for (int i = 0; i < measured.target_count; i++) {
        const struct target *t = &measured.targets[i];
        const struct summary *s = &t->latency;
        struct xf v[7] = {ticks_ns(s->min), ticks_ns(s->p50), tsc_ticks_to_ns(s->mean), ticks_ns(s->p99), ticks_ns(s->p999),
                          ticks_ns(s->max), tsc_ticks_to_ns(s->stddev)};
        kprintf("  %-12s", t->name);
        for (int k = 0; k < 7; k++)
            kprintf(" %8s", ns_cell(b[k], v[k]));
        kprintf("\n");
        struct record r;
        static const char *const keys[7] = {"min_ns", "p50_ns", "mean_ns", "p99_ns", "p999_ns", "max_ns", "stddev_ns"};
        record_begin(&r, "latency");
        record_str(&r, "counter", t->name);
        record_u64(&r, "n", s->n);
        for (int k = 0; k < 7; k++)
            record_fixed(&r, keys[k], xf_to_fixed(v[k], 3), 3);
        record_u64(&r, "min_ticks", s->min);
        record_u64(&r, "p50_ticks", s->p50);
        record_u64(&r, "max_ticks", s->max);
        record_u64(&r, "bracket_overhead_ticks", t->bracket_overhead);
        if (t->batch_done) {
            record_u64(&r, "batch_k", t->batch_k);
            record_fixed(&r, "batch_ns_per_read", xf_to_fixed(tsc_ticks_to_ns(t->batch_ticks), 3), 3);
        }
        emit(&r);
    }
    kprintf("  Batches: back-to-back reads between two brackets, an empty loop's cost\n  subtracted:\n");
    for (int i = 0; i < measured.target_count; i++) {
        const struct target *t = &measured.targets[i];
        if (t->batch_done)
            kprintf("  %-12s %s ns a read in batches of %u (%s ticks)\n", t->name, xs(b[0], tsc_ticks_to_ns(t->batch_ticks), 2),
                    t->batch_k, xs(b[1], t->batch_ticks, 2));
    }
}

/* --- sequential reads, resolution, monotonicity --- */

static void report_histogram_records(const struct target *t)
{
    size_t parts = (t->hist_kept + HIST_RECORD_BINS - 1) / HIST_RECORD_BINS;
    for (size_t part = 0; part < parts; part++) {
        struct record r;
        record_begin(&r, "histogram");
        record_str(&r, "counter", t->name);
        record_u64(&r, "part", part);
        record_u64(&r, "parts", parts);
        record_u64(&r, "distinct", t->distinct);
        record_array_begin(&r, "bins");
        for (size_t i = part * HIST_RECORD_BINS; i < t->hist_kept && i < (part + 1) * HIST_RECORD_BINS; i++) {
            record_array_u64(&r, t->hist[i].value);
            record_array_u64(&r, t->hist[i].count);
        }
        record_array_end(&r);
        emit(&r);
    }
}

static void report_sequence(const struct target *t)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    struct xf tick_ns = counter_ticks_ns(t, xf_from_u64(1));
    struct xf step_ns = counter_ticks_ns(t, xf_from_u64(t->min_step));
    struct xf read_ns = ticks_ns(t->latency.p50);
    kprintf("\n  %s: %llu back-to-back reads; smallest step %llu ticks = %s ns;\n    nominal tick %s ns\n", t->name,
            (unsigned long long)t->seq_reads, (unsigned long long)t->min_step, xs(a, step_ns, 1), xs(b, tick_ns, 3));
    if (t->zero_deltas)
        kprintf("    %llu of %llu consecutive reads saw the same value: it ticks slower than it can "
                "be read, so its resolution is its step, %s ns\n",
                (unsigned long long)t->zero_deltas, (unsigned long long)t->seq_deltas, xs(a, step_ns, 1));
    else if (t->min_step > 1)
        kprintf("    every read saw a new value: the tick is finer than a read (p50 %s ns), so "
                "the resolution you get is the read cost\n",
                xs(a, read_ns, 1));
    if (t->step_gcd > 1)
        kprintf("    it moves in steps of %llu ticks (%s ns), not one tick\n", (unsigned long long)t->step_gcd,
                xs(c, counter_ticks_ns(t, xf_from_u64(t->step_gcd)), 1));

    /* head: the most frequent deltas, in order of delta */
    size_t top[HEAD_ROWS];
    size_t ntop = 0;
    for (size_t k = 0; k < HEAD_ROWS && k < t->hist_kept; k++) {
        size_t best = (size_t)-1;
        for (size_t i = 0; i < t->hist_kept; i++) {
            bool taken = false;
            for (size_t j = 0; j < ntop; j++)
                taken |= top[j] == i;
            if (!taken && (best == (size_t)-1 || t->hist[i].count > t->hist[best].count))
                best = i;
        }
        top[ntop++] = best;
    }
    for (size_t i = 1; i < ntop; i++)
        for (size_t j = i; j > 0 && top[j] < top[j - 1]; j--) {
            size_t x = top[j];
            top[j] = top[j - 1];
            top[j - 1] = x;
        }
    kprintf("    %14s %12s %10s\n", "delta (ticks)", "ns", "reads");
    uint64_t shown = 0;
    for (size_t k = 0; k < ntop; k++) {
        const struct hist_bin *h = &t->hist[top[k]];
        kprintf("    %14llu %12s %10llu\n", (unsigned long long)h->value, xs(a, counter_ticks_ns(t, xf_from_u64(h->value)), 1),
                (unsigned long long)h->count);
        shown += h->count;
    }
    if (t->distinct > ntop)
        kprintf("    and %llu reads at %llu other deltas, up to %llu ticks (%s)\n", (unsigned long long)(t->seq_deltas - shown),
                (unsigned long long)(t->distinct - ntop),
                (unsigned long long)t->hist[t->hist_kept - 1].value,
                t->distinct > t->hist_kept ? "records hold the smallest 1024" : "all in the records");
    if (t->backward)
        kprintf("    %llu BACKWARD steps, the largest %llu ticks\n", (unsigned long long)t->backward,
                (unsigned long long)t->largest_backward);

    struct record r;
    record_begin(&r, "resolution");
    record_str(&r, "counter", t->name);
    record_fixed(&r, "min_step_ns", xf_to_fixed(step_ns, 3), 3);
    record_fixed(&r, "nominal_tick_ns", xf_to_fixed(tick_ns, 6), 6);
    record_u64(&r, "min_step_ticks", t->min_step);
    record_u64(&r, "step_gcd_ticks", t->step_gcd);
    record_u64(&r, "reads", t->seq_reads);
    record_u64(&r, "deltas", t->seq_deltas);
    record_u64(&r, "zero_deltas", t->zero_deltas);
    record_u64(&r, "distinct", t->distinct);
    emit(&r);
    report_histogram_records(t);
}

static void report_monotonicity(const struct target *t)
{
    const struct freq_series *f = t->counter >= 0 ? series_of(t->counter) : 0;
    uint64_t backward = t->backward + (f ? f->backward : 0);
    char a[FMT_FIXED_CHARS];
    struct record r;
    record_begin(&r, "monotonicity");
    record_str(&r, "counter", t->name);
    record_u64(&r, "reads", t->seq_reads);
    record_u64(&r, "backward", backward);
    record_u64(&r, "largest_backward_ticks", t->largest_backward);
    if (f) {
        record_u64(&r, "stalls", f->stalls);
        record_fixed(&r, "longest_stall_ns", xf_to_fixed(ticks_ns(f->longest_stall_tsc), 1), 1);
        record_u64(&r, "wraps", f->wraps);
        record_bool(&r, "stuck", f->stuck);
    }
    emit(&r);
    if (backward)
        check_fail(t->counter < 0 ? "monotonic TSC" : "monotonic", "%s: %llu backward steps, the largest %llu ticks", t->name,
                   (unsigned long long)backward, (unsigned long long)t->largest_backward);
    else
        check_pass(t->counter < 0 ? "monotonic TSC" : "monotonic", "%s: no backward step in %llu reads%s", t->name,
                   (unsigned long long)t->seq_reads, f ? " and the drift window" : "");
    if (f && f->stuck)
        check_fail("counter keeps moving", "%s stopped moving %s s into the drift window", t->name,
                   xs(a, xf_div(ticks_ns(f->stuck_at_tsc), xf_from_u64(1000000000)), 3));
    else if (f && f->stalls)
        kprintf("  %s: %llu stalls (no change while the TSC showed time passing), the longest %s ns\n", t->name,
                (unsigned long long)f->stalls, xs(a, ticks_ns(f->longest_stall_tsc), 0));
}

static void report_sequences(void)
{
    kprintf("\n== Resolution: sequential reads (delta between consecutive reads) ==");
    for (int i = 0; i < measured.target_count; i++)
        report_sequence(&measured.targets[i]);
    kprintf("\n== Monotonicity ==\n");
    for (int i = 0; i < measured.target_count; i++)
        report_monotonicity(&measured.targets[i]);
    for (int i = 0; i < measured.series_count; i++) {
        const struct freq_series *f = &measured.series[i];
        if (f->wraps)
            kprintf("  %s wrapped %llu times in the drift window, each handled\n", counters[f->counter].name,
                    (unsigned long long)f->wraps);
    }
}

/* --- frequency --- */

static void frequency_record(const char *counter, const char *reference, struct xf hz, bool has_nominal, struct xf ppm,
                             struct xf stderr_ppm, struct xf window_s, uint32_t samples, struct xf two_point_hz,
                             struct xf resid_ns)
{
    struct record r;
    record_begin(&r, "frequency");
    record_str(&r, "counter", counter);
    record_str(&r, "reference", reference);
    record_fixed(&r, "hz", xf_to_fixed(hz, 3), 3);
    if (has_nominal)
        record_fixed(&r, "ppm_vs_nominal", xf_to_fixed(ppm, 6), 6);
    else
        record_null(&r, "ppm_vs_nominal");
    record_fixed(&r, "stderr_ppm", xf_to_fixed(stderr_ppm, 6), 6);
    record_fixed(&r, "window_s", xf_to_fixed(window_s, 6), 6);
    record_u64(&r, "samples", samples);
    record_fixed(&r, "two_point_hz", xf_to_fixed(two_point_hz, 3), 3);
    record_fixed(&r, "resid_rms_ns", xf_to_fixed(resid_ns, 3), 3);
    emit(&r);
}

static struct xf window_seconds(uint64_t tsc) { return xf_div(xf_from_u64(tsc), measured.tsc_hz); }

/* The fit's residuals, in ns at the counter's nominal rate, against time. */
static void residual_records(const struct freq_series *f)
{
    struct xf nom = nominal_hz(f->counter);
    struct record r;
    record_begin(&r, "residuals");
    record_str(&r, "counter", "tsc");
    record_str(&r, "reference", counters[f->counter].name);
    record_array_begin(&r, "t_ms");
    for (uint32_t i = 0; i < f->resid_count; i++)
        record_array_u64(&r, (uint64_t)xf_to_fixed(xf_div(xf_from_u64(f->resid_x[i]), measured.tsc_hz), 3));
    record_array_end(&r);
    /* ns = mticks / 1000 / nominal * 1e9, as whole picoseconds in a signed array */
    record_array_begin(&r, "resid_ps");
    for (uint32_t i = 0; i < f->resid_count; i++) {
        int64_t ps = xf_to_fixed(xf_div(xf_mul(xf_from_i64(f->resid_mticks[i]), xf_from_u64(1000000000ull)), nom), 0);
        record_array_i64(&r, ps);
    }
    record_array_end(&r);
    emit(&r);
}

static void report_tsc_against(const struct freq_series *f)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    struct xf nom = nominal_hz(f->counter);
    struct xf hz = xf_div(nom, f->fit.slope);
    struct xf two = xf_div(nom, f->two_point);
    struct xf rel = xf_div(f->fit.slope_stderr, f->fit.slope);
    struct xf resid_ns = xf_div(xf_mul(f->fit.resid_rms, xf_from_u64(1000000000ull)), nom);
    bool claimed = counters[COUNTER_TSC].nominal_mhz != 0;
    struct xf tsc_nom = xf_div(xf_from_u64(counters[COUNTER_TSC].nominal_mhz), xf_from_u64(1000));
    struct xf ppm = claimed ? ppm_of(xf_sub(xf_div(hz, tsc_nom), xf_from_u64(1))) : xf_from_u64(0);
    kprintf("  tsc vs %-8s %17s Hz +- %s ppm, %u samples\n", counters[f->counter].name, xs(a, hz, 3), xs(b, ppm_of(rel), 4),
            f->kept);
    kprintf("    residual RMS %s ns; two-point estimate %s Hz\n", xs(c, resid_ns, 1), xs(d, two, 3));
    if (claimed)
        kprintf("    %s ppm from the claimed nominal\n", xs(a, ppm, 3));
    frequency_record("tsc", counters[f->counter].name, hz, claimed, ppm, ppm_of(rel), window_seconds(f->window_tsc), f->kept,
                     two, resid_ns);
    residual_records(f);
}

static void report_pair(const struct freq_series *f, const struct freq_series *ref)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    /* f_c = f_ref * b_c / b_ref, both slopes in counter ticks per TSC tick */
    struct xf nom_ref = nominal_hz(ref->counter), nom = nominal_hz(f->counter);
    struct xf hz = xf_div(xf_mul(nom_ref, f->fit.slope), ref->fit.slope);
    struct xf two = xf_div(xf_mul(nom_ref, f->two_point), ref->two_point);
    struct xf r1 = xf_div(f->fit.slope_stderr, f->fit.slope), r2 = xf_div(ref->fit.slope_stderr, ref->fit.slope);
    struct xf rel = xf_sqrt(xf_add(xf_mul(r1, r1), xf_mul(r2, r2)));
    struct xf ppm = ppm_of(xf_sub(xf_div(hz, nom), xf_from_u64(1)));
    struct xf resid_ns = xf_div(xf_mul(f->fit.resid_rms, xf_from_u64(1000000000ull)), nom);
    const char *name = counters[f->counter].name, *refname = counters[ref->counter].name;
    kprintf("  %-7s vs %-8s %14s Hz, %s ppm vs nominal +- %s ppm\n", name, refname, xs(a, hz, 3), xs(b, ppm, 3),
            xs(c, ppm_of(rel), 3));
    frequency_record(name, refname, hz, true, ppm, ppm_of(rel), window_seconds(f->window_tsc), f->kept, two, resid_ns);
    struct xf abs_ppm = xf_abs(ppm);
    if (xf_cmp(abs_ppm, xf_from_u64(TOLERANCE_PPM)) <= 0)
        check_pass("frequency within tolerance", "%s: %s ppm from nominal against %s (limit %d ppm)", name, b, refname,
                   TOLERANCE_PPM);
    else
        check_fail("frequency within tolerance", "%s: %s ppm from nominal against %s (limit %d ppm)", name, b, refname,
                   TOLERANCE_PPM);
}

static void report_stability(const struct freq_series *f)
{
    char a[FMT_FIXED_CHARS];
    if (f->sub_count < 2)
        return;
    struct xf nom = nominal_hz(f->counter);
    kprintf("  tsc vs %s over 1 s sub-windows, ppm from the whole-window fit:\n   ", counters[f->counter].name);
    /* the TSC frequency is nom / slope: a sub-window's ppm offset is whole/sub - 1 */
    for (uint32_t i = 0; i < f->sub_count && i < 12; i++)
        kprintf(" %s", xs(a, ppm_of(xf_sub(xf_div(f->fit.slope, f->sub[i].slope), xf_from_u64(1))), 3));
    kprintf("%s\n", f->sub_count > 12 ? " ..." : "");
    for (uint32_t i = 0; i < f->sub_count; i++) {
        const struct line_fit *s = &f->sub[i];
        struct record r;
        record_begin(&r, "stability");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", counters[f->counter].name);
        record_fixed(&r, "start_s", xf_to_fixed(window_seconds(f->sub_start_tsc[i]), 3), 3);
        record_fixed(&r, "hz", xf_to_fixed(xf_div(nom, s->slope), 3), 3);
        record_fixed(&r, "ppm_vs_window", xf_to_fixed(ppm_of(xf_sub(xf_div(f->fit.slope, s->slope), xf_from_u64(1))), 6), 6);
        record_fixed(&r, "stderr_ppm", xf_to_fixed(ppm_of(xf_div(s->slope_stderr, s->slope)), 6), 6);
        record_u64(&r, "samples", s->n);
        emit(&r);
    }
}

static void report_frequency(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    kprintf("\n== Frequency and drift (least-squares fit over bracketed samples) ==\n");
    if (measured.series_count == 0) {
        kprintf("  no counter besides the TSC: nothing to measure the TSC against\n");
        check_skip("TSC frequency", "no HPET, PM timer or PIT to measure it against; ns figures use %s", measured.tsc_hz_source);
        return;
    }
    const struct freq_series *ref = measured.reference >= 0 ? series_of(measured.reference) : 0;
    for (int i = 0; i < measured.series_count; i++) {
        const struct freq_series *f = &measured.series[i];
        kprintf("  %s: kept %u of %u samples (brackets within twice the narrowest, %llu ticks)\n", counters[f->counter].name,
                f->kept, f->slots, (unsigned long long)f->min_width);
    }
    for (int i = 0; i < measured.series_count; i++) {
        const struct freq_series *f = &measured.series[i];
        if (f->fitted && !f->stuck)
            report_tsc_against(f);
        else
            kprintf("  tsc vs %s: no fit (%s)\n", counters[f->counter].name, f->stuck ? "the counter got stuck" : "too few samples");
    }
    if (!ref) {
        check_fail("TSC frequency", "no reference counter gave a usable fit");
        return;
    }
    for (int i = 0; i < measured.series_count; i++) {
        const struct freq_series *f = &measured.series[i];
        if (f != ref && f->fitted && !f->stuck)
            report_pair(f, ref);
    }
    report_stability(ref);

    /* the measured TSC against every claim */
    const struct cpu_info *ci = &boot_cpu.info;
    for (int i = 0; i < ci->claim_count; i++) {
        if (strcmp(ci->claims[i].what, "tsc"))
            continue;
        struct xf ppm = ppm_of(xf_sub(xf_div(measured.tsc_hz, xf_from_u64(ci->claims[i].hz)), xf_from_u64(1)));
        xs(a, ppm, 3);
        if (xf_cmp(xf_abs(ppm), xf_from_u64(TOLERANCE_PPM)) <= 0)
            check_pass("TSC frequency matches its claim", "%s says %llu Hz; measured %s Hz (%s ppm)", ci->claims[i].source,
                       (unsigned long long)ci->claims[i].hz, xs(b, measured.tsc_hz, 0), a);
        else
            check_fail("TSC frequency matches its claim", "%s says %llu Hz; measured %s Hz (%s ppm, limit %d)",
                       ci->claims[i].source, (unsigned long long)ci->claims[i].hz, xs(b, measured.tsc_hz, 0), a, TOLERANCE_PPM);
    }
}

/* --- stolen time --- */

static bool rdtsc_intercepted(void)
{
    const struct target *t = target_named("rdtsc");
    /* A hardware RDTSC costs 10-40 ns (../shared/ANCHORS.md); 250 ns is far
       beyond any real CPU and typical of a VM exit. */
    return t && boot_cpu.info.hypervisor && xf_cmp(ticks_ns(t->latency.p50), xf_from_u64(250)) > 0;
}

static void report_hwlat(void)
{
    const struct hwlat *h = &measured.hwlat;
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    kprintf("\n== Time stolen from the CPU (tight TSC loop, interrupts off) ==\n");
    kprintf("  %s s scanned, %llu loop iterations, typical gap %s ns\n  gaps over %s ns: %llu\n",
            xs(a, window_seconds(h->window_tsc), 2), (unsigned long long)h->iterations, xs(b, ticks_ns(h->typical_gap), 1),
            xs(c, ticks_ns(h->threshold_tsc), 0), (unsigned long long)h->gaps_over_threshold);
    kprintf("  by size: <1us %llu, 1-10us %llu, 10-100us %llu, 100us-1ms %llu, >=1ms %llu;\n  largest %s us, total %s us\n",
            (unsigned long long)h->bins[0], (unsigned long long)h->bins[1], (unsigned long long)h->bins[2],
            (unsigned long long)h->bins[3], (unsigned long long)h->bins[4], xs(a, xf_div(ticks_ns(h->max_gap), xf_from_u64(1000)), 1),
            xs(b, xf_div(ticks_ns(h->total_over_threshold), xf_from_u64(1000)), 1));
    if (h->smi_available)
        kprintf("  SMI count (MSR 0x34): %llu before, %llu after\n", (unsigned long long)h->smi_before,
                (unsigned long long)h->smi_after);
    else
        kprintf("  SMI count: unavailable (%s)\n", h->smi_note);
    if (rdtsc_intercepted())
        kprintf("  The hypervisor appears to intercept RDTSC: a read costs %s ns (p50), where "
                "hardware needs 10-40 ns. Every TSC read here is a trip into the hypervisor.\n",
                xs(a, ticks_ns(target_named("rdtsc")->latency.p50), 0));
    const struct cpu_speed *sp = &measured.speed;
    kprintf("  A one-instruction loop runs %s million iterations per second%s\n",
            fmt_fixed(a, (int64_t)sp->per_second, 6, 2), sp->emulated ? ":" : ".");
    if (sp->emulated)
        kprintf("  far below any hardware (hundreds of millions or more). This virtual CPU "
                "seems to emulate instructions one at a time; the figures describe the emulator.\n");
    struct record r;
    record_begin(&r, "cpu_speed");
    record_u64(&r, "loop_iterations", LOOP_ITERATIONS);
    record_u64(&r, "loop_ticks", sp->loop_tsc);
    record_u64(&r, "iterations_per_s", sp->per_second);
    record_bool(&r, "emulated", sp->emulated);
    emit(&r);
    record_begin(&r, "hwlat");
    record_fixed(&r, "window_s", xf_to_fixed(window_seconds(h->window_tsc), 6), 6);
    record_u64(&r, "iterations", h->iterations);
    record_fixed(&r, "typical_gap_ns", xf_to_fixed(ticks_ns(h->typical_gap), 1), 1);
    record_fixed(&r, "threshold_ns", xf_to_fixed(ticks_ns(h->threshold_tsc), 1), 1);
    record_u64(&r, "gaps", h->gaps_over_threshold);
    record_array_begin(&r, "decade_bins");
    for (int k = 0; k < 5; k++)
        record_array_u64(&r, h->bins[k]);
    record_array_end(&r);
    record_fixed(&r, "max_gap_ns", xf_to_fixed(ticks_ns(h->max_gap), 1), 1);
    record_fixed(&r, "total_gap_ns", xf_to_fixed(ticks_ns(h->total_over_threshold), 1), 1);
    if (h->smi_available)
        record_u64(&r, "smi_delta", h->smi_after - h->smi_before);
    else
        record_null(&r, "smi_delta");
    record_bool(&r, "rdtsc_intercepted", rdtsc_intercepted());
    emit(&r);
}

/* --- verdict --- */

static void report_verdict(void)
{
    char c[FMT_FIXED_CHARS];
    const struct cpu_info *ci = &boot_cpu.info;
    kprintf("\n== Verdict ==\n");
    kprintf("  %-8s %11s %11s %16s %9s\n", "counter", "read p50", "resolution", "freq error", "monotonic");
    for (int cidx = 0; cidx < COUNTER_COUNT; cidx++) {
        const struct counter *ct = &counters[cidx];
        const struct target *t = cidx == COUNTER_TSC ? target_named("rdtsc") : target_named(ct->name);
        if (!ct->present || !t) {
            measured.verdict[cidx].present = ct->present;
            measured.verdict[cidx].advice = ct->present ? "not measured" : ct->reason;
            kprintf("  %-8s absent: %s\n", ct->name, ct->present ? "not measured" : ct->reason);
            continue;
        }
        const struct freq_series *f = cidx == COUNTER_TSC ? 0 : series_of(cidx);
        struct xf read = ticks_ns(t->latency.p50);
        /* resolution: one step when reads repeat, else the read cost */
        struct xf res = t->zero_deltas ? counter_ticks_ns(t, xf_from_u64(t->min_step)) : read;
        if (xf_cmp(res, read) < 0 && !t->zero_deltas)
            res = read;
        struct verdict_row *v = &measured.verdict[cidx];
        v->present = v->measured = true;
        xs(v->read, read, 1);
        xs(v->res, res, 1);
        v->read_ns_x10 = xf_to_fixed(read, 1);
        v->res_ns_x10 = xf_to_fixed(res, 1);
        fmt_format(v->freq, sizeof v->freq, "-");
        if (cidx == COUNTER_TSC && measured.tsc_measured) {
            fmt_format(v->freq, sizeof v->freq, "+-%s ppm", xs(c, ppm_of(measured.tsc_rel_stderr), 4));
            v->has_ppm = true;
            v->ppm_x100 = xf_to_fixed(ppm_of(measured.tsc_rel_stderr), 2);
        } else if (cidx == measured.reference) {
            fmt_format(v->freq, sizeof v->freq, "reference");
        } else if (f && f->fitted && measured.reference >= 0) {
            const struct freq_series *ref = series_of(measured.reference);
            struct xf hz = xf_div(xf_mul(nominal_hz(measured.reference), f->fit.slope), ref->fit.slope);
            struct xf ppm = ppm_of(xf_sub(xf_div(hz, nominal_hz(cidx)), xf_from_u64(1)));
            fmt_format(v->freq, sizeof v->freq, "%s ppm", xs(c, ppm, 2));
            v->has_ppm = true;
            v->ppm_x100 = xf_to_fixed(ppm, 2);
        }
        bool mono = t->backward == 0 && (!f || f->backward == 0);
        fmt_format(v->mono, sizeof v->mono, "%s", f && f->stuck ? "STUCK" : mono ? "yes" : "NO");
        kprintf("  %-8s %8s ns %8s ns %16s %9s\n", ct->name, v->read, v->res, v->freq, v->mono);
        const char *advice;
        if (cidx == COUNTER_TSC) {
            if (!mono)
                advice = "do not trust: it stepped backwards";
            else if (rdtsc_intercepted())
                advice = "monotonic, but the hypervisor traps every read: costly here";
            else if (!ci->invariant_tsc)
                advice = "cheap, but not invariant: its rate may vary with power states";
            else
                advice = "the clock to use: cheapest read, finest step, invariant";
        } else if (!mono || (f && f->stuck)) {
            advice = "do not trust: not monotonic or stopped";
        } else if (cidx == COUNTER_HPET) {
            advice = "a good reference; too slow to read for timestamps";
        } else if (cidx == COUNTER_ACPI_PM) {
            advice = discovered.pm.width == 32 ? "a fallback reference: slow and coarse" : "a fallback reference: slow, coarse, wraps every 4.7 s";
        } else {
            advice = "legacy: 16 bits, wraps every 55 ms; calibration only";
        }
        v->advice = advice;
        kprintf("  %-8s -> %s\n", "", advice);
    }
    if (ci->invariant_tsc)
        check_pass("invariant TSC", "CPUID.80000007h:EDX[8] set");
    else
        check_skip("invariant TSC", "CPUID.80000007h:EDX[8] clear: the TSC may not run at a constant rate");
    const struct memory_arena *m = memory_arena();
    kprintf("\n  Samples used %llu KiB of the %llu MiB region at 0x%llx from the memory map\n",
            (unsigned long long)(measured.memory_used >> 10), (unsigned long long)(m->size >> 20), (unsigned long long)m->base);
    struct record r;
    record_begin(&r, "memory");
    record_hex(&r, "base", m->base);
    record_u64(&r, "size_bytes", m->size);
    record_u64(&r, "used_bytes", measured.memory_used);
    emit(&r);
}

void measure_report(void)
{
    struct record r;
    record_begin(&r, "profile");
    record_str(&r, "name", measured.profile->name);
    record_u64(&r, "drift_ms", measured.profile->drift_ms);
    record_u64(&r, "hwlat_ms", measured.profile->hwlat_ms);
    record_fixed(&r, "tsc_hz", xf_to_fixed(measured.tsc_hz, 3), 3);
    record_str(&r, "tsc_hz_source", measured.tsc_hz_source);
    record_bool(&r, "tsc_measured", measured.tsc_measured);
    emit(&r);
    report_latency();
    report_sequences();
    report_frequency();
    report_hwlat();
    report_verdict();
}

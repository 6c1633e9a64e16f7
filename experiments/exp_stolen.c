/* Experiment "stolen": time taken from the CPU while it runs a tight TSC
   loop with interrupts off (hwlat/hwlatdetect's method): any gap between
   consecutive reads well above the loop's typical one was spent elsewhere
   (SMM, the hypervisor, a host that preempted us). Intel's MSR 0x34 counts
   SMIs where it exists. The report also lists the drift window's
   discontinuities, the same events seen from the counters' side. */
#include "../drivers/cpuinfo.h"
#include "../kernel/console.h"
#include "../kernel/probe.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "experiment.h"

#define TYPICAL_N 1001
#define MSR_SMI_COUNT 0x34 /* Intel SDM vol. 4, Table 2-2: SMI count, Nehalem and later */

struct hwlat {
    uint64_t window_tsc, ran_tsc, iterations, gaps_over_threshold, max_gap, total_over_threshold;
    uint64_t typical_gap, threshold_tsc;
    uint64_t bins[5]; /* [100 ns, 1 us), [1, 10 us), [10, 100 us), [100 us, 1 ms), >= 1 ms */
    bool smi_available;
    uint64_t smi_before, smi_after;
    char smi_note[96];
};
static struct hwlat h;

static void stolen_measure(const struct profile *p)
{
    const struct cpu_info *ci = &boot_cpu.info;
    h = (struct hwlat){0};
    uint64_t gaps[TYPICAL_N], scratch[TYPICAL_N];
    uint64_t prev = rdtsc();
    for (int i = 0; i < TYPICAL_N; i++) {
        uint64_t now = rdtsc();
        gaps[i] = now - prev;
        prev = now;
    }
    stats_sort(gaps, TYPICAL_N, scratch);
    h.typical_gap = gaps[TYPICAL_N / 2];
    uint64_t hundred_ns = results.tsc_estimate_hz / 10000000;
    h.threshold_tsc = 4 * h.typical_gap > hundred_ns ? 4 * h.typical_gap : hundred_ns;
    uint64_t edges[4];
    for (int k = 0; k < 4; k++) /* 1 us, 10 us, 100 us, 1 ms */
        edges[k] = hundred_ns * (k == 0 ? 10 : k == 1 ? 100 : k == 2 ? 1000 : 10000);

    struct probe_fault fault;
    bool intel = !strcmp(ci->vendor, "GenuineIntel");
    if (intel && msr_read_safe(MSR_SMI_COUNT, &h.smi_before, &fault))
        h.smi_available = true;
    else if (intel)
        fmt_format(h.smi_note, sizeof h.smi_note, "MSR 0x34 unreadable: %s", fault.text);
    else
        fmt_format(h.smi_note, sizeof h.smi_note, "MSR 0x34 (SMI count) is Intel-only");

    h.window_tsc = ms_to_tsc(p->hwlat_ms);
    uint64_t start = rdtsc();
    prev = start;
    for (uint64_t it = 0; it < 20000000000ull; it++) {
        uint64_t now = rdtsc();
        uint64_t gap = now - prev;
        prev = now;
        h.iterations++;
        if (gap > h.threshold_tsc) {
            h.gaps_over_threshold++;
            h.total_over_threshold += gap;
            if (gap > h.max_gap)
                h.max_gap = gap;
            int bin = 0;
            while (bin < 4 && gap >= edges[bin])
                bin++;
            h.bins[bin]++;
        }
        if (now - start >= h.window_tsc)
            break;
    }
    h.ran_tsc = prev - start;
    if (h.smi_available && !msr_read_safe(MSR_SMI_COUNT, &h.smi_after, &fault)) {
        h.smi_available = false;
        fmt_format(h.smi_note, sizeof h.smi_note, "MSR 0x34 unreadable after the scan: %s", fault.text);
    }
}

#define MERGE_MS 5 /* events this close in time, in different references, are one event */

/* The drift window's events, in time order, one line per event however
   many references saw it. */
static void report_discontinuities(void)
{
    char a[FMT_FIXED_CHARS];
    if (!experiment_ran("drift"))
        return;
    uint32_t n = results.disc_count;
    if (!results.discontinuities) {
        kprintf("  The drift window saw no discontinuity: no clock paused or jumped there.\n");
        return;
    }
    uint32_t order[sizeof results.disc / sizeof *results.disc];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        while (j > 0 && results.disc[order[j - 1]].at_ms > results.disc[i].at_ms) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    kprintf("  The drift window's discontinuities (time away, a clock that stood still or\n  jumped), as the references saw them:\n");
    for (uint32_t i = 0; i < n;) {
        const struct discontinuity_note *first = &results.disc[order[i]];
        uint32_t j = i;
        kprintf("    %s s:", fmt_fixed(a, (int64_t)first->at_ms, 3, 3));
        bool tsc_side = false;
        uint32_t refs = 0;
        for (; j < n && results.disc[order[j]].at_ms - first->at_ms <= MERGE_MS; j++) {
            const struct discontinuity_note *d = &results.disc[order[j]];
            kprintf(" %s %s", counters[d->reference].name, d->kind);
            refs++;
            tsc_side |= strcmp(d->kind, "gap") != 0;
        }
        if (first->counter_known && strcmp(first->kind, "residual step") && strcmp(first->kind, "tsc went back"))
            kprintf("; TSC +%lld us, %s +%lld us", (long long)first->tsc_us, counters[first->reference].name,
                    (long long)first->counter_us);
        else if (!first->counter_known)
            kprintf("; TSC +%lld us", (long long)first->tsc_us);
        kprintf("\n");
        if (tsc_side && refs > 1)
            kprintf("      every reference at once: the TSC jumped, or all of them stood still\n");
        i = j;
    }
    if (results.discontinuities > n)
        kprintf("    and %u more, not listed\n", results.discontinuities - n);
}

static void stolen_report(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    kprintf("\n== Time stolen from the CPU (tight TSC loop, interrupts off) ==\n");
    kprintf("  %s s scanned, %llu loop iterations, typical gap %s ns\n  gaps over %s ns: %llu\n", xs(a, tsc_ticks_s(h.ran_tsc), 2),
            (unsigned long long)h.iterations, xs(b, tsc_ticks_ns(h.typical_gap), 1), xs(c, tsc_ticks_ns(h.threshold_tsc), 0),
            (unsigned long long)h.gaps_over_threshold);
    kprintf("  by size: <1us %llu, 1-10us %llu, 10-100us %llu, 100us-1ms %llu, >=1ms %llu;\n  largest %s us, total %s us\n",
            (unsigned long long)h.bins[0], (unsigned long long)h.bins[1], (unsigned long long)h.bins[2],
            (unsigned long long)h.bins[3], (unsigned long long)h.bins[4], xs(a, xf_div(tsc_ticks_ns(h.max_gap), xf_from_u64(1000)), 1),
            xs(b, xf_div(tsc_ticks_ns(h.total_over_threshold), xf_from_u64(1000)), 1));
    if (h.smi_available)
        kprintf("  SMI count (MSR 0x34): %llu before, %llu after\n", (unsigned long long)h.smi_before,
                (unsigned long long)h.smi_after);
    else
        kprintf("  SMI count: unavailable (%s)\n", h.smi_note);
    bool trapped = results_rdtsc_intercepted();
    if (trapped)
        kprintf("  The hypervisor appears to intercept RDTSC: a read costs %s ns (p50), where\n"
                "  hardware needs 10-40 ns. Every TSC read here is a trip into the hypervisor.\n",
                xs(a, tsc_ticks_ns(results.target[TARGET_RDTSC].p50_ticks), 0));
    report_discontinuities();
    struct record r;
    record_begin(&r, "hwlat");
    record_xf_fixed(&r, "window_s", tsc_ticks_s(h.ran_tsc), 6);
    record_u64(&r, "iterations", h.iterations);
    record_xf_fixed(&r, "typical_gap_ns", tsc_ticks_ns(h.typical_gap), 1);
    record_xf_fixed(&r, "threshold_ns", tsc_ticks_ns(h.threshold_tsc), 1);
    record_u64(&r, "gaps", h.gaps_over_threshold);
    record_array_begin(&r, "decade_bins");
    for (int k = 0; k < 5; k++)
        record_array_u64(&r, h.bins[k]);
    record_array_end(&r);
    record_xf_fixed(&r, "max_gap_ns", tsc_ticks_ns(h.max_gap), 1);
    record_xf_fixed(&r, "total_gap_ns", tsc_ticks_ns(h.total_over_threshold), 1);
    if (h.smi_available)
        record_u64(&r, "smi_delta", h.smi_after - h.smi_before);
    else
        record_null(&r, "smi_delta");
    record_bool(&r, "rdtsc_intercepted", trapped);
    record_u64(&r, "discontinuities", results.discontinuities);
    emit(&r);
}

const struct experiment exp_stolen = {
    .name = "stolen",
    .what = "a tight TSC loop: time taken from the CPU",
    .needs_tsc = true,
    .measure = stolen_measure,
    .report = stolen_report,
};

/* Experiment "stolen": time taken from the CPU while it runs a tight TSC
   loop with interrupts off (hwlat/hwlatdetect's method): any gap between
   consecutive reads well above the loop's typical one was spent elsewhere
   (SMM, the hypervisor, a host that preempted us). Intel's MSR 0x34 counts
   SMIs where it exists. The report also lists the drift window's
   discontinuities, the same events seen from the counters' side. Where KVM
   offers steal time, its own count over the same window stands beside the
   scan's (lib/steal.h). */
#include "../drivers/cpuinfo.h"
#include "../drivers/kvm_steal.h"
#include "../kernel/checks.h"
#include "../kernel/discover.h"
#include "../kernel/console.h"
#include "../kernel/probe.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
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

/* KVM's steal count on every running CPU, one area each (64 bytes, so each
   is 64-byte aligned): the boot CPU's around the scan it runs; each AP's
   registered and read by a job on it just before the scan and read and
   disabled by another just after. The APs run no scan: between the jobs
   they sleep in HLT, and a halted vCPU is not runnable, so what KVM adds
   to an AP's count is the time its thread waited for a host CPU once woken
   (for the second job, and any other wake-up). */
static volatile struct kvm_steal_time steal_area[PERCPU_MAX] __attribute__((aligned(KVM_STEAL_ALIGN)));
_Static_assert(sizeof(struct kvm_steal_time) % KVM_STEAL_ALIGN == 0, "every CPU's area is aligned");
static struct ap_steal {
    bool tried, registered, on; /* a job was sent; the area was filled; both reads settled */
    char why[160];
    uint64_t before_ns, after_ns, before_tsc, after_tsc;
    uint32_t version_before, version_after, retries;
} ap_st[PERCPU_MAX];
static struct {
    bool on;                    /* registered, and both reads settled */
    char why[160];              /* why not, when not */
    uint64_t before_ns, after_ns;
    uint32_t version_before, version_after, retries;
    uint64_t edge_ticks;
    uint32_t rate_ppm;
    struct steal_comparison cmp;
} st;

#define STEAL_FILL_MS 200
#define STEAL_FILL_SPINS 10000000

/* Every access to MSR_KVM_STEAL_TIME through the safe path: a KVM that
   offers the feature may still refuse the MSR (or msr_fault= makes it) */
static bool steal_set(uint64_t value, struct probe_fault *fault) { return msr_write_safe(MSR_KVM_STEAL_TIME, value, fault); }

/* Until KVM has filled the area (an even, non-zero version): bounded. */
static bool steal_filled(const volatile struct kvm_steal_time *a)
{
    uint64_t deadline = rdtsc() + ms_to_tsc(STEAL_FILL_MS);
    for (uint32_t i = 0; i < STEAL_FILL_SPINS && rdtsc() < deadline; i++)
        if (a->version && !(a->version & 1))
            return true;
    return false;
}

/* On an AP (its index in arg): register its area, wait for KVM to fill it
   and read the count. Faults are caught by the job's probe. */
static void ap_steal_on_job(void *arg)
{
    int i = (int)(uintptr_t)arg;
    struct ap_steal *a = &ap_st[i];
    volatile struct kvm_steal_time *area = &steal_area[i];
    memset((void *)area, 0, sizeof *area);
    struct probe_fault fault;
    char name[48];
    if (!steal_set((uint64_t)(uintptr_t)area | KVM_STEAL_ENABLE, &fault)) {
        fmt_format(a->why, sizeof a->why, "registering the area: %s faulted: %s", msr_name(MSR_KVM_STEAL_TIME, name), fault.text);
        return;
    }
    if (!steal_filled(area)) {
        (void)steal_set(0, &fault);
        fmt_format(a->why, sizeof a->why, "KVM did not fill its area within %u ms (version 0x%x)", STEAL_FILL_MS, area->version);
        return;
    }
    a->registered = true;
    a->version_before = area->version;
    a->on = kvm_steal_read(area, &a->before_ns, &a->retries);
    a->before_tsc = rdtsc();
}

/* On an AP: read its count once more and disable its area. */
static void ap_steal_off_job(void *arg)
{
    int i = (int)(uintptr_t)arg;
    struct ap_steal *a = &ap_st[i];
    a->after_tsc = rdtsc();
    a->on &= kvm_steal_read(&steal_area[i], &a->after_ns, &a->retries);
    a->version_after = steal_area[i].version;
    struct probe_fault fault;
    (void)steal_set(0, &fault);
}

#define AP_STEAL_JOB_MS (STEAL_FILL_MS + 300)

/* Sends fn to every running AP; a job that does not end in time or faults
   says so in its CPU's why. */
static void ap_steal_all(smp_job fn, bool first)
{
    for (int i = 1; i < PERCPU_MAX; i++) {
        struct ap_steal *a = &ap_st[i];
        if (!smp.tried || !smp_cpu_of(i) || (!first && !a->registered))
            continue;
        const struct smp_cpu *c = smp_cpu_of(i);
        if (first)
            *a = (struct ap_steal){.tried = true};
        bool faulted = false;
        struct probe_fault fault;
        if (!smp_run(i, fn, (void *)(uintptr_t)i, ms_to_tsc(AP_STEAL_JOB_MS), &faulted, &fault)) {
            a->on = false;
            fmt_format(a->why, sizeof a->why, "its job did not run: %s", c->reason[0] ? c->reason : "it takes no jobs");
        } else if (faulted) {
            a->on = false;
            fmt_format(a->why, sizeof a->why, "%s the area (MSR 0x%x) faulted: %s", first ? "registering" : "disabling",
                       MSR_KVM_STEAL_TIME, fault.text);
        } else if (!first && !a->on && !a->why[0])
            fmt_format(a->why, sizeof a->why, "the area's version never settled (%u reads thrown away)", a->retries);
        else if (!first && a->after_ns < a->before_ns) {
            a->on = false;
            fmt_format(a->why, sizeof a->why, "KVM's count went back (%llu ns, then %llu)", (unsigned long long)a->before_ns,
                       (unsigned long long)a->after_ns);
        }
    }
}
static void steal_disable_run(void *unused)
{
    (void)unused;
    struct probe_fault fault;
    (void)steal_set(0, &fault);
}

/* Whether KVM offers steal time here; st.why says why not. */
static bool steal_offered(void)
{
    const struct pvclocks *pv = &discovered.pv;
    if (!boot_cpu.info.hypervisor) {
        fmt_format(st.why, sizeof st.why, "no hypervisor (CPUID.1:ECX[31] clear): nobody to steal or count");
        return false;
    }
    if (!pv->kvm_base) {
        fmt_format(st.why, sizeof st.why, "the hypervisor (\"%s\") is not KVM: no steal-time area", boot_cpu.info.hv_vendor);
        return false;
    }
    if (!(pv->kvm_features & KVM_FEATURE_STEAL_TIME)) {
        fmt_format(st.why, sizeof st.why, "KVM does not offer steal time (CPUID 0x%x EAX bit 5 clear; features 0x%x)",
                   pv->kvm_base + KVM_CPUID_FEATURES, pv->kvm_features);
        return false;
    }
    return true;
}

static bool steal_start(void)
{
    st.on = false;
    if (!steal_offered())
        return false;
    memset((void *)&steal_area[0], 0, sizeof steal_area[0]); /* msr.rst: the guest zeroes it first */
    memset(ap_st, 0, sizeof ap_st);
    struct probe_fault fault;
    char name[48];
    if (!steal_set((uint64_t)(uintptr_t)&steal_area[0] | KVM_STEAL_ENABLE, &fault)) {
        fmt_format(st.why, sizeof st.why, "registering the area: %s faulted: %s", msr_name(MSR_KVM_STEAL_TIME, name), fault.text);
        return false;
    }
    /* KVM's first update adds all the vCPU thread has waited since it was
       made (Linux x86.c record_steal_time: last_steal starts at 0): the
       count before the scan must be read after it. */
    if (steal_filled(&steal_area[0]))
        return true;
    probe_run(steal_disable_run, 0, &fault);
    fmt_format(st.why, sizeof st.why, "KVM did not fill the area within %u ms of its registration (version 0x%x)", STEAL_FILL_MS,
               steal_area[0].version);
    return false;
}

/* The TSC rate's uncertainty in ppm, for the scan's ns. */
static uint32_t steal_rate_ppm(void)
{
    if (results.tsc_measured) {
        int64_t u = xf_to_fixed(results.tsc_uncertainty_ppm, 0) + 1 + results.tsc_absolute_ppm;
        return u > 0 && u < 1000000 ? (uint32_t)u : 1000000;
    }
    /* the quick estimate: within 1 % (kernel/results.c, UNWRAP_RATE_TOL_PPM);
       a claim or an assumption: 30 % */
    return results.tsc_estimate_checked ? 10000 : 300000;
}

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
    bool steal = steal_start();
    if (steal) {
        smp_start(); /* only=stolen: the APs are not running yet */
        ap_steal_all(ap_steal_on_job, true);
    }
    uint64_t steal_read_at = rdtsc();
    bool settled = true;
    if (steal) {
        st.version_before = steal_area[0].version;
        settled = kvm_steal_read(&steal_area[0], &st.before_ns, &st.retries);
    }
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
    if (steal) {
        settled &= kvm_steal_read(&steal_area[0], &st.after_ns, &st.retries);
        st.version_after = steal_area[0].version;
        st.edge_ticks = start - steal_read_at + rdtsc() - prev;
        struct probe_fault fault;
        probe_run(steal_disable_run, 0, &fault); /* KVM writes there no more */
        ap_steal_all(ap_steal_off_job, false);
        if (!settled)
            fmt_format(st.why, sizeof st.why, "the area's version never settled (%u reads thrown away)", st.retries);
        else if (!st.version_after)
            fmt_format(st.why, sizeof st.why, "KVM never filled the area (version still 0 after the scan)");
        else {
            st.on = true;
            st.rate_ppm = steal_rate_ppm();
            struct steal_window w = {
                .steal_before_ns = st.before_ns, .steal_after_ns = st.after_ns, .scan_ticks = h.ran_tsc,
                .reads = h.iterations, .over_count = h.gaps_over_threshold, .over_ticks = h.total_over_threshold,
                .typical_ticks = h.typical_gap, .edge_ticks = st.edge_ticks,
                .tsc_hz = (uint64_t)xf_to_fixed(results.tsc_hz, 0), .rate_ppm = st.rate_ppm,
            };
            steal_compare(&w, &st.cmp);
            if (!st.cmp.valid) {
                st.on = false;
                fmt_format(st.why, sizeof st.why, "KVM's count went back (%llu ns before the scan, %llu after)",
                           (unsigned long long)st.before_ns, (unsigned long long)st.after_ns);
            }
        }
    }
    if (smp.tried)
        smp_park_all(); /* the last use of the APs (the timers and cpus phases leave them to this one) */
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
        kprintf("  The drift window saw no gap and no discontinuity: the loop was never away,\n  and no clock stood still or jumped there.\n");
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
    kprintf("  The drift window's gaps (the loop away) and discontinuities (a clock that\n  stood still or jumped), as the references saw them:\n");
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

static struct xf us_of(uint64_t ns) { return xf_div(xf_from_u64(ns), xf_from_u64(1000)); }
static struct xf ms_of(uint64_t ns) { return xf_div(xf_from_u64(ns), xf_from_u64(1000000)); }

/* KVM's count beside the scan's: a line for people, a record for tools. */
static void steal_report_bsp(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    const char *check = "steal time";
    struct record r;
    record_begin(&r, "steal");
    record_u64(&r, "cpu", 0);
    record_bool(&r, "counted", st.on);
    if (!st.on) {
        check_skip(check, "%s", st.why);
        record_str(&r, "reason", st.why);
        emit(&r);
        return;
    }
    const struct steal_comparison *m = &st.cmp;
    uint64_t both = m->kvm_uncertainty_ns + m->scan_uncertainty_ns;
    kprintf("  KVM's steal count (MSR 0x%x), boot CPU: %s ms +- %s ms\n", MSR_KVM_STEAL_TIME, xs(a, ms_of(m->kvm_ns), 3),
            xs(b, ms_of(m->kvm_uncertainty_ns), 3));
    kprintf("  the scan's gaps over %s ns, less the loop's turn: %s ms +- %s ms\n", xs(a, tsc_ticks_ns(h.threshold_tsc), 0),
            xs(b, ms_of(m->scan_ns), 3), xs(c, ms_of(m->scan_uncertainty_ns), 3));
    kprintf("    (KVM adds a wait at the vCPU's next entry: only one between a read\n"
            "    and the scan's end, %s us in all, can be in one count alone. The\n"
            "    scan's +-: turns under the threshold beyond the typical one, %s ms,\n"
            "    and the TSC rate's %u ppm.)\n",
            xs(a, us_of(m->kvm_uncertainty_ns), 1), xs(b, ms_of(m->below_threshold_ns), 3), st.rate_ppm);
    if (m->agree)
        kprintf("  They agree within their uncertainties (difference %s ms, allowed %s).\n",
                xs(a, xf_div(xf_from_i64(m->difference_ns), xf_from_u64(1000000)), 3), xs(b, ms_of(both), 3));
    else if (m->difference_ns > 0)
        kprintf("  The scan lost %s ms more than KVM counts, beyond both uncertainties\n"
                "  (%s ms): time taken by what KVM does not call steal (the host's\n"
                "  interrupts, the hypervisor's own work for this vCPU, a hypervisor\n"
                "  under the host).\n",
                xs(a, ms_of((uint64_t)m->difference_ns), 3), xs(b, ms_of(both), 3));
    if (m->kvm_ns > m->scan_ns + both)
        check_fail(check, "KVM counts %s ms stolen, the scan saw %s ms (+- %s ms together)", xs(a, ms_of(m->kvm_ns), 3),
                   xs(b, ms_of(m->scan_ns), 3), xs(c, ms_of(both), 3));
    else
        check_pass(check, "KVM %s ms, the scan %s ms, +- %s ms together", xs(a, ms_of(m->kvm_ns), 3), xs(b, ms_of(m->scan_ns), 3),
                   xs(c, ms_of(both), 3));
    record_u64(&r, "kvm_ns", m->kvm_ns);
    record_u64(&r, "kvm_uncertainty_ns", m->kvm_uncertainty_ns);
    record_u64(&r, "scan_ns", m->scan_ns);
    record_u64(&r, "scan_uncertainty_ns", m->scan_uncertainty_ns);
    record_u64(&r, "below_threshold_ns", m->below_threshold_ns);
    record_u64(&r, "rate_ppm", st.rate_ppm);
    record_i64(&r, "difference_ns", m->difference_ns);
    record_bool(&r, "agree", m->agree);
    record_u64(&r, "version_updates", (st.version_after - st.version_before) / 2);
    record_u64(&r, "read_retries", st.retries);
    emit(&r);
}

/* Each AP's count over its two reads, which bracket the scan. */
static void steal_report_aps(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    bool said = false;
    for (int i = 1; i < PERCPU_MAX; i++) {
        const struct ap_steal *x = &ap_st[i];
        if (!x->tried)
            continue;
        if (!said)
            kprintf("  The other CPUs, asleep in HLT while the boot CPU scans: KVM's count is the\n"
                    "  time each vCPU thread was runnable but not running. A halted vCPU is not\n"
                    "  runnable, so it holds only waits for a host CPU once woken (for the read\n"
                    "  after the scan, or anything else that woke it).\n");
        said = true;
        struct record r;
        record_begin(&r, "steal");
        record_u64(&r, "cpu", (uint64_t)i);
        record_bool(&r, "counted", x->on);
        if (!x->on) {
            kprintf("  CPU %d: not counted: %s\n", i, x->why);
            record_str(&r, "reason", x->why);
            emit(&r);
            continue;
        }
        uint64_t kvm_ns = x->after_ns - x->before_ns;
        uint64_t window_ticks = x->after_tsc - x->before_tsc;
        kprintf("  CPU %d: KVM's steal count %s ms, between its two reads %s ms apart (around the scan's %s ms)\n",
                i, xs(a, ms_of(kvm_ns), 3), xs(b, xf_div(tsc_ticks_ns(window_ticks), xf_from_u64(1000000)), 3),
                xs(c, xf_div(tsc_ticks_ns(h.ran_tsc), xf_from_u64(1000000)), 3));
        record_bool(&r, "idle", true);
        record_u64(&r, "kvm_ns", kvm_ns);
        record_xf_fixed(&r, "window_ns", tsc_ticks_ns(window_ticks), 0);
        record_u64(&r, "version_updates", (x->version_after - x->version_before) / 2);
        record_u64(&r, "read_retries", x->retries);
        emit(&r);
    }
}

static void steal_report(void)
{
    steal_report_bsp();
    steal_report_aps();
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
    steal_report();
    bool trapped = results_rdtsc_intercepted();
    if (trapped) {
        /* the read's cost as every output says it (results_read_cost) */
        char cost[RESULTS_COST_CHARS];
        bool below = results.target[TARGET_RDTSC].below_step;
        kprintf("  The hypervisor appears to intercept RDTSC: a read %s %s%s, where hardware needs 10-40 ns. "
                "Every TSC read here is a trip into the hypervisor.\n",
                below ? "is" : "costs", results_read_cost(cost, TARGET_RDTSC), below ? "" : " (p50)");
    }
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

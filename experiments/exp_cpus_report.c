/* Experiment "cpus", its report: the table of CPUs, each CPU's TSC against
   CPU 0's, the pairs of the others, the tsc_skew known answer and the
   verdict, with their records and checks. */
#include "exp_cpus_state.h"

#include "../drivers/lapic.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/probe.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../kernel/smp.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/cpus_analysis.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "../lib/tsc_sync.h"
#include "../lib/xf.h"

/* In a summary, at most this many CPUs are listed in full. */
#define CPUS_LISTED_MAX 16

static const char *mode_name(const struct cpu_facts *f)
{
    if (!f->done)
        return "-";
    if (!(f->apic_base & APIC_BASE_ENABLE))
        return "off";
    return f->apic_base & APIC_BASE_EXTD ? "x2APIC" : "xAPIC";
}

/* Whether a MADT entry's row stands out in a summarised table: enabled but
   not running, a fault, CPUID bits unlike CPU 0's, or CPUID's APIC ID
   unlike the MADT's. */
static bool entry_stands_out(const struct smp_cpu *c, const struct cpu_facts *f, const struct cpu_facts *bf)
{
    if (!c->enabled)
        return false;
    if (!c->started || c->lost || !f || !f->done)
        return true;
    return f->time_bits != bf->time_bits || f->apic_id_cpuid != c->apic_id;
}

/* One CPU's RDTSC cost, in the words every output uses (lib/verdict.h). */
static void cpu_cost(const struct cpu_facts *f, struct read_cost *c)
{
    *c = (struct read_cost){.p50_ns = tsc_ticks_ns(f->p50_ticks), .below_step = stats_below_step(f->p50_ticks, results.tsc_step_ticks),
                            .step_ns = tsc_ticks_ns(results.tsc_step_ticks), .batch_done = true,
                            .batch_ns = tsc_ticks_to_ns(f->batch_ticks)};
}

static void report_cpu_table(bool full)
{
    char a[FMT_FIXED_CHARS];
    struct read_cost rc;
    bool marked = false;
    const struct cpu_facts *cost_min = 0, *cost_max = 0;
    const struct cpu_facts *bf = &cpus_st.facts[0];
    const struct topo_shifts *topo = &cpus_st.topo;
    uint32_t shown = 0, hidden = 0, disabled = 0, running = 0, disabled_all = 0;
    for (uint32_t e = 0; e < smp.count; e++)
        disabled_all += !smp.cpus[e].enabled;
    /* a MADT that lists every possible CPU (QEMU's maxcpus=) has many disabled entries: one line for them */
    bool fold_disabled = !full || disabled_all > CPUS_FULL_REPORT_MAX;
    for (uint32_t e = 0; e < smp.count; e++) {
        const struct smp_cpu *c = &smp.cpus[e];
        const struct cpu_facts *f = c->index >= 0 ? &cpus_st.facts[c->index] : 0;
        struct record r;
        record_begin(&r, "cpu");
        if (c->index >= 0)
            record_u64(&r, "index", (uint64_t)c->index);
        else
            record_null(&r, "index");
        record_u64(&r, "apic_id", c->apic_id);
        record_u64(&r, "uid", c->uid);
        record_u64(&r, "madt_type", c->madt_type);
        record_bool(&r, "enabled", c->enabled);
        record_bool(&r, "online_capable", c->online_capable);
        record_bool(&r, "started", c->started && !c->lost);
        record_str(&r, "reason", c->reason[0] ? c->reason : (f && f->fault[0] ? f->fault : 0));
        if (topo->valid) {
            struct topo_place pl = topo_place_of(topo, c->apic_id);
            record_u64(&r, "package", pl.package);
            record_u64(&r, "core", pl.core);
            record_u64(&r, "thread", pl.thread);
        } else {
            record_null(&r, "package");
            record_null(&r, "core");
            record_null(&r, "thread");
        }
        if (f && f->done) {
            record_bool(&r, "x2apic", f->apic_base & APIC_BASE_EXTD);
            if (f->adjust_read)
                record_i64(&r, "tsc_adjust", (int64_t)f->tsc_adjust);
            else
                record_null(&r, "tsc_adjust");
            record_str(&r, "tsc_adjust_fault", f->adjust_fault[0] ? f->adjust_fault : 0);
            if (f->aux_read)
                record_u64(&r, "tsc_aux", f->tsc_aux);
            else
                record_null(&r, "tsc_aux");
            record_xf_fixed(&r, "read_p50_ns", tsc_ticks_ns(f->p50_ticks), 1);
            record_u64(&r, "read_p50_ticks", f->p50_ticks);
            record_bool(&r, "read_below_step", stats_below_step(f->p50_ticks, results.tsc_step_ticks));
            record_xf_fixed(&r, "batch_ns_per_read", tsc_ticks_to_ns(f->batch_ticks), 3);
            record_hex(&r, "cpuid_time_bits", f->time_bits);
            record_u64(&r, "cpuid_apic_id", f->apic_id_cpuid);
            record_u64(&r, "start_ticks", c->start_ticks);
        } else {
            record_null(&r, "x2apic");
            record_null(&r, "tsc_adjust");
            record_null(&r, "tsc_aux");
            record_null(&r, "read_p50_ns");
            record_null(&r, "batch_ns_per_read");
        }
        emit(&r);

        if (!c->enabled)
            disabled++;
        if (f && f->done) {
            running++;
            struct read_cost lo, hi;
            cpu_cost(f, &rc);
            if (cost_min)
                cpu_cost(cost_min, &lo), cpu_cost(cost_max, &hi);
            if (!cost_min || read_cost_ns_x10(&rc) < read_cost_ns_x10(&lo))
                cost_min = f;
            if (!cost_max || read_cost_ns_x10(&rc) > read_cost_ns_x10(&hi))
                cost_max = f;
        }
        if (fold_disabled && !c->enabled)
            continue;
        if (!full && !entry_stands_out(c, f, bf)) {
            hidden++;
            continue;
        }
        if (!full && shown == CPUS_LISTED_MAX) {
            hidden++;
            continue;
        }
        if (!shown++)
            kprintf("  %-3s %5s %5s %-6s %-10s %10s %7s %10s  %s\n", "cpu", "apic", "uid", "mode", "state", "TSC_ADJUST", "TSC_AUX",
                    "rdtsc", "CPUID bits");
        char idx[8], adj[24], aux[16], cost[FMT_FIXED_CHARS + 4];
        fmt_format(idx, sizeof idx, c->index >= 0 ? "%d" : "-", c->index);
        const char *state = c->is_bsp ? "boot CPU" : c->started && !c->lost ? "started" : "not running";
        if (!f || !f->done) {
            kprintf("  %-3s %5u %5u %-6s %-10s\n      %s\n", idx, c->apic_id, c->uid, "-", state,
                    c->reason[0] ? c->reason : f && f->fault[0] ? f->fault : "");
            continue;
        }
        if (f->adjust_read)
            fmt_format(adj, sizeof adj, "%lld", (long long)f->tsc_adjust);
        else
            fmt_format(adj, sizeof adj, "-");
        if (f->aux_read)
            fmt_format(aux, sizeof aux, "%u", f->tsc_aux);
        else
            fmt_format(aux, sizeof aux, "-");
        cpu_cost(f, &rc);
        fmt_format(cost, sizeof cost, "%s ns", read_cost_cell(a, &rc));
        marked |= rc.below_step;
        kprintf("  %-3s %5u %5u %-6s %-10s %10s %7s %10s  0x%02x%s\n", idx, c->apic_id, c->uid, mode_name(f), state, adj, aux,
                cost, f->time_bits, c->index == 0 ? "" : f->time_bits == bf->time_bits ? " same" : " DIFFERS");
        if (f->apic_id_cpuid != c->apic_id)
            kprintf("       note: CPUID gives APIC ID %u on this CPU, the MADT %u\n", f->apic_id_cpuid, c->apic_id);
    }
    if (shown && marked)
        kprintf("  %s (%s ns)\n", READ_COST_MARK_NOTE, ns_cell(a, tsc_ticks_ns(results.tsc_step_ticks)));
    if (shown)
        kprintf("  CPUID bits: 0x01 TSC, 0x02 RDTSCP, 0x04 invariant TSC, 0x08 TSC-deadline,\n"
                "  0x10 TSC_ADJUST, 0x20 x2APIC; bits that differ from CPU 0's are a finding\n");
    if (full && fold_disabled)
        kprintf("  %u more MADT entries are disabled: left alone (each is a cpu record)\n", disabled_all);
    /* CPUID claims TSC_ADJUST, yet reading it faulted: said once, the MSR named */
    unsigned adjust_faults = 0, first = 0;
    for (unsigned i = 0; i < PERCPU_MAX; i++)
        if (cpus_st.facts[i].done && cpus_st.facts[i].adjust_fault[0] && !adjust_faults++)
            first = i;
    if (adjust_faults) {
        char name[48];
        report_note("reading %s faulted on %u CPU%s (CPU %u: %s), though CPUID claims it: its column is -",
                    msr_name(MSR_TSC_ADJUST, name), adjust_faults, adjust_faults == 1 ? "" : "s", first,
                    cpus_st.facts[first].adjust_fault);
    }
    if (!full) {
        char b[FMT_FIXED_CHARS];
        struct read_cost lo, hi;
        if (running)
            cpu_cost(cost_min, &lo), cpu_cost(cost_max, &hi);
        kprintf("  %u CPUs answered, an RDTSC %s to %s ns; %u disabled MADT entries left alone\n", running,
                running ? read_cost_cell(a, &lo) : "-", running ? read_cost_cell(b, &hi) : "-", disabled);
        if (running && (lo.below_step || hi.below_step) && !(shown && marked))
            kprintf("  %s (%s ns)\n", READ_COST_MARK_NOTE, ns_cell(a, tsc_ticks_ns(results.tsc_step_ticks)));
        kprintf("  %s (each CPU's row is a cpu record)\n",
                shown ? "The rows above stand out" : "No CPU stands out: all started, CPUID bits and APIC IDs agree");
        if (hidden && shown == CPUS_LISTED_MAX)
            kprintf("  (only the first %u that stand out are shown)\n", CPUS_LISTED_MAX);
    }
}

/* A signed tick count as a time with its unit: ns below 10 us, us below
   10 ms, then ms. */
static const char *ticks_ns(char b[FMT_FIXED_CHARS + 4], int64_t ticks)
{
    struct xf ns = tsc_ticks_to_ns(xf_from_i64(ticks));
    struct xf mag = xf_abs(ns);
    const char *end;
    if (xf_cmp(mag, xf_from_u64(10000)) < 0) {
        xs(b, ns, 1);
        end = " ns";
    } else if (xf_cmp(mag, xf_from_u64(10000000)) < 0) {
        xs(b, xf_div(ns, xf_from_u64(1000)), 2);
        end = " us";
    } else {
        xs(b, xf_div(ns, xf_from_u64(1000000)), 3);
        end = " ms";
    }
    size_t n = strlen(b);
    for (int i = 0; end[i]; i++)
        b[n++] = end[i];
    b[n] = '\0';
    return b;
}

static void sync_record(const struct sync_row *row, uint32_t flags)
{
    const struct tsc_offset *o = &row->first;
    bool ok = row->measured && tsc_offset_consistent(o);
    struct record r;
    record_begin(&r, "tsc_sync");
    record_u64(&r, "cpu", (uint64_t)row->index);
    if (ok) {
        record_i64(&r, "offset_lo_ticks", o->lo);
        record_i64(&r, "offset_hi_ticks", o->hi);
        record_u64(&r, "round_trip_min_ticks", o->round_trip_min);
        record_xf_fixed(&r, "offset_lo_ns", tsc_ticks_to_ns(xf_from_i64(o->lo)), 1);
        record_xf_fixed(&r, "offset_hi_ns", tsc_ticks_to_ns(xf_from_i64(o->hi)), 1);
    } else {
        record_null(&r, "offset_lo_ticks");
        record_null(&r, "offset_hi_ticks");
        if (row->measured)
            record_u64(&r, "round_trip_min_ticks", o->round_trip_min);
        else
            record_null(&r, "round_trip_min_ticks");
    }
    record_u64(&r, "exchanges", o->exchanges);
    record_bool(&r, "exchanges_cut", row->first_cut);
    if (row->warp_done) {
        record_u64(&r, "warps", row->warps);
        record_u64(&r, "max_warp_ticks", row->max_warp);
        record_u64(&r, "warp_rounds", row->warp_rounds_bsp + row->warp_rounds_ap);
        record_u64(&r, "warp_cross", row->warp_cross);
        record_bool(&r, "warp_cut", row->warp_cut);
    } else {
        record_null(&r, "warps");
        record_null(&r, "max_warp_ticks");
    }
    if (row->kvm_done) {
        record_u64(&r, "kvmclock_warps", row->kvm_warps);
        record_u64(&r, "kvmclock_max_warp_ns", row->kvm_max_warp_ns);
        record_u64(&r, "kvmclock_warp_cross", row->kvm_cross);
    }
    if (row->rate_ok) {
        record_fixed(&r, "rate_ppm", row->rate_mppm, 3);
        record_fixed(&r, "rate_uncertainty_ppm", (int64_t)row->rate_unc_mppm, 3);
        record_xf_fixed(&r, "rate_window_s", tsc_ticks_s(row->second_mid_tsc - row->first_mid_tsc), 3);
        record_null(&r, "rate_reason");
    } else {
        record_null(&r, "rate_ppm");
        record_null(&r, "rate_uncertainty_ppm");
        record_str(&r, "rate_reason", row->rate_why ? row->rate_why : row->why[0] ? row->why : "not measured");
    }
    record_str(&r, "reason", row->why[0] ? row->why : 0);
    record_hex(&r, "stands_out", flags);
    emit(&r);
}

static void sync_text(const struct sync_row *row)
{
    char a[FMT_FIXED_CHARS + 4], b[FMT_FIXED_CHARS + 4], c[FMT_FIXED_CHARS + 4], d[FMT_FIXED_CHARS + 4];
    const struct tsc_offset *o = &row->first;
    if (!row->measured) {
        kprintf("  CPU %d: %s\n", row->index, row->why);
        return;
    }
    if (!tsc_offset_consistent(o)) {
        kprintf("  CPU %d: the exchanges disagree (lowest bound %lld above highest %lld ticks): the two TSCs\n"
                "         moved against each other while they were taken\n",
                row->index, (long long)o->lo, (long long)o->hi);
    } else {
        int64_t mid = tsc_offset_mid(o);
        uint64_t half = tsc_offset_half(o);
        kprintf("  CPU %d: offset [%lld, %lld] ticks, %s +- %s\n", row->index, (long long)o->lo, (long long)o->hi,
                ticks_ns(a, mid), ticks_ns(b, (int64_t)half));
        kprintf("         round trip min %llu ticks (%s), %u exchanges%s\n", (unsigned long long)o->round_trip_min,
                ticks_ns(c, (int64_t)o->round_trip_min), o->exchanges, row->first_cut ? ", budget cut short" : "");
    }
    if (row->warp_done) {
        if (row->warp_cross)
            kprintf("         warps: %llu in %llu cross-CPU comparisons, largest %llu ticks%s\n", (unsigned long long)row->warps,
                    (unsigned long long)row->warp_cross, (unsigned long long)row->max_warp,
                    row->warp_cut ? ", cut by its time budget" : "");
        else
            kprintf("         warps: none compared (the lock never passed between them in %u ms)\n", WARP_CAP_MS);
    } else {
        kprintf("         warps: not tested (%s)\n", cpus_phase_over() ? "time budget" : "the CPU did not take the job");
    }
    if (row->kvm_done)
        kprintf("         kvmclock warps: %llu in %llu cross-CPU comparisons, largest %llu ns\n", (unsigned long long)row->kvm_warps,
                (unsigned long long)row->kvm_cross, (unsigned long long)row->kvm_max_warp_ns);
    if (row->rate_ok)
        kprintf("         rate: %s +- %s ppm against CPU 0 over %s s\n", fmt_fixed(d, row->rate_mppm, 3, 3),
                fmt_fixed(a, (int64_t)row->rate_unc_mppm, 3, 3), xs(b, tsc_ticks_s(row->second_mid_tsc - row->first_mid_tsc), 3));
    else
        kprintf("         rate: not measured: %s\n", row->rate_why ? row->rate_why : "-");
}

static struct cpus_row_view views[PERCPU_MAX];
static uint64_t view_scratch[PERCPU_MAX];

static void fill_views(void)
{
    for (int k = 0; k < cpus_st.row_count; k++) {
        const struct sync_row *row = &cpus_st.rows[k];
        const struct cpu_facts *f = &cpus_st.facts[row->index];
        views[k] = (struct cpus_row_view){.cpu = row->index, .measured = row->measured, .first = row->first,
                                          .warp_done = row->warp_done, .warps = row->warps, .warp_cross = row->warp_cross,
                                          .rate_ok = row->rate_ok, .rate_mppm = row->rate_mppm,
                                          .rate_unc_mppm = row->rate_unc_mppm, .facts_done = f->done, .time_bits = f->time_bits};
    }
}

static const char *odd_text(char *b, size_t n, uint32_t f)
{
    static const char *const names[] = {"not measured", "offset excludes 0", "interval wide", "rate excludes 0",
                                        "no rate",      "warps",             "warps not tested", "CPUID bits differ"};
    size_t len = 0;
    b[0] = '\0';
    for (unsigned i = 0; i < sizeof names / sizeof names[0] && len + 1 < n; i++)
        if (f & (1u << i))
            len += (size_t)fmt_format(b + len, n - len, "%s%s", len ? ", " : "", names[i]);
    return b;
}

/* Per package (from the topology): how many CPUs, their offsets' range
   and the widest interval, warps and odd rates. */
static void report_packages(const uint32_t *flags)
{
    const struct topo_shifts *topo = &cpus_st.topo;
    char a[FMT_FIXED_CHARS + 4], b[FMT_FIXED_CHARS + 4], c[FMT_FIXED_CHARS + 4];
    uint32_t done[16], ndone = 0;
    for (int k = -1; k < cpus_st.row_count; k++) {
        const struct smp_cpu *sc = smp_cpu_of(k < 0 ? 0 : cpus_st.rows[k].index);
        if (!sc)
            continue;
        uint32_t pkg = topo_place_of(topo, sc->apic_id).package;
        bool seen = false;
        for (uint32_t i = 0; i < ndone; i++)
            seen |= done[i] == pkg;
        if (seen)
            continue;
        if (ndone == 16) {
            kprintf("    (more packages: see the cpu records' package field)\n");
            return;
        }
        done[ndone++] = pkg;
        uint32_t cpus = 0, odd = 0;
        int64_t mid_min = 0, mid_max = 0; /* CPU 0's 0 counts where it is in this package */
        bool any = false;
        uint64_t widest = 0, warps = 0;
        int widest_cpu = -1;
        if (smp_cpu_of(0) && topo_place_of(topo, smp_cpu_of(0)->apic_id).package == pkg) {
            cpus++;
            any = true;
        }
        for (int j = 0; j < cpus_st.row_count; j++) {
            const struct smp_cpu *cj = smp_cpu_of(cpus_st.rows[j].index);
            if (!cj || topo_place_of(topo, cj->apic_id).package != pkg)
                continue;
            cpus++;
            odd += flags[j] != 0;
            warps += views[j].warp_done ? views[j].warps : 0;
            const struct tsc_offset *o = &views[j].first;
            if (!views[j].measured || !tsc_offset_consistent(o))
                continue;
            int64_t mid = tsc_offset_mid(o);
            if (!any || mid < mid_min)
                mid_min = mid;
            if (!any || mid > mid_max)
                mid_max = mid;
            any = true;
            if (tsc_offset_half(o) > widest || widest_cpu < 0) {
                widest = tsc_offset_half(o);
                widest_cpu = cpus_st.rows[j].index;
            }
        }
        kprintf("    package %u: %u CPUs, offsets %s to %s,\n", pkg, cpus, ticks_ns(a, mid_min), ticks_ns(b, mid_max));
        if (widest_cpu >= 0)
            kprintf("      widest +-%s (CPU %d),", ticks_ns(c, (int64_t)widest), widest_cpu);
        else
            kprintf("     ");
        kprintf(" %llu warps, %u standing out\n", (unsigned long long)warps, odd);
    }
}

/* More than CPUS_FULL_REPORT_MAX CPUs: what the intervals say together,
   and the CPUs that stand out in full. */
static void report_sync_summary(const uint32_t *flags, uint64_t median)
{
    char a[FMT_FIXED_CHARS + 4], b[FMT_FIXED_CHARS + 4], c[FMT_FIXED_CHARS + 4], d[FMT_FIXED_CHARS + 4];
    uint32_t n = (uint32_t)cpus_st.row_count, measured = 0, warp_tested = 0, rated = 0, odd = 0, rates_out = 0;
    uint64_t warps = 0, cross = 0, narrowest = UINT64_MAX;
    int64_t rate_min = 0, rate_max = 0;
    int narrowest_cpu = -1;
    for (uint32_t k = 0; k < n; k++) {
        const struct cpus_row_view *v = &views[k];
        measured += v->measured;
        warp_tested += v->warp_done && v->warp_cross;
        warps += v->warp_done ? v->warps : 0;
        cross += v->warp_done ? v->warp_cross : 0;
        odd += flags[k] != 0;
        rates_out += (flags[k] & CPUS_ODD_RATE) != 0;
        if (v->rate_ok) {
            if (!rated || v->rate_mppm < rate_min)
                rate_min = v->rate_mppm;
            if (!rated || v->rate_mppm > rate_max)
                rate_max = v->rate_mppm;
            rated++;
        }
        if (v->measured && tsc_offset_consistent(&v->first) && tsc_offset_half(&v->first) < narrowest) {
            narrowest = tsc_offset_half(&v->first);
            narrowest_cpu = v->cpu;
        }
    }
    struct cpus_pair pair;
    struct cpus_spread sp;
    bool have_pair = cpus_worst_pair(views, n, &pair), have_spread = cpus_offset_spread(views, n, &sp);
    kprintf("  %u APs: %u measured, warps tested on %u, rates on %u\n", n, measured, warp_tested, rated);
    if (have_spread) {
        kprintf("  offsets: midpoints %s (CPU %d) to %s (CPU %d);\n"
                "  all intervals within [%lld, %lld] ticks (%s to %s)\n",
                ticks_ns(a, sp.mid_min), sp.cpu_min, ticks_ns(b, sp.mid_max), sp.cpu_max, (long long)sp.lo_min,
                (long long)sp.hi_max, ticks_ns(c, sp.lo_min), ticks_ns(d, sp.hi_max));
        kprintf("  interval half-widths: narrowest +-%s (CPU %d), median +-%s\n", ticks_ns(a, (int64_t)narrowest),
                narrowest_cpu, ticks_ns(b, (int64_t)((median + 1) / 2)));
    }
    if (have_pair)
        kprintf("  worst pair: CPU %d - CPU %d in [%lld, %lld] ticks (%s to %s)\n", pair.a, pair.b, (long long)pair.lo,
                (long long)pair.hi, ticks_ns(a, pair.lo), ticks_ns(b, pair.hi));
    kprintf("  warps: %llu in %llu cross-CPU comparisons", (unsigned long long)warps, (unsigned long long)cross);
    if (rated)
        kprintf("; rates from %s to %s ppm, %u excluding 0\n", fmt_fixed(a, rate_min, 3, 3), fmt_fixed(b, rate_max, 3, 3),
                rates_out);
    else
        kprintf("; no rate measured\n");
    if (cpus_st.topo.valid) {
        struct topo_summary ts;
        static uint32_t ids[PERCPU_MAX], scratch[PERCPU_MAX];
        uint32_t m = 0;
        for (int i = 0; i < PERCPU_MAX; i++)
            if (smp_cpu_of(i))
                ids[m++] = smp_cpu_of(i)->apic_id;
        topo_summarise(&cpus_st.topo, ids, m, scratch, &ts);
        char cpp[24], tpc[24];
        fmt_format(cpp, sizeof cpp, ts.cores_per_package_min == ts.cores_per_package_max ? "%u" : "%u to %u",
                   ts.cores_per_package_min, ts.cores_per_package_max);
        fmt_format(tpc, sizeof tpc, ts.threads_per_core_min == ts.threads_per_core_max ? "%u" : "%u to %u",
                   ts.threads_per_core_min, ts.threads_per_core_max);
        kprintf("  topology (%s): %u package%s, %s core%s a package, %s thread%s a core\n", cpus_st.topo.source,
                ts.packages, ts.packages == 1 ? "" : "s", cpp, ts.cores_per_package_max == 1 ? "" : "s", tpc,
                ts.threads_per_core_max == 1 ? "" : "s");
        report_packages(flags);
    }

    struct record r;
    record_begin(&r, "cpus_summary");
    record_u64(&r, "aps", n);
    record_u64(&r, "measured", measured);
    record_u64(&r, "warps_tested", warp_tested);
    record_u64(&r, "rates_measured", rated);
    record_u64(&r, "warps", warps);
    record_u64(&r, "standing_out", odd);
    record_u64(&r, "median_width_ticks", median);
    if (have_spread) {
        record_i64(&r, "mid_min_ticks", sp.mid_min);
        record_i64(&r, "mid_max_ticks", sp.mid_max);
        record_i64(&r, "lo_min_ticks", sp.lo_min);
        record_i64(&r, "hi_max_ticks", sp.hi_max);
    } else {
        record_null(&r, "mid_min_ticks");
        record_null(&r, "mid_max_ticks");
    }
    if (have_pair) {
        record_u64(&r, "worst_pair_a", (uint64_t)pair.a);
        record_u64(&r, "worst_pair_b", (uint64_t)pair.b);
        record_i64(&r, "worst_pair_lo_ticks", pair.lo);
        record_i64(&r, "worst_pair_hi_ticks", pair.hi);
    } else {
        record_null(&r, "worst_pair_a");
        record_null(&r, "worst_pair_b");
    }
    record_str(&r, "topology", cpus_st.topo.valid ? cpus_st.topo.source : 0);
    emit(&r);

    if (!odd) {
        kprintf("  No AP stands out (offset, interval width, rate, warps, CPUID bits)\n");
        return;
    }
    kprintf("  %u AP%s stand%s out:\n", odd, odd == 1 ? "" : "s", odd == 1 ? "s" : "");
    uint32_t shown = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (!flags[k])
            continue;
        if (shown++ == CPUS_LISTED_MAX) {
            kprintf("  ... and %u more (their tsc_sync records have stands_out set)\n", odd - CPUS_LISTED_MAX);
            break;
        }
        char why[160];
        sync_text(&cpus_st.rows[k]);
        kprintf("         stands out: %s\n", odd_text(why, sizeof why, flags[k]));
    }
}

static void report_sync(struct cpus_tally *t, bool full)
{
    static uint32_t flags[PERCPU_MAX];
    kprintf("\n  Each CPU against CPU 0. offset: its TSC minus CPU 0's, an interval that\n"
            "  must hold the truth (up to %u request-reply exchanges, %u ms); warps:\n"
            "  readings that went back across CPUs (a lock passed to and fro, %u ms);\n"
            "  rate: how far the offset moved in at least %u ms, in ppm\n",
            EXCHANGES, EXCHANGE_MS, WARP_MS, RATE_WINDOW_MS);
    fill_views();
    uint64_t median = cpus_median_width(views, (uint32_t)cpus_st.row_count, view_scratch);
    for (int k = 0; k < cpus_st.row_count; k++) {
        const struct sync_row *row = &cpus_st.rows[k];
        flags[k] = cpus_stands_out(&views[k], median, cpus_st.facts[0].time_bits);
        sync_record(row, flags[k]);
        if (!row->measured)
            continue;
        cpus_tally_offset(t, row->index, &row->first);
        if (row->warp_done)
            cpus_tally_warps(t, row->warps);
        if (row->kvm_done)
            cpus_tally_kvm_warps(t, row->kvm_warps, row->kvm_cross);
        if (row->rate_ok)
            cpus_tally_rate(t, row->rate_mppm, row->rate_unc_mppm);
    }
    if (!full) {
        report_sync_summary(flags, median);
        return;
    }
    for (int k = 0; k < cpus_st.row_count; k++)
        sync_text(&cpus_st.rows[k]);
}

/* Every pair of application processors, derived from each one's interval
   against CPU 0 (tsc_offset_between): no extra measurement, so wider, but
   an interval that must hold the truth all the same. */
static void report_pairs(void)
{
    char a[FMT_FIXED_CHARS + 4], b[FMT_FIXED_CHARS + 4];
    uint32_t shown = 0;
    if (!cpus_pairs_listed((uint32_t)cpus_st.row_count))
        return;
    for (int k = 0; k < cpus_st.row_count; k++)
        for (int l = k + 1; l < cpus_st.row_count; l++) {
            const struct sync_row *p = &cpus_st.rows[k], *q = &cpus_st.rows[l];
            int64_t lo, hi;
            if (!p->measured || !q->measured || !tsc_offset_between(&q->first, &p->first, &lo, &hi))
                continue;
            if (!shown++)
                kprintf("\n  Pairs of the other CPUs (from their intervals against CPU 0: wider than\n"
                        "  a direct measurement, and as sure):\n");
            kprintf("  CPU %d - CPU %d: [%lld, %lld] ticks (%s to %s)\n", q->index, p->index, (long long)lo, (long long)hi,
                    ticks_ns(a, lo), ticks_ns(b, hi));
            struct record r;
            record_begin(&r, "tsc_pair");
            record_u64(&r, "cpu", (uint64_t)q->index);
            record_u64(&r, "other", (uint64_t)p->index);
            record_i64(&r, "offset_lo_ticks", lo);
            record_i64(&r, "offset_hi_ticks", hi);
            record_bool(&r, "derived", true);
            emit(&r);
        }
}

static void report_skew(void)
{
    if (!cpus_st.skew_asked)
        return;
    const char *name = "tsc_skew known answer";
    struct record r;
    record_begin(&r, "tsc_skew");
    record_u64(&r, "cpu", cpus_st.skew_cpu);
    record_i64(&r, "ticks", cpus_st.skew_ticks);
    record_str(&r, "method", cpus_st.skew_via_adjust ? "IA32_TSC_ADJUST" : "IA32_TSC");
    record_bool(&r, "applied", cpus_st.skew_applied);
    record_bool(&r, "honoured", cpus_st.skew_honoured);
    record_i64(&r, "moved_ticks", cpus_st.skew_moved);
    const struct sync_row *row = 0;
    for (int k = 0; k < cpus_st.row_count; k++)
        if (cpus_st.rows[k].index == (int)cpus_st.skew_cpu)
            row = &cpus_st.rows[k];
    bool found = false;
    int64_t lo = 0, hi = 0;
    /* the change between the two sets: the skew, bounded by both intervals */
    if (cpus_st.skew_honoured && row && tsc_offset_between(&row->skewed, &row->first, &lo, &hi)) {
        found = true;
        record_i64(&r, "change_lo_ticks", lo);
        record_i64(&r, "change_hi_ticks", hi);
    } else {
        record_null(&r, "change_lo_ticks");
        record_null(&r, "change_hi_ticks");
    }
    record_str(&r, "reason", cpus_st.skew_why[0] ? cpus_st.skew_why : 0);
    emit(&r);
    kprintf("\n  Known answer: tsc_skew asks CPU %u's TSC moved by %lld ticks\n", cpus_st.skew_cpu, (long long)cpus_st.skew_ticks);
    if (!found) {
        check_skip(name, "%s", cpus_st.skew_why[0] ? cpus_st.skew_why : "the offset could not be measured on that CPU");
        return;
    }
    kprintf("  through %s; the offset moved by [%lld, %lld] ticks\n", cpus_st.skew_via_adjust ? "IA32_TSC_ADJUST" : "IA32_TSC",
            (long long)lo, (long long)hi);
    if (lo <= cpus_st.skew_ticks && cpus_st.skew_ticks <= hi)
        check_pass(name, "CPU %u moved by %lld ticks, found within [%lld, %lld]", cpus_st.skew_cpu, (long long)cpus_st.skew_ticks,
                   (long long)lo, (long long)hi);
    else
        check_fail(name, "CPU %u moved by %lld ticks, but the measured change is [%lld, %lld]", cpus_st.skew_cpu,
                   (long long)cpus_st.skew_ticks, (long long)lo, (long long)hi);
}

static void verdict(const struct cpus_tally *t)
{
    const char *name = "TSC synchronised across CPUs";
    char a[FMT_FIXED_CHARS + 4];
    struct cpus_verdict *v = &results.cpus;
    v->ran = true;
    v->cpus = smp.running;
    v->listed = discovered.acpi.cpus_enabled;
    v->warps = t->warps;
    v->worst_cpu = t->worst;
    const struct sync_row *wr = 0;
    for (int k = 0; k < cpus_st.row_count; k++)
        if (cpus_st.rows[k].index == t->worst)
            wr = &cpus_st.rows[k];
    enum cpus_outcome outcome = cpus_outcome(t, wr ? &wr->first : 0, tsc_ticks_ns(t->worst_ticks));
    if (outcome == CPUS_NOT_COMPARED) {
        const char *why = smp.why[0] ? smp.why : smp.running > 1 ? "no other CPU could be measured" : 0;
        if (why)
            fmt_format(v->line, sizeof v->line, "TSC across CPUs: not compared (%s)", why);
        else
            fmt_format(v->line, sizeof v->line, "TSC across CPUs: one CPU running, nothing to compare");
        kprintf("  %s\n", v->line);
        check_skip(name, "%s", why ? why : "one CPU running, the only one the MADT enables");
        return;
    }
    v->compared = true;
    uint32_t cpus = t->compared + 1;
    v->synchronised = outcome == CPUS_SYNCHRONISED || outcome == CPUS_SYNC_COARSE;
    if (v->synchronised) {
        v->worst_ns = xf_to_fixed(tsc_ticks_ns(t->worst_ticks), 0);
        /* an interval this wide says only that no larger offset exists: the
           exchanges were too slow (an emulator) to tell a smaller one */
        if (outcome == CPUS_SYNC_COARSE)
            fmt_format(v->line, sizeof v->line, "TSC across %u CPUs: no offset beyond +-%s (slow exchanges: cannot tell smaller)",
                       cpus, ticks_ns(a, (int64_t)t->worst_ticks));
        else
            fmt_format(v->line, sizeof v->line, "TSC synchronised across %u CPUs: the worst offset is within +-%s", cpus,
                       ticks_ns(a, (int64_t)t->worst_ticks));
        kprintf("  Verdict: %s\n", v->line);
        check_pass(name, "%u CPUs, offsets within +-%s, no warps", cpus, ticks_ns(a, (int64_t)t->worst_ticks));
        return;
    }
    if (outcome == CPUS_OFFSET) {
        int64_t mid = tsc_offset_mid(&wr->first);
        v->worst_ns = xf_to_fixed(tsc_ticks_to_ns(xf_from_i64(mid)), 0);
        struct xf us = xf_div(tsc_ticks_to_ns(xf_from_i64(mid < 0 ? -mid : mid)), xf_from_u64(1000));
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: CPU %d is %s us %s; compare timestamps only on one CPU",
                   t->worst, xs(a, us, 3), mid < 0 ? "behind" : "ahead");
    } else if (outcome == CPUS_WARPS) {
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: %llu warps across CPUs; compare timestamps only on one CPU",
                   (unsigned long long)t->warps);
    } else if (outcome == CPUS_RATE) {
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: a CPU's TSC runs at another rate; compare timestamps only on one CPU");
    } else {
        fmt_format(v->line, sizeof v->line, "TSC not synchronised: CPU %d's offset cannot be bounded; compare timestamps only on one CPU",
                   t->worst);
    }
    kprintf("  Verdict: %s\n", v->line);
    check_fail(name, "%s", v->line);
}

void cpus_report(void)
{
    char a[FMT_FIXED_CHARS];
    results.cpus = (struct cpus_verdict){.worst_cpu = -1};
    kprintf("\n== CPUs and the TSC across them ==\n");
    const struct acpi_info *acpi = &discovered.acpi;
    if (acpi->madt_found)
        kprintf("  MADT: %u processors listed, %u enabled, %u online-capable%s\n", acpi->cpus_listed, acpi->cpus_enabled,
                acpi->cpus_online_capable, acpi->cpus_dropped ? " (more than the image keeps)" : "");
    if (smp.apic_ok)
        kprintf("  Local APIC: %s mode%s, boot CPU APIC ID %u%s\n", smp.lapic.x2apic ? "x2APIC" : "xAPIC",
                !smp.x2apic_by_us                          ? ""
                : cmdline_get(&boot_cmdline, "x2apic")     ? " (switched by x2apic=on)"
                                                           : " (switched: the MADT lists APIC IDs above 254)",
                smp.bsp_apic_id,
                smp.svr_enabled_by_us ? "; it was software-disabled and was enabled" : "");
    if (cmdline_get(&boot_cmdline, "x2apic") && !smp.lapic.x2apic)
        report_note("x2apic=on asked, but the CPU has no x2APIC (CPUID.1:ECX[21] clear); xAPIC mode used");
    if (smp.trampoline_page)
        kprintf("  Trampoline at 0x%llx; %u of %u enabled CPUs running; starting took %s ms\n",
                (unsigned long long)smp.trampoline_page, smp.running, acpi->cpus_enabled,
                xs(a, xf_div(tsc_ticks_ns(smp.total_ticks), xf_from_u64(1000000)), 3));
    if (smp.why[0])
        kprintf("  No other CPU started: %s\n", smp.why);
    bool full = cpus_report_in_full(smp.running);
    if (!full)
        kprintf("  %u CPUs: more than %u, so the tables below list only what stands out; every\n"
                "  CPU's figures are in the records\n",
                smp.running, CPUS_FULL_REPORT_MAX);
    report_cpu_table(full);

    struct cpus_tally t;
    cpus_tally_init(&t);
    report_sync(&t, full);
    if (counters[COUNTER_KVMCLOCK].present && cpus_st.row_count) {
        const char *name = "kvmclock monotonic across CPUs";
        if (!t.kvm_cross)
            check_skip(name, "no cross-CPU comparison was made (pages not registered on the other CPUs, or no time left)");
        else if (t.kvm_warps)
            check_fail(name, "%llu readings went back across CPUs in %llu comparisons", (unsigned long long)t.kvm_warps,
                       (unsigned long long)t.kvm_cross);
        else
            check_pass(name, "no reading went back across CPUs in %llu comparisons", (unsigned long long)t.kvm_cross);
    }
    report_pairs();
    if (cpus_st.phase_cut)
        kprintf("  The experiment's %u ms time budget cut it short: CPUs after the budget were not measured\n", cpus_st.budget_ms);
    char p[CPUS_PARTS][FMT_FIXED_CHARS];
    static const char *const part_keys[CPUS_PARTS] = {"start_ms", "facts_ms", "first_ms", "warps_ms", "second_ms"};
    struct record r;
    record_begin(&r, "cpus_phase");
    record_xf_fixed(&r, "ms", xf_div(tsc_ticks_ns(cpus_st.phase_ticks), xf_from_u64(1000000)), 1);
    record_u64(&r, "budget_ms", cpus_st.budget_ms);
    record_bool(&r, "cut", cpus_st.phase_cut);
    for (int i = 0; i < CPUS_PARTS; i++) {
        struct xf ms = xf_div(tsc_ticks_ns(cpus_st.part_ticks[i]), xf_from_u64(1000000));
        xs(p[i], ms, 1);
        record_xf_fixed(&r, part_keys[i], ms, 1);
    }
    emit(&r);
    kprintf("  The phase took %s ms (its time budget: %u ms): starting %s, facts %s,\n"
            "  offsets %s, warps %s, second offsets and rates %s ms\n",
            xs(a, xf_div(tsc_ticks_ns(cpus_st.phase_ticks), xf_from_u64(1000000)), 1), cpus_st.budget_ms, p[PART_START], p[PART_FACTS],
            p[PART_FIRST], p[PART_WARPS], p[PART_SECOND]);
    report_skew();
    verdict(&t);
}

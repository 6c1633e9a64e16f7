/* Monotonicity and the verdict (see verdict_report.h). */
#include "verdict_report.h"

#include "../drivers/cpuinfo.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/os_choice.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "experiment.h"

static enum target_id target_of_counter(int c)
{
    for (int t = 0; t < TARGET_COUNT; t++)
        if (target_info[t].counter == c)
            return (enum target_id)t;
    return TARGET_RDTSC; /* the TSC counter is read with RDTSC */
}

/* Which clock Linux would use here, and what a read of it costs here. */
static void report_os_choice(const struct cpu_info *ci)
{
    const struct target_findings *tsc = &results.target[TARGET_RDTSC];
    const struct pvclocks *pv = &discovered.pv;
    struct os_choice_input in = {
        .tsc = counters[COUNTER_TSC].present,
        .invariant_tsc = ci->invariant_tsc,
        .tsc_behaved = !tsc->backward && !results.tsc_back_in_drift,
        .single_cpu = discovered.acpi.cpus_enabled <= 1,
        .intel = !strcmp(ci->vendor, "GenuineIntel"),
        .kvm = pv->kvm_base != 0,
        .kvmclock = counters[COUNTER_KVMCLOCK].present,
        .hyperv = pv->hyperv,
        .hv_page = counters[COUNTER_HV_REF_PAGE].present,
        .hv_msr = counters[COUNTER_HV_REF_COUNTER].present,
        .hv_tsc_invariant = pv->hv_features & HV_ACCESS_TSC_INVARIANT,
        .hpet = counters[COUNTER_HPET].present,
        .acpi_pm = counters[COUNTER_ACPI_PM].present,
    };
    struct os_choice c;
    os_choice_make(&in, &c);
    char a[RESULTS_COST_CHARS];
    struct record r;
    record_begin(&r, "os_choice");
    record_str(&r, "clocksource", c.clock);
    record_str(&r, "counter", c.counter >= 0 ? counters[c.counter].name : 0);
    record_i64(&r, "rating", c.rating);
    record_str(&r, "why", c.why);
    int t = c.counter >= 0 ? (int)target_of_counter(c.counter) : -1;
    const struct target_findings *tf = t >= 0 ? &results.target[t] : 0;
    if (tf && tf->cost_done) {
        record_xf_fixed(&r, "read_p50_ns", tsc_ticks_ns(tf->p50_ticks), 1);
        record_bool(&r, "read_below_step", tf->below_step);
    }
    bool emulator = results_emulator();
    record_bool(&r, "emulator", emulator);
    emit(&r);
    /* under an emulator the choice is Linux's in that emulator, not on this computer's hardware */
    const char *here = emulator ? "An OS in this emulator" : "An OS here";
    if (!c.clock) {
        kprintf("  %s: %s.\n", here, c.why);
        return;
    }
    kprintf("  %s: Linux would use %s (%s)", here, c.clock, c.why);
    if (tf && tf->cost_done)
        kprintf(tf->below_step ? "; a read is %s" : "; a read costs %s here", results_read_cost(a, t));
    kprintf(".\n");
}

/* Backward steps from the sequential reads and the drift window, counted once each. */
static void report_monotonicity(void)
{
    kprintf("\n== Monotonicity ==\n");
    for (int t = 0; t < TARGET_COUNT; t++) {
        const struct target_findings *tf = &results.target[t];
        int c = target_info[t].counter;
        const struct counter_findings *cf = c >= 0 ? &results.counter[c] : 0;
        bool drift = cf && cf->drift_done;
        if (!tf->seq_done && !drift && !(t == TARGET_RDTSC && experiment_ran("drift")))
            continue;
        uint64_t backward = tf->backward + (drift ? cf->backward : 0);
        bool tsc_drift = t == TARGET_RDTSC && experiment_ran("drift");
        if (tsc_drift)
            backward += results.tsc_back_in_drift; /* the TSC read before each reference went back */
        uint64_t largest = tf->largest_backward;
        if (drift && cf->largest_backward > largest)
            largest = cf->largest_backward;
        const char *name = target_info[t].name, *check = c < 0 ? "monotonic TSC" : "monotonic";
        struct record r;
        record_begin(&r, "monotonicity");
        record_str(&r, "counter", name);
        record_u64(&r, "reads", tf->seq_reads);
        record_u64(&r, "backward", backward);
        record_u64(&r, "largest_backward_ticks", largest);
        if (drift)
            record_u64(&r, "backward_across_stops", cf->backward_across_stops);
        if (drift) {
            record_u64(&r, "stalls", cf->stalls);
            record_xf_fixed(&r, "longest_stall_ns", tsc_ticks_ns(cf->longest_stall_tsc), 1);
            record_u64(&r, "wraps", cf->wraps);
            record_bool(&r, "stuck", cf->stuck);
        }
        emit(&r);
        if (drift && cf->backward_across_stops)
            kprintf("  %s: %llu step%s back across a stop of the machine (its state restored:\n"
                    "    see \"A stop of the machine\"), not counted here\n", name,
                    (unsigned long long)cf->backward_across_stops, cf->backward_across_stops == 1 ? "" : "s");
        if (backward)
            check_fail(check, "%s: %llu backward step%s, the largest %llu ticks", name, (unsigned long long)backward,
                       backward == 1 ? "" : "s", (unsigned long long)largest);
        else
            check_pass(check, "%s: no backward step%s%s", name, tf->seq_done ? " in the sequential reads" : "",
                       drift || tsc_drift ? (tf->seq_done ? " or the drift window" : " in the drift window") : "");
        if (drift && cf->stuck)
            check_fail("counter keeps moving", "%s stopped moving in the drift window (no change for 100 ms while "
                       "the loop ran)", name);
    }
}

static void fill_input(int c, struct verdict_input *in)
{
    const struct counter *ct = &counters[c];
    enum target_id t = target_of_counter(c);
    const struct target_findings *tf = &results.target[t];
    const struct counter_findings *cf = &results.counter[c];
    *in = (struct verdict_input){.name = ct->name, .present = ct->present, .absent_reason = ct->reason,
                                 .measured = tf->cost_done, .advice_good = ct->advice_good, .is_tsc = c == COUNTER_TSC};
    if (ct->set_aside) /* the hardware-reduced PM timer: the label, not the ranked counter's advice */
        in->advice_good = "ignored by the OS (hardware-reduced ACPI): measured here, never the default reference";
    if (!ct->present)
        return;
    results_cost_of(t, &in->cost);
    in->repeats = tf->seq_done && tf->zero_deltas > 0;
    in->step_ns = c == COUNTER_TSC ? tsc_ticks_ns(tf->min_step) : counter_ticks_ns(c, xf_from_u64(tf->min_step));
    bool backward = tf->backward || (cf->drift_done && cf->backward);
    in->mono = cf->stuck ? MONO_STUCK : backward ? MONO_NO : tf->seq_done || cf->drift_done ? MONO_YES : MONO_UNKNOWN;
    if (c == COUNTER_TSC && results.tsc_measured) {
        in->freq = FREQ_TSC_MEASURED;
        in->uncertainty_ppm = results.tsc_uncertainty_ppm;
    } else if (c == results.reference) {
        in->freq = FREQ_REFERENCE;
    } else if (cf->has_ppm) {
        in->freq = FREQ_VS_NOMINAL;
        in->freq_ppm = cf->ppm_vs_nominal;
        in->uncertainty_ppm = cf->uncertainty_ppm;
    }
    in->tsc_intercepted = results_rdtsc_intercepted();
    in->tsc_invariant = boot_cpu.info.invariant_tsc;
}

void verdict_report(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    const struct cpu_info *ci = &boot_cpu.info;
    report_monotonicity();
    kprintf("\n== Verdict ==\n");
    bool emulator = results_emulator();
    if (emulator)
        kprintf("  Under an emulator (the CPU speed phase says why): every figure below describes the emulator's clocks, "
                "not this computer's hardware.\n");
    kprintf("  %-8s %11s %11s %18s %9s\n", "counter", "read p50", "resolution", "freq", "monotonic");
    for (int c = 0; c < COUNTER_COUNT; c++) {
        struct verdict_input in;
        fill_input(c, &in);
        struct verdict_row *v = &results.verdict[c];
        verdict_make(&in, v);
        /* the TSC's advice speaks of the CPU: under an emulator, of the emulator's */
        const char *qualify = emulator && c == COUNTER_TSC && v->measured ? "in this emulator: " : "";
        char cost[RESULTS_COST_CHARS];
        enum target_id t = target_of_counter(c);
        struct record r;
        record_begin(&r, "verdict");
        record_str(&r, "counter", counters[c].name);
        record_bool(&r, "present", v->present);
        record_bool(&r, "measured", v->measured);
        if (v->measured) {
            record_str(&r, "read", v->read);
            record_str(&r, "read_cost", in.measured ? results_read_cost(cost, t) : 0);
            record_str(&r, "resolution", v->res);
            record_str(&r, "freq", v->freq);
            record_str(&r, "monotonic", v->mono);
        }
        record_str(&r, "qualifier", *qualify ? "in this emulator" : 0);
        /* the TSC's rate, and every ns figure, rests on this counter */
        record_str(&r, "reference", c == COUNTER_TSC && results.tsc_measured && results.reference >= 0
                                        ? counters[results.reference].name : 0);
        record_str(&r, "advice", v->advice);
        emit(&r);
        if (!v->measured) {
            kprintf("  %-8s %s: %s\n", counters[c].name, v->present ? "present" : "absent", v->advice);
            continue;
        }
        kprintf("  %-8s %8s ns %8s ns %18s %9s\n", counters[c].name, v->read, v->res, v->freq, v->mono);
        kprintf("  %-8s -> %s%s\n", "", qualify, v->advice);
        if (in.measured && results.target[t].below_step)
            kprintf("  %-8s -> %sa read is %s\n", "", results.target[t].batch_done ? "* " : "", results_read_cost(cost, t));
    }
    if (results.tsc_measured) {
        kprintf("\n  TSC %s Hz, measured against the %s: relative to it +-%s ppm;\n", xs(a, results.tsc_hz, 0),
                counters[results.reference].name, xs(b, results.tsc_uncertainty_ppm, 3));
        kprintf("  absolute +-%u ppm (%s).\n", results.tsc_absolute_ppm, counters[results.reference].nominal_accuracy_source);
        kprintf("  Reference: %s.\n", results.tsc_reference_why);
    } else if (results.tsc_usable) {
        kprintf("\n  TSC rate not measured: ns figures use %s\n", results.tsc_hz_source);
    } else {
        kprintf("\n  This CPU does not advertise a TSC: no figure here is timed, and none\n  claims a measured TSC.\n");
    }
    if (results.timer_choice[0])
        kprintf("\n  Precise events: %s.\n", results.timer_choice);
    report_os_choice(ci);
    if (results.rtc_choice[0])
        kprintf("  Crystals: %s.\n", results.rtc_choice);
    if (ci->invariant_tsc)
        check_pass("invariant TSC", "CPUID.80000007h:EDX[8] set");
    else
        check_skip("invariant TSC", "CPUID.80000007h:EDX[8] clear: the TSC may not run at a constant rate");
    const struct memory_arena *m = memory_arena();
    kprintf("\n  Samples used %llu KiB of the %llu MiB region at 0x%llx from the memory map\n",
            (unsigned long long)(m->peak >> 10), (unsigned long long)(m->size >> 20), (unsigned long long)m->base);
    struct record r;
    record_begin(&r, "memory");
    record_hex(&r, "base", m->base);
    record_u64(&r, "size_bytes", m->size);
    record_u64(&r, "used_bytes", m->peak);
    emit(&r);
}

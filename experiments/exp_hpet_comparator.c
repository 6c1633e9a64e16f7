/* Experiment "hpet_comparator": comparator 0 of the HPET in one-shot (and
   periodic, where it can) mode, seen through the general interrupt status
   register with interrupts off (IA-PC HPET 1.0a, 2.3.9-2.3.11). Runs inside
   a probe: a fault in it makes the test fail with the fault, not the run. */
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/probe.h"
#include "../kernel/report_util.h"
#include "../lib/counters.h"
#include "../lib/record.h"
#include "experiment.h"

static struct hpet_comparator_result result;
static bool faulted;
static struct probe_fault fault;

static void comparator_job(void *unused)
{
    (void)unused;
    const struct hpet *h = &discovered.hpet;
    /* 1 ms ahead at the counter's own period */
    hpet_test_comparator(h, h->period_fs ? 1000000000000ull / h->period_fs : 1000, &result);
}

static void comparator_measure(const struct profile *p)
{
    (void)p;
    result = (struct hpet_comparator_result){0};
    if (!counters[COUNTER_HPET].present)
        return;
    faulted = !probe_run(comparator_job, 0, &fault);
}

static void comparator_report(void)
{
    const struct hpet *h = &discovered.hpet;
    const struct hpet_comparator_result *c = &result;
    if (!counters[COUNTER_HPET].present) {
        check_skip("HPET comparator one-shot", "no HPET: %s", counters[COUNTER_HPET].reason);
        return;
    }
    kprintf("\n== HPET comparator ==\n");
    if (faulted) {
        check_fail("HPET comparator one-shot", "fault while programming comparator 0: %s", fault.text);
        return;
    }
    struct record r;
    record_begin(&r, "hpet_comparator");
    record_bool(&r, "oneshot_matched", c->matched);
    record_u64(&r, "oneshot_late_ticks", c->late_ticks);
    record_bool(&r, "periodic_tested", c->periodic_tested);
    record_bool(&r, "periodic_ok", c->periodic_ok);
    record_u64(&r, "periodic_asked_ticks", c->period_asked_ticks);
    record_fixed(&r, "periodic_achieved_ticks", (int64_t)c->period_achieved_ticks_x1000, 3);
    emit(&r);
    char ns[FMT_FIXED_CHARS];
    if (c->matched) {
        /* ticks * period_fs / 10^6 = ns: shown as us with 3 decimals */
        kprintf("  Comparator 0 one-shot: match seen %llu ticks (%s us) after the target\n", (unsigned long long)c->late_ticks,
                fmt_fixed(ns, (int64_t)(c->late_ticks * h->period_fs / 1000000), 3, 3));
        check_pass("HPET comparator one-shot", "match seen %llu ticks after the target", (unsigned long long)c->late_ticks);
    } else {
        check_fail("HPET comparator one-shot", "%s", c->note);
    }
    if (c->periodic_tested && c->periodic_ok) {
        char got[FMT_FIXED_CHARS];
        kprintf("  Comparator 0 periodic: asked every %llu ticks, observed %s ticks a period\n    over 5 periods\n",
                (unsigned long long)c->period_asked_ticks, fmt_fixed(got, (int64_t)c->period_achieved_ticks_x1000, 3, 1));
        check_pass("HPET comparator periodic", "asked %llu ticks, observed %s", (unsigned long long)c->period_asked_ticks, got);
    } else if (c->periodic_tested) {
        check_fail("HPET comparator periodic", "%s", c->note);
    } else if (c->matched) {
        check_skip("HPET comparator periodic", "comparator 0 is not periodic-capable (Tn_PER_INT_CAP clear)");
    }
}

const struct experiment exp_hpet_comparator = {
    .name = "hpet_comparator",
    .what = "HPET comparator 0, one-shot and periodic, polled",
    .needs_tsc = true,
    .measure = comparator_measure,
    .report = comparator_report,
};

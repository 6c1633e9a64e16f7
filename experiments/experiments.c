/* The table of experiments and the run (see experiment.h). */
#include "experiment.h"

#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/progress.h"
#include "../kernel/results.h"
#include "../lib/cmdline.h"
#include "../lib/record.h"
#include "../lib/string.h"

/* Table order is run order: calibrate sizes every later phase, and the
   cost of a read is measured before anything disturbs the caches. */
static const struct experiment *const table[] = {
    &exp_calibrate, &exp_cpu_speed, &exp_hpet_comparator, &exp_read_cost, &exp_sequential, &exp_timers, &exp_cpus, &exp_drift, &exp_rtc, &exp_stolen,
};
#define EXPERIMENT_COUNT (sizeof table / sizeof *table)

static bool ran[EXPERIMENT_COUNT];
static const char *skipped_why[EXPERIMENT_COUNT];

/* Whether `name` is one of the comma-separated words of list. */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = p;
        while (*end && *end != ',')
            end++;
        if ((size_t)(end - p) == n && !strncmp(p, name, n))
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

static int index_of(const char *name, size_t len)
{
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++)
        if (strlen(table[i]->name) == len && !strncmp(table[i]->name, name, len))
            return (int)i;
    return -1;
}

/* Every word of an only= or skip= list must name an experiment. */
static void check_names(const char *key, const char *list)
{
    for (const char *p = list; *p;) {
        const char *end = p;
        while (*end && *end != ',')
            end++;
        if (end > p && index_of(p, (size_t)(end - p)) < 0) {
            kprintf("Note: %s=%s names no experiment (\"%.*s\"); the experiments are:\n     ", key, list, (int)(end - p), p);
            for (unsigned i = 0; i < EXPERIMENT_COUNT; i++)
                kprintf(" %s", table[i]->name);
            kprintf("\n");
        }
        p = *end ? end + 1 : end;
    }
}

static void select_experiments(void)
{
    const char *only = cmdline_get(&boot_cmdline, "only");
    const char *skip = cmdline_get(&boot_cmdline, "skip");
    if (only && !*only) {
        kprintf("Note: only= names no experiment; running them all\n");
        only = 0;
    }
    if (only)
        check_names("only", only);
    if (skip)
        check_names("skip", skip);
    if (cmdline_get(&boot_cmdline, "inject") && ((only && !listed(only, "drift")) || (skip && listed(skip, "drift"))))
        kprintf("Note: inject= acts in the drift window, and drift is not chosen; nothing is injected\n");
    if (skip && listed(skip, "calibrate"))
        kprintf("Note: calibrate sizes every phase and always runs; skip=calibrate is ignored\n");
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++) {
        const struct experiment *e = table[i];
        skipped_why[i] = 0;
        if (e->needs_tsc && !results.tsc_usable)
            skipped_why[i] = "the CPU does not advertise a TSC (CPUID.1:EDX[4] clear), and every experiment times with it";
        else if (e == &exp_calibrate)
            continue; /* sizes every phase: always runs */
        else if (only && !listed(only, e->name))
            skipped_why[i] = "not named by only=";
        else if (skip && listed(skip, e->name))
            skipped_why[i] = "named by skip=";
    }
}

/* The seconds a phase is sized to take, for the progress records: only
   the timed windows are known ahead. */
static int64_t phase_seconds(const struct experiment *e, const struct profile *p)
{
    if (e == &exp_drift)
        return (p->drift_ms + 999) / 1000;
    if (e == &exp_stolen)
        return (p->hwlat_ms + 999) / 1000;
    return PROGRESS_UNKNOWN;
}

bool experiment_chosen(const char *name)
{
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++)
        if (!strcmp(table[i]->name, name))
            return skipped_why[i] == 0;
    return false;
}

bool experiment_ran(const char *name)
{
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++)
        if (!strcmp(table[i]->name, name))
            return ran[i];
    return false;
}

const struct window_rider *experiments_window_rider(void)
{
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++)
        if (table[i]->window_rider)
            return table[i]->window_rider;
    return 0;
}

/* The experiments' accounts over the whole run (run_mark): the RTC's and
   the HPET's advance against the TSC's, where a stop anywhere in it shows. */
static void mark_run(bool end)
{
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++)
        if (table[i]->run_mark)
            table[i]->run_mark(end);
}

void experiments_run(const struct profile *p)
{
    results.profile = p;
    select_experiments();
    kprintf("\n== Measuring (profile %s: %u ms of drift, %u ms of stolen-time scan) ==\n", p->name, p->drift_ms, p->hwlat_ms);
    mark_run(false);
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++) {
        struct record r;
        record_begin(&r, "experiment");
        record_str(&r, "name", table[i]->name);
        record_bool(&r, "selected", skipped_why[i] == 0);
        record_str(&r, "skipped", skipped_why[i]);
        console_emit_record(&r);
        if (skipped_why[i]) {
            kprintf("  %-16s skipped: %s\n", table[i]->name, skipped_why[i]);
            continue;
        }
        kprintf("  %-16s %s\n", table[i]->name, table[i]->what);
        progress(table[i]->name, 0, phase_seconds(table[i], p));
        table[i]->measure(p);
        ran[i] = true;
    }
    mark_run(true);
    progress("done", 100, 0);
    struct record r;
    record_begin(&r, "profile");
    record_str(&r, "name", p->name);
    record_u64(&r, "drift_ms", p->drift_ms);
    record_u64(&r, "hwlat_ms", p->hwlat_ms);
    record_fixed(&r, "tsc_hz", xf_to_fixed(results.tsc_hz, 3), 3);
    record_str(&r, "tsc_hz_source", results.tsc_hz_source);
    record_bool(&r, "tsc_measured", results.tsc_measured);
    record_str(&r, "tsc_reference", results.tsc_measured ? counters[results.reference].name : 0);
    record_str(&r, "tsc_reference_why", results.tsc_measured ? results.tsc_reference_why : 0);
    console_emit_record(&r);
    for (unsigned i = 0; i < EXPERIMENT_COUNT; i++) {
        if (ran[i])
            table[i]->report();
        else
            check_skip(table[i]->name, "%s", skipped_why[i]);
    }
}

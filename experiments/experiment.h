/* Experiments: one per file, each with its measure, its report and its
   records, its state private to the file, listed in one table
   (experiments.c) and chosen with only= / skip= on the command line (the
   way kvm-unit-tests names its tests in unittests.cfg). A new experiment is
   a new file and a row. Every experiment measures first; the reports follow
   once all have measured, because ns figures need the TSC rate that the
   drift experiment finds. */
#ifndef CLOCKBENCH_EXPERIMENT_H
#define CLOCKBENCH_EXPERIMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "../kernel/profile.h"

/* An experiment that times its events in the drift window instead of a
   window of its own (the RTC's second edges): the drift loop calls these
   outside any bracket, and finds them through experiments_window_rider. */
struct window_rider {
    void (*begin)(void);            /* before the window's start is announced */
    void (*poll)(uint64_t tsc_now); /* each pass of the loop: returns at once unless it has work */
    void (*end)(void);
};

struct experiment {
    const char *name;   /* for only= and skip= */
    const char *what;   /* one line for the listing */
    bool needs_tsc;     /* times with the TSC: skipped on a CPU without one */
    void (*measure)(const struct profile *p);
    void (*report)(void);
    /* Optional: an account over the whole run, called before the first
       experiment measures (end false) and after the last (end true). */
    void (*run_mark)(bool end);
    const struct window_rider *window_rider; /* optional */
};

/* Defined by each experiment's file. */
extern const struct experiment exp_calibrate, exp_cpu_speed, exp_read_cost, exp_sequential, exp_cpus, exp_drift, exp_stolen,
    exp_hpet_comparator, exp_timers, exp_rtc;

/* Selects from the command line, measures each chosen experiment in table
   order, then reports each (the verdict follows: verdict_report.h). */
void experiments_run(const struct profile *p);

/* Whether the command line chose an experiment (known before any runs). */
bool experiment_chosen(const char *name);
/* Whether an experiment was chosen and ran (false when skipped). */
bool experiment_ran(const char *name);
/* The experiment that rides the drift window (the first in the table with
   a window_rider), or 0. */
const struct window_rider *experiments_window_rider(void);

#endif

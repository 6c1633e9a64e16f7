/* Experiment "rtc": what its measurement (exp_rtc.c) leaves for its report (exp_rtc_report.c); private to the two. */
#ifndef CLOCKBENCH_EXP_RTC_REPORT_H
#define CLOCKBENCH_EXP_RTC_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "../drivers/rtc.h"
#include "../lib/drift_analysis.h"
#include "../lib/rtc_fit.h"
#include "../lib/stats.h"

#define RTC_EDGES_MAX 2048       /* edges kept; later ones are timed but not kept */
#define RTC_STUCK_WINDOW_MS 1500 /* no edge in a window this long: the RTC never updates */

/* A stop of the machine in the drift window (a VM paused, migrated,
   restored): where, how long by the wall clock (the RTC), and what each
   clock did across it (exp_rtc.c stop_find; docs/output.md "stop"). */
#define STOP_CLOCKS_MAX 10
struct stop_clock {
    const char *name;
    bool known;                    /* false: it moved by more than it can unwrap */
    struct xf advanced_ns, u_ns;   /* how far it advanced across the stop */
    enum stop_verdict verdict;
    const char *how;               /* what the figure rests on */
};
struct stop_found {
    bool found;
    const char *seen_by;           /* what told it: the drift loop's gap, or the RTC's step */
    uint64_t at_tsc;               /* its middle, TSC ticks into the drift window */
    struct xf tsc_ns, u_tsc_ns;    /* the TSC's advance across it */
    bool rtc_known;
    struct rtc_jump rtc;           /* the RTC's step against the TSC there */
    bool rtc_coarse;               /* timed by the seconds register's changes, not UIP's fall */
    struct xf wall_ns, u_wall_ns;  /* its length by the wall clock: the TSC's advance and the RTC's step */
    uint32_t clock_count;
    struct stop_clock clock[STOP_CLOCKS_MAX];
};

/* rtc_run_mark's two readings */
struct run_mark {
    bool rtc_ok, hpet_ok, kvmclock_ok;
    uint32_t sod;                  /* the RTC's time of day, whole seconds */
    uint64_t tsc, hpet, kvmclock;  /* kvmclock: ns */
};

struct rtc_run {
    bool present;
    char reason[128];              /* why absent */
    struct rtc rtc;                /* as probed: data and hour mode, battery */
    bool date_valid;
    bool hour_mode_ignored; /* register B says 12-hour, the hour reads 0 or 13-23: 24-hour time */
    struct rtc_datetime date;      /* read as the window opened */
    char date_why[128];            /* why it was not read, or is not valid */

    /* the window */
    bool own_window;               /* the RTC's own: the drift loop ran none */
    uint64_t window_tsc;
    bool updates_seen;             /* an edge, or the seconds register changed */
    bool never_updated;            /* no update in the phase search before the window */
    const char *stopped_why;       /* polling stopped early, or 0 */
    uint32_t edge_count;
    bool edges_overflowed;
    uint64_t polls, missed, bad_clock_reads;
    uint64_t longest_spin_tsc, longest_call_tsc, phase_wait_tsc;
    uint64_t call_gap_tsc;         /* the caller's pace (a running average) */

    /* one seconds-register read */
    bool cost_done;
    struct summary cost;           /* TSC ticks, the empty brackets' median subtracted */
    uint64_t bracket_overhead;
    uint64_t reads, zero_deltas, distinct, backward;

    struct rtc_fit fit;
    uint32_t min_step_s;           /* the least RTC count between consecutive edges */
    uint64_t min_step_tsc;         /* the least TSC time between edges one RTC second apart */
    struct stop_found stop;
    struct run_mark mark[2];       /* before the first experiment, after the last */
};

/* The RTC's section: its lines, records and checks, and the verdict's
   line (results.rtc_choice). */
void rtc_report_run(const struct rtc_run *run);

#endif

/* Experiment "rtc": what its measurement (exp_rtc.c) leaves for its report (exp_rtc_report.c); private to the two. */
#ifndef CLOCKBENCH_EXP_RTC_REPORT_H
#define CLOCKBENCH_EXP_RTC_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "../drivers/rtc.h"
#include "../lib/rtc_fit.h"
#include "../lib/stats.h"

#define RTC_EDGES_MAX 2048       /* edges kept; later ones are timed but not kept */
#define RTC_STUCK_WINDOW_MS 1500 /* no edge in a window this long: the RTC never updates */

struct rtc_run {
    bool present;
    char reason[128];              /* why absent */
    struct rtc rtc;                /* as probed: data and hour mode, battery */
    bool date_valid;
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
};

/* The RTC's section: its lines, records and checks, and the verdict's
   line (results.rtc_choice). */
void rtc_report_run(const struct rtc_run *run);

#endif

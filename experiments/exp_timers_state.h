/* Experiment "timers", private: what its measurement leaves for its report (exp_timers.c, exp_timers_setup.c, exp_timers_report.c). */
#ifndef CLOCKBENCH_EXP_TIMERS_STATE_H
#define CLOCKBENCH_EXP_TIMERS_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../kernel/percpu.h"
#include "../kernel/probe.h"
#include "../lib/timer_analysis.h"
#include "../lib/xf.h"

/* One rate window of a counter against the TSC (exp_timers_setup.c): a
   window with a gap or a step the counter's time cannot explain is
   measured again, as the drift phase cuts its fit there. */
struct timers_window {
    bool measured;
    uint32_t tries;                 /* windows measured; more than 1 when one was disturbed */
    uint32_t gaps;                  /* TSC steps of over 1 ms seen in them (a stop; harmless when the counter ran on alike) */
    uint64_t gap_max;               /* the largest, TSC ticks */
    int last_kind;                  /* the counter's step over the last window (enum step_kind, lib/unwrap.h) */
    int disturbed_kind;             /* and over the last disturbed one */
};

#define TIMERS_BOUND_MIN_MS 200     /* an event is lost this long after its deadline (or TIMER_BOUND_DELAYS delays) */

/* Every other CPU: its own local APIC timer, one-shot and TSC-deadline,
   busy and HLT. */
#define TIMERS_AP_TIMERS 2          /* TIMER_LAPIC, TIMER_DEADLINE */
#define TIMERS_AP_WAITS 2           /* busy, hlt */

struct timers_ap_row {
    bool tried, ran;
    char why[96];
    uint32_t job_ms;                /* its job's end, ms after it was posted: no event starts whose wait could pass it */
    uint32_t took_ms;               /* from posting its job to its end (or to giving up on it) */
    uint32_t cells, cells_cut;      /* cells it ran, and of those cut short (or left empty) by that end */
    struct xf per_tsc, per_tsc_u;   /* its APIC timer against its TSC */
    struct timers_window window;
    struct timer_cell cell[TIMERS_AP_TIMERS][TIMERS_AP_WAITS][TIMER_DELAYS];
};

struct timers_state {
    bool skipped_all;
    char skipped_why[128];
    struct timer_result timer[TIMER_COUNT];
    struct timer_wait wait[TIMER_MAX_WAITS];
    unsigned wait_count;
    char mwait_note[128];
    char errata_note[160];
    uint64_t hpet_route_caps;       /* comparator 0's route capability (its configuration's bits 63:32) */
    struct xf ref_per_tsc, ref_per_tsc_u; /* the best reference, for the APIC timer's rate against it */
    int ref_counter;                /* -1 when none */
    struct timers_window window[TIMER_COUNT], ref_window; /* the rate windows */
    struct timers_ap_row ap[PERCPU_MAX]; /* [0] unused: the boot CPU's cells are in timer[] */
    uint64_t phase_ticks;           /* TSC ticks the measurement took */
    uint64_t busy_gaps, busy_gap_max;   /* busy waits that saw the TSC step by over 1 ms, and the largest step */
    uint64_t ref_stops, ref_stop_max;   /* waits during which the reference stood still while the TSC ran, and the longest */
    uint64_t between_stops, between_stop_max; /* the same between two events of a cell (no figure touched) */
    uint64_t idle_beyond, idle_beyond_max; /* events later than their bound with no gap seen (a stop of the whole machine), and the latest */
    uint32_t cell_ms;               /* the profile's budget for a cell */
    uint64_t unexpected, spurious;  /* interrupts during the measurement */
    uint8_t last_unexpected;
    bool faulted;                   /* a CPU exception ended the waits of one way of waiting */
    struct probe_fault fault;
    const char *fault_where;        /* that way of waiting */
};

extern struct timers_state timers_state;

void timers_report(void);

#endif

/* Experiment "drift", its state: what the measurement (exp_drift.c) leaves and its report (exp_drift_report.c) reads. */
#ifndef CLOCKBENCH_EXP_DRIFT_STATE_H
#define CLOCKBENCH_EXP_DRIFT_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../kernel/reads.h"
#include "../lib/counters.h"
#include "../lib/drift_analysis.h"
#include "../lib/segfit.h"
#include "../lib/uncertainty.h"

#define RESIDUALS_KEEP 128
#define RESIDUALS_PER_RECORD 32

struct series {
    int counter;
    struct read_src src;
    struct drift_track t;    /* t.up: how its steps unwrap */
    bool stuck;
    uint64_t stuck_at_tsc;
    uint64_t stall_tsc;      /* no change for this long, while the loop ran: a stall */

    /* samples, one slot per 1/slots of the window: the narrowest bracket wins */
    int64_t *x, *yv;
    uint32_t *sg, *w;        /* w = bracket width + 1; 0 = empty slot */
    uint32_t *cut_sg;        /* sg with every series' cuts applied: what is fitted */

    /* analysis */
    uint32_t slots_filled, kept;
    uint64_t min_width;
    bool fitted;
    struct seg_fit fit;
    struct freq_uncertainty unc;
    struct xf bracket_drift; /* kvmclock's: the reads' drift in their brackets, in unc.total (drift_bracket_drift) */
    uint32_t sub_count;
    int64_t sub_len;
    struct subwindow sub[SUBWINDOWS_MAX];
    uint32_t resid_count;
    int64_t resid_x[RESIDUALS_KEEP];
    int64_t resid_mticks[RESIDUALS_KEEP];
    uint64_t span_tsc;       /* the window, first read to last */
};

/* Fault injection from inside the image (command line inject=KIND:MS@S):
   hpet_halt stops the HPET's main counter for MS milliseconds, S seconds
   into the window (a reference that stands still while the TSC runs);
   tsc_jump moves the TSC forward by MS milliseconds there (IA32_TSC_ADJUST
   or IA32_TIME_STAMP_COUNTER, Intel SDM vol. 3B, 18.17). Known sizes, for
   tests. */
enum inject_kind { INJECT_NONE, INJECT_HPET_HALT, INJECT_TSC_JUMP };
struct drift_inject {
    enum inject_kind kind;
    uint64_t ms, at_ms;
    uint64_t at_tsc, until_tsc;
    uint64_t halted_tsc; /* hpet_halt: from its stop to its start again, as done: longer than asked when the loop was away as it was due */
    bool started, done;
    uint64_t moved_tsc; /* tsc_jump: how far the TSC moved, as read back */
    bool faulted;       /* tsc_jump: the MSR write faulted (a note said which) */
};

struct drift_run {
    struct series series[COUNTER_COUNT];
    int series_count;
    uint32_t slots;
    const char *skip_reason;
    uint64_t window_asked_tsc, window_ran_tsc, window_away_tsc;
    uint64_t window_start_tsc;   /* the TSC when the window began: events' at_tsc count from here */
    /* where any series found a discontinuity other than a gap: every series is cut there */
    struct drift_cuts cuts;
    struct drift_inject inject;
    /* kvmclock's page around the window: the host writes it (version + 2 each
       time) when it re-anchors kvmclock to its own clock; between those
       writes kvmclock runs at the stated mul/shift exactly */
    bool kv_tracked;
    uint32_t kv_version_start, kv_version_end;
    bool kv_scale_changed; /* mul or shift differed at the window's end */
    /* a counter whose VMM may emulate it at either of two rates (QEMU+KVM's
       PIT, lib/vmm_rates.h), measured against another reference to choose */
    struct nominal_choice {
        int counter;             /* -1: none was open */
        int reference;           /* -1: no other reference gave a fit */
        const struct vmm_rate *rows[2];
        uint64_t measured_millihz;
        uint64_t u_ppb;          /* the pair's standard uncertainty */
        struct vmm_pick pick;
    } choice;
};

extern struct drift_run drift_st;

void drift_report(void);
/* The TSC's rate uncertainty against s's counter: the fit's, and for
   kvmclock the rounding of the rate its scale derives from (exp_drift.c). */
struct freq_uncertainty drift_tsc_uncertainty(const struct series *s);
/* Half the spread between a counter's two candidate VMM rates while no
   measurement chose one (0 otherwise), relative: added to the total of
   every uncertainty relative to that counter (both rates lie within it). */
struct xf nominal_spread(int counter);
#define KVMCLOCK_RATE_ROUNDING_HZ 500 /* half a kHz: KVM scales kvmclock from a rate in kHz */

static inline bool usable(const struct series *s) { return s->fitted && !s->stuck; }

static inline const struct series *series_of(int counter)
{
    for (int k = 0; k < drift_st.series_count; k++)
        if (drift_st.series[k].counter == counter)
            return &drift_st.series[k];
    return 0;
}

#endif

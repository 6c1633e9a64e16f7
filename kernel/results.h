/* What experiments find that other experiments, the verdict and the summary
   screen use. Each experiment keeps its detail private to its file and
   publishes here only the figures others need. */
#ifndef CLOCKBENCH_RESULTS_H
#define CLOCKBENCH_RESULTS_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/counters.h"
#include "../lib/drift_analysis.h"
#include "../lib/stats.h"
#include "../lib/unwrap.h"
#include "../lib/verdict.h"
#include "../lib/xf.h"
#include "profile.h"
#include "reads.h"

struct target_findings {
    bool cost_done;
    uint64_t p50_ticks;        /* read cost, TSC ticks: the p50 of single bracketed reads */
    bool below_step;           /* that p50 lies within STEP_FEW of the TSC's steps (tsc_step_ticks): no figure */
    bool batch_done;           /* TSC variants: the batch's figure, which stands for a read below the step */
    struct xf batch_ticks;
    bool seq_done;
    uint64_t seq_reads, zero_deltas, min_step, backward, largest_backward;
};

struct counter_findings {
    bool drift_done, fitted, stuck;
    uint64_t backward, largest_backward; /* in the drift window */
    uint64_t backward_across_stops;      /* ... of those, across a stop of the machine: left out of backward */
    uint64_t wraps, stalls, longest_stall_tsc;
    struct xf ppm_vs_nominal;            /* against the TSC's reference (not for the reference itself) */
    bool has_ppm;
    struct xf uncertainty_ppm;           /* relative to the reference */
    /* its discontinuities in the drift window as the loop judged them, for
       the account of a stop of the machine (the rtc experiment's) */
    uint32_t event_count;                /* may exceed DRIFT_EVENTS_KEPT: the rest were counted, not kept */
    struct drift_event events[DRIFT_EVENTS_KEPT];
    uint64_t min_width_tsc;              /* its samples' narrowest bracket (width + 1, TSC ticks) */
};

/* cpus: what the summary screen and its QR payload show */
struct cpus_verdict {
    bool ran;               /* the experiment ran and reported */
    bool compared;          /* at least two CPUs were compared */
    bool synchronised;
    uint32_t cpus;          /* CPUs running (boot CPU included) */
    uint32_t listed;        /* enabled CPUs in the MADT */
    int worst_cpu;          /* the CPU whose offset bound is largest */
    int64_t worst_ns;       /* synchronised: the bound |offset| <= worst_ns;
                               not: that CPU's offset midpoint, signed */
    uint64_t warps;         /* across all CPUs */
    char line[120];         /* the verdict as one line for people */
};

struct results {
    const struct profile *profile;
    const char *secure_boot;        /* "on", "off" or "unknown": lib/bootinfo.h, bootinfo_secure_boot */
    const char *secure_boot_shown;  /* the same, or "not applicable (...)": bootinfo_secure_boot_shown */
    uint64_t tsc_step_ticks;        /* the TSC's own step (read_cost's staircase), 0 when not measured */
    bool tsc_usable;                /* the CPU advertises a TSC: every experiment times with it */

    /* calibrate: the estimate that sizes every phase */
    uint64_t tsc_estimate_hz;
    char tsc_estimate_source[96];
    bool tsc_estimate_checked;      /* measured against a reference that held still, not a claim */
    uint64_t tsc_estimate_u_ppm;    /* its stated uncertainty, ppm; 0 when it states none (a claim, an assumption) */

    /* drift: the TSC's rate for every ns figure */
    bool tsc_measured;
    int reference;                  /* COUNTER_* it was measured against, -1 when not */
    struct xf tsc_hz;
    struct xf tsc_stderr_ppm, tsc_uncertainty_ppm;
    uint32_t tsc_absolute_ppm;      /* what the reference's own nominal rate allows */
    char tsc_hz_source[96];
    char tsc_reference_why[200];    /* why that reference: the better ones absent, set aside, or unusable; what kvmclock checks */
    const char *tsc_reference_brief; /* the same in a few words, for the summary screen */
    uint64_t tsc_stated_hz;         /* kvmclock as the reference: the rate its mul/shift states, else 0 */

    struct target_findings target[TARGET_COUNT];
    struct discontinuity_note {
        int reference;            /* COUNTER_* */
        const char *kind;
        uint64_t at_ms;
        int64_t tsc_us, counter_us;  /* counter_us: signed (a step, a step back) */
        bool counter_known;
    } disc[48];                   /* the first discontinuities of the drift window, for the stolen-time section */
    uint32_t disc_count;          /* kept in disc */
    uint64_t drift_start_tsc;     /* the TSC as the drift window began (events count from here), 0 when none ran */
    uint64_t tsc_back_in_drift;   /* the TSC went back between reads in the drift window (most seen by one series) */
    struct counter_findings counter[COUNTER_COUNT];
    uint32_t discontinuities;

    bool speed_done, emulated;
    uint64_t loop_per_second;

    struct verdict_row verdict[COUNTER_COUNT];
    char timer_choice[160];
    char rtc_choice[160];           /* rtc: whether the main crystal agrees with the RTC, or "" */         /* timers: which timer to use for precise events, or "" */
    struct cpus_verdict cpus;       /* cpus: its verdict, for the summary screen */
};

extern struct results results;

/* TSC ticks to ns with the best TSC rate known. */
struct xf tsc_ticks_to_ns(struct xf ticks);
struct xf tsc_ticks_ns(uint64_t ticks);
struct xf tsc_ticks_s(uint64_t ticks);
/* ms to TSC ticks with the estimate (for sizing phases). */
uint64_t ms_to_tsc(uint64_t ms);
/* How a counter's differences are unwrapped against the TSC estimate. */
void unwrap_params_of(int counter, struct unwrap_params *p);
/* The hypervisor appears to trap RDTSC (from its read cost). */
bool results_rdtsc_intercepted(void);
/* The CPU is an emulator's, not the hardware's: the hypervisor signature is
   QEMU TCG's ("TCGTCGTCGTCG"), or the cpu_speed loop ran far below any
   hardware. Every figure then describes the emulator. */
bool results_emulator(void);
/* A read's cost as every output says it (docs/output.md, `below_step`):
   "29.6 ns", or "below the TSC's step (10.0 ns): 9.54 ns a read by the
   batch" (or ": not resolved" with no batch). */
#define RESULTS_COST_CHARS READ_COST_CHARS
const char *results_read_cost(char buf[RESULTS_COST_CHARS], int target);
/* The figures behind it (lib/verdict.h), for a table's cell. */
void results_cost_of(int target, struct read_cost *c);
#define TCG_SIGNATURE "TCGTCGTCGTCG" /* CPUID 0x40000000 under QEMU TCG (tests/fixtures/tcg-q35.log) */

#endif

/* The measurement engine: read cost, resolution, monotonicity, frequency
   and drift of every counter and TSC read variant, and the stolen-time scan.
   Interrupts stay off; nothing else runs. Results land in `measured`, and
   measure_report.c turns them into the report. */
#ifndef CLOCKBENCH_MEASURE_H
#define CLOCKBENCH_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "fit.h"
#include "stats.h"
#include "tsc.h"
#include "format.h"
#include "xf.h"

struct profile {
    const char *name;
    uint32_t drift_ms;      /* the frequency/drift window */
    uint32_t hwlat_ms;      /* the stolen-time scan */
    uint32_t latency_fast;  /* reads costed, per TSC variant (at most) */
    uint32_t latency_slow;  /* reads costed, per slower counter (at most) */
    uint32_t sequence_fast; /* back-to-back reads for the sequential table (at most) */
    uint32_t sequence_slow;
    uint32_t latency_ms;    /* time budget per target for the costed reads */
    uint32_t sequence_ms;   /* and for the back-to-back reads */
    uint32_t slots_per_s;   /* frequency samples kept per second per counter */
};

/* A thing whose reads we cost: a TSC read variant or a non-TSC counter. */
#define TARGET_MAX (TSC_VARIANT_COUNT + COUNTER_COUNT)
#define HIST_KEEP 1024

struct target {
    const char *name;
    uint64_t (*read)(void);
    uint64_t mask;
    int counter;          /* COUNTER_* for a counter, -1 for a TSC variant */
    uint64_t nominal_mhz; /* of the counter read (TSC: the measured figure, filled later) */

    /* read cost, in TSC ticks, bracket overhead subtracted */
    struct summary latency;
    uint64_t bracket_overhead;
    bool batch_done;
    uint32_t batch_k;
    struct xf batch_ticks; /* per read, from batches of batch_k, loop overhead subtracted */

    /* sequential reads */
    uint64_t seq_reads, seq_deltas, zero_deltas, backward, largest_backward, min_step, step_gcd;
    size_t distinct;
    struct hist_bin hist[HIST_KEEP];
    size_t hist_kept;
};

/* Frequency of one counter against the TSC, from bracketed samples. */
#define SUBWINDOWS_MAX 64
#define RESIDUALS_KEEP 128
struct freq_series {
    int counter;
    uint32_t slots, kept;   /* samples stored, and kept after the bracket filter */
    uint64_t min_width;     /* narrowest bracket, TSC ticks */
    uint64_t wraps, stalls, longest_stall_tsc, backward;
    bool stuck;
    uint64_t stuck_at_tsc;  /* TSC ticks into the window */
    struct line_fit fit;    /* counter ticks per TSC tick */
    bool fitted;
    struct xf two_point;    /* slope from the first and last kept samples */
    uint64_t window_tsc;
    uint32_t sub_count;
    struct line_fit sub[SUBWINDOWS_MAX];
    uint64_t sub_start_tsc[SUBWINDOWS_MAX];
    /* the fit's residuals at up to RESIDUALS_KEEP evenly spaced samples, for plots */
    uint32_t resid_count;
    uint64_t resid_x[RESIDUALS_KEEP];        /* TSC ticks into the window */
    int64_t resid_mticks[RESIDUALS_KEEP];    /* counter ticks / 1000 off the line */
};

struct hwlat {
    bool done;
    uint64_t window_tsc, iterations, gaps_over_threshold, max_gap, total_over_threshold;
    uint64_t typical_gap; /* median loop gap from a short sample */
    uint64_t threshold_tsc;
    uint64_t bins[5]; /* [100 ns, 1 us), [1, 10 us), [10, 100 us), [100 us, 1 ms), >= 1 ms */
    bool smi_available;
    uint64_t smi_before, smi_after;
    char smi_note[96];
};

/* How fast the CPU runs a one-instruction loop: hardware manages one or
   more iterations per cycle; a virtual CPU that emulates instructions one
   at a time manages about a million a second. */
#define LOOP_ITERATIONS 200000
struct cpu_speed {
    uint64_t loop_tsc;     /* TSC ticks for LOOP_ITERATIONS */
    uint64_t per_second;   /* iterations per second (with the final TSC figure) */
    bool emulated;         /* below EMULATED_BELOW_PER_S */
};
#define EMULATED_BELOW_PER_S 50000000ull

/* One row of the verdict, kept for the summary screen and the QR payload. */
struct verdict_row {
    bool present, measured;
    char read[FMT_FIXED_CHARS], res[FMT_FIXED_CHARS], freq[40], mono[8];
    const char *advice;
    int64_t read_ns_x10, res_ns_x10; /* tenths of ns */
    bool has_ppm;
    int64_t ppm_x100;                /* hundredths of ppm from nominal, or the TSC's +- in hundredths */
};

struct measurement {
    const struct profile *profile;
    /* TSC frequency: the estimate that sizes the phases, and the final figure */
    uint64_t tsc_estimate_hz;
    const char *tsc_estimate_source;
    int reference;              /* COUNTER_* of the best reference, -1 when none */
    bool tsc_measured;
    struct xf tsc_hz;           /* measured against the reference, or the claimed nominal */
    struct xf tsc_rel_stderr;   /* relative */
    const char *tsc_hz_source;  /* "measured against hpet", "nominal (cpuid.15h, claimed)", ... */
    struct target targets[TARGET_MAX];
    int target_count;
    struct freq_series series[COUNTER_COUNT];
    int series_count;
    struct hwlat hwlat;
    struct cpu_speed speed;
    struct verdict_row verdict[COUNTER_COUNT];
    uint64_t memory_used;
};

extern struct measurement measured;

const struct profile *profile_select(char *note, unsigned note_len);
void measure_all(const struct profile *p);
void measure_report(void);

/* TSC ticks to nanoseconds with the best TSC frequency known (xf). */
struct xf tsc_ticks_to_ns(struct xf ticks);

#endif

/* The verdict: one row per counter, computed in one place from what the
   experiments found (read cost, resolution, monotonicity, rate), with the
   counter's own policy for advice. Pure: no hardware, no printing. */
#ifndef CLOCKBENCH_VERDICT_H
#define CLOCKBENCH_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"
#include "xf.h"

enum mono_state { MONO_UNKNOWN, MONO_YES, MONO_NO, MONO_STUCK };
enum freq_state { FREQ_NONE, FREQ_REFERENCE, FREQ_TSC_MEASURED, FREQ_VS_NOMINAL };

/* One read's cost, from which every output's words come (docs/output.md,
   `verdict`'s read_cost and `latency`'s below_step): its p50, or, where
   the p50 lies within a few of the TSC's steps, the batch's figure. */
struct read_cost {
    struct xf p50_ns;
    bool below_step;                /* the p50 lies within a few of the TSC's steps: not a cost */
    struct xf step_ns;              /* that step, when below_step */
    bool batch_done;                /* a batch of reads timed as one: its per-read figure stands for a read */
    struct xf batch_ns;
};

#define READ_COST_CHARS 96
/* The words: "29.6 ns"; "below the TSC's step (10.0 ns): 9.54 ns a read by
   the batch"; "below the TSC's step (10.0 ns): not resolved" (no batch). */
const char *read_cost_text(char buf[READ_COST_CHARS], const struct read_cost *c);
/* The same figure in a narrow table's cell, without its unit: "29.6";
   "9.54*" (the batch's, marked: READ_COST_MARK_NOTE says what the mark
   means); "<10.0" (below the step, no batch). */
const char *read_cost_cell(char buf[FMT_FIXED_CHARS], const struct read_cost *c);
/* The figure a cell shows, in tenths of ns (the QR summary's `c=`). */
int64_t read_cost_ns_x10(const struct read_cost *c);
/* The line under a table that holds a marked cell. */
#define READ_COST_MARK_NOTE "* a read below the TSC's step, by the batch"

struct verdict_input {
    const char *name;
    bool present;
    const char *absent_reason;
    bool measured;                  /* the read cost was measured (read_ns holds it) */
    struct read_cost cost;          /* the read's: its p50, or the batch's figure below the TSC's step */
    bool repeats;                   /* consecutive reads saw the same value */
    struct xf step_ns;              /* the smallest step, when it repeats */
    enum mono_state mono;
    enum freq_state freq;
    struct xf freq_ppm;             /* FREQ_VS_NOMINAL: offset from nominal */
    struct xf uncertainty_ppm;      /* FREQ_TSC_MEASURED / FREQ_VS_NOMINAL: relative to the reference */
    bool is_tsc;
    bool tsc_intercepted;           /* TSC: the hypervisor traps RDTSC */
    bool tsc_invariant;             /* TSC: CPUID says invariant */
    const char *advice_good;        /* the counter table's advice when all is well */
};

struct verdict_row {
    bool present, measured;
    char read[FMT_FIXED_CHARS], res[FMT_FIXED_CHARS], freq[48], mono[8]; /* read: read_cost_cell */
    const char *advice;
    int64_t read_ns_x10, res_ns_x10; /* tenths of ns: read_cost_ns_x10 */
    bool has_ppm;
    int64_t ppm_x100;                /* hundredths of ppm from nominal, or the TSC's +- in hundredths */
};

void verdict_make(const struct verdict_input *in, struct verdict_row *out);

#endif

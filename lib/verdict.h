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

struct verdict_input {
    const char *name;
    bool present;
    const char *absent_reason;
    bool measured;                  /* the read cost was measured (read_ns holds it) */
    struct xf read_ns;              /* p50 */
    bool read_below_step;           /* the p50 lies within a few of the TSC's steps: shown as "<step", not as a cost */
    struct xf tsc_step_ns;          /* that step, when read_below_step */
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
    char read[FMT_FIXED_CHARS], res[FMT_FIXED_CHARS], freq[48], mono[8];
    const char *advice;
    int64_t read_ns_x10, res_ns_x10; /* tenths of ns */
    bool has_ppm;
    int64_t ppm_x100;                /* hundredths of ppm from nominal, or the TSC's +- in hundredths */
};

void verdict_make(const struct verdict_input *in, struct verdict_row *out);

#endif

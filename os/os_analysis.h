/* The pure half of clockbench-os: the sequential-reads table of a run of
   values, and the kernel log's claims about the TSC. No system call here:
   the file is compiled into the host test library too (tests/host). */
#ifndef CLOCKBENCH_OS_ANALYSIS_H
#define CLOCKBENCH_OS_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/stats.h"

#define OS_HIST_KEEP 256

struct os_sequence {
    uint64_t reads, deltas;     /* deltas tabled */
    uint64_t zero_deltas;       /* consecutive reads that saw the same value */
    uint64_t backward, largest_backward;
    uint64_t min_step;          /* smallest non-zero delta */
    uint64_t step_gcd;          /* every delta is a multiple of it */
    uint64_t max_delta;
    size_t distinct, hist_kept; /* distinct deltas; the smallest OS_HIST_KEEP are kept */
    struct hist_bin hist[OS_HIST_KEEP];
};

/* v[0..n-1]: values read back to back, in the call's own unit. The delta
   from v[i] to v[i+1] is tabled unless i % check_every == check_every - 1
   (a time check sat between those two reads; 0: none); every delta is
   checked for a backward step. v is overwritten (deltas, sorted); scratch
   holds n values. */
void os_sequence_analyse(uint64_t *v, size_t n, unsigned check_every, uint64_t *scratch, struct os_sequence *q);

/* The same from a run-length encoded run (value[i] read count[i] times in
   a row; values change between entries): for clocks that step a few times
   a second, whose every read could not be stored. Repeats are zero deltas.
   value is overwritten; scratch holds n values. */
void os_sequence_analyse_rle(uint64_t *value, const uint64_t *count, size_t n, uint64_t *scratch, struct os_sequence *q);

/* A claim the kernel's log makes about the TSC or the clocksource. */
struct os_claim {
    const char *what; /* "tsc detected", "tsc refined", "tsc calibrated by", "tsc unstable", "clocksource switched",
                         "clocksource unstable" (the watchdog; detail: its name) */
    uint64_t khz;     /* 0 when the line states no frequency */
    char detail[64];  /* the calibration method, the clocksource, or the reason */
};

/* Whether one line of the kernel log (syslog prefix "<6>" and "[ time]"
   allowed) is such a claim: Linux 6.x arch/x86/kernel/tsc.c prints
   "tsc: Detected 2599.998 MHz processor", "tsc: Refined TSC clocksource
   calibration: 2599.998 MHz", "tsc: Detected 2600.000 MHz TSC" (CPUID),
   "tsc: Fast TSC calibration using PIT", "tsc: Marking TSC unstable due to
   ..."; kernel/time/clocksource.c "clocksource: Switched to clocksource X". */
bool os_claim_parse(const char *line, struct os_claim *c);

#endif

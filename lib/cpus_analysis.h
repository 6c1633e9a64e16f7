/* The "cpus" experiment's conclusions from its samples: the CPUID time bits
   each CPU reports (Intel SDM vol. 2A, CPUID leaves 01h, 07h, 0Bh; AMD APM
   vol. 3, CPUID 8000_0001h, 8000_0007h), which CPU's TSC stands out among
   the offset intervals against CPU 0 (tsc_sync.h), and whether they all
   agree. Pure: experiments/exp_cpus.c takes the samples, the host tests
   feed made-up ones. */
#ifndef CLOCKBENCH_CPUS_ANALYSIS_H
#define CLOCKBENCH_CPUS_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "tsc_sync.h"
#include "xf.h"

/* CPUID time bits, the same on every CPU or a finding */
#define CPUS_TB_TSC (1u << 0)
#define CPUS_TB_RDTSCP (1u << 1)
#define CPUS_TB_INVARIANT (1u << 2)
#define CPUS_TB_DEADLINE (1u << 3)
#define CPUS_TB_ADJUST (1u << 4)
#define CPUS_TB_X2APIC (1u << 5)

/* The registers behind the time bits, as one CPU answers them. A leaf
   beyond the maxima the CPU reports is not asked and stays zero (Intel
   answers such a leaf with the highest basic leaf's data). */
struct cpus_cpuid {
    uint32_t l1_ebx, l1_ecx, l1_edx;  /* CPUID.01h */
    uint32_t l7_ebx;                  /* CPUID.(07h, 0) */
    uint32_t lb_ebx, lb_edx;          /* CPUID.(0Bh, 0): EBX 0 when the leaf is not implemented */
    uint32_t e1_edx, e7_edx;          /* CPUID.8000_0001h, 8000_0007h */
};

/* The CPUS_TB_* bits; *apic_id the full x2APIC ID from leaf 0Bh where it
   is implemented, else the 8-bit initial APIC ID, CPUID.01h:EBX[31:24]. */
uint32_t cpus_time_bits(const struct cpus_cpuid *r, uint32_t *apic_id);

/* Whether a write meant to move a TSC by ticks took: the TSC moved by
   within half of ticks of it between two reads around the write (their own
   distance is far below any useful ticks). */
bool cpus_skew_took(int64_t ticks, int64_t moved);

/* Every AP against CPU 0, summed up for the verdict. */
struct cpus_tally {
    uint32_t compared;       /* CPUs that answered at least one exchange */
    int worst;               /* the CPU that stands out most, -1 for none */
    uint64_t worst_ticks;    /* the largest |offset| its interval allows; UINT64_MAX when empty */
    bool worst_excludes;     /* its interval excludes 0 (or is empty) */
    bool all_contain;        /* every interval consistent and holding 0 */
    bool rates_agree;        /* every measured rate's interval holds 0 */
    uint64_t warps;          /* TSC readings that went back across CPUs */
    uint64_t kvm_warps, kvm_cross;  /* kvmclock's: warps, cross-CPU comparisons */
};

void cpus_tally_init(struct cpus_tally *t);
/* One CPU's first offset interval against CPU 0, from at least one
   exchange. The worst CPU: one whose interval excludes 0 (an empty one
   counts so) before any whose interval holds it, then the largest |offset|
   the interval allows; the first seen on a tie. */
void cpus_tally_offset(struct cpus_tally *t, int cpu, const struct tsc_offset *o);
void cpus_tally_warps(struct cpus_tally *t, uint64_t warps);
void cpus_tally_kvm_warps(struct cpus_tally *t, uint64_t warps, uint64_t cross);
/* A rate rate_mppm +- uncertainty_mppm (10^-3 ppm, tsc_offset_rate). */
void cpus_tally_rate(struct cpus_tally *t, int64_t rate_mppm, uint64_t uncertainty_mppm);

/* Wider than this, a synchronised verdict says how little it can tell. */
#define CPUS_COARSE_BOUND_NS 10000

enum cpus_outcome {
    CPUS_NOT_COMPARED,  /* no other CPU answered */
    CPUS_SYNCHRONISED,  /* every interval holds 0, no warp, every rate holds 0 */
    CPUS_SYNC_COARSE,   /* the same, but the worst bound is above CPUS_COARSE_BOUND_NS */
    CPUS_OFFSET,        /* the worst CPU's interval excludes 0: it is ahead or behind */
    CPUS_WARPS,         /* readings went back across CPUs */
    CPUS_RATE,          /* a CPU's TSC runs at another rate */
    CPUS_UNBOUNDED,     /* the worst CPU's offset cannot be bounded (its interval is empty) */
};

/* The verdict from the tally: worst_first is the worst CPU's first
   interval (0 when there is none), worst_bound_ns its worst_ticks in ns. */
enum cpus_outcome cpus_outcome(const struct cpus_tally *t, const struct tsc_offset *worst_first, struct xf worst_bound_ns);

/* --- many CPUs: a summary and the CPUs that stand out --- */

/* Up to this many CPUs the report shows every CPU; beyond, a summary and
   the exceptions (the records keep every CPU either way). */
#define CPUS_FULL_REPORT_MAX 8
bool cpus_report_in_full(uint32_t cpus);

/* One AP's figures, as the summary weighs them. */
struct cpus_row_view {
    int cpu;
    bool measured;                 /* at least one exchange */
    struct tsc_offset first;
    bool warp_done;
    uint64_t warps, warp_cross;
    bool rate_ok;
    int64_t rate_mppm;
    uint64_t rate_unc_mppm;
    bool facts_done;
    uint32_t time_bits;
};

/* Why an AP stands out (any of these); 0 when it does not. */
#define CPUS_ODD_UNMEASURED (1u << 0)  /* no exchange: no offset */
#define CPUS_ODD_OFFSET (1u << 1)      /* its interval excludes 0 (or is empty) */
#define CPUS_ODD_WIDE (1u << 2)        /* its interval is over CPUS_WIDE_FACTOR times the median width */
#define CPUS_ODD_RATE (1u << 3)        /* its rate's interval excludes 0 */
#define CPUS_ODD_NO_RATE (1u << 4)     /* measured, but no rate */
#define CPUS_ODD_WARPS (1u << 5)       /* readings went back across CPUs */
#define CPUS_ODD_NO_WARP_TEST (1u << 6) /* measured, but the lock never passed between them */
#define CPUS_ODD_CPUID (1u << 7)       /* its CPUID time bits differ from CPU 0's */
#define CPUS_WIDE_FACTOR 10

/* The median width (hi - lo) of the consistent intervals among n rows, 0
   when there is none; scratch holds n values. */
uint64_t cpus_median_width(const struct cpus_row_view *rows, uint32_t n, uint64_t *scratch);
uint32_t cpus_stands_out(const struct cpus_row_view *r, uint64_t median_width, uint32_t bsp_time_bits);

/* The pair of CPUs (CPU 0 among them, its offset [0, 0]) whose difference
   the intervals bound least tightly: the one with the largest |offset|
   their derived interval (tsc_offset_between) allows. a - b lies in
   [lo, hi]. False with fewer than one consistent interval. */
struct cpus_pair {
    int a, b;
    int64_t lo, hi;
    uint64_t worst;
};
bool cpus_worst_pair(const struct cpus_row_view *rows, uint32_t n, struct cpus_pair *p);

/* The spread of the offsets: the lowest and highest midpoint (and whose),
   and the lowest lo and highest hi, CPU 0's 0 included. False with no
   consistent interval. */
struct cpus_spread {
    int64_t mid_min, mid_max;
    int cpu_min, cpu_max;
    int64_t lo_min, hi_max;
};
bool cpus_offset_spread(const struct cpus_row_view *rows, uint32_t n, struct cpus_spread *s);

/* Every pair of APs is listed only up to this many CPUs in all. */
#define CPUS_PAIRS_MAX_CPUS 8

/* Whether the pairs of aps APs (CPU 0 not counted) are listed: at least
   two, and at most CPUS_PAIRS_MAX_CPUS CPUs in all. */
bool cpus_pairs_listed(uint32_t aps);

#endif

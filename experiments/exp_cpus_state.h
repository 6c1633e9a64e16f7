/* Experiment "cpus", its state: what the measurement (exp_cpus.c) found
   and its report (exp_cpus_report.c) reads; no other file includes it. */
#ifndef CLOCKBENCH_EXP_CPUS_STATE_H
#define CLOCKBENCH_EXP_CPUS_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../kernel/percpu.h"
#include "../lib/cpu_topology.h"
#include "../lib/tsc_sync.h"
#include "../lib/xf.h"

/* Budgets: together under 1 s for 64 CPUs on hardware (15 ms each), plus
   the rate window. Under an emulator an AP takes longer (the exchanges and
   the lock pass slowly): PHASE_MS_PER_AP keeps 128 CPUs inside the budget. */
#define EXCHANGES 1000
#define EXCHANGE_MS 3
#define EXCHANGES_MIN 16       /* taken even past EXCHANGE_MS, up to EXCHANGE_CAP_MS: an */
#define EXCHANGE_CAP_MS 60     /* emulator may hand the host CPU over only every few ms */
#define WARP_ROUNDS 100000
#define WARP_MS 5
#define WARP_CROSS_MIN 4       /* taken even past WARP_MS, up to WARP_CAP_MS */
#define WARP_CAP_MS 30
#define KVM_WARP_MS 50
#define RATE_WINDOW_MS 100
#define PHASE_MS 3000          /* the most the whole experiment takes, */
#define PHASE_MS_PER_AP 60     /* or this much per AP where that is more */
#define JOB_SLACK_MS 200       /* a job's wait beyond its own budget */

/* The phase's parts, in order */
enum { PART_START, PART_FACTS, PART_FIRST, PART_WARPS, PART_SECOND, CPUS_PARTS };

struct cpu_facts {
    bool done, faulted;
    char fault[96];
    uint32_t apic_id_cpuid;     /* CPUID.0Bh:EDX, else CPUID.1:EBX[31:24] */
    uint64_t apic_base;
    uint32_t time_bits;         /* CPUS_TB_* */
    bool adjust_read;
    char adjust_fault[96];      /* CPUID claims TSC_ADJUST but reading it faulted: the fault, else "" */
    uint64_t tsc_adjust;
    bool aux_read;
    uint32_t tsc_aux;
    uint64_t *costs;            /* COST_READS, empty bracket subtracted; only while measuring */
    uint64_t overhead;
    uint64_t p50_ticks;
    struct xf batch_ticks;      /* per read, from CPU_BATCH_K reads timed as one: the figure below the TSC's step */
    bool kvm_page_ok;           /* this CPU's kvmclock page registered and settled */
};

struct sync_row {
    int index;
    struct tsc_offset first, second, skewed;
    uint64_t first_mid_tsc, second_mid_tsc;  /* boot CPU's TSC at each set's middle */
    bool first_cut, second_cut;              /* a set stopped at its time budget */
    uint64_t warp_rounds_bsp, warp_rounds_ap, warp_cross, warps, max_warp;
    bool warp_done, warp_cut;
    uint64_t kvm_cross, kvm_warps, kvm_max_warp_ns;   /* the same warp test on kvmclock, each CPU its own page */
    bool kvm_done, kvm_cut;
    bool rate_ok;
    int64_t rate_mppm;
    uint64_t rate_unc_mppm;
    const char *rate_why;
    bool measured;
    bool second_done;                        /* its second set was taken or given up */
    char why[96];
};

struct cpus_state {
    bool started;
    uint64_t phase_start, phase_ticks;
    uint32_t budget_ms;                /* PHASE_MS, or PHASE_MS_PER_AP per AP */
    uint64_t part_ticks[CPUS_PARTS];   /* where the phase's time went */
    bool phase_cut;
    struct cpu_facts facts[PERCPU_MAX];
    struct sync_row rows[PERCPU_MAX];
    int row_count;
    struct topo_shifts topo;           /* how APIC IDs group (the boot CPU's CPUID) */
    /* tsc_skew */
    bool skew_asked, skew_valid;
    uint32_t skew_cpu;
    int64_t skew_ticks;
    bool skew_applied, skew_honoured, skew_via_adjust;
    int64_t skew_moved;
    char skew_why[160];
};

extern struct cpus_state cpus_st;

/* Whether the experiment's PHASE_MS budget has run out (asked now). */
bool cpus_phase_over(void);
/* The report: the tables, records, checks and the verdict. */
void cpus_report(void);

#endif

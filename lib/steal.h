/* KVM steal time, pure: the per-CPU area KVM fills (Linux
   Documentation/virt/kvm/x86/msr.rst, MSR_KVM_STEAL_TIME) and the comparison
   of KVM's count with the stolen-time scan's own over one window.

   KVM's count is the time the vCPU's host thread waited on a host run queue
   (the scheduler's run_delay), in host ns, added when the vCPU next enters
   the guest; a halted vCPU's time is not counted. The scan counts every gap
   in a tight TSC loop above its threshold, whoever took the time. */
#ifndef CLOCKBENCH_STEAL_H
#define CLOCKBENCH_STEAL_H

#include <stdbool.h>
#include <stdint.h>

/* 64 bytes, 64-byte aligned, zeroed before it is registered (msr.rst). */
struct kvm_steal_time {
    uint64_t steal;     /* ns this vCPU was runnable and not running */
    uint32_t version;   /* odd while KVM updates the area */
    uint32_t flags;     /* 0 so far */
    uint8_t preempted;  /* non-zero while the vCPU is preempted (0 where KVM does not say) */
    uint8_t u8_pad[3];
    uint32_t pad[11];
} __attribute__((packed));
_Static_assert(sizeof(struct kvm_steal_time) == 64, "kvm_steal_time is 64 bytes");

/* What the scan and the two steal reads saw, in TSC ticks and ns. */
struct steal_window {
    uint64_t steal_before_ns, steal_after_ns; /* KVM's count, read just before and just after the scan */
    uint64_t scan_ticks;        /* the scan: its first to its last read */
    uint64_t reads;             /* gaps in the scan (one per read after the first) */
    uint64_t over_count;        /* gaps above the threshold */
    uint64_t over_ticks;        /* their sum */
    uint64_t typical_ticks;     /* the loop's typical gap (median): its own work */
    uint64_t edge_ticks;        /* the TSC from each steal read's bracket to the scan's end next to it, both ends */
    uint64_t tsc_hz;            /* the rate ticks are turned into ns with */
    uint32_t rate_ppm;          /* that rate's uncertainty */
};

struct steal_comparison {
    bool valid;                 /* false: KVM's count went back (re-registered, reset) */
    uint64_t kvm_ns;            /* KVM's count's advance */
    uint64_t kvm_uncertainty_ns;  /* the edges: a preemption there is in one count only */
    uint64_t scan_ns;           /* gaps over the threshold, less the loop's own work in each */
    uint64_t scan_uncertainty_ns; /* gaps under the threshold beyond the typical one, plus the rate */
    uint64_t below_threshold_ns;  /* that first part alone */
    int64_t difference_ns;      /* scan - KVM */
    bool agree;                 /* |difference| within the two uncertainties added */
};

/* ticks * 10^9 / hz without a 128-bit division (the image has none);
   0 for hz 0. Exact (rounded down) for hz below 1.8 * 10^10. */
uint64_t steal_ticks_ns(uint64_t ticks, uint64_t hz);

void steal_compare(const struct steal_window *w, struct steal_comparison *c);

#endif

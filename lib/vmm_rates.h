/* Each emulated counter's rate as the virtual machine monitor that
   emulates it defines it: a constant in the VMM's source, not a crystal. On
   a PC the PIT's 14.31818 MHz / 12 is a nominal within the crystal's
   tolerance; under a VMM the device counts at the VMM's constant exactly
   (against the host's clock), and the crystal's figure is simply wrong by
   up to 0.56 ppm (issue 37). Pure: the table and the choice between two
   candidates; the machine is identified by the runtime (kernel/finish.c). */
#ifndef CLOCKBENCH_VMM_RATES_H
#define CLOCKBENCH_VMM_RATES_H

#include <stdbool.h>
#include <stdint.h>

/* The machines whose devices the table knows. VMM_UNKNOWN: a PC, or a
   hypervisor the image cannot name: the crystal's nominal stands. */
enum vmm_id { VMM_UNKNOWN, VMM_QEMU_TCG, VMM_QEMU_KVM, VMM_FIRECRACKER, VMM_CLOUD_HYPERVISOR, VMM_COUNT };

enum vmm_device { VDEV_PIT, VDEV_PM_TIMER, VDEV_HPET, VDEV_APIC_TIMER, VDEV_KVMCLOCK, VDEV_RTC, VDEV_COUNT };

struct vmm_rate {
    enum vmm_id vmm;
    enum vmm_device device;
    const char *model;    /* whose device: "KVM's in-kernel PIT" */
    uint64_t millihz;     /* the rate it counts at; the RTC's is its divider's input (its count steps at 1 Hz) */
    const char *constant; /* the constant that fixes it: "KVM_PIT_FREQ" */
    const char *file;     /* where that constant is: "Linux arch/x86/kvm/i8254.h" */
};

/* How many devices of this kind the machine may have (0: none known, 1:
   one rate, 2: the image cannot tell which of two: QEMU+KVM's PIT, in the
   kernel or in QEMU's user space), and the i-th. */
unsigned vmm_rate_candidates(enum vmm_id vmm, enum vmm_device device);
const struct vmm_rate *vmm_rate_of(enum vmm_id vmm, enum vmm_device device, unsigned i);
/* The whole table, for the docs' test and for listing. */
const struct vmm_rate *vmm_rate_table(unsigned *count);
const char *vmm_name(enum vmm_id vmm);

/* Two candidate rates a and b (mHz) and a measurement of the device
   (measured_millihz, with a standard uncertainty u_ppb in parts per
   billion): the nearer is chosen when the measurement separates them (the
   nearer within 3 u, the farther beyond 3 u); otherwise neither, and the
   nominal is their midpoint with half their spread added to every
   uncertainty relative to it (both candidates lie within it). */
struct vmm_pick {
    int chosen;            /* 0 (a), 1 (b) or -1 (cannot tell) */
    uint64_t millihz;      /* the nominal to use */
    uint64_t spread_ppb;   /* added to the uncertainty: 0 when chosen */
    uint64_t off_a_ppb;    /* the measurement's distance from each candidate */
    uint64_t off_b_ppb;
};
struct vmm_pick vmm_rate_pick(uint64_t a_millihz, uint64_t b_millihz, uint64_t measured_millihz, uint64_t u_ppb);
/* Before any measurement: the midpoint and half the spread. */
struct vmm_pick vmm_rate_unmeasured(uint64_t a_millihz, uint64_t b_millihz);

#endif

/* One table of every time counter: what the experiments iterate over, and
   each counter's policy, written once: how it ranks as a reference, the
   advice the verdict gives, how sure its nominal rate is. Adding a counter
   (LAPIC timer, kvmclock) means a row here and a case in discover.c. */
#ifndef CLOCKBENCH_COUNTERS_H
#define CLOCKBENCH_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm_rates.h"

enum counter_id {
    COUNTER_TSC, COUNTER_HPET, COUNTER_ACPI_PM, COUNTER_PIT, COUNTER_LAPIC,
    COUNTER_KVMCLOCK, COUNTER_HV_REF_COUNTER, COUNTER_HV_REF_PAGE, COUNTER_COUNT
};

struct counter {
    /* policy: fixed in counters.c */
    const char *name;
    unsigned reference_rank;        /* 1 = the best reference for the TSC; 0 = never a reference */
    bool last_resort;               /* a reference only when no ranked one is present (kvmclock) */
    const char *advice_good;        /* the verdict's advice when it behaved */
    uint32_t nominal_accuracy_ppm;  /* how far its real rate may be from nominal (absolute_uncertainty_ppm) */
    const char *nominal_accuracy_source;

    /* discovery: filled by discover.c */
    bool present;
    char reason[128];               /* why absent */
    uint64_t nominal_millihz;       /* nominal frequency in millihertz, 0 when unknown */
    char nominal_source[96];        /* where that figure came from */
    const char *nominal_from;       /* its kind: "vmm" (the VMM's constant, lib/vmm_rates.c), "device" (its own
                                       register), "spec", "crystal", "claimed" (CPUID), "estimate"; 0 when none */
    const struct vmm_rate *nominal_vmm[2]; /* the VMM's row(s) behind it; two when the machine may have either
                                       device (QEMU+KVM's PIT) until a measurement tells them apart */
    uint32_t nominal_spread_ppb;    /* with two rows and no choice: half their spread, added to every
                                       uncertainty relative to this counter (both lie within it) */
    bool nominal_estimated;         /* nothing states it: nominal_millihz is a start-up estimate, only for unwrapping */
    unsigned width_bits;
    uint64_t mask;                  /* (1 << width) - 1: differences are taken modulo this */
    char access[48];                /* how it is read */
    bool set_aside;                 /* present, measured, but never the default reference (why: note) */
    char note[64];                  /* what the OS makes of it ("ignored by the OS (...)"), or "" */
};

extern struct counter counters[COUNTER_COUNT];

static inline uint64_t counter_mask(unsigned width_bits) { return width_bits >= 64 ? ~0ull : (1ull << width_bits) - 1; }

/* b - a for a counter that wraps at its width: correct across one wrap. */
static inline uint64_t counter_delta(const struct counter *c, uint64_t a, uint64_t b) { return (b - a) & c->mask; }

/* The present counters that may serve as the TSC's reference, best first:
   the ranked ones not set aside; when there is none, the last resorts
   (kvmclock: the host's clock, scaled from this very TSC). */
int counters_by_rank(int out[COUNTER_COUNT]);
/* Whether counters_by_rank lists c. */
bool counter_is_reference(int c);
/* How c stands as a reference: "ranked", "last resort", "set aside" or "no". */
const char *counter_reference_role(int c);

#endif

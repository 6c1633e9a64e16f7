/* One table of every time counter: what the experiments iterate over, and
   each counter's policy, written once: how it ranks as a reference, the
   advice the verdict gives, how sure its nominal rate is. Adding a counter
   (LAPIC timer, kvmclock) means a row here and a case in discover.c. */
#ifndef CLOCKBENCH_COUNTERS_H
#define CLOCKBENCH_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

enum counter_id {
    COUNTER_TSC, COUNTER_HPET, COUNTER_ACPI_PM, COUNTER_PIT, COUNTER_LAPIC,
    COUNTER_KVMCLOCK, COUNTER_HV_REF_COUNTER, COUNTER_HV_REF_PAGE, COUNTER_COUNT
};

struct counter {
    /* policy: fixed in counters.c */
    const char *name;
    unsigned reference_rank;        /* 1 = the best reference for the TSC; 0 = never a reference */
    const char *advice_good;        /* the verdict's advice when it behaved */
    uint32_t nominal_accuracy_ppm;  /* how far its real rate may be from nominal (absolute_uncertainty_ppm) */
    const char *nominal_accuracy_source;

    /* discovery: filled by discover.c */
    bool present;
    char reason[128];               /* why absent */
    uint64_t nominal_millihz;       /* nominal frequency in millihertz, 0 when unknown */
    char nominal_source[64];        /* where that figure came from */
    bool nominal_estimated;         /* nothing states it: nominal_millihz is a start-up estimate, only for unwrapping */
    unsigned width_bits;
    uint64_t mask;                  /* (1 << width) - 1: differences are taken modulo this */
    char access[48];                /* how it is read */
};

extern struct counter counters[COUNTER_COUNT];

static inline uint64_t counter_mask(unsigned width_bits) { return width_bits >= 64 ? ~0ull : (1ull << width_bits) - 1; }

/* b - a for a counter that wraps at its width: correct across one wrap. */
static inline uint64_t counter_delta(const struct counter *c, uint64_t a, uint64_t b) { return (b - a) & c->mask; }

/* The present counters other than the TSC, best reference first. */
int counters_by_rank(int out[COUNTER_COUNT]);

#endif

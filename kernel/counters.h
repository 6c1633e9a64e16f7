/* One table of every time counter: what the measurement engine iterates
   over. Adding a counter (LAPIC timer, kvmclock) means adding a row here and
   a case in discover.c, not new plumbing. */
#ifndef CLOCKBENCH_COUNTERS_H
#define CLOCKBENCH_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

enum counter_id { COUNTER_TSC, COUNTER_HPET, COUNTER_ACPI_PM, COUNTER_PIT, COUNTER_COUNT };

struct counter {
    const char *name;
    bool present;
    char reason[128];          /* why absent */
    uint64_t nominal_mhz;      /* nominal frequency in millihertz, 0 when unknown */
    char nominal_source[64];   /* where that figure came from */
    unsigned width_bits;
    uint64_t mask;             /* (1 << width) - 1: differences are taken modulo this */
    char access[48];           /* how it is read */
    uint64_t (*read)(void);
};

extern struct counter counters[COUNTER_COUNT];

static inline uint64_t counter_mask(unsigned width_bits) { return width_bits >= 64 ? ~0ull : (1ull << width_bits) - 1; }

/* b - a for a counter that wraps at its width: correct across one wrap. */
static inline uint64_t counter_delta(const struct counter *c, uint64_t a, uint64_t b) { return (b - a) & c->mask; }

#endif

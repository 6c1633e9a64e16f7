/* The TSC read variants clockbench measures, as a table. Each variant is
   only ever executed after its CPUID feature bit was checked. */
#ifndef CLOCKBENCH_TSC_H
#define CLOCKBENCH_TSC_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/cpuid_decode.h"

enum tsc_variant_id { TSC_RDTSC, TSC_RDTSCP, TSC_LFENCE_RDTSC, TSC_MFENCE_RDTSC, TSC_CPUID_RDTSC, TSC_VARIANT_COUNT };

struct tsc_variant {
    const char *name;
    bool available;
    char reason[80]; /* why not, when not available */
};

extern struct tsc_variant tsc_variants[TSC_VARIANT_COUNT];

/* LFENCE ordering on AMD: DE_CFG (MSR 0xC0011029) bit 1 "LFENCE is
   dispatch serializing" (AMD, "Software techniques for managing
   speculation", 2018). */
#define MSR_AMD_DE_CFG 0xC0011029u
#define   DE_CFG_LFENCE_SERIALIZE (1ull << 1)

struct lfence_status {
    const char *state; /* "serialising", "not serialising", "unknown", "architectural" */
    char detail[96];
};

void tsc_variants_probe(const struct cpu_info *ci, struct lfence_status *lf);

#endif

/* Reads the CPUID leaves clockbench uses and decodes them once. */
#ifndef CLOCKBENCH_CPUINFO_H
#define CLOCKBENCH_CPUINFO_H

#include "../lib/cpuid_decode.h"

struct cpu_probe {
    struct cpuid_leaf leaves[CPUID_LEAF_COUNT];
    struct cpu_info info;
};

void cpuinfo_probe(struct cpu_probe *p);

/* This machine's CPU, probed once at boot. */
extern struct cpu_probe boot_cpu;

#endif

/* Decoding CPUID leaves into what clockbench needs: identity, time features
   and every frequency the CPU or hypervisor claims for the TSC. Pure: the
   raw leaves are gathered by drivers/cpuinfo.c, and the host tests feed
   crafted ones. Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E. */
#ifndef CLOCKBENCH_CPUID_DECODE_H
#define CLOCKBENCH_CPUID_DECODE_H

#include <stdbool.h>
#include <stdint.h>

struct cpuid_leaf {
    uint32_t leaf, subleaf;
    bool valid; /* within the maximum leaf the CPU reports */
    uint32_t eax, ebx, ecx, edx;
};

/* The leaves we read, in a fixed order (CPUID_IDX_*). */
enum {
    CPUID_IDX_0,
    CPUID_IDX_1,
    CPUID_IDX_7,
    CPUID_IDX_15,
    CPUID_IDX_16,
    CPUID_IDX_HV0,  /* 0x40000000 */
    CPUID_IDX_HV10, /* 0x40000010 */
    CPUID_IDX_EXT0, /* 0x80000000 */
    CPUID_IDX_EXT1,
    CPUID_IDX_EXT2,
    CPUID_IDX_EXT3,
    CPUID_IDX_EXT4,
    CPUID_IDX_EXT7,
    CPUID_LEAF_COUNT
};

extern const uint32_t cpuid_leaf_numbers[CPUID_LEAF_COUNT];

#define FREQ_CLAIMS_MAX 6

/* A frequency someone claims for the TSC (or the bus); never a measurement. */
struct freq_claim {
    const char *source; /* "cpuid.15h", "cpuid.15h+16h", "cpuid.16h.base", ... */
    const char *what;   /* "tsc", "cpu_base", "cpu_max", "bus", "crystal" */
    uint64_t hz;
};

struct cpu_info {
    char vendor[13];
    char brand[49];
    char hv_vendor[13];
    uint32_t family, model, stepping;
    uint32_t max_leaf, max_ext_leaf, max_hv_leaf;
    bool tsc, rdtscp, invariant_tsc, tsc_deadline, tsc_adjust, hypervisor, long_mode;
    bool amd_like; /* AuthenticAMD or HygonGenuine: LFENCE serialisation is an MSR bit */
    struct freq_claim claims[FREQ_CLAIMS_MAX];
    int claim_count;
};

void cpuid_decode(const struct cpuid_leaf leaves[CPUID_LEAF_COUNT], struct cpu_info *ci);

struct record;
/* The `machine` record's identity members, the same for the image and
   clockbench-os (compare tells machines apart by them): vendor, brand,
   family, model, stepping, hypervisor (the signature, or null). */
void cpu_identity_record(struct record *r, const struct cpu_info *ci);

#endif

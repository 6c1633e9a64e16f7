/* Gathers raw CPUID leaves, asking only for leaves within the maxima the
   CPU reports (a leaf above the maximum returns another leaf's data on
   Intel parts: SDM vol. 2A, CPUID, "If a value entered ... is invalid"). */
#include "cpuinfo.h"

#include "cpu.h"

#define CPUID1_ECX_HYPERVISOR (1u << 31)

struct cpu_probe boot_cpu;

static void read_leaf(struct cpuid_leaf *l, uint32_t leaf, bool valid)
{
    l->leaf = leaf;
    l->subleaf = 0;
    l->valid = valid;
    if (valid) {
        struct cpuid_regs r = cpuid(leaf, 0);
        l->eax = r.eax;
        l->ebx = r.ebx;
        l->ecx = r.ecx;
        l->edx = r.edx;
    }
}

void cpuinfo_probe(struct cpu_probe *p)
{
    struct cpuid_leaf *l = p->leaves;
    read_leaf(&l[CPUID_IDX_0], 0, true);
    uint32_t max_std = l[CPUID_IDX_0].eax;
    read_leaf(&l[CPUID_IDX_1], 1, max_std >= 1);
    bool hv = l[CPUID_IDX_1].valid && (l[CPUID_IDX_1].ecx & CPUID1_ECX_HYPERVISOR);
    read_leaf(&l[CPUID_IDX_HV0], 0x40000000, hv);
    uint32_t max_hv = l[CPUID_IDX_HV0].valid ? l[CPUID_IDX_HV0].eax : 0;
    read_leaf(&l[CPUID_IDX_EXT0], 0x80000000, true);
    uint32_t max_ext = l[CPUID_IDX_EXT0].eax;
    if (max_ext < 0x80000000 || max_ext > 0x8000FFFF)
        max_ext = 0;
    for (int i = 0; i < CPUID_LEAF_COUNT; i++) {
        uint32_t n = cpuid_leaf_numbers[i];
        if (i == CPUID_IDX_0 || i == CPUID_IDX_1 || i == CPUID_IDX_HV0 || i == CPUID_IDX_EXT0)
            continue;
        bool valid = n >= 0x80000000 ? n <= max_ext : n >= 0x40000000 ? hv && n <= max_hv : n <= max_std;
        read_leaf(&l[i], n, valid);
    }
    cpuid_decode(l, &p->info);
}

/* CPU topology from APIC IDs (see cpu_topology.h). */
#include "cpu_topology.h"

#define SHIFT_MASK 0x1Fu
#define TYPE_SHIFT 8
#define TYPE_MASK 0xFFu
#define AMD_APIC_ID_SIZE_SHIFT 12
#define AMD_APIC_ID_SIZE_MASK 0xFu
#define AMD_NC_MASK 0xFFu
#define AMD_THREADS_SHIFT 8
#define AMD_THREADS_MASK 0xFFu

bool topo_from_extended(const struct topo_level *levels, uint32_t n, const char *source, struct topo_shifts *t)
{
    *t = (struct topo_shifts){.source = source};
    uint32_t last = 0;
    bool any = false;
    for (uint32_t i = 0; i < n && i < TOPO_MAX_LEVELS; i++) {
        uint32_t type = (levels[i].ecx >> TYPE_SHIFT) & TYPE_MASK, shift = levels[i].eax & SHIFT_MASK;
        if (type == 0)
            break;
        if (any && shift < last)
            return false;
        if (type == TOPO_LEVEL_SMT)
            t->thread_bits = (uint8_t)shift;
        last = shift;
        any = true;
    }
    if (!any)
        return false;
    t->package_shift = (uint8_t)last;
    t->valid = t->thread_bits <= t->package_shift;
    return t->valid;
}

/* Bits that hold 0..count-1. */
static uint8_t bits_for(uint32_t count)
{
    uint8_t b = 0;
    while (b < 32 && (1ull << b) < count)
        b++;
    return b;
}

bool topo_from_amd(uint32_t e8_ecx, bool have_1e, uint32_t e1e_ebx, struct topo_shifts *t)
{
    *t = (struct topo_shifts){.source = have_1e ? "CPUID 8000_0008h and 8000_001Eh" : "CPUID 8000_0008h"};
    uint32_t size = (e8_ecx >> AMD_APIC_ID_SIZE_SHIFT) & AMD_APIC_ID_SIZE_MASK;
    t->package_shift = size ? (uint8_t)size : bits_for((e8_ecx & AMD_NC_MASK) + 1);
    t->thread_bits = have_1e ? bits_for(((e1e_ebx >> AMD_THREADS_SHIFT) & AMD_THREADS_MASK) + 1) : 0;
    t->valid = t->thread_bits <= t->package_shift;
    return t->valid;
}

struct topo_place topo_place_of(const struct topo_shifts *t, uint32_t apic_id)
{
    if (!t->valid)
        return (struct topo_place){.package = 0, .core = apic_id, .thread = 0};
    uint64_t id = apic_id;
    uint32_t core_bits = t->package_shift - t->thread_bits;
    return (struct topo_place){
        .package = (uint32_t)(id >> t->package_shift),
        .core = (uint32_t)((id >> t->thread_bits) & ((1ull << core_bits) - 1)),
        .thread = (uint32_t)(id & ((1ull << t->thread_bits) - 1)),
    };
}

void topo_summarise(const struct topo_shifts *t, const uint32_t *ids, uint32_t n, uint32_t *scratch, struct topo_summary *s)
{
    *s = (struct topo_summary){.cpus = n};
    if (!n)
        return;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = ids[i], j = i;
        for (; j > 0 && scratch[j - 1] > v; j--)
            scratch[j] = scratch[j - 1];
        scratch[j] = v;
    }
    /* sorted by ID, so by package, then core, then thread */
    uint32_t cores_here = 0, threads_here = 0;
    s->cores_per_package_min = s->threads_per_core_min = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        struct topo_place p = topo_place_of(t, scratch[i]);
        bool new_package = i == 0 || p.package != topo_place_of(t, scratch[i - 1]).package;
        bool new_core = new_package || p.core != topo_place_of(t, scratch[i - 1]).core;
        if (new_core && i > 0) {
            if (threads_here < s->threads_per_core_min)
                s->threads_per_core_min = threads_here;
            if (threads_here > s->threads_per_core_max)
                s->threads_per_core_max = threads_here;
            threads_here = 0;
        }
        if (new_package && i > 0) {
            if (cores_here < s->cores_per_package_min)
                s->cores_per_package_min = cores_here;
            if (cores_here > s->cores_per_package_max)
                s->cores_per_package_max = cores_here;
            cores_here = 0;
        }
        if (new_package)
            s->packages++;
        if (new_core) {
            s->cores++;
            cores_here++;
        }
        threads_here++;
    }
    if (threads_here < s->threads_per_core_min)
        s->threads_per_core_min = threads_here;
    if (threads_here > s->threads_per_core_max)
        s->threads_per_core_max = threads_here;
    if (cores_here < s->cores_per_package_min)
        s->cores_per_package_min = cores_here;
    if (cores_here > s->cores_per_package_max)
        s->cores_per_package_max = cores_here;
}

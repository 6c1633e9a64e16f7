/* Which package, core and thread a CPU is, from the bit fields of its APIC
   ID as CPUID describes them: Intel SDM vol. 2A, CPUID leaves 0Bh and 1Fh,
   "Extended Topology Enumeration" (per level: EAX[4:0] the shift to the
   next level's ID, ECX[15:8] the level's type, 0 ending the list); AMD APM
   vol. 3, CPUID 8000_0008h ECX[15:12] "ApicIdSize" (the ID's bits below
   the package; 0: take NC, ECX[7:0], plus one, rounded up to a power of
   two) and 8000_001Eh EBX[15:8] "ThreadsPerCore" (minus one). The MADT
   says which IDs exist; this says how they group. Pure: the experiment
   reads the leaves, the host tests feed made-up ones. */
#ifndef CLOCKBENCH_CPU_TOPOLOGY_H
#define CLOCKBENCH_CPU_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#define TOPO_LEVEL_SMT 1
#define TOPO_LEVEL_CORE 2
#define TOPO_MAX_LEVELS 8

/* One subleaf of 0Bh or 1Fh, as the CPU answers it. */
struct topo_level {
    uint32_t eax, ecx;
};

struct topo_shifts {
    bool valid;
    uint8_t thread_bits;    /* the ID's bits below the core: the thread within it */
    uint8_t package_shift;  /* the ID's bits below the package */
    const char *source;     /* which leaf said so */
};

/* From the subleaves of 0Bh or 1Fh, in order (n at most TOPO_MAX_LEVELS
   read); false when the first is already type 0 (the leaf says nothing) or
   the shifts do not grow. */
bool topo_from_extended(const struct topo_level *levels, uint32_t n, const char *source, struct topo_shifts *t);
/* From AMD's 8000_0008h ECX and, where have_1e, 8000_001Eh EBX. */
bool topo_from_amd(uint32_t e8_ecx, bool have_1e, uint32_t e1e_ebx, struct topo_shifts *t);

struct topo_place {
    uint32_t package, core, thread;   /* core: within its package; thread: within its core */
};

struct topo_place topo_place_of(const struct topo_shifts *t, uint32_t apic_id);

struct topo_summary {
    uint32_t cpus, packages, cores;    /* cores: distinct (package, core) */
    uint32_t cores_per_package_min, cores_per_package_max;
    uint32_t threads_per_core_min, threads_per_core_max;
};

/* The groups n distinct APIC IDs fall into; scratch holds n IDs (sorted
   there). Without valid shifts every CPU is its own core in one package. */
void topo_summarise(const struct topo_shifts *t, const uint32_t *ids, uint32_t n, uint32_t *scratch, struct topo_summary *s);

#endif

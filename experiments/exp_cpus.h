/* What the "cpus" experiment tells the summary screen and its QR payload. */
#ifndef CLOCKBENCH_EXP_CPUS_H
#define CLOCKBENCH_EXP_CPUS_H

#include <stdbool.h>
#include <stdint.h>

struct cpus_verdict {
    bool ran;               /* the experiment ran and reported */
    bool compared;          /* at least two CPUs were compared */
    bool synchronised;
    uint32_t cpus;          /* CPUs running (boot CPU included) */
    uint32_t listed;        /* enabled CPUs in the MADT */
    int worst_cpu;          /* the CPU whose offset bound is largest */
    int64_t worst_ns;       /* synchronised: the bound |offset| <= worst_ns;
                               not: that CPU's offset midpoint, signed */
    uint64_t warps;         /* across all CPUs */
    char line[120];         /* the verdict as one line for people */
};

extern struct cpus_verdict cpus_verdict;

#endif

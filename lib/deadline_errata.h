/* TSC-deadline timer errata: Intel parts whose TSC-deadline mode misfires
   unless the microcode is at least a given revision. The table is Linux's
   (arch/x86/kernel/apic/apic.c, deadline_match[], as of 6.x), which cites
   the Intel specification updates for Haswell to Kaby Lake (for example
   Haswell HSD136, Skylake SKL142). Pure. */
#ifndef CLOCKBENCH_DEADLINE_ERRATA_H
#define CLOCKBENCH_DEADLINE_ERRATA_H

#include <stdbool.h>
#include <stdint.h>

struct deadline_erratum {
    const char *part;          /* the part's name, for the report */
    uint32_t min_microcode;    /* the first revision with the fix */
};

/* The entry for an Intel family-6 part (display model and stepping), or
   NULL when the part is not listed. */
const struct deadline_erratum *deadline_erratum_of(uint32_t family, uint32_t model, uint32_t stepping);

#endif

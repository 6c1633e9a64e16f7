/* TSC read variants (see tsc.h). */
#include "tsc.h"

#include "../drivers/cpu.h"
#include "../lib/format.h"
#include "probe.h"

struct tsc_variant tsc_variants[TSC_VARIANT_COUNT] = {
    [TSC_RDTSC] = {"rdtsc", false, ""},
    [TSC_RDTSCP] = {"rdtscp", false, ""},
    [TSC_LFENCE_RDTSC] = {"lfence;rdtsc", false, ""},
    [TSC_MFENCE_RDTSC] = {"mfence;rdtsc", false, ""},
    [TSC_CPUID_RDTSC] = {"cpuid;rdtsc", false, ""},
};

void tsc_variants_probe(const struct cpu_info *ci, struct lfence_status *lf)
{
    for (int i = 0; i < TSC_VARIANT_COUNT; i++) {
        struct tsc_variant *v = &tsc_variants[i];
        v->available = ci->tsc;
        if (!ci->tsc)
            fmt_format(v->reason, sizeof v->reason, "no TSC (CPUID.1:EDX[4] clear)");
    }
    if (ci->tsc && !ci->rdtscp) {
        tsc_variants[TSC_RDTSCP].available = false;
        fmt_format(tsc_variants[TSC_RDTSCP].reason, sizeof tsc_variants[TSC_RDTSCP].reason,
                   "no RDTSCP (CPUID.80000001h:EDX[27] clear)");
    }
    /* LFENCE and MFENCE are SSE2 instructions, part of every x86-64 CPU
       (long mode requires SSE2), so they need no check of their own. */

    if (!ci->amd_like) {
        lf->state = "architectural";
        fmt_format(lf->detail, sizeof lf->detail, "Intel SDM: LFENCE waits for all prior instructions to complete");
        return;
    }
    uint64_t de_cfg;
    struct probe_fault fault;
    if (msr_read_safe(MSR_AMD_DE_CFG, &de_cfg, &fault)) {
        lf->state = (de_cfg & DE_CFG_LFENCE_SERIALIZE) ? "serialising" : "not serialising";
        fmt_format(lf->detail, sizeof lf->detail, "MSR 0xC0011029 = 0x%llx, bit 1 %s", (unsigned long long)de_cfg,
                   (de_cfg & DE_CFG_LFENCE_SERIALIZE) ? "set" : "clear");
    } else {
        lf->state = "unknown";
        fmt_format(lf->detail, sizeof lf->detail, "MSR 0xC0011029 unreadable: %s", fault.text);
    }
}

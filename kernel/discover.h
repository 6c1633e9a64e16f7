/* Discovery: find every counter from CPUID, the ACPI tables and the devices
   themselves, verify each, and fill the counter table. */
#ifndef CLOCKBENCH_DISCOVER_H
#define CLOCKBENCH_DISCOVER_H

#include "../drivers/cpuinfo.h"
#include "../drivers/hpet.h"
#include "../drivers/pmtimer.h"
#include "../drivers/pvclock.h"
#include "../lib/acpi.h"
#include "../lib/bootinfo.h"
#include "reads.h"
#include "tsc.h"

struct discovery {
    struct acpi_info acpi;
    bool acpi_faulted;
    char acpi_fault[96];
    struct hpet hpet;
    struct pmtimer pm;
    struct lfence_status lfence;
    struct pvclocks pv;
};

extern struct discovery discovered;

void discover_all(const struct boot_info *bi, const struct cpu_probe *cpu);
/* Unregisters the paravirtual clock pages (at the end of the run). */
void discover_release(void);
/* The inventory section: lines for people, records for tools, checks. */
void discover_report(const struct cpu_probe *cpu, const struct boot_info *bi);

/* The read source of a present counter (not the TSC): discovery knows where
   each one is. */
bool counter_source(int counter, struct read_src *src);
/* False (with why) when the target is not available here. */
bool target_source(enum target_id t, struct read_src *src, const char **why);

#endif

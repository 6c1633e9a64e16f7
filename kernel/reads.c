/* The read targets' names and counters (see reads.h); where each counter
   is read is discovery's (discover.h). */
#include "reads.h"

const struct target_info target_info[TARGET_COUNT] = {
    [TARGET_RDTSC] = {"rdtsc", -1},
    [TARGET_RDTSCP] = {"rdtscp", -1},
    [TARGET_LFENCE_RDTSC] = {"lfence;rdtsc", -1},
    [TARGET_MFENCE_RDTSC] = {"mfence;rdtsc", -1},
    [TARGET_CPUID_RDTSC] = {"cpuid;rdtsc", -1},
    [TARGET_HPET] = {"hpet", COUNTER_HPET},
    [TARGET_ACPI_PM] = {"acpi_pm", COUNTER_ACPI_PM},
    [TARGET_PIT] = {"pit", COUNTER_PIT},
    [TARGET_LAPIC] = {"lapic", COUNTER_LAPIC},
    [TARGET_KVMCLOCK] = {"kvmclock", COUNTER_KVMCLOCK},
    [TARGET_HV_REF_COUNTER] = {"hv_ref_counter", COUNTER_HV_REF_COUNTER},
    [TARGET_HV_REF_PAGE] = {"hv_ref_page", COUNTER_HV_REF_PAGE},
};

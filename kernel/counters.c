/* The counter table (see counters.h). Rows start absent; discover.c fills them. */
#include "counters.h"

struct counter counters[COUNTER_COUNT] = {
    [COUNTER_TSC] = {.name = "tsc"},
    [COUNTER_HPET] = {.name = "hpet"},
    [COUNTER_ACPI_PM] = {.name = "acpi_pm"},
    [COUNTER_PIT] = {.name = "pit"},
};

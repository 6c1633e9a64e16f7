/* The `acpi` record (docs/output.md): what lib/acpi.c found, as one
   machine record. Pure, so the image and the host tool (`clockbench acpi`)
   write the very same record, and a host test can hold its size. */
#ifndef CLOCKBENCH_ACPI_RECORD_H
#define CLOCKBENCH_ACPI_RECORD_H

#include <stdbool.h>

#include "acpi.h"
#include "record.h"

/* Begins and fills r (record_end is the caller's). Every string in it is
   a fixed text or a short firmware ID, so the record always fits in
   RECORD_MAX_CHARS: the messages go in their own `acpi_message` records,
   the repeated APIC IDs as counts, never one member per entry. */
void acpi_record(struct record *r, const struct acpi_info *a, bool faulted);

#endif

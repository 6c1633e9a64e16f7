/* The `acpi` record (see acpi_record.h). */
#include "acpi_record.h"

void acpi_record(struct record *r, const struct acpi_info *a, bool faulted)
{
    record_begin(r, "acpi");
    record_bool(r, "rsdp_found", a->rsdp_found);
    record_str(r, "rsdp_source", a->rsdp_found ? a->rsdp_source : 0);
    record_u64(r, "revision", a->revision);
    record_str(r, "oem_id", a->oem_id);
    record_str(r, "root", a->root_found ? (a->root_is_xsdt ? "XSDT" : "RSDT") : 0);
    record_hex(r, "root_address", a->root_address);
    record_u64(r, "tables", (uint64_t)a->table_count);
    record_u64(r, "hpet_tables", (uint64_t)a->hpet_tables);
    if (a->hpet_found)
        record_hex(r, "hpet_base", a->hpet_base.address);
    else
        record_null(r, "hpet_base");
    if (a->pm_timer_found) {
        record_str(r, "pm_timer_space", a->pm_timer.space_id == ACPI_GAS_IO ? "io" : "memory");
        record_hex(r, "pm_timer_address", a->pm_timer.address);
        record_str(r, "pm_timer_field", a->pm_timer_field);
        record_u64(r, "pm_timer_bits", a->pm_timer_32bit ? 32 : 24);
        record_u64(r, "pm_timer_register_bits", a->pm_timer_width);
        record_str(r, "pm_timer_width_from", a->pm_timer_width_from);
        if (a->pm_timer_linux_port)
            record_hex(r, "pm_timer_linux_port", a->pm_timer_linux_port);
        else
            record_null(r, "pm_timer_linux_port");
        record_str(r, "pm_timer_os_note", a->pm_timer_os_note && a->pm_timer_os_note[0] ? a->pm_timer_os_note : 0);
        record_bool(r, "pm_timer_set_aside", a->pm_timer_set_aside);
    } else {
        record_null(r, "pm_timer_address");
    }
    if (a->fadt_found) {
        record_u64(r, "fadt_revision", a->fadt_revision);
        record_bool(r, "hardware_reduced", a->hardware_reduced);
        record_u64(r, "pm_timer_len", a->pm_timer_len);
        record_u64(r, "pm_timer_conflicts", a->pm_timer_conflicts);
        record_u64(r, "pm1_cnt_conflicts", a->pm1_cnt_conflicts);
    }
    if (a->madt_found) {
        record_u64(r, "cpus_enabled", a->cpus_enabled);
        record_u64(r, "cpus_listed", a->cpus_listed);
        record_u64(r, "cpus_online_capable", a->cpus_online_capable);
        record_u64(r, "cpus_x2apic", a->cpus_x2apic);
        record_u64(r, "madt_placeholders", a->madt_placeholders);
        record_u64(r, "madt_disabled_copies", a->madt_disabled_copies);
        record_u64(r, "madt_disabled_shared", a->madt_disabled_shared);
        record_u64(r, "madt_enabled_repeats", a->madt_enabled_repeats);
    } else {
        record_null(r, "cpus_enabled");
        record_null(r, "cpus_listed");
    }
    record_u64(r, "messages", (uint64_t)a->message_count);
    record_bool(r, "messages_dropped", a->messages_dropped);
    record_u64(r, "messages_not_kept", a->messages_not_kept);
    record_bool(r, "faulted", faulted);
}

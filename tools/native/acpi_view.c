/* The host tool's window on lib/acpi.c (`clockbench acpi`, tools/clockbench/
   acpi.py loads it with ctypes from the host library). It hands a Linux
   machine's tables, each at its physical address, to the very acpi_discover
   the image runs, and describes what came out as machine records, one per
   line: the image's own `acpi` record (lib/acpi_record.c) and the details
   the tool shows. Owned by the tool, not by the tests (tests/host/shim.c). */
#include <stdint.h>
#include <string.h>

#include "../../lib/acpi.h"
#include "../../lib/acpi_record.h"
#include "../../lib/record.h"

struct regions {
    uint32_t n;
    const uint64_t *addrs;
    const uint8_t *const *tables;
    const uint32_t *lens;
};

/* A range is reachable when it lies inside one table's bytes. */
static const void *regions_map(void *ctx, uint64_t phys, uint64_t len, const char **why)
{
    const struct regions *g = ctx;
    for (uint32_t i = 0; i < g->n; i++) {
        uint64_t a = g->addrs[i], l = g->lens[i];
        if (phys >= a && phys - a <= l && len <= l - (phys - a))
            return g->tables[i] + (phys - a);
    }
    *why = "not among the tables read";
    return 0;
}

#define VIEW_CHARS (512u * 1024u)
static char view[VIEW_CHARS];
static size_t view_len;

static void put(struct record *r)
{
    const char *line = record_end(r) + strlen(RECORD_PREFIX);
    size_t n = strlen(line);
    if (view_len + n + 1 < VIEW_CHARS) {
        memcpy(view + view_len, line, n);
        view_len += n;
        view[view_len] = '\0';
    }
}

static void put_gas(struct record *r, const char *space_key, const char *addr_key, const char *width_key,
                    const struct acpi_gas *g)
{
    record_str(r, space_key, g->space_id == ACPI_GAS_IO ? "io" : g->space_id == ACPI_GAS_MEMORY ? "memory" : "other");
    record_u64(r, addr_key, g->address);
    record_u64(r, width_key, g->bit_width);
}

/* tables[i]: lens[i] bytes found at physical address addrs[i]; rsdp: the
   RSDP's bytes (revision 2+: 36 bytes; revision 0: 20), handed over as a
   loader would hand a copy. Returns newline-separated JSON objects. */
const char *tool_acpi_view(uint32_t n, const uint64_t *addrs, const uint8_t *const *tables, const uint32_t *lens,
                           const uint8_t *rsdp, uint32_t rsdp_len)
{
    static struct acpi_info a;
    static struct record r;
    struct regions g = {n, addrs, tables, lens};
    struct acpi_mapper m = {regions_map, &g};
    bool v2 = rsdp_len >= 36;
    acpi_discover(&m, v2 ? rsdp : 0, rsdp_len, v2 ? 0 : rsdp, ACPI_FROM_MULTIBOOT2, &a);
    view_len = 0;
    view[0] = '\0';

    acpi_record(&r, &a, false);
    put(&r);
    for (int i = 0; i < a.table_count; i++) {
        record_begin(&r, "acpi_table");
        record_str(&r, "signature", a.tables[i].signature);
        record_u64(&r, "address", a.tables[i].address);
        record_u64(&r, "length", a.tables[i].length);
        record_bool(&r, "valid", a.tables[i].valid);
        put(&r);
    }
    for (int i = 0; i < a.message_count; i++) {
        record_begin(&r, "acpi_message");
        record_str(&r, "text", a.messages[i]);
        put(&r);
    }

    record_begin(&r, "pm_timer");
    record_bool(&r, "found", a.pm_timer_found);
    put_gas(&r, "space", "address", "register_bits", &a.pm_timer);
    record_str(&r, "field", a.pm_timer_field);
    record_u64(&r, "counter_bits", a.pm_timer_32bit ? 32 : 24);
    record_str(&r, "width_from", a.pm_timer_width_from);
    record_u64(&r, "linux_port", a.pm_timer_linux_port);
    record_bool(&r, "os_ignored", a.pm_timer_os_ignored);
    record_bool(&r, "set_aside", a.pm_timer_set_aside);
    record_str(&r, "os_note", a.pm_timer_os_note);
    record_u64(&r, "conflicts", a.pm_timer_conflicts);
    record_str(&r, "reason", a.pm_timer_reason);
    put(&r);

    record_begin(&r, "hpet_table");
    record_bool(&r, "found", a.hpet_found);
    put_gas(&r, "space", "address", "register_bits", &a.hpet_base);
    record_u64(&r, "block_id", a.hpet_block_id);
    record_u64(&r, "comparators", a.hpet_comparators);
    record_bool(&r, "counter_64bit", a.hpet_64bit);
    record_u64(&r, "number", a.hpet_number);
    record_u64(&r, "min_tick", a.hpet_min_tick);
    record_str(&r, "reason", a.hpet_reason);
    put(&r);

    record_begin(&r, "madt");
    record_bool(&r, "found", a.madt_found);
    record_u64(&r, "lapic_address", a.lapic_address);
    record_bool(&r, "lapic_address_overridden", a.lapic_address_overridden);
    record_bool(&r, "pcat_compat", a.madt_flags & 1u);
    record_bool(&r, "cpus_dropped", a.cpus_dropped);
    record_u64(&r, "placeholders_enabled", a.madt_placeholders_enabled);
    put(&r);
    for (uint32_t i = 0; i < a.cpu_count; i++) {
        const struct acpi_cpu *c = &a.cpus[i];
        record_begin(&r, "cpu");
        record_u64(&r, "apic_id", c->apic_id);
        record_u64(&r, "uid", c->uid);
        record_str(&r, "entry", c->type == 9 ? "x2apic" : "lapic");
        record_bool(&r, "enabled", c->enabled);
        record_bool(&r, "online_capable", c->online_capable);
        record_u64(&r, "entries", (uint64_t)c->enabled_entries + c->disabled_entries);
        put(&r);
    }
    for (uint32_t i = 0; i < a.ioapic_count; i++) {
        record_begin(&r, "ioapic");
        record_u64(&r, "id", a.ioapics[i].id);
        record_u64(&r, "address", a.ioapics[i].address);
        record_u64(&r, "gsi_base", a.ioapics[i].gsi_base);
        put(&r);
    }
    for (uint32_t i = 0; i < a.override_count; i++) {
        const struct acpi_override *o = &a.overrides[i];
        bool low, level;
        record_begin(&r, "irq_override");
        record_u64(&r, "bus", o->bus);
        record_u64(&r, "irq", o->source);
        record_u64(&r, "gsi", o->gsi);
        record_u64(&r, "flags", o->flags);
        /* as the image routes the IRQ: the first override for it counts */
        uint32_t gsi = acpi_isa_irq_gsi(&a, o->source, &low, &level);
        record_bool(&r, "used", o->bus == 0 && gsi == o->gsi);
        record_bool(&r, "active_low", low);
        record_bool(&r, "level", level);
        put(&r);
    }

    record_begin(&r, "power");
    record_bool(&r, "fadt", a.fadt_length != 0);
    record_bool(&r, "hardware_reduced", a.hardware_reduced);
    put_gas(&r, "pm1a_cnt_space", "pm1a_cnt", "pm1a_cnt_bits", &a.pm1a_cnt);
    record_str(&r, "pm1a_cnt_field", a.pm1a_cnt_field);
    record_u64(&r, "pm1b_cnt", a.pm1b_cnt.address);
    put_gas(&r, "sleep_control_space", "sleep_control", "sleep_control_bits", &a.sleep_control);
    record_u64(&r, "smi_cmd", a.smi_cmd);
    record_u64(&r, "acpi_enable", a.acpi_enable);
    record_bool(&r, "iapc_boot_arch_valid", a.iapc_boot_arch_valid);
    record_u64(&r, "iapc_boot_arch", a.iapc_boot_arch);
    record_str(&r, "hypervisor_vendor", a.hypervisor_vendor);
    record_u64(&r, "dsdt_address", a.dsdt_address);
    record_bool(&r, "dsdt", a.dsdt_found);
    record_bool(&r, "s5", a.s5.found);
    record_u64(&r, "slp_typa", a.s5.slp_typa);
    record_u64(&r, "slp_typb", a.s5.slp_typb);
    record_str(&r, "s5_why", a.s5.why);
    put(&r);
    return view;
}

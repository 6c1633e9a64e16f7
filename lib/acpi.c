/* ACPI discovery (see acpi.h). Offsets: ACPI 6.5, 5.2.5.3 (RSDP), 5.2.6
   (table header), 5.2.9 (FADT), 5.2.12 (MADT); IA-PC HPET 1.0a, Table 3
   (HPET description table). */
#include "acpi.h"

#include <stdarg.h>

#include "format.h"

#define RSDP_V1_LEN 20
#define RSDP_V2_MIN_LEN 36
#define RSDP_OFF_OEMID 9
#define RSDP_OFF_REVISION 15
#define RSDP_OFF_RSDT 16
#define RSDP_OFF_LENGTH 20
#define RSDP_OFF_XSDT 24

#define HDR_LEN 36
#define HDR_OFF_LENGTH 4
#define HDR_OFF_REVISION 8

#define FADT_OFF_PM_TMR_BLK 76
#define FADT_OFF_PM_TMR_LEN 91
#define FADT_OFF_FLAGS 112
#define   FADT_FLAG_TMR_VAL_EXT (1u << 8)
#define   FADT_FLAG_HW_REDUCED (1u << 20)
#define FADT_OFF_X_PM_TMR_BLK 208
#define GAS_LEN 12

#define HPET_OFF_BLOCK_ID 36
#define HPET_OFF_BASE 40
#define HPET_OFF_NUMBER 52
#define HPET_OFF_MIN_TICK 53
#define HPET_TABLE_LEN 56

#define MADT_OFF_LAPIC_ADDRESS 36
#define MADT_OFF_FLAGS 40
#define MADT_OFF_ENTRIES 44
#define MADT_LOCAL_APIC 0             /* 5.2.12.2: type, length 8, UID (1), APIC ID (1), flags (4) */
#define   LAPIC_OFF_UID 2
#define   LAPIC_OFF_ID 3
#define   LAPIC_OFF_FLAGS 4
#define   LAPIC_LEN 8
#define MADT_IOAPIC 1                 /* 5.2.12.3: type, length 12, ID (1), reserved (1), address (4), GSI base (4) */
#define   IOAPIC_OFF_ID 2
#define   IOAPIC_OFF_ADDRESS 4
#define   IOAPIC_OFF_GSI_BASE 8
#define   IOAPIC_LEN 12
#define MADT_SOURCE_OVERRIDE 2        /* 5.2.12.5: type, length 10, bus (1), source (1), GSI (4), flags (2) */
#define   ISO_OFF_BUS 2
#define   ISO_OFF_SOURCE 3
#define   ISO_OFF_GSI 4
#define   ISO_OFF_FLAGS 8
#define   ISO_LEN 10
#define   INTI_POLARITY_MASK 0x3u
#define   INTI_ACTIVE_LOW 0x3u
#define   INTI_TRIGGER_SHIFT 2
#define   INTI_TRIGGER_MASK 0x3u
#define   INTI_LEVEL 0x3u
#define MADT_LAPIC_OVERRIDE 5         /* 5.2.12.8: type, length 12, reserved (2), address (8) */
#define   LAPIC_OVERRIDE_OFF_ADDRESS 4
#define   LAPIC_OVERRIDE_LEN 12
#define MADT_LOCAL_X2APIC 9           /* 5.2.12.12: type, length 16, reserved (2), x2APIC ID (4), flags (4), UID (4) */
#define   X2APIC_OFF_ID 4
#define   X2APIC_OFF_FLAGS 8
#define   X2APIC_OFF_UID 12
#define   X2APIC_LEN 16
#define MADT_ENABLED (1u << 0)
#define MADT_ONLINE_CAPABLE (1u << 1) /* ACPI 6.3+, Table 5.37 */

#define EBDA_SEGMENT_PTR 0x40E
#define EBDA_SEARCH_LEN 1024
#define BIOS_AREA_START 0xE0000
#define BIOS_AREA_END 0x100000

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t ld32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static bool sig_is(const uint8_t *p, const char *sig)
{
    for (int i = 0; sig[i]; i++)
        if (p[i] != (uint8_t)sig[i])
            return false;
    return true;
}

uint8_t acpi_checksum(const uint8_t *p, uint32_t len)
{
    uint8_t sum = 0;
    for (uint32_t i = 0; i < len; i++)
        sum = (uint8_t)(sum + p[i]);
    return sum;
}

static void copy_message(char *dst, const char *src)
{
    int i = 0;
    for (; src[i] && i < ACPI_MESSAGE_CHARS - 1; i++)
        dst[i] = src[i];
    dst[i] = '\0';
}

__attribute__((format(printf, 2, 3))) static void say(struct acpi_info *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vformat(a->last_message, ACPI_MESSAGE_CHARS, fmt, ap);
    va_end(ap);
    /* Never cut silently: a message that did not fit ends in "..." (the
       buffer fits every message this file writes; a test holds it so). */
    if (n >= ACPI_MESSAGE_CHARS)
        for (int i = ACPI_MESSAGE_CHARS - 4; i < ACPI_MESSAGE_CHARS - 1; i++)
            a->last_message[i] = '.';
    if (a->message_count == ACPI_MAX_MESSAGES) {
        a->messages_dropped = true;
        if (a->messages_not_kept < UINT32_MAX)
            a->messages_not_kept++;
        return;
    }
    copy_message(a->messages[a->message_count++], a->last_message);
}

/* The latest message said (listed or dropped), kept as the reason a
   counter is missing; the first reason stays. */
static void reason_from_last(const struct acpi_info *a, char *dst)
{
    if (!a->last_message[0] || dst[0])
        return;
    const char *src = a->last_message;
    int i = 0;
    for (; src[i] && i < ACPI_MESSAGE_CHARS - 1; i++)
        dst[i] = src[i];
    dst[i] = '\0';
}

static void printable_sig(char out[5], const uint8_t *p)
{
    for (int i = 0; i < 4; i++)
        out[i] = (p[i] >= 0x20 && p[i] < 0x7F) ? (char)p[i] : '?';
    out[4] = '\0';
}

static void read_gas(struct acpi_gas *g, const uint8_t *p)
{
    g->space_id = p[0];
    g->bit_width = p[1];
    g->bit_offset = p[2];
    g->access_size = p[3];
    g->address = ld64(p + 4);
}

/* An RSDP candidate: signature, the 20-byte checksum, and for revision 2+
   the extended checksum over its stated length (ACPI 6.5, 5.2.5.3). */
static bool rsdp_valid(struct acpi_info *a, const uint8_t *p, uint32_t avail, const char *where, bool quiet)
{
    if (avail < RSDP_V1_LEN || !sig_is(p, "RSD PTR ")) {
        if (!quiet)
            say(a, "RSDP from %s: no \"RSD PTR \" signature", where);
        return false;
    }
    uint8_t sum = acpi_checksum(p, RSDP_V1_LEN);
    if (sum) {
        say(a, "RSDP from %s: checksum 0x%02x over 20 bytes, expected 0x00", where, sum);
        return false;
    }
    if (p[RSDP_OFF_REVISION] >= 2) {
        if (avail < RSDP_V2_MIN_LEN) {
            say(a, "RSDP from %s: revision %u but only %u bytes", where, p[RSDP_OFF_REVISION], avail);
            return false;
        }
        uint32_t len = ld32(p + RSDP_OFF_LENGTH);
        if (len < RSDP_V2_MIN_LEN || len > avail) {
            say(a, "RSDP from %s: length %u outside %u..%u", where, len, RSDP_V2_MIN_LEN, avail);
            return false;
        }
        sum = acpi_checksum(p, len);
        if (sum) {
            say(a, "RSDP from %s: extended checksum 0x%02x, expected 0x00", where, sum);
            return false;
        }
    }
    return true;
}

static void take_rsdp(struct acpi_info *a, const uint8_t *p, const char *source, uint64_t address)
{
    a->rsdp_found = true;
    a->rsdp_source = source;
    a->rsdp_address = address;
    a->revision = p[RSDP_OFF_REVISION];
    for (int i = 0; i < 6; i++)
        a->oem_id[i] = (p[RSDP_OFF_OEMID + i] >= 0x20 && p[RSDP_OFF_OEMID + i] < 0x7F) ? (char)p[RSDP_OFF_OEMID + i] : '?';
    a->oem_id[6] = '\0';
}

/* Scans [start, start+len) on 16-byte boundaries (ACPI 6.5, 5.2.5.1). */
static const uint8_t *scan_rsdp(struct acpi_info *a, const struct acpi_mapper *m, uint64_t start, uint32_t len,
                                const char *where, uint64_t *found_at)
{
    const char *why = "";
    const uint8_t *base = m->map(m->ctx, start, len, &why);
    if (!base) {
        say(a, "RSDP search in %s skipped: %s", where, why);
        return 0;
    }
    for (uint32_t off = 0; off + RSDP_V1_LEN <= len; off += 16) {
        if (!sig_is(base + off, "RSD PTR "))
            continue;
        if (rsdp_valid(a, base + off, len - off, where, true)) {
            *found_at = start + off;
            return base + off;
        }
    }
    return 0;
}

/* What each handover is called: [from][0] the ACPI 2.0+ copy, [from][1] the 1.0 one. */
static const char *const handover_names[][2] = {
    [ACPI_FROM_MULTIBOOT2] = {"multiboot2 ACPI 2.0+ tag", "multiboot2 ACPI 1.0 tag"},
    [ACPI_FROM_PVH] = {"PVH start_info RSDP (ACPI 2.0+)", "PVH start_info RSDP (ACPI 1.0)"},
};
static const char *const handover_where[][2] = {
    [ACPI_FROM_MULTIBOOT2] = {"the multiboot2 ACPI 2.0+ tag", "the multiboot2 ACPI 1.0 tag"},
    [ACPI_FROM_PVH] = {"the PVH start_info's RSDP (ACPI 2.0+)", "the PVH start_info's RSDP (ACPI 1.0)"},
};

static const uint8_t *find_rsdp(struct acpi_info *a, const struct acpi_mapper *m, const uint8_t *tag_new,
                                uint32_t tag_new_len, const uint8_t *tag_old, enum acpi_handover from)
{
    if (tag_new && rsdp_valid(a, tag_new, tag_new_len, handover_where[from][0], false)) {
        take_rsdp(a, tag_new, handover_names[from][0], 0);
        return tag_new;
    }
    if (tag_old && rsdp_valid(a, tag_old, RSDP_V1_LEN, handover_where[from][1], false)) {
        take_rsdp(a, tag_old, handover_names[from][1], 0);
        return tag_old;
    }
    uint64_t at = 0;
    const char *why = "";
    const uint8_t *ptr = m->map(m->ctx, EBDA_SEGMENT_PTR, 2, &why);
    if (ptr) {
        uint64_t ebda = (uint64_t)ld16(ptr) << 4;
        /* The EBDA lives below 640 KiB; anything else is not an EBDA pointer. */
        if (ebda >= 0x400 && ebda + EBDA_SEARCH_LEN <= 0xA0000) {
            const uint8_t *p = scan_rsdp(a, m, ebda, EBDA_SEARCH_LEN, "the EBDA", &at);
            if (p) {
                take_rsdp(a, p, "EBDA", at);
                return p;
            }
        }
    }
    const uint8_t *p = scan_rsdp(a, m, BIOS_AREA_START, BIOS_AREA_END - BIOS_AREA_START, "the BIOS area", &at);
    if (p) {
        take_rsdp(a, p, "BIOS area 0xE0000-0xFFFFF", at);
        return p;
    }
    say(a, "no valid RSDP in the multiboot2 tags, the EBDA or 0xE0000-0xFFFFF");
    return 0;
}

/* Maps a whole table after checking its header: signature (when expected
   is given), length bounds, then checksum. NULL with a message otherwise. */
static const uint8_t *map_table(struct acpi_info *a, const struct acpi_mapper *m, uint64_t addr, const char *expected,
                                char sig_out[5], uint32_t *len_out)
{
    const char *why = "";
    const uint8_t *h = m->map(m->ctx, addr, HDR_LEN, &why);
    if (!h) {
        say(a, "%s table at 0x%llx unreachable: %s", expected ? expected : "a", (unsigned long long)addr, why);
        return 0;
    }
    char sig[5];
    printable_sig(sig, h);
    if (sig_out)
        for (int i = 0; i < 5; i++)
            sig_out[i] = sig[i];
    if (expected && !sig_is(h, expected)) {
        say(a, "table at 0x%llx has signature \"%s\", expected \"%s\"", (unsigned long long)addr, sig, expected);
        return 0;
    }
    uint32_t len = ld32(h + HDR_OFF_LENGTH);
    if (len < HDR_LEN || len > ACPI_MAX_TABLE_BYTES) {
        say(a, "%s table at 0x%llx: length %u outside %u..%u", sig, (unsigned long long)addr, len, HDR_LEN,
            ACPI_MAX_TABLE_BYTES);
        return 0;
    }
    const uint8_t *t = m->map(m->ctx, addr, len, &why);
    if (!t) {
        say(a, "%s table at 0x%llx, %u bytes, unreachable: %s", sig, (unsigned long long)addr, len, why);
        return 0;
    }
    uint8_t sum = acpi_checksum(t, len);
    if (sum) {
        say(a, "%s table checksum 0x%02x, expected 0x00 (at 0x%llx, %u bytes)", sig, sum, (unsigned long long)addr, len);
        return 0;
    }
    if (len_out)
        *len_out = len;
    return t;
}

/* The port Linux reads the PM timer at (pmtmr_ioport), 0 for none. ACPICA
   first converts the FADT: a zero X_ address takes the 32-bit block as
   I/O, but not on a hardware-reduced machine, whose conversion returns
   early (tbfadt.c, AcpiTbConvertFadt). Linux then takes, from a revision 2+
   FADT, the X_ block when it is in I/O space, falling back to PM_TMR_BLK
   when its address is 0; from a revision 1 FADT, PM_TMR_BLK (arch/x86/
   kernel/acpi/boot.c, acpi_parse_fadt). */
static uint64_t linux_pm_port(uint8_t revision, bool hw_reduced, uint32_t legacy, struct acpi_gas x)
{
    if (!hw_reduced && legacy && !x.address) {
        x.space_id = ACPI_GAS_IO;
        x.address = legacy;
    }
    if (revision < 2)
        return legacy;
    if (x.space_id != ACPI_GAS_IO)
        return 0;
    return x.address ? (uint32_t)x.address : legacy;
}

/* A contradiction in the FADT's PM timer fields: one message, counted. */
#define pm_conflict(a, ...) ((a)->pm_timer_conflicts++, say((a), __VA_ARGS__))

/* The PM timer block by ACPICA's rules (a set X_ address wins over
   PM_TMR_BLK; the register's width is the X_ block's bit width, PM_TMR_LEN
   only when that is 0), with what Linux would do beside it. */
static void choose_pm_timer(struct acpi_info *a, const uint8_t *t, uint32_t len)
{
    struct acpi_gas x = {0};
    if (len >= FADT_OFF_X_PM_TMR_BLK + GAS_LEN)
        read_gas(&x, t + FADT_OFF_X_PM_TMR_BLK);
    uint32_t legacy = ld32(t + FADT_OFF_PM_TMR_BLK);
    uint8_t plen = a->pm_timer_len;
    a->pm_timer_linux_port = linux_pm_port(a->fadt_revision, a->hardware_reduced, legacy, x);
    a->pm_timer_os_note = "";
    if (x.address) {
        if (x.space_id != ACPI_GAS_IO && x.space_id != ACPI_GAS_MEMORY) {
            say(a, "FACP table: X_PM_TMR_BLK in address space %u, neither I/O nor memory: no PM timer", x.space_id);
            return;
        }
        a->pm_timer = x;
        a->pm_timer_field = "X_PM_TMR_BLK";
        if (legacy && x.address != legacy)
            pm_conflict(a, "FACP table: X_PM_TMR_BLK 0x%llx and PM_TMR_BLK 0x%x disagree; X_PM_TMR_BLK used, as ACPICA does",
                        (unsigned long long)x.address, legacy);
        if (x.bit_width) {
            a->pm_timer_width = x.bit_width;
            a->pm_timer_width_from = "X_PM_TMR_BLK bit width";
            if (plen * 8u != x.bit_width)
                pm_conflict(a, "FACP table: PM_TMR_LEN %u but X_PM_TMR_BLK is %u bits wide; the X_ width used, as ACPICA does",
                            plen, x.bit_width);
        }
        /* ACPI 6.5, 5.2.3.2: access size 1-4 is byte, word, dword, qword */
        unsigned access_bits = x.access_size >= 1 && x.access_size <= 4 ? 8u << (x.access_size - 1) : 0;
        if (x.bit_width && access_bits && access_bits != x.bit_width)
            pm_conflict(a, "FACP table: X_PM_TMR_BLK access size %u (%u-bit) for a %u-bit register; the width decides (ACPICA)",
                        x.access_size, access_bits, x.bit_width);
    } else if (legacy) {
        a->pm_timer = (struct acpi_gas){ACPI_GAS_IO, (uint8_t)(plen * 8u), 0, 0, legacy};
        a->pm_timer_field = "PM_TMR_BLK";
    } else {
        say(a, "FACP table: no PM timer (PM_TMR_BLK and X_PM_TMR_BLK are 0%s)",
            a->hardware_reduced ? ", hardware-reduced ACPI" : "");
        return;
    }
    if (!a->pm_timer_width && plen) {
        a->pm_timer_width = (uint8_t)(plen * 8u);
        a->pm_timer_width_from = "PM_TMR_LEN";
    }
    if (!a->pm_timer_width) {
        a->pm_timer_width_from = "none stated";
        pm_conflict(a, "FACP table: %s 0x%llx with no width (PM_TMR_LEN 0); read as 32 bits, as Linux does",
                    a->pm_timer_field, (unsigned long long)a->pm_timer.address);
    } else if (a->pm_timer_width != 32) {
        pm_conflict(a, "FACP table: PM timer %u bits wide (by %s), not 32; read as 32 bits, as Linux does",
                    a->pm_timer_width, a->pm_timer_width_from);
    }
    uint64_t port = a->pm_timer_linux_port;
    bool same = a->pm_timer.space_id == ACPI_GAS_IO && port == a->pm_timer.address;
    if (a->hardware_reduced && port) {
        /* ACPI 6.5, 5.2.9: a hardware-reduced FADT's PM timer fields are for OSPM to ignore; Linux reads them anyway */
        pm_conflict(a, "FACP table: hardware-reduced, yet a PM timer at %s 0x%llx; Linux reads it: a normal PM timer here",
                    same ? a->pm_timer_field : "PM_TMR_BLK", (unsigned long long)port);
    } else if (a->hardware_reduced) {
        a->pm_timer_os_ignored = a->pm_timer_set_aside = true;
        a->pm_timer_os_note = "ignored by the OS (hardware-reduced ACPI)";
        pm_conflict(a, "FACP table: hardware-reduced, yet %s 0x%llx: ignored by the OS; measured only if it answers",
                    a->pm_timer_field, (unsigned long long)a->pm_timer.address);
    } else if (!port && a->pm_timer.space_id == ACPI_GAS_MEMORY) {
        a->pm_timer_os_ignored = true;
        a->pm_timer_os_note = "ignored by Linux (it reads a PM timer only through an I/O port)";
        say(a, "FACP table: %s in memory at 0x%llx: Linux reads PM timers only by I/O port; measured here",
            a->pm_timer_field, (unsigned long long)a->pm_timer.address);
    } else if (!port) {
        a->pm_timer_os_ignored = true;
        a->pm_timer_os_note = "ignored by Linux (a revision 1 FADT: it reads only PM_TMR_BLK, which is 0)";
        pm_conflict(a, "FACP table: revision %u with only X_PM_TMR_BLK set; Linux reads PM_TMR_BLK (0); measured here",
                    a->fadt_revision);
    }
    if (port && !same)
        pm_conflict(a, "FACP table: revision %u: Linux reads port 0x%llx, not %s 0x%llx (ACPICA's choice)",
                    a->fadt_revision, (unsigned long long)port, a->pm_timer_field, (unsigned long long)a->pm_timer.address);
    a->pm_timer_found = true;
}

static void parse_fadt(struct acpi_info *a, const uint8_t *t, uint32_t len)
{
    if (len < FADT_OFF_FLAGS + 4) {
        say(a, "FACP table: %u bytes, too short for the PM timer fields (needs %u)", len, FADT_OFF_FLAGS + 4);
        return;
    }
    a->fadt_found = true;
    a->fadt_revision = t[HDR_OFF_REVISION];
    uint32_t flags = ld32(t + FADT_OFF_FLAGS);
    a->pm_timer_32bit = flags & FADT_FLAG_TMR_VAL_EXT;
    a->hardware_reduced = flags & FADT_FLAG_HW_REDUCED;
    a->pm_timer_len = t[FADT_OFF_PM_TMR_LEN];
    choose_pm_timer(a, t, len);
}

static void parse_hpet(struct acpi_info *a, const uint8_t *t, uint32_t len, uint64_t addr)
{
    if (len < HPET_TABLE_LEN) {
        say(a, "HPET table at 0x%llx: %u bytes, expected at least %u", (unsigned long long)addr, len, HPET_TABLE_LEN);
        return;
    }
    a->hpet_tables++;
    if (a->hpet_found) {
        say(a, "HPET table at 0x%llx: another HPET table (number %u); the first one is used", (unsigned long long)addr,
            t[HPET_OFF_NUMBER]);
        return;
    }
    a->hpet_found = true;
    a->hpet_block_id = ld32(t + HPET_OFF_BLOCK_ID);
    a->hpet_comparators = (uint8_t)(((a->hpet_block_id >> 8) & 0x1F) + 1);
    a->hpet_64bit = a->hpet_block_id & (1u << 13);
    read_gas(&a->hpet_base, t + HPET_OFF_BASE);
    a->hpet_number = t[HPET_OFF_NUMBER];
    a->hpet_min_tick = ld16(t + HPET_OFF_MIN_TICK);
}

/* One processor entry. Placeholders (APIC ID 0xFF in a type 0 entry, the
   xAPIC broadcast ID; 0xFFFFFFFF in a type 9 one) are counted, not kept.
   An APIC ID listed again (type 0 and type 9 for the same ID, or disabled
   copies) is one CPU: an enabled entry wins over disabled ones, as Linux
   registers only usable entries (acpi_is_processor_usable); between two
   enabled ones the first is kept. The repeats are tallied by kind in
   tally_repeats, never one message per entry. */
static void add_cpu(struct acpi_info *a, uint8_t type, uint32_t apic_id, uint32_t uid, uint32_t flags)
{
    bool enabled = flags & MADT_ENABLED;
    if ((type == MADT_LOCAL_APIC && apic_id == 0xFF) || (type == MADT_LOCAL_X2APIC && apic_id == 0xFFFFFFFFu)) {
        a->madt_placeholders++;
        if (enabled)
            a->madt_placeholders_enabled++;
        return;
    }
    /* Online Capable is reserved (zero) while Enabled is set (Table 5.37). */
    bool online = !enabled && (flags & MADT_ONLINE_CAPABLE);
    for (uint32_t i = 0; i < a->cpu_count; i++) {
        struct acpi_cpu *c = &a->cpus[i];
        if (c->apic_id != apic_id)
            continue;
        if (enabled && c->enabled_entries < 0xFFFF)
            c->enabled_entries++;
        else if (!enabled && c->disabled_entries < 0xFFFF)
            c->disabled_entries++;
        if (enabled && !c->enabled) { /* the disabled entry met first gives way */
            if (c->online_capable)
                a->cpus_online_capable--;
            if (c->type == MADT_LOCAL_X2APIC)
                a->cpus_x2apic--;
            if (type == MADT_LOCAL_X2APIC)
                a->cpus_x2apic++;
            a->cpus_enabled++;
            c->uid = uid;
            c->flags = flags;
            c->type = type;
            c->enabled = true;
            c->online_capable = false;
        } else if (online && !c->enabled && !c->online_capable) {
            c->online_capable = true;
            a->cpus_online_capable++;
        }
        return;
    }
    a->cpus_listed++;
    if (enabled)
        a->cpus_enabled++;
    if (online)
        a->cpus_online_capable++;
    if (a->cpu_count == ACPI_MAX_CPUS) {
        a->cpus_dropped = true;
        return;
    }
    if (type == MADT_LOCAL_X2APIC)
        a->cpus_x2apic++;
    a->cpus[a->cpu_count++] = (struct acpi_cpu){apic_id, uid, flags, type, enabled, online, enabled ? 1 : 0, enabled ? 0 : 1};
}

/* The repeats by kind: one message each, with its count, how many APIC IDs
   it touches and the first of them. */
static void tally_repeats(struct acpi_info *a)
{
    uint32_t copy_ids = 0, shared_ids = 0, repeat_ids = 0;
    uint32_t first_copy = 0, first_shared = 0, first_repeat = 0;
    for (uint32_t i = 0; i < a->cpu_count; i++) {
        const struct acpi_cpu *c = &a->cpus[i];
        if (c->enabled) {
            if (c->disabled_entries && !copy_ids++)
                first_copy = c->apic_id;
            a->madt_disabled_copies += c->disabled_entries;
            if (c->enabled_entries > 1 && !repeat_ids++)
                first_repeat = c->apic_id;
            a->madt_enabled_repeats += c->enabled_entries - 1u;
        } else if (c->disabled_entries > 1) {
            if (!shared_ids++)
                first_shared = c->apic_id;
            a->madt_disabled_shared += c->disabled_entries - 1u;
        }
    }
    if (a->madt_placeholders)
        say(a, "APIC table: %u placeholder entries (APIC ID 0xFF/0xFFFFFFFF, %u enabled): no CPU; Linux skips them too",
            a->madt_placeholders, a->madt_placeholders_enabled);
    if (a->madt_disabled_copies)
        say(a, "APIC table: %u disabled copies of %u enabled CPUs' APIC IDs (first ID %u): the enabled entry counts",
            a->madt_disabled_copies, copy_ids, first_copy);
    if (a->madt_disabled_shared)
        say(a, "APIC table: %u disabled entries repeat another disabled one's APIC ID (%u IDs, first %u): one CPU each",
            a->madt_disabled_shared, shared_ids, first_shared);
    if (a->madt_enabled_repeats)
        say(a, "APIC table: %u enabled entries repeat an enabled CPU's APIC ID (%u IDs, first %u): the first is used",
            a->madt_enabled_repeats, repeat_ids, first_repeat);
}

static void parse_madt(struct acpi_info *a, const uint8_t *t, uint32_t len)
{
    if (len < MADT_OFF_ENTRIES) {
        say(a, "APIC table: %u bytes, too short for its header (needs %u)", len, MADT_OFF_ENTRIES);
        return;
    }
    a->madt_found = true;
    a->lapic_address = ld32(t + MADT_OFF_LAPIC_ADDRESS);
    a->madt_flags = ld32(t + MADT_OFF_FLAGS);
    uint32_t ioapics_over = 0, overrides_over = 0;
    for (uint32_t off = MADT_OFF_ENTRIES; off + 2 <= len;) {
        uint8_t type = t[off], elen = t[off + 1];
        const uint8_t *e = t + off;
        if (elen < 2 || off + elen > len) {
            say(a, "APIC table: entry at offset %u has bad length %u; the rest is ignored", off, elen);
            break;
        }
        if (type == MADT_LOCAL_APIC && elen >= LAPIC_LEN)
            add_cpu(a, type, e[LAPIC_OFF_ID], e[LAPIC_OFF_UID], ld32(e + LAPIC_OFF_FLAGS));
        else if (type == MADT_LOCAL_X2APIC && elen >= X2APIC_LEN)
            add_cpu(a, type, ld32(e + X2APIC_OFF_ID), ld32(e + X2APIC_OFF_UID), ld32(e + X2APIC_OFF_FLAGS));
        else if (type == MADT_LAPIC_OVERRIDE && elen >= LAPIC_OVERRIDE_LEN) {
            a->lapic_address = ld64(e + LAPIC_OVERRIDE_OFF_ADDRESS);
            a->lapic_address_overridden = true;
        } else if (type == MADT_IOAPIC && elen >= IOAPIC_LEN) {
            if (a->ioapic_count < ACPI_MAX_IOAPICS)
                a->ioapics[a->ioapic_count++] = (struct acpi_ioapic){
                    .id = e[IOAPIC_OFF_ID], .address = ld32(e + IOAPIC_OFF_ADDRESS), .gsi_base = ld32(e + IOAPIC_OFF_GSI_BASE)};
            else
                ioapics_over++;
        } else if (type == MADT_SOURCE_OVERRIDE && elen >= ISO_LEN) {
            if (a->override_count < ACPI_MAX_OVERRIDES)
                a->overrides[a->override_count++] = (struct acpi_override){
                    .bus = e[ISO_OFF_BUS], .source = e[ISO_OFF_SOURCE], .gsi = ld32(e + ISO_OFF_GSI),
                    .flags = (uint16_t)(e[ISO_OFF_FLAGS] | e[ISO_OFF_FLAGS + 1] << 8)};
            else
                overrides_over++;
        } else if ((type == MADT_LOCAL_APIC || type == MADT_LOCAL_X2APIC || type == MADT_LAPIC_OVERRIDE ||
                    type == MADT_IOAPIC || type == MADT_SOURCE_OVERRIDE))
            say(a, "APIC table: type %u entry at offset %u is %u bytes, too short; skipped", type, off, elen);
        off += elen;
    }
    if (ioapics_over)
        say(a, "APIC table: %u I/O APICs beyond the first %u are ignored", ioapics_over, ACPI_MAX_IOAPICS);
    if (overrides_over)
        say(a, "APIC table: %u interrupt source overrides beyond the first %u are ignored", overrides_over, ACPI_MAX_OVERRIDES);
    tally_repeats(a);
}

/* --- How to end the machine: FADT power fields, the DSDT's \_S5 --- */
#define FADT_OFF_DSDT 40
#define FADT_OFF_SMI_CMD 48
#define FADT_OFF_ACPI_ENABLE 52
#define FADT_OFF_PM1A_CNT_BLK 64
#define FADT_OFF_PM1B_CNT_BLK 68
#define FADT_OFF_PM1_CNT_LEN 89
#define FADT_OFF_IAPC_BOOT_ARCH 109
#define FADT_REVISION_IAPC 3
#define FADT_OFF_X_DSDT 140
#define FADT_OFF_X_PM1A_CNT_BLK 172
#define FADT_OFF_X_PM1B_CNT_BLK 184
#define FADT_OFF_SLEEP_CONTROL_REG 244
#define FADT_OFF_HYPERVISOR_VENDOR 268
#define FADT_HYPERVISOR_VENDOR_LEN 8

/* One PM1 control block, chosen as ACPICA does (tbfadt.c,
   AcpiTbConvertFadt): the X_ GAS when its address is set, else the 32-bit
   field as an I/O port, PM1_CNT_LEN bytes wide. Address 0: absent. Both set
   and different is ACPICA's "32/64X address mismatch": it keeps the X_
   block (AcpiGbl_Use32BitFadtAddresses is FALSE unless Linux is booted with
   acpi_force_32bit_fadt_addr), and so does the image, saying so. */
static const char *pm1_cnt_block(struct acpi_info *a, struct acpi_gas *g, const uint8_t *t, uint32_t len, uint32_t off32,
                                 uint32_t off_x, uint8_t cnt_len, const char *name32, const char *name_x)
{
    *g = (struct acpi_gas){0};
    uint32_t legacy = ld32(t + off32);
    if (len >= off_x + GAS_LEN) {
        read_gas(g, t + off_x);
        if (g->address) {
            if (legacy && g->address != legacy) {
                a->pm1_cnt_conflicts++;
                char ab = name32[3]; /* "PM1a_CNT_BLK": 'a' or 'b' */
                say(a, "FACP table: X_PM1%c_CNT_BLK 0x%llx and PM1%c_CNT_BLK 0x%x disagree; X_PM1%c_CNT_BLK used (to power off), as ACPICA does",
                    ab, (unsigned long long)g->address, ab, legacy, ab);
            }
            return name_x;
        }
    }
    if (!legacy)
        return 0;
    *g = (struct acpi_gas){ACPI_GAS_IO, (uint8_t)(cnt_len * 8), 0, 0, legacy};
    return name32;
}

static void acpi_read_power(struct acpi_info *a, const struct acpi_mapper *m, const uint8_t *t, uint32_t len)
{
    a->fadt_length = len;
    a->fadt_revision = t[HDR_OFF_REVISION];
    if (len < FADT_OFF_PM1_CNT_LEN + 1) {
        fmt_format(a->s5.why, sizeof a->s5.why, "FACP table: %u bytes, too short for the PM1 control fields", len);
        return;
    }
    a->pm1_cnt_len = t[FADT_OFF_PM1_CNT_LEN];
    a->smi_cmd = ld32(t + FADT_OFF_SMI_CMD);
    a->acpi_enable = t[FADT_OFF_ACPI_ENABLE];
    a->pm1a_cnt_field = pm1_cnt_block(a, &a->pm1a_cnt, t, len, FADT_OFF_PM1A_CNT_BLK, FADT_OFF_X_PM1A_CNT_BLK, a->pm1_cnt_len,
                                      "PM1a_CNT_BLK", "X_PM1a_CNT_BLK");
    (void)pm1_cnt_block(a, &a->pm1b_cnt, t, len, FADT_OFF_PM1B_CNT_BLK, FADT_OFF_X_PM1B_CNT_BLK, a->pm1_cnt_len, "PM1b_CNT_BLK",
                        "X_PM1b_CNT_BLK");
    /* reserved in the ACPI 1.0 FADT (revision 1 and 2); Linux reads it from
       revision 3 (FADT2_REVISION_ID) on */
    if (len >= FADT_OFF_IAPC_BOOT_ARCH + 2 && a->fadt_revision >= FADT_REVISION_IAPC) {
        a->iapc_boot_arch_valid = true;
        a->iapc_boot_arch = ld16(t + FADT_OFF_IAPC_BOOT_ARCH);
    }
    if (len >= FADT_OFF_SLEEP_CONTROL_REG + GAS_LEN)
        read_gas(&a->sleep_control, t + FADT_OFF_SLEEP_CONTROL_REG);
    if (len >= FADT_OFF_HYPERVISOR_VENDOR + FADT_HYPERVISOR_VENDOR_LEN)
        for (int i = 0; i < FADT_HYPERVISOR_VENDOR_LEN; i++) {
            uint8_t c = t[FADT_OFF_HYPERVISOR_VENDOR + i];
            a->hypervisor_vendor[i] = c >= 0x20 && c < 0x7F ? (char)c : c ? '?' : '\0';
        }
    uint64_t x_dsdt = len >= FADT_OFF_X_DSDT + 8 ? ld64(t + FADT_OFF_X_DSDT) : 0;
    a->dsdt_address = x_dsdt ? x_dsdt : ld32(t + FADT_OFF_DSDT);
    if (!a->dsdt_address) {
        fmt_format(a->s5.why, sizeof a->s5.why, "the FADT names no DSDT (DSDT and X_DSDT are 0)");
        return;
    }
    uint32_t dlen = 0;
    const uint8_t *d = map_table(a, m, a->dsdt_address, "DSDT", 0, &dlen);
    if (!d) {
        fmt_format(a->s5.why, sizeof a->s5.why, "the DSDT at 0x%llx is not usable (see the ACPI messages)",
                   (unsigned long long)a->dsdt_address);
        return;
    }
    a->dsdt_found = true;
    a->dsdt_length = dlen;
    a->qemu_fw_cfg = aml_has_string_hid(d + HDR_LEN, dlen - HDR_LEN, "QEMU0002");
    (void)aml_find_s5(d + HDR_LEN, dlen - HDR_LEN, &a->s5);
}

void acpi_discover(const struct acpi_mapper *m, const uint8_t *tag_new, uint32_t tag_new_len, const uint8_t *tag_old,
                   enum acpi_handover from, struct acpi_info *a)
{
    *a = (struct acpi_info){0};
    const uint8_t *rsdp = find_rsdp(a, m, tag_new, tag_new_len, tag_old, from);
    if (!rsdp)
        return;

    /* XSDT when revision >= 2 and its address is set; RSDT otherwise or when
       the XSDT is unusable. */
    const uint8_t *root = 0;
    uint32_t root_len = 0;
    unsigned entry_size = 4;
    uint64_t xsdt = a->revision >= 2 ? ld64(rsdp + RSDP_OFF_XSDT) : 0;
    if (xsdt) {
        root = map_table(a, m, xsdt, "XSDT", 0, &root_len);
        if (root) {
            a->root_is_xsdt = true;
            a->root_address = xsdt;
            entry_size = 8;
        } else {
            say(a, "falling back from the XSDT to the RSDT");
        }
    }
    if (!root) {
        uint64_t rsdt = ld32(rsdp + RSDP_OFF_RSDT);
        if (!rsdt) {
            say(a, "RSDP gives no RSDT address");
            return;
        }
        root = map_table(a, m, rsdt, "RSDT", 0, &root_len);
        if (!root)
            return;
        a->root_address = rsdt;
    }
    a->root_found = true;

    uint32_t entries = (root_len - HDR_LEN) / entry_size;
    for (uint32_t i = 0; i < entries; i++) {
        const uint8_t *e = root + HDR_LEN + i * entry_size;
        uint64_t addr = entry_size == 8 ? ld64(e) : ld32(e);
        if (!addr)
            continue;
        char sig[5] = "????";
        uint32_t len = 0;
        const uint8_t *t = map_table(a, m, addr, 0, sig, &len);
        if (a->table_count < ACPI_MAX_TABLES) {
            struct acpi_table_ref *ref = &a->tables[a->table_count++];
            for (int k = 0; k < 5; k++)
                ref->signature[k] = sig[k];
            ref->address = addr;
            ref->length = len;
            ref->valid = t != 0;
        }
        if (!t) {
            if (sig_is((const uint8_t *)sig, "HPET"))
                reason_from_last(a, a->hpet_reason);
            else if (sig_is((const uint8_t *)sig, "FACP"))
                reason_from_last(a, a->pm_timer_reason);
            continue;
        }
        if (sig_is(t, "FACP") && !a->fadt_length)
            acpi_read_power(a, m, t, len);
        if (sig_is(t, "FACP") && !a->fadt_found) {
            parse_fadt(a, t, len);
            if (!a->pm_timer_found)
                reason_from_last(a, a->pm_timer_reason);
        } else if (sig_is(t, "HPET")) {
            parse_hpet(a, t, len, addr);
            if (!a->hpet_found)
                reason_from_last(a, a->hpet_reason);
        }
        else if (sig_is(t, "APIC") && !a->madt_found)
            parse_madt(a, t, len);
    }
    if (!a->fadt_found) {
        say(a, "no valid FACP (FADT) table, so no ACPI PM timer");
        reason_from_last(a, a->pm_timer_reason);
    }
    if (!a->hpet_found) {
        say(a, "no valid HPET table in the %s", a->root_is_xsdt ? "XSDT" : "RSDT");
        reason_from_last(a, a->hpet_reason);
    }
}

uint32_t acpi_isa_irq_gsi(const struct acpi_info *a, uint8_t irq, bool *active_low, bool *level)
{
    *active_low = *level = false;
    for (uint32_t i = 0; i < a->override_count; i++) {
        const struct acpi_override *o = &a->overrides[i];
        if (o->bus != 0 || o->source != irq)
            continue;
        *active_low = (o->flags & INTI_POLARITY_MASK) == INTI_ACTIVE_LOW;
        *level = ((o->flags >> INTI_TRIGGER_SHIFT) & INTI_TRIGGER_MASK) == INTI_LEVEL;
        return o->gsi;
    }
    return irq;
}

int acpi_ioapic_of_gsi(const struct acpi_info *a, uint32_t gsi, uint32_t pins_of[ACPI_MAX_IOAPICS], uint32_t *pin)
{
    for (uint32_t i = 0; i < a->ioapic_count; i++) {
        uint32_t base = a->ioapics[i].gsi_base;
        if (gsi >= base && gsi - base < pins_of[i]) {
            *pin = gsi - base;
            return (int)i;
        }
    }
    return -1;
}

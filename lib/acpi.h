/* ACPI table discovery: RSDP, RSDT/XSDT, and the fields of FADT, HPET and
   MADT that locate time counters. Pure: physical memory is reached through a
   mapper, so the host tests and the fuzzer hand it crafted byte buffers.
   ACPI 6.5, chapter 5.2; IA-PC HPET 1.0a, 3.2.4. Every table is checked
   (signature, length, checksum) before any field is read, and every
   rejection is kept as a message naming the table and the reason. */
#ifndef CLOCKBENCH_ACPI_H
#define CLOCKBENCH_ACPI_H

#include <stdbool.h>
#include <stdint.h>

#include "aml.h"

/* Returns a pointer to len readable bytes at physical address phys, or NULL
   when that range cannot be reached (why says so). */
struct acpi_mapper {
    const void *(*map)(void *ctx, uint64_t phys, uint64_t len, const char **why);
    void *ctx;
};

/* Generic Address Structure (ACPI 6.5, 5.2.3.2) */
#define ACPI_GAS_MEMORY 0
#define ACPI_GAS_IO 1
struct acpi_gas {
    uint8_t space_id, bit_width, bit_offset, access_size;
    uint64_t address;
};

/* IAPC_BOOT_ARCH (ACPI 6.5, 5.2.9.3, Table 5.11) */
#define ACPI_IAPC_LEGACY_DEVICES (1u << 0)
#define ACPI_IAPC_8042 (1u << 1)
#define ACPI_IAPC_CMOS_RTC_NOT_PRESENT (1u << 5)

#define ACPI_MAX_TABLES 48
#define ACPI_MAX_MESSAGES 12
/* The longest message lib/acpi.c can write, every number at its largest and
   every name at its longest, fits (tests/host/lib/test_acpi_messages.py). */
#define ACPI_MESSAGE_CHARS 160
#define ACPI_MAX_TABLE_BYTES (4u << 20) /* larger claimed lengths are rejected as corrupt */
#define ACPI_MAX_IOAPICS 8
#define ACPI_MAX_OVERRIDES 16
#define ACPI_MAX_CPUS 256 /* MADT processor entries kept; more are counted, not listed */

struct acpi_table_ref {
    char signature[5];
    uint64_t address;
    uint32_t length;
    bool valid;
};

struct acpi_info {
    /* RSDP */
    bool rsdp_found;
    const char *rsdp_source; /* "multiboot2 ACPI 2.0+ tag", "EBDA", "BIOS area 0xE0000-0xFFFFF", ... */
    uint64_t rsdp_address;   /* 0 when it came as a copy in a boot tag */
    uint8_t revision;
    char oem_id[7];
    /* Root table */
    bool root_found;
    bool root_is_xsdt;
    uint64_t root_address;
    struct acpi_table_ref tables[ACPI_MAX_TABLES];
    int table_count;

    /* FADT: the ACPI PM timer, chosen the way ACPICA converts the FADT
       (tbfadt.c: a set X_ block wins; a hardware-reduced FADT's 32-bit blocks
       are left unconverted) and Linux picks its port (arch/x86/kernel/acpi/
       boot.c, acpi_parse_fadt). Each self-contradiction is one message. */
    bool fadt_found;
    uint8_t fadt_revision;        /* the FADT header's revision (Linux: 2+ reads the X_ block) */
    bool pm_timer_found;          /* a block to probe; whether it answers is the driver's finding */
    struct acpi_gas pm_timer;     /* from X_PM_TMR_BLK when its address is set, else PM_TMR_BLK as I/O */
    const char *pm_timer_field;   /* "X_PM_TMR_BLK" or "PM_TMR_BLK" */
    uint8_t pm_timer_len;         /* PM_TMR_LEN as given (4 when supported; Cloud Hypervisor leaves 0) */
    uint8_t pm_timer_width;       /* register width, bits: the X_ block's bit width, else PM_TMR_LEN * 8; 0 when none is stated */
    const char *pm_timer_width_from; /* "X_PM_TMR_BLK bit width", "PM_TMR_LEN" or "none stated" */
    bool pm_timer_32bit;          /* FADT flags TMR_VAL_EXT (bit 8) */
    bool hardware_reduced;        /* FADT flags HW_REDUCED_ACPI (bit 20) */
    uint64_t pm_timer_linux_port; /* the port Linux would read (pmtmr_ioport), 0 for none */
    bool pm_timer_os_ignored;     /* Linux would not read the chosen block */
    bool pm_timer_set_aside;      /* ignored on a hardware-reduced machine: measured only if it answers, never the default reference */
    const char *pm_timer_os_note; /* why the OS ignores it, "" when Linux reads it */
    uint32_t pm_timer_conflicts;  /* places where the FADT contradicts itself about the PM timer */

    /* HPET table */
    bool hpet_found;
    int hpet_tables;              /* valid HPET tables seen; the first is used */
    struct acpi_gas hpet_base;
    uint32_t hpet_block_id;       /* Event Timer Block ID */
    uint8_t hpet_comparators;     /* from the block ID: bits 12:8, plus one */
    bool hpet_64bit;              /* block ID bit 13 */
    uint8_t hpet_number;
    uint16_t hpet_min_tick;

    /* MADT (ACPI 6.5, 5.2.12): every Processor Local APIC (type 0) and
       Processor Local x2APIC (type 9) entry, in table order, one per APIC ID */
    bool madt_found;
    uint32_t cpus_enabled, cpus_listed;
    uint32_t cpus_online_capable;   /* not enabled, but may be brought online (ACPI 6.3+) */
    uint64_t lapic_address;         /* the Local APIC's MMIO base: the MADT's, or a type 5 override */
    bool lapic_address_overridden;
    uint32_t madt_flags;            /* bit 0 PCAT_COMPAT: dual 8259s present */
    struct acpi_cpu {
        uint32_t apic_id;           /* 8-bit for type 0, 32-bit for type 9 */
        uint32_t uid;               /* ACPI Processor UID */
        uint32_t flags;             /* as the entry gives them */
        uint8_t type;               /* 0 Local APIC, 9 Local x2APIC */
        bool enabled;               /* flags bit 0 */
        bool online_capable;        /* flags bit 1, meaningful only while not enabled */
        uint16_t enabled_entries;   /* entries with this APIC ID marked enabled */
        uint16_t disabled_entries;  /* and not enabled */
    } cpus[ACPI_MAX_CPUS];
    uint32_t cpu_count;             /* entries kept in cpus[] */
    bool cpus_dropped;              /* more than ACPI_MAX_CPUS distinct entries */
    uint32_t cpus_x2apic;           /* CPUs kept whose entry is a type 9 (x2APIC) one */
    /* Repeated APIC IDs, by kind; each kind is ONE message with its count
       (nearly half of real MADTs repeat IDs in disabled entries). Every
       processor entry beyond the first of its APIC ID is in exactly one of
       the last three. Placeholders are not CPUs: Linux skips them too
       (arch/x86/kernel/acpi/boot.c, acpi_parse_lapic/x2apic "Ignore invalid ID"). */
    uint32_t madt_placeholders;     /* APIC ID 0xFF (type 0) or 0xFFFFFFFF (type 9) */
    uint32_t madt_placeholders_enabled; /* of those, marked enabled */
    uint32_t madt_disabled_copies;  /* disabled entries repeating an enabled CPU's ID */
    uint32_t madt_disabled_shared;  /* disabled entries repeating another disabled entry's ID */
    uint32_t madt_enabled_repeats;  /* enabled entries repeating an enabled CPU's ID: a real contradiction */
    /* I/O APICs (type 1, 5.2.12.3) and interrupt source overrides (type 2,
       5.2.12.5): where each ISA IRQ arrives, and how it is signalled */
    struct acpi_ioapic {
        uint8_t id;
        uint64_t address;           /* MMIO base */
        uint32_t gsi_base;          /* its first global system interrupt */
    } ioapics[ACPI_MAX_IOAPICS];
    uint32_t ioapic_count;
    struct acpi_override {
        uint8_t bus, source;        /* bus 0 = ISA; source = the ISA IRQ */
        uint32_t gsi;
        uint16_t flags;             /* MPS INTI flags: polarity 1:0, trigger 3:2 */
    } overrides[ACPI_MAX_OVERRIDES];
    uint32_t override_count;

    /* How to end the machine, and what the firmware says about its legacy
       devices: the FADT's PM1 control blocks (ACPI 6.5, 4.8.3.2.1) and
       sleep control register (4.8.3.7), \_S5 in the DSDT (7.4.2.5), the
       IA-PC boot architecture flags (5.2.9.3) and the hypervisor's name
       (5.2.9, ACPI 6.0+). Read by acpi_read_power(), from acpi_discover;
       the FADT's revision is fadt_revision above. */
    uint32_t fadt_length;
    struct acpi_gas pm1a_cnt, pm1b_cnt; /* address 0: absent */
    const char *pm1a_cnt_field;     /* "X_PM1a_CNT_BLK" or "PM1a_CNT_BLK" (NULL when absent) */
    uint8_t pm1_cnt_len;            /* PM1_CNT_LEN */
    uint32_t pm1_cnt_conflicts;     /* X_PM1x_CNT_BLK and PM1x_CNT_BLK both set and different: one message each */
    uint32_t smi_cmd;               /* SMI_CMD port (offset 48), 0: the machine is always in ACPI mode */
    uint8_t acpi_enable;            /* ACPI_ENABLE (offset 52): written to SMI_CMD to enter ACPI mode */
    struct acpi_gas sleep_control;  /* SLEEP_CONTROL_REG (FADT offset 244); address 0: absent */
    bool iapc_boot_arch_valid;      /* FADT revision 3+ (ACPI 2.0) reaching offset 111 */
    uint16_t iapc_boot_arch;        /* IAPC_BOOT_ARCH (offset 109) */
    char hypervisor_vendor[9];      /* Hypervisor Vendor Identity (offset 268), "" when absent */
    uint64_t dsdt_address;          /* X_DSDT when set, else DSDT; 0 when neither */
    uint32_t dsdt_length;
    bool dsdt_found;                /* mapped, signature and checksum good */
    bool qemu_fw_cfg;               /* the DSDT declares Name(_HID, "QEMU0002"): QEMU's fw_cfg device */
    struct aml_s5 s5;               /* \_S5: SLP_TYPa/b, or why it is not usable */

    /* Why a counter's table gave nothing: the first problem met, or "". */
    char hpet_reason[ACPI_MESSAGE_CHARS];
    char pm_timer_reason[ACPI_MESSAGE_CHARS];

    char messages[ACPI_MAX_MESSAGES][ACPI_MESSAGE_CHARS];
    int message_count;
    bool messages_dropped;
    uint32_t messages_not_kept; /* said after the list was full: counted, not kept */
    /* The latest message, kept even when the list above is full: a
       counter's reason comes from here, never from another table's message. */
    char last_message[ACPI_MESSAGE_CHARS];
};

/* Who handed over the RSDP copies: a Multiboot 2 loader's tags, or the
   address in a PVH start_info (copied by lib/bootinfo.c). */
enum acpi_handover { ACPI_FROM_MULTIBOOT2, ACPI_FROM_PVH };

/* The RSDP candidates the loader handed over (NULL/0 when absent) are
   tried first, then the EBDA, then the BIOS area. */
void acpi_discover(const struct acpi_mapper *m, const uint8_t *tag_new, uint32_t tag_new_len, const uint8_t *tag_old,
                   enum acpi_handover from, struct acpi_info *out);

/* Where ISA IRQ irq arrives: its global system interrupt, after any
   override, and whether it is active low or level triggered (ISA's default
   is active high, edge; ACPI 6.5, 5.2.12.5, Table 5.26). */
uint32_t acpi_isa_irq_gsi(const struct acpi_info *a, uint8_t irq, bool *active_low, bool *level);
/* The I/O APIC that serves gsi, or -1; *pin gets its input pin. */
int acpi_ioapic_of_gsi(const struct acpi_info *a, uint32_t gsi, uint32_t pins_of[ACPI_MAX_IOAPICS], uint32_t *pin);

/* Sum of bytes modulo 256: 0 for a valid ACPI structure. */
uint8_t acpi_checksum(const uint8_t *p, uint32_t len);

#endif

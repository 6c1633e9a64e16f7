/* What the boot loader told us, from Multiboot 1 or Multiboot 2 information
   or Xen's PVH start_info, in one loader-independent structure. Pure: it reads memory through a base
   offset so the host tests can hand it crafted byte buffers. */
#ifndef CLOCKBENCH_BOOTINFO_H
#define CLOCKBENCH_BOOTINFO_H

#include <stdbool.h>
#include <stdint.h>

#define MB1_BOOT_MAGIC 0x2BADB002u
#define MB2_BOOT_MAGIC 0x36D76289u
/* A PVH boot has no register magic: boot/pvh.asm hands over the start_info
   structure's own, XEN_HVM_START_MAGIC_VALUE (Xen public/arch-x86/hvm/start_info.h). */
#define PVH_BOOT_MAGIC 0x336EC578u

enum boot_protocol { BOOT_UNKNOWN = 0, BOOT_MULTIBOOT1 = 1, BOOT_MULTIBOOT2 = 2, BOOT_PVH = 3 };

#define BOOTINFO_MAX_REGIONS 64
#define BOOTINFO_MAX_INFO_BYTES (1u << 20) /* refuse a claimed info size above 1 MiB */

/* Multiboot 2 information tag types (spec 3.6): read here, written by the
   EFI entry (efi/stub.c) as GRUB would. */
#define MB2_TAG_END 0
#define MB2_TAG_CMDLINE 1
#define MB2_TAG_LOADER 2
#define MB2_TAG_MMAP 6
#define MB2_TAG_FRAMEBUFFER 8
#define MB2_TAG_EFI32 11 /* EFI 32-bit system table pointer */
#define MB2_TAG_EFI64 12 /* EFI 64-bit system table pointer */
#define MB2_TAG_ACPI_OLD 14
#define MB2_TAG_ACPI_NEW 15
#define MB2_TAG_EFI_BS 18 /* EFI boot services not terminated */

/* A Multiboot 2 information tag of clockbench's own, written only by its
   EFI entry (efi/stub.c; docs/architecture.md): the firmware's Secure Boot
   state, read with GetVariable before ExitBootServices. Its type lies far
   outside the specification's (0-21). Body, byte offsets: */
#define BOOTINFO_MB2_TAG_EFI_STATE 0x43424553u /* "SECB" */
#define BOOTINFO_EFI_STATE_VERSION 0           /* u8, 1 */
#define BOOTINFO_EFI_STATE_SECURE_BOOT 1       /* u8, the SecureBoot variable: 0, 1, or absent */
#define BOOTINFO_EFI_STATE_SETUP_MODE 2        /* u8, the SetupMode variable: 0, 1, or absent */
#define BOOTINFO_EFI_STATE_SHIM 3              /* u8, 1: shim's SHIM_LOCK protocol was installed */
#define BOOTINFO_EFI_STATE_FW_REVISION 4       /* u32, the system table's FirmwareRevision */
#define BOOTINFO_EFI_STATE_UEFI_REVISION 8     /* u32, the system table header's Revision (UEFI version) */
#define BOOTINFO_EFI_STATE_BYTES 12
#define BOOTINFO_EFI_STATE_VENDOR 12           /* optional: the firmware vendor, ASCII, NUL-terminated */
#define BOOTINFO_EFI_VENDOR_MAX 48
#define BOOTINFO_EFI_VAR_ABSENT 0xFF /* the variable could not be read */

/* Memory map types (ACPI 6.5, 15.1 "Address Range Types"; both Multiboot specs use them) */
#define MEM_AVAILABLE 1
#define MEM_RESERVED 2
#define MEM_ACPI_RECLAIMABLE 3
#define MEM_ACPI_NVS 4
#define MEM_BAD 5

struct mem_region {
    uint64_t base;
    uint64_t length;
    uint32_t type;
};

struct framebuffer_info {
    bool present;
    uint64_t addr;
    uint32_t pitch, width, height;
    uint8_t bpp;
    uint8_t type; /* 0 indexed, 1 direct RGB, 2 EGA text */
    uint8_t red_pos, red_size, green_pos, green_size, blue_pos, blue_size;
};

struct boot_info {
    int protocol; /* enum boot_protocol: Multiboot 1 or 2 (the number is the version), PVH */
    uint32_t pvh_version; /* start_info's version (0 or 1) on a PVH boot */
    char cmdline[512];
    char loader[64];
    struct mem_region mem[BOOTINFO_MAX_REGIONS];
    int mem_count;
    bool mem_truncated;
    /* ACPI RSDP copies from the Multiboot 2 tags (the loader found them, e.g.
       from EFI), or from the address a PVH start_info gives. */
    bool rsdp_new_present, rsdp_old_present;
    uint8_t rsdp_new[64];
    uint32_t rsdp_new_len;
    uint8_t rsdp_old[20];
    struct framebuffer_info fb;
    /* From clockbench's EFI entry only (BOOTINFO_MB2_TAG_EFI_STATE); absent on
       BIOS, direct and GRUB multiboot2 boots, where the state is unknown. */
    bool efi_state_present;
    uint8_t efi_secure_boot, efi_setup_mode; /* 0, 1 or BOOTINFO_EFI_VAR_ABSENT */
    bool efi_shim;
    uint32_t efi_fw_revision, efi_uefi_revision;
    char efi_firmware_vendor[BOOTINFO_EFI_VENDOR_MAX]; /* "EDK II", or "" */
    uint64_t efi_system_table; /* Multiboot 2 tag 12 (or 11), 0 when absent */
    /* A Multiboot 2 loader started by UEFI passes the system table (tag 11
       or 12; GRUB always does, efi/stub.c too) and, when it left boot
       services running, tag 18 (Multiboot 2 spec, 3.6.13-3.6.16). */
    bool efi_system_table_tag, efi_boot_services_tag;
    char error[96]; /* why parsing stopped early, or "" */
};

/* Reads the info structure at physical address info_addr; memory at physical
   address A is at (const uint8_t *)(mem_base + A). Returns false (with
   bi->error set) when the magic is unknown or the structure is malformed;
   everything read before the problem is kept. */
bool bootinfo_parse(uint32_t magic, uintptr_t mem_base, uint32_t info_addr, struct boot_info *bi);
/* How the image was booted, for people: "Multiboot 1", "Multiboot 2", "PVH". */
const char *bootinfo_protocol_name(int protocol);

/* "on", "off" or "unknown" (no EFI entry, or SecureBoot unreadable):
   docs/output.md, the machine record's secure_boot. */
const char *bootinfo_secure_boot(const struct boot_info *bi);

/* Which firmware started the loader, as far as the boot information says:
   "uefi" (an EFI tag, or clockbench's EFI entry), "bios" (Multiboot 2
   information with no EFI tag: a UEFI loader always passes the system
   table), or NULL when it cannot tell (Multiboot 1, PVH). */
const char *bootinfo_firmware(const struct boot_info *bi);
/* For people: bootinfo_secure_boot's word, or "not applicable (BIOS)" where
   the firmware is BIOS (Multiboot 2 with no EFI tag, or QEMU's own Multiboot 1
   loader) and Secure Boot does not exist, or "not applicable (PVH entry: no
   UEFI)" on a PVH boot. The host report (report.secure_boot) says the same. */
const char *bootinfo_secure_boot_shown(const struct boot_info *bi);

#endif

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
    char error[96]; /* why parsing stopped early, or "" */
};

/* Reads the info structure at physical address info_addr; memory at physical
   address A is at (const uint8_t *)(mem_base + A). Returns false (with
   bi->error set) when the magic is unknown or the structure is malformed;
   everything read before the problem is kept. */
bool bootinfo_parse(uint32_t magic, uintptr_t mem_base, uint32_t info_addr, struct boot_info *bi);
/* How the image was booted, for people: "Multiboot 1", "Multiboot 2", "PVH". */
const char *bootinfo_protocol_name(int protocol);

#endif

/* Boot information parsing: Multiboot Specification 0.6.96, 3.3
   ("Boot information format"), Multiboot2 Specification 2.0, 3.6
   ("Boot information"), and Xen's PVH boot ABI (docs/misc/pvh.pandoc;
   struct hvm_start_info in xen/include/public/arch-x86/hvm/start_info.h). */
#include "bootinfo.h"

#include "format.h"
#include "string.h"

/* Multiboot 1 info flags and field offsets (spec 3.3) */
#define MB1_INFO_CMDLINE (1u << 2)
#define MB1_INFO_MMAP (1u << 6)
#define MB1_INFO_LOADER (1u << 9)
#define MB1_INFO_FRAMEBUFFER (1u << 12)
#define MB1_OFF_FLAGS 0
#define MB1_OFF_CMDLINE 16
#define MB1_OFF_MMAP_LENGTH 44
#define MB1_OFF_MMAP_ADDR 48
#define MB1_OFF_LOADER 64
#define MB1_OFF_FB_ADDR 88
#define MB1_INFO_SIZE 116


/* hvm_start_info (version 0 ends at 40 bytes; version 1 adds the memory map) */
#define PVH_OFF_MAGIC 0
#define PVH_OFF_VERSION 4
#define PVH_OFF_CMDLINE 24
#define PVH_OFF_RSDP 32
#define PVH_OFF_MEMMAP 40
#define PVH_OFF_MEMMAP_ENTRIES 48
#define PVH_MEMMAP_ENTRY_SIZE 24 /* addr u64, size u64, type u32, reserved u32 */
#define PVH_MEMMAP_MAX_ENTRIES 4096 /* more is a corrupt count, not a machine */
#define PVH_CMDLINE_MAX 4096
/* The RSDP: revision at 15, length at 20 (ACPI 6.5, 5.2.5.3) */
#define RSDP_OFF_REVISION 15
#define RSDP_OFF_LENGTH 20
#define RSDP_V1_SIZE 20

static uint32_t ld32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static const uint8_t *at(uintptr_t base, uint64_t addr) { return (const uint8_t *)(base + (uintptr_t)addr); }

static void copy_string(char *dst, unsigned cap, const uint8_t *src, uint64_t max_src)
{
    unsigned i = 0;
    for (; i + 1 < cap && i < max_src && src[i]; i++)
        dst[i] = (char)src[i];
    dst[i] = '\0';
}

static void add_region(struct boot_info *bi, uint64_t base, uint64_t length, uint32_t type)
{
    if (bi->mem_count == BOOTINFO_MAX_REGIONS) {
        bi->mem_truncated = true;
        return;
    }
    bi->mem[bi->mem_count].base = base;
    bi->mem[bi->mem_count].length = length;
    bi->mem[bi->mem_count].type = type;
    bi->mem_count++;
}

/* Direct RGB colour info, the same six bytes in both specifications:
   red, green and blue field positions and sizes. */
static void parse_fb_colours(struct framebuffer_info *fb, const uint8_t *c)
{
    fb->red_pos = c[0];
    fb->red_size = c[1];
    fb->green_pos = c[2];
    fb->green_size = c[3];
    fb->blue_pos = c[4];
    fb->blue_size = c[5];
}

static void parse_fb_common(struct framebuffer_info *fb, const uint8_t *p)
{
    /* addr u64, pitch, width, height u32, bpp u8, type u8, then colour info */
    fb->present = true;
    fb->addr = ld64(p);
    fb->pitch = ld32(p + 8);
    fb->width = ld32(p + 12);
    fb->height = ld32(p + 16);
    fb->bpp = p[20];
    fb->type = p[21];
}

static bool parse_mb1(uintptr_t base, uint32_t info_addr, struct boot_info *bi)
{
    const uint8_t *info = at(base, info_addr);
    uint32_t flags = ld32(info + MB1_OFF_FLAGS);
    if (flags & MB1_INFO_CMDLINE)
        copy_string(bi->cmdline, sizeof bi->cmdline, at(base, ld32(info + MB1_OFF_CMDLINE)), 4096);
    if (flags & MB1_INFO_LOADER)
        copy_string(bi->loader, sizeof bi->loader, at(base, ld32(info + MB1_OFF_LOADER)), 256);
    if (flags & MB1_INFO_MMAP) {
        uint32_t len = ld32(info + MB1_OFF_MMAP_LENGTH);
        uint32_t addr = ld32(info + MB1_OFF_MMAP_ADDR);
        if (len > BOOTINFO_MAX_INFO_BYTES) {
            fmt_format(bi->error, sizeof bi->error, "multiboot1 memory map length %u is implausible", len);
            return false;
        }
        /* Each entry: size (not counting itself), base u64, length u64, type u32. */
        uint32_t off = 0;
        while (off + 24 <= len) {
            const uint8_t *e = at(base, (uint64_t)addr + off);
            uint32_t size = ld32(e);
            if (size < 20 || size > len - off - 4) {
                fmt_format(bi->error, sizeof bi->error, "multiboot1 memory map entry size %u at offset %u does not fit", size,
                           off);
                return false;
            }
            add_region(bi, ld64(e + 4), ld64(e + 12), ld32(e + 20));
            off += size + 4;
        }
    }
    if (flags & MB1_INFO_FRAMEBUFFER) {
        parse_fb_common(&bi->fb, info + MB1_OFF_FB_ADDR);
        parse_fb_colours(&bi->fb, info + MB1_OFF_FB_ADDR + 22);
    }
    return true;
}

static bool parse_mb2(uintptr_t base, uint32_t info_addr, struct boot_info *bi)
{
    const uint8_t *info = at(base, info_addr);
    uint32_t total = ld32(info);
    if (total < 16 || total > BOOTINFO_MAX_INFO_BYTES) {
        fmt_format(bi->error, sizeof bi->error, "multiboot2 info total_size %u out of range", total);
        return false;
    }
    uint32_t off = 8;
    while (off + 8 <= total) {
        const uint8_t *tag = info + off;
        uint32_t type = ld32(tag), size = ld32(tag + 4);
        if (type == MB2_TAG_END)
            return true;
        if (size < 8 || size > total - off) {
            fmt_format(bi->error, sizeof bi->error, "multiboot2 tag %u at offset %u has bad size %u", type, off, size);
            return false;
        }
        const uint8_t *body = tag + 8;
        uint32_t body_len = size - 8;
        switch (type) {
        case MB2_TAG_CMDLINE:
            copy_string(bi->cmdline, sizeof bi->cmdline, body, body_len);
            break;
        case MB2_TAG_LOADER:
            copy_string(bi->loader, sizeof bi->loader, body, body_len);
            break;
        case MB2_TAG_MMAP: {
            if (body_len < 8)
                break;
            uint32_t esize = ld32(body);
            if (esize < 24 || esize > body_len) {
                fmt_format(bi->error, sizeof bi->error, "multiboot2 memory map entry size %u does not fit (24..%u)", esize,
                           body_len);
                return false;
            }
            for (uint32_t e = 8; e + esize <= body_len; e += esize)
                add_region(bi, ld64(body + e), ld64(body + e + 8), ld32(body + e + 16));
            break;
        }
        case MB2_TAG_FRAMEBUFFER:
            if (body_len >= 22) {
                parse_fb_common(&bi->fb, body);
                if (bi->fb.type == 1 && body_len >= 30)
                    parse_fb_colours(&bi->fb, body + 24);
            }
            break;
        case MB2_TAG_ACPI_OLD:
            if (body_len >= 20) {
                for (int i = 0; i < 20; i++)
                    bi->rsdp_old[i] = body[i];
                bi->rsdp_old_present = true;
            }
            break;
        case MB2_TAG_ACPI_NEW:
            if (body_len >= 20) {
                uint32_t n = body_len < sizeof bi->rsdp_new ? body_len : sizeof bi->rsdp_new;
                for (uint32_t i = 0; i < n; i++)
                    bi->rsdp_new[i] = body[i];
                bi->rsdp_new_len = n;
                bi->rsdp_new_present = true;
            }
            break;
        case MB2_TAG_EFI32:
            bi->efi_system_table_tag = true;
            if (body_len >= 4 && !bi->efi_system_table)
                bi->efi_system_table = ld32(body);
            break;
        case MB2_TAG_EFI64:
            bi->efi_system_table_tag = true;
            if (body_len >= 8)
                bi->efi_system_table = ld64(body);
            break;
        case MB2_TAG_EFI_BS:
            bi->efi_boot_services_tag = true;
            break;
        case BOOTINFO_MB2_TAG_EFI_STATE:
            if (body_len >= BOOTINFO_EFI_STATE_BYTES && body[BOOTINFO_EFI_STATE_VERSION] >= 1) {
                bi->efi_state_present = true;
                bi->efi_secure_boot = body[BOOTINFO_EFI_STATE_SECURE_BOOT];
                bi->efi_setup_mode = body[BOOTINFO_EFI_STATE_SETUP_MODE];
                bi->efi_shim = body[BOOTINFO_EFI_STATE_SHIM] == 1;
                bi->efi_fw_revision = ld32(body + BOOTINFO_EFI_STATE_FW_REVISION);
                bi->efi_uefi_revision = ld32(body + BOOTINFO_EFI_STATE_UEFI_REVISION);
                if (body_len > BOOTINFO_EFI_STATE_VENDOR)
                    copy_string(bi->efi_firmware_vendor, sizeof bi->efi_firmware_vendor, body + BOOTINFO_EFI_STATE_VENDOR,
                                body_len - BOOTINFO_EFI_STATE_VENDOR);
            }
            break;
        default:
            break;
        }
        off += (size + 7) & ~7u; /* tags are 8-byte aligned */
    }
    fmt_format(bi->error, sizeof bi->error, "multiboot2 info has no end tag within %u bytes", total);
    return false;
}

/* The RSDP a PVH loader points at is copied as a Multiboot 2 loader would
   hand it over, so discovery checks it the same way: ACPI 2.0+ (revision 2
   or more, its own length up to 64 bytes) or 1.0 (20 bytes). */
static void copy_rsdp(uintptr_t base, uint64_t addr, struct boot_info *bi)
{
    const uint8_t *r = at(base, addr);
    if (r[RSDP_OFF_REVISION] >= 2) {
        uint32_t len = ld32(r + RSDP_OFF_LENGTH);
        if (len < RSDP_V1_SIZE || len > sizeof bi->rsdp_new)
            len = RSDP_V1_SIZE + 16; /* a bad length: the 36 bytes ACPI 2.0 defines; the checksum will judge */
        for (uint32_t i = 0; i < len; i++)
            bi->rsdp_new[i] = r[i];
        bi->rsdp_new_len = len;
        bi->rsdp_new_present = true;
    } else {
        for (int i = 0; i < RSDP_V1_SIZE; i++)
            bi->rsdp_old[i] = r[i];
        bi->rsdp_old_present = true;
    }
}

static bool parse_pvh(uintptr_t base, uint32_t addr, struct boot_info *bi)
{
    if (!addr) {
        fmt_format(bi->error, sizeof bi->error, "PVH boot with no start_info (EBX is 0)");
        return false;
    }
    const uint8_t *p = at(base, addr);
    if (ld32(p + PVH_OFF_MAGIC) != PVH_BOOT_MAGIC) {
        fmt_format(bi->error, sizeof bi->error, "PVH start_info magic is 0x%08x, not 0x%08x", ld32(p + PVH_OFF_MAGIC),
                   PVH_BOOT_MAGIC);
        return false;
    }
    bi->pvh_version = ld32(p + PVH_OFF_VERSION);
    uint64_t cmdline = ld64(p + PVH_OFF_CMDLINE);
    if (cmdline)
        copy_string(bi->cmdline, sizeof bi->cmdline, at(base, cmdline), PVH_CMDLINE_MAX);
    uint64_t rsdp = ld64(p + PVH_OFF_RSDP);
    if (rsdp)
        copy_rsdp(base, rsdp, bi);
    if (bi->pvh_version < 1)
        return true; /* version 0 has no memory map: the E820 of the firmware is not ours to read */
    uint64_t map = ld64(p + PVH_OFF_MEMMAP);
    uint32_t n = ld32(p + PVH_OFF_MEMMAP_ENTRIES);
    if (n > PVH_MEMMAP_MAX_ENTRIES) {
        fmt_format(bi->error, sizeof bi->error, "PVH memory map claims %u entries (at most %u taken)", n,
                   PVH_MEMMAP_MAX_ENTRIES);
        return false;
    }
    if (n && !map) {
        fmt_format(bi->error, sizeof bi->error, "PVH memory map of %u entries at address 0", n);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = at(base, map + (uint64_t)i * PVH_MEMMAP_ENTRY_SIZE);
        /* types 1-5 are E820's, as in both Multiboot specs; Xen's 6 (disabled)
           and 7 (persistent memory) are not RAM to use: reserved */
        uint32_t type = ld32(e + 16);
        add_region(bi, ld64(e), ld64(e + 8), type >= MEM_AVAILABLE && type <= MEM_BAD ? type : MEM_RESERVED);
    }
    return true;
}

const char *bootinfo_protocol_name(int protocol)
{
    switch (protocol) {
    case BOOT_MULTIBOOT1: return "Multiboot 1";
    case BOOT_MULTIBOOT2: return "Multiboot 2";
    case BOOT_PVH: return "PVH";
    }
    return "an unknown protocol";
}

bool bootinfo_parse(uint32_t magic, uintptr_t mem_base, uint32_t info_addr, struct boot_info *bi)
{
    *bi = (struct boot_info){0};
    if (magic == MB1_BOOT_MAGIC) {
        bi->protocol = BOOT_MULTIBOOT1;
        return parse_mb1(mem_base, info_addr, bi);
    }
    if (magic == MB2_BOOT_MAGIC) {
        bi->protocol = BOOT_MULTIBOOT2;
        return parse_mb2(mem_base, info_addr, bi);
    }
    if (magic == PVH_BOOT_MAGIC) {
        bi->protocol = BOOT_PVH;
        return parse_pvh(mem_base, info_addr, bi);
    }
    fmt_format(bi->error, sizeof bi->error, "unknown boot magic 0x%08x", magic);
    return false;
}

const char *bootinfo_secure_boot(const struct boot_info *bi)
{
    if (!bi->efi_state_present)
        return "unknown";
    if (bi->efi_secure_boot == 1)
        return "on";
    if (bi->efi_secure_boot == 0)
        return "off";
    return "unknown";
}

const char *bootinfo_firmware(const struct boot_info *bi)
{
    if (bi->efi_state_present || bi->efi_system_table_tag || bi->efi_boot_services_tag)
        return "uefi";
    if (bi->protocol == BOOT_MULTIBOOT2)
        return "bios";
    return 0;
}

const char *bootinfo_secure_boot_shown(const struct boot_info *bi)
{
    if (bi->efi_state_present)
        return bootinfo_secure_boot(bi);
    const char *fw = bootinfo_firmware(bi);
    if (fw && fw[0] == 'b')
        return "not applicable (BIOS)";
    /* QEMU's own Multiboot 1 loader is an option ROM that only a BIOS
       (SeaBIOS, qboot) runs; OVMF loads no Multiboot kernel */
    if (bi->protocol == BOOT_MULTIBOOT1 && strcmp(bi->loader, "qemu") == 0)
        return "not applicable (BIOS)";
    /* the VMM jumped to the PVH entry itself: no UEFI firmware loaded, let
       alone verified, the image */
    if (bi->protocol == BOOT_PVH)
        return "not applicable (PVH entry: no UEFI)";
    return bootinfo_secure_boot(bi);
}

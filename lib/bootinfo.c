/* Multiboot information parsing: Multiboot Specification 0.6.96, 3.3
   ("Boot information format") and Multiboot2 Specification 2.0, 3.6
   ("Boot information"). */
#include "bootinfo.h"

#include "format.h"

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

/* Multiboot 2 tag types (spec 3.6) */
#define MB2_TAG_END 0
#define MB2_TAG_CMDLINE 1
#define MB2_TAG_LOADER 2
#define MB2_TAG_MMAP 6
#define MB2_TAG_FRAMEBUFFER 8
#define MB2_TAG_EFI64 12
#define MB2_TAG_ACPI_OLD 14
#define MB2_TAG_ACPI_NEW 15

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
        const uint8_t *c = info + MB1_OFF_FB_ADDR + 22;
        bi->fb.red_pos = c[0];
        bi->fb.red_size = c[1];
        bi->fb.green_pos = c[2];
        bi->fb.green_size = c[3];
        bi->fb.blue_pos = c[4];
        bi->fb.blue_size = c[5];
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
                if (bi->fb.type == 1 && body_len >= 30) {
                    const uint8_t *c = body + 24;
                    bi->fb.red_pos = c[0];
                    bi->fb.red_size = c[1];
                    bi->fb.green_pos = c[2];
                    bi->fb.green_size = c[3];
                    bi->fb.blue_pos = c[4];
                    bi->fb.blue_size = c[5];
                }
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
        case MB2_TAG_EFI64:
            if (body_len >= 8)
                bi->efi_system_table = ld64(body);
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

bool bootinfo_parse(uint32_t magic, uintptr_t mem_base, uint32_t info_addr, struct boot_info *bi)
{
    *bi = (struct boot_info){0};
    if (magic == MB1_BOOT_MAGIC) {
        bi->protocol = 1;
        return parse_mb1(mem_base, info_addr, bi);
    }
    if (magic == MB2_BOOT_MAGIC) {
        bi->protocol = 2;
        return parse_mb2(mem_base, info_addr, bi);
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

/* The kernel's EFI entry: a small position-independent EFI application
   (UEFI 2.10, 2.1.2) that carries the kernel's flat image as its payload.
   It gathers what a Multiboot 2 loader would hand over (Multiboot2
   Specification 2.0, 3.6: memory map, framebuffer, ACPI RSDP, command line,
   EFI system table) plus the Secure Boot state from the firmware's variables
   (UEFI 2.10, 3.3 "Globally Defined Variables"), places the kernel at its
   link address, leaves boot services and enters the kernel's 64-bit entry
   (boot/entry.asm, start64) with EAX = the Multiboot 2 boot magic and EBX =
   the information, so lib/bootinfo.c reads it as it reads GRUB's.

   Position independent: built -fpic with hidden visibility, so every
   reference is RIP-relative and the image needs no relocation wherever the
   firmware puts it (the Makefile refuses a link that has any). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/bootinfo.h"
#include "../lib/string.h"
#include "efi.h"
#include <kernel_layout.h> /* generated in build/gen/ from the kernel's symbols: KERNEL_IMAGE_START, ... */

#pragma GCC visibility push(hidden)

extern const uint8_t payload_start[], payload_end[];

/* The Multiboot 2 information tags the stub writes: lib/bootinfo.h, which reads them. */
#define MB2_FB_TYPE_RGB 1

#define INFO_BYTES (64 * 1024) /* the whole information structure, below 4 GiB */
#define MAP_BYTES (48 * 1024)  /* the firmware's memory map, with room for it to grow */
#define MAX_EXIT_TRIES 8
#define FB_WANT_WIDTH 1024 /* as the Multiboot 2 header asks GRUB (boot/multiboot_header.asm) */
#define FB_WANT_HEIGHT 768
#define BELOW_4G 0xFFFFFFFFull

static const struct efi_guid loaded_image_guid = {0x5B1B31A1, 0x9562, 0x11d2, {0x8E, 0x3F, 0x00, 0xA0, 0xC9, 0x69, 0x72, 0x3B}};
static const struct efi_guid gop_guid = {0x9042a9de, 0x23dc, 0x4a38, {0x96, 0xfb, 0x7a, 0xde, 0xd0, 0x80, 0x51, 0x6a}};
static const struct efi_guid acpi20_guid = {0x8868e871, 0xe4f1, 0x11d3, {0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81}};
static const struct efi_guid acpi10_guid = {0xeb9d2d30, 0x2d88, 0x11d3, {0x9a, 0x16, 0x00, 0x90, 0x27, 0x3f, 0xc1, 0x4d}};
static const struct efi_guid global_variable_guid = {0x8BE4DF61, 0x93CA, 0x11d2, {0xAA, 0x0D, 0x00, 0xE0, 0x98, 0x03, 0x2B, 0x8C}};
/* shim's SHIM_LOCK protocol (rhboot/shim, shim.h): present when shim started us or our loader */
static const struct efi_guid shim_lock_guid = {0x605dab50, 0xe046, 0x4300, {0xab, 0xb6, 0x3d, 0xd8, 0x10, 0xdd, 0x8b, 0x23}};

static struct efi_system_table *st;
static struct efi_boot_services *bs;

static bool guid_eq(const struct efi_guid *a, const struct efi_guid *b)
{
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    for (int i = 0; i < 16; i++)
        if (x[i] != y[i])
            return false;
    return true;
}

/* Console output before boot services end: ASCII widened to UCS-2. */
static void say(const char *s)
{
    char16 buf[128];
    while (*s) {
        unsigned n = 0;
        while (*s && n + 2 < sizeof buf / sizeof buf[0]) {
            if (*s == '\n')
                buf[n++] = '\r';
            buf[n++] = (char16)(uint8_t)*s++;
        }
        buf[n] = 0;
        st->con_out->output_string(st->con_out, buf);
    }
}

static void say_hex(const char *what, uint64_t v)
{
    char num[19] = "0x";
    for (int i = 0; i < 16; i++)
        num[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 0xF];
    num[18] = 0;
    say(what);
    say(num);
    say("\n");
}

static efi_status fail(const char *why, efi_status status)
{
    say("clockbench: ");
    say(why);
    say_hex(": EFI status ", status);
    bs->stall(5 * 1000 * 1000); /* long enough to be read on a screen */
    return status;
}

/* The information structure, built tag by tag. */
struct info {
    uint8_t *base;
    uint32_t used, cap;
};

static uint8_t *tag_begin(struct info *in, uint32_t type, uint32_t body_len)
{
    uint32_t size = 8 + body_len;
    if (in->used + ((size + 7) & ~7u) + 8 > in->cap)
        return NULL;
    uint8_t *t = in->base + in->used;
    memset(t, 0, (size + 7) & ~7u);
    ((uint32_t *)t)[0] = type;
    ((uint32_t *)t)[1] = size;
    in->used += (size + 7) & ~7u;
    return t + 8;
}

static void add_string_tag(struct info *in, uint32_t type, const char *s)
{
    uint32_t n = 0;
    while (s[n])
        n++;
    uint8_t *b = tag_begin(in, type, n + 1);
    if (b)
        memcpy(b, s, n + 1);
}

/* LoadOptions as GRUB's chainloader passes them: UCS-2 text ("profile=quick
   safe"). Anything else (a firmware boot entry's binary data, shim's own
   path) is not a command line: printable ASCII only, or nothing. */
static void load_options_to_ascii(const struct efi_loaded_image *li, char *out, unsigned cap)
{
    out[0] = 0;
    if (!li || !li->load_options || li->load_options_size < 2)
        return;
    const char16 *w = li->load_options;
    unsigned n = li->load_options_size / 2, o = 0;
    for (unsigned i = 0; i < n && w[i]; i++) {
        if (w[i] < 0x20 || w[i] > 0x7E) {
            out[0] = 0;
            return;
        }
        if (o + 1 < cap)
            out[o++] = (char)w[i];
    }
    out[o] = 0;
}

static uint8_t read_bool_variable(const char16 *name)
{
    uint8_t v = 0;
    uint64_t size = sizeof v;
    uint32_t attributes = 0;
    efi_status s = st->runtime_services->get_variable(name, &global_variable_guid, &attributes, &size, &v);
    if (s != EFI_SUCCESS || size != 1)
        return BOOTINFO_EFI_VAR_ABSENT;
    return v;
}

static void add_framebuffer_tag(struct info *in)
{
    struct efi_gop *gop = NULL;
    if (bs->locate_protocol(&gop_guid, NULL, (void **)&gop) != EFI_SUCCESS || !gop || !gop->mode)
        return;
    /* The size the Multiboot 2 header asks GRUB for, when the firmware has it. */
    for (uint32_t m = 0; m < gop->mode->max_mode; m++) {
        struct efi_gop_mode_info *mi;
        uint64_t size;
        if (gop->query_mode(gop, m, &size, &mi) != EFI_SUCCESS)
            continue;
        if (mi->width == FB_WANT_WIDTH && mi->height == FB_WANT_HEIGHT &&
            (mi->pixel_format == EFI_PIXEL_RGBX_8 || mi->pixel_format == EFI_PIXEL_BGRX_8)) {
            if (m != gop->mode->mode)
                gop->set_mode(gop, m);
            break;
        }
    }
    const struct efi_gop_mode_info *mi = gop->mode->info;
    if (mi->pixel_format != EFI_PIXEL_RGBX_8 && mi->pixel_format != EFI_PIXEL_BGRX_8)
        return; /* a bitmask or Blt-only mode: the kernel draws 32-bit RGB only */
    uint8_t *b = tag_begin(in, MB2_TAG_FRAMEBUFFER, 24 + 6);
    if (!b)
        return;
    uint64_t addr = gop->mode->frame_buffer_base;
    uint32_t pitch = mi->pixels_per_scan_line * 4;
    memcpy(b, &addr, 8);
    memcpy(b + 8, &pitch, 4);
    memcpy(b + 12, &mi->width, 4);
    memcpy(b + 16, &mi->height, 4);
    b[20] = 32;
    b[21] = MB2_FB_TYPE_RGB;
    bool rgb = mi->pixel_format == EFI_PIXEL_RGBX_8; /* byte 0 red; else byte 0 blue */
    b[24] = rgb ? 0 : 16;
    b[25] = 8;
    b[26] = 8;
    b[27] = 8;
    b[28] = rgb ? 16 : 0;
    b[29] = 8;
}

static void add_acpi_tags(struct info *in)
{
    for (uint64_t i = 0; i < st->number_of_table_entries; i++) {
        const struct efi_configuration_table *ct = &st->configuration_table[i];
        const uint8_t *rsdp = ct->table;
        if (guid_eq(&ct->guid, &acpi20_guid)) {
            uint32_t len; /* ACPI 6.5, 5.2.5.3: the RSDP's Length field, 36 for revision 2 */
            memcpy(&len, rsdp + 20, 4);
            if (len < 36 || len > 64)
                len = 36;
            uint8_t *b = tag_begin(in, MB2_TAG_ACPI_NEW, len);
            if (b)
                memcpy(b, rsdp, len);
        } else if (guid_eq(&ct->guid, &acpi10_guid)) {
            uint8_t *b = tag_begin(in, MB2_TAG_ACPI_OLD, 20);
            if (b)
                memcpy(b, rsdp, 20);
        }
    }
}

/* The memory-map conversion GRUB's multiboot2 uses on EFI
   (grub-core/mmap/efi/mmap.c): what boot services and loaders held is
   free once they are left. */
static uint32_t mb2_memory_type(uint32_t efi_type)
{
    switch (efi_type) {
    case EFI_LOADER_CODE:
    case EFI_LOADER_DATA:
    case EFI_BOOT_SERVICES_CODE:
    case EFI_BOOT_SERVICES_DATA:
    case EFI_CONVENTIONAL_MEMORY:
        return MEM_AVAILABLE;
    case EFI_ACPI_RECLAIM_MEMORY:
        return MEM_ACPI_RECLAIMABLE;
    case EFI_ACPI_MEMORY_NVS:
        return MEM_ACPI_NVS;
    case EFI_UNUSABLE_MEMORY:
        return MEM_BAD;
    default:
        return MEM_RESERVED;
    }
}

/* Written after the last GetMemoryMap and before ExitBootServices: no boot
   service may be called in between (it could change the map). Adjacent
   entries of one type are merged: firmware maps run to 100 entries. */
static bool add_mmap_tag(struct info *in, const uint8_t *map, uint64_t map_size, uint64_t desc_size, uint32_t room_used)
{
    in->used = room_used;
    uint8_t *b = tag_begin(in, MB2_TAG_MMAP, 8);
    if (!b)
        return false;
    uint32_t *size_field = (uint32_t *)(b - 4);
    ((uint32_t *)b)[0] = 24; /* entry size */
    ((uint32_t *)b)[1] = 0;  /* entry version */
    uint8_t *entries = b + 8;
    uint32_t count = 0;
    uint64_t last_end = 0;
    uint32_t last_type = 0;
    for (uint64_t off = 0; off + desc_size <= map_size; off += desc_size) {
        const struct efi_memory_descriptor *d = (const void *)(map + off);
        uint64_t base = d->physical_start, len = d->pages * EFI_PAGE_SIZE;
        uint32_t type = mb2_memory_type(d->type);
        if (count && type == last_type && base == last_end) {
            uint64_t l;
            memcpy(&l, entries + (count - 1) * 24 + 8, 8);
            l += len;
            memcpy(entries + (count - 1) * 24 + 8, &l, 8);
        } else {
            if ((uint32_t)(entries - in->base) + (count + 1) * 24 + 8 > in->cap)
                return false;
            uint8_t *e = entries + count * 24;
            memcpy(e, &base, 8);
            memcpy(e + 8, &len, 8);
            memcpy(e + 16, &type, 4);
            memset(e + 20, 0, 4);
            count++;
        }
        last_end = base + len;
        last_type = type;
    }
    *size_field = 16 + count * 24;
    in->used = (uint32_t)(entries - in->base) + ((count * 24 + 7) & ~7u);
    /* the end tag and total_size */
    ((uint32_t *)(in->base + in->used))[0] = MB2_TAG_END;
    ((uint32_t *)(in->base + in->used))[1] = 8;
    in->used += 8;
    ((uint32_t *)in->base)[0] = in->used;
    ((uint32_t *)in->base)[1] = 0;
    return true;
}

typedef void (*kernel_entry64)(void);

EFIAPI efi_status efi_main(efi_handle image, struct efi_system_table *system_table)
{
    st = system_table;
    bs = st->boot_services;
    bs->set_watchdog_timer(0, 0, 0, NULL);

    uint64_t payload_bytes = (uint64_t)(payload_end - payload_start);
    if (payload_bytes != KERNEL_LOAD_END - KERNEL_IMAGE_START)
        return fail("the payload is not the kernel this entry was built for", EFI_LOAD_ERROR);
    /* start64 loads a 4-level PML4; under 5-level paging (CR4.LA57, which
       long mode cannot clear) that CR3 would map nothing we meant: refuse
       here, while the firmware can still say so (Intel SDM vol. 3A, 4.5). */
    uint64_t cr4;
    __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
    if (cr4 & (1ull << 12))
        return fail("the firmware runs with 5-level paging (CR4.LA57), which this kernel does not set up", EFI_UNSUPPORTED);

    /* The kernel at its link address (linker.ld), bss included. Loader
       code, not data: firmware that maps data pages no-execute (EDK2's
       NX memory protection policy) still lets start64 run there on its
       page tables, until start64 loads ours. */
    uint64_t kernel = KERNEL_IMAGE_START;
    uint64_t kernel_pages = (KERNEL_BSS_END - KERNEL_IMAGE_START + EFI_PAGE_SIZE - 1) / EFI_PAGE_SIZE;
    efi_status s = bs->allocate_pages(EFI_ALLOCATE_ADDRESS, EFI_LOADER_CODE, kernel_pages, &kernel);
    if (s != EFI_SUCCESS)
        return fail("the kernel's memory at 1 MiB is taken", s);

    uint64_t info_addr = BELOW_4G, map_addr = BELOW_4G;
    s = bs->allocate_pages(EFI_ALLOCATE_MAX_ADDRESS, EFI_LOADER_DATA, INFO_BYTES / EFI_PAGE_SIZE, &info_addr);
    if (s == EFI_SUCCESS)
        s = bs->allocate_pages(EFI_ALLOCATE_MAX_ADDRESS, EFI_LOADER_DATA, MAP_BYTES / EFI_PAGE_SIZE, &map_addr);
    if (s != EFI_SUCCESS)
        return fail("no memory below 4 GiB for the boot information", s);

    struct info in = {(uint8_t *)(uintptr_t)info_addr, 8, INFO_BYTES};
    memset(in.base, 0, INFO_BYTES);

    struct efi_loaded_image *li = NULL;
    bs->handle_protocol(image, &loaded_image_guid, (void **)&li);
    char cmdline[512];
    load_options_to_ascii(li, cmdline, sizeof cmdline);
    add_string_tag(&in, MB2_TAG_CMDLINE, cmdline);

    /* Short: the banner's Boot line holds it and the command line. */
    const char *loader = "clockbench EFI";
    add_string_tag(&in, MB2_TAG_LOADER, loader);

    uint8_t *efi = tag_begin(&in, BOOTINFO_MB2_TAG_EFI_STATE, BOOTINFO_EFI_STATE_BYTES + BOOTINFO_EFI_VENDOR_MAX);
    if (efi) {
        void *shim = NULL;
        efi[BOOTINFO_EFI_STATE_VERSION] = 1;
        efi[BOOTINFO_EFI_STATE_SECURE_BOOT] = read_bool_variable(u"SecureBoot");
        efi[BOOTINFO_EFI_STATE_SETUP_MODE] = read_bool_variable(u"SetupMode");
        efi[BOOTINFO_EFI_STATE_SHIM] = bs->locate_protocol(&shim_lock_guid, NULL, &shim) == EFI_SUCCESS && shim;
        memcpy(efi + BOOTINFO_EFI_STATE_FW_REVISION, &st->firmware_revision, 4);
        memcpy(efi + BOOTINFO_EFI_STATE_UEFI_REVISION, &st->hdr.revision, 4);
        /* the firmware's vendor string, printable ASCII only */
        unsigned n = 0;
        for (const char16 *v = st->firmware_vendor; v && *v && n + 1 < BOOTINFO_EFI_VENDOR_MAX; v++)
            efi[BOOTINFO_EFI_STATE_VENDOR + n++] = *v >= 0x20 && *v < 0x7F ? (char)*v : '?';
    }
    uint8_t *est = tag_begin(&in, MB2_TAG_EFI64, 8);
    if (est) {
        uint64_t p = (uint64_t)(uintptr_t)st;
        memcpy(est, &p, 8);
    }
    add_acpi_tags(&in);
    add_framebuffer_tag(&in);

    uint8_t *dst = (uint8_t *)(uintptr_t)kernel;
    memcpy(dst, payload_start, payload_bytes);
    memset(dst + payload_bytes, 0, KERNEL_BSS_END - KERNEL_LOAD_END);

    /* ExitBootServices with the key of the map just read; a stale key
       (the firmware changed the map meanwhile: EFI_INVALID_PARAMETER)
       means read the map again and retry (UEFI 2.10, 7.4.6). */
    uint32_t before_map = in.used;
    for (int tries = 0;; tries++) {
        uint64_t map_size = MAP_BYTES, key = 0, desc_size = 0;
        uint32_t desc_version = 0;
        s = bs->get_memory_map(&map_size, (struct efi_memory_descriptor *)(uintptr_t)map_addr, &key, &desc_size,
                               &desc_version);
        /* after one failed ExitBootServices only GetMemoryMap, ExitBootServices
           and the allocation services may be called (UEFI 2.10, 7.4.6): no
           console and no Stall then, so a failure returns its status unsaid */
        if (s != EFI_SUCCESS)
            return tries ? s : fail("GetMemoryMap failed", s);
        if (!add_mmap_tag(&in, (const uint8_t *)(uintptr_t)map_addr, map_size, desc_size, before_map))
            return tries ? EFI_BUFFER_TOO_SMALL : fail("the memory map does not fit the boot information", EFI_BUFFER_TOO_SMALL);
        s = bs->exit_boot_services(image, key);
        if (s == EFI_SUCCESS)
            break;
        if (s != EFI_INVALID_PARAMETER || tries + 1 == MAX_EXIT_TRIES)
            return s;
    }

    /* No boot services from here: into the kernel, never to return. */
    __asm__ volatile("cli\n\t"
                     "jmp *%2"
                     :
                     : "a"((uint32_t)MB2_BOOT_MAGIC), "b"((uint32_t)info_addr), "r"((uint64_t)KERNEL_START64)
                     : "memory");
    __builtin_unreachable();
}

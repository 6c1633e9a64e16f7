/* libFuzzer harness for the ACPI parser (lib/acpi.c), built for the host
   under AddressSanitizer and UndefinedBehaviorSanitizer by `make fuzz`.

   Input: flags (1 byte), base (8 bytes, little endian), an RSDP (36 bytes),
   then an image of physical memory starting at base. Flag bit 0 repairs the
   checksums of the RSDP, the root table and every table it lists, so the
   fuzzer reaches the field parsing instead of stopping at checksums; with it
   clear, the checksums are left as they came. Bit 1 hands the RSDP over as
   the ACPI 1.0 boot tag instead of the 2.0+ one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/acpi.h"

#define HEADER 45

struct memory {
    const uint8_t *bytes;
    uint64_t base, len;
};

static const void *map(void *ctx, uint64_t phys, uint64_t len, const char **why)
{
    const struct memory *m = ctx;
    if (phys < m->base || phys - m->base > m->len || len > m->len - (phys - m->base)) {
        *why = "outside the fuzz input";
        return 0;
    }
    return m->bytes + (phys - m->base);
}

static uint32_t ld32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static void fix(uint8_t *p, uint32_t len, uint32_t at)
{
    p[at] = 0;
    p[at] = (uint8_t)(0 - acpi_checksum(p, len));
}

/* Repairs the checksum of the table at phys if it lies within memory. */
static uint8_t *fix_table(struct memory *m, uint8_t *mem, uint64_t phys)
{
    if (phys < m->base || phys - m->base > m->len || m->len - (phys - m->base) < 36)
        return 0;
    uint8_t *t = mem + (phys - m->base);
    uint32_t len = ld32(t + 4);
    if (len < 36 || len > m->len - (phys - m->base))
        return 0;
    fix(t, len, 9);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEADER)
        return 0;
    uint8_t flags = data[0];
    uint8_t rsdp[36];
    memcpy(rsdp, data + 9, sizeof rsdp);
    size_t mem_len = size - HEADER;
    uint8_t *mem = malloc(mem_len ? mem_len : 1);
    memcpy(mem, data + HEADER, mem_len);
    struct memory m = {mem, ld64(data + 1), mem_len};

    if (flags & 1) {
        fix(rsdp, 20, 8);
        if (rsdp[15] >= 2) {
            rsdp[20] = 36; rsdp[21] = rsdp[22] = rsdp[23] = 0;
            fix(rsdp, 36, 32);
        }
        uint64_t root = rsdp[15] >= 2 && ld64(rsdp + 24) ? ld64(rsdp + 24) : ld32(rsdp + 16);
        unsigned entry = rsdp[15] >= 2 && ld64(rsdp + 24) ? 8 : 4;
        uint8_t *r = fix_table(&m, mem, root);
        if (r) {
            uint32_t n = (ld32(r + 4) - 36) / entry;
            for (uint32_t i = 0; i < n && i < 64; i++)
                fix_table(&m, mem, entry == 8 ? ld64(r + 36 + 8 * i) : ld32(r + 36 + 4 * i));
            fix_table(&m, mem, root); /* entries may overlap the root: repair it last, bounds checked again */
        }
    }
    struct acpi_mapper mapper = {map, &m};
    static struct acpi_info info;
    if (flags & 2)
        acpi_discover(&mapper, 0, 0, rsdp, ACPI_FROM_MULTIBOOT2, &info);
    else
        acpi_discover(&mapper, rsdp, sizeof rsdp, 0, ACPI_FROM_MULTIBOOT2, &info);
    free(mem);
    return 0;
}

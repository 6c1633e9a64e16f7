/* The I/O APIC (Intel 82093AA datasheet, 3.0 "Register Description"; ICH9
   datasheet 13.5): an index/data register pair in MMIO, one 64-bit
   redirection entry per input pin. Found through the MADT (ACPI 6.5,
   5.2.12.3); each entry starts masked. */
#ifndef CLOCKBENCH_IOAPIC_H
#define CLOCKBENCH_IOAPIC_H

#include <stdbool.h>
#include <stdint.h>

#define IOAPIC_REGSEL                0x00
#define IOAPIC_WINDOW                0x10
#define IOAPIC_MMIO_SIZE             0x20
#define IOAPIC_REG_ID                0x00
#define IOAPIC_REG_VERSION           0x01
#define   IOAPIC_VERSION_MAX_SHIFT   16             /* bits 23:16: the last redirection entry */
#define   IOAPIC_VERSION_MAX_MASK    0xFFu
#define IOAPIC_REG_REDIR(pin)        (0x10 + 2 * (pin)) /* low half; the high half follows */
#define   REDIR_VECTOR_MASK          0xFFull
#define   REDIR_DELIVERY_FIXED       (0ull << 8)
#define   REDIR_DEST_PHYSICAL        (0ull << 11)
#define   REDIR_ACTIVE_LOW           (1ull << 13)
#define   REDIR_LEVEL                (1ull << 15)
#define   REDIR_MASKED               (1ull << 16)
#define   REDIR_DEST_SHIFT           56             /* physical APIC ID, 8 bits */

struct ioapic {
    uint64_t base;      /* MMIO, identity-mapped uncached by the caller */
    uint32_t gsi_base;  /* the first global system interrupt it serves */
    uint32_t pins;      /* redirection entries */
};

static inline uint32_t ioapic_read(const struct ioapic *io, uint32_t reg)
{
    *(volatile uint32_t *)(uintptr_t)(io->base + IOAPIC_REGSEL) = reg;
    return *(volatile uint32_t *)(uintptr_t)(io->base + IOAPIC_WINDOW);
}

static inline void ioapic_write(const struct ioapic *io, uint32_t reg, uint32_t v)
{
    *(volatile uint32_t *)(uintptr_t)(io->base + IOAPIC_REGSEL) = reg;
    *(volatile uint32_t *)(uintptr_t)(io->base + IOAPIC_WINDOW) = v;
}

/* Reads the version register for the pin count. False (with why) when the
   registers read as all ones or give no pins. Faults are the caller's. */
bool ioapic_init(struct ioapic *io, uint64_t base, uint32_t gsi_base, const char **why);
/* Programs pin: fixed delivery of vector to the physical APIC ID dest, with
   the given trigger and polarity, masked or not. The mask bit is written
   last when unmasking and first when masking. */
void ioapic_route(const struct ioapic *io, uint32_t pin, uint8_t vector, uint32_t dest, bool level, bool active_low, bool masked);
void ioapic_mask(const struct ioapic *io, uint32_t pin);
uint64_t ioapic_entry(const struct ioapic *io, uint32_t pin);

#endif

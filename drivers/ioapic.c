/* I/O APIC driver (see ioapic.h). */
#include "ioapic.h"

bool ioapic_init(struct ioapic *io, uint64_t base, uint32_t gsi_base, const char **why)
{
    *io = (struct ioapic){.base = base, .gsi_base = gsi_base};
    uint32_t version = ioapic_read(io, IOAPIC_REG_VERSION);
    if (version == 0xFFFFFFFFu) {
        *why = "its version register reads all ones (nothing answers at that address)";
        return false;
    }
    io->pins = ((version >> IOAPIC_VERSION_MAX_SHIFT) & IOAPIC_VERSION_MAX_MASK) + 1;
    return true;
}

uint64_t ioapic_entry(const struct ioapic *io, uint32_t pin)
{
    return ioapic_read(io, IOAPIC_REG_REDIR(pin)) | (uint64_t)ioapic_read(io, IOAPIC_REG_REDIR(pin) + 1) << 32;
}

void ioapic_mask(const struct ioapic *io, uint32_t pin)
{
    uint32_t low = ioapic_read(io, IOAPIC_REG_REDIR(pin));
    ioapic_write(io, IOAPIC_REG_REDIR(pin), low | (uint32_t)REDIR_MASKED);
}

void ioapic_route(const struct ioapic *io, uint32_t pin, uint8_t vector, uint32_t dest, bool level, bool active_low, bool masked)
{
    uint64_t e = vector | REDIR_DELIVERY_FIXED | REDIR_DEST_PHYSICAL | (level ? REDIR_LEVEL : 0) |
                 (active_low ? REDIR_ACTIVE_LOW : 0) | (uint64_t)(dest & 0xFF) << REDIR_DEST_SHIFT;
    ioapic_mask(io, pin);
    ioapic_write(io, IOAPIC_REG_REDIR(pin) + 1, (uint32_t)(e >> 32));
    ioapic_write(io, IOAPIC_REG_REDIR(pin), (uint32_t)e | (masked ? (uint32_t)REDIR_MASKED : 0));
}

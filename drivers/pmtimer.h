/* ACPI power-management timer (ACPI 6.5, 4.8.3.3 "Power Management Timer"):
   3.579545 MHz, 24 or 32 bits wide, in I/O or memory space. */
#ifndef CLOCKBENCH_PMTIMER_H
#define CLOCKBENCH_PMTIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu.h"

#define PMTIMER_HZ 3579545u /* ACPI 6.5, 4.8.3.3 */

struct pmtimer {
    bool io;          /* I/O port, else memory-mapped */
    uint64_t address; /* port or physical address (identity-mapped) */
    unsigned width;   /* 24 or 32 */
    uint32_t mask;
    uint64_t disagreements; /* triple reads that did not agree (pmtimer_read_verified) */
};

static inline uint32_t pmtimer_read(const struct pmtimer *p)
{
    uint32_t v = p->io ? inl((uint16_t)p->address) : *(volatile uint32_t *)(uintptr_t)p->address;
    return v & p->mask;
}

/* The difference b - a modulo the timer's width. */
static inline uint32_t pmtimer_delta(const struct pmtimer *p, uint32_t a, uint32_t b) { return (b - a) & p->mask; }

/* Sets up the accessor and checks the counter advances (bounded) and does
   not step backwards over a short run of reads. */
bool pmtimer_init(struct pmtimer *p, bool io, uint64_t address, bool width32, char *why, unsigned why_len);

/* Linux's workaround for chipsets whose latch is broken (acpi_pm.c):
   read three times and keep the middle value only when the three are in
   order; otherwise count a disagreement and try again (bounded). */
uint32_t pmtimer_read_verified(struct pmtimer *p);

#endif

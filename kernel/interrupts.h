/* Interrupts: counted and time-stamped per vector. Every vector from 32 up
   has a stub (boot/irq.asm) that reads the TSC first and then calls
   irq_dispatch. Interrupts stay off (IF = 0) for the whole run except
   inside the timer-latency experiment, which sets up the controllers with
   irq_setup() first. The counts are the boot CPU's; an AP takes interrupts only
   in a job that arms them, and its wake-up IPI while it sleeps (between
   jobs, or napping inside one: smp.h). */
#ifndef CLOCKBENCH_INTERRUPTS_H
#define CLOCKBENCH_INTERRUPTS_H

#include <stdbool.h>
#include <stdint.h>

/* The vectors clockbench uses. The 8259s are moved to 0x20-0x2F, out of
   the exception range, and masked. Vectors 0xF0 and above hold the
   spurious vector (also in smp.c) and the APs' wake-up IPI (VEC_SMP_WAKE,
   smp.h). */
#define VEC_PIC_BASE        0x20
#define VEC_TIMER_LAPIC     0x40   /* the local APIC timer, one-shot or TSC-deadline */
#define VEC_TIMER_HPET      0x41   /* HPET comparator 0 */
#define VEC_TIMER_PIT       0x42   /* PIT channel 0 (IRQ 0) */
#define VEC_SPURIOUS        0xFF   /* the local APIC's spurious vector (SVR) */

struct irq_state {
    volatile uint64_t count[256];      /* interrupts taken, per vector */
    volatile uint64_t entry_tsc[256];  /* TSC at the stub's entry, last interrupt of each vector */
    volatile uint64_t unexpected;      /* vectors no one armed (not the spurious vector) */
    volatile uint8_t last_unexpected;
    volatile uint64_t spurious;        /* the APIC's spurious vector */
    volatile uint64_t total;           /* every interrupt taken */
};

extern struct irq_state irq;

/* Moves the 8259s off the exception vectors and masks them, and sets the
   local APIC's task priority to accept every vector. Idempotent. False with
   why when the local APIC is not usable. */
bool irq_setup(const char **why);
/* Marks vector as one the caller arms: its interrupts are not counted as
   unexpected. */
void irq_expect(uint8_t vector, bool expected);

static inline void irq_enable(void) { __asm__ volatile("sti" ::: "memory"); }
static inline void irq_disable(void) { __asm__ volatile("cli" ::: "memory"); }

/* Called by boot/irq.asm with interrupts off. */
void irq_dispatch(uint64_t vector, uint64_t entry_tsc);

#endif

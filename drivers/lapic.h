/* The local APIC, in xAPIC (MMIO) or x2APIC (MSR) mode: enough to know our
   own APIC ID and to send INIT and STARTUP IPIs. Intel SDM vol. 3A,
   chapter 11 (10 in editions before 2023): 11.4.4 IA32_APIC_BASE, 11.4.6
   the ID register, 11.6.1 the ICR, 11.12 x2APIC mode (11.12.1: register
   r at MSR 0x800 + r/16; 11.12.9: the ICR is one 64-bit MSR, 0x830). */
#ifndef CLOCKBENCH_LAPIC_H
#define CLOCKBENCH_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_APIC_BASE                0x1Bu
#define   APIC_BASE_BSP              (1ull << 8)
#define   APIC_BASE_EXTD             (1ull << 10)   /* x2APIC mode */
#define   APIC_BASE_ENABLE           (1ull << 11)   /* global enable */
#define   APIC_BASE_ADDR_MASK        0x000FFFFFFFFFF000ull
#define LAPIC_MMIO_SIZE              0x1000

/* xAPIC MMIO offsets; the x2APIC MSR is 0x800 + offset / 16. */
#define LAPIC_ID                     0x020
#define   LAPIC_ID_XAPIC_SHIFT       24             /* xAPIC: 8-bit ID in bits 31:24 */
#define LAPIC_VERSION                0x030
#define LAPIC_SVR                    0x0F0
#define   LAPIC_SVR_ENABLE           (1u << 8)      /* software enable */
#define   LAPIC_SVR_VECTOR_MASK      0xFFu
#define LAPIC_TPR                    0x080          /* task priority: 0 accepts every vector */
#define LAPIC_EOI                    0x0B0
#define LAPIC_ESR                    0x280
#define LAPIC_ICR_LOW                0x300
#define LAPIC_ICR_HIGH               0x310
#define   ICR_VECTOR_MASK            0xFFu
#define   ICR_DELIVERY_FIXED         (0u << 8)
#define   ICR_DELIVERY_INIT          (5u << 8)
#define   ICR_DELIVERY_STARTUP       (6u << 8)
#define   ICR_PENDING                (1u << 12)     /* xAPIC only: send pending */
#define   ICR_LEVEL_ASSERT           (1u << 14)
#define   ICR_TRIGGER_LEVEL          (1u << 15)
#define   ICR_XAPIC_DEST_SHIFT       24             /* in ICR_HIGH */
#define   ICR_X2APIC_DEST_SHIFT      32             /* in the 64-bit MSR */
#define MSR_X2APIC_FIRST             0x800u

/* The APIC timer (SDM 11.5.4): the LVT entry, the divide configuration and
   the initial and current counts; TSC-deadline mode arms through an MSR
   (11.5.4.1). */
#define LAPIC_LVT_TIMER              0x320
#define   LVT_VECTOR_MASK            0xFFu
#define   LVT_MASKED                 (1u << 16)
#define   LVT_TIMER_ONESHOT          (0u << 17)
#define   LVT_TIMER_PERIODIC         (1u << 17)
#define   LVT_TIMER_TSC_DEADLINE     (2u << 17)
#define LAPIC_TIMER_INITIAL          0x380
#define LAPIC_TIMER_CURRENT          0x390
#define LAPIC_TIMER_DIVIDE           0x3E0
#define   TIMER_DIVIDE_BY_1          0xBu           /* bits 3,1:0 = 1011b */
#define MSR_TSC_DEADLINE             0x6E0u

struct lapic {
    bool x2apic;         /* x2APIC mode: registers are MSRs */
    uint64_t base;       /* xAPIC MMIO base (physical = virtual: identity map) */
    uint64_t apic_base_msr;
};

static inline uint32_t lapic_read(const struct lapic *l, uint32_t reg);
static inline void lapic_write(const struct lapic *l, uint32_t reg, uint32_t v);

/* From IA32_APIC_BASE: false with why when the APIC is globally disabled.
   The caller maps base (uncached) before any register access in xAPIC
   mode, and runs this inside a probe (the MSR may fault). */
bool lapic_init(struct lapic *l, uint64_t apic_base_msr, const char **why);
/* Switches this CPU's APIC into x2APIC mode (SDM 11.12.1: xAPIC -> x2APIC
   is allowed directly; the reverse needs a disable first). */
void lapic_enable_x2apic(struct lapic *l);
uint32_t lapic_id(const struct lapic *l);
/* The APIC timer as a free-running counter: periodic, masked, divide by 1,
   reloading from 0xFFFFFFFF (SDM 11.5.4). */
void lapic_timer_free_run(const struct lapic *l);
/* Sends icr_low to dest. In xAPIC mode waits (bounded by spins and a TSC
   deadline) for the delivery-status bit to clear; false on timeout. */
bool lapic_send_ipi(const struct lapic *l, uint32_t dest, uint32_t icr_low, uint64_t deadline_ticks);

/* Ends the interrupt being serviced (11.8.5): not for the spurious vector. */
static inline void lapic_eoi(const struct lapic *l);

/* --- accessors --- */
#include "cpu.h"

static inline uint32_t lapic_read(const struct lapic *l, uint32_t reg)
{
    if (l->x2apic)
        return (uint32_t)rdmsr(MSR_X2APIC_FIRST + (reg >> 4));
    return *(volatile uint32_t *)(uintptr_t)(l->base + reg);
}

static inline void lapic_write(const struct lapic *l, uint32_t reg, uint32_t v)
{
    if (l->x2apic)
        wrmsr(MSR_X2APIC_FIRST + (reg >> 4), v);
    else
        *(volatile uint32_t *)(uintptr_t)(l->base + reg) = v;
}

static inline void lapic_eoi(const struct lapic *l) { lapic_write(l, LAPIC_EOI, 0); }

#endif

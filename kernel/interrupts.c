/* Interrupt bookkeeping (see interrupts.h). */
#include "interrupts.h"

#include "../drivers/cpu.h"
#include "../drivers/pic.h"
#include "finish.h"
#include "smp.h"

struct irq_state irq;
static bool expected[256];
static bool ready;

bool irq_setup(const char **why)
{
    if (ready)
        return true;
    if (!smp_bsp_apic()) {
        *why = smp.why[0] ? smp.why : "the local APIC is not usable";
        return false;
    }
    /* the 8259s moved off the exception vectors and masked: the APIC takes
       the interrupts; on a machine without them their ports are not touched */
    if (!machine_pic_ruled_out())
        pic_remap_and_mask(VEC_PIC_BASE);
    lapic_write(&smp.lapic, LAPIC_TPR, 0);
    ready = true;
    return true;
}

void irq_expect(uint8_t vector, bool on) { expected[vector] = on; }

void irq_dispatch(uint64_t vector, uint64_t entry_tsc)
{
    vector &= 0xFF;
    if (vector == VEC_SMP_WAKE) {
        /* an AP woken for a job (smp.c), not counted: the counts are the boot CPU's */
        lapic_eoi(&smp.lapic);
        return;
    }
    irq.entry_tsc[vector] = entry_tsc;
    irq.count[vector]++;
    irq.total++;
    if (vector == VEC_SPURIOUS) {
        irq.spurious++; /* no EOI for the spurious vector (SDM 11.9) */
        return;
    }
    if (!expected[vector]) {
        irq.unexpected++;
        irq.last_unexpected = (uint8_t)vector;
    }
    if (vector >= VEC_PIC_BASE && vector < VEC_PIC_BASE + 16) {
        /* Only a spurious 8259 IRQ (7 or 15) gets here, the lines being
           masked; the slave's also needs the master's acknowledgement. */
        if (vector == VEC_PIC_BASE + 15)
            outb(PIC1_COMMAND, 0x20);
        return;
    }
    lapic_eoi(&smp.lapic);
}

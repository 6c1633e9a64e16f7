/* 8259A set-up (see pic.h). Port 0x80 writes give the old parts time
   between initialisation words, as the PC/AT BIOS does. */
#include "pic.h"

#include "cpu.h"

static void io_wait(void) { outb(0x80, 0); }

void pic_remap_and_mask(uint8_t base)
{
    outb(PIC1_DATA, PIC_MASK_ALL);
    outb(PIC2_DATA, PIC_MASK_ALL);
    outb(PIC1_COMMAND, PIC_ICW1_INIT_ICW4), io_wait();
    outb(PIC2_COMMAND, PIC_ICW1_INIT_ICW4), io_wait();
    outb(PIC1_DATA, base), io_wait();                       /* ICW2: vector base */
    outb(PIC2_DATA, (uint8_t)(base + 8)), io_wait();
    outb(PIC1_DATA, 1u << PIC_CASCADE_IRQ), io_wait();      /* ICW3: slave on IRQ 2 */
    outb(PIC2_DATA, PIC_CASCADE_IRQ), io_wait();            /* ICW3: its cascade identity */
    outb(PIC1_DATA, PIC_ICW4_8086), io_wait();
    outb(PIC2_DATA, PIC_ICW4_8086), io_wait();
    outb(PIC1_DATA, PIC_MASK_ALL);
    outb(PIC2_DATA, PIC_MASK_ALL);
}

/* 8259A set-up (see pic.h). A pause of at least 1 us between
   initialisation words gives old discrete parts the time the PC/AT BIOS
   gave them with port 0x80 writes (io_delay in cpu.h: the same time, no
   port: 0x80 is a debug port on Cloud Hypervisor and missing on
   Firecracker, and both log every write). */
#include "pic.h"

#include "cpu.h"

static void io_wait(void) { io_delay(); }

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

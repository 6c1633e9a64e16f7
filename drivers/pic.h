/* The two 8259A interrupt controllers of the PC (Intel 8259A datasheet,
   "Initialization Command Words"; ports as in the PC/AT). clockbench
   takes interrupts through the local and I/O APICs only: the PICs are
   moved off the exception vectors and fully masked before interrupts are
   ever enabled, so a stray IRQ can arrive at worst as a counted, unexpected
   vector, never as a fake exception. */
#ifndef CLOCKBENCH_PIC_H
#define CLOCKBENCH_PIC_H

#include <stdint.h>

#define PIC1_COMMAND    0x20
#define PIC1_DATA       0x21
#define PIC2_COMMAND    0xA0
#define PIC2_DATA       0xA1
#define   PIC_ICW1_INIT_ICW4 0x11   /* ICW1: initialise, ICW4 follows, cascade, edge */
#define   PIC_ICW4_8086      0x01
#define   PIC_CASCADE_IRQ    2      /* the slave sits on the master's IRQ 2 */
#define   PIC_MASK_ALL       0xFF

/* Remaps the master to vectors base..base+7 and the slave to base+8..+15,
   then masks every line. */
void pic_remap_and_mask(uint8_t base);

#endif

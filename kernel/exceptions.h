/* CPU exceptions: the IDT (all 256 vectors; 32-255 go to interrupts.c) and the handler that either
   recovers an armed probe (probe.h) or reports the fault and ends the run. */
#ifndef CLOCKBENCH_EXCEPTIONS_H
#define CLOCKBENCH_EXCEPTIONS_H

#include <stdint.h>

#include "trap.h"

void exceptions_init(void);
/* Points IDT gate `vector` at handler (a 64-bit interrupt gate, ring 0). */
void idt_set(unsigned vector, uint64_t handler);
void exception_dispatch(struct trap_frame *f);

#endif

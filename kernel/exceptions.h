/* CPU exceptions: the IDT (all 256 vectors; 32-255 go to interrupts.c) and the handler that either
   recovers an armed probe (probe.h) or reports the fault and ends the run. */
#ifndef CLOCKBENCH_EXCEPTIONS_H
#define CLOCKBENCH_EXCEPTIONS_H

#include <stdint.h>

/* Laid out by boot/exceptions.asm: pushed registers, then vector and error
   code, then what the CPU pushed (Intel SDM vol. 3A, 6.14.1). */
struct trap_frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector, error_code;
    uint64_t rip, cs, rflags, rsp, ss;
};

#define VEC_DIVIDE 0
#define VEC_INVALID_OPCODE 6
#define VEC_DOUBLE_FAULT 8
#define VEC_STACK 12
#define VEC_GENERAL_PROTECTION 13
#define VEC_PAGE_FAULT 14
#define VEC_ALIGNMENT 17

void exceptions_init(void);
/* Points IDT gate `vector` at handler (a 64-bit interrupt gate, ring 0). */
void idt_set(unsigned vector, uint64_t handler);
const char *exception_name(uint64_t vector);
void exception_dispatch(struct trap_frame *f);

#endif

/* What a CPU exception leaves: the frame boot/exceptions.asm builds, the
   vector numbers, and their names (Intel SDM vol. 3A, 6.3.1). Shared by the
   exception handler and the probes it resumes, so neither includes the other. */
#ifndef CLOCKBENCH_TRAP_H
#define CLOCKBENCH_TRAP_H

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

const char *exception_name(uint64_t vector);

#endif

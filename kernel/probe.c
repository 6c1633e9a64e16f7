/* Recoverable probes (see probe.h), on a setjmp/longjmp pair in
   boot/probe_jump.asm. Interrupts are off for the whole run, so the only
   way into the handler while a probe is armed is the probe's own fault. */
#include "probe.h"

#include "../drivers/cpu.h"
#include "../lib/format.h"
#include "percpu.h"
#include "trap.h"

struct probe_jmp {
    uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
};

__attribute__((returns_twice)) int probe_setjmp(struct probe_jmp *buf);
__attribute__((noreturn)) void probe_longjmp(struct probe_jmp *buf, int value);

/* The armed probe lives in the CPU's own slot: a probe on one CPU must
   never catch another CPU's fault. */
#define armed (this_cpu()->probe_armed)
#define armed_fault (this_cpu()->probe_fault)

bool probe_run(probe_fn fn, void *ctx, struct probe_fault *fault)
{
    struct probe_jmp jb;
    struct probe_jmp *volatile outer = armed;
    struct probe_fault *volatile outer_fault = armed_fault;
    if (probe_setjmp(&jb) == 0) {
        armed = &jb;
        armed_fault = fault;
        fn(ctx);
        armed = outer;
        armed_fault = outer_fault;
        return true;
    }
    armed = outer;
    armed_fault = outer_fault;
    return false;
}

static bool recoverable(uint64_t vector)
{
    switch (vector) {
    case VEC_DIVIDE:
    case VEC_INVALID_OPCODE:
    case VEC_STACK:
    case VEC_GENERAL_PROTECTION:
    case VEC_PAGE_FAULT:
    case VEC_ALIGNMENT:
        return true;
    default:
        return false;
    }
}

void probe_recover(const struct trap_frame *f, uint64_t cr2)
{
    if (!armed || !recoverable(f->vector))
        return;
    struct probe_fault *out = armed_fault;
    out->vector = f->vector;
    out->error_code = f->error_code;
    out->rip = f->rip;
    out->cr2 = cr2;
    if (f->vector == VEC_PAGE_FAULT)
        fmt_format(out->text, sizeof out->text, "%s at address 0x%llx", exception_name(f->vector),
                   (unsigned long long)cr2);
    else
        fmt_format(out->text, sizeof out->text, "%s, error code 0x%llx", exception_name(f->vector),
                   (unsigned long long)f->error_code);
    struct probe_jmp *jb = armed;
    armed = 0;
    probe_longjmp(jb, 1);
}

struct msr_ctx {
    uint32_t msr;
    uint64_t value;
};

static void msr_read_probe(void *p)
{
    struct msr_ctx *c = p;
    c->value = rdmsr(c->msr);
}

bool msr_read_safe(uint32_t msr, uint64_t *value, struct probe_fault *fault)
{
    struct msr_ctx c = {msr, 0};
    if (!probe_run(msr_read_probe, &c, fault))
        return false;
    *value = c.value;
    return true;
}

/* IDT and exception reporting. Intel SDM vol. 3A, 6.3.1 (vector table) and
   6.14.1 (64-bit IDT gate descriptors). */
#include "exceptions.h"

#include "../drivers/cpu.h"
#include "../lib/record.h"
#include "console.h"
#include "finish.h"
#include "probe.h"

#define IDT_GATE_INTERRUPT 0x8E /* present, ring 0, 64-bit interrupt gate */
#define KERNEL_CS 0x08

struct idt_gate {
    uint16_t offset_low;
    uint16_t selector;
    uint8_t ist;
    uint8_t type_attr;
    uint16_t offset_mid;
    uint32_t offset_high;
    uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct idt_gate) == 16, "IDT gate is 16 bytes");

struct idt_pointer {
    uint16_t limit;
    uint64_t base;
} __attribute__((packed));

extern const uint64_t exception_stubs[32];
extern const uint64_t irq_stubs[224];
static struct idt_gate idt[256];

void idt_set(unsigned vector, uint64_t handler)
{
    idt[vector & 0xFF] = (struct idt_gate){
        .offset_low = (uint16_t)handler,
        .selector = KERNEL_CS,
        .type_attr = IDT_GATE_INTERRUPT,
        .offset_mid = (uint16_t)(handler >> 16),
        .offset_high = (uint32_t)(handler >> 32),
    };
}

/* Vectors 32-255 get the interrupt stubs of boot/irq.asm (interrupts.c
   counts and dispatches them); all 256 gates are present from the start,
   so even an interrupt nobody asked for lands somewhere that counts it. */
void exceptions_init(void)
{
    for (unsigned v = 0; v < 32; v++)
        idt_set(v, exception_stubs[v]);
    for (unsigned v = 32; v < 256; v++)
        idt_set(v, irq_stubs[v - 32]);
    struct idt_pointer p = {sizeof idt - 1, (uint64_t)(uintptr_t)idt};
    __asm__ volatile("lidt %0" ::"m"(p));
}

static int depth;

void exception_dispatch(struct trap_frame *f)
{
    uint64_t cr2 = read_cr2();
    probe_recover(f, cr2); /* returns only when no probe is armed */

    if (depth++ > 0) {
        /* A fault while reporting a fault: say nothing more, just end. */
        run_finish(RUN_CRASHED);
    }
    kprintf("\nFAULT: CPU exception %llu: %s\n", (unsigned long long)f->vector, exception_name(f->vector));
    kprintf("  error code 0x%llx  rip %016llx  cr2 %016llx  rflags %016llx\n", (unsigned long long)f->error_code,
            (unsigned long long)f->rip, (unsigned long long)cr2, (unsigned long long)f->rflags);
    kprintf("  rax %016llx rbx %016llx rcx %016llx rdx %016llx\n", (unsigned long long)f->rax,
            (unsigned long long)f->rbx, (unsigned long long)f->rcx, (unsigned long long)f->rdx);
    kprintf("  rsi %016llx rdi %016llx rbp %016llx rsp %016llx\n", (unsigned long long)f->rsi,
            (unsigned long long)f->rdi, (unsigned long long)f->rbp, (unsigned long long)f->rsp);
    kprintf("  r8  %016llx r9  %016llx r10 %016llx r11 %016llx\n", (unsigned long long)f->r8,
            (unsigned long long)f->r9, (unsigned long long)f->r10, (unsigned long long)f->r11);
    kprintf("  r12 %016llx r13 %016llx r14 %016llx r15 %016llx\n", (unsigned long long)f->r12,
            (unsigned long long)f->r13, (unsigned long long)f->r14, (unsigned long long)f->r15);
    struct record r;
    record_begin(&r, "fault");
    record_u64(&r, "vector", f->vector);
    record_str(&r, "name", exception_name(f->vector));
    record_u64(&r, "error_code", f->error_code);
    record_hex(&r, "rip", f->rip);
    record_hex(&r, "cr2", cr2);
    console_emit_record(&r);
    run_finish(RUN_CRASHED);
}

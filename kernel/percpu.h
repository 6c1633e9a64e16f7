/* Per-CPU state: what code on one CPU must never share by accident with
   code on another (the armed probe, for now). Each CPU's GS base points at
   its own struct percpu (IA32_GS_BASE, Intel SDM vol. 3A, 3.4.4 / AMD APM
   vol. 2, 4.5.3), whose first field points back at itself, so this_cpu()
   is one load whatever CPU runs it. An application processor sets its GS
   base to its own slot before running any shared code. */
#ifndef CLOCKBENCH_PERCPU_H
#define CLOCKBENCH_PERCPU_H

#include <stdint.h>

#define PERCPU_MAX 256   /* as many as lib/acpi.h's ACPI_MAX_CPUS keeps */
#define MSR_GS_BASE 0xC0000101u

struct probe_jmp;
struct probe_fault;

struct percpu {
    struct percpu *self;            /* must stay first: read through %gs:0 */
    uint32_t index;                 /* 0 for the boot CPU */
    struct probe_jmp *probe_armed;  /* the innermost armed probe, or 0 */
    struct probe_fault *probe_fault;
};

extern struct percpu percpu_area[PERCPU_MAX];

/* Points GS at slot `index` (the calling CPU's own). */
void percpu_init(uint32_t index);

static inline struct percpu *this_cpu(void)
{
    struct percpu *p;
    __asm__ volatile("mov %%gs:0, %0" : "=r"(p));
    return p;
}

#endif

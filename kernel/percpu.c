/* Per-CPU slots (see percpu.h). */
#include "percpu.h"

#include "../drivers/cpu.h"

struct percpu percpu_area[PERCPU_MAX];

void percpu_init(uint32_t index)
{
    struct percpu *p = &percpu_area[index];
    p->self = p;
    p->index = index;
    wrmsr(MSR_GS_BASE, (uint64_t)(uintptr_t)p);
}

/* Memory for samples, taken from the boot loader's memory map: the largest
   usable region below 4 GiB (identity-mapped at boot) that lies above the
   kernel image, handed out by a bump allocator. */
#ifndef CLOCKBENCH_MEMORY_H
#define CLOCKBENCH_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/bootinfo.h"

struct memory_arena {
    uint64_t base, size, used, peak;
};

/* False (with the arena empty) when the map has no usable region. */
bool memory_init(const struct boot_info *bi);
const struct memory_arena *memory_arena(void);
/* 64-byte aligned; NULL when the arena cannot hold it. */
void *memory_alloc(size_t bytes);
/* Everything allocated since mark is released. */
uint64_t memory_mark(void);
void memory_release(uint64_t mark);

#endif

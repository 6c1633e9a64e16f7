/* Sample memory (see memory.h). */
#include "memory.h"

extern char image_bss_end[];

#define ONE_MIB (1ull << 20)
#define FOUR_GIB (1ull << 32)

static struct memory_arena arena;

bool memory_init(const struct boot_info *bi)
{
    uint64_t floor = ((uint64_t)(uintptr_t)image_bss_end + 0xFFF) & ~0xFFFull;
    if (floor < ONE_MIB)
        floor = ONE_MIB;
    for (int i = 0; i < bi->mem_count; i++) {
        const struct mem_region *r = &bi->mem[i];
        if (r->type != MEM_AVAILABLE)
            continue;
        uint64_t start = r->base, end = r->base + r->length;
        if (end < r->base || end > FOUR_GIB)
            end = FOUR_GIB;
        if (start < floor)
            start = floor;
        start = (start + 0xFFF) & ~0xFFFull;
        end &= ~0xFFFull;
        if (end > start && end - start > arena.size) {
            arena.base = start;
            arena.size = end - start;
        }
    }
    arena.used = arena.peak = 0;
    return arena.size > 0;
}

const struct memory_arena *memory_arena(void) { return &arena; }

void *memory_alloc(size_t bytes)
{
    uint64_t at = (arena.used + 63) & ~63ull;
    if (bytes > arena.size || at > arena.size - bytes)
        return 0;
    arena.used = at + bytes;
    if (arena.used > arena.peak)
        arena.peak = arena.used;
    return (void *)(uintptr_t)(arena.base + at);
}

uint64_t memory_mark(void) { return arena.used; }
void memory_release(uint64_t mark) { arena.used = mark; }

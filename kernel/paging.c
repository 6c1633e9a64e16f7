/* On-demand identity mapping with 2 MiB pages (Intel SDM vol. 3A, 4.5,
   "4-Level Paging"). Page-table pages come from a small static pool. */
#include "paging.h"

#include "../drivers/cpu.h"
#include "../lib/string.h"

#define PTE_PRESENT (1ull << 0)
#define PTE_WRITE (1ull << 1)
#define PTE_PWT (1ull << 3)
#define PTE_PCD (1ull << 4)
#define PTE_HUGE (1ull << 7)
#define PTE_ADDR_MASK 0x000FFFFFFFFFF000ull
#define HUGE_PAGE (1ull << 21)
#define POOL_PAGES 32

static uint64_t pool[POOL_PAGES][512] __attribute__((aligned(4096)));
static int pool_used;

static uint64_t *table_at(uint64_t *entry, bool *ok)
{
    if (!(*entry & PTE_PRESENT)) {
        if (pool_used == POOL_PAGES) {
            *ok = false;
            return 0;
        }
        uint64_t *t = pool[pool_used++];
        memset(t, 0, 4096);
        *entry = (uint64_t)(uintptr_t)t | PTE_PRESENT | PTE_WRITE;
    }
    return (uint64_t *)(uintptr_t)(*entry & PTE_ADDR_MASK);
}

bool paging_map(uint64_t phys, uint64_t len, bool uncached, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (len == 0)
        len = 1;
    if (phys >= PAGING_MAX_PHYS || len > PAGING_MAX_PHYS - phys) {
        *why = "address beyond the 64 TiB the image can map";
        return false;
    }
    uint64_t *pml4 = (uint64_t *)(uintptr_t)(read_cr3() & PTE_ADDR_MASK);
    uint64_t end = phys + len;
    for (uint64_t a = phys & ~(HUGE_PAGE - 1); a < end; a += HUGE_PAGE) {
        bool ok = true;
        uint64_t *pdpt = table_at(&pml4[(a >> 39) & 511], &ok);
        uint64_t *pd = ok ? table_at(&pdpt[(a >> 30) & 511], &ok) : 0;
        if (!ok) {
            *why = "out of page-table pages";
            return false;
        }
        uint64_t *pde = &pd[(a >> 21) & 511];
        uint64_t want = a | PTE_PRESENT | PTE_WRITE | PTE_HUGE | (uncached ? PTE_PCD | PTE_PWT : 0);
        /* An uncached mapping is never downgraded to cached: reading a table
           through an uncached page is only slower. */
        if (!(*pde & PTE_PRESENT) || (uncached && !(*pde & PTE_PCD))) {
            *pde = want;
            invlpg(a);
        }
    }
    return true;
}

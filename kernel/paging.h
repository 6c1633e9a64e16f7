/* Identity mapping on demand. The boot tables (boot/entry.asm) map 0-4 GiB
   with 2 MiB pages, 3-4 GiB uncached; anything else a table or device names
   is mapped here before it is touched. */
#ifndef CLOCKBENCH_PAGING_H
#define CLOCKBENCH_PAGING_H

#include <stdbool.h>
#include <stdint.h>

/* Highest physical address we identity-map: below the 47-bit canonical
   limit of 4-level paging, and 64 TiB is beyond any machine we expect. */
#define PAGING_MAX_PHYS (1ull << 46)

/* Maps [phys, phys+len) to the same virtual addresses. uncached: device
   registers (PCD|PWT). False, with why set, when the range cannot be mapped. */
bool paging_map(uint64_t phys, uint64_t len, bool uncached, const char **why);

#endif

/* A minimal scrolling console on the VGA text buffer, used when the loader
   left the screen in text mode (legacy BIOS). Text goes to a grid in RAM
   (textgrid.c) and reaches the screen in whole-screen flushes: under a
   hypervisor every write to the VGA window is a trap (tens of microseconds),
   and scrolling the window in place would cost thousands of them per line. */
#include "vga_text.h"

#include <stdbool.h>

#include "../kernel/cpu.h"
#include "textgrid.h"

#define VGA_ATTR_GREY_ON_BLACK 0x07
#define MAX_CELLS (132 * 60)
#define FLUSH_INTERVAL_TSC (1ull << 27) /* about 30-130 ms: often enough to watch progress */

static volatile uint16_t *screen;
static uint8_t cells[MAX_CELLS];
static struct textgrid grid;
static uint64_t last_flush;

void vga_text_init(uint64_t phys_addr, uint32_t ncols, uint32_t nrows)
{
    if (ncols * nrows > MAX_CELLS || ncols == 0 || nrows == 0)
        return;
    screen = (volatile uint16_t *)(uintptr_t)phys_addr;
    textgrid_init(&grid, cells, ncols, nrows);
    vga_text_flush();
}

void vga_text_flush(void)
{
    if (!screen)
        return;
    for (uint32_t i = 0; i < grid.cols * grid.rows; i++)
        screen[i] = (uint16_t)(VGA_ATTR_GREY_ON_BLACK << 8 | cells[i]);
    last_flush = rdtsc();
}

void vga_text_putc(char c)
{
    if (screen && textgrid_putc(&grid, c) && rdtsc() - last_flush > FLUSH_INTERVAL_TSC)
        vga_text_flush();
}

void vga_text_clear(void)
{
    if (!screen)
        return;
    textgrid_init(&grid, cells, grid.cols, grid.rows);
    vga_text_flush();
}

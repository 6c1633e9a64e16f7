/* A minimal scrolling console on the VGA text buffer, used when the loader
   left the screen in text mode (legacy BIOS). Text goes to a copy in RAM and
   reaches the screen in whole-screen flushes: under a hypervisor every write
   to the VGA window is a trap (tens of microseconds), and scrolling the
   window in place would cost thousands of them per line. */
#include "vga_text.h"

#include <stdbool.h>

#include "../kernel/cpu.h"

#define VGA_ATTR_GREY_ON_BLACK 0x07

#define MAX_CELLS (132 * 60)
#define FLUSH_INTERVAL_TSC (1ull << 27) /* about 30-130 ms: often enough to watch progress */

static volatile uint16_t *screen;
static uint16_t cells[MAX_CELLS];
static uint32_t cols, rows, col, row;
static uint64_t last_flush;

void vga_text_init(uint64_t phys_addr, uint32_t ncols, uint32_t nrows)
{
    if (ncols * nrows > MAX_CELLS)
        return;
    screen = (volatile uint16_t *)(uintptr_t)phys_addr;
    cols = ncols;
    rows = nrows;
    col = row = 0;
    for (uint32_t i = 0; i < cols * rows; i++)
        cells[i] = VGA_ATTR_GREY_ON_BLACK << 8 | ' ';
    vga_text_flush();
}

void vga_text_flush(void)
{
    if (!screen)
        return;
    for (uint32_t i = 0; i < cols * rows; i++)
        screen[i] = cells[i];
    last_flush = rdtsc();
}

static void scroll(void)
{
    for (uint32_t i = 0; i < cols * (rows - 1); i++)
        cells[i] = cells[i + cols];
    for (uint32_t i = cols * (rows - 1); i < cols * rows; i++)
        cells[i] = VGA_ATTR_GREY_ON_BLACK << 8 | ' ';
    row = rows - 1;
}

static void new_line(void)
{
    col = 0;
    if (++row == rows)
        scroll();
    if (rdtsc() - last_flush > FLUSH_INTERVAL_TSC)
        vga_text_flush();
}

void vga_text_putc(char c)
{
    if (!screen)
        return;
    if (c == '\n') {
        new_line();
        return;
    }
    if (c == '\r') {
        col = 0;
        return;
    }
    if (col == cols)
        new_line();
    cells[row * cols + col++] = (uint16_t)(VGA_ATTR_GREY_ON_BLACK << 8 | (uint8_t)c);
}

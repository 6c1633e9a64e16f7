/* A minimal scrolling console on the VGA text buffer, used when the loader
   left the screen in text mode (legacy BIOS). */
#include "vga_text.h"

#include <stdbool.h>

#define VGA_ATTR_GREY_ON_BLACK 0x07

static volatile uint16_t *cells;
static uint32_t cols, rows, col, row;

void vga_text_init(uint64_t phys_addr, uint32_t ncols, uint32_t nrows)
{
    cells = (volatile uint16_t *)(uintptr_t)phys_addr;
    cols = ncols;
    rows = nrows;
    col = row = 0;
    for (uint32_t i = 0; i < cols * rows; i++)
        cells[i] = VGA_ATTR_GREY_ON_BLACK << 8 | ' ';
}

static void scroll(void)
{
    for (uint32_t i = 0; i < cols * (rows - 1); i++)
        cells[i] = cells[i + cols];
    for (uint32_t i = cols * (rows - 1); i < cols * rows; i++)
        cells[i] = VGA_ATTR_GREY_ON_BLACK << 8 | ' ';
    row = rows - 1;
}

void vga_text_putc(char c)
{
    if (!cells)
        return;
    if (c == '\n') {
        col = 0;
        if (++row == rows)
            scroll();
        return;
    }
    if (c == '\r') {
        col = 0;
        return;
    }
    if (col == cols) {
        col = 0;
        if (++row == rows)
            scroll();
    }
    cells[row * cols + col++] = (uint16_t)(VGA_ATTR_GREY_ON_BLACK << 8 | (uint8_t)c);
}

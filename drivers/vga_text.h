/* VGA colour text mode, 80x25 at 0xB8000 (IBM VGA Technical Reference). */
#ifndef CLOCKBENCH_VGA_TEXT_H
#define CLOCKBENCH_VGA_TEXT_H

#include <stdbool.h>
#include <stdint.h>

void vga_text_init(uint64_t phys_addr, uint32_t cols, uint32_t rows);
void vga_text_putc(char c);
/* Turns the blinking hardware cursor off: the CRT controller's ports
   (0x3D4/0x3D5), which only a machine with VGA has (console.c decides). */
void vga_text_hide_cursor(void);
/* Copies the text to the screen (it otherwise reaches it once a screenful). */
void vga_text_flush(void);
/* Clears the screen and puts the cursor top left; what it showed goes to
   the history first. */
void vga_text_clear(void);
/* The same, keeping nothing (redrawing a screen of our own). */
void vga_text_wipe(void);
/* Screen size in characters (0 when not in use). */
uint32_t vga_text_cols(void);
uint32_t vga_text_rows(void);
/* Draws a square bitmap (size x size modules, modules[y * stride + x],
   1 = dark) against the right edge from the top row, two modules a
   character (code page 437 half blocks, black on white), with quiet modules
   of white around it; text then wraps left of it. False, drawing nothing,
   when it does not fit. */
bool vga_text_draw_modules(const uint8_t *modules, int size, int stride, int quiet);
/* Lines kept in the history; the pager shows rows - 1 of them from first
   and footer on the last row. */
uint32_t vga_text_history_lines(void);
void vga_text_page(uint32_t first, const char *footer);

#endif

/* A text console on a linear framebuffer (the Multiboot 2 framebuffer tag:
   UEFI GOP or VBE), direct RGB at 16, 24 or 32 bits per pixel. */
#ifndef CLOCKBENCH_FBCON_H
#define CLOCKBENCH_FBCON_H

#include <stdbool.h>
#include <stdint.h>

struct fb_mode {
    uint64_t addr;
    uint32_t pitch, width, height;
    uint8_t bpp;
    uint8_t red_pos, red_size, green_pos, green_size, blue_pos, blue_size;
};

/* False, with why filled, for a mode it cannot draw on. The framebuffer
   must already be mapped. */
bool fbcon_init(const struct fb_mode *mode, char *why, unsigned why_len);
void fbcon_putc(char c);
/* Draws every cell that changed since the last flush. */
void fbcon_flush(void);

/* Clears the screen and puts the cursor top left; what it showed goes to
   the history first. fbcon_wipe keeps nothing (redrawing a screen of our
   own). */
void fbcon_clear(void);
void fbcon_wipe(void);
/* Screen size in characters (0 when not in use). */
uint32_t fbcon_cols(void);
uint32_t fbcon_rows(void);
/* Lines kept in the history (lines scrolled or cleared away); the pager
   shows rows - 1 of them from first and footer on the last row. */
uint32_t fbcon_history_lines(void);
void fbcon_page(uint32_t first, const char *footer);
/* Draws a square bitmap (size x size modules, modules[y * stride + x], 1 =
   dark) as black on white with a quiet zone, at pixel (x, y), scale pixels
   a module, right-aligned against the screen's right edge when x < 0. */
void fbcon_draw_modules(const uint8_t *modules, int size, int stride, int x, int y, int scale, int quiet);
/* Pixels per row and column of the screen (0 when not in use). */
uint32_t fbcon_width(void);
uint32_t fbcon_height(void);

/* Pure helpers, unit-tested on the host: the pixel value of an 8-bit-per-
   channel colour in this mode, and one glyph drawn into a pixel buffer. */
uint32_t fbcon_pixel(const struct fb_mode *mode, uint8_t r, uint8_t g, uint8_t b);
void fbcon_draw_glyph(const struct fb_mode *mode, uint8_t *base, uint32_t x_cell, uint32_t y_cell, const uint8_t *glyph,
                      uint32_t fg, uint32_t bg);

#endif

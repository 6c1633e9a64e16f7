/* Framebuffer text console (see fbcon.h). Characters go to a grid in RAM;
   flushes redraw only cells that changed, and their rate adapts to what a
   redraw costs, so a slow framebuffer (or a hypervisor that emulates every
   instruction) cannot make the run crawl. */
#include "fbcon.h"

#include "../lib/format.h"
#include "cpu.h"
#include "fbcon_font.h"
#include "textgrid.h"

#define MAX_CELLS 65536
#define HISTORY_BYTES (256u * 1024)
#define FLUSH_MIN_TSC (1ull << 27)

static struct fb_mode fb;
static bool ready;
static uint32_t cols, rows;
static uint8_t cells[MAX_CELLS], shown[MAX_CELLS];
static uint8_t history[HISTORY_BYTES];
static bool overdrawn; /* pixels drawn over cells: the next page redraws every cell */
static struct textgrid grid;
static uint32_t fg, bg;
static uint64_t last_flush, flush_cost;

uint32_t fbcon_pixel(const struct fb_mode *m, uint8_t r, uint8_t g, uint8_t b)
{
    uint32_t v = 0;
    v |= (uint32_t)(r >> (8 - (m->red_size > 8 ? 8 : m->red_size))) << m->red_pos;
    v |= (uint32_t)(g >> (8 - (m->green_size > 8 ? 8 : m->green_size))) << m->green_pos;
    v |= (uint32_t)(b >> (8 - (m->blue_size > 8 ? 8 : m->blue_size))) << m->blue_pos;
    return v;
}

static void put_pixel(uint8_t *p, uint8_t bytes, uint32_t v)
{
    if (bytes == 4) {
        *(volatile uint32_t *)p = v;
    } else if (bytes == 3) {
        ((volatile uint8_t *)p)[0] = (uint8_t)v;
        ((volatile uint8_t *)p)[1] = (uint8_t)(v >> 8);
        ((volatile uint8_t *)p)[2] = (uint8_t)(v >> 16);
    } else {
        *(volatile uint16_t *)p = (uint16_t)v;
    }
}

void fbcon_draw_glyph(const struct fb_mode *m, uint8_t *base, uint32_t x_cell, uint32_t y_cell, const uint8_t *glyph,
                      uint32_t fgv, uint32_t bgv)
{
    uint8_t bytes = m->bpp / 8;
    for (uint32_t y = 0; y < FBCON_GLYPH_HEIGHT; y++) {
        uint8_t *line = base + (uint64_t)(y_cell * FBCON_GLYPH_HEIGHT + y) * m->pitch + (uint64_t)x_cell * FBCON_GLYPH_WIDTH * bytes;
        uint8_t bits = glyph[y];
        for (uint32_t x = 0; x < FBCON_GLYPH_WIDTH; x++)
            put_pixel(line + x * bytes, bytes, (bits & (0x80 >> x)) ? fgv : bgv);
    }
}

bool fbcon_init(const struct fb_mode *mode, char *why, unsigned why_len)
{
    if (mode->bpp != 16 && mode->bpp != 24 && mode->bpp != 32) {
        fmt_format(why, why_len, "%u bits per pixel is not drawn (16, 24 or 32 only)", mode->bpp);
        return false;
    }
    if (mode->width < FBCON_GLYPH_WIDTH * 40 || mode->height < FBCON_GLYPH_HEIGHT * 10 ||
        mode->pitch < mode->width * (mode->bpp / 8u)) {
        fmt_format(why, why_len, "%ux%u with pitch %u is too small or inconsistent", mode->width, mode->height, mode->pitch);
        return false;
    }
    fb = *mode;
    cols = fb.width / FBCON_GLYPH_WIDTH;
    rows = fb.height / FBCON_GLYPH_HEIGHT;
    if ((uint64_t)cols * rows > MAX_CELLS)
        rows = MAX_CELLS / cols;
    fg = fbcon_pixel(&fb, 0xC0, 0xC0, 0xC0);
    bg = fbcon_pixel(&fb, 0, 0, 0);
    textgrid_init(&grid, cells, cols, rows);
    textgrid_set_history(&grid, history, HISTORY_BYTES / cols);
    for (uint32_t i = 0; i < cols * rows; i++)
        shown[i] = 0; /* forces the first flush to clear the whole screen */
    ready = true;
    fbcon_flush();
    return true;
}

void fbcon_flush(void)
{
    if (!ready)
        return;
    uint64_t start = rdtsc();
    for (uint32_t i = 0; i < cols * rows; i++) {
        if (cells[i] == shown[i])
            continue;
        uint8_t c = cells[i] < 128 ? cells[i] : '?';
        fbcon_draw_glyph(&fb, (uint8_t *)(uintptr_t)fb.addr, i % cols, i / cols, fbcon_font[c], fg, bg);
        shown[i] = cells[i];
    }
    last_flush = rdtsc();
    flush_cost = last_flush - start;
}

void fbcon_putc(char c)
{
    if (!ready || !textgrid_putc(&grid, c))
        return;
    /* at most about one tenth of the time goes to drawing */
    uint64_t gap = 10 * flush_cost > FLUSH_MIN_TSC ? 10 * flush_cost : FLUSH_MIN_TSC;
    if (rdtsc() - last_flush > gap)
        fbcon_flush();
}

static void clear(bool keep)
{
    if (!ready)
        return;
    textgrid_clear(&grid, keep);
    overdrawn = false;
    for (uint32_t y = 0; y < fb.height; y++)
        for (uint32_t x = 0; x < fb.width; x++)
            put_pixel((uint8_t *)(uintptr_t)fb.addr + (uint64_t)y * fb.pitch + (uint64_t)x * (fb.bpp / 8), fb.bpp / 8, bg);
    for (uint32_t i = 0; i < cols * rows; i++)
        shown[i] = ' ';
}

void fbcon_clear(void) { clear(true); }
void fbcon_wipe(void) { clear(false); }

uint32_t fbcon_cols(void) { return ready ? cols : 0; }
uint32_t fbcon_rows(void) { return ready ? rows : 0; }
uint32_t fbcon_history_lines(void) { return ready ? textgrid_history_count(&grid) : 0; }

void fbcon_page(uint32_t first, const char *footer)
{
    if (!ready)
        return;
    if (overdrawn)
        for (uint32_t i = 0; i < cols * rows; i++)
            shown[i] = 0;
    overdrawn = false;
    uint32_t count = textgrid_history_count(&grid);
    for (uint32_t y = 0; y + 1 < rows; y++) {
        const uint8_t *line = first + y < count ? textgrid_history_line(&grid, first + y) : 0;
        for (uint32_t x = 0; x < cols; x++)
            cells[y * cols + x] = line ? line[x] : ' ';
    }
    for (uint32_t x = 0; x < cols; x++)
        cells[(rows - 1) * cols + x] = *footer ? (uint8_t)*footer++ : ' ';
    fbcon_flush();
}

uint32_t fbcon_width(void) { return ready ? fb.width : 0; }
uint32_t fbcon_height(void) { return ready ? fb.height : 0; }

void fbcon_draw_modules(const uint8_t *modules, int size, int stride, int x0, int y0, int scale, int quiet)
{
    if (!ready)
        return;
    int span = (size + 2 * quiet) * scale;
    if (x0 < 0)
        x0 = (int)fb.width - span + x0 + 1;
    if (x0 < 0 || y0 < 0 || x0 + span > (int)fb.width || y0 + span > (int)fb.height)
        return;
    overdrawn = true;
    uint32_t white = fbcon_pixel(&fb, 0xFF, 0xFF, 0xFF), black = fbcon_pixel(&fb, 0, 0, 0);
    uint8_t bytes = fb.bpp / 8;
    for (int py = 0; py < span; py++) {
        int my = py / scale - quiet;
        uint8_t *line = (uint8_t *)(uintptr_t)fb.addr + (uint64_t)(y0 + py) * fb.pitch + (uint64_t)x0 * bytes;
        for (int px = 0; px < span; px++) {
            int mx = px / scale - quiet;
            bool dark = my >= 0 && my < size && mx >= 0 && mx < size && modules[my * stride + mx];
            put_pixel(line + px * bytes, bytes, dark ? black : white);
        }
    }
}

/* A minimal scrolling console on the VGA text buffer, used when the loader
   left the screen in text mode (legacy BIOS). Text goes to a grid in RAM
   (textgrid.c) and reaches the screen in whole-screen flushes: under a
   hypervisor every write to the VGA window is a trap (tens of microseconds),
   and scrolling the window in place would cost thousands of them per line.
   A flush writes only the cells that changed since the last (a scroll
   changes most), and flushes come no more often than 20 times what the
   last full one took: under a hypervisor that emulates every instruction
   (PLATFORM.md) a whole-screen flush took about 0.2 s, and flushing every
   55 ms gave the screen half of a run's time (a 33 s KVM run took 18 s
   with screen=none). On hardware and under TCG a flush takes microseconds
   and the screen follows at the fixed interval.
   Each cell is a code page 437 character and an attribute byte (background
   colour in bits 4-6, foreground in bits 0-3). */
#include "vga_text.h"

#include <stdbool.h>

#include "cpu.h"
#include "textgrid.h"

#define VGA_ATTR_GREY_ON_BLACK 0x07
#define VGA_ATTR_BLACK_ON_WHITE 0x70
#define CP437_FULL_BLOCK 0xDB
#define CP437_LOWER_HALF 0xDC
#define CP437_UPPER_HALF 0xDF
#define VGA_CRTC_INDEX 0x3D4 /* colour modes' CRT controller */
#define VGA_CRTC_DATA 0x3D5
#define   VGA_CRTC_CURSOR_START 0x0A
#define     VGA_CURSOR_DISABLE (1u << 5)
#define MAX_CELLS (132 * 60)
#define HISTORY_BYTES (160u * 1024)
#define FLUSH_INTERVAL_TSC (1ull << 27) /* about 30-130 ms: often enough to watch progress */
#define FLUSH_SHARE 20                   /* the screen's time at most 1/20 of the run's */

static volatile uint16_t *screen;
static uint8_t cells[MAX_CELLS], attrs[MAX_CELLS];
static uint16_t shown[MAX_CELLS]; /* what the VGA window holds (valid once shown_valid) */
static bool shown_valid;
static uint64_t flush_interval = FLUSH_INTERVAL_TSC;
static uint8_t history[HISTORY_BYTES];
static struct textgrid grid;
static uint64_t last_flush;

static void attrs_reset(void)
{
    for (uint32_t i = 0; i < grid.cols * grid.rows; i++)
        attrs[i] = VGA_ATTR_GREY_ON_BLACK;
}

void vga_text_init(uint64_t phys_addr, uint32_t ncols, uint32_t nrows)
{
    if (ncols * nrows > MAX_CELLS || ncols == 0 || nrows == 0)
        return;
    screen = (volatile uint16_t *)(uintptr_t)phys_addr;
    shown_valid = false; /* the firmware's text is there: the first flush writes every cell */
    textgrid_init(&grid, cells, ncols, nrows);
    textgrid_set_history(&grid, history, HISTORY_BYTES / ncols);
    attrs_reset();
    vga_text_flush();
}

/* The hardware cursor stays where the firmware left it, blinking over the
   text (and the QR code): this console never moves it, so off. */
void vga_text_hide_cursor(void)
{
    if (!screen)
        return;
    outb(VGA_CRTC_INDEX, VGA_CRTC_CURSOR_START);
    outb(VGA_CRTC_DATA, (uint8_t)(inb(VGA_CRTC_DATA) | VGA_CURSOR_DISABLE));
}

void vga_text_flush(void)
{
    if (!screen)
        return;
    uint32_t n = grid.cols * grid.rows, written = 0;
    uint64_t start = rdtsc();
    for (uint32_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)(attrs[i] << 8 | cells[i]);
        if (shown_valid && shown[i] == v)
            continue;
        screen[i] = v;
        shown[i] = v;
        written++;
    }
    shown_valid = true;
    last_flush = rdtsc();
    /* a dear flush spaces the next ones out; a cheap one that wrote most of
       the screen brings them back to the fixed interval */
    uint64_t next = (last_flush - start) * FLUSH_SHARE;
    if (next > flush_interval || written > n / 2)
        flush_interval = next > FLUSH_INTERVAL_TSC ? next : FLUSH_INTERVAL_TSC;
}

void vga_text_putc(char c)
{
    if (screen && textgrid_putc(&grid, c) && rdtsc() - last_flush > flush_interval)
        vga_text_flush();
}

static void clear(bool keep)
{
    if (!screen)
        return;
    textgrid_clear(&grid, keep);
    attrs_reset();
    vga_text_flush();
}

void vga_text_clear(void) { clear(true); }
void vga_text_wipe(void) { clear(false); }

uint32_t vga_text_cols(void) { return screen ? grid.cols : 0; }
uint32_t vga_text_rows(void) { return screen ? grid.rows : 0; }

bool vga_text_draw_modules(const uint8_t *modules, int size, int stride, int quiet)
{
    int span = size + 2 * quiet, span_rows = (span + 1) / 2;
    if (!screen || span + 1 > (int)grid.cols || span_rows > (int)grid.rows)
        return false;
    int x0 = (int)grid.cols - span;
    for (int row = 0; row < span_rows; row++)
        for (int x = 0; x < span; x++) {
            bool dark[2];
            for (int half = 0; half < 2; half++) {
                int my = row * 2 + half - quiet, mx = x - quiet;
                dark[half] = my >= 0 && my < size && mx >= 0 && mx < size && modules[my * stride + mx];
            }
            uint32_t i = (uint32_t)row * grid.cols + (uint32_t)(x0 + x);
            cells[i] = dark[0] && dark[1] ? CP437_FULL_BLOCK : dark[0] ? CP437_UPPER_HALF : dark[1] ? CP437_LOWER_HALF : ' ';
            attrs[i] = VGA_ATTR_BLACK_ON_WHITE;
        }
    textgrid_set_width(&grid, (uint32_t)(x0 - 1));
    vga_text_flush();
    return true;
}

uint32_t vga_text_history_lines(void) { return screen ? textgrid_history_count(&grid) : 0; }

void vga_text_page(uint32_t first, const char *footer)
{
    if (!screen)
        return;
    attrs_reset();
    uint32_t count = textgrid_history_count(&grid);
    for (uint32_t y = 0; y + 1 < grid.rows; y++) {
        const uint8_t *line = first + y < count ? textgrid_history_line(&grid, first + y) : 0;
        for (uint32_t x = 0; x < grid.cols; x++)
            cells[y * grid.cols + x] = line ? line[x] : ' ';
    }
    uint32_t last = (grid.rows - 1) * grid.cols;
    for (uint32_t x = 0; x < grid.cols; x++) {
        cells[last + x] = *footer ? (uint8_t)*footer++ : ' ';
        attrs[last + x] = VGA_ATTR_BLACK_ON_WHITE;
    }
    vga_text_flush();
}

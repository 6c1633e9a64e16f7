/* Character grid with a cursor, wrapping, scrolling and a history (see
   textgrid.h). */
#include "textgrid.h"

#include "../lib/string.h"

/* Rows move and blank through memmove and memset, which go 8 bytes a step
   (lib/string.c): under a hypervisor that emulates every instruction (about
   a million a second, PLATFORM.md) a scroll by bytes cost 60,000
   instructions a line, and the screen took half of a KVM run. */

void textgrid_init(struct textgrid *g, uint8_t *cells, uint32_t cols, uint32_t rows)
{
    *g = (struct textgrid){.cells = cells, .cols = cols, .rows = rows, .width = cols};
    for (uint32_t i = 0; i < cols * rows; i++)
        cells[i] = ' ';
}

void textgrid_set_history(struct textgrid *g, uint8_t *buf, uint32_t lines)
{
    g->history = buf;
    g->hist_cap = lines;
    g->hist_count = g->hist_next = 0;
}

void textgrid_set_width(struct textgrid *g, uint32_t width)
{
    g->width = width == 0 || width > g->cols ? g->cols : width;
    if (g->col > g->width)
        g->col = g->width;
}

static void keep_line(struct textgrid *g, uint32_t row)
{
    if (!g->history || !g->hist_cap)
        return;
    uint8_t *out = g->history + (uint64_t)g->hist_next * g->cols;
    memcpy(out, g->cells + row * g->cols, g->width);
    memset(out + g->width, ' ', g->cols - g->width);
    g->hist_next = (g->hist_next + 1) % g->hist_cap;
    if (g->hist_count < g->hist_cap)
        g->hist_count++;
}

static void blank(struct textgrid *g, uint32_t row, uint32_t from)
{
    if (from < g->width)
        memset(g->cells + row * g->cols + from, ' ', g->width - from);
}

static void new_line(struct textgrid *g)
{
    g->col = 0;
    if (++g->row < g->rows)
        return;
    keep_line(g, 0);
    if (g->width == g->cols)
        memmove(g->cells, g->cells + g->cols, (g->rows - 1) * g->cols);
    else
        for (uint32_t y = 0; y + 1 < g->rows; y++)
            memcpy(g->cells + y * g->cols, g->cells + (y + 1) * g->cols, g->width); /* rows apart: width <= cols */
    blank(g, g->rows - 1, 0);
    g->row = g->rows - 1;
}

bool textgrid_putc(struct textgrid *g, char c)
{
    if (c == '\n') {
        new_line(g);
        return true;
    }
    if (c == '\r') {
        g->col = 0;
        return false;
    }
    bool wrapped = false;
    if (g->col >= g->width) {
        /* the word being written moves down whole when the line has a space
           in its second half to break at */
        uint32_t cut = g->width;
        if (c != ' ')
            for (uint32_t x = g->width; x > g->width / 2; x--)
                if (g->cells[g->row * g->cols + x - 1] == ' ') {
                    cut = x;
                    break;
                }
        uint8_t carry[256];
        uint32_t n = 0;
        for (uint32_t x = cut; x < g->width && n < sizeof carry; x++)
            carry[n++] = g->cells[g->row * g->cols + x];
        blank(g, g->row, cut);
        new_line(g);
        for (uint32_t i = 0; i < n; i++)
            g->cells[g->row * g->cols + i] = carry[i];
        g->col = n;
        wrapped = true;
        if (c == ' ' && n == 0)
            return wrapped; /* a space at the wrap would only indent the next line */
    }
    g->cells[g->row * g->cols + g->col++] = (uint8_t)c;
    return wrapped;
}

void textgrid_clear(struct textgrid *g, bool keep)
{
    if (keep) {
        uint32_t last = g->col ? g->row + 1 : g->row;
        for (uint32_t y = 0; y < last && y < g->rows; y++)
            keep_line(g, y);
    }
    g->width = g->cols;
    memset(g->cells, ' ', g->cols * g->rows);
    g->col = g->row = 0;
}

uint32_t textgrid_history_count(const struct textgrid *g) { return g->hist_count; }

const uint8_t *textgrid_history_line(const struct textgrid *g, uint32_t i)
{
    uint32_t first = (g->hist_next + g->hist_cap - g->hist_count) % g->hist_cap;
    return g->history + (uint64_t)((first + i) % g->hist_cap) * g->cols;
}

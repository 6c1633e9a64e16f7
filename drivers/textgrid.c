/* Character grid with a cursor, wrapping and scrolling (see textgrid.h). */
#include "textgrid.h"

void textgrid_init(struct textgrid *g, uint8_t *cells, uint32_t cols, uint32_t rows)
{
    *g = (struct textgrid){cells, cols, rows, 0, 0};
    for (uint32_t i = 0; i < cols * rows; i++)
        cells[i] = ' ';
}

static void new_line(struct textgrid *g)
{
    g->col = 0;
    if (++g->row < g->rows)
        return;
    for (uint32_t i = 0; i < g->cols * (g->rows - 1); i++)
        g->cells[i] = g->cells[i + g->cols];
    for (uint32_t i = g->cols * (g->rows - 1); i < g->cols * g->rows; i++)
        g->cells[i] = ' ';
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
    if (g->col == g->cols) {
        new_line(g);
        wrapped = true;
    }
    g->cells[g->row * g->cols + g->col++] = (uint8_t)c;
    return wrapped;
}

/* The character grid behind both screen consoles (VGA text and the
   framebuffer): text goes into RAM here, and the console copies what
   changed to the screen when it flushes. Lines that scroll off the top, or
   are cleared away, go to a history, so the whole report can be paged
   through again at the end of a run. Pure. */
#ifndef CLOCKBENCH_TEXTGRID_H
#define CLOCKBENCH_TEXTGRID_H

#include <stdbool.h>
#include <stdint.h>

struct textgrid {
    uint8_t *cells; /* cols * rows characters */
    uint32_t cols, rows, col, row;
    uint32_t width;    /* text wraps at this column; the columns right of it are left alone */
    uint8_t *history;  /* hist_cap lines of cols characters, a ring */
    uint32_t hist_cap, hist_count, hist_next;
};

/* A blank grid, text across every column, no history. */
void textgrid_init(struct textgrid *g, uint8_t *cells, uint32_t cols, uint32_t rows);
/* Keeps up to lines lines (of cols characters each) in buf. */
void textgrid_set_history(struct textgrid *g, uint8_t *buf, uint32_t lines);
/* Text wraps at width (1..cols) from now on; cells right of it are kept. */
void textgrid_set_width(struct textgrid *g, uint32_t width);
/* Writes one character (\n and \r move the cursor); a line longer than the
   width wraps at its last space when there is one in its second half.
   True when a line was completed, which is when a console considers
   flushing. */
bool textgrid_putc(struct textgrid *g, char c);
/* Blanks the grid and puts the cursor top left; with keep, the lines down
   to the cursor go to the history first. The width goes back to cols. */
void textgrid_clear(struct textgrid *g, bool keep);
/* Lines in the history, and line i of them (0 the oldest): cols characters. */
uint32_t textgrid_history_count(const struct textgrid *g);
const uint8_t *textgrid_history_line(const struct textgrid *g, uint32_t i);

#endif

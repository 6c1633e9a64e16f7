/* The character grid behind both screen consoles (VGA text and the
   framebuffer): text goes into RAM here, and the console copies what
   changed to the screen when it flushes. Pure. */
#ifndef CLOCKBENCH_TEXTGRID_H
#define CLOCKBENCH_TEXTGRID_H

#include <stdbool.h>
#include <stdint.h>

struct textgrid {
    uint8_t *cells; /* cols * rows characters */
    uint32_t cols, rows, col, row;
};

void textgrid_init(struct textgrid *g, uint8_t *cells, uint32_t cols, uint32_t rows);
/* Writes one character (\n and \r move the cursor); true when a line was
   completed, which is when a console considers flushing. */
bool textgrid_putc(struct textgrid *g, char c);

#endif

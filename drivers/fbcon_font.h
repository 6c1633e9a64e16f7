/* The 8x16 glyphs of the framebuffer console, for ASCII. The table is
   generated at build time from a Debian console font (scripts/psf_to_c.py). */
#ifndef CLOCKBENCH_FBCON_FONT_H
#define CLOCKBENCH_FBCON_FONT_H

#include <stdint.h>

#define FBCON_GLYPH_WIDTH 8
#define FBCON_GLYPH_HEIGHT 16

extern const uint8_t fbcon_font[128][FBCON_GLYPH_HEIGHT];

#endif

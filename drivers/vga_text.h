/* VGA colour text mode, 80x25 at 0xB8000 (IBM VGA Technical Reference). */
#ifndef CLOCKBENCH_VGA_TEXT_H
#define CLOCKBENCH_VGA_TEXT_H

#include <stdint.h>

void vga_text_init(uint64_t phys_addr, uint32_t cols, uint32_t rows);
void vga_text_putc(char c);
/* Copies the text to the screen (it otherwise reaches it once a screenful). */
void vga_text_flush(void);
/* Clears the screen and puts the cursor top left. */
void vga_text_clear(void);

#endif

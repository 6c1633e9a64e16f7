/* Where the image's output goes: the serial port and the screen, the same
   text to both. */
#ifndef CLOCKBENCH_CONSOLE_H
#define CLOCKBENCH_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/bootinfo.h"

struct console_status {
    bool serial;
    uint16_t serial_port;
    uint32_t serial_baud;
    const char *screen; /* "VGA text" or "none" */
};

/* Opens the serial port named by serial= (com1..com4, a hex port or none)
   and baud= on the command line, and the screen the loader left us. A value
   it cannot use gets a "Note:" line, printed once both are open, naming the
   value and what is used instead. */
void console_init(const struct boot_info *bi);
const struct console_status *console_status(void);
/* Turns the VGA text screen's blinking cursor off, through the CRT
   controller's ports: called once discovery knows the machine has a VGA
   (finish.h, machine_vga_ruled_out). */
void console_hide_cursor(void);
void console_write(const char *s, unsigned long n);
struct record;
/* Closes a machine record and writes it whole (records can be longer than
   one kprintf). */
void console_emit_record(struct record *r);
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The serial port alone, unwrapped: lines that would scroll a final screen
   away (how the run ends the machine, kernel/finish.c). */
void serial_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The screen alone (not the serial port): clear it, and print to it. */
void console_screen_clear(void);
void screen_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether the screen is a framebuffer (graphics can be drawn on it). */
bool console_screen_is_framebuffer(void);
/* Waits (bounded) until the serial port has sent everything. */
void console_flush(void);

#endif

/* Console: formats once, writes to every sink. */
#include "console.h"

#include <stdarg.h>

#include "../drivers/fbcon.h"
#include "../drivers/uart.h"
#include "../drivers/vga_text.h"
#include "../lib/cmdline.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "paging.h"

#define VGA_TEXT_PHYS 0xB8000
#define VGA_TEXT_COLS 80
#define VGA_TEXT_ROWS 25
#define CONSOLE_COLUMNS 80
#define CONSOLE_LINE_MAX 4096

static struct uart serial;
static enum { SCREEN_NONE, SCREEN_VGA, SCREEN_FB } screen_kind;
static char screen_desc[96], screen_note[128];
static struct console_status status = {.screen = "none"};

/* What console_init has to say about the command line. Kept until both
   sinks are open, so a note about the serial port still reaches the screen
   and a note about anything reaches the serial port. */
#define CONSOLE_NOTES 4
#define CONSOLE_NOTE_CHARS 200
static char notes[CONSOLE_NOTES][CONSOLE_NOTE_CHARS];
static int note_count;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    if (note_count == CONSOLE_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    fmt_vformat(notes[note_count++], CONSOLE_NOTE_CHARS, fmt, ap);
    va_end(ap);
}

static const uint16_t com_port[] = {0x3F8, 0x2F8, 0x3E8, 0x2E8};

/* serial=com1..com4, an I/O port, or none (*none set); anything else, or
   a port outside 1..0xfff8, is com1 with a note. */
static uint16_t serial_port_from(const char *name, bool *none)
{
    *none = false;
    if (!name)
        return UART_COM1;
    if (!strcmp(name, "none")) {
        *none = true;
        return 0;
    }
    if (!strncmp(name, "com", 3) && name[3] >= '1' && name[3] <= '4' && !name[4])
        return com_port[name[3] - '1'];
    uint64_t port;
    if (cmdline_parse_u64(name, &port) && port > 0 && port <= 0xFFF8)
        return (uint16_t)port;
    note("serial=%s is not com1..com4, an I/O port from 0x1 to 0xfff8, or none; using com1 (0x%x)", name, UART_COM1);
    return UART_COM1;
}

/* baud= as a rate the UART makes exactly; anything else is 115200 with a
   note, never a port left silent or a rate claimed but not made. */
static uint32_t serial_baud_from(const char *text)
{
    uint64_t baud;
    if (!text)
        return UART_DEFAULT_BAUD;
    if (!cmdline_parse_u64(text, &baud)) {
        note("baud=%s is not a number; using %u baud", text, UART_DEFAULT_BAUD);
        return UART_DEFAULT_BAUD;
    }
    if (baud > UINT32_MAX || !uart_divisor((uint32_t)baud)) {
        note("baud=%s is not a rate the UART can make (115200 / rate must be a whole number from 1 to 65535, "
             "or 110); using %u baud",
             text, UART_DEFAULT_BAUD);
        return UART_DEFAULT_BAUD;
    }
    return (uint32_t)baud;
}

/* An absent port named on the command line falls back to com1, the port a
   console is most likely on; an absent com1 by default is no news (the
   banner says "no serial port"). */
static void serial_open(void)
{
    const char *name = cmdline_get(&boot_cmdline, "serial");
    bool none;
    uint16_t port = serial_port_from(name, &none);
    uint32_t baud = serial_baud_from(cmdline_get(&boot_cmdline, "baud"));
    if (none)
        return;
    if (!uart_init(&serial, port, baud)) {
        if (!name)
            return;
        if (port == UART_COM1 || !uart_init(&serial, UART_COM1, baud)) {
            note("no UART answers at serial=%s (port 0x%x)%s; output goes to the screen only", name, port,
                 port == UART_COM1 ? "" : " nor at com1");
            return;
        }
        note("no UART answers at serial=%s (port 0x%x); using com1 (0x%x)", name, port, UART_COM1);
        port = UART_COM1;
    }
    status.serial = true;
    status.serial_port = port;
    status.serial_baud = baud;
}

static void screen_open(const struct boot_info *bi)
{
    const char *screen = cmdline_get(&boot_cmdline, "screen");
    if (screen && !strcmp(screen, "none")) {
        status.screen = "none (screen=none)";
        return;
    }
    if (screen)
        note("screen=%s is not understood (only screen=none is); using the screen", screen);
    /* A linear framebuffer from the loader (UEFI GOP or VBE) gets the
       framebuffer console; EGA text from the loader, or no framebuffer tag
       at all (a legacy BIOS boot, QEMU -kernel), the VGA text buffer. */
    if (bi->fb.present && bi->fb.type == 1) {
        struct fb_mode m = {bi->fb.addr, bi->fb.pitch, bi->fb.width, bi->fb.height, bi->fb.bpp,
                            bi->fb.red_pos, bi->fb.red_size, bi->fb.green_pos, bi->fb.green_size, bi->fb.blue_pos, bi->fb.blue_size};
        const char *why_map = "";
        if (!paging_map(m.addr, (uint64_t)m.pitch * m.height, false, &why_map)) {
            fmt_format(screen_note, sizeof screen_note, "none: framebuffer at 0x%llx unusable: %s", (unsigned long long)m.addr, why_map);
        } else if (fbcon_init(&m, screen_note, sizeof screen_note)) {
            fmt_format(screen_desc, sizeof screen_desc, "framebuffer %ux%u, %u bits per pixel, at 0x%llx", m.width, m.height,
                       m.bpp, (unsigned long long)m.addr);
            status.screen = screen_desc;
            screen_kind = SCREEN_FB;
            return;
        }
        status.screen = screen_note;
        return;
    }
    if (!bi->fb.present || bi->fb.type == 2) {
        uint64_t addr = bi->fb.present ? bi->fb.addr : VGA_TEXT_PHYS;
        uint32_t w = bi->fb.present ? bi->fb.width : VGA_TEXT_COLS, h = bi->fb.present ? bi->fb.height : VGA_TEXT_ROWS;
        vga_text_init(addr, w, h);
        fmt_format(screen_desc, sizeof screen_desc, "VGA text %ux%u", w, h);
        status.screen = screen_desc;
        screen_kind = SCREEN_VGA;
        return;
    }
    fmt_format(screen_note, sizeof screen_note, "none: framebuffer type %u is not drawn", bi->fb.type);
    status.screen = screen_note;
}

void console_init(const struct boot_info *bi)
{
    serial_open();
    screen_open(bi);
    for (int i = 0; i < note_count; i++)
        kprintf("Note: %s\n", notes[i]);
}

const struct console_status *console_status(void) { return &status; }

void console_hide_cursor(void)
{
    if (screen_kind == SCREEN_VGA)
        vga_text_hide_cursor();
}

/* n bytes, a newline as CR LF on the serial port: the serial port takes each
   run between newlines whole (uart_write), the screen a character at a time. */
static void put_raw(const char *s, unsigned long n, bool screen)
{
    for (unsigned long i = 0, j; i < n; i = j + 1) {
        for (j = i; j < n && s[j] != '\n'; j++)
            ;
        uart_write(&serial, s + i, j - i);
        if (j < n)
            uart_write(&serial, "\r\n", 2);
    }
    if (!screen)
        return;
    for (unsigned long i = 0; i < n; i++) {
        if (screen_kind == SCREEN_VGA)
            vga_text_putc(s[i]);
        else if (screen_kind == SCREEN_FB)
            fbcon_putc(s[i]);
    }
}

/* Human lines are wrapped to CONSOLE_COLUMNS at spaces, continuation lines
   indented two more than the line. Machine records are never wrapped, and
   go to the serial port only: on screen they would bury the report. */
static char line[CONSOLE_LINE_MAX];
static unsigned line_len;

static void emit_line(void)
{
    unsigned start = 0;
    bool record = line_len >= 4 && !strncmp(line, RECORD_PREFIX, 4);
    unsigned indent = 0;
    while (indent < line_len && line[indent] == ' ')
        indent++;
    indent = indent + 2 > 20 ? 20 : indent + 2;
    bool first = true;
    while (start < line_len) {
        unsigned width = first ? CONSOLE_COLUMNS : CONSOLE_COLUMNS - indent;
        unsigned end = line_len;
        if (!record && line_len - start > width) {
            end = start + width;
            while (end > start + width / 2 && line[end] != ' ')
                end--;
            if (line[end] != ' ')
                end = start + width; /* no space to break at: cut */
        }
        if (!first)
            put_raw("                    ", indent, true); /* indent <= 20 */
        put_raw(line + start, end - start, !record);
        put_raw("\n", 1, !record);
        start = end;
        while (start < line_len && line[start] == ' ')
            start++;
        first = false;
    }
    line_len = 0;
}

void console_write(const char *s, unsigned long n)
{
    while (n) {
        /* the text up to the next newline joins the line whole (memcpy by
           words, not a test and a store a character: under a hypervisor
           that emulates every instruction, a run's report is 100 KB) */
        unsigned long run = 0;
        while (run < n && s[run] != '\n')
            run++;
        while (run) {
            if (line_len == CONSOLE_LINE_MAX) {
                /* a very long record: pass it through unbuffered */
                put_raw(line, line_len, false);
                line_len = 0;
            }
            unsigned long k = run < CONSOLE_LINE_MAX - line_len ? run : CONSOLE_LINE_MAX - line_len;
            memcpy(line + line_len, s, k);
            line_len += (unsigned)k;
            s += k;
            n -= k;
            run -= k;
        }
        if (n) { /* the newline */
            if (line_len == 0)
                put_raw("\n", 1, true);
            else
                emit_line();
            s++;
            n--;
        }
    }
}

void console_emit_record(struct record *r)
{
    const char *line = record_end(r);
    console_write(line, strlen(line));
}

/* One printf into buf (PRINTF_MAX bytes): the length kept, cut to fit. */
#define PRINTF_MAX 1024
static unsigned long format_line(char *buf, const char *fmt, va_list ap)
{
    int n = fmt_vformat(buf, PRINTF_MAX, fmt, ap);
    return n > PRINTF_MAX - 1 ? PRINTF_MAX - 1 : (unsigned long)n;
}

void kprintf(const char *fmt, ...)
{
    char buf[PRINTF_MAX];
    va_list ap;
    va_start(ap, fmt);
    unsigned long n = format_line(buf, fmt, ap);
    va_end(ap);
    console_write(buf, n);
}

void serial_printf(const char *fmt, ...)
{
    char buf[PRINTF_MAX];
    va_list ap;
    va_start(ap, fmt);
    unsigned long n = format_line(buf, fmt, ap);
    va_end(ap);
    if (line_len)
        emit_line();
    put_raw(buf, n, false);
}

void console_flush(void)
{
    if (line_len)
        emit_line();
    if (screen_kind == SCREEN_VGA)
        vga_text_flush();
    else if (screen_kind == SCREEN_FB)
        fbcon_flush();
    uart_drain(&serial);
}

void console_screen_clear(void)
{
    if (screen_kind == SCREEN_VGA)
        vga_text_clear();
    else if (screen_kind == SCREEN_FB)
        fbcon_clear();
}

bool console_screen_is_framebuffer(void) { return screen_kind == SCREEN_FB; }

void screen_printf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vformat(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < n && i < (int)sizeof buf - 1; i++) {
        if (screen_kind == SCREEN_VGA)
            vga_text_putc(buf[i]);
        else if (screen_kind == SCREEN_FB)
            fbcon_putc(buf[i]);
    }
}

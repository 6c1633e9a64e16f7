/* Our own formatted printing, snprintf-like, used by every line the image
   prints. Pure: no hardware, so it is unit-tested on the host.
   Conversions: %d %i %u %x %X %c %s %p %%. The kernel has no floating
   point: decimals come from fmt_fixed() on scaled integers.
   Flags - 0 + space; width and precision as numbers or *; length hh h l ll z j. */
#ifndef CLOCKBENCH_FORMAT_H
#define CLOCKBENCH_FORMAT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Writes at most size bytes including the terminating NUL; returns the
   length the whole output would have had (as C99 snprintf). */
int fmt_vformat(char *buf, size_t size, const char *fmt, va_list ap);
int fmt_format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define FMT_FIXED_CHARS 32

/* value / 10^scale_digits as a decimal with show_digits after the point,
   rounded half away from zero: fmt_fixed(b, 123456, 3, 1) is "123.5".
   Returns buf, for use with %s. */
const char *fmt_fixed(char buf[FMT_FIXED_CHARS], int64_t value, unsigned scale_digits, unsigned show_digits);

#endif

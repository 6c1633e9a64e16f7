/* Our own formatted printing, snprintf-like, used by every line the image
   prints. Pure: no hardware, so it is unit-tested on the host.
   Conversions: %d %i %u %x %X %c %s %p %% and %f (fixed-point decimals).
   Flags - 0 + space; width and precision as numbers or *; length hh h l ll z j. */
#ifndef CLOCKBENCH_FORMAT_H
#define CLOCKBENCH_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

/* Writes at most size bytes including the terminating NUL; returns the
   length the whole output would have had (as C99 snprintf). */
int fmt_vformat(char *buf, size_t size, const char *fmt, va_list ap);
int fmt_format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

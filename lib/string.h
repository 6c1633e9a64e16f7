/* The few C string functions the kernel needs (and that the compiler may
   call for structure copies), freestanding. */
#ifndef CLOCKBENCH_STRING_H
#define CLOCKBENCH_STRING_H

#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);

#endif

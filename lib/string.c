/* Freestanding string functions (C11 7.24). */
#include "string.h"

#include <stdint.h>

/* 8 bytes a step where 8 remain: under a hypervisor that emulates every
   instruction (about a million a second, PLATFORM.md) a byte loop made the
   kernel's copies and clears eight times dearer than they need be. A word
   through a may_alias type of alignment 1 reads and writes any bytes. */
typedef uint64_t __attribute__((may_alias, aligned(1))) any_word;

void *memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (; n >= 8; n -= 8, d += 8, s += 8)
        *(any_word *)d = *(const any_word *)s;
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s)
        return memcpy(dst, src, n); /* forward, each word read before it is written over */
    while (n >= 8) {
        n -= 8;
        *(any_word *)(d + n) = *(const any_word *)(s + n);
    }
    while (n--)
        d[n] = s[n];
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    unsigned char *d = dst;
    uint64_t w = (unsigned char)c * 0x0101010101010101ull;
    for (; n >= 8; n -= 8, d += 8)
        *(any_word *)d = w;
    while (n--)
        *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x - *y;
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int strcmp(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++) {
        if (*a != *b)
            return (unsigned char)*a - (unsigned char)*b;
        if (!*a)
            return 0;
    }
    return 0;
}

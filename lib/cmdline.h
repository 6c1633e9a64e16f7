/* The kernel command line (from GRUB or QEMU -append): space-separated
   key=value words, parsed once at boot and read by every part. Pure. */
#ifndef CLOCKBENCH_CMDLINE_H
#define CLOCKBENCH_CMDLINE_H

#include <stdbool.h>
#include <stdint.h>

#define CMDLINE_MAX_CHARS 512
#define CMDLINE_MAX_WORDS 32

struct cmdline {
    char text[CMDLINE_MAX_CHARS];   /* the words, NUL-separated */
    const char *key[CMDLINE_MAX_WORDS];
    const char *value[CMDLINE_MAX_WORDS]; /* "" for a bare word */
    int count;
    bool truncated;                 /* input longer than the buffer or word table */
};

void cmdline_parse(struct cmdline *cl, const char *text);
/* NULL when the key is absent; the last occurrence wins. */
const char *cmdline_get(const struct cmdline *cl, const char *key);
/* Decimal or 0x-prefixed hex. False when absent or not a number (out untouched). */
bool cmdline_get_u64(const struct cmdline *cl, const char *key, uint64_t *out);
bool cmdline_parse_u64(const char *s, uint64_t *out);
/* Copies s up to the first `sep` into head (at most head_len - 1 chars, NUL
   terminated) and returns what follows the separator, or 0 when s has no
   `sep` or the head did not fit: for values like KIND:MS@S and CPU:TICKS. */
const char *cmdline_split(const char *s, char sep, char *head, unsigned head_len);

/* The command line of this boot, parsed once in kmain. */
extern struct cmdline boot_cmdline;

#endif

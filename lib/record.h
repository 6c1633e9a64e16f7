/* Machine records: one JSON object per line behind the prefix "@cb ", the
   schema written down in docs/output.md. A small builder so every record is
   valid JSON whatever strings the firmware hands us. Pure. */
#ifndef CLOCKBENCH_RECORD_H
#define CLOCKBENCH_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_PREFIX "@cb "
#define RECORD_SCHEMA_VERSION 1
#define RECORD_MAX_CHARS 2048
/* The most one array number takes: a comma and 20 digits (u64), or a comma,
   a sign and 19 digits (i64). */
#define RECORD_ARRAY_ITEM_MAX 21

struct record {
    char buf[RECORD_MAX_CHARS];
    size_t len;
    size_t member_start; /* where the member being written began: an overflow goes back here */
    bool first;
    unsigned depth; /* objects open inside the record (record_object_begin) */
    bool overflow; /* a member did not fit: it and every later one are left out, and the
                      record ends with "truncated":true */
};

void record_begin(struct record *r, const char *type);
void record_str(struct record *r, const char *key, const char *value); /* NULL gives null */
/* A string of at most n bytes that need not be NUL-terminated (firmware IDs). */
void record_strn(struct record *r, const char *key, const char *value, size_t n);
void record_u64(struct record *r, const char *key, uint64_t value);
void record_i64(struct record *r, const char *key, int64_t value);
void record_hex(struct record *r, const char *key, uint64_t value); /* "0x..." string */
/* A fixed-point number: value / 10^scale_digits, printed exactly. */
void record_fixed(struct record *r, const char *key, int64_t value, unsigned scale_digits);
void record_bool(struct record *r, const char *key, bool value);
void record_null(struct record *r, const char *key);
/* Starts "key":[ ... ] of numbers; close with record_array_end. */
void record_array_begin(struct record *r, const char *key);
void record_array_u64(struct record *r, uint64_t value);
void record_array_i64(struct record *r, int64_t value);
/* "key":{ ... }: members inside it until record_object_end. An overflow
   inside takes back the whole outermost member, so the record stays valid. */
void record_object_begin(struct record *r, const char *key);
void record_object_end(struct record *r);
/* A fixed-point member, as record_fixed: value / 10^scale_digits. */
void record_array_fixed(struct record *r, int64_t value, unsigned scale_digits);
void record_array_end(struct record *r);
/* Whether a member has not fit: the record will end with "truncated":true.
   Ask before record_end to split what remains into parts instead. */
bool record_truncated(const struct record *r);
/* Bytes the next members can still take before one would not fit. With
   RECORD_ARRAY_ITEM_MAX a caller can size a part before it starts an array:
   ,"key":[...] of n numbers fits when strlen(key) + 6 + n * RECORD_ARRAY_ITEM_MAX
   <= record_room(). */
size_t record_room(const struct record *r);
/* Closes the object; returns the whole line including prefix and newline. */
const char *record_end(struct record *r);

#endif

/* The host's own C library (issue 48, section 5): clockbench-os is static,
   so its libc calls are the glibc linked into it (path "libc-static", the
   bundle's copy); the helper os/hostlibc/, dynamically linked against an old
   glibc symbol baseline, measures the same calls through the C library the
   host's programs load (path "libc"). Found beside clockbench-os (the
   bundle's folder; build/os/ in the tree), run on clockbench-os's CPU,
   every wait bounded; where its glibc loader is missing it runs under
   musl's, where that is (docs/output.md, "The host's own C library"). */
#ifndef CLOCKBENCH_OS_HOSTLIBC_H
#define CLOCKBENCH_OS_HOSTLIBC_H

#include <stdbool.h>
#include <stdint.h>

#include "os_calls.h"
#include "os_lang_parse.h"

#define HOSTLIBC_NAME "clockbench-os-libc" /* the helper's file name, beside clockbench-os */
#define HOSTLIBC_MUSL_LOADER "/lib/ld-musl-x86_64.so.1"

struct hostlibc_cost {
    bool measured;
    struct lang_cost cost; /* ticks, the empty bracket's median subtracted (the probes' cost line) */
    double stddev_ticks;
};

struct hostlibc_info {
    bool found;          /* the helper is there */
    bool measured;       /* it answered at least once */
    bool failed;         /* it could not run, or failed: not run again */
    char path[600];      /* the helper */
    char loader[200];    /* what it ran through when not its own loader (musl's), else "" */
    char name[32], version[64], file[600]; /* the C library it reported */
    char why[320];       /* one line: why the host's C library is not measured */
};
extern struct hostlibc_info hostlibc;

/* Finds the helper beside clockbench-os and the loader it needs; quiet. */
void hostlibc_setup(void);

/* Runs the helper once for these calls (each of path "libc-static"):
   reads and budget_ticks per call as clockbench-os's own, within
   timeout_s. out[] is indexed by call; false with hostlibc.why said. */
bool hostlibc_measure(const enum os_call *calls, int n, unsigned reads, uint64_t budget_ticks, unsigned timeout_s,
                      struct hostlibc_cost out[CALL_COUNT]);

#endif

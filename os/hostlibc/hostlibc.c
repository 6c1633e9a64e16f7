/* clockbench-os's host-libc helper: what the host's own C library costs for
   the calls clockbench-os measures by the glibc linked into itself (path
   "libc-static"), by the same method (os_calls.h: each call alone between
   serialised TSC reads, the empty bracket beside it, its median subtracted,
   exact percentiles, the p50's 95% interval), but dynamically linked: each
   call goes through this program's PLT into whichever libc.so.6 the host's
   loader maps, as a host program's does. Its symbol versions are an old
   baseline (glibc_baseline.h), so that it loads on every glibc from 2.17.

   Run by clockbench-os (docs/output.md, "The host's own C library"):
     hostlibc READS BUDGET_TICKS CALL...
   CALL as os_calls.c names them ("clock_gettime(CLOCK_MONOTONIC)", "time").
   It runs on the CPU it is given (clockbench-os's, inherited). Output:
     libc name=glibc version=2.36 file=/usr/lib/x86_64-linux-gnu/libc.so.6
     cost CALL method=tsc unit=ticks n= min= p50= mean= p99= p999= max= bracket= p50_lo= p50_hi= stddev=
     end
   the cost line as the language probes' contract has it (docs/output.md),
   in TSC ticks; "name=unknown version=unknown" where the C library is not
   glibc (musl has no call that gives its version). Exit status 0, or 64 on
   bad arguments. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/stats.h"
#include "../os_calls.h"

/* glibc's (GLIBC_2.2.5), <gnu/libc-version.h>: weak, so that the helper
   still loads where it is absent (musl: a null address says so). */
extern const char *gnu_get_libc_version(void) __attribute__((weak));

/* The program's entry, in place of crt1.o's: that of glibc 2.34 and later
   names __libc_start_main@GLIBC_2.34, which no older glibc has; this one
   takes the GLIBC_2.2.5 version (glibc_baseline.h), which every glibc on
   x86-64 keeps and musl answers by name. At entry (x86-64 psABI, 3.4.1)
   rsp points at argc, then argv; rdx holds the loader's finaliser. Calls
   __libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end)
   with no init or fini of its own (glibc then runs the program's
   init_array itself from 2.34 on; the helper has none), on a 16-byte
   aligned stack; it never returns (main's return goes to exit). */
__asm__(".text\n"
        ".globl _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  mov %rdx, %r9\n"
        "  pop %rsi\n"
        "  mov %rsp, %rdx\n"
        "  and $-16, %rsp\n"
        "  push %rax\n"
        "  push %rsp\n"
        "  xor %r8d, %r8d\n"
        "  xor %ecx, %ecx\n"
        "  lea main(%rip), %rdi\n"
        "  call *__libc_start_main@GOTPCREL(%rip)\n"
        "  hlt\n"
        ".size _start, .-_start\n");

/* crt1.o defines it too: the stdio ABI the program was built for, which
   glibc's libio reads on targets that kept an older one (not x86-64). */
const int _IO_stdin_used = 0x20001;

/* The file a function is in, by the mapping that holds its address
   (/proc/self/maps: the kernel's own path of what is mapped there). */
static void file_of(const void *fn, char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 || !path_at)
            continue;
        if ((uintptr_t)fn < lo || (uintptr_t)fn >= hi)
            continue;
        char *p = line + path_at;
        p[strcspn(p, "\n")] = 0;
        if (*p)
            snprintf(out, size, "%s", p);
        break;
    }
    fclose(f);
}

/* The C library: glibc when gnu_get_libc_version is there; otherwise musl
   where its file's path says so (/lib/ld-musl-x86_64.so.1, Debian's
   /usr/lib/x86_64-linux-musl/libc.so). */
static void report_libc(void)
{
    char file[1024];
    file_of((const void *)clock_gettime, file, sizeof file);
    const char *name = gnu_get_libc_version ? "glibc" : strstr(file, "musl") ? "musl" : "unknown";
    printf("libc name=%s version=%s file=%s\n", name, gnu_get_libc_version ? gnu_get_libc_version() : "unknown", file);
}

static uint64_t minus(uint64_t v, uint64_t bracket) { return v > bracket ? v - bracket : 0; }

#define COST(K, full, empty, n, budget, got) (*(got) = os_cost_loop(K, 0, full, empty, n, budget))

static int cost(enum os_call k, uint32_t reads, uint64_t budget)
{
    uint64_t *full = malloc(reads * sizeof *full), *empty = malloc(reads * sizeof *empty), *scratch = malloc(reads * sizeof *scratch);
    if (!full || !empty || !scratch) {
        fprintf(stderr, "hostlibc: no memory for %u samples\n", reads);
        return 1;
    }
    uint32_t got = 0;
    OS_DISPATCH(k, COST, full, empty, reads, budget, &got);
    struct summary s, e;
    stats_summarise(empty, got, scratch, &e);
    stats_summarise(full, got, scratch, &s); /* full is sorted now: the interval's ranks are read from it */
    uint64_t br = e.p50;
    size_t lo = os_ci_rank(got, -1), hi = os_ci_rank(got, 1);
    struct summary d = s;
    stats_subtract(&d, br);
    int64_t mean10 = xf_to_fixed(d.mean, 1), sd10 = xf_to_fixed(s.stddev, 1);
    printf("cost %s method=tsc unit=ticks n=%u min=%llu p50=%llu mean=%lld.%lld p99=%llu p999=%llu max=%llu bracket=%llu "
           "p50_lo=%llu p50_hi=%llu stddev=%lld.%lld\n",
           os_calls[k].name, got, (unsigned long long)d.min, (unsigned long long)d.p50, (long long)(mean10 / 10),
           (long long)(mean10 % 10), (unsigned long long)d.p99, (unsigned long long)d.p999, (unsigned long long)d.max,
           (unsigned long long)br, (unsigned long long)minus(full[lo], br), (unsigned long long)minus(full[hi], br),
           (long long)(sd10 / 10), (long long)(sd10 % 10));
    free(full), free(empty), free(scratch);
    return 0;
}

static unsigned long long number(const char *v, unsigned long long lo, unsigned long long hi)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    return *v && !*end && x >= lo && x <= hi ? x : 0;
}

int main(int argc, char **argv)
{
    unsigned long long reads = argc > 2 ? number(argv[1], 1, 10000000) : 0, budget = argc > 2 ? number(argv[2], 1, ~0ull) : 0;
    if (!reads || !budget) {
        fprintf(stderr, "usage: hostlibc READS BUDGET_TICKS CALL... (clockbench-os runs it)\n");
        return 64;
    }
    for (int i = 3; i < argc; i++)
        if (os_call_find(argv[i]) == CALL_NONE) {
            fprintf(stderr, "hostlibc: no libc call '%s'\n", argv[i]);
            return 64;
        }
    setvbuf(stdout, 0, _IOLBF, 0);
    report_libc();
    for (int i = 3; i < argc; i++)
        if (cost(os_call_find(argv[i]), (uint32_t)reads, budget))
            return 1;
    printf("end\n");
    return 0;
}

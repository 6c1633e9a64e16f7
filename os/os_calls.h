/* The calls clockbench-os measures: every way a Linux program asks the time,
   each as the one call a user would write, inlined into the measuring loops
   by a switch on a constant (OS_DISPATCH), so that no call of ours and no
   function pointer of ours sits between the brackets. What the call itself
   jumps through (libc's vDSO pointer, the vDSO, the syscall) is the thing
   measured. */
#ifndef CLOCKBENCH_OS_CALLS_H
#define CLOCKBENCH_OS_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include "../drivers/cpu.h"

enum os_call {
    CALL_NONE, /* the empty bracket */
    CALL_REALTIME,
    CALL_MONOTONIC,
    CALL_MONOTONIC_RAW,
    CALL_REALTIME_COARSE,
    CALL_MONOTONIC_COARSE,
    CALL_BOOTTIME,
    CALL_TAI,
    CALL_PROCESS_CPUTIME,
    CALL_THREAD_CPUTIME,
    CALL_MONOTONIC_VDSO,    /* __vdso_clock_gettime, called directly */
    CALL_MONOTONIC_SYSCALL, /* the syscall instruction, no vDSO */
    CALL_GETTIMEOFDAY,
    CALL_TIME,
    CALL_CLOCK,
    CALL_RDTSC,
    CALL_RDTSCP,
    CALL_COUNT
};

/* What a call's value counts. */
enum os_unit { UNIT_NS, UNIT_US, UNIT_S, UNIT_CLOCK_T, UNIT_TSC };

struct os_call_info {
    const char *name;   /* as a user writes it */
    const char *path;   /* "libc-static" (the glibc linked into clockbench-os, the bundle's copy: the vDSO
                           where the clocksource has one, else a syscall; the host's own C library is
                           measured by os/hostlibc/, as path "libc"), "vdso", "syscall", "instruction" */
    clockid_t clock;    /* for clock_getres; -1 when the call has no clock id */
    enum os_unit unit;
    bool per_clocksource; /* its cost depends on the clocksource: measured on each */
    bool monotonic;       /* must never go back */
    bool coarse;          /* advances once a tick: clock_getres gives the tick */
};

extern const struct os_call_info os_calls[CALL_COUNT]; /* os_calls.c */

/* The call of path "libc-static" of that name ("clock_gettime(CLOCK_MONOTONIC)"),
   CALL_NONE when there is none: what the host-libc helper is asked to measure. */
enum os_call os_call_find(const char *name);

/* __vdso_clock_gettime, found in the vDSO's symbol table (os_vdso.c); NULL without one. */
typedef int (*vdso_clock_gettime_fn)(clockid_t, struct timespec *);
extern vdso_clock_gettime_fn os_vdso_clock_gettime;

static inline __attribute__((always_inline)) uint64_t ts_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* clock_gettime(CLOCK_MONOTONIC) by the syscall instruction (x86-64 ABI:
   number in RAX, arguments in RDI and RSI; RCX and R11 are clobbered). */
static inline __attribute__((always_inline)) long sys_clock_gettime(clockid_t id, struct timespec *t)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(228L /* __NR_clock_gettime */), "D"((long)id), "S"(t) : "rcx", "r11", "memory");
    return r;
}

/* One call, its value in its own unit (os_calls[k].unit). */
static inline __attribute__((always_inline)) uint64_t os_read(enum os_call k, vdso_clock_gettime_fn vdso)
{
    struct timespec t;
    struct timeval tv;
    switch (k) {
    case CALL_NONE: return 0;
    case CALL_REALTIME: clock_gettime(CLOCK_REALTIME, &t); return ts_ns(&t);
    case CALL_MONOTONIC: clock_gettime(CLOCK_MONOTONIC, &t); return ts_ns(&t);
    case CALL_MONOTONIC_RAW: clock_gettime(CLOCK_MONOTONIC_RAW, &t); return ts_ns(&t);
    case CALL_REALTIME_COARSE: clock_gettime(CLOCK_REALTIME_COARSE, &t); return ts_ns(&t);
    case CALL_MONOTONIC_COARSE: clock_gettime(CLOCK_MONOTONIC_COARSE, &t); return ts_ns(&t);
    case CALL_BOOTTIME: clock_gettime(CLOCK_BOOTTIME, &t); return ts_ns(&t);
    case CALL_TAI: clock_gettime(CLOCK_TAI, &t); return ts_ns(&t);
    case CALL_PROCESS_CPUTIME: clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return ts_ns(&t);
    case CALL_THREAD_CPUTIME: clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return ts_ns(&t);
    case CALL_MONOTONIC_VDSO: vdso(CLOCK_MONOTONIC, &t); return ts_ns(&t);
    case CALL_MONOTONIC_SYSCALL: sys_clock_gettime(CLOCK_MONOTONIC, &t); return ts_ns(&t);
    case CALL_GETTIMEOFDAY: gettimeofday(&tv, 0); return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
    case CALL_TIME: return (uint64_t)time(0);
    case CALL_CLOCK: return (uint64_t)clock();
    case CALL_RDTSC: return rdtsc();
    case CALL_RDTSCP: return rdtscp(0);
    case CALL_COUNT: break;
    }
    return 0;
}

/* Calls F(K, args...) with K the call as a constant, so that an
   always-inline F is specialised for each call. */
#define OS_DISPATCH(kind, F, ...)                                                                                               \
    do {                                                                                                                         \
        switch (kind) {                                                                                                          \
        case CALL_NONE: F(CALL_NONE, __VA_ARGS__); break;                                                                        \
        case CALL_REALTIME: F(CALL_REALTIME, __VA_ARGS__); break;                                                                \
        case CALL_MONOTONIC: F(CALL_MONOTONIC, __VA_ARGS__); break;                                                              \
        case CALL_MONOTONIC_RAW: F(CALL_MONOTONIC_RAW, __VA_ARGS__); break;                                                      \
        case CALL_REALTIME_COARSE: F(CALL_REALTIME_COARSE, __VA_ARGS__); break;                                                  \
        case CALL_MONOTONIC_COARSE: F(CALL_MONOTONIC_COARSE, __VA_ARGS__); break;                                                \
        case CALL_BOOTTIME: F(CALL_BOOTTIME, __VA_ARGS__); break;                                                                \
        case CALL_TAI: F(CALL_TAI, __VA_ARGS__); break;                                                                          \
        case CALL_PROCESS_CPUTIME: F(CALL_PROCESS_CPUTIME, __VA_ARGS__); break;                                                  \
        case CALL_THREAD_CPUTIME: F(CALL_THREAD_CPUTIME, __VA_ARGS__); break;                                                    \
        case CALL_MONOTONIC_VDSO: F(CALL_MONOTONIC_VDSO, __VA_ARGS__); break;                                                    \
        case CALL_MONOTONIC_SYSCALL: F(CALL_MONOTONIC_SYSCALL, __VA_ARGS__); break;                                              \
        case CALL_GETTIMEOFDAY: F(CALL_GETTIMEOFDAY, __VA_ARGS__); break;                                                        \
        case CALL_TIME: F(CALL_TIME, __VA_ARGS__); break;                                                                        \
        case CALL_CLOCK: F(CALL_CLOCK, __VA_ARGS__); break;                                                                      \
        case CALL_RDTSC: F(CALL_RDTSC, __VA_ARGS__); break;                                                                      \
        case CALL_RDTSCP: F(CALL_RDTSCP, __VA_ARGS__); break;                                                                    \
        case CALL_COUNT: break;                                                                                                  \
        }                                                                                                                        \
    } while (0)

/* Read cost: up to n calls, each alone between serialised TSC reads
   (drivers/cpu.h's pair) after an empty bracket of the same code without
   the call, until budget ticks have passed; full[] and empty[] get the
   ticks, the count is returned. Instantiate it through OS_DISPATCH, so that
   k is a constant and nothing but the call sits between the brackets. */
static inline __attribute__((always_inline)) uint32_t os_cost_loop(enum os_call k, vdso_clock_gettime_fn vdso, uint64_t *full,
                                                                   uint64_t *empty, uint32_t n, uint64_t budget)
{
    uint64_t start = rdtsc_begin();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e0 = rdtsc_begin();
        __asm__ volatile("" ::"r"(os_read(CALL_NONE, vdso)));
        uint64_t e1 = rdtsc_end();
        uint64_t a = rdtsc_begin();
        uint64_t v = os_read(k, vdso);
        uint64_t b = rdtsc_end();
        __asm__ volatile("" ::"r"(v));
        empty[i] = e1 - e0;
        full[i] = b - a;
        if (b - start > budget)
            return i + 1;
    }
    return n;
}

/* Nearest ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped: the median's 95%
   interval by order statistics of n sorted samples, as the language
   probes give it (clockbench-os's own rows and the host-libc helper's). */
static inline size_t os_ci_rank(size_t n, int side)
{
    double r = (double)n / 2 + side * 0.98 * __builtin_sqrt((double)n);
    if (side < 0)
        return r < 0 ? 0 : (size_t)__builtin_floor(r);
    r = __builtin_ceil(r);
    return r > (double)(n - 1) ? n - 1 : (size_t)r;
}

#endif

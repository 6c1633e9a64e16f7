/* The calls clockbench-os measures (os_calls.h): one table, read by
   clockbench-os and by its host-libc helper (os/hostlibc/), which measures
   the calls of path "libc-static" again through the host's own C library. */
#include "os_calls.h"

#include <string.h>

const struct os_call_info os_calls[CALL_COUNT] = {
    [CALL_NONE] = {"(empty bracket)", "none", -1, UNIT_NS, false, false, false},
    [CALL_REALTIME] = {"clock_gettime(CLOCK_REALTIME)", "libc-static", CLOCK_REALTIME, UNIT_NS, true, false, false},
    [CALL_MONOTONIC] = {"clock_gettime(CLOCK_MONOTONIC)", "libc-static", CLOCK_MONOTONIC, UNIT_NS, true, true, false},
    [CALL_MONOTONIC_RAW] = {"clock_gettime(CLOCK_MONOTONIC_RAW)", "libc-static", CLOCK_MONOTONIC_RAW, UNIT_NS, true, true, false},
    [CALL_REALTIME_COARSE] = {"clock_gettime(CLOCK_REALTIME_COARSE)", "libc-static", CLOCK_REALTIME_COARSE, UNIT_NS, false, false, true},
    [CALL_MONOTONIC_COARSE] = {"clock_gettime(CLOCK_MONOTONIC_COARSE)", "libc-static", CLOCK_MONOTONIC_COARSE, UNIT_NS, false, true, true},
    [CALL_BOOTTIME] = {"clock_gettime(CLOCK_BOOTTIME)", "libc-static", CLOCK_BOOTTIME, UNIT_NS, true, true, false},
    [CALL_TAI] = {"clock_gettime(CLOCK_TAI)", "libc-static", CLOCK_TAI, UNIT_NS, true, false, false},
    [CALL_PROCESS_CPUTIME] = {"clock_gettime(CLOCK_PROCESS_CPUTIME_ID)", "libc-static", CLOCK_PROCESS_CPUTIME_ID, UNIT_NS, false, true, false},
    [CALL_THREAD_CPUTIME] = {"clock_gettime(CLOCK_THREAD_CPUTIME_ID)", "libc-static", CLOCK_THREAD_CPUTIME_ID, UNIT_NS, false, true, false},
    [CALL_MONOTONIC_VDSO] = {"clock_gettime(CLOCK_MONOTONIC)", "vdso", CLOCK_MONOTONIC, UNIT_NS, true, true, false},
    [CALL_MONOTONIC_SYSCALL] = {"clock_gettime(CLOCK_MONOTONIC)", "syscall", CLOCK_MONOTONIC, UNIT_NS, true, true, false},
    [CALL_GETTIMEOFDAY] = {"gettimeofday", "libc-static", -1, UNIT_US, true, false, false},
    [CALL_TIME] = {"time", "libc-static", -1, UNIT_S, false, false, false},
    [CALL_CLOCK] = {"clock", "libc-static", -1, UNIT_CLOCK_T, false, true, false},
    [CALL_RDTSC] = {"rdtsc", "instruction", -1, UNIT_TSC, false, false, false},
    [CALL_RDTSCP] = {"rdtscp", "instruction", -1, UNIT_TSC, false, false, false},
};

enum os_call os_call_find(const char *name)
{
    for (int k = 1; k < CALL_COUNT; k++)
        if (!strcmp(os_calls[k].name, name) && !strcmp(os_calls[k].path, "libc-static"))
            return (enum os_call)k;
    return CALL_NONE;
}

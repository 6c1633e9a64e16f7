/* The languages' clocks (issue 36; the probes' contract beside their
   sources, os/lang/): each language's probe run on each clocksource, its
   costs, steps, claims, cross-CPU order and cost under threads; each API's
   path proven under ptrace (the system calls of the thread that made the
   calls, and their clock ids, once as it runs and once with the vDSO
   hidden from it); its clock named by bracketing its value between reads
   of every candidate clock; the "lang_clock" records and the ladder
   (docs/output.md). The parsing and arithmetic: os_lang_parse.c. */
#ifndef CLOCKBENCH_OS_LANG_H
#define CLOCKBENCH_OS_LANG_H

#include <stdbool.h>

#include "os_lang_parse.h"

struct lang_options {
    bool off;               /* --no-lang */
    bool pick[LANG_COUNT];  /* --lang a,b (all when not given) */
    bool picked;
    const char *dir;        /* --lang-dir; NULL: the default (lang_setup) */
    unsigned calls;         /* --lang-calls: cost, steps and threads n */
    unsigned timeout_s;     /* --lang-timeout: any one probe command */
    unsigned rounds;        /* the cost's rounds an API (9; 3 with --quick), at most LANG_ROUNDS_MAX */
    unsigned processes;     /* the probe processes they are spread over (3; 1 with --quick) */
    const char *runtime[LANG_COUNT]; /* --python PATH and kin: this runtime, not the first in PATH */
};
extern struct lang_options lang_opt;

/* The CPUs this process may use, noted before clockbench-os pins itself:
   the pairs for `cross` and N for `threads`. */
void lang_note_cpus(void);

/* Resolves LANG_DIR and which languages can be run, saying in one line
   each why one cannot. argv0: clockbench-os's own path. */
void lang_setup(void);

/* --java, --python, --node, --dotnet: the language whose runtime the
   option names, or -1. */
int lang_runtime_option(const char *option);

/* One clocksource: measures every language picked and prints its ladder:
   the rows clockbench-os measured itself (the bare read, the vDSO, libc,
   the syscall) and then the languages'. bare_ns: the bare read's p50
   (the ratios' base); tsc_hz: the rate that turns ticks into ns. */
void lang_measure_clocksource(const char *clocksource, const struct lang_row *os_rows, int n_os, double bare_ns, double tsc_hz);

struct os_clocksources;
/* After every clocksource: one line and one lang_summary record per API
   across the clocksources measured; when only one was, which others the
   kernel offers and what they would mean (the syscall path). */
void lang_summarise(const struct os_clocksources *cs);
/* The TSC's own step in ticks: single calls' p50 intervals are widened by it. */
void lang_note_tsc_step(double step_ticks);

/* Times, now, on clockbench-os's CPU, a fixed reference loop and the bare
   read (ns): set by clockbench_os.c, called before each round of `cost`. */
typedef void (*lang_round_reference_fn)(double *ref_ns, double *bare_ns);
void lang_set_round_reference(lang_round_reference_fn fn);

typedef void (*lang_check_fn)(const char *result, const char *name, const char *fmt, ...);
/* The checks over every run: probes that failed, languages not measured,
   clocksources that changed under a language. */
void lang_judge(lang_check_fn check);

#endif

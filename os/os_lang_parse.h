/* The pure half of the language probes (docs/output.md, "lang_clock";
   the probes' contract: each probe's `info`, `cost`, `steps`, `cross` and
   `threads` lines): the languages and their APIs, parsing a probe's lines,
   naming a clock by bracketing, the path's sentence and the ladder's rows.
   No system call here: the file is compiled into the host test library too
   (tests/host). */
#ifndef CLOCKBENCH_OS_LANG_PARSE_H
#define CLOCKBENCH_OS_LANG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LANG_COUNT 8
#define LANG_API_MAX 5
#define LANG_HIST_MAX 48
#define LANG_TEXT_MAX 128

struct lang_def {
    const char *key;      /* as --lang takes it, and the records' "language" */
    const char *title;    /* for people: "C++ (libstdc++)" */
    const char *short_name; /* the ladder's language column: "C++gnu" */
    const char *runner;   /* the runtime to execute, found in PATH; NULL: the probe is the program */
    const char *probe;    /* the probe under LANG_DIR (a file, or java's class folder) */
    const char *missing;  /* "no JDK (apt install openjdk-17-jdk-headless)" */
    const char *apis[LANG_API_MAX];
    int n_apis;
};
extern const struct lang_def lang_defs[LANG_COUNT];

/* The language of that key, or -1. */
int lang_find(const char *key);
/* A comma-separated list of keys into pick[]; false (with the first bad
   name in bad) on an unknown or empty name. */
bool lang_pick(const char *list, bool pick[LANG_COUNT], char *bad, size_t bad_size);
/* "cpp-libstdc++, cpp-libc++, ...": for the line that refuses a bad name. */
const char *lang_keys_text(void);

/* ---- the probe's lines ---- */
struct lang_api_info {
    char api[48];
    bool claim_known;
    double claim_ns;
    bool private_origin;
    char claim_source[LANG_TEXT_MAX];
    bool absent;                      /* `api <name> absent=<why>`: this runtime lacks it (Python 3.6's *_ns) */
    char absent_why[LANG_TEXT_MAX];
};
struct lang_info {
    char runtime[LANG_TEXT_MAX];
    struct lang_api_info apis[LANG_API_MAX];
    int n;
};
/* The whole output of `info` (several lines) for language l; false with why. */
bool lang_parse_info(int l, const char *text, struct lang_info *out, const char **why);

/* A command given a bound on the whole (its budget_ms argument) says
   whether the bound stopped it before the count asked: ` budget_ms=B cut=0|1`
   at the end of its line (absent: no bound was given). */
struct lang_cut {
    bool bounded, cut;
    uint64_t budget_ms;
};
struct lang_cost {
    struct lang_cut bound;
    bool tsc;        /* method=tsc (ticks, single calls) or method=batch (ns per call, batches) */
    uint64_t n, batch;
    double min, p50, mean, p99, p999, max, bracket; /* in the line's unit; p99, p999, bracket: tsc only */
    char timer[48];  /* batch: which API timed the batches */
    bool ci_known;   /* p50_lo= and p50_hi= given: the median's 95% interval by order statistics */
    double p50_lo, p50_hi; /* in the line's unit, before any widening by the timer's step */
};
struct lang_steps {
    struct lang_cut bound;
    uint64_t n, zero, backward;
    bool least_known;
    double least_ns, max_backward_ns;
    int bins;
    double bin_upper_ns[LANG_HIST_MAX];
    uint64_t bin_count[LANG_HIST_MAX];
};
struct lang_cross {
    struct lang_cut bound;
    unsigned a, b;
    uint64_t rounds, violations, lost;
    double max_violation_ns;
    char pinned[16];
};
/* `threads`: k threads, each pinned to its own CPU where the list allowed,
   each timing its loop in chunks. What an idle CPU would show is the least
   chunk; a thread that was preempted or shared its CPU (an involuntary
   context switch in its loop, or CPU time under LANG_THREAD_SHARE_MIN of its
   wall time) is disturbed. */
#define LANG_THREADS_MAX 1024
#define LANG_THREAD_SHARE_MIN 0.9
#define LANG_THREADS_CPUS_KEPT 16
struct lang_threads {
    struct lang_cut bound;
    uint64_t least_done;                 /* bounded: the fewest calls any thread made (its done= list) */
    unsigned k;
    uint64_t n;
    double per_call_ns, max_per_call_ns; /* the whole loop's mean per call: over the threads, and the slowest's */
    bool chunked;                        /* the chunk fields were given (an older probe gives none) */
    uint64_t chunk;                      /* calls per timed chunk */
    char pinned[16];                     /* "self", "requested", "no" */
    double least_ns, median_ns;          /* per call: the least chunk of the slowest thread, the median chunk of the slowest */
    unsigned disturbed;                  /* threads preempted or sharing their CPU */
    unsigned judged;                     /* threads whose switches or CPU time could be read */
    int disturbed_cpu[LANG_THREADS_CPUS_KEPT]; /* the CPUs of the first disturbed threads (-1: not pinned) */
    int n_disturbed_cpu;
    uint64_t switches;                   /* involuntary context switches over every thread's loop */
    bool share_known;
    double cpu_share;                    /* the least CPU time / wall time of any thread whose CPU time was read */
};
/* Whether one thread was disturbed: nivcsw < 0 and run_ns < 0 are unknown. */
bool lang_thread_disturbed(long long nivcsw, double run_ns, double wall_ns);
/* One result line of that command for that API; false with why (one line
   for people: what was wrong with it). */
bool lang_parse_cost(const char *line, const char *api, struct lang_cost *c, const char **why);
bool lang_parse_steps(const char *line, const char *api, struct lang_steps *s, const char **why);
bool lang_parse_cross(const char *line, const char *api, struct lang_cross *x, const char **why);
bool lang_parse_threads(const char *line, const char *api, struct lang_threads *t, const char **why);
/* `stamp`'s answer: a whole non-negative integer in ns. */
bool lang_parse_stamp(const char *line, uint64_t *ns);

/* TSC ticks to ns at the rate clockbench-os measured. */
double lang_ticks_ns(double ticks, double tsc_hz);
/* The p50's interval in ns: the probe's order-statistic 95% interval of the
   median, widened on each side by the timer's own step (the TSC's for single
   calls; the batch timer's least step over the batch's calls). False when the
   probe gave none. timer_step_ns: the TSC's step (tsc), or the batch timer's
   least step (batch), 0 when unknown. */
bool lang_p50_ci_ns(const struct lang_cost *c, double tsc_hz, double timer_step_ns, double *lo_ns, double *hi_ns);

/* ---- clock ids ---- */
/* The candidates for bracketing, in the order they are read. */
#define LANG_CLOCKS 8
extern const int lang_clock_ids[LANG_CLOCKS]; /* Linux's numbers: 0 REALTIME, 1 MONOTONIC, 2, 3 CPU time, 4 RAW, 5, 6 COARSE, 7 BOOTTIME */
const char *lang_clock_name(int id);  /* "CLOCK_MONOTONIC"; "clock 12" beyond the table */
const char *lang_clock_short(int id); /* "MONO" */

/* One round of `stamp`: each candidate read just before the line was
   written (before[i]) and just after the answer came back (after[i]).
   The ids (bits of lang_clock_ids' indices) whose bracket holds value,
   allowing the value below_ns under its bracket (a clock truncated to its
   own unit: currentTimeMillis) and above_ns over it (rounding). */
unsigned lang_bracket_round(const uint64_t before[LANG_CLOCKS], const uint64_t after[LANG_CLOCKS], uint64_t value, uint64_t below_ns,
                            uint64_t above_ns);
/* The candidates (indices' bits) that agree within tol_ns with index i
   over that round, i.e. cannot be told apart from it here. */
unsigned lang_bracket_alike(const uint64_t before[LANG_CLOCKS], int i, uint64_t tol_ns);
/* "CLOCK_MONOTONIC or CLOCK_BOOTTIME" for a mask of indices; "none" when empty. */
void lang_mask_text(unsigned mask, char *out, size_t size);

/* ---- the path ---- */
#define LANG_PATTERN_MAX 8
struct lang_trace {
    bool begin_seen, end_seen;
    uint64_t syscalls;       /* by the marked thread between the markers */
    uint64_t clock_calls;    /* of which clock_gettime, clock_getres, gettimeofday, time */
    uint64_t id_count[16];   /* clock_gettime/clock_getres by clock id (0..15) */
    uint64_t gettimeofday, time;
    uint64_t other;          /* any other system call */
    long other_nr;           /* the first such call's number */
    int last[LANG_PATTERN_MAX]; /* the last clock calls' ids, oldest first (-2 gettimeofday, -3 time) */
    int n_last;
};
/* Folds one system call of the marked thread into the trace. */
void lang_trace_add(struct lang_trace *t, long nr, uint64_t arg0);
/* Per 1000 calls of the API, from a trace of n calls. */
double lang_per_1000(uint64_t syscalls, uint64_t n);
/* The clock reads one call makes, oldest first, from the end of the trace
   (clock calls per API call, rounded; at most LANG_PATTERN_MAX); ids as in
   lang_trace.last. Returns how many. */
int lang_trace_pattern(const struct lang_trace *t, uint64_t n, int out[LANG_PATTERN_MAX]);
/* "CLOCK_REALTIME then CLOCK_MONOTONIC"; "gettimeofday". */
void lang_pattern_text(const int *ids, int k, const char *sep, bool short_names, char *out, size_t size);

/* The report's sentence for one API: "Go time.Now: two vDSO reads,
   CLOCK_REALTIME then CLOCK_MONOTONIC". seen: the trace as it runs;
   hidden: the same with the vDSO hidden from the probe (NULL when not
   made); bracket: the ids whose bracket held (indices' bits), alike: those
   equal to them here; private_origin: a value that cannot be bracketed. */
void lang_path_sentence(const char *title, const char *api, uint64_t n, const struct lang_trace *seen, const struct lang_trace *hidden,
                        unsigned bracket, bool bracketed, bool private_origin, char *out, size_t size);

/* ---- the ladder ---- */
struct lang_row {
    char name[40];        /* "  steady_clock", "vDSO clock_gettime MONO" */
    bool heading;         /* a language's line: name only */
    bool cost_known;
    double p50_ns;
    char method;          /* 't' single calls between TSC reads, 'b' batches */
    bool below_step;      /* under the TSC's step: the step's, not a cost */
    bool step_known;
    double least_step_ns;
    bool claim_known;
    double claim_ns;
    bool path_known;
    double syscalls_per_1000;
    bool via_syscall;     /* the clock is read by a system call (else the vDSO, or no clock call) */
    char clock[24];       /* "MONO", "REAL+MONO", "MONO|BOOT", "private", "-" */
    bool disturbed;       /* the host was busy: cut short by its bound, or starved */
};
/* Whether a claimed resolution is finer than the least step seen (the
   claim cannot be right: Python's 1 ns). */
bool lang_claim_finer(const struct lang_row *r);
/* A figure for a narrow column: 3 significant digits, 2e6 beyond 99999. */
const char *lang_fig(char *b, size_t size, double v);
/* The table's header lines and one line per row, each under 80 columns;
   ratios to bare_ns (0: none). Returns the length written. */
size_t lang_ladder_format(const struct lang_row *rows, int n, double bare_ns, char *out, size_t size);

#endif

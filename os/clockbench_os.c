/* clockbench-os: the operating system's side. The same measurements as the
   image (experiments/exp_read_cost.c, experiments/exp_sequential.c, experiments/exp_drift.c)
   made through Linux: what clock_gettime and its relatives cost for each
   clock id and each path (libc, the vDSO called directly, the syscall), the
   resolution they give against what clock_getres claims, and the TSC's
   rate against CLOCK_MONOTONIC_RAW; on each clocksource in turn when root,
   always putting the original back. Output: lines for people and "@cb"
   records (docs/output.md, "The OS side"), on standard output.

   As a VM's init (PID 1, `clockbench os-vm`) it mounts /sys and /proc
   itself, and ends by writing its status to QEMU's isa-debug-exit port, as
   the image does, then powers off. */
#define _GNU_SOURCE
#include <errno.h>
#include <gnu/libc-version.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../drivers/cpuinfo.h"
#include "../lib/run_status.h" /* DEBUG_EXIT_PORT, DEBUG_EXIT_BASE: QEMU's isa-debug-exit, as the image uses it */
#include "../lib/record.h"
#include "../lib/segfit.h"
#include "../lib/stats.h"
#include "../lib/uncertainty.h"
#include "os_analysis.h"
#include "os_calls.h"
#include "os_clocksource.h"
#include "os_hostlibc.h"
#include "os_keep.h"
#include "os_lang.h"
#include "os_probe_run.h" /* probe_sched_times: our own wait for a CPU */

#ifndef CLOCKBENCH_VERSION
#define CLOCKBENCH_VERSION "unknown"
#endif

const char *os_vdso_find(void);
/* glibc's, from <sys/io.h>, whose own outb clashes with drivers/cpu.h's */
int ioperm(unsigned long from, unsigned long num, int turn_on);

#define CHECK_EVERY 64       /* a time check after every 64th back-to-back read */
#define RATE_SAMPLES_MAX 8192

/* ---- options ---- */
static struct {
    int cpu;              /* -1: the CPU we start on */
    bool rt, quick, current_only, all_clocksources, records_only;
    unsigned reads;       /* per call, each alone between brackets */
    unsigned cost_ms;     /* time budget of those */
    unsigned seq_ms;      /* back-to-back reads, at least this long */
    unsigned rate_ms;     /* the TSC-rate window on each clocksource */
    unsigned timeout_s;
    const char *sysfs;    /* the clocksource folder in sysfs (tests point it elsewhere) */
    const char *out;      /* --out: keep the log in this folder */
} opt = {.cpu = -1, .reads = 20000, .cost_ms = 300, .seq_ms = 20, .rate_ms = 2000, .timeout_s = 0 /* 600, or 1800 with the languages */};

static bool is_init;
static const char *kept_in = ""; /* the folder this run's log is kept in (os_keep.c), "" when none */

/* ---- output ---- */
static unsigned n_pass, n_fail, n_skip;

static void emit(struct record *r) { fputs(record_end(r), stdout); }

static void check(const char *result, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(const char *result, const char *name, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("%s: %s: %s\n", result, name, detail);
    struct record r;
    record_begin(&r, "check");
    record_str(&r, "name", name);
    record_str(&r, "result", result);
    record_str(&r, "detail", detail);
    emit(&r);
    if (result[0] == 'P')
        n_pass++;
    else if (result[0] == 'F')
        n_fail++;
    else
        n_skip++;
}

/* A double into a record, exactly as printed with `decimals` digits. */
static void rec_f(struct record *r, const char *key, double v, unsigned decimals)
{
    if (v != v || fabs(v) > 9e15) {
        record_null(r, key);
        return;
    }
    double scale = 1;
    for (unsigned i = 0; i < decimals; i++)
        scale *= 10;
    record_fixed(r, key, llround(v * scale), decimals);
}

static double xd(struct xf v) { return (double)xf_to_fixed(v, 9) / 1e9; }

/* ---- the TSC's rate ---- */
struct rate {
    bool done;
    const char *why;
    double hz, unc_ppm, stderr_ppm, correlated_ppm, quant_ppm, window_s, narrowest_ns;
    uint32_t samples, kept;
};

static double tsc_hz;              /* from the first clocksource's window: turns ticks into ns */
static const char *tsc_hz_source = "not measured";

static uint64_t raw_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t);
    return ts_ns(&t);
}

/* A rough rate, to space the samples: 20 ms of TSC against CLOCK_MONOTONIC_RAW. */
static double rough_hz(void)
{
    uint64_t t0 = rdtsc_begin(), n0 = raw_ns();
    nanosleep(&(struct timespec){0, 20000000}, 0);
    uint64_t t1 = rdtsc_begin(), n1 = raw_ns();
    return n1 > n0 ? (double)(t1 - t0) * 1e9 / (double)(n1 - n0) : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Samples (TSC mid-bracket, CLOCK_MONOTONIC_RAW) every window/4096 for the
   window, each between two serialised TSC reads; brackets over 4 times the
   median width (a preemption or an interrupt inside) are left out; one
   least-squares line (lib/segfit.c) and its uncertainty
   (lib/uncertainty.c: statistical or correlated, and quantisation).
   Unlike the image's drift loop (the narrowest of several reads a slot,
   kept within 2x the narrowest), one read a slot: a call costs too much
   to spend several on each. */
static void measure_rate(unsigned window_ms, struct rate *out)
{
    *out = (struct rate){0};
    static int64_t x[RATE_SAMPLES_MAX], y[RATE_SAMPLES_MAX];
    static uint64_t width[RATE_SAMPLES_MAX], sorted[RATE_SAMPLES_MAX];
    static uint32_t seg[RATE_SAMPLES_MAX];
    double rough = rough_hz();
    if (rough <= 0) {
        out->why = "CLOCK_MONOTONIC_RAW did not advance over 20 ms";
        return;
    }
    uint32_t want = 4096;
    uint64_t step = (uint64_t)(rough * window_ms / 1000.0 / want);
    uint64_t start = rdtsc_begin(), first_ns = 0, first_tsc = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < want && n < RATE_SAMPLES_MAX; i++) {
        while (rdtsc_begin() - start < i * step)
            ;
        uint64_t a = rdtsc_begin();
        uint64_t v = raw_ns();
        uint64_t b = rdtsc_end();
        if (n == 0)
            first_ns = v, first_tsc = a;
        x[n] = (int64_t)(a + (b - a) / 2 - first_tsc);
        y[n] = (int64_t)(v - first_ns);
        width[n] = b - a;
        n++;
    }
    memcpy(sorted, width, n * sizeof *width);
    qsort(sorted, n, sizeof *sorted, cmp_u64);
    uint64_t limit = 4 * sorted[n / 2], narrowest = sorted[0];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (width[i] <= limit) {
            x[k] = x[i], y[k] = y[i], seg[k] = 0;
            k++;
        }
    struct seg_fit f;
    if (!segfit(x, y, seg, k, &f) || xf_is_zero(f.slope)) {
        out->why = "the samples could not be fitted";
        return;
    }
    struct freq_uncertainty u;
    struct xf hz = xf_div(xf_from_u64(1000000000), f.slope), ppm = xf_from_u64(1000000);
    double ns_per_tick = 1e9 / xd(hz);
    /* quantisation: the clock's 1 ns, and the narrowest bracket: with one
       read a slot (the image keeps the narrowest of several), where in its
       bracket each read fell is not averaged out by anything */
    freq_uncertainty(x, y, seg, k, &f, xf_from_u64(1 + (uint64_t)(narrowest * ns_per_tick)), 8, &u);
    out->done = true;
    out->hz = xd(hz);
    out->unc_ppm = xd(xf_mul(u.total, ppm));
    out->stderr_ppm = xd(xf_mul(u.statistical, ppm));
    out->correlated_ppm = xd(xf_mul(u.correlated, ppm));
    out->quant_ppm = xd(xf_mul(u.quantisation, ppm));
    out->window_s = (double)(y[k - 1] - y[0]) / 1e9;
    out->narrowest_ns = narrowest * ns_per_tick;
    out->samples = n;
    out->kept = k;
}

/* ---- read cost and sequential reads of one call ---- */
struct call_result {
    bool measured;
    const char *why;
    struct summary lat; /* TSC ticks, the empty brackets' median subtracted */
    uint64_t overhead;
    bool res_known;
    uint64_t res_ns;    /* clock_getres */
    struct os_sequence seq;
    double seq_ms;      /* how long the back-to-back reads ran */
    bool waited_known;
    double waited_share; /* of the cost loop's wall time, spent runnable waiting for a CPU (a busy host) */
    bool ci_known;
    uint64_t p50_lo, p50_hi; /* the p50's 95% interval by order statistics, ticks, the bracket subtracted */
};
/* a cost loop that waited for a CPU this share of its time was the busy
   host's figure as much as the call's: said, beside it (issue 48) */
#define WAITED_SHARE_DISTURBED 0.1

#define COST_CALL(K, full, empty, n, budget, got) (*(got) = os_cost_loop(K, os_vdso_clock_gettime, full, empty, n, budget))

/* Back to back, nothing between the reads but the store; the time is
   checked after every CHECK_EVERY reads (those deltas are not tabled). */
static inline __attribute__((always_inline)) uint32_t seq_loop(enum os_call k, uint64_t *v, uint32_t cap, uint64_t min_ticks,
                                                               uint64_t max_ticks, uint64_t *ran)
{
    vdso_clock_gettime_fn vdso = os_vdso_clock_gettime;
    uint64_t start = rdtsc_begin();
    uint32_t i = 0;
    for (; i < cap; i++) {
        v[i] = os_read(k, vdso);
        if (i % CHECK_EVERY == CHECK_EVERY - 1) {
            uint64_t el = rdtsc_end() - start;
            if ((el >= min_ticks && i >= 1000) || el >= max_ticks) {
                i++;
                break;
            }
        }
    }
    *ran = rdtsc_end() - start;
    return i;
}
#define SEQ_CALL(K, v, cap, min_t, max_t, ran, got) (*(got) = seq_loop(K, v, cap, min_t, max_t, ran))

/* The same, run-length encoded: for a clock that steps a few times a second
   a window long enough to see its steps holds more reads than memory. A
   compare sits between the reads, which a clock this coarse cannot see. */
static inline __attribute__((always_inline)) uint32_t rle_loop(enum os_call k, uint64_t *v, uint64_t *count, uint32_t cap,
                                                               uint64_t min_ticks, uint64_t *ran)
{
    vdso_clock_gettime_fn vdso = os_vdso_clock_gettime;
    uint64_t start = rdtsc_begin();
    uint32_t n = 1;
    v[0] = os_read(k, vdso);
    count[0] = 1;
    for (uint64_t i = 1;; i++) {
        uint64_t x = os_read(k, vdso);
        if (x == v[n - 1])
            count[n - 1]++;
        else {
            v[n] = x;
            count[n++] = 1;
            if (n == cap)
                break;
        }
        if (i % CHECK_EVERY == 0) {
            uint64_t el = rdtsc_end() - start;
            if (el >= min_ticks)
                break;
        }
    }
    *ran = rdtsc_end() - start;
    return n;
}
#define RLE_CALL(K, v, count, cap, min_t, ran, got) (*(got) = rle_loop(K, v, count, cap, min_t, ran))

static double ticks_ns(double ticks) { return tsc_hz > 0 ? ticks * 1e9 / tsc_hz : 0; }

/* ns per unit of the call's value */
static double unit_ns(enum os_call k)
{
    switch (os_calls[k].unit) {
    case UNIT_NS: return 1;
    case UNIT_US: return 1e3;
    case UNIT_S: return 1e9;
    case UNIT_CLOCK_T: return 1e9 / CLOCKS_PER_SEC;
    case UNIT_TSC: return tsc_hz > 0 ? 1e9 / tsc_hz : 0;
    }
    return 0;
}

/* Clocks that step once a tick or once a second: their back-to-back reads
   are counted run-length encoded. */
static bool slow_stepping(enum os_call k, const struct call_result *c)
{
    return os_calls[k].unit == UNIT_S || (c->res_known && c->res_ns >= 100000);
}

static void measure_call(enum os_call k, struct call_result *c)
{
    *c = (struct call_result){0};
    if (k == CALL_MONOTONIC_VDSO && !os_vdso_clock_gettime) {
        c->why = "no __vdso_clock_gettime in this process's vDSO";
        return;
    }
    struct timespec res;
    if (os_calls[k].clock != (clockid_t)-1 && clock_getres(os_calls[k].clock, &res) == 0) {
        c->res_known = true;
        c->res_ns = ts_ns(&res);
    }
    uint32_t n = opt.reads;
    uint64_t *full = malloc(n * sizeof *full), *empty = malloc(n * sizeof *empty), *scratch = malloc(n * sizeof *scratch);
    /* at least 25 ticks of a coarse clock, so that a single step shows
       even when a busy host merges some ticks (run-length encoded: cheap) */
    double seq_ms = opt.seq_ms;
    if (c->res_known && os_calls[k].coarse && c->res_ns * 25 / 1e6 > seq_ms)
        seq_ms = c->res_ns * 25 / 1e6;
    if (os_calls[k].unit == UNIT_S && seq_ms < 2100)
        seq_ms = 2100; /* time() steps once a second: two steps */
    uint32_t cap = opt.quick ? 1u << 18 : 1u << 21;
    uint64_t *v = malloc(cap * sizeof *v), *vscratch = malloc(cap * sizeof *vscratch);
    if (!full || !empty || !scratch || !v || !vscratch) {
        c->why = "no memory for the samples";
        goto out;
    }
    uint32_t got = 0;
    uint64_t run0, wait0, run1, wait1, t0 = raw_ns();
    bool sched0 = probe_sched_times(getpid(), &run0, &wait0);
    OS_DISPATCH(k, COST_CALL, full, empty, n, (uint64_t)(tsc_hz * opt.cost_ms / 1000), &got);
    uint64_t t1 = raw_ns();
    if (sched0 && probe_sched_times(getpid(), &run1, &wait1) && wait1 >= wait0 && t1 > t0) {
        c->waited_known = true;
        c->waited_share = (double)(wait1 - wait0) / (double)(t1 - t0);
    }
    struct summary se;
    stats_summarise(full, got, scratch, &c->lat); /* sorts full: the interval's ranks are read from it */
    if (got >= 6) {
        c->ci_known = true;
        c->p50_lo = full[os_ci_rank(got, -1)];
        c->p50_hi = full[os_ci_rank(got, 1)];
    }
    stats_summarise(empty, got, scratch, &se);
    c->overhead = se.p50;
    stats_subtract(&c->lat, se.p50);
    uint64_t ran = 0, min_t = (uint64_t)(tsc_hz * seq_ms / 1000), max_t = (uint64_t)(tsc_hz * (seq_ms * 4 + 100) / 1000);
    uint32_t m = 0;
    if (slow_stepping(k, c)) {
        /* full holds the counts: the cost loop is done with it */
        uint32_t rle_cap = cap < n ? cap : n;
        OS_DISPATCH(k, RLE_CALL, v, full, rle_cap, min_t, &ran, &m);
        os_sequence_analyse_rle(v, full, m, vscratch, &c->seq);
    } else {
        OS_DISPATCH(k, SEQ_CALL, v, cap, min_t, max_t, &ran, &m);
        os_sequence_analyse(v, m, CHECK_EVERY, vscratch, &c->seq);
    }
    c->seq_ms = ticks_ns((double)ran) / 1e6;
    c->measured = got > 0;
out:
    free(full), free(empty), free(scratch), free(v), free(vscratch);
}

/* ---- one clocksource ---- */
struct cs_result {
    char name[CS_NAME_MAX];
    bool selected, measured, all_calls;
    const char *why;
    char changed_to[CS_NAME_MAX]; /* the clocksource in use when its measurement ended, when not this one */
    struct rate rate;
    struct call_result calls[CALL_COUNT];
    struct hostlibc_cost host[CALL_COUNT]; /* the calls of path libc-static, through the host's own C library */
};
static struct cs_result cs_results[CS_MAX];
static uint64_t tsc_step; /* the TSC's own step, ticks (lib/stats.h): a p50 within STEP_FEW of them is not a figure */

/* The TSC's step by the image's staircase (drivers/cpu.h), on the CPU we are pinned to. */
static void measure_tsc_step(void)
{
    uint64_t mins[TSC_STAIR_MAX];
    tsc_staircase(mins, TSC_STAIR_MAX, 32);
    tsc_step = stats_staircase_step(mins, TSC_STAIR_MAX);
}

/* After the first clocksource's window: its TSC rate turns the step into ns. */
static void report_tsc_step(void)
{
    struct record r;
    record_begin(&r, "tsc_step");
    record_u64(&r, "step_ticks", tsc_step);
    rec_f(&r, "step_ns", ticks_ns(tsc_step), 3);
    record_u64(&r, "staircase", TSC_STAIR_MAX);
    record_u64(&r, "few", STEP_FEW);
    emit(&r);
    if (tsc_step > 1)
        printf("  the TSC moves in steps of %llu ticks (%.2f ns) here: a call whose p50 is under %u steps\n"
               "  is the step's, not a cost, and is printed as below it\n",
               (unsigned long long)tsc_step, ticks_ns(tsc_step), STEP_FEW);
}
static int cs_done;
static time_t started_at; /* the system's clock when it began */
static uint64_t run_t0_ns;  /* CLOCK_MONOTONIC_RAW when it began: the run's wall time */

static const char *cell(char *b, double v)
{
    if (v >= 100)
        snprintf(b, 16, "%.0f", v);
    else
        snprintf(b, 16, "%.1f", v);
    return b;
}

static void report_rate(const char *cs, const struct rate *r)
{
    if (!r->done) {
        printf("  TSC rate: not measured: %s\n", r->why);
        return;
    }
    printf("  TSC rate against CLOCK_MONOTONIC_RAW: %.3f kHz +- %.2f ppm (%.1f s, %u of %u samples, narrowest bracket %.0f ns)\n",
           r->hz / 1e3, r->unc_ppm, r->window_s, r->kept, r->samples, r->narrowest_ns);
    struct record rec;
    record_begin(&rec, "os_tsc_rate");
    record_str(&rec, "clocksource", cs);
    record_str(&rec, "reference", "CLOCK_MONOTONIC_RAW");
    rec_f(&rec, "hz", r->hz, 3);
    rec_f(&rec, "uncertainty_ppm", r->unc_ppm, 3);
    rec_f(&rec, "stderr_ppm", r->stderr_ppm, 3);
    rec_f(&rec, "correlated_ppm", r->correlated_ppm, 3);
    rec_f(&rec, "quantisation_ppm", r->quant_ppm, 3);
    rec_f(&rec, "window_s", r->window_s, 3);
    record_u64(&rec, "samples", r->samples);
    record_u64(&rec, "kept", r->kept);
    rec_f(&rec, "narrowest_bracket_ns", r->narrowest_ns, 1);
    emit(&rec);
}

/* ---- the C library: the host's own (the helper, path "libc") beside the bundle's copy (path "libc-static") ---- */
static void measure_host_libc(bool all_calls, struct cs_result *r)
{
    enum os_call calls[CALL_COUNT];
    int n = 0;
    for (int k = 1; k < CALL_COUNT; k++)
        if ((all_calls || os_calls[k].per_clocksource) && !strcmp(os_calls[k].path, "libc-static"))
            calls[n++] = (enum os_call)k;
    /* its whole run: each call's cost budget twice over, and 10 s to start (a loaded host) */
    unsigned bound_s = 10 + (unsigned)((uint64_t)n * opt.cost_ms * 2 / 1000);
    hostlibc_measure(calls, n, opt.reads, (uint64_t)(tsc_hz * opt.cost_ms / 1000), bound_s, r->host);
}

/* Which C library a call went through (os_latency's `libc`): the host's, as
   the helper found it, or the glibc linked into clockbench-os, whose file is
   clockbench-os itself. */
static void record_libc(struct record *r, const char *key, bool host)
{
    static char self[600];
    if (!host && !self[0] && !realpath("/proc/self/exe", self))
        snprintf(self, sizeof self, "clockbench-os");
    record_object_begin(r, key);
    record_str(r, "name", host ? hostlibc.name : "glibc");
    record_str(r, "version", host ? (hostlibc.version[0] && strcmp(hostlibc.version, "unknown") ? hostlibc.version : 0) : gnu_get_libc_version());
    record_str(r, "file", host ? hostlibc.file : self);
    record_str(r, "linked", host ? "dynamic" : "static");
    record_object_end(r);
}

/* What the libc rows are: said once, with the first clocksource. */
static void report_libc_heading(void)
{
    printf("  libc-static: the glibc %s linked into clockbench-os (the bundle's copy, not the host's)\n", gnu_get_libc_version());
    if (hostlibc.measured)
        printf("  libc: the host's own C library, %s %s (%s), through a dynamically linked helper%s\n", hostlibc.name,
               hostlibc.version[0] ? hostlibc.version : "of unknown version", hostlibc.file,
               hostlibc.loader[0] ? " run by musl's loader: no glibc loader here" : "");
    else
        printf("  libc: the host's own C library not measured: %s\n", hostlibc.why);
    struct record rec;
    record_begin(&rec, "os_libc");
    record_bool(&rec, "measured", hostlibc.measured);
    record_str(&rec, "reason", hostlibc.measured ? 0 : hostlibc.why);
    record_str(&rec, "helper", hostlibc.path[0] ? hostlibc.path : 0);
    record_str(&rec, "loader", hostlibc.loader[0] ? hostlibc.loader : 0);
    if (hostlibc.measured)
        record_libc(&rec, "libc", true);
    else
        record_null(&rec, "libc");
    record_libc(&rec, "static_libc", false);
    emit(&rec);
}

static void report_call(const char *cs, enum os_call k, const struct call_result *c)
{
    const struct os_call_info *ci = &os_calls[k];
    char b[8][16];
    if (!c->measured) {
        printf("  %-40s %-11s not measured: %s\n", ci->name, ci->path, c->why);
        return;
    }
    const struct summary *s = &c->lat;
    double step_ns = (double)c->seq.min_step * unit_ns(k);
    bool below = stats_below_step(s->p50, tsc_step);
    if (below)
        printf("  %-40s %-11s below the TSC's step (%.1f ns)   %8s %10s\n", ci->name, ci->path, ticks_ns(tsc_step),
               c->res_known ? cell(b[4], (double)c->res_ns) : "-", c->seq.min_step ? cell(b[5], step_ns) : "none");
    else
        printf("  %-40s %-11s %7s %7s %7s %7s %8s %10s\n", ci->name, ci->path, cell(b[0], ticks_ns(s->min)),
               cell(b[1], ticks_ns(s->p50)), cell(b[2], ticks_ns(xd(s->mean))), cell(b[3], ticks_ns(s->p99)),
               c->res_known ? cell(b[4], (double)c->res_ns) : "-", c->seq.min_step ? cell(b[5], step_ns) : "none");
    if (c->waited_known && c->waited_share >= WAITED_SHARE_DISTURBED)
        printf("  %-40s %-11s ~ disturbed: it waited for a CPU %.0f%% of its time (the host is busy)\n", "", "", c->waited_share * 100);
    struct record r;
    record_begin(&r, "os_latency");
    record_str(&r, "clocksource", cs);
    record_str(&r, "call", ci->name);
    record_str(&r, "path", ci->path);
    if (!strcmp(ci->path, "libc-static"))
        record_libc(&r, "libc", false);
    record_u64(&r, "n", s->n);
    rec_f(&r, "min_ns", ticks_ns(s->min), 3);
    rec_f(&r, "p50_ns", ticks_ns(s->p50), 3);
    if (c->ci_known && c->p50_hi >= c->overhead) {
        /* as a language's single calls: the order statistics, the bracket subtracted, widened by the TSC's step */
        double lo = ticks_ns((double)(c->p50_lo > c->overhead ? c->p50_lo - c->overhead : 0)) - ticks_ns((double)tsc_step);
        record_array_begin(&r, "p50_ci_ns");
        record_array_fixed(&r, llround((lo > 0 ? lo : 0) * 1000), 3);
        record_array_fixed(&r, llround(ticks_ns((double)(c->p50_hi - c->overhead + tsc_step)) * 1000), 3);
        record_array_end(&r);
    } else
        record_null(&r, "p50_ci_ns");
    rec_f(&r, "mean_ns", ticks_ns(xd(s->mean)), 3);
    rec_f(&r, "p99_ns", ticks_ns(s->p99), 3);
    rec_f(&r, "p999_ns", ticks_ns(s->p999), 3);
    rec_f(&r, "max_ns", ticks_ns(s->max), 3);
    rec_f(&r, "stddev_ns", ticks_ns(xd(s->stddev)), 3);
    record_u64(&r, "min_ticks", s->min);
    record_u64(&r, "p50_ticks", s->p50);
    record_u64(&r, "max_ticks", s->max);
    record_u64(&r, "bracket_overhead_ticks", c->overhead);
    record_bool(&r, "below_step", below);
    if (c->waited_known)
        rec_f(&r, "waited_for_cpu", c->waited_share, 3);
    else
        record_null(&r, "waited_for_cpu");
    record_bool(&r, "disturbed", c->waited_known && c->waited_share >= WAITED_SHARE_DISTURBED);
    emit(&r);
    static const char *const units[] = {"ns", "us", "s", "clock_t", "tsc"};
    record_begin(&r, "os_resolution");
    record_str(&r, "clocksource", cs);
    record_str(&r, "call", ci->name);
    record_str(&r, "path", ci->path);
    record_str(&r, "unit", units[ci->unit]);
    if (c->res_known)
        record_u64(&r, "getres_ns", c->res_ns);
    else
        record_null(&r, "getres_ns");
    rec_f(&r, "min_step_ns", step_ns, 3);
    record_u64(&r, "min_step", c->seq.min_step);
    record_u64(&r, "step_gcd", c->seq.step_gcd);
    record_u64(&r, "reads", c->seq.reads);
    record_u64(&r, "deltas", c->seq.deltas);
    record_u64(&r, "zero_deltas", c->seq.zero_deltas);
    record_u64(&r, "distinct", c->seq.distinct);
    record_u64(&r, "backward", c->seq.backward);
    record_u64(&r, "largest_backward", c->seq.largest_backward);
    record_u64(&r, "max_delta", c->seq.max_delta);
    rec_f(&r, "window_ms", c->seq_ms, 3);
    emit(&r);
    /* the sequential-reads table, the smallest distinct deltas, in parts */
    size_t per = 64, parts = (c->seq.hist_kept + per - 1) / per;
    for (size_t p = 0; p < parts; p++) {
        record_begin(&r, "os_histogram");
        record_str(&r, "clocksource", cs);
        record_str(&r, "call", ci->name);
        record_str(&r, "path", ci->path);
        record_u64(&r, "part", p);
        record_u64(&r, "parts", parts);
        record_u64(&r, "distinct", c->seq.distinct);
        record_array_begin(&r, "bins");
        for (size_t i = p * per; i < c->seq.hist_kept && i < (p + 1) * per; i++) {
            record_array_u64(&r, c->seq.hist[i].value);
            record_array_u64(&r, c->seq.hist[i].count);
        }
        record_array_end(&r);
        emit(&r);
    }
}

/* A call through the host's own C library (the helper's cost line): the
   row and its os_latency record, path "libc". clock_getres is the kernel's
   and the same whatever library asks, so the row shows the one measured. */
static void report_host_call(const char *cs, enum os_call k, const struct call_result *own, const struct hostlibc_cost *h)
{
    const struct os_call_info *ci = &os_calls[k];
    const struct lang_cost *c = &h->cost;
    char b[8][16];
    bool below = stats_below_step((uint64_t)c->p50, tsc_step);
    const char *getres = own->res_known ? cell(b[4], (double)own->res_ns) : "-";
    if (below)
        printf("  %-40s %-11s below the TSC's step (%.1f ns)   %8s %10s\n", ci->name, "libc", ticks_ns(tsc_step), getres, "-");
    else
        printf("  %-40s %-11s %7s %7s %7s %7s %8s %10s\n", ci->name, "libc", cell(b[0], ticks_ns(c->min)), cell(b[1], ticks_ns(c->p50)),
               cell(b[2], ticks_ns(c->mean)), cell(b[3], ticks_ns(c->p99)), getres, "-");
    struct record r;
    record_begin(&r, "os_latency");
    record_str(&r, "clocksource", cs);
    record_str(&r, "call", ci->name);
    record_str(&r, "path", "libc");
    record_libc(&r, "libc", true);
    record_u64(&r, "n", c->n);
    rec_f(&r, "min_ns", ticks_ns(c->min), 3);
    rec_f(&r, "p50_ns", ticks_ns(c->p50), 3);
    rec_f(&r, "mean_ns", ticks_ns(c->mean), 3);
    rec_f(&r, "p99_ns", ticks_ns(c->p99), 3);
    rec_f(&r, "p999_ns", ticks_ns(c->p999), 3);
    rec_f(&r, "max_ns", ticks_ns(c->max), 3);
    if (h->stddev_ticks >= 0)
        rec_f(&r, "stddev_ns", ticks_ns(h->stddev_ticks), 3);
    else
        record_null(&r, "stddev_ns");
    record_u64(&r, "min_ticks", (uint64_t)c->min);
    record_u64(&r, "p50_ticks", (uint64_t)c->p50);
    record_u64(&r, "max_ticks", (uint64_t)c->max);
    record_u64(&r, "bracket_overhead_ticks", (uint64_t)c->bracket);
    double lo, hi;
    if (lang_p50_ci_ns(c, tsc_hz, ticks_ns(tsc_step), &lo, &hi)) {
        record_array_begin(&r, "p50_ci_ns");
        record_array_fixed(&r, llround(lo * 1000), 3);
        record_array_fixed(&r, llround(hi * 1000), 3);
        record_array_end(&r);
    } else
        record_null(&r, "p50_ci_ns");
    record_bool(&r, "below_step", below);
    emit(&r);
}

static void measure_clocksource(const char *name, bool all_calls, struct cs_result *r)
{
    snprintf(r->name, sizeof r->name, "%s", name);
    r->all_calls = all_calls;
    measure_rate(opt.rate_ms, &r->rate);
    if (tsc_hz == 0 && r->rate.done) {
        tsc_hz = r->rate.hz;
        tsc_hz_source = "measured against CLOCK_MONOTONIC_RAW";
    } else if (tsc_hz == 0) {
        tsc_hz = rough_hz();
        tsc_hz_source = "a rough 20 ms estimate against CLOCK_MONOTONIC_RAW (the window failed)";
    }
    for (int k = 1; k < CALL_COUNT; k++)
        if (all_calls || os_calls[k].per_clocksource) {
            if (tsc_hz > 0)
                measure_call((enum os_call)k, &r->calls[k]);
            else
                r->calls[k] = (struct call_result){.why = "no TSC rate to turn ticks into ns: CLOCK_MONOTONIC_RAW did not advance"};
        }
    if (tsc_hz > 0)
        measure_host_libc(all_calls, r);
    /* the kernel may change clocksource by itself (its watchdog marking one unstable) */
    char now[CS_NAME_MAX] = "unreadable";
    if (os_cs_current(now) && strcmp(now, name) != 0)
        snprintf(r->changed_to, sizeof r->changed_to, "%s", now);
    r->measured = true;
}

static void report_clocksource(const struct cs_result *r)
{
    printf("\n-- clocksource %s%s --\n", r->name, r->all_calls ? " (the one in use at start: every call)" : " (the calls that read it)");
    if (r->changed_to[0])
        printf("  WARNING: the kernel was on %s by the end of this clocksource's measurement: the figures may mix the two\n", r->changed_to);
    report_rate(r->name, &r->rate);
    if (r->all_calls)
        report_libc_heading();
    printf("  %-40s %-11s %7s %7s %7s %7s %8s %10s\n", "call (ns)", "path", "min", "p50", "mean", "p99", "getres", "least step");
    for (int k = 1; k < CALL_COUNT; k++)
        if (r->all_calls || os_calls[k].per_clocksource) {
            report_call(r->name, (enum os_call)k, &r->calls[k]);
            if (r->host[k].measured)
                report_host_call(r->name, (enum os_call)k, &r->calls[k], &r->host[k]);
        }
    if (!r->all_calls && hostlibc.failed && hostlibc.measured)
        printf("  libc: the host's own C library not measured on this clocksource: %s\n", hostlibc.why);
    /* The step above is the staircase's (reads spaced by work); a back-to-back
       pair can land less than a step apart, so the two figures differ: say why. */
    for (int k = 1; k < CALL_COUNT; k++) {
        const struct call_result *c = &r->calls[k];
        if ((r->all_calls || os_calls[k].per_clocksource) && c->measured && os_calls[k].unit == UNIT_TSC && tsc_step > 1 &&
            c->seq.min_step && c->seq.min_step < tsc_step)
            printf("  %s: a least step of %llu tick%s, under the TSC's step of %llu: back-to-back reads can land\n"
                   "    less than a step apart; reads spaced by work move by whole steps, and a read's timing is\n"
                   "    good only to the step\n", os_calls[k].name, (unsigned long long)c->seq.min_step,
                   c->seq.min_step == 1 ? "" : "s", (unsigned long long)tsc_step);
    }
}

/* ---- the ladder's own rows: the bare read, the vDSO, libc, the syscall ---- */
static void os_row(struct lang_row *row, const char *name, enum os_call k, const struct call_result *c, int path, const char *clock)
{
    *row = (struct lang_row){.method = 't'};
    snprintf(row->name, sizeof row->name, "%s", name);
    if (!c->measured)
        return;
    row->cost_known = true;
    row->p50_ns = ticks_ns(c->lat.p50);
    row->below_step = stats_below_step(c->lat.p50, tsc_step);
    row->step_known = c->seq.min_step > 0;
    row->least_step_ns = (double)c->seq.min_step * unit_ns(k);
    row->claim_known = c->res_known;
    row->claim_ns = (double)c->res_ns;
    row->path_known = path >= 0;
    row->syscalls_per_1000 = path;
    row->via_syscall = path >= 500;
    row->disturbed = c->waited_known && c->waited_share >= WAITED_SHARE_DISTURBED;
    snprintf(row->clock, sizeof row->clock, "%s", clock);
}

/* A libc row: the host's own C library where the helper measured it (its
   least step and claim are the clock's, from the static copy's reads of the
   same clock: a C library passes the kernel's value on), else the static
   copy's, named so. */
static void os_libc_row(struct lang_row *row, enum os_call k, const struct call_result *own,
                        const struct hostlibc_cost *h, const char *clock)
{
    char name[64];
    snprintf(name, sizeof name, "  %s clock_gettime", h->measured ? "libc" : "libc-static");
    os_row(row, name, k, own, -1, clock);
    if (!h->measured)
        return;
    row->cost_known = true;
    row->p50_ns = ticks_ns(h->cost.p50);
    row->below_step = stats_below_step((uint64_t)h->cost.p50, tsc_step);
}

/* Rows for clocksource r; the calls not measured again on each
   clocksource (the bare reads, the CPU-time clock) from the first. */
static int os_ladder_rows(const struct cs_result *r, struct lang_row *rows, double *bare_ns)
{
    const struct cs_result *first = &cs_results[0];
    int n = 0;
    rows[n] = (struct lang_row){.heading = true};
    snprintf(rows[n++].name, sizeof rows[0].name, "clockbench-os (C)");
    os_row(&rows[n++], "  rdtsc (the bare read)", CALL_RDTSC, &first->calls[CALL_RDTSC], -1, "TSC");
    os_row(&rows[n++], "  rdtscp", CALL_RDTSCP, &first->calls[CALL_RDTSCP], -1, "TSC");
    /* the vDSO's entry, called directly, is not traced: on a clocksource
       with no vDSO mode (hpet, acpi_pm) it makes the system call itself,
       so its row claims no count ("-") rather than a "0 vdso" it has not seen */
    os_row(&rows[n++], "  vDSO clock_gettime", CALL_MONOTONIC_VDSO, &r->calls[CALL_MONOTONIC_VDSO], -1, "MONO");
    os_libc_row(&rows[n++], CALL_MONOTONIC, &r->calls[CALL_MONOTONIC], &r->host[CALL_MONOTONIC], "MONO");
    os_libc_row(&rows[n++], CALL_REALTIME, &r->calls[CALL_REALTIME], &r->host[CALL_REALTIME], "REAL");
    os_libc_row(&rows[n++], CALL_MONOTONIC_RAW, &r->calls[CALL_MONOTONIC_RAW], &r->host[CALL_MONOTONIC_RAW], "RAW");
    os_libc_row(&rows[n++], CALL_PROCESS_CPUTIME, &first->calls[CALL_PROCESS_CPUTIME], &first->host[CALL_PROCESS_CPUTIME], "PCPU");
    os_row(&rows[n++], "  syscall clock_gettime", CALL_MONOTONIC_SYSCALL, &r->calls[CALL_MONOTONIC_SYSCALL], 1000, "MONO");
    const struct call_result *bare = &first->calls[CALL_RDTSC];
    /* under the TSC's step the p50 is the step's (lib/stats.h): the ratios
       are then to at most that, and the row says so with its "<" */
    *bare_ns = !bare->measured ? 0 : bare->lat.p50 ? ticks_ns(bare->lat.p50) : ticks_ns(tsc_step);
    return n;
}

/* One round's reference (issue 48), on our CPU, just before a language
   API's round of `cost`: a fixed loop (the least of three, in ns: how fast
   this host runs at this moment, whatever the language does) and the bare
   read's p50 (RDTSC, the ladder's base). The loop is a runtime's kind of
   work, not one dependent chain: four multiply chains at once and loads
   from a table the size of an L1 cache, indexed by their values, so that
   a busy SMT sibling, a neighbour's cache traffic or a slower vCPU slows
   it as they slow an interpreter (a single chain of multiplies, latency
   bound, barely moved while CPython's calls went from 61 to 103 ns).
   About 50 us in all on a 2 GHz core. */
#define REF_LOOP_STEPS 4000
#define REF_TABLE_WORDS 4096 /* 32 KiB */
#define REF_BARE_READS 201
static void round_reference(double *ref_ns, double *bare_ns)
{
    static uint64_t table[REF_TABLE_WORDS];
    if (!table[1])
        for (int i = 0; i < REF_TABLE_WORDS; i++)
            table[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing's constant: spread values */
    uint64_t best = UINT64_MAX;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t x0 = 1, x1 = 2, x2 = 3, x3 = 4, a = rdtsc_begin();
        for (int i = 0; i < REF_LOOP_STEPS; i++) {
            /* Knuth's MMIX LCG, four chains; each adds a word the other picks */
            x0 = x0 * 6364136223846793005ull + table[x1 >> 52];
            x1 = x1 * 6364136223846793005ull + table[x2 >> 52];
            x2 = x2 * 6364136223846793005ull + table[x3 >> 52];
            x3 = x3 * 6364136223846793005ull + table[x0 >> 52];
            __asm__ volatile("" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3));
        }
        uint64_t b = rdtsc_end();
        if (b - a < best)
            best = b - a;
    }
    *ref_ns = ticks_ns((double)best);
    static uint64_t full[REF_BARE_READS], empty[REF_BARE_READS], scratch[REF_BARE_READS];
    uint32_t got = 0;
    OS_DISPATCH(CALL_RDTSC, COST_CALL, full, empty, REF_BARE_READS, (uint64_t)(tsc_hz > 0 ? tsc_hz / 100 : 1e7), &got);
    struct summary f, e;
    stats_summarise(full, got, scratch, &f);
    stats_summarise(empty, got, scratch, &e);
    /* under the TSC's step the p50 is the step's, as the ladder's base is */
    double ticks = f.p50 > e.p50 ? (double)(f.p50 - e.p50) : (double)tsc_step;
    *bare_ns = got ? ticks_ns(ticks) : 0;
}

static void measure_languages(const struct cs_result *r)
{
    struct lang_row rows[12];
    double bare_ns;
    int n = os_ladder_rows(r, rows, &bare_ns);
    lang_measure_clocksource(r->name, rows, n, bare_ns, tsc_hz);
}

/* ---- context ---- */
static struct os_clocksources cs;
static bool rt_fifo, memory_locked;
static char ignored_args[256];
static struct utsname uts;
static int pinned_cpu = -1;
static const char *pin_why, *rt_why, *vdso_why, *klog_why, *klog_unreadable;
static struct os_claim claims[16];
static int n_claims;

static void read_klog(void)
{
    int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, 0, 0);
    if (size <= 0)
        size = 1 << 20;
    char *buf = malloc((size_t)size + 1);
    int n = buf ? klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, size) : -1;
    if (n < 0) {
        klog_why = klog_unreadable = errno == EPERM ? "the kernel log is not readable here (kernel.dmesg_restrict=1 and not root)"
                                                    : "the kernel log could not be read";
        free(buf);
        return;
    }
    buf[n] = 0;
    for (char *save = 0, *line = strtok_r(buf, "\n", &save); line && n_claims < 16; line = strtok_r(0, "\n", &save))
        if (os_claim_parse(line, &claims[n_claims]))
            n_claims++;
    if (!n_claims)
        klog_why = "the kernel log holds no TSC calibration line (it may have been overwritten)";
    free(buf);
}

static void pin_and_prioritise(void)
{
    int cpu = opt.cpu >= 0 ? opt.cpu : sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu < 0 ? 0 : cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0)
        pinned_cpu = cpu < 0 ? 0 : cpu;
    else
        pin_why = errno == EINVAL ? "no such CPU among those allowed" : "sched_setaffinity failed";
    if (!opt.rt) {
        rt_why = "not asked for (--rt)";
        return;
    }
    struct sched_param sp = {.sched_priority = 50};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
        rt_why = errno == EPERM ? "SCHED_FIFO refused: not root, no CAP_SYS_NICE" : "SCHED_FIFO refused";
    else
        rt_fifo = true;
    /* what is mapped now only: the sample arrays come later, and locking
       them in advance (MCL_FUTURE) would fail them against RLIMIT_MEMLOCK */
    memory_locked = mlockall(MCL_CURRENT) == 0;
}

static int run_nice(void)
{
    errno = 0;
    int n = getpriority(PRIO_PROCESS, 0);
    return errno ? 0 : n;
}

static const char *policy_name(int policy)
{
    switch (policy) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_BATCH: return "SCHED_BATCH";
    case SCHED_IDLE: return "SCHED_IDLE";
    case SCHED_FIFO: return "SCHED_FIFO";
    case SCHED_RR: return "SCHED_RR";
    }
    return "unknown";
}

static const char *rt_desc(void) { return memory_locked ? "SCHED_FIFO 50, memory locked" : "SCHED_FIFO 50 (memory not locked)"; }

/* The host's identity for the store and the fleet: systemd's machine id
   (dbus's older copy where there is none), 32 hex digits; "" when neither. */
static void read_machine_id(char *out, size_t size)
{
    const char *files[] = {"/etc/machine-id", "/var/lib/dbus/machine-id"};
    out[0] = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files && !out[0]; i++) {
        FILE *f = fopen(files[i], "r");
        char line[80] = "";
        if (!f)
            continue;
        if (fgets(line, sizeof line, f)) {
            size_t n = strspn(line, "0123456789abcdef");
            if (n == 32)
                snprintf(out, size, "%.32s", line);
        }
        fclose(f);
    }
}

/* What the kernel log says of the TSC: true when it marked the TSC unstable
   (its own check, or the clocksource watchdog demoting it); false when the
   log was read and says neither; -1 when it could not be read. */
static int tsc_unstable(void)
{
    if (klog_why && !n_claims)
        return klog_why == klog_unreadable ? -1 : 0;
    for (int i = 0; i < n_claims; i++)
        if (!strcmp(claims[i].what, "tsc unstable") || (!strcmp(claims[i].what, "clocksource unstable") && !strcmp(claims[i].detail, "tsc")))
            return 1;
    return 0;
}

/* Only --all-clocksources switches the machine's clocksource: on someone
   else's host the default changes nothing (every process there would pay
   10-50x a clock read on hpet or acpi_pm meanwhile). */
static bool switching(void) { return opt.all_clocksources && !cs.why_not; }

/* The heading's line on which clocksources are measured, and why. */
static const char *clocksources_said(void)
{
    static char said[320];
    if (!opt.all_clocksources)
        snprintf(said, sizeof said, "the current clocksource only, nothing on this host changed (the default; --all-clocksources%s "
                 "measures each available one in turn, switching the whole machine's clocksource meanwhile)", geteuid() == 0 ? "" : ", as root,");
    else if (cs.why_not)
        snprintf(said, sizeof said, "--all-clocksources: the current clocksource only: %s", cs.why_not);
    else
        snprintf(said, sizeof said, "--all-clocksources: each available clocksource is measured in turn (the machine's clocksource "
                 "switched meanwhile), and the original put back");
    return said;
}

static void record_context(void)
{
    struct cpu_probe p;
    cpuinfo_probe(&p);
    const struct cpu_info *ci = &p.info;
    struct record r;
    record_begin(&r, "machine");
    cpu_identity_record(&r, ci);
    record_str(&r, "loader", "linux");
    emit(&r);
    printf("clockbench-os %s: the OS side, measured through Linux %s (%s)\n", CLOCKBENCH_VERSION, uts.release, uts.machine);
    printf("  CPU: %s %u.%u.%u, %s%s\n", ci->brand[0] ? ci->brand : ci->vendor, ci->family, ci->model, ci->stepping,
           ci->hypervisor ? "under the hypervisor " : "bare metal", ci->hypervisor ? ci->hv_vendor : "");
    printf("  clocksource at start: %s (available:", cs.original);
    for (int i = 0; i < cs.count; i++)
        printf(" %s", cs.available[i]);
    printf(")\n  %s\n", clocksources_said());
    if (pinned_cpu >= 0)
        printf("  pinned to CPU %d of %ld; real-time: %s\n", pinned_cpu, sysconf(_SC_NPROCESSORS_ONLN), rt_why ? rt_why : rt_desc());
    else
        printf("  NOT pinned (%s); real-time: %s\n", pin_why, rt_why ? rt_why : rt_desc());
    printf("  priority: nice %d, %s\n", run_nice(), rt_fifo ? "SCHED_FIFO 50" : policy_name(sched_getscheduler(0)));
    if (ignored_args[0])
        printf("  arguments ignored (as init there is no one to tell): %s\n", ignored_args);
    printf("  vDSO: %s\n", vdso_why ? vdso_why : "__vdso_clock_gettime found, also called directly");
    char machine_id[40];
    read_machine_id(machine_id, sizeof machine_id);
    printf("  host: %s (machine id %s)%s%s\n", uts.nodename, machine_id[0] ? machine_id : "unknown: no /etc/machine-id",
           keep_bundle_version()[0] ? "; run from the bundle " : "", keep_bundle_version());
    if (kept_in[0])
        printf("  this run's log: %s/os.log\n", kept_in);
    record_begin(&r, "os");
    record_str(&r, "hostname", uts.nodename);
    record_str(&r, "machine_id", machine_id[0] ? machine_id : 0);
    record_str(&r, "bundle", keep_bundle_version()[0] ? keep_bundle_version() : 0);
    record_str(&r, "log_dir", kept_in[0] ? kept_in : 0);
    int unstable = tsc_unstable();
    if (unstable < 0)
        record_null(&r, "tsc_unstable");
    else
        record_bool(&r, "tsc_unstable", unstable);
    record_str(&r, "os", uts.sysname);
    record_str(&r, "kernel", uts.release);
    record_str(&r, "kernel_version", uts.version);
    record_str(&r, "clocksource", cs.original);
    char avail[CS_MAX * CS_NAME_MAX] = "";
    for (int i = 0; i < cs.count; i++)
        snprintf(avail + strlen(avail), sizeof avail - strlen(avail), "%s%s", i ? " " : "", cs.available[i]);
    record_str(&r, "available_clocksources", avail);
    record_bool(&r, "root", geteuid() == 0);
    record_bool(&r, "switching", switching());
    record_str(&r, "switching_reason", switching() ? 0 : !opt.all_clocksources ? "the default (--all-clocksources not given)" : cs.why_not);
    record_bool(&r, "init", is_init);
    if (pinned_cpu >= 0)
        record_u64(&r, "pinned_cpu", (uint64_t)pinned_cpu);
    else
        record_null(&r, "pinned_cpu");
    record_str(&r, "pin_reason", pin_why);
    record_u64(&r, "cpus_online", (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
    record_bool(&r, "realtime", rt_fifo);
    record_str(&r, "realtime_reason", rt_why);
    /* the priority it ran at: an SRE's `nice -n 19` on a busy host shows here */
    record_i64(&r, "nice", run_nice());
    record_str(&r, "sched_policy", rt_fifo ? "SCHED_FIFO" : policy_name(sched_getscheduler(0)));
    record_bool(&r, "memory_locked", memory_locked);
    record_str(&r, "ignored_args", ignored_args[0] ? ignored_args : 0);
    record_bool(&r, "vdso", os_vdso_clock_gettime != 0);
    record_str(&r, "vdso_reason", vdso_why);
    record_bool(&r, "quick", opt.quick);
    /* when it ran, by the system's clock (UTC): what `clockbench import` dates
       the run by (the image has its RTC's date; a file's time is a copy's) */
    char started[32] = "";
    struct tm tm;
    if (gmtime_r(&started_at, &tm) && strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm))
        record_str(&r, "started_utc", started);
    else
        record_null(&r, "started_utc");
    emit(&r);
    /* the log holds everything since boot: earlier runs' switches too */
    printf("  kernel log%s:", n_claims ? " (since boot: switches may be earlier runs')" : "");
    if (!n_claims)
        printf(" %s\n", klog_why);
    printf("\n");
    for (int i = 0; i < n_claims; i++) {
        printf("    %s", claims[i].what);
        if (claims[i].khz)
            printf(" %llu.%03llu", (unsigned long long)(claims[i].khz / 1000), (unsigned long long)(claims[i].khz % 1000));
        printf("%s%s\n", claims[i].detail[0] ? " " : "", claims[i].detail);
        record_begin(&r, "os_claim");
        record_str(&r, "source", "kernel log");
        record_str(&r, "what", claims[i].what);
        record_str(&r, "detail", claims[i].detail);
        if (claims[i].khz)
            record_u64(&r, "hz", claims[i].khz * 1000);
        else
            record_null(&r, "hz");
        emit(&r);
    }
}

/* Early in boot (as a VM's init) Linux still runs on "tsc-early" and
   switches to "tsc" itself once its refined calibration is done (about a
   second, longer under emulation): measuring before that would time a
   clocksource about to go, and take the kernel's own switch for ours.
   Waits for it, at most 30 s; returns the seconds waited. */
static double settle_clocksource(void)
{
    char now[CS_NAME_MAX];
    if (opt.sysfs)
        os_cs_probe(opt.sysfs, false, &cs); /* points the reads at the folder asked for */
    uint64_t t0 = raw_ns();
    while (os_cs_current(now) && !strcmp(now, "tsc-early") && raw_ns() - t0 < 30000000000ull)
        nanosleep(&(struct timespec){0, 100000000}, 0);
    return (double)(raw_ns() - t0) / 1e9 > 0.05 ? (double)(raw_ns() - t0) / 1e9 : 0;
}

/* ---- checks over what was measured ---- */
static void judge(void)
{
    const struct cs_result *first = &cs_results[0];
    unsigned missing = 0;
    char which[256] = "";
    for (int k = 1; k < CALL_COUNT; k++)
        if (!first->calls[k].measured && k != CALL_MONOTONIC_VDSO) {
            missing++;
            snprintf(which + strlen(which), sizeof which - strlen(which), " %s", os_calls[k].name);
        }
    if (missing)
        check("FAIL", "OS clocks measured", "%u call%s not measured:%s", missing, missing == 1 ? "" : "s", which);
    else
        check("PASS", "OS clocks measured", "%d calls on clocksource %s%s", CALL_COUNT - 1 - !first->calls[CALL_MONOTONIC_VDSO].measured,
              first->name, first->calls[CALL_MONOTONIC_VDSO].measured ? "" : " (no vDSO here)");
    if (!first->calls[CALL_MONOTONIC_VDSO].measured)
        check("SKIP", "vDSO path", "%s", first->calls[CALL_MONOTONIC_VDSO].why);
    unsigned back = 0;
    char where[256] = "";
    for (int i = 0; i < cs_done; i++)
        for (int k = 1; k < CALL_COUNT; k++) {
            const struct call_result *c = &cs_results[i].calls[k];
            if (c->measured && os_calls[k].monotonic && c->seq.backward) {
                back += (unsigned)c->seq.backward;
                snprintf(where + strlen(where), sizeof where - strlen(where), " %s/%s on %s", os_calls[k].name, os_calls[k].path,
                         cs_results[i].name);
            }
        }
    unsigned moved = 0;
    for (int i = 0; i < cs_done; i++)
        moved += cs_results[i].changed_to[0] != 0;
    if (moved)
        check("FAIL", "clocksource held", "the kernel changed clocksource by itself during %u clocksource%s measurement", moved,
              moved == 1 ? "'s" : "s'");
    if (back)
        check("FAIL", "OS clocks monotonic", "%u backward step%s:%s", back, back == 1 ? "" : "s", where);
    else
        check("PASS", "OS clocks monotonic", "no backward step in the monotonic clocks' back-to-back reads on %d clocksource%s", cs_done,
              cs_done == 1 ? "" : "s");
    /* the coarse clocks advance once a tick, by the tick clock_getres reports
       (LOW_RES_NSEC = TICK_NSEC); the timekeeper's rounding and NTP's
       adjustment move a step by far less than 1 % */
    for (int k = 1; k < CALL_COUNT; k++) {
        const struct call_result *c = &first->calls[k];
        if (!os_calls[k].coarse || !c->measured)
            continue;
        char name[96];
        snprintf(name, sizeof name, "coarse resolution: %s", os_calls[k].name);
        if (!c->seq.min_step)
            check("FAIL", name, "no step in %.1f ms of reads (clock_getres says %llu ns)", c->seq_ms, (unsigned long long)c->res_ns);
        else if (!c->res_known)
            check("FAIL", name, "clock_getres failed");
        else if ((double)c->seq.min_step >= 1.98 * (double)c->res_ns)
            /* every step seen spans two ticks or more: the reads (a few ms
               of them) were held off the CPU across a tick, or the tick came
               late (seen on a loaded host: one step of 372 ms); no step of a
               single tick was seen to judge */
            check("SKIP", name, "least step %llu ns, %.1f ticks of %llu ns: every step seen spans a missed tick (the "
                  "reads were away, or the tick late, over %.1f ms of reads); none of one tick to judge",
                  (unsigned long long)c->seq.min_step, (double)c->seq.min_step / (double)c->res_ns,
                  (unsigned long long)c->res_ns, c->seq_ms);
        else {
            double rel = fabs((double)c->seq.min_step - (double)c->res_ns) / (double)c->res_ns;
            check(rel <= 0.01 ? "PASS" : "FAIL", name, "least step %llu ns, clock_getres %llu ns (%.3f %% apart; within 1 %% expected)",
                  (unsigned long long)c->seq.min_step, (unsigned long long)c->res_ns, rel * 100);
        }
    }
}

static void finish(int status)
{
    fflush(stdout);
    if (is_init) {
        sync();
        if (ioperm(DEBUG_EXIT_PORT, 1, 1) == 0)
            outb(DEBUG_EXIT_PORT, (uint8_t)(DEBUG_EXIT_BASE + status));
        reboot(RB_POWER_OFF);
        for (;;)
            pause();
    }
    exit(status);
}

/* Appends text to buf (async-signal-safe: no stdio in a handler). */
static size_t put(char *buf, size_t at, size_t size, const char *text)
{
    while (*text && at + 1 < size)
        buf[at++] = *text++;
    buf[at] = 0;
    return at;
}

/* Any signal that would end the run: put the clocksource back, say so,
   then die by the same signal (SA_RESETHAND made it the default again, and
   SA_NODEFER lets raise() deliver it now), so a parent sees how it ended. */
static void on_signal(int sig)
{
    bool was = os_cs_switched();
    os_cs_restore();
    char msg[200], num[4] = {(char)('0' + sig / 10 % 10), (char)('0' + sig % 10), 0};
    size_t n = put(msg, 0, sizeof msg, sig == SIGALRM ? "\nclockbench-os: timed out (signal " : "\nclockbench-os: stopped (signal ");
    n = put(msg, n, sizeof msg, num[0] == '0' ? num + 1 : num);
    n = put(msg, n, sizeof msg, ")");
    if (was)
        n = put(msg, n, sizeof msg, os_cs_switched() ? "; the original clocksource could NOT be put back" : "; the original clocksource is back");
    n = put(msg, n, sizeof msg, "\n");
    (void)!write(1, msg, n);
    if (is_init) {
        if (ioperm(DEBUG_EXIT_PORT, 1, 1) == 0)
            outb(DEBUG_EXIT_PORT, (uint8_t)(DEBUG_EXIT_BASE + 1));
        reboot(RB_POWER_OFF);
    }
    raise(sig);
    _exit(128 + sig);
}

/* Every signal whose default ends the process, SIGPIPE included (a root
   run piped into `head`); a stack of its own, so that a stack overflow's
   SIGSEGV still reaches the handler. SIGKILL cannot be caught: a run
   killed that way leaves the clocksource switched (docs/output.md). */
static void catch_signals(void)
{
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    sigaltstack(&ss, 0);
    static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE,
                               SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS};
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaction(sigs[i], &sa, 0);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: clockbench-os [--quick] [--cpu N] [--rt] [--all-clocksources] [--reads N] [--rate-ms MS] [--timeout S] [--no-lang] [--lang LIST]\n"
               "  Measures clock_gettime and its relatives through Linux: read cost, resolution, the TSC's rate.\n"
               "  It measures the current clocksource only, and changes no setting of the host (docs/os-side.md).\n"
               "  --quick         fewer reads and a 300 ms rate window (the tests' profile)\n"
               "  --cpu N         pin to CPU N (default: the CPU it starts on)\n"
               "  --rt            SCHED_FIFO priority 50 and locked memory (root or CAP_SYS_NICE)\n"
               "  --all-clocksources  the lab mode, root only: every available clocksource in turn, switching the WHOLE\n"
               "                  machine's clocksource for each one's measurement (about 20 s with the languages; every\n"
               "                  process there pays 10-50x a clock read on hpet or acpi_pm meanwhile), the original put\n"
               "                  back at the end, on a signal and on --timeout; not for a host in service\n"
               "  --current-only  the current clocksource only: the default (kept for older command lines)\n"
               "  --reads N       reads per call, each alone between brackets (default 20000; 100..1000000)\n"
               "  --rate-ms MS    the TSC-rate window on each clocksource (default 2000; 50..600000)\n"
               "  --timeout S     give up after S seconds, putting the clocksource back (default 1800; 600 with --no-lang)\n"
               "  --sysfs DIR     the clocksource folder (default /sys/devices/system/clocksource/clocksource0)\n"
               "  --no-lang       leave the languages' clocks out (measured by default)\n"
               "  --lang LIST     only these languages, comma-separated: %s\n"
               "  --lang-dir DIR  the probes (default: 'lang' beside clockbench-os or beside its folder, else ./build/lang)\n"
               "  --lang-calls N  calls per probe measurement: cost, steps, threads (default 20000; 100..1000000)\n"
               "  --lang-timeout S  give up on any one probe command after S seconds (default 30; 1..3600)\n"
               "  --java PATH, --python PATH, --node PATH, --dotnet PATH  measure this runtime, not the first in PATH\n"
               "                  (--java also takes a JDK's folder; --dotnet a mono or a dotnet executable)\n"
               "  --out DIR       keep the whole output in DIR/os.log too (never overwritten); run from the bundle,\n"
               "                  a new folder clockbench-os-HOST-TIME is made by default (here, else $HOME, else /tmp)\n"
               "Output: docs/output.md, \"The OS side\". Exit status 0 passed, 1 failed, 64 bad usage, 73 the log cannot be kept.\n", lang_keys_text());
}

static unsigned number(const char *opt_name, const char *v, unsigned lo, unsigned hi)
{
    char *end;
    errno = 0;
    unsigned long x = v ? strtoul(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "clockbench-os: %s needs a whole number from %u to %u, not '%s'\n", opt_name, lo, hi, v ? v : "");
        exit(64);
    }
    return (unsigned)x;
}

/* --lang and --no-lang together: one rule everywhere (os-vm's too), refused. */
static void check_lang_args(void)
{
    if (!(lang_opt.off && lang_opt.picked))
        return;
    if (is_init) { /* no one to tell: --no-lang wins, and the report says so */
        snprintf(ignored_args + strlen(ignored_args), sizeof ignored_args - strlen(ignored_args), "%s--lang (with --no-lang)",
                 ignored_args[0] ? " " : "");
        lang_opt.picked = false;
        return;
    }
    fprintf(stderr, "clockbench-os: --lang and --no-lang contradict each other: give one of them\n");
    exit(64);
}

/* --python PATH and kin: an executable file (for --java, a JDK's or JRE's
   folder also, its bin/java), checked now: a runtime named and missing is
   a bad argument, not a language quietly left out. */
static void runtime_option(const char *a, const char *v)
{
    static char java_in_home[LANG_COUNT][600];
    int l = lang_runtime_option(a);
    struct stat st;
    if (v && !strcmp(a, "--java") && stat(v, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(java_in_home[l], sizeof java_in_home[l], "%s/bin/java", v);
        v = java_in_home[l];
    }
    if (!v || !*v || stat(v, &st) != 0 || !S_ISREG(st.st_mode) || access(v, X_OK) != 0) {
        fprintf(stderr, "clockbench-os: %s needs the path of an executable runtime, not '%s'%s\n", a, v ? v : "",
                v && *v ? (access(v, F_OK) ? " (no such file)" : " (not an executable file)") : "");
        exit(64);
    }
    lang_opt.runtime[l] = v;
}

/* --current-only and --all-clocksources together: refused; as init, with
   no one to tell, the gentle one wins and the report says so. */
static void check_clocksource_args(void)
{
    if (!(opt.current_only && opt.all_clocksources))
        return;
    if (is_init) {
        snprintf(ignored_args + strlen(ignored_args), sizeof ignored_args - strlen(ignored_args), "%s--all-clocksources (with --current-only)",
                 ignored_args[0] ? " " : "");
        opt.all_clocksources = false;
        return;
    }
    fprintf(stderr, "clockbench-os: --current-only and --all-clocksources contradict each other: give one of them\n");
    exit(64);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : 0;
        if (!strcmp(a, "--quick"))
            opt.quick = true, opt.reads = 2000, opt.cost_ms = 100, opt.seq_ms = 5, opt.rate_ms = 300, lang_opt.calls = 2000,
            lang_opt.rounds = 3, lang_opt.processes = 1; /* an interval of 3 rounds' range (75%), one process: a quick look */
        else if (!strcmp(a, "--rt"))
            opt.rt = true;
        else if (!strcmp(a, "--current-only"))
            opt.current_only = true;
        else if (!strcmp(a, "--all-clocksources"))
            opt.all_clocksources = true;
        else if (!strcmp(a, "--cpu"))
            opt.cpu = (int)number(a, v, 0, 4095), i++;
        else if (!strcmp(a, "--reads"))
            opt.reads = number(a, v, 100, 1000000), i++;
        else if (!strcmp(a, "--rate-ms"))
            opt.rate_ms = number(a, v, 50, 600000), i++;
        else if (!strcmp(a, "--timeout"))
            opt.timeout_s = number(a, v, 1, 86400), i++;
        else if (!strcmp(a, "--sysfs") && v)
            opt.sysfs = v, i++;
        else if (!strcmp(a, "--no-lang"))
            lang_opt.off = true;
        else if (!strcmp(a, "--lang")) {
            char bad[48];
            if (!v || !lang_pick(v, lang_opt.pick, bad, sizeof bad)) {
                fprintf(stderr, "clockbench-os: --lang: unknown language '%s' (valid: %s)\n", v ? bad : "", lang_keys_text());
                exit(64);
            }
            lang_opt.picked = true, i++;
        } else if (!strcmp(a, "--lang-dir") && v)
            lang_opt.dir = v, i++;
        else if (!strcmp(a, "--lang-calls"))
            lang_opt.calls = number(a, v, 100, 1000000), i++;
        else if (!strcmp(a, "--lang-timeout"))
            lang_opt.timeout_s = number(a, v, 1, 3600), i++;
        else if (!strcmp(a, "--out")) {
            if (!v || !*v || v[0] == '-') {
                fprintf(stderr, "clockbench-os: --out needs a folder to keep the log in\n");
                exit(64);
            }
            opt.out = v, i++;
        } else if (lang_runtime_option(a) >= 0) {
            runtime_option(a, v);
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            check_lang_args(); /* `--help` after the options checks them all (make os-bench does) */
            check_clocksource_args();
            usage(stdout);
            exit(0);
        } else {
            fprintf(stderr, "clockbench-os: unknown argument '%s'\n", a);
            if (is_init) { /* no one to tell but the report: carry on with the defaults, and say so there */
                snprintf(ignored_args + strlen(ignored_args), sizeof ignored_args - strlen(ignored_args), "%s%s",
                         ignored_args[0] ? " " : "", a);
                continue;
            }
            usage(stderr);
            exit(64);
        }
    }
}

int main(int argc, char **argv)
{
    started_at = time(0);
    run_t0_ns = raw_ns();
    is_init = getpid() == 1;
    setvbuf(stdout, 0, _IOLBF, 0);
    if (is_init) {
        mount("sysfs", "/sys", "sysfs", 0, 0);
        mount("proc", "/proc", "proc", 0, 0);
    }
    parse_args(argc, argv);
    check_lang_args();
    check_clocksource_args();
    uname(&uts);
    /* before anything is measured: the parent only copies the output */
    if (!is_init)
        kept_in = keep_start(opt.out, !opt.out && keep_bundle_version()[0], uts.nodename);
    catch_signals();
    atexit(os_cs_restore);
    /* the languages take a minute or two on each clocksource (a JVM
       started some 40 times), more under emulation */
    alarm(opt.timeout_s ? opt.timeout_s : lang_opt.off ? 600 : 1800);

    struct record r;
    record_begin(&r, "schema");
    record_u64(&r, "version", RECORD_SCHEMA_VERSION);
    record_str(&r, "tool", "clockbench-os");
    record_str(&r, "build", CLOCKBENCH_VERSION);
    emit(&r);
    vdso_why = os_vdso_find();
    lang_note_cpus();
    pin_and_prioritise();
    double settle_s = settle_clocksource();
    os_cs_probe(opt.sysfs, geteuid() == 0, &cs);
    if (settle_s > 0)
        printf("clockbench-os: waited %.1f s for the kernel to leave its boot clocksource tsc-early%s\n", settle_s,
               strcmp(cs.original, "tsc-early") ? "" : " (it had not, after 30 s)");
    read_klog();
    record_context();
    lang_set_round_reference(round_reference);
    lang_setup();
    hostlibc_setup();

    printf("\n== Through the OS: read cost, clock_getres, least step ==\n"
           "  ns; each call alone between serialised TSC reads, the empty bracket's median subtracted;\n"
           "  the least step is the smallest non-zero change seen in back-to-back reads\n");
    measure_tsc_step();
    lang_note_tsc_step((double)tsc_step);
    measure_clocksource(cs.original, true, &cs_results[cs_done]);
    report_tsc_step();
    report_clocksource(&cs_results[cs_done]);
    measure_languages(&cs_results[cs_done++]);
    for (int i = 0; switching() && i < cs.count && cs_done < CS_MAX; i++) {
        if (!strcmp(cs.available[i], cs.original))
            continue;
        struct cs_result *c = &cs_results[cs_done];
        const char *why = 0;
        snprintf(c->name, sizeof c->name, "%s", cs.available[i]);
        if (!os_cs_select(cs.available[i], &why)) {
            c->why = why;
            printf("\n-- clocksource %s: not measured: %s --\n", c->name, why);
        } else {
            c->selected = true;
            measure_clocksource(cs.available[i], false, c);
            report_clocksource(c);
            measure_languages(c);
        }
        record_begin(&r, "os_clocksource");
        record_str(&r, "name", c->name);
        record_bool(&r, "selected", c->selected);
        record_str(&r, "reason", c->why);
        record_str(&r, "changed_to", c->changed_to[0] ? c->changed_to : 0);
        emit(&r);
        cs_done++;
    }
    lang_summarise(&cs);
    printf("\n== Checks ==\n");
    if (os_cs_switched() || cs_done > 1) {
        os_cs_restore();
        char now[CS_NAME_MAX] = "unreadable";
        os_cs_current(now);
        bool back = !os_cs_switched() && !strcmp(now, cs.original);
        record_begin(&r, "os_restore");
        record_str(&r, "original", cs.original);
        record_str(&r, "now", now);
        record_bool(&r, "restored", back);
        emit(&r);
        check(back ? "PASS" : "FAIL", "clocksource restored", "%s at the end (it was %s at the start)", now, cs.original);
    } else if (!switching()) {
        /* the reason in full is in the heading: said once (a user without root read it twice) */
        check("SKIP", "other clocksources", "%s", !opt.all_clocksources ? "the default (see the heading)"
                                                 : geteuid() != 0 ? "--all-clocksources: not root (see the heading)" : cs.why_not);
    }
    struct record tr;
    record_begin(&tr, "profile");
    record_str(&tr, "name", opt.quick ? "quick" : "standard");
    rec_f(&tr, "tsc_hz", tsc_hz, 3);
    record_str(&tr, "tsc_hz_source", tsc_hz_source);
    record_bool(&tr, "tsc_measured", tsc_hz > 0);
    emit(&tr);
    judge();
    lang_judge(check);
    int status = n_fail ? 1 : 0;
    printf("SUMMARY: %u passed, %u failed, %u skipped\n", n_pass, n_fail, n_skip);
    /* what the run cost the host: its wall time, and the CPU time of
       clockbench-os and of every probe it ran (each waited for) */
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    double own_cpu_s = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) + (self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6;
    double probes_cpu_s =
        (double)(children.ru_utime.tv_sec + children.ru_stime.tv_sec) + (children.ru_utime.tv_usec + children.ru_stime.tv_usec) / 1e6;
    double wall_s = (double)(raw_ns() - run_t0_ns) / 1e9;
    record_begin(&r, "summary");
    record_u64(&r, "pass", n_pass);
    record_u64(&r, "fail", n_fail);
    record_u64(&r, "skip", n_skip);
    record_str(&r, "status", status ? "failed" : "passed");
    rec_f(&r, "wall_s", wall_s, 2);
    rec_f(&r, "cpu_s", own_cpu_s + probes_cpu_s, 2);
    rec_f(&r, "own_cpu_s", own_cpu_s, 2);
    rec_f(&r, "probes_cpu_s", probes_cpu_s, 2);
    record_i64(&r, "nice", run_nice());
    emit(&r);
    printf("clockbench-os: run ended: %s (status %d); %.1f s wall, %.1f s CPU (clockbench-os %.1f s, its probes %.1f s), at nice %d\n",
           status ? "failed" : "passed", status, wall_s, own_cpu_s + probes_cpu_s, own_cpu_s, probes_cpu_s, run_nice());
    finish(status);
}

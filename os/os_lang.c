/* See os_lang.h. The probes' command lines and output: the contract in
   docs/output.md ("Language probes: the contract"); running them:
   os_probe_run.c. */
#define _GNU_SOURCE
#include "os_lang.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/record.h"
#include "os_clocksource.h"
#include "os_probe_run.h"
#include "os_rounds.h"

struct lang_options lang_opt = {.calls = 20000, .timeout_s = 30, .rounds = 9, .processes = 3};

#define PATH_CALLS 1000
#define STAMP_ROUNDS 12
#define CROSS_PAIRS_MAX 4
#define THREAD_COUNTS 3
#define THREADS_CALLS_MAX 1000000
/* Each API's cost in rounds (issue 48): lang_opt.rounds of them, interleaved
   across the language's APIs, ROUND_GAP_MS apart, so that the rounds span
   a stretch of the host's life rather than one millisecond of it. */
#define ROUND_GAP_MS 10
/* A bound on the whole of each probe command (its budget_ms): a host too
   busy to finish one in time gives what was done, marked, never a hang */
#define COST_BUDGET_MS 2000    /* one round */
#define STEPS_BUDGET_MS 3000
#define CROSS_BUDGET_MS 3000   /* one pair of CPUs */
#define THREADS_BUDGET_MS 3000 /* one thread count */

static char lang_dir[512];
static const char *unavailable[LANG_COUNT]; /* why a language cannot be run, or NULL */
static char unavailable_text[LANG_COUNT][200];
static char runner_path[LANG_COUNT][512];
static char runtime_exe[LANG_COUNT][512]; /* the executable that ran, links resolved (a pyenv python3, not a shim's name) */
static struct lang_info infos[LANG_COUNT];
static bool info_done[LANG_COUNT];

/* what went wrong, over the whole run; starved: a command the host was too
   busy to let finish (a timeout spent waiting for a CPU), cut: one its
   bound stopped early. Neither is a failure of the probe. */
static unsigned n_failed, n_missing, n_changed, n_picked, n_order_judged, n_order_bad, n_starved, n_cut;
static char order_bad_what[400];
static char failed_what[512], missing_what[256], changed_what[256], starved_what[400], cut_what[400];
static lang_round_reference_fn round_reference;

static double fastest_ref_ns; /* the run's fastest reference loop: the host at full speed */

void lang_set_round_reference(lang_round_reference_fn fn) { round_reference = fn; }

/* The host's full speed, before the first language: the fastest of 25
   reference loops 10 ms apart (a quarter of a second), then any faster
   one a round times. */
static void find_full_speed(void)
{
    if (!round_reference || fastest_ref_ns > 0)
        return;
    for (int i = 0; i < 25; i++) {
        double ref = 0, bare = 0;
        if (i)
            nanosleep(&(struct timespec){0, 10000000L}, 0);
        round_reference(&ref, &bare);
        if (ref > 0 && (fastest_ref_ns <= 0 || ref < fastest_ref_ns))
            fastest_ref_ns = ref;
    }
}

static void note(char *buf, size_t size, const char *text)
{
    size_t at = strlen(buf);
    if (at + 1 < size)
        snprintf(buf + at, size - at, "%s%s", at ? "; " : "", text);
}

static void emit(struct record *r) { fputs(record_end(r), stdout); }

static void rec_f(struct record *r, const char *key, double v, bool known)
{
    if (!known || v != v || fabs(v) > 9e15)
        record_null(r, key);
    else
        record_fixed(r, key, llround(v * 1000), 3);
}

static int cpu_list[CPU_SETSIZE], n_cpus;

void lang_note_cpus(void)
{
    cpu_set_t set;
    n_cpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set))
                cpu_list[n_cpus++] = i;
    if (!n_cpus) { /* unreadable: the CPUs online, numbered from 0 */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; i < n && i < CPU_SETSIZE; i++)
            cpu_list[n_cpus++] = (int)i;
    }
}

/* ---- where the probes and runtimes are ---- */
static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The program name in PATH (as init there may be no PATH: the usual folders). */
static bool find_in_path(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, size, "%.*s/%s", (int)len, p, name);
        if (len && access(out, X_OK) == 0 && is_file(out))
            return true;
        p += len + (p[len] == ':');
    }
    return false;
}

/* LANG_DIR: --lang-dir, else the folder "lang" beside clockbench-os, else
   beside its folder (build/os/clockbench-os and build/lang), else ./build/lang. */
static void find_lang_dir(void)
{
    if (lang_opt.dir) {
        snprintf(lang_dir, sizeof lang_dir, "%s", lang_opt.dir);
        return;
    }
    char exe[400];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(lang_dir, sizeof lang_dir, "%s/lang", exe[0] ? exe : "");
            if (is_dir(lang_dir))
                return;
            char *up = strrchr(exe, '/');
            if (up) {
                *up = 0;
                snprintf(lang_dir, sizeof lang_dir, "%s/lang", exe[0] ? exe : "");
                if (is_dir(lang_dir))
                    return;
            }
        }
    }
    snprintf(lang_dir, sizeof lang_dir, "build/lang");
}

static void probe_path(int l, char *out, size_t size) { snprintf(out, size, "%s/%s", lang_dir, lang_defs[l].probe); }

/* A native probe that is not there: built by `make lang`, which needs the
   language's toolchain; the package named only when the toolchain is not in
   PATH (a Go from go.dev or a Rust from rustup builds it as well). */
static void no_probe(int l, const char *probe, char *out, size_t size)
{
    static const char *const toolchains[][3] = {
        {"cpp-libstdc++", "g++", "apt install g++"},
        {"cpp-libc++", "clang++", "apt install clang libc++-dev libc++abi-dev"},
        {"rust", "cargo", "apt install rustc cargo, or rustup"},
        {"go", "go", "apt install golang-go, or Go from go.dev"},
    };
    char found[512];
    int n = snprintf(out, size, "no probe %s: run 'make lang'", probe);
    for (size_t i = 0; i < sizeof toolchains / sizeof *toolchains; i++)
        if (!strcmp(lang_defs[l].key, toolchains[i][0]) && !find_in_path(toolchains[i][1], found, sizeof found) && n > 0 && (size_t)n < size)
            snprintf(out + n, size - (size_t)n, " (it needs %s: %s)", toolchains[i][1], toolchains[i][2]);
}

void lang_setup(void)
{
    if (lang_opt.off)
        return;
    find_lang_dir();
    printf("\n== Languages: probes from %s ==\n", lang_dir);
    for (int l = 0; l < LANG_COUNT; l++) {
        if (lang_opt.picked && !lang_opt.pick[l])
            continue;
        n_picked++;
        const struct lang_def *d = &lang_defs[l];
        char probe[600];
        probe_path(l, probe, sizeof probe);
        if (!strcmp(d->key, "java"))
            snprintf(probe + strlen(probe), sizeof probe - strlen(probe), "/Probe.class");
        /* .NET: CoreCLR's dotnet where installed, else Mono (the probe's info says which) */
        bool named = lang_opt.runtime[l] != 0; /* --python PATH: checked as the options were read */
        if (named)
            snprintf(runner_path[l], sizeof runner_path[l], "%s", lang_opt.runtime[l]);
        bool coreclr = !named && !strcmp(d->key, "dotnet") && find_in_path("dotnet", runner_path[l], sizeof runner_path[l]);
        if (d->runner && !named && !coreclr && !find_in_path(d->runner, runner_path[l], sizeof runner_path[l]))
            snprintf(unavailable_text[l], sizeof unavailable_text[l], "%s", d->missing);
        else if (!is_file(probe))
            no_probe(l, probe, unavailable_text[l], sizeof unavailable_text[l]);
        /* what runs: the runtime, or the native probe itself */
        if (!realpath(d->runner ? runner_path[l] : probe, runtime_exe[l]))
            snprintf(runtime_exe[l], sizeof runtime_exe[l], "%s", d->runner ? runner_path[l] : probe);
        if (unavailable_text[l][0]) {
            unavailable[l] = unavailable_text[l];
            printf("  %s: not measured: %s\n", d->title, unavailable[l]);
            n_missing++;
            note(missing_what, sizeof missing_what, d->key);
        }
    }
    if (!n_missing) /* a heading with nothing under it looked like something left out */
        printf("  %s: each has its runtime and probe here\n", lang_opt.picked ? "the languages picked" : "every language");
}

int lang_runtime_option(const char *option)
{
    static const char *const options[][2] = {{"--java", "java"}, {"--python", "python"}, {"--node", "node"}, {"--dotnet", "dotnet"}};
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if (!strcmp(option, options[i][0]))
            return lang_find(options[i][1]);
    return -1;
}

static int build_argv(int l, const char *const *cmd, int n_cmd, const char **argv, char *buf, size_t size)
{
    const struct lang_def *d = &lang_defs[l];
    int k = 0;
    /* Nothing written outside the run's folder (docs/os-side.md, "What a run
       reads and writes"): HotSpot's perf data file (/tmp/hsperfdata_USER/PID,
       left behind by a kill), Python's .pyc beside a module it imports, Mono's
       shared area (/dev/shm/mono.PID) and CoreCLR's diagnostic socket
       ($TMPDIR/dotnet-diagnostic-PID-*-socket) are each turned off. */
    if (!strcmp(d->key, "dotnet")) {
        setenv("MONO_DISABLE_SHARED_AREA", "1", 0);
        setenv("DOTNET_EnableDiagnostics", "0", 0);
    }
    if (!strcmp(d->key, "java")) {
        argv[k++] = runner_path[l];
        argv[k++] = "-XX:-UsePerfData";
        argv[k++] = "-cp";
        snprintf(buf, size, "%s/java", lang_dir);
        argv[k++] = buf;
        argv[k++] = "Probe";
    } else {
        probe_path(l, buf, size);
        if (d->runner)
            argv[k++] = runner_path[l];
        if (!strcmp(d->key, "python"))
            argv[k++] = "-B";
        argv[k++] = buf;
    }
    for (int i = 0; i < n_cmd; i++)
        argv[k++] = cmd[i];
    argv[k] = 0;
    return k;
}

/* ---- one API ---- */
struct api_result {
    const struct lang_api_info *info;
    bool cost_ok, steps_ok, seen_ok, hidden_ok, stamp_ok;
    struct lang_cost cost;
    struct lang_steps steps;
    struct lang_trace seen, hidden;
    unsigned bracket;     /* indices of lang_clock_ids whose bracket held in every round */
    unsigned alike;       /* of those, the ones within the bracket of each other here */
    int stamp_rounds;
    struct lang_cross cross[CROSS_PAIRS_MAX];
    bool cross_ok[CROSS_PAIRS_MAX];
    int n_cross;
    struct lang_threads thr[THREAD_COUNTS];
    bool thr_ok[THREAD_COUNTS];
    unsigned ks[THREAD_COUNTS];
    int n_k;
    unsigned threads_calls; /* calls per thread in each `threads` */
    /* the cost's rounds: each round's line, and the reference loop and
       bare read clockbench-os timed beside it */
    struct lang_cost round_cost[LANG_ROUNDS_MAX];
    double round_ref_ns[LANG_ROUNDS_MAX], round_bare_ns[LANG_ROUNDS_MAX];
    int n_rounds;
    struct lang_rounds_summary rs;
    bool rs_ok;
    double full_ref_ns; /* the full speed its rounds were judged against: its language's fastest reference loop */
    char cut[64];      /* the commands its bound stopped early: "cost steps cross threads" */
    bool starved;      /* a command timed out waiting for a CPU */
    char failures[400];
};

/* The command the bound stopped early, said once per API and counted. */
static void note_cut(int l, struct api_result *a, const char *what)
{
    if (strstr(a->cut, what))
        return;
    snprintf(a->cut + strlen(a->cut), sizeof a->cut - strlen(a->cut), "%s%s", a->cut[0] ? " " : "", what);
    char text[160];
    snprintf(text, sizeof text, "%s %s %s", lang_defs[l].key, a->info ? a->info->api : "", what);
    n_cut++;
    note(cut_what, sizeof cut_what, text);
}

static void fail(int l, struct api_result *a, const char *what, const char *why)
{
    char line[400];
    if (!strncmp(why, "starved", 7)) { /* os_probe_run.c: it waited for a CPU, it did not hang */
        snprintf(line, sizeof line, "%s%s%s: %s: %s", lang_defs[l].title, a->info ? " " : "", a->info ? a->info->api : "", what, why);
        printf("  NOT MEASURED (host busy): %s\n", line);
        n_starved++;
        note(starved_what, sizeof starved_what, line);
        a->starved = true;
        return;
    }
    snprintf(line, sizeof line, "%s%s%s: %s: %s", lang_defs[l].title, a->info ? " " : "", a->info ? a->info->api : "", what, why);
    printf("  FAILED: %s\n", line);
    n_failed++;
    note(failed_what, sizeof failed_what, line);
    note(a->failures, sizeof a->failures, line);
}

static double cost_ns(const struct api_result *a, double v, double tsc_hz) { return a->cost.tsc ? lang_ticks_ns(v, tsc_hz) : v; }

static double tsc_step_ticks; /* the TSC's own step (lang_note_tsc_step): single calls' intervals are widened by it */

void lang_note_tsc_step(double step_ticks) { tsc_step_ticks = step_ticks; }

/* The p50's interval: widened by the TSC's step (single calls) or by the
   batch timer's least step, measured as one of the same language's APIs. */
static double timer_step_ns(const struct api_result *a, const struct api_result *all, int n_all, double tsc_hz)
{
    double step = 0;
    if (a->cost.tsc)
        step = lang_ticks_ns(tsc_step_ticks, tsc_hz);
    else
        for (int i = 0; i < n_all; i++)
            if (all[i].info && !strcmp(all[i].info->api, a->cost.timer) && all[i].steps_ok && all[i].steps.least_known)
                step = all[i].steps.least_ns;
    return step;
}

static bool p50_ci(const struct api_result *a, const struct api_result *all, int n_all, double tsc_hz, double *lo, double *hi)
{
    if (a->rs_ok && a->rs.n > 1) {
        *lo = a->rs.lo_ns, *hi = a->rs.hi_ns;
        return true;
    }
    return a->cost_ok && lang_p50_ci_ns(&a->cost, tsc_hz, timer_step_ns(a, all, n_all, tsc_hz), lo, hi);
}

/* ---- one line per API across the clocksources (lang_summary) ---- */
#define SUMMARY_CS_MAX 8
struct summary_cell {
    bool measured, ci;
    double p50_ns, lo_ns, hi_ns, syscalls_per_1000;
    const char *path; /* "vdso", "syscall", "none", or NULL when not traced */
};
static char summary_cs[SUMMARY_CS_MAX][32];
static double summary_syscall_ns[SUMMARY_CS_MAX]; /* clockbench-os's raw clock_gettime syscall there */
static int n_summary_cs;
static struct summary_cell summary[LANG_COUNT][LANG_API_MAX][SUMMARY_CS_MAX];

/* ---- a probe serving commands (docs/output.md, `serve`) ---- */
/* One runtime start answers many commands: a JVM, V8 or Mono takes seconds
   to start under TCG. A command that fails takes its probe down; the next
   command starts a new one. */
struct server {
    int l;
    enum probe_cpus cpus;
    bool up;
    struct probe_talk t;
};

static bool server_up(struct server *s, char *why, size_t size)
{
    if (s->up)
        return true;
    const char *cmd[] = {"serve"}, *argv[16];
    char buf[600];
    build_argv(s->l, cmd, 1, argv, buf, sizeof buf);
    s->up = probe_talk_start(argv, s->cpus, lang_opt.timeout_s, &s->t, why, size);
    if (!s->up) {
        struct probe_outcome o;
        probe_talk_end(&s->t, &o, false);
        probe_outcome_free(&o);
    }
    return s->up;
}

/* Ends the probe: EOF on its stdin, then killed if it does not end
   (bounded), at once when kill. Why it ended, when not well, in why. */
static void server_down(struct server *s, bool kill, char *why, size_t size)
{
    if (!s->up)
        return;
    struct probe_outcome o;
    probe_talk_end(&s->t, &o, kill);
    if (why)
        snprintf(why, size, "%s", o.ok ? "it ended before answering" : o.why);
    probe_outcome_free(&o);
    s->up = false;
}

/* The probe gone (EOF) or past its bound: said, and the probe ended. */
static void lost(struct server *s, struct api_result *a, const char *what, bool timed_out)
{
    char why[200];
    server_down(s, timed_out, why, sizeof why);
    fail(s->l, a, what, why);
}

/* ` <budget_ms>` after a command's own arguments (the probes' contract) */
static void cut_check(int l, struct api_result *a, const char *what, const struct lang_cut *b)
{
    if (b->bounded && b->cut)
        note_cut(l, a, what);
}

static void garbage(struct server *s, struct api_result *a, const char *what, const char *line, const char *why)
{
    char text[240];
    snprintf(text, sizeof text, "printed garbage (%s): '%.60s'", why, line);
    fail(s->l, a, what, text);
    server_down(s, true, 0, 0);
}

/* Sends one command; its answer's lines, up to "cb-served", into out
   (joined by newlines). False, said, when it was not answered. */
static bool ask(struct server *s, struct api_result *a, const char *what, const char *cmdline, char *out, size_t size)
{
    char why[200], line[512];
    bool timed_out = false;
    size_t at = 0;
    out[0] = 0;
    if (!server_up(s, why, sizeof why)) {
        fail(s->l, a, what, why);
        return false;
    }
    probe_talk_rearm(&s->t);
    if (probe_talk_send(&s->t, cmdline))
        for (const char *r; (r = probe_talk_line(&s->t, line, sizeof line, &timed_out));) {
            if (!strcmp(r, "cb-served")) {
                if (out[0])
                    return true;
                garbage(s, a, what, r, "no answer before it");
                return false;
            }
            if (at + strlen(r) + 2 < size)
                at += (size_t)snprintf(out + at, size - at, "%s\n", r);
        }
    lost(s, a, what, timed_out);
    return false;
}

/* One command whose answer is one line: the line, or NULL (said). */
static const char *ask_line(struct server *s, struct api_result *a, const char *what, const char *cmdline, char *out, size_t size)
{
    if (!ask(s, a, what, cmdline, out, size))
        return 0;
    char *nl = strchr(out, '\n');
    if (nl && nl[1]) {
        garbage(s, a, what, out, "more than one line");
        return 0;
    }
    if (nl)
        *nl = 0;
    return out;
}

/* Reads every candidate clock, in lang_clock_ids' order; the CPU-time
   clocks are the probe's own (its process, its main thread). */
static void read_candidates(pid_t child, uint64_t v[LANG_CLOCKS])
{
    clockid_t process = 0;
    bool have_process = clock_getcpuclockid(child, &process) == 0;
    clockid_t thread = (clockid_t)((~(unsigned)child << 3) | 6); /* MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) */
    for (int i = 0; i < LANG_CLOCKS; i++) {
        clockid_t id = lang_clock_ids[i];
        if (id == CLOCK_PROCESS_CPUTIME_ID) {
            if (!have_process) {
                v[i] = 0;
                continue;
            }
            id = process;
        } else if (id == CLOCK_THREAD_CPUTIME_ID)
            id = thread;
        struct timespec t;
        v[i] = clock_gettime(id, &t) == 0 ? (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec : 0;
    }
}

/* `stamp`: each round brackets one read of the API between reads of every
   candidate clock; the ids that hold in every round remain. */
static void bracket_api(struct server *s, struct api_result *a)
{
    char cmdline[128], why[200], line[256];
    bool timed_out = false;
    if (!server_up(s, why, sizeof why)) {
        fail(s->l, a, "stamp", why);
        return;
    }
    probe_talk_rearm(&s->t);
    snprintf(cmdline, sizeof cmdline, "stamp %s\n", a->info->api);
    /* a value truncated to its unit lies up to one step under its bracket */
    uint64_t below = a->steps_ok && a->steps.least_known ? (uint64_t)ceil(a->steps.least_ns) + 1 : 1000000;
    unsigned mask = (1u << LANG_CLOCKS) - 1, alike = (1u << LANG_CLOCKS) - 1;
    if (!probe_talk_send(&s->t, cmdline)) {
        lost(s, a, "stamp", false);
        return;
    }
    for (int r = 0; r < STAMP_ROUNDS; r++) {
        uint64_t before[LANG_CLOCKS], after[LANG_CLOCKS], v;
        read_candidates(s->t.pid, before);
        if (!probe_talk_send(&s->t, "\n"))
            break;
        const char *got = probe_talk_line(&s->t, line, sizeof line, &timed_out);
        read_candidates(s->t.pid, after);
        if (!got)
            break;
        if (!lang_parse_stamp(got, &v)) {
            garbage(s, a, "stamp", got, "not a whole number of ns");
            return;
        }
        uint64_t above = 1 + (v >> 52); /* a float's rounding */
        mask &= lang_bracket_round(before, after, v, below, above);
        unsigned m = 0;
        for (int i = 0; i < LANG_CLOCKS; i++)
            if (mask & (1u << i))
                m |= lang_bracket_alike(before, i, (after[i] - before[i]) + below);
        alike &= m;
        a->stamp_rounds++;
    }
    const char *end = a->stamp_rounds == STAMP_ROUNDS && probe_talk_send(&s->t, "cb-end\n") ?
                          probe_talk_line(&s->t, line, sizeof line, &timed_out) : 0;
    if (!end) {
        lost(s, a, "stamp", timed_out);
        return;
    }
    if (strcmp(end, "cb-served")) {
        garbage(s, a, "stamp", end, "not cb-served after cb-end");
        return;
    }
    a->stamp_ok = true;
    a->bracket = mask;
    a->alike = alike & mask;
}

/* A command during which the probe may ask us to pin its threads ("pin
   <tid> <cpu>", `cross` and `threads`): each request answered, then its one
   result line (starting "<what> ") into out. False, said, otherwise. */
static bool ask_pinning(struct server *s, struct api_result *a, const char *what, const char *cmdline, char *out, size_t size)
{
    static char line[PROBE_TALK_BUF];
    char why[200];
    bool timed_out = false, got = false;
    size_t wl = strlen(what);
    if (!server_up(s, why, sizeof why)) {
        fail(s->l, a, what, why);
        return false;
    }
    probe_talk_rearm(&s->t);
    if (!probe_talk_send(&s->t, cmdline)) {
        lost(s, a, what, false);
        return false;
    }
    for (const char *r; (r = probe_talk_line(&s->t, line, sizeof line, &timed_out));) {
        unsigned long tid, cpu;
        if (sscanf(r, "pin %lu %lu", &tid, &cpu) == 2) {
            cpu_set_t set;
            CPU_ZERO(&set);
            if (cpu < CPU_SETSIZE)
                CPU_SET(cpu, &set);
            if (cpu < CPU_SETSIZE && sched_setaffinity((pid_t)tid, sizeof set, &set) == 0)
                probe_talk_send(&s->t, "ok\n");
            else {
                char no[120];
                snprintf(no, sizeof no, "no %s\n", cpu < CPU_SETSIZE ? strerror(errno) : "no such CPU");
                probe_talk_send(&s->t, no);
            }
        } else if (!strcmp(r, "cb-served")) {
            if (got)
                return true;
            garbage(s, a, what, r, "no result line before it");
            return false;
        } else if (!strncmp(r, what, wl) && r[wl] == ' ' && !got) {
            snprintf(out, size, "%s", r);
            got = true;
        } else {
            garbage(s, a, what, r, "neither a pin request nor the result");
            return false;
        }
    }
    lost(s, a, what, timed_out);
    return false;
}

static void cross_pair(struct server *s, struct api_result *a, unsigned cpu_a, unsigned cpu_b, unsigned rounds)
{
    char cmdline[160], out[512];
    const char *why;
    int i = a->n_cross++;
    snprintf(cmdline, sizeof cmdline, "cross %s %u %u %u %u\n", a->info->api, cpu_a, cpu_b, rounds, CROSS_BUDGET_MS);
    if (!ask_pinning(s, a, "cross", cmdline, out, sizeof out))
        return;
    if (!lang_parse_cross(out, a->info->api, &a->cross[i], &why))
        garbage(s, a, "cross", out, why);
    else {
        a->cross_ok[i] = true;
        cut_check(s->l, a, "cross", &a->cross[i].bound);
    }
}

/* One round of `cost` for one API, the reference loop and the bare read
   timed just before it. */
static void cost_round(struct server *s, struct api_result *a)
{
    const char *api = a->info->api, *line, *why;
    char cmdline[128], out[1024];
    double ref = 0, bare = 0;
    if (round_reference)
        round_reference(&ref, &bare);
    if (ref > 0 && (fastest_ref_ns <= 0 || ref < fastest_ref_ns))
        fastest_ref_ns = ref;
    /* half the calls of a single burst a round: nine rounds hold 4.5 times as many */
    unsigned n = lang_opt.calls / 2 ? lang_opt.calls / 2 : 1;
    snprintf(cmdline, sizeof cmdline, "cost %s %u %u\n", api, n, COST_BUDGET_MS);
    if (!(line = ask_line(s, a, "cost", cmdline, out, sizeof out)))
        return;
    struct lang_cost c;
    if (!lang_parse_cost(line, api, &c, &why) || (a->n_rounds && c.tsc != a->round_cost[0].tsc)) {
        garbage(s, a, "cost", line, why ? why : "its method changed between rounds");
        return;
    }
    cut_check(s->l, a, "cost", &c.bound);
    int r = a->n_rounds++;
    a->round_cost[r] = c;
    a->round_ref_ns[r] = ref;
    a->round_bare_ns[r] = bare;
}

/* The rounds into one figure, once the steps (the batch timer's) are known:
   the median round's line stands for the cost, its p50 the median over
   the rounds, its min and max the rounds' extremes, n their sum. */
static void cost_from_rounds(struct api_result *a, const struct api_result *all, int n_all, double tsc_hz, double full_ref_ns)
{
    if (!a->n_rounds)
        return;
    struct lang_rounds r = {.n = a->n_rounds, .fastest_ref_ns = full_ref_ns};
    for (int i = 0; i < a->n_rounds; i++) {
        struct api_result one = *a;
        one.cost = a->round_cost[i];
        one.rs_ok = false;
        double step = timer_step_ns(&one, all, n_all, tsc_hz);
        r.p50_ns[i] = cost_ns(&one, one.cost.p50, tsc_hz);
        if (!lang_p50_ci_ns(&one.cost, tsc_hz, step, &r.lo_ns[i], &r.hi_ns[i]))
            r.lo_ns[i] = r.hi_ns[i] = r.p50_ns[i];
        /* per call: a single call's TSC step, or the batch timer's over the batch */
        r.step_ns = one.cost.tsc ? step : one.cost.batch ? step / (double)one.cost.batch : 0;
        r.ref_ns[i] = a->round_ref_ns[i];
        r.bare_ns[i] = a->round_bare_ns[i];
    }
    a->rs_ok = lang_rounds_summarise(&r, &a->rs);
    a->full_ref_ns = full_ref_ns;
    struct lang_cost c = a->round_cost[a->rs.median_round];
    double mean = 0;
    c.n = 0;
    for (int i = 0; i < a->n_rounds; i++) {
        const struct lang_cost *k = &a->round_cost[i];
        c.min = fmin(c.min, k->min);
        c.max = fmax(c.max, k->max);
        c.n += k->n;
        mean += k->mean * (double)k->n;
    }
    c.mean = c.n ? mean / (double)c.n : c.mean;
    a->cost = c;
    a->cost_ok = true;
}

/* `steps`, on the probe at our CPU and scheduling. */
static void steps_of(struct server *s, struct api_result *a)
{
    const char *api = a->info->api, *line, *why;
    char cmdline[128], out[1024];
    snprintf(cmdline, sizeof cmdline, "steps %s %u %u\n", api, lang_opt.calls, STEPS_BUDGET_MS);
    if ((line = ask_line(s, a, "steps", cmdline, out, sizeof out))) {
        if (lang_parse_steps(line, api, &a->steps, &why)) {
            a->steps_ok = true;
            cut_check(s->l, a, "steps", &a->steps.bound);
        } else
            garbage(s, a, "steps", line, why);
    }
}

/* Every API's cost in rounds, the APIs interleaved and each round starting
   at the next API (none always first, just after a command of another
   kind), then every API's steps. */
static void cost_and_steps(struct server *s, struct api_result *res, int n, double tsc_hz)
{
    int rounds = lang_opt.rounds < 1 ? 1 : lang_opt.rounds > LANG_ROUNDS_MAX ? LANG_ROUNDS_MAX : (int)lang_opt.rounds;
    int per_process = lang_opt.processes > 1 && (int)lang_opt.processes <= rounds ? rounds / (int)lang_opt.processes : rounds;
    for (int r = 0; r < rounds; r++) {
        if (r)
            nanosleep(&(struct timespec){0, ROUND_GAP_MS * 1000000L}, 0);
        /* a new probe process for each third of the rounds: a process has a
           speed of its own (here CPython's was 61 ns in one and 103 ns in the
           next, every round alike, the reference loop unmoved: where its
           stack and heap fell, its JIT's choices), which the interval must hold */
        if (r && r % per_process == 0)
            server_down(s, true, 0, 0); /* at once: nothing of it is wanted, and a runtime's exit can take a second */
        for (int j = 0; j < n; j++) {
            struct api_result *a = &res[(r + j) % n];
            /* an API whose round failed, or the host starved, is not asked again */
            if (!a->info->absent && !a->failures[0] && !a->starved)
                cost_round(s, a);
        }
    }
    for (int i = 0; i < n; i++)
        if (!res[i].info->absent && !res[i].starved)
            steps_of(s, &res[i]);
    /* the full speed these rounds are judged against: the fastest reference loop of this
       language's rounds. Not the run's fastest: beside a probe whose runtime keeps threads
       busy on this CPU after it answers (a JVM's compiler, Go's), the loop ran 1.3-1.5x
       slower in every round of a quiet host, and every Go and Java figure was called a slow
       host's; the run's fastest is in the record, and the speed's spread beside it */
    double lang_fastest = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < res[i].n_rounds; r++)
            if (res[i].round_ref_ns[r] > 0 && (lang_fastest <= 0 || res[i].round_ref_ns[r] < lang_fastest))
                lang_fastest = res[i].round_ref_ns[r];
    for (int i = 0; i < n; i++)
        cost_from_rounds(&res[i], res, n, tsc_hz, lang_fastest);
}

/* `path`, traced: every API's in one probe, then again with the vDSO
   hidden for those whose calls made no clock system call as they ran
   (their ids are known only that way). */
static void trace_paths(int l, struct api_result *res, int n)
{
    static struct lang_trace traces[LANG_API_MAX];
    for (int h = 0; h < 2; h++) {
        char input[LANG_API_MAX * 64] = "";
        int which[LANG_API_MAX], k = 0;
        for (int i = 0; i < n; i++)
            if (!res[i].info->absent && !res[i].starved && (h == 0 || (res[i].seen_ok && !res[i].seen.clock_calls))) {
                which[k++] = i;
                snprintf(input + strlen(input), sizeof input - strlen(input), "path %s %u\n", res[i].info->api, PATH_CALLS);
            }
        if (!k)
            break;
        const char *cmd[] = {"serve"}, *argv[16];
        char buf[600];
        struct probe_outcome o;
        build_argv(l, cmd, 1, argv, buf, sizeof buf);
        /* a traced runtime starts slower: every one of its system calls stops */
        probe_run_traced(argv, input, h == 1, lang_opt.timeout_s * (2 + (unsigned)k), traces, k, &o);
        const char *what = h ? "path (vDSO hidden)" : "path";
        for (int j = 0; j < k; j++) {
            struct api_result *a = &res[which[j]];
            if (!traces[j].begin_seen || !traces[j].end_seen)
                fail(l, a, what, !o.ok ? o.why : "the markers cb-path-begin and cb-path-end were not both written to fd 2");
            else if (h)
                a->hidden = traces[j], a->hidden_ok = true;
            else
                a->seen = traces[j], a->seen_ok = true;
        }
        probe_outcome_free(&o);
    }
}

/* Calls per thread in `threads`: enough for each thread's loop to last
   about --lang-calls us at the cost measured (20 ms by default: one
   preemption in a 0.5 ms loop doubled its figure), at least --lang-calls. */
static unsigned threads_calls(const struct api_result *a, double tsc_hz)
{
    double per_call_ns = a->cost_ok ? cost_ns(a, a->cost.p50, tsc_hz) : 0;
    double n = per_call_ns > 0 ? lang_opt.calls * 1000.0 / per_call_ns : lang_opt.calls;
    double most = THREADS_CALLS_MAX > lang_opt.calls ? THREADS_CALLS_MAX : lang_opt.calls;
    return n < lang_opt.calls ? lang_opt.calls : n > most ? (unsigned)most : (unsigned)n;
}

/* The CPUs we may use in Linux's list format ("0-3,8"): `threads` pins its
   k threads to the first k of them. */
static void cpus_text(char *out, size_t size)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < n_cpus && at + 24 < size;) {
        int j = i;
        while (j + 1 < n_cpus && cpu_list[j + 1] == cpu_list[j] + 1)
            j++;
        at += (size_t)(j > i ? snprintf(out + at, size - at, "%s%d-%d", at ? "," : "", cpu_list[i], cpu_list[j])
                             : snprintf(out + at, size - at, "%s%d", at ? "," : "", cpu_list[i]));
        i = j + 1;
    }
    if (!out[0])
        snprintf(out, size, "0");
}

/* `cross` and `threads`, on the probe on every CPU at normal scheduling. */
static void across_cpus(struct server *s, struct api_result *a, double tsc_hz)
{
    const char *api = a->info->api, *why;
    static char cmdline[1200], out[PROBE_TALK_BUF], cpus[1024];
    /* the first CPU allowed against each other one, at most CROSS_PAIRS_MAX */
    unsigned rounds = lang_opt.calls / 10 < 2000 ? lang_opt.calls / 10 : 2000;
    for (int b = 1; b < n_cpus && a->n_cross < CROSS_PAIRS_MAX; b++)
        cross_pair(s, a, (unsigned)cpu_list[0], (unsigned)cpu_list[b], rounds < 100 ? 100 : rounds);
    unsigned ks[THREAD_COUNTS] = {1, 2, (unsigned)(n_cpus > 0 ? n_cpus : 1)};
    a->threads_calls = threads_calls(a, tsc_hz);
    cpus_text(cpus, sizeof cpus);
    for (int i = 0; i < THREAD_COUNTS; i++) {
        bool dup = false;
        for (int j = 0; j < a->n_k; j++)
            dup |= a->ks[j] == ks[i];
        if (dup)
            continue;
        int at = a->n_k++;
        a->ks[at] = ks[i];
        why = 0;
        snprintf(cmdline, sizeof cmdline, "threads %s %u %u %s %u\n", api, ks[i], a->threads_calls, cpus, THREADS_BUDGET_MS);
        if (ask_pinning(s, a, "threads", cmdline, out, sizeof out)) {
            if (lang_parse_threads(out, api, &a->thr[at], &why) && a->thr[at].k == ks[i]) {
                a->thr_ok[at] = true;
                cut_check(s->l, a, "threads", &a->thr[at].bound);
            } else
                garbage(s, a, "threads", out, why ? why : "k= is not the count asked for");
        }
    }
}

/* Every API of language l: its probe at our CPU and scheduling (cost,
   steps, then the brackets), traced (paths), then the same probe moved to
   every CPU at normal scheduling (cross, threads): one start fewer. */
static void measure_language(struct server *s, struct api_result *res, int n, double tsc_hz)
{
    int l = s->l;
    for (int i = 0; i < n; i++)
        res[i] = (struct api_result){.info = &infos[l].apis[i]};
    for (int i = 0; i < n; i++)
        if (res[i].info->absent)
            printf("    %s %s: not in this runtime: %s\n", lang_defs[l].title, res[i].info->api, res[i].info->absent_why);
    cost_and_steps(s, res, n, tsc_hz);
    trace_paths(l, res, n);
    for (int i = 0; i < n; i++)
        if (!res[i].info->private_origin && !res[i].info->absent && !res[i].starved)
            bracket_api(s, &res[i]);
    s->cpus = PROBE_CPUS_ALL; /* a probe started from here on starts there */
    if (s->up)
        probe_talk_widen(&s->t);
    for (int i = 0; i < n; i++)
        if (!res[i].info->absent && !res[i].starved)
            across_cpus(s, &res[i], tsc_hz);
    server_down(s, false, 0, 0);
}

/* ---- what it says ---- */

/* Under a language's "measuring": its rounds, and how far the host's speed
   moved over them (the reference loop's slowest round over its fastest). */
static void rounds_line(const struct api_result *res, int n)
{
    int rounds = 0, slow = 0, all = 0, throughout = 0;
    double moved = -1;
    for (int i = 0; i < n; i++)
        if (res[i].rs_ok) {
            rounds = rounds > res[i].rs.n ? rounds : res[i].rs.n;
            all += res[i].rs.n;
            throughout += res[i].rs.slow_throughout;
            if (res[i].rs.speed_known) {
                moved = fmax(moved, res[i].rs.speed_spread);
                slow += res[i].rs.slow_rounds;
            }
        }
    if (!rounds)
        return;
    unsigned procs = lang_opt.processes > 1 && (int)lang_opt.processes <= rounds ? lang_opt.processes : 1;
    printf("    cost in %d rounds an API, interleaved, over %u process%s; ", rounds, procs, procs == 1 ? "" : "es");
    if (moved < 0) {
        printf("the host's speed not timed beside them\n");
        return;
    }
    printf("the host's speed moved by up to %.0f%% (a reference loop timed in each)", moved * 100);
    if (slow)
        printf("; %d of %d rounds ran slower than %.2fx its full speed and are left out%s", slow, all, LANG_ROUND_SLOW,
               throughout ? ", except where too few were left (~)" : "");
    printf("\n");
}

/* The clock id the API reads: from the system calls (as it runs, else with
   the vDSO hidden), else by bracketing. */
static void clock_text(const struct api_result *a, bool short_names, char *out, size_t size)
{
    int p[LANG_PATTERN_MAX] = {0}, k = 0;
    out[0] = 0;
    if (a->seen_ok && a->seen.clock_calls)
        k = lang_trace_pattern(&a->seen, PATH_CALLS, p);
    else if (a->hidden_ok && a->hidden.clock_calls)
        k = lang_trace_pattern(&a->hidden, PATH_CALLS, p);
    if (k) {
        lang_pattern_text(p, k, "+", short_names, out, size);
        return;
    }
    if (a->info->private_origin) {
        snprintf(out, size, "private");
        return;
    }
    if (!a->stamp_ok)
        return;
    for (int i = 0; i < LANG_CLOCKS; i++)
        if (a->bracket & (1u << i))
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "|" : "",
                     short_names ? lang_clock_short(lang_clock_ids[i]) : lang_clock_name(lang_clock_ids[i]));
    if (!out[0])
        snprintf(out, size, "none");
}

/* Whether the API reads a clock that must never go back: the monotonic
   family (MONOTONIC, MONOTONIC_RAW, BOOTTIME) by its trace, else its
   brackets, or a private origin (a monotonic clock of the runtime's own).
   A wall clock may be set back; a CPU-time clock is not one clock across
   threads: neither is judged. Unknown: not judged. */
static bool must_not_go_back(const struct api_result *a)
{
    int p[LANG_PATTERN_MAX] = {0}, k = 0;
    if (a->seen_ok && a->seen.clock_calls)
        k = lang_trace_pattern(&a->seen, PATH_CALLS, p);
    else if (a->hidden_ok && a->hidden.clock_calls)
        k = lang_trace_pattern(&a->hidden, PATH_CALLS, p);
    if (k) {
        for (int i = 0; i < k; i++)
            if (p[i] != CLOCK_MONOTONIC && p[i] != CLOCK_MONOTONIC_RAW && p[i] != CLOCK_BOOTTIME)
                return false;
        return true;
    }
    if (a->info->private_origin)
        return true;
    unsigned family = 0;
    for (int i = 0; i < LANG_CLOCKS; i++)
        if (lang_clock_ids[i] == CLOCK_MONOTONIC || lang_clock_ids[i] == CLOCK_MONOTONIC_RAW || lang_clock_ids[i] == CLOCK_BOOTTIME)
            family |= 1u << i;
    return a->stamp_ok && a->bracket && !(a->bracket & ~family);
}

static const char *path_of(const struct api_result *a)
{
    return !a->seen_ok ? 0 : a->seen.clock_calls * 2 >= PATH_CALLS ? "syscall" : a->hidden_ok && a->hidden.clock_calls ? "vdso" : "none";
}

/* The `threads` result for k threads, or NULL when none was measured. */
static const struct lang_threads *thr_at(const struct api_result *a, unsigned k)
{
    for (int j = 0; j < a->n_k; j++)
        if (a->ks[j] == k && a->thr_ok[j])
            return &a->thr[j];
    return 0;
}

/* Its cost per call: the slowest thread's least chunk; an older probe's
   whole-loop mean when it gave no chunks. */
static double thr_ns(const struct lang_threads *t) { return t->chunked ? t->least_ns : t->per_call_ns; }

static void emit_record(int l, const char *cs, const struct api_result *a, const struct api_result *all, int n_all, double tsc_hz)
{
    const struct lang_api_info *info = a->info;
    struct record r;
    char clock[96];
    record_begin(&r, "lang_clock");
    record_str(&r, "language", lang_defs[l].key);
    record_str(&r, "runtime", infos[l].runtime);
    record_str(&r, "runtime_exe", runtime_exe[l][0] ? runtime_exe[l] : 0);
    record_str(&r, "api", info->api);
    record_str(&r, "clocksource", cs);
    clock_text(a, false, clock, sizeof clock);
    record_str(&r, "clock_id", clock[0] ? clock : 0);
    record_str(&r, "origin", info->private_origin ? "private" : "clock");
    record_array_begin(&r, "traced_clock_ids");
    int p[LANG_PATTERN_MAX] = {0}, k = 0;
    if (a->seen_ok && a->seen.clock_calls)
        k = lang_trace_pattern(&a->seen, PATH_CALLS, p);
    else if (a->hidden_ok)
        k = lang_trace_pattern(&a->hidden, PATH_CALLS, p);
    for (int i = 0; i < k; i++)
        record_array_i64(&r, p[i]);
    record_array_end(&r);
    record_array_begin(&r, "bracket_clock_ids");
    for (int i = 0; i < LANG_CLOCKS; i++)
        if (a->stamp_ok && (a->bracket & (1u << i)))
            record_array_i64(&r, lang_clock_ids[i]);
    record_array_end(&r);
    record_bool(&r, "bracketed", a->stamp_ok);
    rec_f(&r, "syscalls_per_1000", lang_per_1000(a->seen.syscalls, PATH_CALLS), a->seen_ok);
    rec_f(&r, "clock_syscalls_per_1000", lang_per_1000(a->seen.clock_calls, PATH_CALLS), a->seen_ok);
    rec_f(&r, "syscalls_per_1000_vdso_hidden", lang_per_1000(a->hidden.syscalls, PATH_CALLS), a->hidden_ok);
    record_str(&r, "path", path_of(a));
    record_str(&r, "method", a->cost_ok ? (a->cost.tsc ? "tsc" : "batch") : 0);
    record_u64(&r, "n", a->cost_ok ? a->cost.n : 0);
    if (a->cost_ok && !a->cost.tsc)
        record_u64(&r, "batch", a->cost.batch);
    else
        record_null(&r, "batch");
    rec_f(&r, "min_ns", cost_ns(a, a->cost.min, tsc_hz), a->cost_ok);
    rec_f(&r, "p50_ns", cost_ns(a, a->cost.p50, tsc_hz), a->cost_ok);
    double lo, hi;
    if (p50_ci(a, all, n_all, tsc_hz, &lo, &hi)) {
        record_array_begin(&r, "p50_ci_ns");
        record_array_fixed(&r, llround(lo * 1000), 3);
        record_array_fixed(&r, llround(hi * 1000), 3);
        record_array_end(&r);
    } else
        record_null(&r, "p50_ci_ns");
    /* the rounds: each one's p50, how far the host's speed moved over them
       (the reference loop), the figure against the same round's bare read */
    record_u64(&r, "rounds", (uint64_t)a->n_rounds);
    record_array_begin(&r, "rounds_p50_ns");
    for (int i = 0; i < a->n_rounds; i++) {
        struct api_result one = *a;
        one.cost = a->round_cost[i];
        record_array_fixed(&r, llround(cost_ns(&one, one.cost.p50, tsc_hz) * 1000), 3);
    }
    record_array_end(&r);
    record_array_begin(&r, "rounds_ref_ns");
    for (int i = 0; i < a->n_rounds; i++)
        record_array_fixed(&r, llround(a->round_ref_ns[i] * 1000), 3);
    record_array_end(&r);
    if (a->rs_ok && a->rs.n > 1)
        rec_f(&r, "p50_ci_confidence", a->rs.confidence, true);
    else
        record_null(&r, "p50_ci_confidence");
    rec_f(&r, "host_speed_moved", a->rs.speed_spread, a->rs_ok && a->rs.speed_known);
    if (a->rs_ok && a->rs.speed_known)
        record_u64(&r, "slow_rounds", (uint64_t)a->rs.slow_rounds);
    else
        record_null(&r, "slow_rounds");
    rec_f(&r, "full_speed_ref_ns", a->full_ref_ns, a->rs_ok && a->full_ref_ns > 0);
    rec_f(&r, "run_fastest_ref_ns", fastest_ref_ns, a->rs_ok && fastest_ref_ns > 0);
    if (a->rs_ok)
        record_u64(&r, "rounds_kept", (uint64_t)a->rs.kept);
    else
        record_null(&r, "rounds_kept");
    if (a->rs_ok)
        record_bool(&r, "slow_throughout", a->rs.slow_throughout);
    else
        record_null(&r, "slow_throughout");
    rec_f(&r, "p50_all_rounds_ns", a->rs.p50_all_ns, a->rs_ok);
    rec_f(&r, "ratio_to_bare", a->rs.ratio_p50, a->rs_ok && a->rs.ratio_known);
    record_str(&r, "cut_by_bound", a->cut[0] ? a->cut : 0);
    record_bool(&r, "disturbed", a->cut[0] || a->starved || (a->rs_ok && a->rs.slow_throughout));
    record_bool(&r, "absent", a->info->absent);
    record_str(&r, "absent_reason", a->info->absent ? a->info->absent_why : 0);
    rec_f(&r, "mean_ns", cost_ns(a, a->cost.mean, tsc_hz), a->cost_ok);
    rec_f(&r, "p99_ns", cost_ns(a, a->cost.p99, tsc_hz), a->cost_ok && a->cost.tsc);
    rec_f(&r, "p999_ns", cost_ns(a, a->cost.p999, tsc_hz), a->cost_ok && a->cost.tsc);
    rec_f(&r, "max_ns", cost_ns(a, a->cost.max, tsc_hz), a->cost_ok);
    rec_f(&r, "bracket_ns", cost_ns(a, a->cost.bracket, tsc_hz), a->cost_ok && a->cost.tsc);
    record_str(&r, "batch_timer", a->cost_ok && !a->cost.tsc ? a->cost.timer : 0);
    rec_f(&r, "least_step_ns", a->steps.least_ns, a->steps_ok && a->steps.least_known);
    rec_f(&r, "claimed_resolution_ns", info->claim_ns, info->claim_known);
    record_str(&r, "claim_source", info->claim_source);
    struct lang_row row = {.step_known = a->steps_ok && a->steps.least_known, .least_step_ns = a->steps.least_ns,
                           .claim_known = info->claim_known, .claim_ns = info->claim_ns};
    record_bool(&r, "claim_finer_than_step", lang_claim_finer(&row));
    if (a->steps_ok) {
        record_u64(&r, "steps_n", a->steps.n);
        record_u64(&r, "zero_steps", a->steps.zero);
        record_u64(&r, "backward", a->steps.backward);
    } else {
        record_null(&r, "steps_n");
        record_null(&r, "zero_steps");
        record_null(&r, "backward");
    }
    rec_f(&r, "max_backward_ns", a->steps.max_backward_ns, a->steps_ok);
    uint64_t back = 0, lost = 0, rounds = 0;
    double worst = 0;
    int pairs = 0;
    for (int i = 0; i < a->n_cross; i++)
        if (a->cross_ok[i]) {
            pairs++;
            back += a->cross[i].violations, lost += a->cross[i].lost, rounds += a->cross[i].rounds;
            worst = fmax(worst, a->cross[i].max_violation_ns);
        }
    if (pairs) {
        record_u64(&r, "cross_cpu_backward", back);
        record_u64(&r, "cross_cpu_rounds", rounds);
        record_u64(&r, "cross_cpu_lost", lost);
    } else {
        record_null(&r, "cross_cpu_backward");
        record_null(&r, "cross_cpu_rounds");
        record_null(&r, "cross_cpu_lost");
    }
    rec_f(&r, "cross_cpu_max_backward_ns", worst, pairs > 0);
    record_u64(&r, "cross_cpu_pairs", (uint64_t)pairs);
    record_bool(&r, "order_judged", must_not_go_back(a));
    /* per thread count (1, 2 and N, the CPUs we may use): the least chunk's
       cost per call of the slowest thread, what an idle CPU would show; the
       median chunk beside it; whether the scheduler had a hand in it */
    const char *keys[] = {"threads_1_ns", "threads_2_ns", "threads_n_ns"};
    const char *median_keys[] = {"threads_1_median_ns", "threads_2_median_ns", "threads_n_median_ns"};
    unsigned want[] = {1, 2, (unsigned)(n_cpus > 0 ? n_cpus : 1)};
    for (int i = 0; i < 3; i++) {
        const struct lang_threads *t = thr_at(a, want[i]);
        rec_f(&r, keys[i], t ? thr_ns(t) : 0, t != 0);
        rec_f(&r, median_keys[i], t ? t->median_ns : 0, t && t->chunked);
    }
    record_u64(&r, "threads_n", want[2]);
    if (a->n_k)
        record_u64(&r, "threads_calls", a->threads_calls);
    else
        record_null(&r, "threads_calls");
    const struct lang_threads *first = 0;
    const char *pinned = 0;
    bool judged = false, disturbed = false;
    for (int j = 0; j < a->n_k; j++)
        if (a->thr_ok[j] && a->thr[j].chunked) {
            const struct lang_threads *t = &a->thr[j];
            if (!first)
                first = t;
            /* the weakest pin of any count: "no" over "requested" over "self" */
            if (!pinned || !strcmp(t->pinned, "no") || (!strcmp(t->pinned, "requested") && strcmp(pinned, "no")))
                pinned = t->pinned;
            judged |= t->judged > 0;
            disturbed |= t->disturbed > 0;
        }
    if (first)
        record_u64(&r, "threads_chunk", first->chunk);
    else
        record_null(&r, "threads_chunk");
    record_str(&r, "threads_pinned", pinned);
    if (judged)
        record_bool(&r, "threads_disturbed", disturbed);
    else
        record_null(&r, "threads_disturbed");
    char k_text[16];
    record_object_begin(&r, "threads_disturbed_cpus");
    for (int j = 0; j < a->n_k; j++)
        if (a->thr_ok[j] && a->thr[j].chunked && a->thr[j].disturbed) {
            snprintf(k_text, sizeof k_text, "%u", a->ks[j]);
            record_array_begin(&r, k_text);
            for (int c = 0; c < a->thr[j].n_disturbed_cpu; c++)
                record_array_i64(&r, a->thr[j].disturbed_cpu[c]);
            record_array_end(&r);
        }
    record_object_end(&r);
    record_object_begin(&r, "threads_switches");
    for (int j = 0; j < a->n_k; j++)
        if (a->thr_ok[j] && a->thr[j].chunked && a->thr[j].judged) {
            snprintf(k_text, sizeof k_text, "%u", a->ks[j]);
            record_u64(&r, k_text, a->thr[j].switches);
        }
    record_object_end(&r);
    record_object_begin(&r, "threads_cpu_share");
    for (int j = 0; j < a->n_k; j++)
        if (a->thr_ok[j] && a->thr[j].chunked && a->thr[j].share_known) {
            snprintf(k_text, sizeof k_text, "%u", a->ks[j]);
            rec_f(&r, k_text, a->thr[j].cpu_share, true);
        }
    record_object_end(&r);
    record_array_begin(&r, "threads_over_cpus");
    for (int j = 0; j < a->n_k; j++)
        if (a->ks[j] > (unsigned)(n_cpus > 0 ? n_cpus : 1))
            record_array_u64(&r, a->ks[j]);
    record_array_end(&r);
    record_str(&r, "failures", a->failures[0] ? a->failures : 0);
    emit(&r);
    if (a->steps_ok && a->steps.bins) {
        record_begin(&r, "lang_histogram");
        record_str(&r, "language", lang_defs[l].key);
        record_str(&r, "api", info->api);
        record_str(&r, "clocksource", cs);
        record_array_begin(&r, "bins"); /* pairs: upper edge in ns (0: zero steps), count */
        for (int i = 0; i < a->steps.bins; i++) {
            record_array_u64(&r, (uint64_t)a->steps.bin_upper_ns[i]);
            record_array_u64(&r, a->steps.bin_count[i]);
        }
        record_array_end(&r);
        emit(&r);
    }
}

static void api_row(const struct api_result *a, double tsc_hz, struct lang_row *row)
{
    *row = (struct lang_row){0};
    snprintf(row->name, sizeof row->name, "  %s", a->info->api);
    row->cost_known = a->cost_ok;
    row->p50_ns = cost_ns(a, a->cost.p50, tsc_hz);
    row->method = a->cost.tsc ? 't' : 'b';
    row->step_known = a->steps_ok && a->steps.least_known;
    row->least_step_ns = a->steps.least_ns;
    row->claim_known = a->info->claim_known;
    row->claim_ns = a->info->claim_ns;
    row->path_known = a->seen_ok;
    row->syscalls_per_1000 = lang_per_1000(a->seen.syscalls, PATH_CALLS);
    row->via_syscall = a->seen.clock_calls * 2 >= PATH_CALLS;
    row->disturbed = a->cut[0] || a->starved || (a->rs_ok && a->rs.slow_throughout);
    clock_text(a, true, row->clock, sizeof row->clock);
}

static void num_or_dash(char *b, size_t size, bool known, double v, int width)
{
    char f[24];
    snprintf(b, size, "%*s", width, known ? lang_fig(f, sizeof f, v) : "-");
}

/* Under the order table: each thread count whose threads the scheduler
   disturbed, or that had more threads than CPUs, in words. */
#define THREAD_NOTES_MAX 48
static char thread_notes[THREAD_NOTES_MAX][200];
static int n_thread_notes;

static void thread_note(int l, const struct api_result *a, unsigned k, const struct lang_threads *t)
{
    unsigned cpus = (unsigned)(n_cpus > 0 ? n_cpus : 1);
    if (n_thread_notes >= THREAD_NOTES_MAX || (!(t->chunked && t->disturbed) && k <= cpus))
        return;
    char *out = thread_notes[n_thread_notes++], f[24], m[24];
    size_t size = sizeof thread_notes[0];
    int at = snprintf(out, size, "%s %s, %u thread%s: ", lang_defs[l].title, a->info->api, k, k == 1 ? "" : "s");
    if (k > cpus)
        at += snprintf(out + at, size - (size_t)at, "on %u CPU%s, taking turns; ", cpus, cpus == 1 ? "" : "s");
    if (t->chunked && t->disturbed) {
        at += snprintf(out + at, size - (size_t)at, "%u disturbed (CPU", t->disturbed);
        for (int c = 0; c < t->n_disturbed_cpu && at < (int)size; c++)
            at += snprintf(out + at, size - (size_t)at, "%s%d", c ? "," : " ", t->disturbed_cpu[c]);
        at += snprintf(out + at, size - (size_t)at, "; %llu involuntary switch%s", (unsigned long long)t->switches,
                       t->switches == 1 ? "" : "es");
        if (t->share_known && at < (int)size)
            at += snprintf(out + at, size - (size_t)at, ", CPU time %.0f%% of wall", t->cpu_share * 100);
        if (at < (int)size)
            at += snprintf(out + at, size - (size_t)at, "); ");
    }
    if (at < (int)size && t->chunked)
        snprintf(out + at, size - (size_t)at, "least chunk %s ns, median %s ns, the slowest loop's mean %s ns", lang_fig(f, sizeof f, t->least_ns),
                 lang_fig(m, sizeof m, t->median_ns), lang_fig((char[24]){0}, 24, t->max_per_call_ns));
    else if (at < (int)size)
        snprintf(out + at, size - (size_t)at, "the loop's mean %s ns", lang_fig(f, sizeof f, t->per_call_ns));
}

/* One row of "in order, across CPUs and threads"; a fault of a clock that
   must not go back counted for the check. */
static void order_row(int l, const struct api_result *a, char *out, size_t size)
{
    bool judged = must_not_go_back(a);
    uint64_t rounds = 0, back = 0;
    double worst = 0;
    int pairs = 0;
    for (int i = 0; i < a->n_cross; i++)
        if (a->cross_ok[i])
            pairs++, rounds += a->cross[i].rounds, back += a->cross[i].violations, worst = fmax(worst, a->cross[i].max_violation_ns);
    char name[40], steps_back[16], cross[16], cross_back[16], worst_s[16], thr[3][16];
    snprintf(name, sizeof name, "%.24s%s", a->info->api, judged ? "" : "*");
    if (a->steps_ok)
        snprintf(steps_back, sizeof steps_back, "%5llu", (unsigned long long)a->steps.backward);
    else
        snprintf(steps_back, sizeof steps_back, "%5s", "-");
    if (pairs)
        snprintf(cross, sizeof cross, "%6llu", (unsigned long long)rounds);
    else
        snprintf(cross, sizeof cross, "%6s", "-");
    if (pairs)
        snprintf(cross_back, sizeof cross_back, "%5llu", (unsigned long long)back);
    else
        snprintf(cross_back, sizeof cross_back, "%5s", "-");
    num_or_dash(worst_s, sizeof worst_s, pairs && back, worst, 7);
    unsigned want[3] = {1, 2, (unsigned)(n_cpus > 0 ? n_cpus : 1)};
    for (int i = 0; i < 3; i++) {
        /* "20.1~": a thread was preempted or shared its CPU; "41.0>": more threads than CPUs */
        const struct lang_threads *t = thr_at(a, want[i]);
        char f[24];
        char mark = !t ? ' ' : want[i] > (unsigned)(n_cpus > 0 ? n_cpus : 1) ? '>' : t->chunked && t->disturbed ? '~' : ' ';
        snprintf(thr[i], sizeof thr[i], "%6s%c", t ? lang_fig(f, sizeof f, thr_ns(t)) : "-", mark);
        if (t && (i < 2 || n_cpus > 2))
            thread_note(l, a, want[i], t);
    }
    /* N threads only where N is more than 2 */
    snprintf(out, size, "    %-25s %s %s %s %s %s %s%s%s", name, steps_back, cross, cross_back, worst_s, thr[0], thr[1], n_cpus > 2 ? " " : "",
             n_cpus > 2 ? thr[2] : "");
    if (!judged)
        return;
    n_order_judged++;
    if ((a->steps_ok && a->steps.backward) || back) {
        char text[160];
        snprintf(text, sizeof text, "%s %s: %llu back-to-back, %llu across CPUs", lang_defs[l].title, a->info->api,
                 (unsigned long long)(a->steps_ok ? a->steps.backward : 0), (unsigned long long)back);
        n_order_bad++;
        note(order_bad_what, sizeof order_bad_what, text);
    }
}

/* A note within 80 columns, its further lines indented. */
static void print_wrapped(const char *text)
{
    for (const char *line = text; *line;) {
        size_t width = line == text ? 76 : 72, take = strlen(line);
        if (take > width) {
            take = width;
            while (take > 0 && line[take] != ' ')
                take--;
            if (!take) /* one word wider than the line */
                take = strcspn(line, " ");
        }
        printf("  %s%.*s\n", line == text ? "" : "    ", (int)take, line);
        line += take;
        while (*line == ' ')
            line++;
    }
}

#define ROWS_MAX 64

void lang_measure_clocksource(const char *clocksource, const struct lang_row *os_rows, int n_os, double bare_ns, double tsc_hz)
{
    if (lang_opt.off)
        return;
    static struct lang_row rows[ROWS_MAX];
    static char sentences[LANG_COUNT * LANG_API_MAX][400];
    static char order[LANG_COUNT * (LANG_API_MAX + 1)][100];
    int n = 0, n_sent = 0, n_order = 0;
    for (int i = 0; i < n_os && n < ROWS_MAX; i++)
        rows[n++] = os_rows[i];
    int cs_slot = n_summary_cs < SUMMARY_CS_MAX ? n_summary_cs++ : -1;
    if (cs_slot >= 0) {
        snprintf(summary_cs[cs_slot], sizeof summary_cs[0], "%s", clocksource);
        summary_syscall_ns[cs_slot] = 0;
        for (int i = 0; i < n_os; i++)
            if (!strncmp(os_rows[i].name + strspn(os_rows[i].name, " "), "syscall", 7) && os_rows[i].cost_known)
                summary_syscall_ns[cs_slot] = os_rows[i].p50_ns;
    }
    printf("\n-- languages on clocksource %s --\n", clocksource);
    struct timespec ladder_t0;
    clock_gettime(CLOCK_MONOTONIC, &ladder_t0);
    for (int l = 0; l < LANG_COUNT; l++) {
        const struct lang_def *d = &lang_defs[l];
        if (lang_opt.picked && !lang_opt.pick[l])
            continue;
        if (unavailable[l]) {
            if (n < ROWS_MAX) {
                rows[n] = (struct lang_row){.heading = true};
                snprintf(rows[n++].name, sizeof rows[0].name, "%s: not measured", d->title);
            }
            continue;
        }
        struct server ours = {.l = l, .cpus = PROBE_CPUS_OURS};
        if (!info_done[l]) {
            static char out[8192];
            struct api_result none = {0};
            const char *why = 0;
            unsigned before = n_failed;
            info_done[l] = true;
            if (ask(&ours, &none, "info", "info\n", out, sizeof out) && !lang_parse_info(l, out, &infos[l], &why))
                garbage(&ours, &none, "info", out, why);
            /* the program the kernel runs as the probe, once it has answered: past a
               shim or a wrapper script (pyenv's python3), the real runtime */
            char proc_exe[64], real[sizeof runtime_exe[0]];
            snprintf(proc_exe, sizeof proc_exe, "/proc/%d/exe", (int)ours.t.pid);
            ssize_t got = ours.up ? readlink(proc_exe, real, sizeof real - 1) : -1;
            if (got > 0) {
                real[got] = 0;
                snprintf(runtime_exe[l], sizeof runtime_exe[l], "%s", real);
            }
            if (n_failed != before || none.starved) {
                printf("    (%s is not measured)\n", d->title);
                snprintf(unavailable_text[l], sizeof unavailable_text[l], "%s",
                         none.starved ? "the host was too busy for its probe to start" : "its probe failed");
                unavailable[l] = unavailable_text[l];
                server_down(&ours, true, 0, 0);
                if (n < ROWS_MAX) {
                    rows[n] = (struct lang_row){.heading = true};
                    snprintf(rows[n++].name, sizeof rows[0].name, "%s: not measured", d->title);
                }
                continue;
            }
        }
        /* "Python: CPython 3.11.7, /root/.pyenv/versions/3.11.7/bin/python3.11: measuring" */
        printf("  %s: %s, %s: measuring\n", d->title, infos[l].runtime, runtime_exe[l]);
        if (n < ROWS_MAX) {
            rows[n] = (struct lang_row){.heading = true};
            snprintf(rows[n++].name, sizeof rows[0].name, "%.39s", d->title);
        }
        static struct api_result res[LANG_API_MAX];
        find_full_speed();
        measure_language(&ours, res, infos[l].n, tsc_hz);
        rounds_line(res, infos[l].n);
        snprintf(order[n_order++], sizeof order[0], "  %.60s", d->title);
        for (int i = 0; i < infos[l].n; i++)
            order_row(l, &res[i], order[n_order++], sizeof order[0]);
        for (int i = 0; i < infos[l].n; i++) {
            struct api_result a = res[i];
            emit_record(l, clocksource, &a, res, infos[l].n, tsc_hz);
            if (cs_slot >= 0 && i < LANG_API_MAX) {
                struct summary_cell *c = &summary[l][i][cs_slot];
                c->measured = a.cost_ok;
                c->p50_ns = cost_ns(&a, a.cost.p50, tsc_hz);
                c->ci = p50_ci(&a, res, infos[l].n, tsc_hz, &c->lo_ns, &c->hi_ns);
                c->syscalls_per_1000 = a.seen_ok ? lang_per_1000(a.seen.syscalls, PATH_CALLS) : -1;
                c->path = path_of(&a);
            }
            if (n < ROWS_MAX)
                api_row(&a, tsc_hz, &rows[n++]);
            lang_path_sentence(d->title, a.info->api, PATH_CALLS, &a.seen, a.hidden_ok ? &a.hidden : 0, a.bracket, a.stamp_ok,
                               a.info->private_origin, sentences[n_sent], sizeof sentences[0]);
            if (!a.seen_ok)
                snprintf(sentences[n_sent], sizeof sentences[0], "%s %s: path not traced", d->title, a.info->api);
            /* equal here: say why two clocks could not be told apart */
            if (a.stamp_ok && (a.alike & 0x82) == 0x82)
                snprintf(sentences[n_sent] + strlen(sentences[n_sent]), sizeof sentences[0] - strlen(sentences[n_sent]),
                         " (equal here: the machine never slept)");
            n_sent++;
        }
        /* the kernel may demote the TSC (its watchdog) while we measure */
        char now[CS_NAME_MAX] = "unreadable";
        if (os_cs_current(now) && strcmp(now, clocksource)) {
            printf("  WARNING: the clocksource changed from %s to %s during %s's measurement: its figures may mix the two\n", clocksource,
                   now, d->title);
            char text[200];
            snprintf(text, sizeof text, "%s during %s", now, d->key);
            n_changed++;
            note(changed_what, sizeof changed_what, text);
            struct record r;
            record_begin(&r, "lang_clocksource_change");
            record_str(&r, "clocksource", clocksource);
            record_str(&r, "now", now);
            record_str(&r, "language", d->key);
            emit(&r);
        }
    }
    struct timespec ladder_t1;
    clock_gettime(CLOCK_MONOTONIC, &ladder_t1);
    double ladder_s = (double)(ladder_t1.tv_sec - ladder_t0.tv_sec) + (double)(ladder_t1.tv_nsec - ladder_t0.tv_nsec) / 1e9;
    struct record lr;
    record_begin(&lr, "lang_ladder"); /* what the languages took on this clocksource */
    record_str(&lr, "clocksource", clocksource);
    rec_f(&lr, "seconds", ladder_s, true);
    emit(&lr);
    printf("\n  The ladder on clocksource %s (cost per read, ns; the languages took %.1f s):\n", clocksource, ladder_s);
    char *text = malloc(16384);
    if (text) {
        lang_ladder_format(rows, n, bare_ns, text, 16384);
        fputs(text, stdout);
        free(text);
    }
    if (n_sent)
        printf("  The paths (system calls of 1000 calls, counted under ptrace; clock ids traced, with the vDSO hidden, or bracketed):\n");
    for (int i = 0; i < n_sent; i++)
        printf("    %s\n", sentences[i]);
    if (!n_order)
        return;
    char nk[16];
    snprintf(nk, sizeof nk, "%d thr", n_cpus);
    printf("\n  In order, across CPUs and threads, on clocksource %s:\n", clocksource);
    printf("  %-27s %5s %6s %5s %7s %6s  %6s %s%s\n", "API", "back", "cross", "less", "worst", "1 thr", "2 thr", n_cpus > 2 ? " " : "",
           n_cpus > 2 ? nk : "");
    for (int i = 0; i < n_order; i++)
        printf("%s\n", order[i]);
    printf("  back: backward steps in back-to-back reads; cross: rounds in which a thread\n"
           "  on one CPU read after seeing another CPU's read (roles alternate); less: how\n"
           "  many read less; worst: by how much (ns); k thr: ns per call with k threads\n"
           "  at once, each pinned to a CPU of its own, each loop timed in chunks: the\n"
           "  slowest thread's least chunk, what an idle CPU shows; ~: a thread was\n"
           "  preempted or shared its CPU (an involuntary switch, or CPU time under 90%%\n"
           "  of its wall time); >: more threads than CPUs, taking turns; *: a wall or\n"
           "  CPU-time clock, which may go back: not judged\n");
    for (int i = 0; i < n_thread_notes; i++)
        print_wrapped(thread_notes[i]);
    n_thread_notes = 0;
}

/* "36.2 ns", "1.47 us": a cost as people read it */
static void cost_words(char *out, size_t size, double ns)
{
    if (ns >= 1000)
        snprintf(out, size, "%.3g us", ns / 1000);
    else
        snprintf(out, size, "%.3g ns", ns);
}

/* Whether Linux (6.x, x86) reads this clocksource in the vDSO: 1 yes, 0 no
   (every read a system call), -1 not known here. arch/x86/entry/vdso: the
   TSC, kvm-clock (pvclock) and Hyper-V's TSC page have a vDSO clock mode;
   the HPET's was removed in Linux 5.6, the PM timer and jiffies never had one. */
static int vdso_mode(const char *cs)
{
    static const char *const yes[] = {"tsc", "kvm-clock", "hyperv_clocksource_tsc_page"};
    static const char *const no[] = {"hpet", "acpi_pm", "jiffies", "refined-jiffies", "pit"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!strcmp(cs, yes[i]))
            return 1;
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (!strcmp(cs, no[i]))
            return 0;
    return -1;
}

static void path_words(char *out, size_t size, const struct summary_cell *c)
{
    if (!c->path)
        snprintf(out, size, "path not traced");
    else if (!strcmp(c->path, "syscall"))
        snprintf(out, size, "%.3g system call%s a call", c->syscalls_per_1000 / 1000, c->syscalls_per_1000 > 1500 ? "s" : "");
    else if (!strcmp(c->path, "vdso"))
        snprintf(out, size, "vDSO");
    else
        snprintf(out, size, "no clock call");
}

void lang_summarise(const struct os_clocksources *cs)
{
    if (lang_opt.off || !n_summary_cs)
        return;
    printf("\n== Each language's clocks across the clocksources ==\n"
           "  p50 per call (its 95%% interval), and how the clock is read there\n");
    for (int l = 0; l < LANG_COUNT; l++) {
        if (unavailable[l] || !info_done[l])
            continue;
        for (int i = 0; i < infos[l].n && i < LANG_API_MAX; i++) {
            char line[1200];
            int at = snprintf(line, sizeof line, "  %s %s:", lang_defs[l].title, infos[l].apis[i].api);
            struct record r;
            record_begin(&r, "lang_summary");
            record_str(&r, "language", lang_defs[l].key);
            record_str(&r, "api", infos[l].apis[i].api);
            record_object_begin(&r, "by_clocksource");
            for (int k = 0; k < n_summary_cs; k++) {
                const struct summary_cell *c = &summary[l][i][k];
                char cost[32], lo[32], hi[32], path[64];
                record_object_begin(&r, summary_cs[k]);
                rec_f(&r, "p50_ns", c->p50_ns, c->measured);
                if (c->measured && c->ci) {
                    record_array_begin(&r, "p50_ci_ns");
                    record_array_fixed(&r, llround(c->lo_ns * 1000), 3);
                    record_array_fixed(&r, llround(c->hi_ns * 1000), 3);
                    record_array_end(&r);
                } else
                    record_null(&r, "p50_ci_ns");
                rec_f(&r, "syscalls_per_1000", c->syscalls_per_1000, c->path != 0);
                record_str(&r, "path", c->path);
                record_object_end(&r);
                if (!c->measured) {
                    at += snprintf(line + at, sizeof line - (size_t)at, "%s not measured on %s", k ? ";" : "", summary_cs[k]);
                    continue;
                }
                cost_words(cost, sizeof cost, c->p50_ns);
                path_words(path, sizeof path, c);
                if (c->ci) {
                    /* "36.2 ns (35.9-36.6)": the unit once where the three share it */
                    bool same = (c->lo_ns >= 1000) == (c->hi_ns >= 1000) && (c->hi_ns >= 1000) == (c->p50_ns >= 1000);
                    cost_words(lo, sizeof lo, c->lo_ns);
                    cost_words(hi, sizeof hi, c->hi_ns);
                    if (same) {
                        *strchr(lo, ' ') = 0;
                        *strchr(hi, ' ') = 0;
                    }
                    at += snprintf(line + at, sizeof line - (size_t)at, "%s %s (%s-%s) on %s, %s", k ? ";" : "", cost, lo, hi, summary_cs[k], path);
                } else
                    at += snprintf(line + at, sizeof line - (size_t)at, "%s %s on %s, %s", k ? ";" : "", cost, summary_cs[k], path);
                if (at >= (int)sizeof line)
                    at = (int)sizeof line - 1;
            }
            record_object_end(&r);
            /* the others the kernel offers and this run did not measure, and how they
               would be read: "vdso", "syscall" (no vDSO mode) or "unknown" */
            record_object_begin(&r, "offered_not_measured");
            for (int k = 0; k < cs->count; k++) {
                bool done = false;
                for (int m = 0; m < n_summary_cs; m++)
                    done |= !strcmp(cs->available[k], summary_cs[m]);
                if (!done)
                    record_str(&r, cs->available[k], vdso_mode(cs->available[k]) == 1 ? "vdso" : vdso_mode(cs->available[k]) == 0 ? "syscall" : "unknown");
            }
            record_object_end(&r);
            emit(&r);
            printf("%s\n", line);
        }
    }
    if (n_summary_cs == 1 && cs->count > 1) {
        char vdso[400] = "", none[400] = "", unknown[400] = "";
        for (int k = 0; k < cs->count; k++) {
            if (!strcmp(cs->available[k], summary_cs[0]))
                continue;
            char *to = vdso_mode(cs->available[k]) == 1 ? vdso : vdso_mode(cs->available[k]) == 0 ? none : unknown;
            snprintf(to + strlen(to), 400 - strlen(to), "%s%s", to[0] ? ", " : "", cs->available[k]);
        }
        printf("  Only %s was measured. The kernel also offers:", summary_cs[0]);
        if (vdso[0])
            printf(" %s (read in the vDSO too: no system call);", vdso);
        if (none[0]) {
            char sys[32];
            cost_words(sys, sizeof sys, summary_syscall_ns[0]);
            printf(" %s (no vDSO mode: every read of a clock would be a system call, at least the %s the raw\n"
                   "  clock_gettime syscall costs here, plus that counter's own read; Go's time.Now makes two);",
                   none, summary_syscall_ns[0] > 0 ? sys : "(unmeasured)");
        }
        if (unknown[0])
            printf(" %s (its vDSO mode is not known here);", unknown);
        printf(" run as root to measure them.\n");
    }
}

void lang_judge(lang_check_fn check)
{
    if (lang_opt.off) {
        check("SKIP", "languages", "--no-lang");
        return;
    }
    /* a busy host is said, never failed: what it starved is not measured,
       what a bound cut short is measured on fewer calls and marked */
    if (n_starved)
        check("SKIP", "languages the host was too busy for", "%u command%s timed out waiting for a CPU (not measured): %s", n_starved,
              n_starved == 1 ? "" : "s", starved_what);
    if (n_cut)
        check("SKIP", "figures cut short by their bound", "%u figure%s taken on fewer calls than asked (the host is busy; marked disturbed): %s",
              n_cut, n_cut == 1 ? "" : "s", cut_what);
    if (n_failed)
        check("FAIL", "language probes", "%u probe run%s failed: %s", n_failed, n_failed == 1 ? "" : "s", failed_what);
    else if (n_missing >= n_picked) /* nothing ran: no PASS for it */
        check("SKIP", "language probes", "no probe ran: no language %s is here (see above)", lang_opt.picked ? "asked for" : "picked");
    else
        check("PASS", "language probes", "every probe run picked gave well-formed answers");
    /* asked for by name (--lang) and not measured is a failed check: a CI job
       that asks for Go must not pass with nothing measured */
    if (n_missing)
        check(lang_opt.picked ? "FAIL" : "SKIP", "languages not measured", "%s%s (no runtime or no probe: see above)", missing_what,
              lang_opt.picked ? ", asked for by --lang" : "");
    if (n_changed)
        check("FAIL", "clocksource held during the languages", "the kernel changed clocksource: %s", changed_what);
    if (n_order_bad)
        check("FAIL", "language clocks in order", "a monotonic clock went back: %s", order_bad_what);
    else if (n_order_judged)
        check("PASS", "language clocks in order", "no monotonic API went back, in back-to-back reads or across CPUs (%u judged)",
              n_order_judged);
}

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

struct lang_options lang_opt = {.calls = 20000, .timeout_s = 30};

#define PATH_CALLS 1000
#define STAMP_ROUNDS 12
#define CROSS_PAIRS_MAX 4
#define THREAD_COUNTS 3

static char lang_dir[512];
static const char *unavailable[LANG_COUNT]; /* why a language cannot be run, or NULL */
static char unavailable_text[LANG_COUNT][200];
static char runner_path[LANG_COUNT][512];
static struct lang_info infos[LANG_COUNT];
static bool info_done[LANG_COUNT];

/* what went wrong, over the whole run */
static unsigned n_failed, n_missing, n_changed;
static char failed_what[512], missing_what[256], changed_what[256];

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

void lang_setup(void)
{
    if (lang_opt.off)
        return;
    find_lang_dir();
    printf("\n== Languages: probes from %s ==\n", lang_dir);
    for (int l = 0; l < LANG_COUNT; l++) {
        if (lang_opt.picked && !lang_opt.pick[l])
            continue;
        const struct lang_def *d = &lang_defs[l];
        char probe[600];
        probe_path(l, probe, sizeof probe);
        if (!strcmp(d->key, "java"))
            snprintf(probe + strlen(probe), sizeof probe - strlen(probe), "/Probe.class");
        /* .NET: CoreCLR's dotnet where installed, else Mono (the probe's info says which) */
        bool coreclr = !strcmp(d->key, "dotnet") && find_in_path("dotnet", runner_path[l], sizeof runner_path[l]);
        if (d->runner && !coreclr && !find_in_path(d->runner, runner_path[l], sizeof runner_path[l]))
            snprintf(unavailable_text[l], sizeof unavailable_text[l], "%s", d->missing);
        else if (!is_file(probe))
            snprintf(unavailable_text[l], sizeof unavailable_text[l], "no probe %s (run 'make lang'%s%s)", probe, d->runner ? "" : "; ",
                     d->runner ? "" : d->missing);
        if (unavailable_text[l][0]) {
            unavailable[l] = unavailable_text[l];
            printf("  %s: not measured: %s\n", d->title, unavailable[l]);
            n_missing++;
            note(missing_what, sizeof missing_what, d->key);
        }
    }
}

static int build_argv(int l, const char *const *cmd, int n_cmd, const char **argv, char *buf, size_t size)
{
    const struct lang_def *d = &lang_defs[l];
    int k = 0;
    if (!strcmp(d->key, "java")) {
        argv[k++] = runner_path[l];
        argv[k++] = "-cp";
        snprintf(buf, size, "%s/java", lang_dir);
        argv[k++] = buf;
        argv[k++] = "Probe";
    } else {
        probe_path(l, buf, size);
        if (d->runner)
            argv[k++] = runner_path[l];
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
    char failures[400];
};

static void fail(int l, struct api_result *a, const char *what, const char *why)
{
    char line[400];
    snprintf(line, sizeof line, "%s %s: %s: %s", lang_defs[l].title, a->info ? a->info->api : "", what, why);
    printf("  FAILED: %s\n", line);
    n_failed++;
    note(failed_what, sizeof failed_what, line);
    note(a->failures, sizeof a->failures, line);
}

static void u_text(char *b, size_t size, uint64_t v) { snprintf(b, size, "%llu", (unsigned long long)v); }

/* Runs one command whose answer is one line; the line's text in *line
   (malloc'd by the outcome), or a failure said. */
static bool one_line(int l, struct api_result *a, const char *what, const char *const *cmd, int n_cmd, enum probe_cpus cpus, struct probe_outcome *o,
                     const char **line)
{
    const char *argv[16];
    char buf[600];
    build_argv(l, cmd, n_cmd, argv, buf, sizeof buf);
    probe_run_batch(argv, cpus, lang_opt.timeout_s, o);
    if (!o->ok) {
        fail(l, a, what, o->why);
        return false;
    }
    char *s = o->out;
    while (*s == '\n')
        s++;
    char *nl = strchr(s, '\n');
    if (nl)
        *nl = 0;
    *line = s;
    return true;
}

static void garbage(int l, struct api_result *a, const char *what, const char *line, const char *why)
{
    char text[240];
    snprintf(text, sizeof text, "printed garbage (%s): '%.60s'", why, line);
    fail(l, a, what, text);
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
static void bracket_api(int l, struct api_result *a)
{
    const char *cmd[] = {"stamp", a->info->api};
    const char *argv[16];
    char buf[600], why[200], line[256];
    build_argv(l, cmd, 2, argv, buf, sizeof buf);
    struct probe_talk t;
    struct probe_outcome o;
    bool timed_out = false;
    if (!probe_talk_start(argv, PROBE_CPUS_OURS, lang_opt.timeout_s, &t, why, sizeof why)) {
        fail(l, a, "stamp", why);
        probe_talk_end(&t, &o, false);
        probe_outcome_free(&o);
        return;
    }
    /* a value truncated to its unit lies up to one step under its bracket */
    uint64_t below = a->steps_ok && a->steps.least_known ? (uint64_t)ceil(a->steps.least_ns) + 1 : 1000000;
    unsigned mask = (1u << LANG_CLOCKS) - 1, alike = (1u << LANG_CLOCKS) - 1;
    bool bad = false;
    for (int r = 0; r < STAMP_ROUNDS; r++) {
        uint64_t before[LANG_CLOCKS], after[LANG_CLOCKS], v;
        read_candidates(t.pid, before);
        if (!probe_talk_send(&t, "\n"))
            break;
        const char *got = probe_talk_line(&t, line, sizeof line, &timed_out);
        read_candidates(t.pid, after);
        if (!got)
            break;
        if (!lang_parse_stamp(got, &v)) {
            garbage(l, a, "stamp", got, "not a whole number of ns");
            bad = true;
            break;
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
    probe_talk_end(&t, &o, timed_out);
    if (!bad && a->stamp_rounds < STAMP_ROUNDS)
        fail(l, a, "stamp", o.ok ? "it ended before answering every line" : o.why);
    else if (!bad) {
        a->stamp_ok = true;
        a->bracket = mask;
        a->alike = alike & mask;
    }
    probe_outcome_free(&o);
}

/* `cross`: the probe may ask us to pin its threads ("pin <tid> <cpu>"). */
static void cross_pair(int l, struct api_result *a, unsigned cpu_a, unsigned cpu_b, unsigned rounds)
{
    char sa[16], sb[16], sr[16], buf[600], why[200], line[512];
    u_text(sa, sizeof sa, cpu_a), u_text(sb, sizeof sb, cpu_b), u_text(sr, sizeof sr, rounds);
    const char *cmd[] = {"cross", a->info->api, sa, sb, sr};
    const char *argv[16];
    build_argv(l, cmd, 5, argv, buf, sizeof buf);
    struct probe_talk t;
    struct probe_outcome o;
    bool timed_out = false, got_result = false, said = false;
    int i = a->n_cross;
    if (!probe_talk_start(argv, PROBE_CPUS_ALL, lang_opt.timeout_s, &t, why, sizeof why)) {
        fail(l, a, "cross", why);
        probe_talk_end(&t, &o, false);
        probe_outcome_free(&o);
        return;
    }
    for (const char *s; !got_result && (s = probe_talk_line(&t, line, sizeof line, &timed_out));) {
        unsigned long tid, cpu;
        if (sscanf(s, "pin %lu %lu", &tid, &cpu) == 2) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            if (sched_setaffinity((pid_t)tid, sizeof set, &set) == 0)
                probe_talk_send(&t, "ok\n");
            else {
                char no[120];
                snprintf(no, sizeof no, "no %s\n", strerror(errno));
                probe_talk_send(&t, no);
            }
        } else if (!strncmp(s, "cross ", 6)) {
            const char *why2;
            if (lang_parse_cross(s, a->info->api, &a->cross[i], &why2))
                a->cross_ok[i] = got_result = true;
            else {
                garbage(l, a, "cross", s, why2);
                said = true;
                break;
            }
        } else {
            garbage(l, a, "cross", s, "neither a pin request nor the result");
            said = true;
            break;
        }
    }
    probe_talk_end(&t, &o, timed_out && !got_result);
    if (got_result && !o.ok)
        a->cross_ok[i] = false, fail(l, a, "cross", o.why);
    else if (!got_result && !said)
        fail(l, a, "cross", o.ok ? "no result line" : o.why);
    a->n_cross++;
    probe_outcome_free(&o);
}

static void measure_api(int l, const struct lang_api_info *info, struct api_result *a)
{
    *a = (struct api_result){.info = info};
    const char *api = info->api, *line, *why;
    char n[16], np[16];
    struct probe_outcome o;
    u_text(n, sizeof n, lang_opt.calls);
    u_text(np, sizeof np, PATH_CALLS);
    {
        const char *cmd[] = {"cost", api, n};
        if (one_line(l, a, "cost", cmd, 3, PROBE_CPUS_OURS, &o, &line)) {
            if (lang_parse_cost(line, api, &a->cost, &why))
                a->cost_ok = true;
            else
                garbage(l, a, "cost", line, why);
        }
        probe_outcome_free(&o);
    }
    {
        const char *cmd[] = {"steps", api, n};
        if (one_line(l, a, "steps", cmd, 3, PROBE_CPUS_OURS, &o, &line)) {
            if (lang_parse_steps(line, api, &a->steps, &why))
                a->steps_ok = true;
            else
                garbage(l, a, "steps", line, why);
        }
        probe_outcome_free(&o);
    }
    for (int h = 0; h < 2; h++) {
        /* with the vDSO hidden: only when the calls made no clock syscall
           as they ran (their ids are then known only this way) */
        if (h == 1 && (!a->seen_ok || a->seen.clock_calls))
            break;
        const char *cmd[] = {"path", api, np};
        const char *argv[16];
        char buf[600];
        build_argv(l, cmd, 3, argv, buf, sizeof buf);
        struct lang_trace *t = h ? &a->hidden : &a->seen;
        /* a traced runtime starts slower: every one of its system calls stops */
        probe_run_traced(argv, h == 1, lang_opt.timeout_s * 3, t, &o);
        const char *what = h ? "path (vDSO hidden)" : "path";
        if (!o.ok)
            fail(l, a, what, o.why);
        else if (!t->begin_seen || !t->end_seen)
            fail(l, a, what, "the markers cb-path-begin and cb-path-end were not both written to fd 2");
        else if (h)
            a->hidden_ok = true;
        else
            a->seen_ok = true;
        probe_outcome_free(&o);
    }
    if (!info->private_origin)
        bracket_api(l, a);
    /* the first CPU allowed against each other one, at most CROSS_PAIRS_MAX */
    unsigned rounds = lang_opt.calls / 10 < 2000 ? lang_opt.calls / 10 : 2000;
    for (int b = 1; b < n_cpus && a->n_cross < CROSS_PAIRS_MAX; b++)
        cross_pair(l, a, (unsigned)cpu_list[0], (unsigned)cpu_list[b], rounds < 100 ? 100 : rounds);
    unsigned ks[THREAD_COUNTS] = {1, 2, (unsigned)(n_cpus > 0 ? n_cpus : 1)};
    for (int i = 0; i < THREAD_COUNTS; i++) {
        bool dup = false;
        for (int j = 0; j < a->n_k; j++)
            dup |= a->ks[j] == ks[i];
        if (dup)
            continue;
        char k[16];
        u_text(k, sizeof k, ks[i]);
        const char *cmd[] = {"threads", api, k, n};
        int at = a->n_k++;
        a->ks[at] = ks[i];
        why = 0;
        if (one_line(l, a, "threads", cmd, 4, PROBE_CPUS_ALL, &o, &line)) {
            if (lang_parse_threads(line, api, &a->thr[at], &why) && a->thr[at].k == ks[i])
                a->thr_ok[at] = true;
            else
                garbage(l, a, "threads", line, why ? why : "k= is not the count asked for");
        }
        probe_outcome_free(&o);
    }
}

/* ---- what it says ---- */
static double cost_ns(const struct api_result *a, double v, double tsc_hz) { return a->cost.tsc ? lang_ticks_ns(v, tsc_hz) : v; }

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

static void emit_record(int l, const char *cs, const struct api_result *a, double tsc_hz)
{
    const struct lang_api_info *info = a->info;
    struct record r;
    char clock[96];
    record_begin(&r, "lang_clock");
    record_str(&r, "language", lang_defs[l].key);
    record_str(&r, "runtime", infos[l].runtime);
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
    record_str(&r, "path", !a->seen_ok ? 0 : a->seen.clock_calls * 2 >= PATH_CALLS ? "syscall" : a->hidden_ok && a->hidden.clock_calls ? "vdso" : "none");
    record_str(&r, "method", a->cost_ok ? (a->cost.tsc ? "tsc" : "batch") : 0);
    record_u64(&r, "n", a->cost_ok ? a->cost.n : 0);
    if (a->cost_ok && !a->cost.tsc)
        record_u64(&r, "batch", a->cost.batch);
    else
        record_null(&r, "batch");
    rec_f(&r, "min_ns", cost_ns(a, a->cost.min, tsc_hz), a->cost_ok);
    rec_f(&r, "p50_ns", cost_ns(a, a->cost.p50, tsc_hz), a->cost_ok);
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
    /* the cost per thread count: 1, 2 and N (the CPUs online) */
    const char *keys[] = {"threads_1_ns", "threads_2_ns", "threads_n_ns"};
    unsigned want[] = {1, 2, (unsigned)(n_cpus > 0 ? n_cpus : 1)};
    for (int i = 0; i < 3; i++) {
        bool known = false;
        double v = 0;
        for (int j = 0; j < a->n_k; j++)
            if (a->ks[j] == want[i] && a->thr_ok[j])
                known = true, v = a->thr[j].per_call_ns;
        rec_f(&r, keys[i], v, known);
    }
    record_u64(&r, "threads_n", want[2]);
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
    clock_text(a, true, row->clock, sizeof row->clock);
}

#define ROWS_MAX 64

void lang_measure_clocksource(const char *clocksource, const struct lang_row *os_rows, int n_os, double bare_ns, double tsc_hz)
{
    if (lang_opt.off)
        return;
    static struct lang_row rows[ROWS_MAX];
    static char sentences[LANG_COUNT * LANG_API_MAX][400];
    int n = 0, n_sent = 0;
    for (int i = 0; i < n_os && n < ROWS_MAX; i++)
        rows[n++] = os_rows[i];
    printf("\n-- languages on clocksource %s --\n", clocksource);
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
        if (!info_done[l]) {
            const char *cmd[] = {"info"}, *argv[16], *why;
            char buf[600];
            struct probe_outcome o;
            build_argv(l, cmd, 1, argv, buf, sizeof buf);
            probe_run_batch(argv, PROBE_CPUS_OURS, lang_opt.timeout_s, &o);
            info_done[l] = true;
            if (!o.ok || !lang_parse_info(l, o.out, &infos[l], &why)) {
                char text[300];
                snprintf(text, sizeof text, "%s: info: %s", d->title, o.ok ? "printed garbage: " : o.why);
                if (o.ok)
                    snprintf(text + strlen(text), sizeof text - strlen(text), "%s", why);
                printf("  FAILED: %s (the language is not measured)\n", text);
                n_failed++;
                note(failed_what, sizeof failed_what, text);
                snprintf(unavailable_text[l], sizeof unavailable_text[l], "its probe failed");
                unavailable[l] = unavailable_text[l];
                probe_outcome_free(&o);
                if (n < ROWS_MAX) {
                    rows[n] = (struct lang_row){.heading = true};
                    snprintf(rows[n++].name, sizeof rows[0].name, "%s: not measured", d->title);
                }
                continue;
            }
            probe_outcome_free(&o);
        }
        printf("  %s (%s)...\n", d->title, infos[l].runtime);
        if (n < ROWS_MAX) {
            rows[n] = (struct lang_row){.heading = true};
            snprintf(rows[n++].name, sizeof rows[0].name, "%.39s", d->title);
        }
        for (int i = 0; i < infos[l].n; i++) {
            struct api_result a;
            measure_api(l, &infos[l].apis[i], &a);
            emit_record(l, clocksource, &a, tsc_hz);
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
    printf("\n  The ladder on clocksource %s (cost per read, ns):\n", clocksource);
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
}

void lang_judge(lang_check_fn check)
{
    if (lang_opt.off) {
        check("SKIP", "languages", "--no-lang");
        return;
    }
    if (n_failed)
        check("FAIL", "language probes", "%u probe run%s failed: %s", n_failed, n_failed == 1 ? "" : "s", failed_what);
    else
        check("PASS", "language probes", "every probe run picked gave well-formed answers");
    if (n_missing)
        check("SKIP", "languages not measured", "%s (no runtime or no probe: see above)", missing_what);
    if (n_changed)
        check("FAIL", "clocksource held during the languages", "the kernel changed clocksource: %s", changed_what);
}

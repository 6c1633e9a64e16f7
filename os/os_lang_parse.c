/* See os_lang_parse.h. */
#define _GNU_SOURCE
#include "os_lang_parse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct lang_def lang_defs[LANG_COUNT] = {
    {"cpp-libstdc++", "C++ (libstdc++)", "C++gnu", 0, "probe-cpp-libstdcxx", "no C++ probe for libstdc++ (run 'make lang'; apt install g++)",
     {"steady_clock", "system_clock", "high_resolution_clock"}, 3},
    {"cpp-libc++", "C++ (libc++)", "C++llvm", 0, "probe-cpp-libcxx", "no C++ probe for libc++ (run 'make lang'; apt install clang libc++-dev libc++abi-dev)",
     {"steady_clock", "system_clock", "high_resolution_clock"}, 3},
    {"rust", "Rust", "Rust", 0, "probe-rust", "no Rust probe (run 'make lang'; install rustc and cargo)", {"Instant::now", "SystemTime::now"}, 2},
    {"go", "Go", "Go", 0, "probe-go", "no Go probe (run 'make lang'; apt install golang-go)", {"time.Now", "time.Since"}, 2},
    {"java", "Java", "Java", "java", "java", "no JDK (apt install openjdk-17-jdk-headless)",
     {"System.nanoTime", "System.currentTimeMillis", "Instant.now"}, 3},
    {"python", "Python", "Python", "python3", "probe.py", "no Python (apt install python3)",
     {"perf_counter_ns", "monotonic_ns", "time_ns", "process_time_ns", "perf_counter"}, 5},
    {"node", "Node.js", "Node", "node", "probe.js", "no Node.js (apt install nodejs)", {"process.hrtime.bigint", "performance.now", "Date.now"}, 3},
    {"dotnet", ".NET", ".NET", "mono", "Probe.exe", "no .NET runtime (apt install mono-runtime mono-mcs, or install dotnet)", {"Stopwatch.GetTimestamp", "DateTime.UtcNow"}, 2},
};

int lang_find(const char *key)
{
    for (int i = 0; i < LANG_COUNT; i++)
        if (!strcmp(key, lang_defs[i].key))
            return i;
    return -1;
}

bool lang_pick(const char *list, bool pick[LANG_COUNT], char *bad, size_t bad_size)
{
    for (int i = 0; i < LANG_COUNT; i++)
        pick[i] = false;
    const char *p = list;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char name[32];
        int l = -1;
        if (len > 0 && len < sizeof name) {
            memcpy(name, p, len);
            name[len] = 0;
            l = lang_find(name);
        }
        if (l < 0) {
            snprintf(bad, bad_size, "%.*s", (int)(len < 40 ? len : 40), p);
            return false;
        }
        pick[l] = true;
        if (!e)
            return true;
        p = e + 1;
    }
}

const char *lang_keys_text(void)
{
    static char text[160];
    if (!text[0])
        for (int i = 0; i < LANG_COUNT; i++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? ", " : "", lang_defs[i].key);
    return text;
}

/* ---- lines ---- */

/* A strict C-locale number taking the whole text: no "nan", no "inf",
   no trailing characters. */
static bool number(const char *s, size_t len, double *v)
{
    char buf[48];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789.eE+-", buf[i]))
            return false;
    char *end;
    *v = strtod(buf, &end);
    return *end == 0 && *v == *v && *v < 1e300 && *v > -1e300;
}

/* The value of key= among the line's words (after the first two), or NULL;
   *len its length. */
static const char *field(const char *line, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    for (const char *p = line; (p = strstr(p, key)); p += kl) {
        if ((p == line || p[-1] == ' ') && p[kl] == '=') {
            const char *v = p + kl + 1;
            *len = strcspn(v, " \r\n");
            return v;
        }
    }
    return 0;
}

static bool num_field(const char *line, const char *key, double *v, const char **why)
{
    size_t len;
    const char *s = field(line, key, &len);
    static char msg[96];
    if (!s) {
        snprintf(msg, sizeof msg, "no %s= in the line", key);
        *why = msg;
        return false;
    }
    if (!number(s, len, v)) {
        snprintf(msg, sizeof msg, "%s= is not a number", key);
        *why = msg;
        return false;
    }
    return true;
}

static bool u64_field(const char *line, const char *key, uint64_t *v, const char **why)
{
    double d;
    if (!num_field(line, key, &d, why))
        return false;
    if (d < 0 || d != (double)(uint64_t)d) {
        static char msg[96];
        snprintf(msg, sizeof msg, "%s= is not a whole number", key);
        *why = msg;
        return false;
    }
    *v = (uint64_t)d;
    return true;
}

/* "<word> <api> ": the line's first two words. */
static bool head(const char *line, const char *word, const char *api, const char **why)
{
    size_t wl = strlen(word), al = strlen(api);
    if (strncmp(line, word, wl) || line[wl] != ' ' || strncmp(line + wl + 1, api, al) || (line[wl + 1 + al] != ' ' && line[wl + 1 + al])) {
        static char msg[96];
        snprintf(msg, sizeof msg, "expected a line '%s %s ...'", word, api);
        *why = msg;
        return false;
    }
    return true;
}

/* ` budget_ms=B cut=0|1`: both or neither (a command given no bound says neither). */
static bool cut_fields(const char *line, struct lang_cut *b, const char **why)
{
    size_t len;
    bool has_budget = field(line, "budget_ms", &len) != 0;
    const char *c = field(line, "cut", &len);
    if (!has_budget && !c)
        return true;
    if (!has_budget || !c || len != 1 || (*c != '0' && *c != '1')) {
        *why = "budget_ms= and cut=0|1 must come together";
        return false;
    }
    if (!u64_field(line, "budget_ms", &b->budget_ms, why))
        return false;
    b->bounded = true;
    b->cut = *c == '1';
    return true;
}

static void copy_word(char *dst, size_t size, const char *s, size_t len)
{
    if (len >= size)
        len = size - 1;
    memcpy(dst, s, len);
    dst[len] = 0;
}

bool lang_parse_info(int l, const char *text, struct lang_info *out, const char **why)
{
    const struct lang_def *d = &lang_defs[l];
    *out = (struct lang_info){0};
    bool runtime = false;
    static char msg[160];
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[512];
        copy_word(buf, sizeof buf, line, len);
        if (len && buf[len - 1 < sizeof buf - 1 ? len - 1 : sizeof buf - 2] == '\r')
            buf[strlen(buf) - 1] = 0;
        if (!strncmp(buf, "runtime ", 8)) {
            copy_word(out->runtime, sizeof out->runtime, buf + 8, strlen(buf + 8));
            runtime = out->runtime[0] != 0;
        } else if (!strncmp(buf, "api ", 4)) {
            if (out->n >= d->n_apis) {
                *why = "more api lines than the language has APIs";
                return false;
            }
            struct lang_api_info *a = &out->apis[out->n];
            const char *name = buf + 4;
            size_t nlen = strcspn(name, " ");
            copy_word(a->api, sizeof a->api, name, nlen);
            if (strcmp(a->api, d->apis[out->n])) {
                snprintf(msg, sizeof msg, "api line %d names '%.40s', expected '%s'", out->n + 1, a->api, d->apis[out->n]);
                *why = msg;
                return false;
            }
            size_t vl;
            const char *absent = strstr(buf, " absent=");
            if (absent && absent[8]) {
                a->absent = true;
                copy_word(a->absent_why, sizeof a->absent_why, absent + 8, strlen(absent + 8));
                out->n++;
                line = nl ? nl + 1 : 0;
                continue;
            }
            const char *v = field(buf, "claim_ns", &vl);
            if (!v) {
                *why = "an api line has no claim_ns=";
                return false;
            }
            if (vl == 4 && !strncmp(v, "none", 4))
                a->claim_known = false;
            else if (number(v, vl, &a->claim_ns) && a->claim_ns > 0)
                a->claim_known = true;
            else {
                *why = "claim_ns= is neither a positive number nor 'none'";
                return false;
            }
            v = field(buf, "origin", &vl);
            if (v && vl == 7 && !strncmp(v, "private", 7))
                a->private_origin = true;
            else if (!v || vl != 5 || strncmp(v, "clock", 5)) {
                *why = "origin= is neither 'clock' nor 'private'";
                return false;
            }
            const char *src = strstr(buf, " claim_source=");
            if (src)
                copy_word(a->claim_source, sizeof a->claim_source, src + 14, strlen(src + 14));
            out->n++;
        } else if (buf[0]) {
            snprintf(msg, sizeof msg, "unexpected line '%.60s'", buf);
            *why = msg;
            return false;
        }
        line = nl ? nl + 1 : 0;
    }
    if (!runtime) {
        *why = "no 'runtime' line";
        return false;
    }
    if (out->n != d->n_apis) {
        snprintf(msg, sizeof msg, "%d api line%s, expected %d", out->n, out->n == 1 ? "" : "s", d->n_apis);
        *why = msg;
        return false;
    }
    return true;
}

bool lang_parse_cost(const char *line, const char *api, struct lang_cost *c, const char **why)
{
    *c = (struct lang_cost){0};
    if (!head(line, "cost", api, why))
        return false;
    size_t ml, ul;
    const char *m = field(line, "method", &ml), *u = field(line, "unit", &ul);
    if (m && ml == 3 && !strncmp(m, "tsc", 3) && u && ul == 5 && !strncmp(u, "ticks", 5))
        c->tsc = true;
    else if (!(m && ml == 5 && !strncmp(m, "batch", 5) && u && ul == 2 && !strncmp(u, "ns", 2))) {
        *why = "method=/unit= is neither tsc/ticks nor batch/ns";
        return false;
    }
    if (!cut_fields(line, &c->bound, why))
        return false;
    if (!u64_field(line, "n", &c->n, why) || !num_field(line, "min", &c->min, why) || !num_field(line, "p50", &c->p50, why) ||
        !num_field(line, "mean", &c->mean, why) || !num_field(line, "max", &c->max, why))
        return false;
    if (c->tsc) {
        if (!num_field(line, "p99", &c->p99, why) || !num_field(line, "p999", &c->p999, why) || !num_field(line, "bracket", &c->bracket, why))
            return false;
    } else {
        if (!u64_field(line, "batch", &c->batch, why))
            return false;
        size_t tl;
        const char *t = field(line, "timer", &tl);
        copy_word(c->timer, sizeof c->timer, t ? t : "", t ? tl : 0);
    }
    if (c->n == 0 || c->min < 0 || c->min > c->p50 || c->p50 > c->max || (c->tsc && (c->p50 > c->p99 || c->p99 > c->p999 || c->p999 > c->max))) {
        *why = "the figures are out of order (min <= p50 <= p99 <= p999 <= max expected)";
        return false;
    }
    /* the median's interval: both or neither (a probe of an older contract gives neither) */
    bool lo = field(line, "p50_lo", &ml) != 0, hi = field(line, "p50_hi", &ml) != 0;
    if (lo || hi) {
        if (!num_field(line, "p50_lo", &c->p50_lo, why) || !num_field(line, "p50_hi", &c->p50_hi, why))
            return false;
        if (c->p50_lo < c->min || c->p50_lo > c->p50 || c->p50_hi < c->p50 || c->p50_hi > c->max) {
            *why = "p50_lo= and p50_hi= do not bracket the p50 within min and max";
            return false;
        }
        c->ci_known = true;
    }
    return true;
}

bool lang_p50_ci_ns(const struct lang_cost *c, double tsc_hz, double timer_step_ns, double *lo_ns, double *hi_ns)
{
    /* under 6 samples no two order statistics hold the median with 95%: [min, max]
       of 5 holds it with 94% (1 - 2/2^5); say none rather than a false interval
       (a batch API at --lang-calls 100 is one batch) */
    uint64_t samples = c->tsc ? c->n : c->batch ? c->n / c->batch : 0;
    if (!c->ci_known || samples < 6)
        return false;
    double lo = c->tsc ? lang_ticks_ns(c->p50_lo, tsc_hz) : c->p50_lo, hi = c->tsc ? lang_ticks_ns(c->p50_hi, tsc_hz) : c->p50_hi;
    double widen = c->tsc ? timer_step_ns : c->batch ? timer_step_ns / (double)c->batch : 0;
    *lo_ns = lo - widen > 0 ? lo - widen : 0;
    *hi_ns = hi + widen;
    return true;
}

bool lang_parse_steps(const char *line, const char *api, struct lang_steps *s, const char **why)
{
    *s = (struct lang_steps){0};
    if (!head(line, "steps", api, why) || !cut_fields(line, &s->bound, why) || !u64_field(line, "n", &s->n, why) || !u64_field(line, "zero", &s->zero, why) ||
        !u64_field(line, "backward", &s->backward, why) || !num_field(line, "max_backward_ns", &s->max_backward_ns, why))
        return false;
    size_t len;
    const char *v = field(line, "least_ns", &len);
    if (v && len == 4 && !strncmp(v, "none", 4))
        s->least_known = false;
    else if (v && number(v, len, &s->least_ns) && s->least_ns > 0)
        s->least_known = true;
    else {
        *why = "least_ns= is neither a positive number nor 'none'";
        return false;
    }
    v = field(line, "hist", &len);
    if (!v) {
        *why = "no hist= in the line";
        return false;
    }
    for (size_t i = 0; i < len && s->bins < LANG_HIST_MAX;) {
        size_t bl = strcspn(v + i, ", ");
        if (bl > len - i)
            bl = len - i;
        const char *colon = memchr(v + i, ':', bl);
        double upper, count;
        if (!colon || !number(v + i, (size_t)(colon - (v + i)), &upper) || !number(colon + 1, (size_t)(v + i + bl - colon - 1), &count) ||
            count < 0) {
            *why = "hist= is not a list of upper_ns:count";
            return false;
        }
        s->bin_upper_ns[s->bins] = upper;
        s->bin_count[s->bins++] = (uint64_t)count;
        i += bl + 1;
    }
    return true;
}

bool lang_parse_cross(const char *line, const char *api, struct lang_cross *x, const char **why)
{
    *x = (struct lang_cross){0};
    uint64_t a, b;
    if (!head(line, "cross", api, why) || !cut_fields(line, &x->bound, why) || !u64_field(line, "a", &a, why) || !u64_field(line, "b", &b, why) ||
        !u64_field(line, "rounds", &x->rounds, why) || !u64_field(line, "violations", &x->violations, why) ||
        !num_field(line, "max_violation_ns", &x->max_violation_ns, why) || !u64_field(line, "lost", &x->lost, why))
        return false;
    x->a = (unsigned)a, x->b = (unsigned)b;
    size_t len;
    const char *p = field(line, "pinned", &len);
    if (!p || !((len == 4 && !strncmp(p, "self", 4)) || (len == 9 && !strncmp(p, "requested", 9)) || (len == 2 && !strncmp(p, "no", 2)))) {
        *why = "pinned= is not self, requested or no";
        return false;
    }
    copy_word(x->pinned, sizeof x->pinned, p, len);
    if (x->violations > x->rounds || x->lost > x->rounds) {
        *why = "more violations or lost rounds than rounds";
        return false;
    }
    return true;
}

bool lang_thread_disturbed(long long nivcsw, double run_ns, double wall_ns)
{
    return nivcsw > 0 || (run_ns >= 0 && wall_ns > 0 && run_ns < LANG_THREAD_SHARE_MIN * wall_ns);
}

/* key=<v0>,<v1>,...: exactly k numbers, "-" for one not known (-1 in v)
   where unknown_ok. */
static bool list_field(const char *line, const char *key, unsigned k, bool unknown_ok, double *v, const char **why)
{
    static char msg[96];
    size_t len;
    const char *s = field(line, key, &len);
    if (!s) {
        snprintf(msg, sizeof msg, "no %s= in the line", key);
        *why = msg;
        return false;
    }
    unsigned got = 0;
    for (size_t i = 0; i <= len; got++) {
        size_t el = strcspn(s + i, ", \r\n");
        if (el > len - i)
            el = len - i;
        bool dash = el == 1 && s[i] == '-';
        if (got >= k || !(dash ? unknown_ok : number(s + i, el, &v[got]) && v[got] >= 0)) {
            snprintf(msg, sizeof msg, "%s= is not a list of %u numbers%s", key, k, unknown_ok ? " or -" : "");
            *why = msg;
            return false;
        }
        if (dash)
            v[got] = -1;
        i += el + 1;
    }
    if (got != k) {
        snprintf(msg, sizeof msg, "%s= is not a list of %u numbers%s", key, k, unknown_ok ? " or -" : "");
        *why = msg;
        return false;
    }
    return true;
}

bool lang_parse_threads(const char *line, const char *api, struct lang_threads *t, const char **why)
{
    *t = (struct lang_threads){0};
    uint64_t k;
    if (!head(line, "threads", api, why) || !cut_fields(line, &t->bound, why) || !u64_field(line, "k", &k, why) || !u64_field(line, "n", &t->n, why) ||
        !num_field(line, "per_call_ns", &t->per_call_ns, why) || !num_field(line, "max_per_call_ns", &t->max_per_call_ns, why))
        return false;
    t->k = (unsigned)k;
    if (t->per_call_ns < 0 || t->max_per_call_ns < t->per_call_ns * 0.999) {
        *why = "per_call_ns is negative or above max_per_call_ns";
        return false;
    }
    size_t len;
    if (!field(line, "chunk", &len)) /* a probe of the older contract: the loop's mean alone */
        return true;
    if (k < 1 || k > LANG_THREADS_MAX) {
        *why = "k= is not 1 to 1024";
        return false;
    }
    static double cpu[LANG_THREADS_MAX], least[LANG_THREADS_MAX], median[LANG_THREADS_MAX], wall[LANG_THREADS_MAX],
        run[LANG_THREADS_MAX], sw[LANG_THREADS_MAX];
    if (!u64_field(line, "chunk", &t->chunk, why) || !list_field(line, "cpu", t->k, true, cpu, why) ||
        !list_field(line, "least_ns", t->k, false, least, why) || !list_field(line, "median_ns", t->k, false, median, why) ||
        !list_field(line, "wall_ns", t->k, false, wall, why) || !list_field(line, "run_ns", t->k, true, run, why) ||
        !list_field(line, "nivcsw", t->k, true, sw, why))
        return false;
    const char *p = field(line, "pinned", &len);
    if (!p || !((len == 4 && !strncmp(p, "self", 4)) || (len == 9 && !strncmp(p, "requested", 9)) || (len == 2 && !strncmp(p, "no", 2)))) {
        *why = "pinned= is not self, requested or no";
        return false;
    }
    copy_word(t->pinned, sizeof t->pinned, p, len);
    if (t->chunk < 1) {
        *why = "chunk= is 0";
        return false;
    }
    t->chunked = true;
    t->cpu_share = 1e300;
    for (unsigned i = 0; i < t->k; i++) {
        if (least[i] > median[i] * 1.001) {
            *why = "a thread's least chunk is above its median";
            return false;
        }
        t->least_ns = fmax(t->least_ns, least[i]);
        t->median_ns = fmax(t->median_ns, median[i]);
        if (sw[i] >= 0)
            t->switches += (uint64_t)sw[i];
        if (run[i] >= 0 && wall[i] > 0) {
            t->share_known = true;
            t->cpu_share = fmin(t->cpu_share, run[i] / wall[i]);
        }
        if (sw[i] >= 0 || run[i] >= 0)
            t->judged++;
        if (lang_thread_disturbed(sw[i] >= 0 ? (long long)sw[i] : -1, run[i], wall[i])) {
            if (t->n_disturbed_cpu < LANG_THREADS_CPUS_KEPT)
                t->disturbed_cpu[t->n_disturbed_cpu++] = cpu[i] >= 0 ? (int)cpu[i] : -1;
            t->disturbed++;
        }
    }
    if (!t->share_known)
        t->cpu_share = 0;
    if (t->bound.bounded) {
        static double done[LANG_THREADS_MAX];
        if (!list_field(line, "done", t->k, false, done, why))
            return false;
        t->least_done = (uint64_t)-1;
        for (unsigned i = 0; i < t->k; i++) {
            if (done[i] > (double)t->n) {
                *why = "done= counts more calls than n= asked";
                return false;
            }
            if ((uint64_t)done[i] < t->least_done)
                t->least_done = (uint64_t)done[i];
        }
    }
    return true;
}

bool lang_parse_stamp(const char *line, uint64_t *ns)
{
    uint64_t v = 0;
    const char *p = line;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '\r')
        p++;
    if (*p && *p != '\n')
        return false;
    *ns = v;
    return true;
}

double lang_ticks_ns(double ticks, double tsc_hz) { return tsc_hz > 0 ? ticks * 1e9 / tsc_hz : 0; }

/* ---- clock ids ---- */
const int lang_clock_ids[LANG_CLOCKS] = {0, 1, 2, 3, 4, 5, 6, 7};
static const char *const clock_names[] = {"CLOCK_REALTIME", "CLOCK_MONOTONIC", "CLOCK_PROCESS_CPUTIME_ID", "CLOCK_THREAD_CPUTIME_ID",
                                          "CLOCK_MONOTONIC_RAW", "CLOCK_REALTIME_COARSE", "CLOCK_MONOTONIC_COARSE", "CLOCK_BOOTTIME",
                                          "CLOCK_REALTIME_ALARM", "CLOCK_BOOTTIME_ALARM", "clock 10", "CLOCK_TAI"};
static const char *const clock_shorts[] = {"REAL", "MONO", "PCPU", "TCPU", "RAW", "REAL_C", "MONO_C", "BOOT", "REAL_A", "BOOT_A", "10", "TAI"};

const char *lang_clock_name(int id)
{
    if (id == -2)
        return "gettimeofday";
    if (id == -3)
        return "time";
    if (id >= 0 && id < (int)(sizeof clock_names / sizeof *clock_names))
        return clock_names[id];
    return "another clock id";
}

const char *lang_clock_short(int id)
{
    if (id == -2)
        return "gtod";
    if (id == -3)
        return "time";
    if (id >= 0 && id < (int)(sizeof clock_shorts / sizeof *clock_shorts))
        return clock_shorts[id];
    return "?";
}

unsigned lang_bracket_round(const uint64_t before[LANG_CLOCKS], const uint64_t after[LANG_CLOCKS], uint64_t value, uint64_t below_ns,
                            uint64_t above_ns)
{
    unsigned mask = 0;
    for (int i = 0; i < LANG_CLOCKS; i++) {
        uint64_t lo = before[i] > below_ns ? before[i] - below_ns : 0;
        if (before[i] == 0 && after[i] == 0)
            continue; /* not read: no such clock here */
        if (value >= lo && value <= after[i] + above_ns)
            mask |= 1u << i;
    }
    return mask;
}

unsigned lang_bracket_alike(const uint64_t before[LANG_CLOCKS], int i, uint64_t tol_ns)
{
    unsigned mask = 0;
    for (int j = 0; j < LANG_CLOCKS; j++) {
        uint64_t d = before[j] > before[i] ? before[j] - before[i] : before[i] - before[j];
        if (d <= tol_ns)
            mask |= 1u << j;
    }
    return mask;
}

void lang_mask_text(unsigned mask, char *out, size_t size)
{
    out[0] = 0;
    int k = 0;
    for (int i = 0; i < LANG_CLOCKS; i++)
        if (mask & (1u << i))
            snprintf(out + strlen(out), size - strlen(out), "%s%s", k++ ? " or " : "", lang_clock_name(lang_clock_ids[i]));
    if (!k)
        snprintf(out, size, "none");
}

/* ---- the path ---- */
#define NR_GETTIMEOFDAY 96
#define NR_TIME 201
#define NR_CLOCK_GETTIME 228
#define NR_CLOCK_GETRES 229

void lang_trace_add(struct lang_trace *t, long nr, uint64_t arg0)
{
    int id;
    t->syscalls++;
    if (nr == NR_CLOCK_GETTIME || nr == NR_CLOCK_GETRES) {
        /* a CPU-time clock of a given process or thread is a negative id
           (~pid << 3 | type): counted as the clock it is a kind of */
        int64_t s = (int64_t)(int32_t)arg0;
        id = s >= 0 ? (int)s : ((s & 4) ? 3 : 2);
        if (id < 16)
            t->id_count[id]++;
    } else if (nr == NR_GETTIMEOFDAY) {
        id = -2;
        t->gettimeofday++;
    } else if (nr == NR_TIME) {
        id = -3;
        t->time++;
    } else {
        if (!t->other)
            t->other_nr = nr;
        t->other++;
        return;
    }
    t->clock_calls++;
    if (t->n_last == LANG_PATTERN_MAX) {
        memmove(t->last, t->last + 1, (LANG_PATTERN_MAX - 1) * sizeof *t->last);
        t->n_last--;
    }
    t->last[t->n_last++] = id;
}

double lang_per_1000(uint64_t syscalls, uint64_t n) { return n ? (double)syscalls * 1000.0 / (double)n : 0; }

int lang_trace_pattern(const struct lang_trace *t, uint64_t n, int out[LANG_PATTERN_MAX])
{
    if (!n)
        return 0;
    uint64_t k = (t->clock_calls + n / 2) / n;
    if (k > (uint64_t)t->n_last)
        k = (uint64_t)t->n_last;
    for (uint64_t i = 0; i < k; i++)
        out[i] = t->last[t->n_last - (int)k + (int)i];
    return (int)k;
}

void lang_pattern_text(const int *ids, int k, const char *sep, bool short_names, char *out, size_t size)
{
    out[0] = 0;
    for (int i = 0; i < k; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? sep : "", short_names ? lang_clock_short(ids[i]) : lang_clock_name(ids[i]));
}

/* The names of the system calls a runtime makes beside its clock reads
   (x86-64 numbers, arch/x86/entry/syscalls/syscall_64.tbl): Go's scheduler
   and signals, the JVM's and V8's threads. Others are said by number. */
static const char *other_syscall_name(long nr)
{
    static const struct {
        long nr;
        const char *name;
    } names[] = {{0, "read"},           {1, "write"},     {7, "poll"},         {9, "mmap"},       {11, "munmap"},
                 {13, "rt_sigaction"},  {14, "rt_sigprocmask"}, {15, "rt_sigreturn"}, {24, "sched_yield"}, {35, "nanosleep"},
                 {39, "getpid"},        {186, "gettid"},  {202, "futex"},      {230, "clock_nanosleep"}, {232, "epoll_wait"},
                 {234, "tgkill"},       {281, "epoll_pwait"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].nr == nr)
            return names[i].name;
    return 0;
}

static const char *count_word(int k)
{
    static const char *const w[] = {"no", "a", "two", "three", "four", "five", "six", "seven", "eight"};
    return k >= 0 && k <= 8 ? w[k] : "several";
}

void lang_path_sentence(const char *title, const char *api, uint64_t n, const struct lang_trace *seen, const struct lang_trace *hidden,
                        unsigned bracket, bool bracketed, bool private_origin, char *out, size_t size)
{
    int p[LANG_PATTERN_MAX] = {0}, k;
    char ids[160];
    size_t at = (size_t)snprintf(out, size, "%s %s: ", title, api);
    if (at >= size)
        return;
    if (!seen->begin_seen || !seen->end_seen) {
        snprintf(out + at, size - at, "path not traced (the probe's markers were not seen)");
        return;
    }
    double per = lang_per_1000(seen->syscalls, n);
    if (seen->clock_calls > 0) {
        k = lang_trace_pattern(seen, n, p);
        lang_pattern_text(p, k, " then ", false, ids, sizeof ids);
        at += (size_t)snprintf(out + at, size - at, "%s syscall%s every call (%s)", k == 1 ? "a" : count_word(k), k == 1 ? "" : "s", ids);
    } else if (hidden && hidden->begin_seen && hidden->end_seen && hidden->clock_calls > 0) {
        k = lang_trace_pattern(hidden, n, p);
        lang_pattern_text(p, k, " then ", false, ids, sizeof ids);
        at += (size_t)snprintf(out + at, size - at, "%s vDSO read%s, %s", count_word(k), k == 1 ? "" : "s", ids);
    } else if (hidden && hidden->begin_seen && hidden->end_seen) {
        at += (size_t)snprintf(out + at, size - at, "no system call and no clock call even with the vDSO hidden (a counter read or a cached value)");
    } else {
        at += (size_t)snprintf(out + at, size - at, "no system call (the vDSO)");
    }
    double other = lang_per_1000(seen->other, n);
    if (seen->other && at < size) { /* singular when %.0f prints 1 */
        const char *name = other_syscall_name(seen->other_nr);
        at += (size_t)snprintf(out + at, size - at, "; %.0f other system call%s per 1000 (the first: %s%snumber %ld)", other,
                               other > 0.5 && other < 1.5 ? "" : "s", name ? name : "", name ? ", " : "", seen->other_nr);
    }
    (void)per;
    if (at >= size)
        return;
    if (private_origin)
        snprintf(out + at, size - at, "; its value has a private origin: not bracketed");
    else if (bracketed) {
        lang_mask_text(bracket, ids, sizeof ids);
        snprintf(out + at, size - at, "; by bracketing: %s", ids);
    }
}

/* ---- the ladder ---- */
bool lang_claim_finer(const struct lang_row *r)
{
    return r->claim_known && r->step_known && r->claim_ns < r->least_step_ns / 2;
}

const char *lang_fig(char *b, size_t size, double v)
{
    if (v >= 99999.5) {
        /* 2e6, not 2e+06: the column is narrow */
        int e = 0;
        double m = v;
        while (m >= 9.95)
            m /= 10, e++;
        snprintf(b, size, m < 1.05 || fabs(m - (int)(m + 0.5)) < 0.05 ? "%.0fe%d" : "%.1fe%d", m, e);
    }
    else if (v >= 100)
        snprintf(b, size, "%.0f", v);
    else if (v >= 10)
        snprintf(b, size, "%.1f", v);
    else
        snprintf(b, size, "%.2f", v);
    return b;
}

size_t lang_ladder_format(const struct lang_row *rows, int n, double bare_ns, char *out, size_t size)
{
    size_t at = 0;
#define PUT(...)                                                                                                                         \
    do {                                                                                                                                 \
        if (at < size)                                                                                                                   \
            at += (size_t)snprintf(out + at, size - at, __VA_ARGS__);                                                                    \
    } while (0)
    PUT("  %-26s %7s %5s %7s %6s %9s %s\n", "layer, API", "p50 ns", "xbare", "step ns", "claim", "sys/1000", "clock");
    for (int i = 0; i < n; i++) {
        const struct lang_row *r = &rows[i];
        if (r->heading) {
            PUT("  %s\n", r->name);
            continue;
        }
        char c[24], x[16], s[16], cl[20], p[16];
        if (!r->cost_known)
            snprintf(c, sizeof c, "-");
        else if (r->below_step)
            snprintf(c, sizeof c, "<%s", lang_fig(x, sizeof x, r->p50_ns));
        else {
            lang_fig(c, sizeof c, r->p50_ns);
            if (r->method == 'b')
                strcat(c, "b");
        }
        if (r->disturbed)
            strcat(c, "~");
        if (r->cost_known && bare_ns > 0 && r->p50_ns / bare_ns < 1000)
            snprintf(x, sizeof x, "%.1f", r->p50_ns / bare_ns);
        else if (r->cost_known && bare_ns > 0) /* a busy host's 2e7: within the column */
            lang_fig(x, sizeof x, r->p50_ns / bare_ns);
        else
            snprintf(x, sizeof x, "-");
        if (r->step_known)
            lang_fig(s, sizeof s, r->least_step_ns);
        else
            snprintf(s, sizeof s, "-");
        if (r->claim_known) {
            lang_fig(cl, sizeof cl, r->claim_ns);
            if (lang_claim_finer(r))
                strcat(cl, "!");
        } else
            snprintf(cl, sizeof cl, "none");
        if (!r->path_known)
            snprintf(p, sizeof p, "-");
        else
            snprintf(p, sizeof p, "%.0f %s", r->syscalls_per_1000, r->via_syscall ? "sys" : "vdso");
        PUT("  %-26.26s %7s %5s %7s %6s %9s %.12s\n", r->name, c, x, s, cl, p, r->clock[0] ? r->clock : "-");
    }
    /* every column and mark explained where it is read (docs/output.md
       says the same at length) */
    PUT("  b: batches timed by the runtime, not single calls; <: under 3 of the TSC's\n"
        "    steps: the p50 is the step's, not a cost\n"
        "  ~: the host was busy: cut short by its bound, slow in every round, or not\n"
        "    measured (see above)\n"
        "  xbare: p50 over the bare read's (at least this where the bare read has <)\n"
        "  step: the least non-zero step seen; -: not measured, not seen or not traced\n"
        "  claim: the resolution the API states; !: a claim finer than half the least\n"
        "    step seen\n"
        "  sys/1000: system calls in 1000 calls (a language's counted under ptrace);\n"
        "    vdso: the clock read with no system call, sys: by one\n"
        "  clock: REAL(TIME), MONO(TONIC), RAW, BOOT(TIME), PCPU and TCPU (PROCESS_ and\n"
        "    THREAD_CPUTIME_ID), _C: _COARSE, gtod: gettimeofday; +: several a call\n"
        "    in that order; |: can't be told apart here\n");
#undef PUT
    return at < size ? at : size - 1;
}

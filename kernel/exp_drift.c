/* Experiment "drift": the rate of every counter against the TSC over a
   window, and so the TSC's own rate against the best reference.

   Every counter is read between two serialised TSC reads, round and round,
   for the whole window. Each change of a counter's value is judged against
   the TSC time since its previous change (unwrap.h): a counter that
   advanced as the TSC allows is continuous; one that advanced less stood
   still while the TSC ran (a paused VM), one that advanced more jumped,
   one whose gap was longer than it can unwrap cannot tell. Each such event
   is a discontinuity: it is reported, and it starts a new segment. The
   rate is one least-squares slope common to all segments, each with its
   own offset (segfit.h), so a pause bends nothing. A step in the residuals
   that no event explains is cut the same way. The uncertainty covers
   statistics, correlated noise and quantisation (uncertainty.h). */
#include "checks.h"
#include "console.h"
#include "cmdline.h"
#include "cpuinfo.h"
#include "discover.h"
#include "experiment.h"
#include "exp_rtc.h"
#include "memory.h"
#include "probe.h"
#include "progress.h"
#include "reads.h"
#include "record.h"
#include "report_util.h"
#include "results.h"
#include "segfit.h"
#include "string.h"
#include "uncertainty.h"
#include "unwrap.h"

#define EVENTS_KEPT 32           /* per counter; more are counted */
#define CUTS_MAX 64              /* cuts shared by every series */
#define RESIDUALS_KEEP 128
#define RESIDUALS_PER_RECORD 32
#define GAP_REPORT_MS 10         /* the loop away this long: reported even when every clock ran */
#define STUCK_MS 100             /* no change for this long, while the loop ran: stuck */
#define UNCERTAINTY_SUBWINDOWS 8
#define RESIDUAL_STEP_K 6        /* a level shift in the residuals this many times its noise ... */
#define RESIDUAL_STEP_TICKS 3    /* ... and this many counter ticks is a cut */
#define RESIDUAL_CUTS_MAX 4
#define WINDOW_CAP_FACTOR 3      /* the window may run this many times what was asked, to make up for gaps */

enum event_kind { EV_GAP, EV_STOOD_STILL, EV_JUMPED, EV_BACKWARD, EV_TOO_LONG, EV_TSC_BACK, EV_RESIDUAL_STEP, EV_KINDS };
static const char *const event_names[EV_KINDS] = {
    [EV_GAP] = "gap", [EV_STOOD_STILL] = "reference stood still", [EV_JUMPED] = "reference jumped",
    [EV_BACKWARD] = "reference went back", [EV_TOO_LONG] = "too long to unwrap", [EV_TSC_BACK] = "tsc went back",
    [EV_RESIDUAL_STEP] = "residual step",
};

struct event {
    enum event_kind kind;
    uint64_t at_tsc;        /* TSC ticks into the window */
    uint64_t tsc_ticks;     /* how far the TSC advanced across it */
    bool counter_known;
    int64_t counter_ticks;  /* how far the counter advanced (signed: back, or a residual step) */
};

struct series {
    int counter;
    struct read_src src;
    struct unwrap_params up;
    bool stuck;
    uint64_t stuck_at_tsc;

    /* the last change of value, and the last read */
    uint64_t lc_value, lc_a, lc_b, lc_y;   /* the reference reading: the last narrow one */
    uint64_t cur_value, last_b, still_tsc; /* the last value seen, and when */
    uint64_t narrow_w, limit_tsc;          /* narrowest bracket so far; how long a step can unwrap */
    bool in_stall, gap_pending;
    uint64_t y;              /* counter ticks since the window began, unwrapped */
    uint32_t seg;

    /* counts */
    uint64_t reads, wraps, stalls, longest_stall_tsc, backward, largest_backward, gaps, tsc_back;
    uint32_t event_count;
    struct event events[EVENTS_KEPT];

    /* samples, one slot per 1/slots of the window: the narrowest bracket wins */
    int64_t *x, *yv;
    uint32_t *sg, *w;        /* w = bracket width + 1; 0 = empty slot */
    uint32_t *cut_sg;        /* sg with every series' cuts applied: what is fitted */

    /* analysis */
    uint32_t slots_filled, kept;
    uint64_t min_width;
    bool fitted;
    struct seg_fit fit;
    struct freq_uncertainty unc;
    uint32_t sub_count;
    int64_t sub_len;
    struct subwindow sub[SUBWINDOWS_MAX];
    uint32_t resid_count;
    int64_t resid_x[RESIDUALS_KEEP];
    int64_t resid_mticks[RESIDUALS_KEEP];
    uint64_t span_tsc;       /* the window, first read to last */
    uint64_t away_tsc;       /* time the loop was away (gaps) */
};

/* Fault injection from inside the image (command line inject=KIND:MS@S):
   hpet_halt stops the HPET's main counter for MS milliseconds, S seconds
   into the window (a reference that stands still while the TSC runs);
   tsc_jump moves the TSC forward by MS milliseconds there (IA32_TSC_ADJUST
   or IA32_TIME_STAMP_COUNTER, Intel SDM vol. 3B, 18.17). Known sizes, for
   tests. */
enum inject_kind { INJECT_NONE, INJECT_HPET_HALT, INJECT_TSC_JUMP };
static struct {
    enum inject_kind kind;
    uint64_t ms, at_ms;
    uint64_t at_tsc, until_tsc;
    bool started, done;
    uint64_t moved_tsc; /* tsc_jump: how far the TSC moved, as read back */
} inject;
#define MSR_TSC 0x10u
#define MSR_TSC_ADJUST 0x3Bu

static void inject_parse(void)
{
    inject.kind = INJECT_NONE;
    const char *v = cmdline_get(&boot_cmdline, "inject");
    if (!v)
        return;
    char kind[16], num[24];
    const char *rest = cmdline_split(v, ':', kind, sizeof kind);
    const char *at = rest ? cmdline_split(rest, '@', num, sizeof num) : 0;
    bool ok = at && cmdline_parse_u64(num, &inject.ms) && cmdline_parse_u64(at, &inject.at_ms) && inject.ms > 0 &&
              inject.ms <= 60000;
    inject.at_ms *= 1000; /* given in seconds */
    if (ok && !strcmp(kind, "hpet_halt") && counters[COUNTER_HPET].present)
        inject.kind = INJECT_HPET_HALT;
    else if (ok && !strcmp(kind, "tsc_jump"))
        inject.kind = INJECT_TSC_JUMP;
    else
        kprintf("Note: inject=%s is not hpet_halt:MS@S or tsc_jump:MS@S (with an HPET for\n"
                "      hpet_halt); nothing is injected\n", v);
}

/* IA32_TSC_ADJUST where CPUID says it exists (a write there moves the TSC
   by the same amount, Intel SDM vol. 3B, 18.17.3), else IA32_TSC itself. */
static void tsc_jump_job(void *unused)
{
    (void)unused;
    uint64_t delta = ms_to_tsc(inject.ms);
    if (boot_cpu.info.tsc_adjust)
        wrmsr(MSR_TSC_ADJUST, rdmsr(MSR_TSC_ADJUST) + delta);
    else
        wrmsr(MSR_TSC, rdtsc() + delta);
}

/* Called between reads, outside any bracket. */
static void inject_tick(uint64_t now, uint64_t start)
{
    if (inject.kind == INJECT_NONE || inject.done)
        return;
    if (!inject.started && now - start >= ms_to_tsc(inject.at_ms)) {
        inject.started = true;
        inject.until_tsc = now + ms_to_tsc(inject.ms);
        if (inject.kind == INJECT_HPET_HALT) {
            hpet_set_running(&discovered.hpet, false);
        } else {
            struct probe_fault fault;
            uint64_t before = rdtsc();
            if (!probe_run(tsc_jump_job, 0, &fault))
                kprintf("  Note: writing the TSC faulted (%s); nothing injected\n", fault.text);
            inject.moved_tsc = rdtsc() - before;
            inject.done = true;
        }
    } else if (inject.started && now >= inject.until_tsc) {
        hpet_set_running(&discovered.hpet, true);
        inject.done = true;
    }
}

static struct series series[COUNTER_COUNT];
static int series_count;
static uint64_t window_asked_tsc, window_ran_tsc, window_away_tsc;
/* TSC times (ticks into the window) where any series found a discontinuity
   other than a gap: a step on the TSC's side shows in every reference, but
   may be told by only one of them, so every series is cut at all of them */
static uint64_t cuts[CUTS_MAX];
static uint32_t cut_count;
static bool cuts_overflowed;

static void add_cut(uint64_t at_tsc)
{
    uint32_t i = cut_count;
    for (uint32_t k = 0; k < cut_count; k++)
        if (cuts[k] == at_tsc)
            return;
    if (cut_count == CUTS_MAX) {
        cuts_overflowed = true;
        return;
    }
    while (i > 0 && cuts[i - 1] > at_tsc) {
        cuts[i] = cuts[i - 1];
        i--;
    }
    cuts[i] = at_tsc;
    cut_count++;
}

/* The series' own segments, each split further at every shared cut. */
static void apply_cuts(struct series *s, uint32_t n)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) {
        while (c < cut_count && cuts[c] <= (uint64_t)s->x[i])
            c++;
        s->cut_sg[i] = s->sg[i] * (CUTS_MAX + 1) + c;
    }
}
static uint32_t slots;
static const char *skip_reason;

/* Every event is counted; EVENTS_KEPT are kept: every one that cuts the
   fit (prepare() cuts only at kept events) before any gap, then the longest
   gaps. On a loaded host the loop is away for 10 ms or more many times a
   second, and the first such gaps must not crowd out a later stall, the
   finding the window is there to report. */
static void add_event(struct series *s, enum event_kind k, uint64_t at, uint64_t tsc_ticks, bool known, int64_t counter_ticks)
{
    uint32_t n = s->event_count < EVENTS_KEPT ? s->event_count : EVENTS_KEPT;
    s->event_count++;
    if (n == EVENTS_KEPT) {
        uint32_t shortest = EVENTS_KEPT; /* the shortest gap kept: the first to give way */
        for (uint32_t i = 0; i < n; i++)
            if (s->events[i].kind == EV_GAP &&
                (shortest == EVENTS_KEPT || s->events[i].tsc_ticks < s->events[shortest].tsc_ticks))
                shortest = i;
        if (shortest == EVENTS_KEPT || (k == EV_GAP && tsc_ticks <= s->events[shortest].tsc_ticks))
            return;
        for (uint32_t i = shortest; i + 1 < n; i++)
            s->events[i] = s->events[i + 1];
        n--;
    }
    s->events[n] = (struct event){k, at, tsc_ticks, known, counter_ticks};
}

static uint64_t mid(uint64_t a, uint64_t b) { return a / 2 + b / 2 + (a & b & 1); }

/* One read of one counter, judged and stored. A counter that stands still
   is read on to the end of the window: it may resume (a discontinuity), or
   not (stuck). */
static void sample_one(struct series *s, uint64_t start, uint64_t slot_len, uint64_t sampled_tsc, uint64_t gap_tsc,
                       uint64_t stall_tsc)
{
    uint64_t a, b;
    uint64_t v = read_bracketed(&s->src, &a, &b) & s->src.mask;
    s->reads++;
    /* the loop was away: between the previous read and this one, or inside this read's bracket */
    bool away = b - s->last_b > gap_tsc;
    if (away) {
        s->gaps++;
        s->away_tsc += b - s->last_b;
        s->gap_pending = true;
    }
    if (v != s->cur_value) {
        /* judged against the last reading whose bracket was narrow: a pause
           that falls inside a bracket widens it and hides from that step,
           but not from the step that spans the wide bracket */
        struct step st;
        unwrap_step(&s->up, s->lc_value, s->lc_a, s->lc_b, v, a, b, &st);
        uint64_t at = mid(a, b) - start, tsc_ticks = mid(a, b) - mid(s->lc_a, s->lc_b);
        bool cut = true;
        uint64_t width = b - a;
        bool narrow = width <= 3 * s->narrow_w + 16;
        switch (st.kind) {
        case STEP_NORMAL:
            cut = false;
            if (v < s->cur_value)
                s->wraps++;
            s->y = s->lc_y + st.advance;
            /* a gap is told from narrow readings either side of it: one
               inside a wide bracket could have been read before the gap */
            if (s->gap_pending && narrow) {
                add_event(s, EV_GAP, at, tsc_ticks, true, (int64_t)st.advance);
                s->gap_pending = false;
            }
            break;
        case STEP_SLOW:
            s->y = s->lc_y + st.advance;
            add_event(s, EV_STOOD_STILL, at, tsc_ticks, true, (int64_t)st.advance);
            break;
        case STEP_FAST:
            s->y = s->lc_y + st.advance;
            add_event(s, EV_JUMPED, at, tsc_ticks, true, (int64_t)st.advance);
            break;
        case STEP_BACKWARD:
            s->backward++;
            if (st.backward > s->largest_backward)
                s->largest_backward = st.backward;
            add_event(s, EV_BACKWARD, at, tsc_ticks, true, -(int64_t)st.backward);
            break;
        case STEP_GAP:
            add_event(s, EV_TOO_LONG, at, tsc_ticks, false, 0);
            break;
        case STEP_TSC_BACKWARD:
            s->tsc_back++;
            add_event(s, EV_TSC_BACK, at, s->lc_b - a, true, (int64_t)st.advance);
            break;
        }
        if (cut) {
            s->seg++;
            s->gap_pending = false;
        }
        s->cur_value = v;
        if (width < s->narrow_w)
            s->narrow_w = width;
        /* a new reference: after an event, for a narrow bracket, or before
           the old one grows too old to unwrap from */
        if (cut || narrow || a - s->lc_b > s->limit_tsc / 4) {
            s->lc_value = v;
            s->lc_a = a;
            s->lc_b = b;
            s->lc_y = s->y;
        }
        s->still_tsc = 0;
        s->in_stall = false;
    } else if (!away) {
        /* unchanged: how long it has stood still while we watched */
        s->still_tsc += b - s->last_b;
        if (s->still_tsc > stall_tsc) {
            if (!s->in_stall)
                s->stalls++;
            s->in_stall = true;
            if (s->still_tsc > s->longest_stall_tsc)
                s->longest_stall_tsc = s->still_tsc;
        }
    }
    s->last_b = b;
    /* a sample taken while the counter stands still says nothing of its rate */
    uint64_t m = mid(a, b);
    uint64_t slot = sampled_tsc / slot_len;
    if (!s->in_stall && slot < slots && (s->w[slot] == 0 || b - a + 1 < s->w[slot])) {
        s->x[slot] = (int64_t)(m - start);
        s->yv[slot] = (int64_t)s->y;
        s->sg[slot] = s->seg;
        s->w[slot] = (uint32_t)(b - a + 1 < 0xFFFFFFFFu ? b - a + 1 : 0xFFFFFFFEu);
    }
}

static void sample_all(uint64_t window)
{
    uint64_t slot_len = window / slots ? window / slots : 1;
    uint64_t gap_tsc = ms_to_tsc(GAP_REPORT_MS), stuck_tsc = ms_to_tsc(STUCK_MS);
    uint64_t start = bracket_begin();
    for (int k = 0; k < series_count; k++) {
        struct series *s = &series[k];
        uint64_t a, b;
        s->lc_value = s->cur_value = read_bracketed(&s->src, &a, &b) & s->src.mask;
        s->lc_a = a;
        s->lc_b = s->last_b = b;
        s->lc_y = 0;
        s->narrow_w = b - a;
        s->limit_tsc = unwrap_limit_tsc(&s->up);
        s->still_tsc = 0;
        s->y = 0;
        s->seg = 0;
    }
    uint64_t prev = start, sampled = 0, away = 0;
    uint64_t cap = window * WINDOW_CAP_FACTOR + ms_to_tsc(10000);
    uint64_t one_s = ms_to_tsc(1000) ? ms_to_tsc(1000) : 1, next_progress = start + one_s;
    for (uint64_t it = 0; it < 4000000000ull; it++) {
        for (int k = 0; k < series_count; k++) {
            struct series *s = &series[k];
            /* a stall: no change for 10 nominal ticks and at least 10 us */
            uint64_t tick_tsc = results.tsc_estimate_hz * 1000 / s->up.counter_millihz;
            uint64_t stall_tsc = 10 * tick_tsc > ms_to_tsc(1) / 100 ? 10 * tick_tsc : ms_to_tsc(1) / 100;
            sample_one(s, start, slot_len, sampled, gap_tsc, stall_tsc);
        }
        /* time that counts toward the window: not the time the loop was away */
        uint64_t now = bracket_end();
        inject_tick(now, start);
        rtc_window_poll(now); /* returns at once unless an RTC edge is near; holds the loop 5 ms at most */
        uint64_t step = now - prev;
        prev = now;
        if (step > gap_tsc)
            away += step;
        else
            sampled += step;
        if (sampled >= window || now - start >= cap)
            break;
        if (now >= next_progress) {
            /* some 70 bytes: 6 ms at 115200 baud, under the GAP_REPORT_MS a
               gap needs; a stall while they go out is a gap like any other */
            progress("drift", (unsigned)(sampled * 100 / window), (int64_t)((window - sampled + one_s - 1) / one_s));
            next_progress = now + one_s;
        }
    }
    rtc_window_end();
    if (inject.kind == INJECT_HPET_HALT && inject.started && !inject.done)
        hpet_set_running(&discovered.hpet, true);
    window_ran_tsc = prev - start;
    window_away_tsc = away;
    /* stuck: it stood still, while we watched, for the last STUCK_MS or more
       of the window and never moved again; one that stood still and then
       went on is a discontinuity instead */
    for (int k = 0; k < series_count; k++) {
        struct series *s = &series[k];
        s->span_tsc = window_ran_tsc;
        if (s->still_tsc > stuck_tsc) {
            s->stuck = true;
            s->stuck_at_tsc = s->lc_b - start;
        }
    }
}

/* Keeps the samples whose bracket is within twice the narrowest (and a few
   ticks, for brackets of 0-2 ticks), packed to the front. */
static uint32_t keep_narrow(struct series *s)
{
    uint32_t min_w = 0xFFFFFFFFu, n = 0;
    for (uint32_t i = 0; i < slots; i++)
        if (s->w[i]) {
            s->slots_filled++;
            if (s->w[i] < min_w)
                min_w = s->w[i];
        }
    if (min_w == 0xFFFFFFFFu)
        return 0;
    s->min_width = min_w - 1;
    uint64_t limit = 2 * s->min_width > s->min_width + 4 ? 2 * s->min_width : s->min_width + 4;
    for (uint32_t i = 0; i < slots; i++) {
        if (!s->w[i] || s->w[i] - 1 > limit)
            continue;
        s->x[n] = s->x[i];
        s->yv[n] = s->yv[i];
        s->sg[n] = s->sg[i];
        n++;
    }
    return n;
}

/* Keeps the narrow samples and gathers the series' cut times. */
static void prepare(struct series *s)
{
    s->kept = keep_narrow(s);
    for (uint32_t e = 0; e < s->event_count && e < EVENTS_KEPT; e++)
        if (s->events[e].kind != EV_GAP)
            add_cut(s->events[e].at_tsc);
}

static void fit_series(struct series *s)
{
    apply_cuts(s, s->kept);
    s->fitted = s->kept >= 3 && segfit(s->x, s->yv, s->cut_sg, s->kept, &s->fit);
}

/* A step in the residuals that no event explains: cut there, in every series. */
static bool find_residual_step(struct series *s)
{
    uint32_t at;
    struct xf size;
    /* only a reference's residuals can tell a step on the TSC's side; the
       APIC timer and the paravirtual clocks are measured, not trusted to */
    if (!counters[s->counter].reference_rank)
        return false;
    if (!s->fitted || !segfit_find_step(&s->fit, s->x, s->yv, s->cut_sg, s->kept, xf_from_u64(RESIDUAL_STEP_TICKS),
                                        RESIDUAL_STEP_K, &at, &size))
        return false;
    add_event(s, EV_RESIDUAL_STEP, (uint64_t)s->x[at], 0, true, xf_to_fixed(size, 0));
    add_cut((uint64_t)s->x[at]);
    return true;
}

static void analyse_all(void)
{
    cut_count = 0;
    cuts_overflowed = false;
    for (int k = 0; k < series_count; k++)
        prepare(&series[k]);
    for (int round = 0; round <= RESIDUAL_CUTS_MAX; round++) {
        bool more = false;
        for (int k = 0; k < series_count; k++)
            fit_series(&series[k]);
        for (int k = 0; round < RESIDUAL_CUTS_MAX && k < series_count; k++)
            more |= find_residual_step(&series[k]);
        if (!more)
            break;
    }
    for (int k = 0; k < series_count; k++) {
        struct series *s = &series[k];
        uint32_t n = s->kept;
        if (!s->fitted)
            continue;
        /* quantisation: one counter tick. The brackets' width and jitter are
           in the data, so the statistical and correlated terms see them; the
           tick's rounding can beat with the sampling and need not average out. */
        freq_uncertainty(s->x, s->yv, s->cut_sg, n, &s->fit, xf_from_u64(1), UNCERTAINTY_SUBWINDOWS, &s->unc);
        /* stability: 1 s sub-windows, longer when the window holds more than SUBWINDOWS_MAX */
        uint64_t one_s = results.tsc_estimate_hz;
        uint64_t span = (uint64_t)(s->x[n - 1] - s->x[0]);
        s->sub_len = (int64_t)(span / one_s + 1 > SUBWINDOWS_MAX ? (span / SUBWINDOWS_MAX + 1) : one_s);
        s->sub_count = subwindows_fit(s->x, s->yv, s->cut_sg, n, s->sub_len, s->sub, SUBWINDOWS_MAX);
        for (uint32_t j = 0; j < RESIDUALS_KEEP && j < n; j++) {
            uint32_t i = n <= RESIDUALS_KEEP ? j : (uint32_t)((uint64_t)j * (n - 1) / (RESIDUALS_KEEP - 1));
            s->resid_x[j] = s->x[i];
            s->resid_mticks[j] = xf_to_fixed(segfit_residual(&s->fit, s->x[i], s->yv[i], s->cut_sg[i]), 3);
            s->resid_count = j + 1;
        }
    }
}

static bool usable(const struct series *s) { return s->fitted && !s->stuck; }

static const struct series *series_of(int counter)
{
    for (int k = 0; k < series_count; k++)
        if (series[k].counter == counter)
            return &series[k];
    return 0;
}

/* The TSC's rate from the best reference that gave a usable fit. */
static void publish_tsc_rate(void)
{
    int order[COUNTER_COUNT];
    int n = counters_by_rank(order);
    results.reference = -1;
    for (int i = 0; i < n && results.reference < 0; i++) {
        const struct series *s = series_of(order[i]);
        if (!s || !usable(s))
            continue;
        results.reference = order[i];
        results.tsc_measured = true;
        results.tsc_hz = xf_div(nominal_hz(order[i]), s->fit.slope);
        results.tsc_stderr_ppm = ppm_of(s->unc.statistical);
        results.tsc_uncertainty_ppm = ppm_of(s->unc.total);
        results.tsc_absolute_ppm = counters[order[i]].nominal_accuracy_ppm;
        fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "measured against %s", counters[order[i]].name);
    }
    if (results.tsc_measured)
        return;
    if (counters[COUNTER_TSC].nominal_millihz) {
        results.tsc_hz = xf_div(xf_from_u64(counters[COUNTER_TSC].nominal_millihz), xf_from_u64(1000));
        fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "nominal: %s", counters[COUNTER_TSC].nominal_source);
    } else {
        results.tsc_hz = xf_from_u64(results.tsc_estimate_hz);
        fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "nominal: %s%s",
                   results.tsc_estimate_checked ? "the quick estimate against " : "", results.tsc_estimate_source);
    }
}

static void drift_measure(const struct profile *p)
{
    window_asked_tsc = ms_to_tsc(p->drift_ms);
    uint64_t slots64 = (uint64_t)p->slots_per_s * p->drift_ms / 1000;
    slots = (uint32_t)(slots64 < 3 ? 3 : slots64 > PROFILE_MAX_SLOTS ? PROFILE_MAX_SLOTS : slots64);
    series_count = 0;
    skip_reason = 0;
    inject_parse();
    /* the RTC's edges are timed in this window too (exp_rtc.c); it finds
       their phase first, before the window's start is announced */
    rtc_window_begin();
    struct record r;
    record_begin(&r, "phase");
    record_str(&r, "experiment", "drift");
    record_str(&r, "event", "start");
    record_u64(&r, "window_ms", p->drift_ms);
    emit(&r);
    uint64_t mark = memory_mark();
    for (int c = 0; c < COUNTER_COUNT; c++) {
        if (c == COUNTER_TSC || !counters[c].present)
            continue;
        struct series *s = &series[series_count];
        *s = (struct series){.counter = c};
        if (!counter_source(c, &s->src))
            continue;
        unwrap_params_of(c, &s->up);
        s->x = memory_alloc(slots * sizeof *s->x);
        s->yv = memory_alloc(slots * sizeof *s->yv);
        s->sg = memory_alloc(slots * sizeof *s->sg);
        s->w = memory_alloc(slots * sizeof *s->w);
        s->cut_sg = memory_alloc(slots * sizeof *s->cut_sg);
        if (!s->x || !s->yv || !s->sg || !s->w || !s->cut_sg) {
            skip_reason = "no memory for the samples (the memory map gave no usable region)";
            break;
        }
        memset(s->w, 0, slots * sizeof *s->w);
        series_count++;
    }
    if (skip_reason)
        series_count = 0;
    if (series_count) {
        sample_all(window_asked_tsc);
        analyse_all();
    }
    memory_release(mark);
    record_begin(&r, "phase");
    record_str(&r, "experiment", "drift");
    record_str(&r, "event", "end");
    emit(&r);
    publish_tsc_rate();
    uint32_t notes = 0;
    for (int k = 0; k < series_count; k++) {
        const struct series *s = &series[k];
        struct counter_findings *f = &results.counter[s->counter];
        f->drift_done = true;
        f->fitted = s->fitted;
        f->stuck = s->stuck;
        f->backward = s->backward;
        f->largest_backward = s->largest_backward;
        f->wraps = s->wraps;
        f->stalls = s->stalls;
        f->longest_stall_tsc = s->longest_stall_tsc;
        if (!counters[s->counter].reference_rank)
            continue; /* its discontinuities are its own, not the TSC's (see report) */
        for (uint32_t e = 0; e < s->event_count && e < EVENTS_KEPT; e++) {
            if (notes >= sizeof results.disc / sizeof *results.disc)
                break;
            const struct event *ev = &s->events[e];
            results.disc[notes++] = (struct discontinuity_note){
                .reference = s->counter, .kind = event_names[ev->kind],
                .at_ms = (uint64_t)xf_to_fixed(tsc_ticks_s(ev->at_tsc), 3),
                .tsc_us = xf_to_fixed(xf_div(tsc_ticks_ns(ev->tsc_ticks), xf_from_u64(1000)), 0),
                .counter_us = xf_to_fixed(xf_div(counter_ticks_ns(s->counter, xf_from_i64(ev->counter_ticks)), xf_from_u64(1000)), 0),
                .counter_known = ev->counter_known};
        }
        results.disc_count = notes;
        if (s->tsc_back > results.tsc_back_in_drift)
            results.tsc_back_in_drift = s->tsc_back;
        results.discontinuities += s->event_count;
    }
}

/* --- report --- */

static void discontinuity_records(const struct series *s)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    const char *name = counters[s->counter].name;
    for (uint32_t e = 0; e < s->event_count && e < EVENTS_KEPT; e++) {
        const struct event *ev = &s->events[e];
        struct xf at_s = tsc_ticks_s(ev->at_tsc);
        struct xf tsc_ns = tsc_ticks_ns(ev->tsc_ticks);
        struct xf cnt_ns = counter_ticks_ns(s->counter, xf_from_i64(ev->counter_ticks));
        struct xf tsc_us = xf_div(tsc_ns, xf_from_u64(1000)), cnt_us = xf_div(cnt_ns, xf_from_u64(1000));
        if (ev->kind == EV_RESIDUAL_STEP)
            kprintf("    at %s s: a step of %s us in %s's residuals\n", xs(a, at_s, 3), xs(b, cnt_us, 3), name);
        else if (ev->kind == EV_TSC_BACK)
            kprintf("    at %s s: the TSC went back %s us\n", xs(a, at_s, 3), xs(b, tsc_us, 1));
        else if (ev->counter_known)
            kprintf("    at %s s: %s; the TSC advanced %s us, %s %s us\n", xs(a, at_s, 3), event_names[ev->kind],
                    xs(b, tsc_us, 1), name, xs(c, cnt_us, 1));
        else
            kprintf("    at %s s: %s; the TSC advanced %s us, longer than %s can unwrap\n", xs(a, at_s, 3),
                    event_names[ev->kind], xs(b, tsc_us, 1), name);
        struct record r;
        record_begin(&r, "discontinuity");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", name);
        record_str(&r, "kind", event_names[ev->kind]);
        record_xf_fixed(&r, "at_s", at_s, 6);
        record_xf_fixed(&r, "tsc_ns", tsc_ns, 1);
        if (ev->counter_known)
            record_xf_fixed(&r, "counter_ns", cnt_ns, 1);
        else
            record_null(&r, "counter_ns");
        emit(&r);
    }
    if (s->event_count > EVENTS_KEPT)
        kprintf("    and %u more, not listed: those that cut the fit come first, then\n"
                "    the longest gaps\n", s->event_count - EVENTS_KEPT);
}

static void frequency_record(const char *counter, const char *reference, struct xf hz, bool has_nominal, struct xf ppm,
                             const struct freq_uncertainty *u, uint32_t absolute_ppm, const struct series *s, struct xf resid_ns)
{
    struct record r;
    record_begin(&r, "frequency");
    record_str(&r, "counter", counter);
    record_str(&r, "reference", reference);
    record_xf_fixed(&r, "hz", hz, 3);
    if (has_nominal)
        record_xf_fixed(&r, "ppm_vs_nominal", ppm, 6);
    else
        record_null(&r, "ppm_vs_nominal");
    record_xf_fixed(&r, "stderr_ppm", ppm_of(u->statistical), 6);
    record_xf_fixed(&r, "correlated_ppm", ppm_of(u->correlated), 6);
    record_xf_fixed(&r, "quantisation_ppm", ppm_of(u->quantisation), 6);
    record_xf_fixed(&r, "uncertainty_ppm", ppm_of(u->total), 6);
    record_u64(&r, "absolute_uncertainty_ppm", absolute_ppm);
    record_xf_fixed(&r, "window_s", tsc_ticks_s(s->span_tsc), 6);
    record_xf_fixed(&r, "away_s", tsc_ticks_s(s->away_tsc), 6);
    record_u64(&r, "samples", s->fit.n);
    record_u64(&r, "segments", s->fit.segments);
    record_u64(&r, "dropped", s->fit.dropped);
    record_u64(&r, "discontinuities", s->event_count);
    record_xf_fixed(&r, "resid_rms_ns", resid_ns, 3);
    emit(&r);
}

/* The fit's residuals in ps at the counter's nominal rate, against time, in parts. */
static void residual_records(const struct series *s)
{
    struct xf nom = nominal_hz(s->counter);
    uint32_t parts = (s->resid_count + RESIDUALS_PER_RECORD - 1) / RESIDUALS_PER_RECORD;
    for (uint32_t part = 0; part < parts; part++) {
        uint32_t from = part * RESIDUALS_PER_RECORD, to = from + RESIDUALS_PER_RECORD;
        if (to > s->resid_count)
            to = s->resid_count;
        struct record r;
        record_begin(&r, "residuals");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", counters[s->counter].name);
        record_u64(&r, "part", part);
        record_u64(&r, "parts", parts);
        record_array_begin(&r, "t_ms");
        for (uint32_t i = from; i < to; i++)
            record_array_u64(&r, (uint64_t)xf_to_fixed(tsc_ticks_s((uint64_t)s->resid_x[i]), 3));
        record_array_end(&r);
        record_array_begin(&r, "resid_ps");
        for (uint32_t i = from; i < to; i++)
            record_array_i64(&r, xf_to_fixed(xf_div(xf_mul(xf_from_i64(s->resid_mticks[i]), xf_from_u64(1000000000ull)), nom), 0));
        record_array_end(&r);
        emit(&r);
    }
}

static void report_tsc_against(const struct series *s)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    struct xf nom = nominal_hz(s->counter);
    struct xf hz = xf_div(nom, s->fit.slope);
    struct xf resid_ns = xf_div(xf_mul(s->fit.resid_rms, xf_from_u64(1000000000ull)), nom);
    bool claimed = counters[COUNTER_TSC].nominal_millihz != 0;
    struct xf tsc_nom = xf_div(xf_from_u64(counters[COUNTER_TSC].nominal_millihz), xf_from_u64(1000));
    struct xf ppm = claimed ? ppm_of(xf_sub(xf_div(hz, tsc_nom), xf_from_u64(1))) : xf_from_u64(0);
    const char *name = counters[s->counter].name;
    kprintf("  tsc vs %-8s %17s Hz, relative to the %s +-%s ppm\n", name, xs(a, hz, 3), name,
            xs(b, ppm_of(s->unc.total), 4));
    kprintf("    absolute +-%u ppm (%s)\n", counters[s->counter].nominal_accuracy_ppm,
            counters[s->counter].nominal_accuracy_source);
    kprintf("    %u samples, %u segment(s); RMS %s ns; statistical +-%s ppm\n", s->fit.n, s->fit.segments,
            xs(c, resid_ns, 1), xs(d, ppm_of(s->unc.statistical), 4));
    if (s->fit.dropped)
        kprintf("    %u samples left out: lone samples between cuts, or past %d segments\n", s->fit.dropped,
                SEGFIT_MAX_SEGMENTS);
    if (claimed)
        kprintf("    %s ppm from the claimed nominal\n", xs(a, ppm, 3));
    frequency_record("tsc", name, hz, claimed, ppm, &s->unc, counters[s->counter].nominal_accuracy_ppm, s, resid_ns);
    residual_records(s);
}

static void report_pair(const struct series *s, const struct series *ref)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    /* f_c = f_ref * b_c / b_ref, both slopes in counter ticks per TSC tick */
    struct xf nom_ref = nominal_hz(ref->counter), nom = nominal_hz(s->counter);
    struct xf hz = xf_div(xf_mul(nom_ref, s->fit.slope), ref->fit.slope);
    struct freq_uncertainty u = s->unc;
    /* both fits' terms add (conservative: their TSC noise partly cancels) */
#define ADD_Q(f) u.f = xf_sqrt(xf_add(xf_mul(s->unc.f, s->unc.f), xf_mul(ref->unc.f, ref->unc.f)))
    ADD_Q(statistical);
    ADD_Q(correlated);
    ADD_Q(quantisation);
    ADD_Q(total);
#undef ADD_Q
    struct xf ppm = ppm_of(xf_sub(xf_div(hz, nom), xf_from_u64(1)));
    struct xf resid_ns = xf_div(xf_mul(s->fit.resid_rms, xf_from_u64(1000000000ull)), nom);
    const char *name = counters[s->counter].name, *refname = counters[ref->counter].name;
    if (counters[s->counter].nominal_estimated) {
        /* nothing states its rate: the measured one is the finding, with no
           nominal to hold it against */
        kprintf("  %-7s vs %-8s %14s Hz (no nominal rate is stated),\n    relative to the %s +-%s ppm\n", name, refname,
                xs(a, hz, 3), refname, xs(c, ppm_of(u.total), 3));
        frequency_record(name, refname, hz, false, ppm, &u, counters[ref->counter].nominal_accuracy_ppm, s, resid_ns);
        return;
    }
    kprintf("  %-7s vs %-8s %14s Hz, %s ppm vs nominal,\n    relative to the %s +-%s ppm\n", name, refname, xs(a, hz, 3),
            xs(b, ppm, 3), refname, xs(c, ppm_of(u.total), 3));
    frequency_record(name, refname, hz, true, ppm, &u, counters[ref->counter].nominal_accuracy_ppm, s, resid_ns);
    struct counter_findings *f = &results.counter[s->counter];
    f->has_ppm = true;
    f->ppm_vs_nominal = ppm;
    f->uncertainty_ppm = ppm_of(u.total);
    /* the limit is the crystal's; the measurement's own uncertainty is allowed on top */
    /* the counter's crystal bound (counters.c) and the measurement's own uncertainty */
    uint32_t tolerance_ppm = counters[s->counter].nominal_accuracy_ppm;
    struct xf limit = xf_add(xf_from_u64(tolerance_ppm), xf_mul(xf_from_u64(3), ppm_of(u.total)));
    if (xf_cmp(xf_abs(ppm), limit) <= 0)
        check_pass("frequency within tolerance", "%s: %s ppm from nominal against %s (limit %u ppm + 3 u)", name, b,
                   refname, tolerance_ppm);
    else
        check_fail("frequency within tolerance", "%s: %s ppm from nominal against %s (limit %u ppm + 3 u)", name, b,
                   refname, tolerance_ppm);
}

static void report_stability(const struct series *s)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    if (s->sub_count < 2)
        return;
    struct xf nom = nominal_hz(s->counter);
    kprintf("  tsc vs %s over %s s sub-windows, ppm from the whole-window fit:\n   ", counters[s->counter].name,
            xs(b, tsc_ticks_s((uint64_t)s->sub_len), 1));
    uint32_t shown = 0;
    for (uint32_t i = 0; i < s->sub_count && shown < 12; i++)
        if (s->sub[i].fitted) {
            kprintf(" %s", xs(a, ppm_of(xf_sub(xf_div(s->fit.slope, s->sub[i].slope), xf_from_u64(1))), 3));
            shown++;
        }
    kprintf("%s\n", s->sub_count > 12 ? " ... (all in the records)" : "");
    for (uint32_t i = 0; i < s->sub_count; i++) {
        const struct subwindow *w = &s->sub[i];
        if (!w->fitted)
            continue;
        struct record r;
        record_begin(&r, "stability");
        record_str(&r, "counter", "tsc");
        record_str(&r, "reference", counters[s->counter].name);
        record_xf_fixed(&r, "start_s", tsc_ticks_s((uint64_t)w->start_x), 3);
        record_xf_fixed(&r, "length_s", tsc_ticks_s((uint64_t)s->sub_len), 3);
        record_xf_fixed(&r, "hz", xf_div(nom, w->slope), 3);
        record_xf_fixed(&r, "ppm_vs_window", ppm_of(xf_sub(xf_div(s->fit.slope, w->slope), xf_from_u64(1))), 6);
        record_xf_fixed(&r, "stderr_ppm", ppm_of(xf_div(w->slope_stderr, w->slope)), 6);
        record_u64(&r, "samples", w->n);
        emit(&r);
    }
}

static void report_window(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    struct xf asked = xf_div(xf_from_u64(results.profile->drift_ms), xf_from_u64(1000));
    struct xf ran = tsc_ticks_s(window_ran_tsc), away = tsc_ticks_s(window_away_tsc);
    kprintf("  window: %s s asked, %s s ran by the TSC, %s s of it away\n", xs(a, asked, 3), xs(b, ran, 3), xs(c, away, 3));
    /* within a factor of 2 of what was asked, once the time away is taken out */
    struct xf sampled = xf_sub(ran, away);
    if (xf_cmp(sampled, xf_div(asked, xf_from_u64(2))) < 0 || xf_cmp(sampled, xf_mul(asked, xf_from_u64(2))) > 0)
        kprintf("  Note: the window did not run for the time asked (%s s sampled of %s s):\n"
                "  the quick TSC estimate that sized it was off, or the window was capped\n",
                xs(a, sampled, 3), xs(b, asked, 3));
    struct record r;
    record_begin(&r, "drift_window");
    record_xf_fixed(&r, "asked_s", asked, 3);
    record_xf_fixed(&r, "ran_s", ran, 6);
    record_xf_fixed(&r, "away_s", away, 6);
    record_u64(&r, "slots", slots);
    emit(&r);
}

static void drift_report(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    kprintf("\n== Frequency and drift (one rate fitted over bracketed samples) ==\n");
    if (skip_reason) {
        check_skip("TSC frequency", "%s", skip_reason);
        return;
    }
    int references = 0;
    for (int k = 0; k < series_count; k++)
        references += counters[series[k].counter].reference_rank > 0;
    if (references == 0) {
        kprintf("  no counter besides the TSC that can be a reference: nothing to measure the TSC against\n");
        check_skip("TSC frequency", "no HPET, PM timer or PIT to measure it against; ns figures use %s", results.tsc_hz_source);
        return;
    }
    report_window();
    if (!results.tsc_estimate_checked)
        kprintf("  Note: the TSC estimate is %s, not a measurement, so steps are judged\n"
                "  with a 30 %% rate bound and small discontinuities may pass unseen\n", results.tsc_estimate_source);
    if (cuts_overflowed)
        kprintf("  Note: more than %d cuts; the later ones were not applied\n", CUTS_MAX);
    if (inject.kind != INJECT_NONE)
        kprintf("  Injected: %s of %llu ms at %llu s%s%s\n", inject.kind == INJECT_HPET_HALT ? "HPET halt" : "TSC jump",
                (unsigned long long)inject.ms, (unsigned long long)(inject.at_ms / 1000),
                inject.started ? "" : " (never reached: the window was shorter)",
                inject.kind == INJECT_TSC_JUMP && inject.started && inject.moved_tsc < ms_to_tsc(inject.ms) / 2
                    ? "; the TSC did not move (this CPU ignores the write)" : "");
    for (int k = 0; k < series_count; k++) {
        const struct series *s = &series[k];
        kprintf("  %s: kept %u of %u samples (brackets within twice the narrowest,\n    %llu TSC ticks); %llu reads, %llu wraps\n",
                counters[s->counter].name, s->kept, s->slots_filled, (unsigned long long)s->min_width,
                (unsigned long long)s->reads, (unsigned long long)s->wraps);
        if (s->stalls)
            kprintf("  %s: %llu stall(s) (no change while the TSC ran), the longest %s us\n", counters[s->counter].name,
                    (unsigned long long)s->stalls, xs(a, xf_div(tsc_ticks_ns(s->longest_stall_tsc), xf_from_u64(1000)), 1));
        if (s->event_count && !counters[s->counter].reference_rank)
            kprintf("  %s: %u discontinuit%s in its own series (it is no reference: they say\n    nothing of the TSC)\n",
                    counters[s->counter].name, s->event_count, s->event_count == 1 ? "y" : "ies");
        else if (s->event_count) {
            kprintf("  %s: %u discontinuit%s (each cuts every series, but a gap where every clock ran):\n",
                    counters[s->counter].name, s->event_count, s->event_count == 1 ? "y" : "ies");
            discontinuity_records(s);
        }
    }
    for (int k = 0; k < series_count; k++) {
        const struct series *s = &series[k];
        if (!counters[s->counter].reference_rank)
            continue; /* the TSC is measured against references only */
        if (usable(s))
            report_tsc_against(s);
        else
            kprintf("  tsc vs %s: no figure: %s\n", counters[s->counter].name,
                    s->stuck ? "the counter got stuck" : "the data left after cutting at discontinuities cannot support one");
    }
    const struct series *ref = results.reference >= 0 ? series_of(results.reference) : 0;
    if (!ref) {
        check_fail("TSC frequency", "no reference counter gave a usable fit");
        return;
    }
    for (int k = 0; k < series_count; k++)
        if (&series[k] != ref && usable(&series[k]))
            report_pair(&series[k], ref);
    report_stability(ref);

    /* the measured TSC against every claim, within the crystal's accuracy and our uncertainty */
    const struct cpu_info *ci = &boot_cpu.info;
    for (int i = 0; i < ci->claim_count; i++) {
        if (strcmp(ci->claims[i].what, "tsc"))
            continue;
        struct xf ppm = ppm_of(xf_sub(xf_div(results.tsc_hz, xf_from_u64(ci->claims[i].hz)), xf_from_u64(1)));
        xs(a, ppm, 3);
        /* the reference's own crystal limits how well a claim can be checked */
        struct xf limit = xf_add(xf_from_u64(results.tsc_absolute_ppm), xf_mul(xf_from_u64(3), results.tsc_uncertainty_ppm));
        if (xf_cmp(xf_abs(ppm), limit) <= 0)
            check_pass("TSC frequency matches its claim", "%s says %llu Hz; measured %s Hz (%s ppm)", ci->claims[i].source,
                       (unsigned long long)ci->claims[i].hz, xs(b, results.tsc_hz, 0), a);
        else
            check_fail("TSC frequency matches its claim", "%s says %llu Hz; measured %s Hz (%s ppm, limit %u + 3 u)",
                       ci->claims[i].source, (unsigned long long)ci->claims[i].hz, xs(b, results.tsc_hz, 0), a, results.tsc_absolute_ppm);
    }
}

const struct experiment exp_drift = {
    .name = "drift",
    .what = "every counter's rate against the TSC, across discontinuities",
    .needs_tsc = true,
    .measure = drift_measure,
    .report = drift_report,
};

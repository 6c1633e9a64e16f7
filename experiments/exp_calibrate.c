/* Experiment "calibrate": the quick TSC estimate that sizes every later
   phase, checked against itself, a second reference and the CPUID claims.
   Never reported as the measurement (the drift experiment makes that).

   Five windows of 10 ms of reference time each; a window in which one step
   between consecutive reads took more than 1/4 of the window's TSC time
   was interrupted (a pause, a preemption, an SMI) and is thrown away,
   because a pause can stop the reference while the TSC runs. The estimate
   is the median of the kept windows, and their spread must stay under
   0.5 %; otherwise the round is repeated with windows twice as long
   (three rounds at most: a virtual CPU that loses milliseconds at a time
   needs longer windows).

   With no HPET, PM timer or PIT (hardware-reduced ACPI, microVMs), KVM's
   kvmclock is the last resort (lib/counters.c): the host's clock, scaled
   from this TSC by KVM's stated rate. With no counter at all, the RTC's
   second edges calibrate it, the way
   BSD's calibrate_clocks uses the RTC: CAL_RTC_SECONDS of updates timed by
   their UIP fall, fitted, with the fit's uncertainty and the RTC crystal's
   assumed tolerance. Failing an RTC, the CPU's or hypervisor's stated rate
   (CPUID 15h/16h, 40000010h, kvmclock's scale) is used and called claimed;
   an assumed 2 GHz only when none of these exists. */
#include "../drivers/cpuinfo.h"
#include "../drivers/rtc.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/cmdline.h"
#include "../lib/drift_analysis.h"
#include "../lib/pvclock.h"
#include "../lib/record.h"
#include "../lib/rtc_fit.h"
#include "../lib/stats.h"
#include "../lib/string.h"
#include "experiment.h"

#define CAL_WINDOWS 5
#define CAL_WINDOW_MS 10
#define CAL_ROUNDS 3
#define CAL_SPREAD_PPM 5000
#define CAL_AGREE_PPM 5000    /* a second reference must agree this well */
#define CAL_REPEAT_MAX 200u    /* cal_repeat=N: at most this many more estimates */
#define CAL_CLAIM_PPM 20000   /* a claim further off than this is reported */
#define CAL_MAX_TSC (1ull << 36) /* 14-70 s at 1-5 GHz: a reference that is not moving usefully */
#define CAL_RTC_SECONDS 2         /* RTC seconds timed when nothing else is there: 3 edges */
#define CAL_RTC_BOUND_TSC 30000000000ull /* one update's wait, 3 s even at 10 GHz (a missed UIP pulse costs a second): bounded whatever the rate */
#define CAL_RTC_MAX_READS 500000000u     /* and in reads of register A: seconds at the fastest emulated port read */

struct calibration {
    int reference, second;
    uint64_t hz, second_hz;
    uint32_t kept, thrown, rounds, window_ms;
    uint64_t spread_ppm;
    bool ok, second_ok;
    bool remeasured;                /* the first two estimates disagreed: both measured again */
    int64_t first_disagreement_ppm;
    uint64_t skew_ppm, skew_times;  /* cal_skew=PPM:N: the second estimate's first N skewed (a test's known fault) */
    int64_t bias_ppm;               /* cal_bias=PPM: the first reference's estimate made PPM off (a test's known fault) */
    uint64_t u_ppm;                 /* the estimate's stated uncertainty: its windows' spread, one reference tick, edge_ppm */
    uint64_t edge_ppm;              /* the kept windows' widest first and last half-brackets, ppm of a window */
    /* the RTC, when no counter could be a reference */
    bool rtc_tried, rtc_ok;
    char rtc_why[96];
    struct rtc_fit rtc_fit;
    uint64_t rtc_u_ppb;          /* the fit's uncertainty, parts per billion */
    uint64_t claim_hz;           /* what was claimed, and by whom */
    const char *claim_src;
};
static struct calibration cal;
static int64_t ppm_between(uint64_t a, uint64_t b);

/* One window: TSC ticks per 10^6 ticks of the reference over `target` or
   more of them (per_m), 0 when a single step took too long (interrupted)
   or the reference did not move; edge_ppm: half the first and last reads'
   bracket widths, ppm of the window (what their midpoints may be off).

   The window's ends are its first and last reads, each timed by the middle
   of its TSC bracket; the value was read somewhere inside. The read that
   takes the count past the target is, of all the window's reads, the
   likeliest to hold a stall (a long step is the likeliest to contain a
   given moment), and under TCG a stall inside a read comes mostly before
   the value is taken (the vCPU waits for QEMU's big lock, then reads the
   device's clock): the midpoint then lies up to half the stall before the
   value, and the window comes out short, the estimate low. Measured under
   TCG with a busy process on each host core: 15 of 15 kept windows whose
   last read's bracket was wide (3-26 % of the window: a time slice lost
   inside it, under the 1/4 step rule) came out short by half that width,
   1.6-11.7 %, median 8.8 %; a host that takes slices of one length does
   that to window after window alike, inside the 0.5 % spread (issue 30:
   an estimate 8 % low). So the last read must have a narrow bracket (under
   1/CAL_EDGE_PART of the window; the reads go on past the target until one
   has; or, where no read is that quick, within twice the window's
   narrowest and 1/CAL_EDGE_PART_SLOW), the first one too (the narrowest of
   CAL_START_READS; wider still, the window is thrown), and what their width
   leaves unknown is part of the stated uncertainty. */
struct window {
    uint64_t per_m, edge_ppm;
    uint64_t longest, span; /* cal_hold's: its longest step between reads, TSC ticks from its first read to its last */
};
#define CAL_EDGE_PART 1000
#define CAL_EDGE_PART_SLOW 50 /* ... or, where every read is slow (a trapped read: 15-50 us), 1/50 and twice the narrowest */
#define CAL_START_READS 4

static inline __attribute__((always_inline)) bool edge_narrow(uint64_t width, uint64_t narrowest, uint64_t total)
{
    return width * CAL_EDGE_PART <= total || (width <= 2 * narrowest && width * CAL_EDGE_PART_SLOW <= total);
}

static inline __attribute__((always_inline)) void window_kind(enum read_kind k, const struct read_src *s, uint64_t target,
                                                              struct window *w)
{
    uint64_t a0 = 0, b0 = 0, last = 0, acc = 0, prev_b = 0, longest = 0, narrowest = ~0ull;
    w->per_m = w->edge_ppm = w->longest = w->span = 0;
    /* the first read: the narrowest bracket of CAL_START_READS (a later,
       wider one counts as a step of the window) */
    for (int j = 0; j < CAL_START_READS; j++) {
        uint64_t a = bracket_begin();
        uint64_t v = read_value(k, s);
        uint64_t b = bracket_end();
        narrowest = b - a < narrowest ? b - a : narrowest;
        if (j == 0 || b - a <= b0 - a0) {
            a0 = a, b0 = b, last = v, acc = 0, longest = 0;
        } else {
            acc += (v - last) & s->mask;
            last = v;
            longest = b - prev_b > longest ? b - prev_b : longest;
        }
        prev_b = b;
    }
    for (uint64_t i = 0; i < 100000000ull; i++) {
        uint64_t a = bracket_begin();
        uint64_t v = read_value(k, s);
        uint64_t b = bracket_end();
        acc += (v - last) & s->mask;
        last = v;
        if (b - prev_b > longest)
            longest = b - prev_b;
        prev_b = b;
        narrowest = b - a < narrowest ? b - a : narrowest;
        if (b - a0 > CAL_MAX_TSC) {
            w->longest = longest, w->span = b - a0;
            return;
        }
        if (acc < target)
            continue;
        uint64_t total = (a + b) / 2 - (a0 + b0) / 2;
        if (!total || !edge_narrow(b - a, narrowest, total))
            continue; /* a wide last bracket: read on */
        w->longest = longest, w->span = b - a0;
        if (!edge_narrow(b0 - a0, narrowest, total) || longest * 4 > total)
            return;
        /* TSC ticks per 10^6 reference ticks: per 1000 left a 1 GHz reference
           (kvmclock) quantised to 1 part in 2300, 435 ppm */
        w->per_m = total * 1000000 / acc;
        w->edge_ppm = ((b - a) + (b0 - a0)) * 500000 / total + 1;
        return;
    }
}

#define WINDOW_CALL(K, s, target, out) window_kind(K, s, target, out)

/* cal_skew=PPM:N (docs/output.md): the second reference's estimate made
   PPM too high for its first N measurements (1 or 2), a disagreement of
   known size from inside the image, for the re-measure's tests. */
static void skew_parse(void)
{
    const char *v = cmdline_get(&boot_cmdline, "cal_skew");
    if (!v)
        return;
    char num[24];
    const char *times = cmdline_split(v, ':', num, sizeof num);
    if (!times || !cmdline_parse_u64(num, &cal.skew_ppm) || !cmdline_parse_u64(times, &cal.skew_times) || !cal.skew_ppm ||
        cal.skew_ppm > 1000000 || cal.skew_times < 1 || cal.skew_times > 2) {
        kprintf("Note: cal_skew=%s is not PPM:N (PPM 1-1000000, N 1 or 2); nothing is skewed\n", v);
        cal.skew_ppm = cal.skew_times = 0;
    }
}

/* cal_bias=PPM (docs/output.md): the first reference's estimate made PPM
   (signed, -500000 to 500000, not 0) off once it is measured, before any
   check sees it: a wrong estimate of known size from inside the image. On
   a machine with one reference nothing at calibration time can tell; the
   drift's measured rate must (exp_drift_report.c). */
static void bias_parse(void)
{
    const char *v = cmdline_get(&boot_cmdline, "cal_bias");
    cal.bias_ppm = 0;
    if (!v)
        return;
    uint64_t m;
    bool neg = *v == '-';
    if (!cmdline_parse_u64(v + (neg || *v == '+'), &m) || !m || m > 500000) {
        kprintf("Note: cal_bias=%s is not PPM (-500000 to 500000, not 0); nothing is biased\n", v);
        return;
    }
    cal.bias_ppm = neg ? -(int64_t)m : (int64_t)m;
}

static void bias_first(uint64_t *hz)
{
    if (!cal.bias_ppm)
        return;
    uint64_t m = (uint64_t)(cal.bias_ppm < 0 ? -cal.bias_ppm : cal.bias_ppm);
    uint64_t d = *hz / 1000000 * m + *hz % 1000000 * m / 1000000;
    *hz = cal.bias_ppm < 0 ? *hz - d : *hz + d;
}

static void skew_second(uint64_t *hz, uint64_t measurement)
{
    if (cal.skew_ppm && measurement <= cal.skew_times)
        *hz += *hz / 1000000 * cal.skew_ppm + *hz % 1000000 * cal.skew_ppm / 1000000;
}

/* The TSC rate against reference c; false when no round held together. */
static bool calibrate_against(int c, uint64_t *hz, struct calibration *st)
{
    struct read_src src;
    if (!counter_source(c, &src))
        return false;
    for (uint32_t round = 0; round < CAL_ROUNDS; round++) {
        uint64_t target = counters[c].nominal_millihz / 1000 * (CAL_WINDOW_MS << round) / 1000;
        if (target < 16)
            target = 16;
        uint64_t per_m[CAL_WINDOWS], scratch[CAL_WINDOWS], edge = 0;
        uint32_t n = 0;
        for (int w = 0; w < CAL_WINDOWS; w++) {
            struct window t = {0, 0, 0, 0};
            READ_DISPATCH(src.kind, WINDOW_CALL, &src, target, &t);
            if (t.per_m) {
                per_m[n++] = t.per_m;
                edge = t.edge_ppm > edge ? t.edge_ppm : edge;
            } else if (st)
                st->thrown++;
        }
        if (st)
            st->rounds = round + 1;
        if (n < 3)
            continue;
        stats_sort(per_m, n, scratch);
        uint64_t median = per_m[n / 2];
        uint64_t spread = median ? (per_m[n - 1] - per_m[0]) * 1000000 / median : ~0ull;
        if (st) {
            st->kept = n;
            st->spread_ppm = spread;
            st->window_ms = CAL_WINDOW_MS << round;
            /* plus a reference nominal still open between two VMM rates
               (QEMU+KVM's PIT, lib/vmm_rates.h), rounded up to whole ppm */
            st->u_ppm = cal_estimate_u_ppm(spread, target, edge) + (counters[c].nominal_spread_ppb + 999) / 1000;
            st->edge_ppm = edge;
        }
        if (spread > CAL_SPREAD_PPM)
            continue;
        /* Hz = TSC ticks per reference tick * reference Hz */
        *hz = (uint64_t)xf_to_fixed(
            xf_div(xf_mul(xf_from_u64(median), xf_from_u64(counters[c].nominal_millihz)), xf_from_u64(1000000000)), 0);
        return *hz > 1000000;
    }
    return false;
}

static uint64_t claimed_tsc_hz(const char **source)
{
    const struct cpu_info *ci = &boot_cpu.info;
    for (int i = 0; i < ci->claim_count; i++)
        if (!strcmp(ci->claims[i].what, "tsc")) {
            *source = ci->claims[i].source;
            return ci->claims[i].hz;
        }
    if (discovered.pv.kvmclock_on && discovered.pv.mul) {
        *source = "kvmclock's scale";
        return pvclock_tsc_hz(discovered.pv.mul, discovered.pv.shift);
    }
    return 0;
}

/* The TSC against the RTC's second edges: the first update's end opens
   the window (under QEMU the first after boot can come late: it is only
   the start), then CAL_RTC_SECONDS more are timed and fitted. */
static bool calibrate_against_rtc(struct calibration *st)
{
    struct rtc rtc;
    st->rtc_tried = true;
    if (!rtc_probe(&rtc, st->rtc_why, sizeof st->rtc_why))
        return false;
    struct rtc_edge e[CAL_RTC_SECONDS + 1];
    uint64_t a, b;
    if (!rtc_catch_update_end(CAL_RTC_BOUND_TSC, CAL_RTC_MAX_READS, &a, &b)) {
        fmt_format(st->rtc_why, sizeof st->rtc_why, "no update of the RTC ended within its bound (%llu TSC ticks, %u reads)",
                   (unsigned long long)CAL_RTC_BOUND_TSC, CAL_RTC_MAX_READS);
        return false;
    }
    for (int i = 0; i <= CAL_RTC_SECONDS; i++) {
        if (!rtc_catch_update_end(CAL_RTC_BOUND_TSC, CAL_RTC_MAX_READS, &a, &b)) {
            fmt_format(st->rtc_why, sizeof st->rtc_why, "the RTC stopped updating after %d second%s", i,
                       i == 1 ? "" : "s");
            return false;
        }
        struct rtc_raw raw;
        rtc_read_clock(&rtc, &raw);
        e[i] = (struct rtc_edge){a, b, 0};
        if (!rtc_decode_clock(&raw, &e[i].seconds_of_day)) {
            fmt_format(st->rtc_why, sizeof st->rtc_why, "the RTC's clock registers do not decode (seconds 0x%02x)", raw.sec);
            return false;
        }
    }
    /* the first gap over the RTC seconds it spans (more than one when the
       poll missed an update's UIP pulse: a vCPU away for 244 us) is the
       estimate the fit judges the rest by */
    uint32_t first_s = rtc_seconds_between(e[0].seconds_of_day, e[1].seconds_of_day);
    if (!first_s) {
        fmt_format(st->rtc_why, sizeof st->rtc_why, "two updates ended with the same seconds (0x%02x)", e[1].seconds_of_day % 60);
        return false;
    }
    uint64_t first = (rtc_tsc_mid(e[1].a, e[1].b) - rtc_tsc_mid(e[0].a, e[0].b)) / first_s;
    rtc_fit_edges(e, CAL_RTC_SECONDS + 1, first, &st->rtc_fit);
    if (!st->rtc_fit.fitted || st->rtc_fit.span_s < 1) {
        fmt_format(st->rtc_why, sizeof st->rtc_why, "its edges did not fit (%u of %u used)", st->rtc_fit.used,
                   st->rtc_fit.edges);
        return false;
    }
    st->hz = (uint64_t)xf_to_fixed(st->rtc_fit.tsc_per_s, 0);
    st->rtc_u_ppb = (uint64_t)xf_to_fixed(xf_mul(st->rtc_fit.uncertainty_rel, xf_from_u64(1000000000)), 0);
    st->rtc_ok = st->hz > 1000000;
    return st->rtc_ok;
}

/* One quick estimate against the ranked references, with its second
   opinion (and the re-measure when they disagree), into cal. */
static void calibrate_once(const int *order, int n)
{
    cal = (struct calibration){.reference = -1, .second = -1};
    bias_parse();
    for (int i = 0; i < n && cal.reference < 0; i++)
        if (calibrate_against(order[i], &cal.hz, &cal)) {
            cal.reference = order[i];
            cal.ok = true;
            bias_first(&cal.hz);
        }
    skew_parse();
    for (int i = 0; i < n && cal.ok && cal.second < 0; i++)
        if (order[i] != cal.reference) {
            cal.second = order[i];
            cal.second_ok = calibrate_against(order[i], &cal.second_hz, 0);
            skew_second(&cal.second_hz, 1);
        }
    /* Two references that disagree are both measured once more before the
       check judges them: a disturbance that lasts through one estimate's
       windows (a host that moved or starved this vCPU for tens of ms: a
       loaded test host gave the PM timer 10 % against the HPET once) passes
       with the estimate; two counters that really disagree disagree again. */
    if (cal.ok && cal.second_ok) {
        int64_t d = ppm_between(cal.second_hz, cal.hz);
        if (d > CAL_AGREE_PPM || d < -CAL_AGREE_PPM) {
            uint64_t hz = 0, second_hz = 0;
            cal.remeasured = true;
            cal.first_disagreement_ppm = d;
            if (calibrate_against(cal.reference, &hz, &cal) && calibrate_against(cal.second, &second_hz, 0)) {
                bias_first(&hz);
                skew_second(&second_hz, 2);
                cal.hz = hz;
                cal.second_hz = second_hz;
            }
        }
    }
}

/* Whether the checks at calibration time let this estimate through: a
   round held together and a second reference, when there is one that
   gave an estimate, agrees. */
static bool cal_accepted(void)
{
    if (!cal.ok)
        return false;
    if (!cal.second_ok)
        return true;
    int64_t d = ppm_between(cal.second_hz, cal.hz);
    return d <= CAL_AGREE_PPM && d >= -CAL_AGREE_PPM;
}

/* cal_hold=I:MS,... (docs/output.md; the stress test's): before repeat I,
   windows against the first reference, made as the estimate makes them,
   one after another until a step of MS or more (by the first estimate) is
   seen, between two reads of a window or outside every window (before a
   window's first kept read, between two windows), or CAL_HOLD_MAX_S pass.
   The line that says so is what the host waits for before it stops QEMU:
   the stop then falls inside the windows whatever the host's delay in
   reading the line, where a stop placed by wall time after the previous
   repeat's line could fall anywhere (in the second reference's windows,
   between repeats) and throw nothing in its repeat. */
#define CAL_HOLD_MAX 8
#define CAL_HOLD_MAX_S 10
struct hold {
    uint64_t min_ms, windows, step_tsc;
    bool seen, in_window, thrown;
};

static bool hold_parse(uint64_t repeat, struct hold *h)
{
    const char *v = cmdline_get(&boot_cmdline, "cal_hold");
    char item[24], num[24];
    *h = (struct hold){0};
    for (int k = 0; v && *v && k < CAL_HOLD_MAX; k++) {
        const char *next = cmdline_split(v, ',', item, sizeof item);
        if (!next)
            fmt_format(item, sizeof item, "%s", v);
        uint64_t i, ms;
        const char *ms_text = cmdline_split(item, ':', num, sizeof num);
        if (!ms_text || !cmdline_parse_u64(num, &i) || !cmdline_parse_u64(ms_text, &ms) || !ms || ms > 60000) {
            if (repeat == 1)
                kprintf("Note: cal_hold: %s is not I:MS (MS 1-60000); not held\n", item);
        } else if (i == repeat) {
            h->min_ms = ms;
            return true;
        }
        v = next;
    }
    return false;
}

/* from `since`, taken before the line was printed: a stop that lands while
   the line is still going out (the host matched it early) is a step before
   the first window, and is seen as one */
static void hold_windows(int c, uint64_t since, struct hold *h)
{
    struct read_src src;
    if (!counter_source(c, &src))
        return;
    uint64_t target = counters[c].nominal_millihz / 1000 * CAL_WINDOW_MS / 1000;
    uint64_t min_tsc = results.tsc_estimate_hz / 1000 * h->min_ms;
    uint64_t start = since, prev = since;
    while (prev - start < results.tsc_estimate_hz * CAL_HOLD_MAX_S) {
        struct window t = {0, 0, 0, 0};
        READ_DISPATCH(src.kind, WINDOW_CALL, &src, target < 16 ? 16 : target, &t);
        uint64_t now = rdtsc();
        h->windows++;
        /* the time of this call outside the window's own reads */
        uint64_t outside = now - prev > t.span ? now - prev - t.span : 0;
        if (t.longest >= min_tsc || outside >= min_tsc) {
            h->seen = true;
            h->in_window = t.longest >= min_tsc;
            h->step_tsc = h->in_window ? t.longest : outside;
            h->thrown = !t.per_m;
            return;
        }
        prev = now;
    }
}

static uint64_t tsc_to_ms(uint64_t ticks)
{
    return results.tsc_estimate_hz ? ticks / (results.tsc_estimate_hz / 1000) : 0;
}

/* what became of the step: inside a window, thrown, or kept across it,
   which the 1/4 step rule must never let happen (a window's 10 ms and a
   step of MS, at least 4 ms); or outside every window (before a window's
   first kept read: a window starts at the narrowest of its first reads, or
   between two windows), where no window can see it */
static const char *hold_outcome(const struct hold *h)
{
    if (!h->seen)
        return "no step";
    if (!h->in_window)
        return "outside the window";
    return h->thrown ? "thrown" : "kept across it";
}

/* cal_repeat=N (docs/output.md): the quick estimate made N more times in
   this boot, each in a calibration_repeat record, for the stress test
   (tests/boot/test_calibrate_stress.py); the first one alone sizes the run. */
static void calibrate_repeats(const int *order, int n)
{
    uint64_t times = 0;
    const char *v = cmdline_get(&boot_cmdline, "cal_repeat");
    if (!v)
        return;
    if (!cmdline_parse_u64(v, &times) || times < 1 || times > CAL_REPEAT_MAX) {
        kprintf("Note: cal_repeat=%s is not a count from 1 to %u; nothing is repeated\n", v, CAL_REPEAT_MAX);
        return;
    }
    if (n == 0) {
        kprintf("Note: cal_repeat: no counter to calibrate against; nothing is repeated\n");
        return;
    }
    struct calibration first = cal;
    for (uint64_t i = 1; i <= times; i++) {
        struct hold h;
        bool held = hold_parse(i, &h);
        if (held) {
            uint64_t since = rdtsc();
            /* on the serial port alone, unwrapped, so that its end is the last
               thing before the windows (the screen's scrolling comes after it) */
            serial_printf("  repeat %llu of %llu: holding windows against %s open until a step of %llu ms (cal_hold)\n",
                          (unsigned long long)i, (unsigned long long)times, counters[order[0]].name,
                          (unsigned long long)h.min_ms);
            hold_windows(order[0], since, &h);
        }
        calibrate_once(order, n);
        bool accepted = cal_accepted();
        int64_t d = cal.ok && cal.second_ok ? ppm_between(cal.second_hz, cal.hz) : 0;
        struct record r;
        record_begin(&r, "calibration_repeat");
        record_u64(&r, "i", i);
        record_u64(&r, "of", times);
        if (cal.ok)
            record_u64(&r, "estimate_hz", cal.hz);
        else
            record_null(&r, "estimate_hz");
        record_str(&r, "reference", cal.reference >= 0 ? counters[cal.reference].name : 0);
        record_u64(&r, "uncertainty_ppm", cal.ok ? cal.u_ppm : 0);
        record_u64(&r, "spread_ppm", cal.spread_ppm);
        record_u64(&r, "edge_ppm", cal.edge_ppm);
        record_u64(&r, "windows_kept", cal.kept);
        record_u64(&r, "windows_thrown", cal.thrown);
        record_u64(&r, "rounds", cal.rounds);
        record_str(&r, "second", cal.second >= 0 && cal.second_ok ? counters[cal.second].name : 0);
        if (cal.second >= 0 && cal.second_ok) {
            record_u64(&r, "second_hz", cal.second_hz);
            record_i64(&r, "disagreement_ppm", d);
        }
        if (held) {
            record_u64(&r, "hold_ms", h.min_ms);
            record_u64(&r, "hold_windows", h.windows);
            if (h.seen)
                record_u64(&r, "hold_step_ms", tsc_to_ms(h.step_tsc));
            else
                record_null(&r, "hold_step_ms");
            record_str(&r, "hold_outcome", hold_outcome(&h));
        }
        record_bool(&r, "remeasured", cal.remeasured);
        record_bool(&r, "accepted", accepted);
        record_str(&r, "rejected_why",
                   accepted ? 0 : !cal.ok ? "no round of windows held together" : "the second reference disagrees");
        console_emit_record(&r);
        kprintf("  repeat %llu of %llu: %llu Hz +-%llu ppm against %s, %s\n", (unsigned long long)i, (unsigned long long)times,
                (unsigned long long)(cal.ok ? cal.hz : 0), (unsigned long long)(cal.ok ? cal.u_ppm : 0),
                cal.reference >= 0 ? counters[cal.reference].name : "nothing",
                accepted ? "accepted" : !cal.ok ? "rejected (no round held together)" : "rejected (references disagree)");
    }
    cal = first;
}

static void calibrate_measure(const struct profile *p)
{
    (void)p;
    int order[COUNTER_COUNT];
    int n = counters_by_rank(order);
    calibrate_once(order, n);
    cal.claim_hz = claimed_tsc_hz(&cal.claim_src);
    /* no counter answered at all (not one that moved badly): the RTC */
    if (!cal.ok && n == 0 && calibrate_against_rtc(&cal))
        cal.ok = true;
    results.tsc_estimate_checked = cal.ok;
    if (cal.rtc_ok) {
        results.tsc_estimate_hz = cal.hz;
        fmt_format(results.tsc_estimate_source, sizeof results.tsc_estimate_source,
                   "the RTC's second edges (+-%llu ppm, +-%u ppm its crystal)",
                   (unsigned long long)(cal.rtc_u_ppb + 999) / 1000, RTC_TOLERANCE_PPM);
    } else if (cal.ok) {
        results.tsc_estimate_hz = cal.hz;
        fmt_format(results.tsc_estimate_source, sizeof results.tsc_estimate_source, "%s", counters[cal.reference].name);
    } else if (cal.claim_hz) {
        results.tsc_estimate_hz = cal.claim_hz;
        fmt_format(results.tsc_estimate_source, sizeof results.tsc_estimate_source, "claimed by %s (nothing to measure against)",
                   cal.claim_src);
    } else {
        results.tsc_estimate_hz = 2000000000ull;
        fmt_format(results.tsc_estimate_source, sizeof results.tsc_estimate_source,
                   "an assumed 2 GHz (no reference, no RTC, no claim)");
    }
    /* Until the drift experiment measures it, ns figures use the estimate. */
    results.tsc_hz = xf_from_u64(results.tsc_estimate_hz);
    fmt_format(results.tsc_hz_source, sizeof results.tsc_hz_source, "%s%s",
               cal.ok ? "the quick estimate against " : "nominal: ", results.tsc_estimate_source);
    results.tsc_estimate_u_ppm = cal.ok ? (cal.rtc_ok ? (cal.rtc_u_ppb + 999) / 1000 + RTC_TOLERANCE_PPM : cal.u_ppm) : 0;
    kprintf("    TSC about %llu MHz (against %s, to size the phases)\n",
            (unsigned long long)(results.tsc_estimate_hz / 1000000), results.tsc_estimate_source);
    calibrate_repeats(order, n);
}

static int64_t ppm_between(uint64_t a, uint64_t b)
{
    return b ? xf_to_fixed(ppm_of(xf_sub(xf_div(xf_from_u64(a), xf_from_u64(b)), xf_from_u64(1))), 0) : 0;
}

static void calibrate_report(void)
{
    kprintf("\n== Quick TSC estimate (sizes the phases; not the measurement) ==\n");
    struct record r;
    record_begin(&r, "calibration");
    record_u64(&r, "estimate_hz", results.tsc_estimate_hz);
    record_str(&r, "source", results.tsc_estimate_source);
    record_u64(&r, "windows_kept", cal.kept);
    record_u64(&r, "windows_thrown", cal.thrown);
    record_u64(&r, "rounds", cal.rounds);
    if (results.tsc_estimate_u_ppm)
        record_u64(&r, "uncertainty_ppm", results.tsc_estimate_u_ppm);
    else
        record_null(&r, "uncertainty_ppm");
    if (cal.bias_ppm)
        record_i64(&r, "bias_injected_ppm", cal.bias_ppm);
    if (cal.rtc_tried) {
        record_bool(&r, "rtc_ok", cal.rtc_ok);
        record_str(&r, "rtc_reason", cal.rtc_ok ? 0 : cal.rtc_why);
    }
    if (cal.rtc_ok) {
        record_u64(&r, "rtc_seconds", cal.rtc_fit.span_s);
        record_fixed(&r, "rtc_uncertainty_ppm", (int64_t)cal.rtc_u_ppb, 3);
        record_u64(&r, "rtc_crystal_ppm", RTC_TOLERANCE_PPM);
        kprintf("  %llu Hz: %u RTC seconds timed by their update's end, +-%llu.%03llu ppm (the fit),\n"
                "  +-%u ppm absolute (the RTC's crystal, assumed)\n",
                (unsigned long long)cal.hz, cal.rtc_fit.span_s, (unsigned long long)(cal.rtc_u_ppb / 1000),
                (unsigned long long)(cal.rtc_u_ppb % 1000), RTC_TOLERANCE_PPM);
    } else if (cal.rtc_tried) {
        kprintf("  no counter to measure against, and the RTC could not stand in: %s\n", cal.rtc_why);
    }
    if (!cal.ok)
        kprintf("  the TSC rate is %s\n", results.tsc_estimate_source);
    if (cal.ok && !cal.rtc_ok) {
        kprintf("  %llu Hz: median of %u windows of %u ms against %s\n"
                "  (spread %llu ppm; +-%llu ppm with one reference tick)\n",
                (unsigned long long)cal.hz, cal.kept, cal.window_ms, counters[cal.reference].name,
                (unsigned long long)cal.spread_ppm, (unsigned long long)cal.u_ppm);
        if (cal.bias_ppm)
            kprintf("  (cal_bias: this estimate was made %lld ppm off, on purpose)\n", (long long)cal.bias_ppm);
        if (cal.thrown)
            kprintf("  %u window%s thrown away: one step between reads took over 1/4 of the window\n"
                    "  (a pause, preemption or SMI)\n",
                    cal.thrown, cal.thrown == 1 ? "" : "s");
    }
    if (cal.second >= 0 && cal.second_ok) {
        int64_t d = ppm_between(cal.second_hz, cal.hz);
        kprintf("  against %s: %llu Hz (%lld ppm)\n", counters[cal.second].name, (unsigned long long)cal.second_hz,
                (long long)d);
        record_str(&r, "second", counters[cal.second].name);
        record_u64(&r, "second_hz", cal.second_hz);
        if (cal.skew_ppm) {
            record_u64(&r, "skew_injected_ppm", cal.skew_ppm);
            record_u64(&r, "skew_injected_times", cal.skew_times);
            kprintf("  (cal_skew: %s's estimate was made %llu ppm high, %llu time%s, on purpose)\n",
                    counters[cal.second].name, (unsigned long long)cal.skew_ppm, (unsigned long long)cal.skew_times,
                    cal.skew_times == 1 ? "" : "s");
        }
        if (cal.remeasured) {
            record_i64(&r, "first_disagreement_ppm", cal.first_disagreement_ppm);
            kprintf("  the first pair disagreed by %lld ppm: both measured again,\n"
                    "  and these are the second pair\n",
                    (long long)cal.first_disagreement_ppm);
        }
        if (d > CAL_AGREE_PPM || d < -CAL_AGREE_PPM)
            check_fail("quick TSC estimate agrees across references", "%s gives %lld ppm from %s (limit %d)",
                       counters[cal.second].name, (long long)d, counters[cal.reference].name, CAL_AGREE_PPM);
        else
            check_pass("quick TSC estimate agrees across references", "%s and %s within %lld ppm", counters[cal.reference].name,
                       counters[cal.second].name, (long long)(d < 0 ? -d : d));
    } else if (cal.second >= 0) {
        kprintf("  against %s: no estimate (no round of windows held together)\n", counters[cal.second].name);
    } else if (cal.ok) {
        kprintf("  no second reference to check it against: the drift's measured rate checks it later\n");
    }
    uint64_t claim = cal.claim_hz;
    if (claim && cal.ok) {
        int64_t d = ppm_between(cal.hz, claim);
        kprintf("  %s claims %llu Hz: the estimate is %lld ppm from it\n", cal.claim_src, (unsigned long long)claim, (long long)d);
        if (d > CAL_CLAIM_PPM || d < -CAL_CLAIM_PPM)
            report_note("the claim and the estimate disagree by over %d ppm; the drift experiment measures which is right",
                        CAL_CLAIM_PPM);
    }
    emit(&r);
}

const struct experiment exp_calibrate = {
    .name = "calibrate",
    .what = "quick TSC estimate against the best reference, checked twice",
    .needs_tsc = true,
    .measure = calibrate_measure,
    .report = calibrate_report,
};

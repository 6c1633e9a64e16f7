/* Experiment "rtc": the CMOS real-time clock, the one oscillator of a PC
   that is nearly always separate from the main crystal (a 32.768 kHz watch
   crystal; MC146818A data sheet). The date and time are read safely just
   before the drift window opens; during the window the drift loop calls
   rtc_window_poll, which times the RTC's second boundaries with the TSC;
   the TSC's rate is then fitted against the RTC's seconds (rtc_fit.h) and
   set beside its rate against the drift's reference, and the HPET and PM
   timer follow through the TSC.

   The edge is UIP in register A falling: the end of the update, after
   which the new time reads. It gives the tightest edge of the three
   choices. With the index left on register A each poll is one port read.
   QEMU computes UIP from its clock on every read (hw/rtc/mc146818rtc.c,
   update_in_progress) as long as its update timer is not pending for the
   next second, which holds once the update-ended flag UF is set and nobody
   reads register C; UF itself waits for that timer's callback to run, so
   it lags by the host's timer latency, and reading C to clear it would
   re-arm the timer and latch UIP until the callback too. On hardware the
   seconds register is not defined while the update runs, so its change
   cannot be timed closer than UIP's fall. UIP is high for 244 us before
   the update and through it (up to 2228 us in all).

   rtc_window_begin finds the edges' phase before the window opens: the
   first update's end (at most 2.2 s). The poll does nothing until the next
   edge is near. With no phase every call polls, and watches the seconds register between calls
   too (UIP's whole pulse can fall between two calls): its change places
   the edge to within the calls' distance, enough to watch the next second.
   After an edge, the watch is the next second (by the last two edges, or
   the start-up estimate) +-1 ms and the edge's bracket; a miss moves it on
   a second and doubles the margin (up to 30 ms); 4 misses in a row start
   the search again. A call may come up to the caller's average pace (at
   most 2 ms) early: it waits for the watch to open, then polls UIP. Each
   call holds the caller at most 5 ms, less when the caller's own
   iterations are long (8 ms less twice their average, at least 1 ms), so
   that the two stay under the 10 ms the drift loop calls a gap. Register
   C is never read. */
#include "exp_rtc.h"

#include "../drivers/rtc.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/memory.h"
#include "../kernel/reads.h"
#include "../kernel/report_util.h"
#include "../kernel/results.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/rtc_fit.h"
#include "../lib/stats.h"
#include "experiment.h"

#define RTC_EDGES_MAX 2048
#define CALL_BUDGET_US 5000      /* the most one call holds the drift loop, which calls 10 ms away a gap */
#define CALL_ROOM_MS 8           /* ... and less when the caller's own iterations are long: this less twice their average */
#define CALL_GAP_MAX_MS 2        /* a call starts waiting at most this early */
#define LEAD_FIRST_MS 30         /* the widest watch */
#define LEAD_US 1000             /* the watch's margin either side of a predicted edge, after one caught */
#define PHASE_MS 2200           /* the wait for the first update before the window */
#define MISSED_MAX 4             /* edges missed in a row: search again */
#define UIP_STUCK_MS 25          /* UIP set this long: stuck (ten updates' worth) */
#define RTC_TOLERANCE_PPM 100    /* assumed for the check: a watch crystal is typically +-20 ppm at 25 C, more hot or cold and aged */
#define RTC_TYPICAL_PPM 20
#define COARSE_SPAN_S 10         /* under this the figure is coarse */
#define STUCK_WINDOW_MS 1500     /* no edge in a window this long: the RTC never updates */

static struct {
    bool probed, present;
    char reason[128];
    struct rtc rtc;
    bool date_read, date_valid;
    struct rtc_raw raw;
    struct rtc_datetime date;
    char date_why[128];

    /* the window */
    bool active, window_done, own_window;
    uint64_t start_tsc, window_tsc;
    uint64_t next_tsc, margin_tsc;
    uint64_t pred_tsc, period_tsc;  /* the next edge expected, 0 before the first; one RTC second */
    uint64_t missed, coarse_phases;
    uint32_t missed_in_row;
    bool updates_seen;             /* an edge, or the seconds register changed */
    bool never_updated;            /* no update in the phase search before the window */
    uint64_t last_call_tsc, call_gap_tsc; /* the caller's pace (a decaying maximum) */
    uint64_t search_end_tsc;       /* before the first edge: the last call's end, and the seconds then */
    uint8_t search_sec;
    uint32_t edge_count;
    bool edges_overflowed;
    uint64_t polls, high_since, longest_spin_tsc, longest_call_tsc, bad_clock_reads, phase_wait_tsc;
    const char *stopped_why;

    /* one seconds-register read */
    bool cost_done;
    struct summary cost;          /* TSC ticks, the empty brackets' median subtracted */
    uint64_t bracket_overhead;
    uint64_t reads, zero_deltas, distinct, backward;

    struct rtc_fit fit;
    uint32_t min_step_s;          /* the least RTC count between consecutive edges */
    uint64_t min_step_tsc;        /* the least TSC time between edges one RTC second apart */
} st;
static struct rtc_edge edges[RTC_EDGES_MAX];

static void probe_and_date(void)
{
    if (st.probed)
        return;
    st.probed = true;
    st.present = rtc_probe(&st.rtc, st.reason, sizeof st.reason);
    if (!st.present)
        return;
    st.date_read = rtc_read_time(&st.rtc, &st.raw, ms_to_tsc(RTC_UIP_MAX_US / 1000 + 1), st.date_why, sizeof st.date_why);
    if (!st.date_read)
        return;
    st.date_valid = rtc_decode(&st.raw, &st.date);
    if (!st.date_valid)
        fmt_format(st.date_why, sizeof st.date_why,
                   "the registers hold no valid date (year %02x month %02x day %02x, %02x:%02x:%02x, register B 0x%02x)",
                   st.raw.year, st.raw.month, st.raw.day, st.raw.hour, st.raw.min, st.raw.sec, st.raw.reg_b);
}

/* UIP set for far longer than an update takes: the RTC is stuck in one. */
static bool after_spin_stuck(void)
{
    if (!st.high_since || rdtsc() - st.high_since < ms_to_tsc(UIP_STUCK_MS))
        return false;
    st.active = false;
    st.stopped_why = "UIP stayed set for 25 ms, ten times the longest update";
    return true;
}

/* Where to watch for the next edge: one RTC second after `edge_tsc`,
   from `margin` before it to `margin` after (the prediction's error). */
static void watch_next(uint64_t edge_tsc, uint64_t margin)
{
    uint64_t cap = ms_to_tsc(LEAD_FIRST_MS);
    st.margin_tsc = margin < cap ? margin : cap;
    st.pred_tsc = edge_tsc + st.period_tsc;
    st.next_tsc = st.pred_tsc - st.margin_tsc;
}

/* The edge caught: its bracket stored (when `store`) with the clock read
   just after it. */
static void edge_found(uint64_t a, uint64_t b, bool store)
{
    struct rtc_raw raw;
    uint32_t sod;
    rtc_read_clock(&st.rtc, &raw);
    st.updates_seen = true;
    st.missed_in_row = 0;
    if (store) {
        if (!rtc_decode_clock(&raw, &sod))
            st.bad_clock_reads++;
        else if (st.edge_count == RTC_EDGES_MAX)
            st.edges_overflowed = true;
        else
            edges[st.edge_count++] = (struct rtc_edge){a, b, sod};
    }
    /* the RTC's second by the last two edges caught (not the first: QEMU
       holds UIP until its update timer runs while UF is clear, so the first
       edge after boot can be late), else by the start-up estimate (good to
       some ppm when it was checked; a miss widens the watch) */
    st.period_tsc = st.edge_count >= 2 ? rtc_period_tsc(&edges[st.edge_count - 2], &edges[st.edge_count - 1], results.tsc_estimate_hz)
                                       : results.tsc_estimate_hz;
    watch_next(rtc_tsc_mid(a, b), ms_to_tsc(LEAD_US) / 1000 + (b - a));
}

/* Polls register A until UIP falls after being seen set, or until
   `until`. False when it did not fall in time. */
static bool spin_for_edge(uint64_t until, bool *seen_high_out, bool store)
{
    /* each read lies between two TSC reads, and UIP fell between the last
       read that saw it set and the first that did not */
    rtc_select(RTC_REG_A);
    uint64_t before = bracket_begin(), start = before, high_from = 0;
    bool seen_high = false;
    for (uint32_t i = 0; i < 1000000000u; i++) {
        uint8_t v = rtc_read_selected();
        uint64_t after = bracket_end();
        if (v & RTC_A_UIP) {
            if (!st.high_since)
                st.high_since = before;
            seen_high = true;
            high_from = before;
        } else {
            st.high_since = 0;
            if (seen_high) {
                if (store && after - start > st.longest_spin_tsc)
                    st.longest_spin_tsc = after - start;
                edge_found(high_from, after, store);
                return true;
            }
        }
        if (after > until)
            break;
        before = after;
    }
    *seen_high_out = seen_high;
    return false;
}

void rtc_window_begin(void)
{
    if (!experiment_chosen("rtc") || st.window_done || results.tsc_estimate_hz < 1000)
        return;
    probe_and_date();
    if (!st.present)
        return;
    st.active = true;
    uint64_t begun = rdtsc();
    st.start_tsc = st.next_tsc = begun;
    /* The phase first, before the window opens, so that the window's
       first second is timed too: the first update ending (not stored:
       under QEMU the first after boot can be late, see edge_found), at most
       two seconds' wait. Failing that, the seconds register tells a missed
       pulse from an RTC that does not count. */
    uint8_t sec = rtc_read_reg(RTC_SECONDS);
    bool seen_high = false;
    if (!spin_for_edge(st.start_tsc + ms_to_tsc(PHASE_MS), &seen_high, false) && !after_spin_stuck()) {
        if (rtc_read_reg(RTC_SECONDS) != sec) {
            st.updates_seen = true;
        } else {
            st.active = false;
            st.never_updated = true;
            st.stopped_why = "no update ended in 2.2 s: the RTC does not count";
        }
    }
    st.start_tsc = rdtsc();
    st.phase_wait_tsc = st.start_tsc - begun;
}

void rtc_window_poll(uint64_t tsc_now)
{
    if (!st.active)
        return;
    /* the caller's pace (a running average of the time between calls): a
       call can come that late after the watch opens, and the caller's own
       iteration adds to what this call holds it */
    if (st.last_call_tsc && tsc_now > st.last_call_tsc) {
        uint64_t gap = tsc_now - st.last_call_tsc;
        st.call_gap_tsc = st.call_gap_tsc ? st.call_gap_tsc - st.call_gap_tsc / 16 + gap / 16 : gap;
    }
    st.last_call_tsc = tsc_now;
    uint64_t early = st.call_gap_tsc < ms_to_tsc(CALL_GAP_MAX_MS) ? st.call_gap_tsc : ms_to_tsc(CALL_GAP_MAX_MS);
    if (tsc_now + early < st.next_tsc)
        return;
    if (!st.updates_seen && tsc_now - st.start_tsc > ms_to_tsc(STUCK_WINDOW_MS)) {
        /* an update ends every second: none in 1.5 s, the RTC does not count */
        st.active = false;
        st.stopped_why = "no update ended in 1.5 s: the RTC does not count";
        return;
    }
    st.polls++;
    /* This call holds the caller at most CALL_BUDGET_US: it waits for the
       watch to open (the next call could come too late), then polls. */
    uint64_t budget = ms_to_tsc(CALL_BUDGET_US) / 1000, floor = ms_to_tsc(1);
    uint64_t room = ms_to_tsc(CALL_ROOM_MS) > 2 * st.call_gap_tsc ? ms_to_tsc(CALL_ROOM_MS) - 2 * st.call_gap_tsc : 0;
    budget = room < budget ? room : budget;
    uint64_t budget_end = tsc_now + (budget > floor ? budget : floor);
    for (uint32_t i = 0; i < 100000000u && rdtsc() < st.next_tsc; i++)
        __asm__ volatile("pause");
    bool seen_high = false;
    uint64_t until = st.pred_tsc && st.pred_tsc + st.margin_tsc < budget_end ? st.pred_tsc + st.margin_tsc : budget_end;
    bool caught = spin_for_edge(until, &seen_high, true);
    uint64_t now = rdtsc();
    st.last_call_tsc = now;
    if (now - tsc_now > st.longest_call_tsc)
        st.longest_call_tsc = now - tsc_now;
    if (caught || after_spin_stuck())
        return;
    if (!st.pred_tsc) {
        /* Before the first edge: UIP's rise and fall may both fall between
           two calls, so the seconds register is watched too. Its change
           between calls places the edge between them: enough to watch the
           next second (never fitted). */
        if (seen_high) {
            st.search_end_tsc = 0; /* mid-update: the seconds are not defined (MC146818A) */
            return;
        }
        uint8_t sec = rtc_read_reg(RTC_SECONDS);
        if (st.search_end_tsc && sec != st.search_sec) {
            st.updates_seen = true;
            st.coarse_phases++;
            st.period_tsc = results.tsc_estimate_hz;
            watch_next(rtc_tsc_mid(st.search_end_tsc, now), (now - st.search_end_tsc) / 2 + ms_to_tsc(LEAD_US) / 1000);
        }
        st.search_sec = sec;
        st.search_end_tsc = rdtsc();
        return;
    }
    if (now > st.pred_tsc + st.margin_tsc && !seen_high) {
        /* missed (the loop was away, or the prediction was off): the second
           after, watched twice as wide; after MISSED_MAX, search again */
        st.missed++;
        if (++st.missed_in_row >= MISSED_MAX) {
            st.pred_tsc = 0;
            st.search_end_tsc = 0;
            st.next_tsc = now;
            st.missed_in_row = 0;
            return;
        }
        uint64_t margin = 2 * st.margin_tsc, pred = st.pred_tsc;
        if (pred + margin < now)
            pred += ((now - pred - margin) / st.period_tsc + 1) * st.period_tsc;
        watch_next(pred - st.period_tsc, margin);
    }
}

void rtc_window_end(void)
{
    if (!st.probed || st.window_done)
        return;
    st.window_tsc = rdtsc() - st.start_tsc;
    st.active = false;
    st.window_done = true;
}

/* The window alone, when the drift loop did not run one (drift not chosen,
   or no counter for it to read). */
static void own_window(const struct profile *p)
{
    st.own_window = true;
    rtc_window_begin();
    uint64_t len = ms_to_tsc(p->drift_ms), start = rdtsc();
    for (uint64_t i = 0; i < 4000000000ull; i++) {
        uint64_t now = rdtsc();
        if (now - start >= len || !st.active)
            break;
        rtc_window_poll(now);
        __asm__ volatile("pause");
    }
    rtc_window_end();
}

/* The cost of one seconds-register read (the index write and the data
   read), after an empty bracket each time, as exp_read_cost.c does. */
static void measure_cost(const struct profile *p)
{
    uint32_t n = p->latency_slow;
    uint64_t budget = ms_to_tsc(p->latency_ms);
    uint64_t mark = memory_mark();
    uint64_t *full = memory_alloc(n * sizeof *full), *empty = memory_alloc(n * sizeof *empty);
    uint64_t *scratch = memory_alloc(n * sizeof *scratch);
    if (!full || !empty || !scratch) {
        memory_release(mark);
        return;
    }
    uint8_t prev = 0;
    uint32_t got = 0;
    uint64_t start = bracket_begin();
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e0 = bracket_begin();
        uint64_t e1 = bracket_end();
        uint64_t a = bracket_begin();
        uint8_t v = rtc_read_reg(RTC_SECONDS);
        uint64_t b = bracket_end();
        empty[i] = e1 - e0;
        full[i] = b - a;
        got = i + 1;
        if (i > 0) {
            enum rtc_step step = rtc_seconds_step(prev, v);
            if (step == RTC_STEP_SAME)
                st.zero_deltas++;
            else if (step == RTC_STEP_BACKWARD)
                st.backward++;
            else
                st.distinct++;
        }
        prev = v;
        if (b - start > budget)
            break;
    }
    struct summary sf, se;
    stats_summarise(full, got, scratch, &sf);
    stats_summarise(empty, got, scratch, &se);
    memory_release(mark);
    st.reads = got;
    st.bracket_overhead = se.p50;
    st.cost = sf;
    stats_subtract(&st.cost, se.p50);
    st.cost_done = got > 0;
}

static void rtc_measure(const struct profile *p)
{
    probe_and_date();
    if (!st.present)
        return;
    if (!st.window_done)
        own_window(p);
    measure_cost(p);
    rtc_fit_edges(edges, st.edge_count, results.tsc_estimate_hz, &st.fit);
    rtc_min_steps(edges, st.edge_count, &st.min_step_s, &st.min_step_tsc);
}

/* --- report --- */

static bool stuck(void)
{
    return st.present && (st.never_updated || (!st.updates_seen && st.window_tsc >= ms_to_tsc(STUCK_WINDOW_MS)));
}

static void counter_record(void)
{
    struct record r;
    record_begin(&r, "counter");
    record_str(&r, "name", "rtc");
    record_bool(&r, "present", st.present);
    record_str(&r, "reason", st.present ? 0 : st.reason);
    record_fixed(&r, "nominal_hz", 1000, 3);
    record_str(&r, "nominal_source", "32.768 kHz crystal / 32768 (nominal)");
    record_null(&r, "width_bits");
    record_str(&r, "access", "CMOS ports 0x70/0x71");
    emit(&r);
}

static void cost_records(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    if (!st.cost_done)
        return;
    const struct summary *s = &st.cost;
    kprintf("  one read of the seconds register (index write, data read): p50 %s ns, max %s ns\n",
            xs(a, tsc_ticks_ns(s->p50), 1), xs(b, tsc_ticks_ns(s->max), 1));
    struct record r;
    record_begin(&r, "latency");
    record_str(&r, "counter", "rtc");
    record_u64(&r, "n", s->n);
    record_xf_fixed(&r, "min_ns", tsc_ticks_ns(s->min), 3);
    record_xf_fixed(&r, "p50_ns", tsc_ticks_ns(s->p50), 3);
    record_xf_fixed(&r, "mean_ns", tsc_ticks_to_ns(s->mean), 3);
    record_xf_fixed(&r, "p99_ns", tsc_ticks_ns(s->p99), 3);
    record_xf_fixed(&r, "p999_ns", tsc_ticks_ns(s->p999), 3);
    record_xf_fixed(&r, "max_ns", tsc_ticks_ns(s->max), 3);
    record_xf_fixed(&r, "stddev_ns", tsc_ticks_to_ns(s->stddev), 3);
    record_u64(&r, "min_ticks", s->min);
    record_u64(&r, "p50_ticks", s->p50);
    record_u64(&r, "max_ticks", s->max);
    record_u64(&r, "bracket_overhead_ticks", st.bracket_overhead);
    emit(&r);

    record_begin(&r, "resolution");
    record_str(&r, "counter", "rtc");
    if (st.min_step_tsc)
        record_xf_fixed(&r, "min_step_ns", tsc_ticks_ns(st.min_step_tsc), 3);
    else
        record_null(&r, "min_step_ns");
    record_u64(&r, "nominal_tick_ns", 1000000000ull);
    if (st.min_step_s)
        record_u64(&r, "min_step_ticks", st.min_step_s);
    else
        record_null(&r, "min_step_ticks");
    record_u64(&r, "step_gcd_ticks", 1);
    record_u64(&r, "reads", st.reads);
    record_u64(&r, "deltas", st.reads ? st.reads - 1 : 0);
    record_u64(&r, "zero_deltas", st.zero_deltas);
    record_u64(&r, "distinct", st.distinct);
    record_u64(&r, "backward", st.backward);
    record_u64(&r, "largest_backward_ticks", 0);
    record_u64(&r, "gap_deltas", 0);
    emit(&r);

    record_begin(&r, "monotonicity");
    record_str(&r, "counter", "rtc");
    record_u64(&r, "reads", st.reads + st.edge_count);
    record_u64(&r, "backward", st.backward + st.fit.backward);
    record_null(&r, "largest_backward_ticks");
    record_u64(&r, "discontinuities", st.fit.discontinuities);
    record_bool(&r, "stuck", stuck());
    emit(&r);
}

/* A counter's rate by the RTC, through the TSC (rtc_counter_vs), when the
   drift measured its rate: false otherwise. */
static bool counter_vs_rtc(int c, struct xf ratio, struct xf u_fit_ppm, struct rtc_vs *v)
{
    if (!counters[c].present || !results.tsc_measured)
        return false;
    if (c == results.reference)
        *v = rtc_counter_vs(xf_from_u64(0), results.tsc_uncertainty_ppm, ratio, u_fit_ppm);
    else if (results.counter[c].has_ppm)
        *v = rtc_counter_vs(results.counter[c].ppm_vs_nominal, results.counter[c].uncertainty_ppm, ratio, u_fit_ppm);
    else
        return false;
    return true;
}

static void rtc_report(void)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS], c[FMT_FIXED_CHARS];
    kprintf("\n== The RTC (CMOS real-time clock: its own 32.768 kHz crystal) ==\n");
    counter_record();
    struct record r;
    record_begin(&r, "rtc");
    record_bool(&r, "present", st.present);
    if (!st.present) {
        record_str(&r, "reason", st.reason);
        emit(&r);
        kprintf("  absent: %s\n", st.reason);
        check_skip("TSC agrees with the RTC", "no RTC: %s", st.reason);
        return;
    }
    char date[16], time[16];
    if (st.date_valid) {
        fmt_format(date, sizeof date, "%04u-%02u-%02u", st.date.year, st.date.month, st.date.day);
        fmt_format(time, sizeof time, "%02u:%02u:%02u", st.date.hour, st.date.min, st.date.sec);
        kprintf("  Run measured from %s %s (RTC, no time zone; read as the %s window opened)\n", date, time,
                st.own_window ? "RTC's" : "drift");
    } else {
        kprintf("  date and time not read: %s\n", st.date_why);
    }
    kprintf("  registers: %s, %s, battery %s (register D 0x%02x)\n", (st.rtc.reg_b & RTC_B_DM_BINARY) ? "binary" : "BCD",
            (st.rtc.reg_b & RTC_B_24H) ? "24 h" : "12 h", st.rtc.battery_ok ? "held (VRT set)" : "FAILED (VRT clear)",
            st.rtc.reg_d);
    record_str(&r, "date", st.date_valid ? date : 0);
    record_str(&r, "time", st.date_valid ? time : 0);
    record_str(&r, "date_problem", st.date_valid ? 0 : st.date_why);
    record_bool(&r, "bcd", !(st.rtc.reg_b & RTC_B_DM_BINARY));
    record_bool(&r, "hour_24", st.rtc.reg_b & RTC_B_24H);
    record_bool(&r, "battery_ok", st.rtc.battery_ok);
    record_u64(&r, "edges", st.edge_count);
    record_u64(&r, "edges_used", st.fit.used);
    record_u64(&r, "edges_wide", st.fit.wide);
    record_u64(&r, "edges_outliers", st.fit.outliers);
    record_u64(&r, "discontinuities", st.fit.discontinuities);
    record_u64(&r, "span_s", st.fit.span_s);
    record_xf_fixed(&r, "window_s", tsc_ticks_s(st.window_tsc), 3);
    record_str(&r, "window", st.own_window ? "own" : "drift");
    record_xf_fixed(&r, "widest_edge_ns", tsc_ticks_ns(st.fit.widest_tsc), 1);
    record_xf_fixed(&r, "longest_spin_us", xf_div(tsc_ticks_ns(st.longest_spin_tsc), xf_from_u64(1000)), 1);
    record_xf_fixed(&r, "phase_wait_ms", xf_div(tsc_ticks_ns(st.phase_wait_tsc), xf_from_u64(1000000)), 1);
    record_xf_fixed(&r, "longest_call_us", xf_div(tsc_ticks_ns(st.longest_call_tsc), xf_from_u64(1000)), 1);
    record_bool(&r, "edges_full", st.edges_overflowed);
    record_u64(&r, "polls", st.polls);
    record_u64(&r, "missed", st.missed);
    record_xf_fixed(&r, "call_gap_us", xf_div(tsc_ticks_ns(st.call_gap_tsc), xf_from_u64(1000)), 1);
    record_u64(&r, "bad_clock_reads", st.bad_clock_reads);
    record_str(&r, "stopped", st.stopped_why);
    record_u64(&r, "tolerance_ppm", RTC_TOLERANCE_PPM);

    kprintf("  %u second boundaries (UIP falling) timed by the TSC over %s s; widest bracket %s us\n", st.edge_count,
            xs(a, tsc_ticks_s(st.window_tsc), 1), xs(b, xf_div(tsc_ticks_ns(st.fit.widest_tsc), xf_from_u64(1000)), 1));
    if (st.fit.wide || st.fit.outliers)
        kprintf("  left out of the fit: %u with a wide bracket (the CPU away), %u off the line\n", st.fit.wide,
                st.fit.outliers);
    if (st.edges_overflowed)
        kprintf("  Note: the first %d edges are kept; later ones were timed but not kept\n", RTC_EDGES_MAX);
    if (st.stopped_why)
        kprintf("  Note: polling stopped: %s\n", st.stopped_why);
    if (st.fit.discontinuities)
        kprintf("  %u discontinuit%s (the RTC's count and the TSC disagreed by a second or more); the longest run\n"
                "  without one is fitted\n", st.fit.discontinuities, st.fit.discontinuities == 1 ? "y" : "ies");
    if (stuck()) {
        kprintf("  the RTC never finished an update in %s s: it does not count\n", xs(a, tsc_ticks_s(st.window_tsc), 1));
        record_bool(&r, "stuck", true);
        emit(&r);
        check_fail("RTC counts", "no update ended in %s s", a);
        check_skip("TSC agrees with the RTC", "the RTC does not count");
        cost_records();
        return;
    }
    if (st.updates_seen)
        check_pass("RTC counts", "%u update(s) timed in %s s", st.edge_count + (uint32_t)st.bad_clock_reads,
                   xs(a, tsc_ticks_s(st.window_tsc), 1));
    else
        check_skip("RTC counts", "the window (%s s) was too short to see an update end", xs(a, tsc_ticks_s(st.window_tsc), 1));
    if (!st.fit.fitted) {
        emit(&r);
        check_skip("TSC agrees with the RTC", "%u edge(s): two one second apart or more are needed", st.edge_count);
        cost_records();
        return;
    }
    struct xf u_fit_ppm = ppm_of(st.fit.uncertainty_rel);
    record_xf_fixed(&r, "tsc_hz", st.fit.tsc_per_s, 3);
    record_xf_fixed(&r, "fit_uncertainty_ppm", u_fit_ppm, 6);
    record_xf_fixed(&r, "stderr_ppm", ppm_of(st.fit.stderr_rel), 6);
    record_xf_fixed(&r, "bracket_ppm", ppm_of(st.fit.bracket_rel), 6);
    record_str(&r, "reference", results.tsc_measured ? counters[results.reference].name : 0);
    kprintf("  tsc by the rtc %17s Hz, +-%s ppm (edge timing over %u s)\n", xs(a, st.fit.tsc_per_s, 3), xs(b, u_fit_ppm, 3),
            st.fit.span_s);
    bool coarse = st.fit.span_s < COARSE_SPAN_S;
    record_bool(&r, "coarse", coarse);
    if (!results.tsc_measured) {
        record_null(&r, "ppm_tsc_vs_rtc");
        record_null(&r, "uncertainty_ppm");
        emit(&r);
        kprintf("  no measured TSC rate to hold it against (%s)\n", results.tsc_hz_source);
        check_skip("TSC agrees with the RTC", "the TSC's rate was not measured against a reference (drift did not run or fit)");
        cost_records();
        return;
    }
    /* the TSC's rate by the RTC over its rate by the reference */
    struct xf ratio;
    struct rtc_vs tsc = rtc_tsc_vs(st.fit.tsc_per_s, u_fit_ppm, results.tsc_hz, results.tsc_uncertainty_ppm, &ratio);
    const char *refname = counters[results.reference].name;
    record_xf_fixed(&r, "ppm_tsc_vs_rtc", tsc.ppm, 6);
    record_xf_fixed(&r, "uncertainty_ppm", tsc.u_ppm, 6);
    kprintf("  that is %s ppm from its rate by the %s, +-%s ppm\n", xs(a, tsc.ppm, 3), refname, xs(b, tsc.u_ppm, 3));
    static const int others[] = {COUNTER_HPET, COUNTER_ACPI_PM};
    static const char *const keys[][2] = {{"hpet_ppm_vs_rtc", "hpet_uncertainty_ppm"},
                                          {"acpi_pm_ppm_vs_rtc", "acpi_pm_uncertainty_ppm"}};
    for (unsigned i = 0; i < 2; i++) {
        struct rtc_vs v;
        if (!counter_vs_rtc(others[i], ratio, u_fit_ppm, &v)) {
            record_null(&r, keys[i][0]);
            record_null(&r, keys[i][1]);
            continue;
        }
        record_xf_fixed(&r, keys[i][0], v.ppm, 6);
        record_xf_fixed(&r, keys[i][1], v.u_ppm, 6);
        kprintf("  %-7s vs rtc %s ppm from nominal, +-%s ppm (through the TSC)\n", counters[others[i]].name, xs(a, v.ppm, 3),
                xs(b, v.u_ppm, 3));
    }
    emit(&r);
    kprintf("  The RTC runs from a 32.768 kHz watch crystal, typically +-%u ppm at 25 C and\n"
            "  worse hot, cold or aged: an independent check of the main crystal, not a\n"
            "  better one (assumed +-%u ppm for the check)\n", RTC_TYPICAL_PPM, RTC_TOLERANCE_PPM);
    if (coarse)
        kprintf("  Note: coarse: %u s between the first and last edge (%u edges); the standard\n"
                "  profile's 60 s makes the figure meaningful\n", st.fit.span_s, st.fit.used);
    xs(a, tsc.ppm, 3);
    xs(b, tsc.u_ppm, 3);
    if (rtc_agrees(tsc, RTC_TOLERANCE_PPM))
        check_pass("TSC agrees with the RTC", "%s ppm from its rate by the %s, +-%s (limit %u ppm, the RTC's assumed, + 3 u)",
                   a, refname, b, RTC_TOLERANCE_PPM);
    else
        check_fail("TSC agrees with the RTC", "%s ppm from its rate by the %s, +-%s (limit %u ppm, the RTC's assumed, + 3 u)",
                   a, refname, b, RTC_TOLERANCE_PPM);
    /* the verdict: both crystals' tolerances */
    uint32_t both = RTC_TOLERANCE_PPM + results.tsc_absolute_ppm;
    bool agree = rtc_agrees(tsc, both);
    xs(c, tsc.u_ppm, 3);
    kprintf("  Verdict: the main crystal (%s) and the RTC %s within their tolerances:\n"
            "  %s ppm +-%s (limit %u ppm: the RTC's %u assumed, the %s's %u, + 3 u)%s\n", refname,
            agree ? "agree" : "DISAGREE", a, c, both, RTC_TOLERANCE_PPM, refname, results.tsc_absolute_ppm,
            coarse ? "; coarse" : "");
    fmt_format(results.rtc_choice, sizeof results.rtc_choice, "the main crystal (%s) and the RTC %s within their tolerances (%s ppm +-%s%s)",
               refname, agree ? "agree" : "DISAGREE", a, c, coarse ? ", coarse" : "");
    cost_records();
}

const struct experiment exp_rtc = {
    .name = "rtc",
    .what = "the RTC: date and time; the TSC's rate against its seconds, timed in the drift window",
    .needs_tsc = true,
    .measure = rtc_measure,
    .report = rtc_report,
};

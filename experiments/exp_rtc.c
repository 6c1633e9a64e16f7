/* Experiment "rtc", its measurement: the CMOS RTC's date read safely, its second boundaries timed by the TSC. */
#include "../drivers/rtc.h"
#include "../kernel/discover.h"
#include "../kernel/memory.h"
#include "../kernel/report_util.h"
#include "../kernel/reads.h"
#include "../kernel/results.h"
#include "../lib/format.h"
#include "../lib/rtc_fit.h"
#include "../lib/stats.h"
#include "exp_rtc_report.h"
#include "experiment.h"

/* The CMOS real-time clock is the one oscillator of a PC that is nearly
   always separate from the main crystal (a 32.768 kHz watch crystal;
   MC146818A data sheet). The date and time are read safely just before the
   drift window opens; during the window the drift loop calls
   rtc_window_poll, which times the RTC's second boundaries with the TSC;
   the TSC's rate is then fitted against the RTC's seconds (rtc_fit.h); the
   report (exp_rtc_report.c) sets it beside its rate against the drift's
   reference, and the HPET and PM timer follow through the TSC.

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

#define CALL_BUDGET_US 5000      /* the most one call holds the drift loop, which calls 10 ms away a gap */
#define CALL_ROOM_MS 8           /* ... and less when the caller's own iterations are long: this less twice their average */
#define CALL_GAP_MAX_MS 2        /* a call starts waiting at most this early */
#define LEAD_FIRST_MS 30         /* the widest watch */
#define LEAD_US 1000             /* the watch's margin either side of a predicted edge, after one caught */
#define PHASE_MS 2200            /* the wait for the first update before the window */
#define MISSED_MAX 4             /* edges missed in a row: search again */
#define END_EDGE_MS 1200         /* the wait for the window's last edge */
#define UIP_STUCK_MS 25          /* UIP set this long: stuck (ten updates' worth) */

static struct rtc_run run;       /* what the report reads */
static struct {
    bool probed, date_read;
    struct rtc_raw raw;

    /* the window */
    bool active, window_done;
    uint64_t start_tsc;
    uint64_t next_tsc, margin_tsc;
    uint64_t pred_tsc, period_tsc;  /* the next edge expected, 0 before the first; one RTC second */
    uint64_t coarse_phases;
    uint32_t missed_in_row;
    uint64_t last_call_tsc;        /* the caller's last call (its pace: run.call_gap_tsc) */
    uint64_t search_end_tsc;       /* before the first edge: the last call's end, and the seconds then */
    uint8_t search_sec;
    uint64_t high_since;           /* UIP seen set since, 0 when clear */
} st;
static struct rtc_edge edges[RTC_EDGES_MAX];
/* Coarse edges: the seconds register seen to change between two reads at
   most COARSE_MS apart (TSC), bracketed by the two. Far wider than UIP's
   fall, but read on every loop pass, so a poller that lost the UIP phase
   (a loaded host; a stop that moved the RTC against the TSC) still has an
   edge either side of a stop: they size stops, never the rate. */
#define COARSE_MS 1
#define COARSE_WIDE_MS 100      /* a change seen between reads further apart is no edge (a UIP poll can hold the loop for ms: wider under PVM) */
#define COARSE_MAX 512
static struct rtc_edge coarse[COARSE_MAX];
static uint32_t coarse_count;
static struct {
    uint64_t last_a, last_b;
    uint8_t sec;
    bool sod_known;
    uint32_t sod;            /* the clock at the last change seen */
} cs;

static void coarse_poll(uint64_t tsc_now)
{
    if (coarse_count >= COARSE_MAX || (cs.last_b && tsc_now - cs.last_b < ms_to_tsc(COARSE_MS)))
        return;
    uint64_t a = rdtsc();
    uint8_t sec = rtc_read_reg(RTC_SECONDS);
    uint64_t b = rdtsc();
    if (cs.last_b && sec != cs.sec) {
        /* the whole clock, read after the change. An edge is one second
           on from the last change seen, its seconds the ones just read (a
           read mid-update, undefined on hardware, is not kept), between
           two reads under 100 ms apart. A change of more is the clock
           stepping (a VM resumed: the RTC's time moved at that instant,
           at no second boundary), not an edge. */
        struct rtc_raw raw;
        uint32_t sod;
        rtc_read_clock(&run.rtc, &raw);
        bool ok = raw.sec == sec && rtc_decode_clock(&raw, &sod);
        if (ok && cs.sod_known && rtc_seconds_between(cs.sod, sod) == 1 && b - cs.last_a < ms_to_tsc(COARSE_WIDE_MS))
            coarse[coarse_count++] = (struct rtc_edge){cs.last_a, b, sod};
        cs.sod_known = ok;
        cs.sod = sod;
        b = rdtsc();
    }
    cs.sec = sec;
    cs.last_a = a;
    cs.last_b = b;
}

static void probe_and_date(void)
{
    if (st.probed)
        return;
    st.probed = true;
    run.present = rtc_probe(&run.rtc, run.reason, sizeof run.reason);
    if (!run.present)
        return;
    st.date_read = rtc_read_time(&run.rtc, &st.raw, ms_to_tsc(RTC_UIP_MAX_US / 1000 + 1), run.date_why, sizeof run.date_why);
    if (!st.date_read)
        return;
    run.date_valid = rtc_decode(&st.raw, &run.date);
    run.hour_mode_ignored = rtc_hour_ignores_mode(&st.raw);
    if (!run.date_valid)
        fmt_format(run.date_why, sizeof run.date_why,
                   "the registers hold no valid date (year %02x month %02x day %02x, %02x:%02x:%02x, register B 0x%02x)",
                   st.raw.year, st.raw.month, st.raw.day, st.raw.hour, st.raw.min, st.raw.sec, st.raw.reg_b);
}

/* UIP set for far longer than an update takes: the RTC is stuck in one. */
static bool after_spin_stuck(void)
{
    if (!st.high_since || rdtsc() - st.high_since < ms_to_tsc(UIP_STUCK_MS))
        return false;
    st.active = false;
    run.stopped_why = "UIP stayed set for 25 ms, ten times the longest update";
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
    rtc_read_clock(&run.rtc, &raw);
    run.updates_seen = true;
    st.missed_in_row = 0;
    if (store) {
        if (!rtc_decode_clock(&raw, &sod))
            run.bad_clock_reads++;
        else if (run.edge_count == RTC_EDGES_MAX)
            run.edges_overflowed = true;
        else
            edges[run.edge_count++] = (struct rtc_edge){a, b, sod};
    }
    /* the RTC's second by the last two edges caught (not the first: QEMU
       holds UIP until its update timer runs while UF is clear, so the first
       edge after boot can be late), else by the start-up estimate (good to
       some ppm when it was checked; a miss widens the watch) */
    st.period_tsc = results.tsc_estimate_hz;
    if (run.edge_count >= 2)
        st.period_tsc = rtc_period_tsc(&edges[run.edge_count - 2], &edges[run.edge_count - 1], results.tsc_estimate_hz);
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
                if (store && after - start > run.longest_spin_tsc)
                    run.longest_spin_tsc = after - start;
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

/* The drift window's rider (experiment.h): each returns at once when the
   rtc experiment is not chosen or there is no RTC. Before the window:
   probes the RTC and reads the date (a few ms at most). */
static void rtc_window_begin(void)
{
    if (!experiment_chosen("rtc") || st.window_done || results.tsc_estimate_hz < 1000)
        return;
    probe_and_date();
    if (!run.present)
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
            run.updates_seen = true;
        } else {
            st.active = false;
            run.never_updated = true;
            run.stopped_why = "no update ended in 2.2 s: the RTC does not count";
        }
    }
    st.start_tsc = rdtsc();
    run.phase_wait_tsc = st.start_tsc - begun;
}

/* Once per loop iteration: nothing until the next edge is near, then a
   wait and a poll of at most 5 ms per call to catch it. */
static void rtc_window_poll(uint64_t tsc_now)
{
    if (!st.active)
        return;
    /* the caller's pace (a running average of the time between calls): a
       call can come that late after the watch opens, and the caller's own
       iteration adds to what this call holds it */
    if (st.last_call_tsc && tsc_now > st.last_call_tsc) {
        uint64_t gap = tsc_now - st.last_call_tsc;
        run.call_gap_tsc = run.call_gap_tsc ? run.call_gap_tsc - run.call_gap_tsc / 16 + gap / 16 : gap;
    }
    st.last_call_tsc = tsc_now;
    coarse_poll(tsc_now);
    uint64_t early = run.call_gap_tsc < ms_to_tsc(CALL_GAP_MAX_MS) ? run.call_gap_tsc : ms_to_tsc(CALL_GAP_MAX_MS);
    if (tsc_now + early < st.next_tsc)
        return;
    if (!run.updates_seen && tsc_now - st.start_tsc > ms_to_tsc(RTC_STUCK_WINDOW_MS)) {
        /* an update ends every second: none in 1.5 s, the RTC does not count */
        st.active = false;
        run.stopped_why = "no update ended in 1.5 s: the RTC does not count";
        return;
    }
    run.polls++;
    /* This call holds the caller at most CALL_BUDGET_US: it waits for the
       watch to open (the next call could come too late), then polls. */
    uint64_t budget = ms_to_tsc(CALL_BUDGET_US) / 1000, floor = ms_to_tsc(1);
    uint64_t room = ms_to_tsc(CALL_ROOM_MS) > 2 * run.call_gap_tsc ? ms_to_tsc(CALL_ROOM_MS) - 2 * run.call_gap_tsc : 0;
    budget = room < budget ? room : budget;
    uint64_t budget_end = tsc_now + (budget > floor ? budget : floor);
    for (uint32_t i = 0; i < 100000000u && rdtsc() < st.next_tsc; i++)
        __asm__ volatile("pause");
    bool seen_high = false;
    uint64_t until = st.pred_tsc && st.pred_tsc + st.margin_tsc < budget_end ? st.pred_tsc + st.margin_tsc : budget_end;
    bool caught = spin_for_edge(until, &seen_high, true);
    uint64_t now = rdtsc();
    st.last_call_tsc = now;
    if (now - tsc_now > run.longest_call_tsc)
        run.longest_call_tsc = now - tsc_now;
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
            run.updates_seen = true;
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
        run.missed++;
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

static void rtc_window_end(void)
{
    if (!st.probed || st.window_done)
        return;
    /* One more edge, waited for (at most 1.2 s): the window's last, so that
       the edges span the whole window and any stop in it has an edge after
       it, however many the poller missed (a loaded host, or a stop that
       moved the RTC's phase against the TSC's) */
    if (st.active && run.edge_count) {
        bool seen_high = false;
        if (!spin_for_edge(rdtsc() + ms_to_tsc(END_EDGE_MS), &seen_high, true))
            after_spin_stuck();
    }
    run.window_tsc = rdtsc() - st.start_tsc;
    st.active = false;
    st.window_done = true;
}

/* The window alone, when the drift loop did not run one (drift not chosen,
   or no counter for it to read). */
static void own_window(const struct profile *p)
{
    run.own_window = true;
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
                run.zero_deltas++;
            else if (step == RTC_STEP_BACKWARD)
                run.backward++;
            else
                run.distinct++;
        }
        prev = v;
        if (b - start > budget)
            break;
    }
    struct summary sf, se;
    stats_summarise(full, got, scratch, &sf);
    stats_summarise(empty, got, scratch, &se);
    memory_release(mark);
    run.reads = got;
    run.bracket_overhead = se.p50;
    run.cost = sf;
    stats_subtract(&run.cost, se.p50);
    run.cost_done = got > 0;
}

/* The whole run's account (experiment.h, run_mark): the RTC's time (read
   safely, to the second), the TSC and a 64-bit HPET, read before the first
   experiment measures (end false) and after the last (end true). A stop
   anywhere in the run shows as the RTC (the host's clock under QEMU) or the
   HPET advancing other than the TSC (exp_rtc_report.c, "Over the whole
   run"). */
static void rtc_run_mark(bool end)
{
    struct run_mark *m = &run.mark[end ? 1 : 0];
    *m = (struct run_mark){0};
    if (!experiment_chosen("rtc"))
        return;
    struct rtc r;
    char why[96];
    struct rtc_raw raw;
    /* UIP waited out for at most 10 ms: a safe read needs no more */
    if (rtc_probe(&r, why, sizeof why) && rtc_read_time(&r, &raw, ms_to_tsc(10) ? ms_to_tsc(10) : 30000000ull, why, sizeof why))
        m->rtc_ok = rtc_decode_clock(&raw, &m->sod);
    m->tsc = rdtsc();
    if (discovered.hpet.base && discovered.hpet.counter_64bit) {
        m->hpet = hpet_counter(&discovered.hpet);
        m->hpet_ok = true;
    }
    /* kvmclock: 64-bit ns, the host's time as the hypervisor scales the TSC */
    struct read_src k;
    const char *k_why;
    if (target_source(TARGET_KVMCLOCK, &k, &k_why)) {
        m->kvmclock = read_value(READ_KVMCLOCK, &k);
        m->kvmclock_ok = true;
    }
}

/* A stop of the machine in the drift window: the drift loop away for a
   long time (a gap, or a counter that stood still or moved too far, while
   the TSC ran on: under KVM), or the RTC stepping against the TSC (while
   every other clock stood still with the TSC: under TCG). Its length by
   the wall clock is the TSC's advance across it plus the RTC's step
   against the TSC there (the RTC follows the host's clock under QEMU). */
#define STOP_MIN_MS 500          /* the loop away this long is a stop, not a loaded host's hiccup (0.1-0.3 s here) */
#define STOP_GAP_MS 10           /* the drift loop's gap bound (exp_drift.c GAP_REPORT_MS): its reads' spacing otherwise */

/* The counters the drift loop read, each with what it published of them
   (results.h); in counter order, the order of its series. */
static bool drift_read(int c) { return results.counter[c].drift_done; }

static const struct drift_event *largest_event(const struct counter_findings *s, uint64_t from, uint64_t to)
{
    const struct drift_event *best = 0;
    for (uint32_t e = 0; e < s->event_count && e < DRIFT_EVENTS_KEPT; e++) {
        const struct drift_event *ev = &s->events[e];
        if (ev->kind == EV_RESIDUAL_STEP || ev->kind == EV_TSC_BACK || ev->at_tsc < from || ev->at_tsc - ev->tsc_ticks > to)
            continue;
        if (!best || ev->tsc_ticks > best->tsc_ticks || (ev->tsc_ticks == best->tsc_ticks && best->kind == EV_GAP))
            best = ev;
    }
    return best;
}

static void stop_clock_add(struct stop_found *f, const char *name, bool known, struct xf adv, struct xf u, const char *how)
{
    if (f->clock_count >= STOP_CLOCKS_MAX)
        return;
    struct stop_clock *c = &f->clock[f->clock_count++];
    *c = (struct stop_clock){.name = name, .known = known, .advanced_ns = adv, .u_ns = u, .how = how};
    c->verdict = known ? drift_stop_judge(xf_to_fixed(adv, 0), (uint64_t)xf_to_fixed(u, 0), xf_to_fixed(f->wall_ns, 0),
                                          (uint64_t)xf_to_fixed(f->u_wall_ns, 0))
                       : STOP_TOO_SHORT;
}

/* The TSC's rate for the seconds' edges: the RTC fit's, else the drift's
   (with its uncertainty), else the estimate (taken as good to 1000 ppm). */
static void stop_rate(struct xf *rate, struct xf *u_rel)
{
    *rate = run.fit.fitted ? run.fit.tsc_per_s : results.tsc_measured ? results.tsc_hz : xf_from_u64(results.tsc_estimate_hz);
    *u_rel = run.fit.fitted ? run.fit.uncertainty_rel
             : results.tsc_measured ? xf_div(results.tsc_uncertainty_ppm, xf_from_u64(1000000))
                                    : xf_div(xf_from_u64(1), xf_from_u64(1000));
}

/* The stop between from and to (TSC ticks into the window), the TSC
   having advanced tsc_ticks across it: its length by the wall clock and
   each clock's account of it. */
static void stop_at(struct stop_found *f, const char *seen_by, uint64_t from, uint64_t to, uint64_t tsc_ticks, bool gap)
{
    uint64_t start = results.drift_start_tsc;
    struct xf gap_u = tsc_ticks_ns(ms_to_tsc(STOP_GAP_MS));
    *f = (struct stop_found){.found = true, .seen_by = seen_by, .at_tsc = from / 2 + to / 2};
    /* no gap: the loop read on, the TSC moved no more than its reads'
       spacing, or than the longest gap within a second of the stop (a
       gap there may hold part of it) */
    uint64_t margin = ms_to_tsc(1000), near = 0;
    if (!gap)
        for (int c = 0; c < COUNTER_COUNT; c++) {
            if (!drift_read(c))
                continue;
            const struct drift_event *ev = largest_event(&results.counter[c], from > margin ? from - margin : 0, to + margin);
            if (ev && ev->tsc_ticks > near)
                near = ev->tsc_ticks;
        }
    f->tsc_ns = tsc_ticks_ns(tsc_ticks);
    f->u_tsc_ns = near > ms_to_tsc(STOP_GAP_MS) ? tsc_ticks_ns(near) : gap_u;
    const char *tsc_how = gap ? "the loop's gap" : "the loop's reads, no gap";
    if (gap) {
        /* A reference that stood still across it (QEMU's HPET under KVM)
           ran only while the VM ran: the TSC's advance over its event,
           less its own, is the TSC's over the stop itself, within the
           event's two readings' brackets (each under 3 times the
           narrowest, and 16 ticks), where the loop's gap holds the time
           the VM ran before and after it too */
        const struct drift_event *best = 0;
        int of = -1;
        for (int c = 0; c < COUNTER_COUNT; c++) {
            const struct counter_findings *s = &results.counter[c];
            if (!drift_read(c) || !counters[c].reference_rank)
                continue;
            for (uint32_t e = 0; e < s->event_count && e < DRIFT_EVENTS_KEPT; e++) {
                const struct drift_event *ev = &s->events[e];
                if (ev->kind == EV_STOOD_STILL && ev->counter_known && ev->counter_ticks >= 0 && ev->at_tsc >= from &&
                    ev->at_tsc - ev->tsc_ticks <= to && (!best || ev->tsc_ticks > best->tsc_ticks)) {
                    best = ev;
                    of = c;
                }
            }
        }
        if (best) {
            struct xf ran = counter_ticks_ns(of, xf_from_i64(best->counter_ticks));
            f->tsc_ns = xf_sub(tsc_ticks_ns(best->tsc_ticks), ran);
            f->u_tsc_ns = tsc_ticks_ns(2 * (3 * results.counter[of].min_width_tsc + 16));
            tsc_how = of == COUNTER_HPET ? "the loop's gap, less the time the hpet ran in it"
                                         : "the loop's gap, less the time a reference ran in it";
        }
    }
    f->rtc_known = run.fit.fitted && rtc_jump_across(edges, run.edge_count, start + f->at_tsc, run.fit.tsc_per_s,
                                                     run.fit.uncertainty_rel, run.fit.resid_rms_tsc, &f->rtc);
    if (!f->rtc_known) {
        /* no two UIP edges hold it: the seconds register's changes, at
           the fitted rate, else the TSC's by the drift (with its
           uncertainty), else its estimate (taken as good to 1000 ppm) */
        struct xf rate, u_rel;
        stop_rate(&rate, &u_rel);
        f->rtc_known = rtc_jump_across(coarse, coarse_count, start + f->at_tsc, rate, u_rel, xf_from_u64(0), &f->rtc);
        f->rtc_coarse = f->rtc_known;
    }
    f->wall_ns = f->tsc_ns;
    f->u_wall_ns = f->u_tsc_ns;
    if (f->rtc_known) {
        f->wall_ns = xf_add(f->tsc_ns, f->rtc.step_ns);
        f->u_wall_ns = xf_add(f->u_tsc_ns, f->rtc.u_ns);
    }
    stop_clock_add(f, "tsc", true, f->tsc_ns, f->u_tsc_ns, tsc_how);
    /* an event of a series within a second of the stop is its own account
       of it: what the series did there beyond what the TSC did */
    for (int c = 0; c < COUNTER_COUNT; c++) {
        if (!drift_read(c))
            continue;
        const struct drift_event *ev = largest_event(&results.counter[c], from > margin ? from - margin : 0, to + margin);
        const char *name = counters[c].name;
        if (!ev)
            stop_clock_add(f, name, true, f->tsc_ns, f->u_tsc_ns, "no discontinuity: it moved with the TSC");
        else if (!ev->counter_known)
            stop_clock_add(f, name, false, xf_from_u64(0), xf_from_u64(0), "moved by more than it can unwrap");
        else
            stop_clock_add(f, name, true, xf_add(f->tsc_ns, xf_sub(counter_ticks_ns(c, xf_from_i64(ev->counter_ticks)),
                                                                   tsc_ticks_ns(ev->tsc_ticks))),
                           f->u_tsc_ns, drift_event_names[ev->kind]);
    }
    if (f->rtc_known)
        stop_clock_add(f, "rtc", true, f->wall_ns, f->u_wall_ns, "its second edges timed by the TSC");
}

/* The longest stop in the drift window: the longest time the loop was
   away (by any series), and the RTC's largest step against the TSC, each
   sized by the wall clock; the longer is the stop. */
static void stop_find(void)
{
    struct stop_found *f = &run.stop;
    *f = (struct stop_found){0};
    if (!results.drift_start_tsc)
        return;
    uint64_t start = results.drift_start_tsc;
    const struct drift_event *big = 0;
    for (int c = 0; c < COUNTER_COUNT; c++) {
        const struct drift_event *ev = drift_read(c) ? largest_event(&results.counter[c], 0, ~0ull) : 0;
        if (ev && ev->tsc_ticks >= ms_to_tsc(STOP_MIN_MS) && (!big || ev->tsc_ticks > big->tsc_ticks))
            big = ev;
    }
    static struct stop_found other;
    if (big)
        stop_at(f, "the drift loop was away while the TSC ran", big->at_tsc - big->tsc_ticks, big->at_tsc, big->tsc_ticks,
                true);
    /* the RTC's largest step, by its UIP edges or its seconds' changes */
    struct xf rate, u_rel;
    stop_rate(&rate, &u_rel);
    struct rtc_jump ju, jc;
    uint64_t at_u = 0, at_c = 0, at = 0;
    bool by_uip = run.fit.fitted && rtc_largest_jump(edges, run.edge_count, results.tsc_estimate_hz, run.fit.tsc_per_s,
                                                     run.fit.uncertainty_rel, run.fit.resid_rms_tsc, &ju, &at_u);
    bool by_sec = rtc_largest_jump(coarse, coarse_count, results.tsc_estimate_hz, rate, u_rel, xf_from_u64(0), &jc, &at_c);
    if (by_uip && (!by_sec || xf_cmp(xf_abs(ju.step_ns), xf_sub(xf_abs(jc.step_ns), jc.u_ns)) >= 0))
        at = at_u;
    else if (by_sec)
        at = at_c;
    if (at > start) {
        stop_at(&other, "the RTC stepped against the TSC", at - start, at - start, 0, false);
        if (!f->found || xf_cmp(other.wall_ns, f->wall_ns) > 0)
            *f = other;
    }
}

static void rtc_measure(const struct profile *p)
{
    probe_and_date();
    if (!run.present) {
        /* no RTC (Firecracker): a stop the drift loop saw is still named,
           sized by the TSC's advance alone, each clock's account beside it */
        stop_find();
        return;
    }
    if (!st.window_done)
        own_window(p);
    measure_cost(p);
    rtc_fit_edges(edges, run.edge_count, results.tsc_estimate_hz, &run.fit);
    rtc_min_steps(edges, run.edge_count, &run.min_step_s, &run.min_step_tsc);
    stop_find();
}

static void rtc_report(void) { rtc_report_run(&run); }

static const struct window_rider rider = {.begin = rtc_window_begin, .poll = rtc_window_poll, .end = rtc_window_end};

const struct experiment exp_rtc = {
    .name = "rtc",
    .what = "the RTC: date and time; the TSC's rate against its seconds, timed in the drift window",
    .needs_tsc = true,
    .measure = rtc_measure,
    .report = rtc_report,
    .run_mark = rtc_run_mark,
    .window_rider = &rider,
};

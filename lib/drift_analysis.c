/* The drift experiment's pure analysis: each reading judged, discontinuities kept, cuts, narrow samples. */
#include "drift_analysis.h"

const char *const drift_event_names[EV_KINDS] = {
    [EV_GAP] = "gap", [EV_STOOD_STILL] = "reference stood still", [EV_JUMPED] = "reference jumped",
    [EV_BACKWARD] = "reference went back", [EV_TOO_LONG] = "too long to unwrap", [EV_TSC_BACK] = "tsc went back",
    [EV_RESIDUAL_STEP] = "residual step",
};

uint64_t drift_mid(uint64_t a, uint64_t b) { return a / 2 + b / 2 + (a & b & 1); }

uint64_t drift_stall_tsc(uint64_t tsc_hz, uint64_t counter_millihz, uint64_t floor_tsc)
{
    uint64_t tick_tsc = tsc_hz * 1000 / counter_millihz;
    return 10 * tick_tsc > floor_tsc ? 10 * tick_tsc : floor_tsc;
}

void drift_track_begin(struct drift_track *t, uint64_t v, uint64_t a, uint64_t b)
{
    t->lc_value = t->cur_value = v;
    t->lc_a = a;
    t->lc_b = t->last_b = b;
    t->last_a = a;
    t->lc_y = 0;
    t->narrow_w = b - a;
    t->limit_tsc = unwrap_limit_tsc(&t->up);
    t->still_tsc = 0;
    t->y = 0;
    t->seg = 0;
}

struct drift_counts drift_count_events(const struct drift_track *t, bool (*within_bracket)(const struct drift_event *ev,
                                                                                             const void *ctx),
                                       const void *ctx)
{
    struct drift_counts c = {0, t->kind_count[EV_GAP], t->kind_count[EV_TOO_LONG], 0};
    for (uint32_t e = 0; e < t->event_count && e < DRIFT_EVENTS_KEPT; e++)
        if (t->events[e].kind == EV_RESIDUAL_STEP && within_bracket && within_bracket(&t->events[e], ctx))
            c.within_bracket++;
    c.discontinuities = t->event_count - c.gaps - c.too_long - c.within_bracket;
    return c;
}

/* On a loaded host the loop is away for 10 ms or more many times a second:
   the first such gaps must not crowd out a later stall, the finding the
   window is there to report. */
void drift_track_event(struct drift_track *t, enum drift_event_kind k, uint64_t at, uint64_t tsc_ticks, bool known,
                       int64_t counter_ticks)
{
    uint32_t n = t->event_count < DRIFT_EVENTS_KEPT ? t->event_count : DRIFT_EVENTS_KEPT;
    t->event_count++;
    t->kind_count[k]++;
    if (n == DRIFT_EVENTS_KEPT) {
        uint32_t shortest = DRIFT_EVENTS_KEPT; /* the shortest gap kept: the first to give way */
        for (uint32_t i = 0; i < n; i++)
            if (t->events[i].kind == EV_GAP &&
                (shortest == DRIFT_EVENTS_KEPT || t->events[i].tsc_ticks < t->events[shortest].tsc_ticks))
                shortest = i;
        if (shortest == DRIFT_EVENTS_KEPT || (k == EV_GAP && tsc_ticks <= t->events[shortest].tsc_ticks))
            return;
        for (uint32_t i = shortest; i + 1 < n; i++)
            t->events[i] = t->events[i + 1];
        n--;
    }
    t->events[n] = (struct drift_event){k, at, tsc_ticks, known, counter_ticks};
}

void drift_track_read(struct drift_track *t, uint64_t v, uint64_t a, uint64_t b, uint64_t start, uint64_t gap_tsc,
                      uint64_t stall_tsc)
{
    t->reads++;
    /* the loop was away: between the previous read and this one, or inside this read's bracket */
    bool away = b - t->last_b > gap_tsc;
    if (away) {
        t->gaps++;
        t->away_tsc += b - t->last_b;
        uint64_t last_mid = drift_mid(t->last_a, t->last_b);
        if (t->gap_pending && t->last_b - t->last_a < gap_tsc / 2) {
            /* another gap before the last one was told: that one ends at the
               narrow reading between them, and this one starts there */
            drift_track_event(t, EV_GAP, last_mid - start, last_mid - t->gap_from_mid, true,
                              (int64_t)(t->y - t->gap_from_y));
            t->gap_pending = false;
        }
        if (!t->gap_pending) {
            /* the gap's own span starts at the reading before it, whatever
               its width: a second's gap needs no narrow bracket to be told,
               and the last narrow reading may be long before it */
            t->gap_from_mid = last_mid;
            t->gap_from_y = t->y;
        }
        t->gap_pending = true;
    }
    if (v != t->cur_value) {
        struct step st;
        unwrap_step(&t->up, t->lc_value, t->lc_a, t->lc_b, v, a, b, &st);
        uint64_t at = drift_mid(a, b) - start, tsc_ticks = drift_mid(a, b) - drift_mid(t->lc_a, t->lc_b);
        bool cut = true;
        uint64_t width = b - a;
        bool narrow = width <= 3 * t->narrow_w + 16;
        switch (st.kind) {
        case STEP_NORMAL:
            cut = false;
            if (v < t->cur_value)
                t->wraps++;
            t->y = t->lc_y + st.advance;
            /* a gap is told from readings either side of it whose brackets
               are under half a gap wide: one that holds the gap could have
               been read before it. Their width is nothing beside a gap's
               length, so they need not be narrow as the fit's samples are */
            if (t->gap_pending && width < gap_tsc / 2) {
                drift_track_event(t, EV_GAP, at, drift_mid(a, b) - t->gap_from_mid, true, (int64_t)(t->y - t->gap_from_y));
                t->gap_pending = false;
            }
            break;
        case STEP_SLOW:
            t->y = t->lc_y + st.advance;
            drift_track_event(t, EV_STOOD_STILL, at, tsc_ticks, true, (int64_t)st.advance);
            break;
        case STEP_FAST:
            t->y = t->lc_y + st.advance;
            drift_track_event(t, EV_JUMPED, at, tsc_ticks, true, (int64_t)st.advance);
            break;
        case STEP_BACKWARD:
            t->backward++;
            if (st.backward > t->largest_backward)
                t->largest_backward = st.backward;
            drift_track_event(t, EV_BACKWARD, at, tsc_ticks, true, -(int64_t)st.backward);
            break;
        case STEP_GAP:
            drift_track_event(t, EV_TOO_LONG, at, tsc_ticks, false, 0);
            break;
        case STEP_TSC_BACKWARD:
            t->tsc_back++;
            drift_track_event(t, EV_TSC_BACK, at, t->lc_b - a, true, (int64_t)st.advance);
            break;
        }
        if (cut) {
            t->seg++;
            t->gap_pending = false;
        }
        t->cur_value = v;
        if (width < t->narrow_w)
            t->narrow_w = width;
        /* a new reference: after an event, for a narrow bracket, or before
           the old one grows too old to unwrap from */
        if (cut || narrow || a - t->lc_b > t->limit_tsc / 4) {
            t->lc_value = v;
            t->lc_a = a;
            t->lc_b = b;
            t->lc_y = t->y;
        }
        t->still_tsc = 0;
        t->in_stall = false;
    } else if (!away) {
        /* unchanged: how long it has stood still while we watched */
        t->still_tsc += b - t->last_b;
        if (t->still_tsc > stall_tsc) {
            if (!t->in_stall)
                t->stalls++;
            t->in_stall = true;
            if (t->still_tsc > t->longest_stall_tsc)
                t->longest_stall_tsc = t->still_tsc;
        }
    }
    t->last_a = a;
    t->last_b = b;
}

void drift_cuts_add(struct drift_cuts *c, uint64_t at_tsc)
{
    uint32_t i = c->count;
    for (uint32_t k = 0; k < c->count; k++)
        if (c->at[k] == at_tsc)
            return;
    if (c->count == DRIFT_CUTS_MAX) {
        c->overflowed = true;
        return;
    }
    while (i > 0 && c->at[i - 1] > at_tsc) {
        c->at[i] = c->at[i - 1];
        i--;
    }
    c->at[i] = at_tsc;
    c->count++;
}

void drift_cuts_from_events(struct drift_cuts *c, const struct drift_track *t)
{
    for (uint32_t e = 0; e < t->event_count && e < DRIFT_EVENTS_KEPT; e++)
        if (t->events[e].kind != EV_GAP)
            drift_cuts_add(c, t->events[e].at_tsc);
}

void drift_cuts_apply(const struct drift_cuts *c, const int64_t *x, const uint32_t *sg, uint32_t n, uint32_t *cut_sg)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        while (k < c->count && c->at[k] <= (uint64_t)x[i])
            k++;
        cut_sg[i] = sg[i] * (DRIFT_CUTS_MAX + 1) + k;
    }
}

uint64_t drift_keep_limit(uint64_t min_width)
{
    return 2 * min_width > min_width + 4 ? 2 * min_width : min_width + 4;
}

struct xf drift_bracket_drift(struct xf quant_one_tick, uint64_t limit_ticks, struct xf slope)
{
    return xf_abs(xf_mul(quant_one_tick, xf_mul(xf_from_u64(limit_ticks), slope)));
}

uint32_t drift_keep_narrow(int64_t *x, int64_t *yv, uint32_t *sg, const uint32_t *w, uint32_t slots, uint32_t *filled,
                           uint64_t *min_width)
{
    uint32_t min_w = 0xFFFFFFFFu, n = 0;
    *filled = 0;
    for (uint32_t i = 0; i < slots; i++)
        if (w[i]) {
            (*filled)++;
            if (w[i] < min_w)
                min_w = w[i];
        }
    if (min_w == 0xFFFFFFFFu)
        return 0;
    *min_width = min_w - 1;
    uint64_t limit = drift_keep_limit(*min_width);
    for (uint32_t i = 0; i < slots; i++) {
        if (!w[i] || w[i] - 1 > limit)
            continue;
        x[n] = x[i];
        yv[n] = yv[i];
        sg[n] = sg[i];
        n++;
    }
    return n;
}

uint32_t drift_residual_index(uint32_t j, uint32_t n, uint32_t keep)
{
    return n <= keep ? j : (uint32_t)((uint64_t)j * (n - 1) / (keep - 1));
}

int64_t drift_sub_len(uint64_t span, uint64_t one_s, uint32_t max)
{
    return (int64_t)(span / one_s + 1 > max ? (span / max + 1) : one_s);
}

const char *const stop_verdict_names[STOP_VERDICTS] = {"stood_still", "ran_on", "partly", "too_short"};

enum stop_verdict drift_stop_judge(int64_t advanced_ns, uint64_t u_ns, int64_t wall_ns, uint64_t u_wall_ns)
{
    uint64_t tol = u_ns + u_wall_ns + 10000000ull;
    uint64_t wall_abs = wall_ns < 0 ? (uint64_t)-wall_ns : (uint64_t)wall_ns;
    if (wall_abs <= 2 * tol)
        return STOP_TOO_SHORT;
    uint64_t adv_abs = advanced_ns < 0 ? (uint64_t)-advanced_ns : (uint64_t)advanced_ns;
    if (adv_abs <= tol)
        return STOP_STOOD_STILL;
    int64_t diff = advanced_ns - wall_ns;
    uint64_t diff_abs = diff < 0 ? (uint64_t)-diff : (uint64_t)diff;
    return diff_abs <= tol ? STOP_RAN_ON : STOP_PARTLY;
}

uint64_t cal_estimate_u_ppm(uint64_t spread_ppm, uint64_t ref_ticks_per_window, uint64_t edge_ppm)
{
    uint64_t q = ref_ticks_per_window ? (1000000 + ref_ticks_per_window - 1) / ref_ticks_per_window : 1000000;
    if (spread_ppm > 1000000000000ull || edge_ppm > 1000000000000ull)
        return ~0ull;
    return spread_ppm + q + edge_ppm;
}

bool cal_vs_drift_judge(uint64_t estimate_hz, uint64_t estimate_u_ppm, uint64_t measured_millihz, uint64_t measured_u_ppm,
                        struct cal_vs_drift *out)
{
    *out = (struct cal_vs_drift){0};
    if (!estimate_hz || !measured_millihz)
        return false;
    /* (estimate - measured) / measured, in ppm, rounded to nearest; in
       64 bits for rates up to 18 GHz (in mHz) */
    if (estimate_hz > 18000000000ull || measured_millihz > 18000000000000ull)
        return false;
    uint64_t e = estimate_hz * 1000, m = measured_millihz;
    uint64_t diff = e > m ? e - m : m - e;
    uint64_t ppm = diff / m * 1000000 + (diff % m * 1000000 + m / 2) / m;
    out->off_ppm = e >= m ? (int64_t)ppm : -(int64_t)ppm;
    uint64_t limit = CAL_CHECK_MAX_PPM;
    if (estimate_u_ppm && estimate_u_ppm < CAL_CHECK_MAX_PPM && measured_u_ppm < CAL_CHECK_MAX_PPM) {
        uint64_t l = estimate_u_ppm + 3 * measured_u_ppm + 1;
        limit = l < CAL_CHECK_MAX_PPM ? l : CAL_CHECK_MAX_PPM;
    }
    out->limit_ppm = limit;
    out->agree = ppm <= limit;
    return true;
}

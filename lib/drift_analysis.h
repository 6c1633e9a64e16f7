/* The drift experiment's pure analysis: each reading judged, discontinuities kept, cuts, narrow samples. */
#ifndef CLOCKBENCH_DRIFT_ANALYSIS_H
#define CLOCKBENCH_DRIFT_ANALYSIS_H

/* Each change of a counter's value is judged against the TSC time since
   its previous change (unwrap.h): a counter that advanced as the TSC allows
   is continuous; one that advanced less stood still while the TSC ran (a
   paused VM), one that advanced more jumped, one whose gap was longer than
   it can unwrap cannot tell. Each such event is a discontinuity: it is
   kept, and it starts a new segment. A step on the TSC's side shows in
   every reference but may be told by only one of them, so every series is
   cut at every series' events (drift_cuts). */

#include <stdbool.h>
#include <stdint.h>

#include "unwrap.h"
#include "xf.h"

#define DRIFT_EVENTS_KEPT 32 /* per counter; more are counted */
#define DRIFT_CUTS_MAX 64    /* cuts shared by every series */

enum drift_event_kind {
    EV_GAP, EV_STOOD_STILL, EV_JUMPED, EV_BACKWARD, EV_TOO_LONG, EV_TSC_BACK, EV_RESIDUAL_STEP, EV_KINDS
};
/* As the records name them (docs/output.md, "discontinuity"). */
extern const char *const drift_event_names[EV_KINDS];

struct drift_event {
    enum drift_event_kind kind;
    uint64_t at_tsc;        /* TSC ticks into the window */
    uint64_t tsc_ticks;     /* how far the TSC advanced across it */
    bool counter_known;
    int64_t counter_ticks;  /* how far the counter advanced (signed: back, or a residual step) */
};

/* One counter's readings as they come: the judge's state, its counts and events. */
struct drift_track {
    struct unwrap_params up;
    /* the last change of value, and the last read */
    uint64_t lc_value, lc_a, lc_b, lc_y;   /* the reference reading: the last narrow one */
    uint64_t cur_value, last_a, last_b, still_tsc; /* the last value seen, and when */
    uint64_t gap_from_mid, gap_from_y;     /* the last reading before a pending gap: its bracket's midpoint, its count */
    uint64_t narrow_w, limit_tsc;          /* narrowest bracket so far; how long a step can unwrap */
    bool in_stall, gap_pending;
    uint64_t y;              /* counter ticks since the window began, unwrapped */
    uint32_t seg;

    uint64_t reads, wraps, stalls, longest_stall_tsc, backward, largest_backward, gaps, tsc_back;
    uint64_t away_tsc;       /* time the loop was away (gaps) */
    uint32_t event_count;    /* may exceed DRIFT_EVENTS_KEPT: drift_track_event says which are kept */
    uint32_t kind_count[EV_KINDS]; /* every event by its kind, kept or not */
    struct drift_event events[DRIFT_EVENTS_KEPT];
};

/* The midpoint of a bracket [a, b], without overflow. */
uint64_t drift_mid(uint64_t a, uint64_t b);

/* How long a counter may stand still before it is a stall: 10 nominal
   ticks, and at least floor_tsc. */
uint64_t drift_stall_tsc(uint64_t tsc_hz, uint64_t counter_millihz, uint64_t floor_tsc);

/* The first reading, value v in the bracket [a, b]: the reference for the
   next; t->up must be set, the rest of *t zeroed. */
void drift_track_begin(struct drift_track *t, uint64_t v, uint64_t a, uint64_t b);

/* Judges one more reading v in [a, b] (start: the window's first TSC
   value). The loop was away when more than gap_tsc passed since the
   previous reading's end: a gap, measured from the reading just before it
   to the next change read in a bracket under half a gap wide (not from the
   last narrow reading, which a loaded host can leave far behind); a second
   gap before the first was told closes it at the reading between them. A
   counter unchanged for more than stall_tsc while the loop ran is in a
   stall (t->in_stall) until its value changes. A change is judged against
   the last narrow reading (a pause inside a bracket widens it and hides
   from that step, but not from the step that spans the wide bracket); any
   kind but a normal step is an event and starts a new segment (t->seg). */
void drift_track_read(struct drift_track *t, uint64_t v, uint64_t a, uint64_t b, uint64_t start, uint64_t gap_tsc,
                      uint64_t stall_tsc);

/* Counts every event and keeps DRIFT_EVENTS_KEPT, in time order: every one
   that cuts the fit (only kept events cut) before any gap, then the longest
   gaps; a full list gives up its shortest gap for a longer one or for an
   event of another kind. */
void drift_track_event(struct drift_track *t, enum drift_event_kind k, uint64_t at, uint64_t tsc_ticks, bool known,
                       int64_t counter_ticks);

/* One count of a series' events, in the words every output uses
   (docs/output.md, "discontinuity"): discontinuities, where a clock stood
   still, jumped or went back (a residual step too: only the TSC's side can
   make one); gaps, where the loop was away and every clock ran on (they
   split nothing); gaps too long for the counter to unwrap (it cannot tell
   how far it went: its series is cut there, but no clock misbehaved); and
   residual steps within their reads' brackets (the reads' timing may have
   moved, not a clock: within_bracket(ev) says which, from the kept events).
   The four add up to event_count. */
struct drift_counts {
    uint32_t discontinuities, gaps, too_long, within_bracket;
};
struct drift_counts drift_count_events(const struct drift_track *t, bool (*within_bracket)(const struct drift_event *ev,
                                                                                             const void *ctx),
                                       const void *ctx);

/* TSC times (ticks into the window), sorted, each once. */
struct drift_cuts {
    uint64_t at[DRIFT_CUTS_MAX];
    uint32_t count;
    bool overflowed;         /* more were asked for than DRIFT_CUTS_MAX: those were dropped */
};

void drift_cuts_add(struct drift_cuts *c, uint64_t at_tsc);

/* A cut at every kept event but a gap (where every clock ran on). */
void drift_cuts_from_events(struct drift_cuts *c, const struct drift_track *t);

/* The samples' own segments sg[], each split further at every cut:
   cut_sg[i] = sg[i] * (DRIFT_CUTS_MAX + 1) + (cuts at or before x[i]);
   x[] in time order. */
void drift_cuts_apply(const struct drift_cuts *c, const int64_t *x, const uint32_t *sg, uint32_t n, uint32_t *cut_sg);

/* Of `slots` slots (w[i] = bracket width + 1, 0 = empty), keeps those
   whose width is within twice the narrowest (and 4 ticks, for brackets of
   0-2 ticks), packing x, yv, sg to the front in order; returns how many.
   *filled counts the non-empty slots, *min_width is the narrowest width
   (left alone when every slot is empty). */
uint32_t drift_keep_narrow(int64_t *x, int64_t *yv, uint32_t *sg, const uint32_t *w, uint32_t slots, uint32_t *filled,
                           uint64_t *min_width);

/* The widest bracket drift_keep_narrow keeps, given the narrowest. */
uint64_t drift_keep_limit(uint64_t min_width);

/* How far a fitted rate can be moved by the reads drifting inside their
   brackets: each reading is placed at its bracket's middle, but the read
   itself may sit anywhere in it, and where it sits can move steadily across
   the window (an emulator's lock taken before the clock is read at first,
   after it later). A move of up to the widest kept bracket, limit_ticks
   (TSC ticks), from the window's start to its end tilts the slope by
   limit_ticks over the span; over segments, weighted as the fit weighs
   them. That is quant_one_tick (the quantisation term for one counter
   tick, relative: lib/uncertainty.h) scaled from one counter tick to
   limit_ticks * slope counter ticks. Relative; a bound, not a standard
   error: the statistical terms cannot see a steady move, which looks like a
   rate. */
struct xf drift_bracket_drift(struct xf quant_one_tick, uint64_t limit_ticks, struct xf slope);

/* Which of n samples is the j-th of `keep` spread evenly from the first to
   the last (all of them, in order, when n <= keep). */
uint32_t drift_residual_index(uint32_t j, uint32_t n, uint32_t keep);

/* The stability sub-windows' length: one second (one_s ticks), longer when
   a span of that many seconds would need more than max of them. */
int64_t drift_sub_len(uint64_t span, uint64_t one_s, uint32_t max);

/* A clock across a stop of the machine that lasted wall_ns (+-u_wall_ns)
   by the wall clock: it advanced advanced_ns (+-u_ns). It stood still when
   it advanced no more than the two uncertainties and 10 ms; it ran on (and
   so stepped by the stop, as the guest sees it) when it advanced the stop's
   length within that; partly between; too short to tell when the stop
   itself is within twice that of nothing. */
enum stop_verdict { STOP_STOOD_STILL, STOP_RAN_ON, STOP_PARTLY, STOP_TOO_SHORT, STOP_VERDICTS };
extern const char *const stop_verdict_names[STOP_VERDICTS];
enum stop_verdict drift_stop_judge(int64_t advanced_ns, uint64_t u_ns, int64_t wall_ns, uint64_t u_wall_ns);

/* The quick calibration's stated uncertainty (experiments/exp_calibrate.c),
   ppm: its kept windows' spread (the median lies inside it when nothing
   biased every window alike), plus one reference tick of a window, rounded
   up, plus edge_ppm (the widest half-brackets of a kept window's first and
   last reads: where in its bracket a value was read is not known); never 0. */
uint64_t cal_estimate_u_ppm(uint64_t spread_ppm, uint64_t ref_ticks_per_window, uint64_t edge_ppm);

/* The quick estimate (estimate_hz, +-estimate_u_ppm; 0 when it states none:
   a claim or an assumption) held against the drift's measured rate
   (measured_millihz, +-measured_u_ppm, a standard uncertainty). off_ppm is
   the estimate's distance from it; they disagree past limit_ppm: the
   estimate's uncertainty plus three of the measurement's, and never more
   than CAL_CHECK_MAX_PPM (1 %), whatever either states. False when there
   is nothing to compare (a rate of 0). */
#define CAL_CHECK_MAX_PPM 10000
struct cal_vs_drift {
    int64_t off_ppm;
    uint64_t limit_ppm;
    bool agree;
};
bool cal_vs_drift_judge(uint64_t estimate_hz, uint64_t estimate_u_ppm, uint64_t measured_millihz, uint64_t measured_u_ppm,
                        struct cal_vs_drift *out);

#endif

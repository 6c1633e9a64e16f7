/* Small formatting helpers shared by the experiments' reports. */
#ifndef CLOCKBENCH_REPORT_UTIL_H
#define CLOCKBENCH_REPORT_UTIL_H

#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/xf.h"

/* An xf as a decimal string with `decimals` digits. */
const char *xs(char buf[FMT_FIXED_CHARS], struct xf v, unsigned decimals);
/* A table cell in ns: one decimal while it fits in 8 characters. */
const char *ns_cell(char buf[FMT_FIXED_CHARS], struct xf ns);
/* (ratio - 1) in ppm, and a relative figure in ppm. */
struct xf ppm_of(struct xf ratio_minus_one);
/* The counter's nominal rate in Hz. */
struct xf nominal_hz(int counter);
/* Counter ticks to ns at its nominal rate. */
struct xf counter_ticks_ns(int counter, struct xf ticks);
void emit(struct record *r);
/* A note for people, said once as one sentence: printed "  Note: ..." (the
   console wraps it) and emitted as a `note` record carrying the whole text,
   so that a tool never joins it back from wrapped lines. */
void report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* record_fixed of an xf. */
void record_xf_fixed(struct record *r, const char *key, struct xf v, unsigned decimals);

#endif

/* Report helpers (see report_util.h). */
#include "report_util.h"

#include <stdarg.h>

#include "../lib/counters.h"
#include "console.h"

const char *xs(char buf[FMT_FIXED_CHARS], struct xf v, unsigned decimals)
{
    return fmt_fixed(buf, xf_to_fixed(v, decimals), decimals, decimals);
}

const char *ns_cell(char buf[FMT_FIXED_CHARS], struct xf ns)
{
    return xs(buf, ns, xf_cmp(ns, xf_from_u64(100000)) < 0 ? 1 : 0);
}

struct xf ppm_of(struct xf ratio_minus_one) { return xf_mul(ratio_minus_one, xf_from_u64(1000000)); }

struct xf nominal_hz(int counter) { return xf_div(xf_from_u64(counters[counter].nominal_millihz), xf_from_u64(1000)); }

struct xf counter_ticks_ns(int counter, struct xf ticks)
{
    return xf_div(xf_mul(ticks, xf_from_u64(1000000000ull)), nominal_hz(counter));
}

void emit(struct record *r) { console_emit_record(r); }

void report_note(const char *fmt, ...)
{
    char text[RECORD_MAX_CHARS / 2];
    va_list ap;
    va_start(ap, fmt);
    fmt_vformat(text, sizeof text, fmt, ap);
    va_end(ap);
    kprintf("  Note: %s\n", text);
    struct record r;
    record_begin(&r, "note");
    record_str(&r, "text", text);
    emit(&r);
}

void record_xf_fixed(struct record *r, const char *key, struct xf v, unsigned decimals)
{
    record_fixed(r, key, xf_to_fixed(v, decimals), decimals);
}

/* Check bookkeeping (see checks.h). */
#include "checks.h"

#include <stdarg.h>

#include "console.h"
#include "format.h"
#include "record.h"

static unsigned passed, failed, skipped;

static void check_line(const char *verdict, const char *name, const char *fmt, va_list ap)
{
    char detail[256];
    fmt_vformat(detail, sizeof detail, fmt, ap);
    kprintf("%s: %s%s%s\n", verdict, name, detail[0] ? ": " : "", detail);
    struct record r;
    record_begin(&r, "check");
    record_str(&r, "name", name);
    record_str(&r, "result", verdict);
    record_str(&r, "detail", detail);
    console_emit_record(&r);
}

#define CHECK_FN(fn, verdict, counter)                  \
    void fn(const char *name, const char *fmt, ...)     \
    {                                                   \
        va_list ap;                                     \
        va_start(ap, fmt);                              \
        check_line(verdict, name, fmt, ap);             \
        va_end(ap);                                     \
        counter++;                                      \
    }

CHECK_FN(check_pass, "PASS", passed)
CHECK_FN(check_fail, "FAIL", failed)
CHECK_FN(check_skip, "SKIP", skipped)

void checks_counts(unsigned *p, unsigned *f, unsigned *s)
{
    *p = passed;
    *f = failed;
    *s = skipped;
}

enum run_status checks_summary(void)
{
    enum run_status s = failed ? RUN_FAILED : passed ? RUN_PASSED : RUN_NOTHING_RAN;
    kprintf("SUMMARY: %u passed, %u failed, %u skipped\n", passed, failed, skipped);
    struct record r;
    record_begin(&r, "summary");
    record_u64(&r, "pass", passed);
    record_u64(&r, "fail", failed);
    record_u64(&r, "skip", skipped);
    record_str(&r, "status", run_status_name(s));
    console_emit_record(&r);
    return s;
}

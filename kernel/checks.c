/* Check bookkeeping (see checks.h). */
#include "checks.h"

#include "finish.h"

#include <stdarg.h>

#include "../lib/format.h"
#include "../lib/record.h"
#include "console.h"

static unsigned passed, failed, skipped;

/* The names of the checks that failed or were skipped, for the summary
   screen and its QR code; the first CHECKS_NAMED of each. */
static char named[2][CHECKS_NAMED][CHECK_NAME_CHARS];
static unsigned named_count[2];

static void remember(int list, const char *name)
{
    if (named_count[list] == CHECKS_NAMED)
        return;
    char *out = named[list][named_count[list]++];
    unsigned i = 0;
    for (; name[i] && i < CHECK_NAME_CHARS - 1; i++)
        out[i] = name[i];
    out[i] = '\0';
}

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

#define CHECK_FN(fn, verdict, counter, list)            \
    void fn(const char *name, const char *fmt, ...)     \
    {                                                   \
        va_list ap;                                     \
        va_start(ap, fmt);                              \
        check_line(verdict, name, fmt, ap);             \
        va_end(ap);                                     \
        counter++;                                      \
        if (list >= 0)                                  \
            remember(list, name);                       \
    }

CHECK_FN(check_pass, "PASS", passed, -1)
CHECK_FN(check_fail, "FAIL", failed, 0)
CHECK_FN(check_skip, "SKIP", skipped, 1)

unsigned checks_named(bool failures, const char *const **names)
{
    static const char *ptrs[2][CHECKS_NAMED];
    int list = failures ? 0 : 1;
    for (unsigned i = 0; i < named_count[list]; i++)
        ptrs[list][i] = named[list][i];
    *names = ptrs[list];
    return named_count[list];
}

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

/* Progress records (see progress.h). */
#include "progress.h"

#include "../lib/record.h"
#include "console.h"

void progress(const char *phase, unsigned percent, int64_t seconds_left)
{
    struct record r;
    record_begin(&r, "progress");
    record_str(&r, "phase", phase);
    record_u64(&r, "percent", percent > 100 ? 100 : percent);
    if (seconds_left < 0)
        record_null(&r, "seconds_left");
    else
        record_u64(&r, "seconds_left", (uint64_t)seconds_left);
    console_emit_record(&r);
}

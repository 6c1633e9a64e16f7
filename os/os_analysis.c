/* See os_analysis.h. */
#include "os_analysis.h"

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void os_sequence_analyse(uint64_t *v, size_t n, unsigned check_every, uint64_t *scratch, struct os_sequence *q)
{
    *q = (struct os_sequence){0};
    q->reads = n;
    size_t kept = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t a = v[i], b = v[i + 1];
        if (b < a) {
            q->backward++;
            if (a - b > q->largest_backward)
                q->largest_backward = a - b;
            continue;
        }
        if (check_every && i % check_every == check_every - 1)
            continue;
        if (b == a)
            q->zero_deltas++;
        v[kept++] = b - a; /* kept <= i: nothing unread is overwritten */
    }
    q->deltas = kept;
    stats_sort(v, kept, scratch);
    q->distinct = stats_histogram(v, kept, q->hist, OS_HIST_KEEP);
    q->hist_kept = q->distinct < OS_HIST_KEEP ? q->distinct : OS_HIST_KEEP;
    q->max_delta = kept ? v[kept - 1] : 0;
    for (size_t i = 0; i < kept; i++) {
        if (v[i] == 0 || (i > 0 && v[i] == v[i - 1]))
            continue;
        if (!q->min_step)
            q->min_step = v[i];
        q->step_gcd = gcd(q->step_gcd, v[i]);
    }
}

void os_sequence_analyse_rle(uint64_t *value, const uint64_t *count, size_t n, uint64_t *scratch, struct os_sequence *q)
{
    uint64_t reads = 0, zeros = 0;
    for (size_t i = 0; i < n; i++) {
        reads += count[i];
        zeros += count[i] ? count[i] - 1 : 0;
    }
    os_sequence_analyse(value, n, 0, scratch, q);
    q->reads = reads;
    q->zero_deltas = zeros;
    if (!zeros)
        return;
    q->deltas += zeros;
    /* the zero bin comes first: every other tabled delta is positive */
    size_t keep = q->hist_kept < OS_HIST_KEEP ? q->hist_kept : OS_HIST_KEEP - 1;
    for (size_t i = keep; i > 0; i--)
        q->hist[i] = q->hist[i - 1];
    q->hist[0] = (struct hist_bin){0, zeros};
    q->hist_kept = keep + 1;
    q->distinct++;
}

static const char *find(const char *s, const char *what)
{
    for (; *s; s++) {
        const char *a = s, *b = what;
        while (*b && *a == *b)
            a++, b++;
        if (!*b)
            return s;
    }
    return 0;
}

/* "2599.998" -> 2599998 (kHz); *end after the number. 0 when none. */
static uint64_t mhz_to_khz(const char *s, const char **end)
{
    uint64_t whole = 0, frac = 0;
    unsigned digits = 0, fdigits = 0;
    while (*s >= '0' && *s <= '9' && digits < 9)
        whole = whole * 10 + (uint64_t)(*s++ - '0'), digits++;
    if (!digits)
        return 0;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            if (fdigits < 3)
                frac = frac * 10 + (uint64_t)(*s - '0'), fdigits++;
    while (fdigits < 3)
        frac *= 10, fdigits++;
    *end = s;
    return whole * 1000 + frac;
}

static void copy_rest(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && src[i] != '\n' && i + 1 < size; i++)
        dst[i] = src[i];
    dst[i] = 0;
}

bool os_claim_parse(const char *line, struct os_claim *c)
{
    *c = (struct os_claim){0};
    const char *p, *end;
    if ((p = find(line, "tsc: Refined TSC clocksource calibration: "))) {
        c->what = "tsc refined";
        c->khz = mhz_to_khz(p + 42, &end);
        return c->khz != 0;
    }
    if ((p = find(line, "tsc: Detected "))) {
        c->khz = mhz_to_khz(p + 14, &end);
        if (!c->khz)
            return false;
        c->what = "tsc detected";
        /* "... MHz processor" (calibrated) or "... MHz TSC" (from CPUID or MSRs) */
        copy_rest(c->detail, sizeof c->detail, find(end, " MHz ") == end ? end + 5 : end);
        return true;
    }
    if ((p = find(line, "tsc: Fast TSC calibration "))) {
        c->what = "tsc calibrated by";
        copy_rest(c->detail, sizeof c->detail, p + 26);
        return true;
    }
    if ((p = find(line, "tsc: Marking TSC unstable due to "))) {
        c->what = "tsc unstable";
        copy_rest(c->detail, sizeof c->detail, p + 33);
        return true;
    }
    /* the clocksource watchdog: "clocksource: timekeeping watchdog on CPU1:
       Marking clocksource 'tsc' as unstable because the skew is too large:" */
    if ((p = find(line, "Marking clocksource '"))) {
        c->what = "clocksource unstable";
        copy_rest(c->detail, sizeof c->detail, p + 21);
        for (char *q = c->detail; *q; q++)
            if (*q == '\'')
                *q = 0;
        return c->detail[0] != 0;
    }
    /* arch/x86/kernel/tsc.c, check_tsc_sync_source and kin */
    if ((p = find(line, "TSC found unstable after boot"))) {
        c->what = "tsc unstable";
        copy_rest(c->detail, sizeof c->detail, "found unstable after boot");
        return true;
    }
    if ((p = find(line, "clocksource: Switched to clocksource "))) {
        c->what = "clocksource switched";
        copy_rest(c->detail, sizeof c->detail, p + 37);
        return true;
    }
    return false;
}

/* The RTC's calendar decoded and the TSC fitted against its seconds (see
   rtc_fit.h). Pure. */
#include "rtc_fit.h"

#include "fit.h"

#define RTC_B_DM_BINARY (1u << 2)
#define RTC_B_24H (1u << 1)
#define RTC_HOUR_PM (1u << 7) /* 12 h mode */

/* A field in the register's data mode; false when BCD digits are not BCD. */
static bool field(uint8_t v, bool binary, uint8_t *out)
{
    if (binary) {
        *out = v;
        return true;
    }
    if ((v & 0x0F) > 9 || (v >> 4) > 9)
        return false;
    *out = (uint8_t)((v >> 4) * 10 + (v & 0x0F));
    return true;
}

bool rtc_hour_ignores_mode(const struct rtc_raw *raw)
{
    uint8_t h;
    return !(raw->reg_b & RTC_B_24H) && !(raw->hour & RTC_HOUR_PM) && field(raw->hour, raw->reg_b & RTC_B_DM_BINARY, &h) &&
           (h == 0 || (h >= 13 && h <= 23));
}

static bool decode_hour(const struct rtc_raw *raw, uint8_t *hour)
{
    bool binary = raw->reg_b & RTC_B_DM_BINARY;
    if (raw->reg_b & RTC_B_24H)
        return field(raw->hour, binary, hour) && *hour < 24;
    /* Register B says 12-hour, but an hour of 0 or 13-23 with no PM bit can
       only be 24-hour time: a device that ignores the mode bit (Cloud
       Hypervisor v53 leaves B at 0 and counts 0-23). Linux reads the hour as
       24-hour whatever B says (rtc-mc146818-lib.c); so does this, and the
       report names the contradiction (rtc_hour_ignores_mode). Hours 1-12
       stay 12-hour: 12 is midnight there, which such a device means as noon. */
    if (rtc_hour_ignores_mode(raw))
        return field(raw->hour, binary, hour);
    uint8_t h;
    if (!field(raw->hour & 0x7F, binary, &h) || h < 1 || h > 12)
        return false;
    /* 12 AM is midnight, 12 PM noon */
    *hour = (uint8_t)(h % 12 + ((raw->hour & RTC_HOUR_PM) ? 12 : 0));
    return true;
}

bool rtc_decode_clock(const struct rtc_raw *raw, uint32_t *seconds_of_day)
{
    bool binary = raw->reg_b & RTC_B_DM_BINARY;
    uint8_t s, m, h;
    if (!field(raw->sec, binary, &s) || s > 59 || !field(raw->min, binary, &m) || m > 59 || !decode_hour(raw, &h))
        return false;
    *seconds_of_day = (uint32_t)h * 3600 + (uint32_t)m * 60 + s;
    return true;
}

bool rtc_decode(const struct rtc_raw *raw, struct rtc_datetime *out)
{
    bool binary = raw->reg_b & RTC_B_DM_BINARY;
    uint8_t y = 0, mo = 0, d = 0;
    uint32_t sod = 0;
    bool ok = rtc_decode_clock(raw, &sod);
    ok = field(raw->year, binary, &y) && y <= 99 && ok;
    ok = field(raw->month, binary, &mo) && mo >= 1 && mo <= 12 && ok;
    ok = field(raw->day, binary, &d) && d >= 1 && d <= 31 && ok;
    *out = (struct rtc_datetime){.year = 2000u + y, .month = mo, .day = d,
                                 .hour = (uint8_t)(sod / 3600), .min = (uint8_t)(sod / 60 % 60), .sec = (uint8_t)(sod % 60)};
    return ok;
}

static uint64_t mid(const struct rtc_edge *e) { return rtc_tsc_mid(e->a, e->b); }

uint64_t rtc_period_tsc(const struct rtc_edge *p, const struct rtc_edge *q, uint64_t tsc_hz_estimate)
{
    uint32_t secs = rtc_seconds_between(p->seconds_of_day, q->seconds_of_day);
    uint64_t pm = mid(p), qm = mid(q), est = tsc_hz_estimate;
    uint64_t per = secs > 0 && qm > pm ? (qm - pm) / secs : 0;
    return per > est - est / 10 && per < est + est / 10 ? per : est;
}

void rtc_min_steps(const struct rtc_edge *e, uint32_t n, uint32_t *min_step_s, uint64_t *min_step_tsc)
{
    *min_step_s = 0;
    *min_step_tsc = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint32_t s = rtc_seconds_between(e[i - 1].seconds_of_day, e[i].seconds_of_day);
        uint64_t t = mid(&e[i]) - mid(&e[i - 1]);
        if (s && (!*min_step_s || s < *min_step_s))
            *min_step_s = s;
        if (s == 1 && (!*min_step_tsc || t < *min_step_tsc))
            *min_step_tsc = t;
    }
}

/* Whether the RTC's count across edges i-1 -> i agrees with the TSC time. */
static bool continuous(const struct rtc_edge *e, uint32_t i, uint64_t hz)
{
    uint32_t count = rtc_seconds_between(e[i - 1].seconds_of_day, e[i].seconds_of_day);
    uint64_t dt = mid(&e[i]) - mid(&e[i - 1]);
    if (count == 0 || mid(&e[i]) < mid(&e[i - 1]))
        return false;
    /* |dt / hz - count| < 1/2, in integers: |2 dt - 2 count hz| < hz */
    unsigned __int128 two_dt = (unsigned __int128)dt * 2, two_c = (unsigned __int128)count * hz * 2;
    unsigned __int128 diff = two_dt > two_c ? two_dt - two_c : two_c - two_dt;
    return diff < hz;
}

void rtc_fit_edges(const struct rtc_edge *e, uint32_t n, uint64_t tsc_hz_estimate, struct rtc_fit *out)
{
    *out = (struct rtc_fit){.edges = n};
    if (n < 2 || tsc_hz_estimate == 0)
        return;
    /* the longest run without a discontinuity, by RTC seconds spanned */
    uint32_t best_from = 0, best_to = 0, from = 0;
    uint64_t best_span = 0, span = 0;
    for (uint32_t i = 1; i <= n; i++) {
        if (i < n && continuous(e, i, tsc_hz_estimate)) {
            span += rtc_seconds_between(e[i - 1].seconds_of_day, e[i].seconds_of_day);
            continue;
        }
        if (i < n) {
            out->discontinuities++;
            /* signed, within half a day: a step back of an hour reads as
               nearly a day forward modulo a day */
            int64_t count = (int64_t)rtc_seconds_between(e[i - 1].seconds_of_day, e[i].seconds_of_day);
            if (count > (int64_t)RTC_DAY_S / 2)
                count -= RTC_DAY_S;
            uint64_t dt = mid(&e[i]) - mid(&e[i - 1]);
            /* the RTC counted fewer seconds than the TSC saw pass, by half a second or more: it went back or stood still */
            if (count <= 0 || (unsigned __int128)count * tsc_hz_estimate + tsc_hz_estimate / 2 <= dt)
                out->backward++;
        }
        if (span > best_span) {
            best_span = span;
            best_from = from;
            best_to = i - 1;
        }
        from = i;
        span = 0;
    }
    if (best_span == 0)
        return;
    uint32_t used = best_to - best_from + 1;
    uint64_t x0 = mid(&e[best_from]);
    uint64_t narrowest = ~0ull;
    for (uint32_t i = best_from; i <= best_to; i++)
        if (e[i].b - e[i].a < narrowest)
            narrowest = e[i].b - e[i].a;
    /* An edge read while the CPU was away has a wide bracket and says
       little: kept are those within 4 times the narrowest, and 2 us. */
    uint64_t wide_limit = 4 * narrowest + tsc_hz_estimate / 500000;
    /* x: RTC seconds since the run's first edge (exact); y: TSC ticks at
       the bracket's middle, where the timing error lies; w: the bracket's
       width. More edges than the buffers hold: every k-th, and the last. */
    static int64_t x[RTC_FIT_MAX], y[RTC_FIT_MAX];
    static uint64_t w[RTC_FIT_MAX];
    uint32_t k = used <= RTC_FIT_MAX ? 1 : (used - 1 + RTC_FIT_MAX - 3) / (RTC_FIT_MAX - 2), m = 0;
    int64_t sec = 0;
    for (uint32_t i = best_from; i <= best_to; i++) {
        if (i > best_from)
            sec += rtc_seconds_between(e[i - 1].seconds_of_day, e[i].seconds_of_day);
        if (e[i].b - e[i].a > wide_limit) {
            out->wide++;
            continue;
        }
        if (((i - best_from) % k == 0 || i == best_to) && m < RTC_FIT_MAX) {
            x[m] = sec;
            y[m] = (int64_t)(mid(&e[i]) - x0);
            w[m] = e[i].b - e[i].a;
            m++;
        }
    }
    struct line_fit f = {0};
    if (m >= 4 && fit_line(x, y, m, &f)) {
        /* An edge far off the line, beyond its bracket (QEMU holds UIP until
           its update timer runs, late, while UF is clear: the first update
           after boot): left out when its residual exceeds 5 times the
           residuals' robust spread (1.4826 x their median absolute value),
           at least the narrowest bracket and 1 us. */
        static int64_t r[RTC_FIT_MAX], sorted[RTC_FIT_MAX];
        for (uint32_t i = 0; i < m; i++) {
            struct xf line = xf_add(f.intercept, xf_mul(f.slope, xf_from_i64(x[i])));
            int64_t v = xf_to_fixed(xf_sub(xf_from_i64(y[i]), line), 0);
            r[i] = v < 0 ? -v : v;
            uint32_t j = i;
            while (j > 0 && sorted[j - 1] > r[i]) {
                sorted[j] = sorted[j - 1];
                j--;
            }
            sorted[j] = r[i];
        }
        int64_t spread = sorted[m / 2] * 14826 / 10000;
        int64_t floor = (int64_t)(narrowest > tsc_hz_estimate / 1000000 ? narrowest : tsc_hz_estimate / 1000000);
        int64_t limit = 5 * (spread > floor ? spread : floor);
        uint32_t kept = 0;
        for (uint32_t i = 0; i < m; i++) {
            if (r[i] > limit) {
                out->outliers++;
                continue;
            }
            x[kept] = x[i];
            y[kept] = y[i];
            w[kept] = w[i];
            kept++;
        }
        m = kept;
    }
    if (m < 2 || x[m - 1] == x[0])
        return;
    out->used = m;
    out->span_s = (uint32_t)(x[m - 1] - x[0]);
    out->widest_tsc = 0;
    for (uint32_t i = 0; i < m; i++)
        if (w[i] > out->widest_tsc)
            out->widest_tsc = w[i];
    struct xf slope;
    if (m == 2) {
        slope = xf_div(xf_from_i64(y[1] - y[0]), xf_from_i64(x[1] - x[0]));
        out->stderr_rel = xf_from_u64(0);
        out->resid_rms_tsc = xf_from_u64(0);
    } else {
        if (!fit_line(x, y, m, &f))
            return;
        slope = f.slope;
        out->stderr_rel = xf_div(f.slope_stderr, f.slope);
        out->resid_rms_tsc = f.resid_rms;
    }
    /* Each edge may sit anywhere in its bracket. The slope is sum c_i y_i
       with c_i = (x_i - mean x) / Sxx, so the most the brackets can move it
       is sum |c_i| w_i / 2: a bound, exact in integers (times m on both
       sides of the fraction). */
    __int128 sx = 0, sxx = 0;
    for (uint32_t i = 0; i < m; i++) {
        sx += x[i];
        sxx += (__int128)x[i] * x[i];
    }
    __int128 num = 0, den = (__int128)m * sxx - sx * sx;
    for (uint32_t i = 0; i < m; i++) {
        __int128 d = (__int128)m * x[i] - sx;
        num += (d < 0 ? -d : d) * (__int128)w[i];
    }
    out->bracket_rel = xf_div(xf_div(xf_from_i128(num), xf_mul(xf_from_u64(2), xf_from_i128(den))), slope);
    out->fitted = true;
    out->tsc_per_s = slope;
    out->uncertainty_rel = xf_sqrt(xf_add(xf_mul(out->stderr_rel, out->stderr_rel), xf_mul(out->bracket_rel, out->bracket_rel)));
}

static struct xf ppm(struct xf ratio_minus_one) { return xf_mul(ratio_minus_one, xf_from_u64(1000000)); }
static struct xf quadrature(struct xf a, struct xf b) { return xf_sqrt(xf_add(xf_mul(a, a), xf_mul(b, b))); }

struct rtc_vs rtc_tsc_vs(struct xf tsc_per_rtc_s, struct xf u_fit_ppm, struct xf tsc_hz, struct xf u_tsc_ppm, struct xf *ratio)
{
    *ratio = xf_div(tsc_per_rtc_s, tsc_hz);
    return (struct rtc_vs){ppm(xf_sub(*ratio, xf_from_u64(1))), quadrature(u_fit_ppm, u_tsc_ppm)};
}

struct rtc_vs rtc_counter_vs(struct xf ppm_ref, struct xf u_ref, struct xf ratio, struct xf u_fit_ppm)
{
    struct xf one = xf_from_u64(1);
    struct xf rate = xf_mul(xf_add(one, xf_div(ppm_ref, xf_from_u64(1000000))), ratio);
    return (struct rtc_vs){ppm(xf_sub(rate, one)), quadrature(u_fit_ppm, u_ref)};
}

bool rtc_agrees(struct rtc_vs v, uint32_t tolerance_ppm)
{
    struct xf limit = xf_add(xf_from_u64(tolerance_ppm), xf_mul(xf_from_u64(3), v.u_ppm));
    return xf_cmp(xf_abs(v.ppm), limit) <= 0;
}

bool rtc_jump_across(const struct rtc_edge *e, uint32_t n, uint64_t at_tsc, struct xf tsc_per_s, struct xf u_rel,
                     struct xf rms_tsc, struct rtc_jump *out)
{
    *out = (struct rtc_jump){0};
    if (xf_cmp(tsc_per_s, xf_from_u64(0)) <= 0)
        return false;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t p = mid(&e[i - 1]), q = mid(&e[i]);
        if (p > at_tsc || q < at_tsc || q < p)
            continue;
        struct xf ns = xf_from_u64(1000000000ull);
        /* the edge after it, or the next when that one follows on: QEMU's
           first update after the VM resumes can end late (its update
           timer runs late, as after boot) */
        uint32_t j = i;
        if (i + 1 < n && continuous(e, i + 1, (uint64_t)xf_to_fixed(tsc_per_s, 0)))
            j = i + 1;
        q = mid(&e[j]);
        uint32_t count = rtc_seconds_between(e[i - 1].seconds_of_day, e[j].seconds_of_day);
        struct xf tsc_ns = xf_div(xf_mul(xf_from_u64(q - p), ns), tsc_per_s);
        struct xf half = xf_from_u64((e[i - 1].b - e[i - 1].a) / 2 + (e[j].b - e[j].a) / 2 + 1);
        struct xf timing = xf_div(xf_mul(xf_add(half, xf_mul(xf_from_u64(2), rms_tsc)), ns), tsc_per_s);
        *out = (struct rtc_jump){.after = j, .count_s = count, .from_tsc = p, .to_tsc = q,
                                 .step_ns = xf_sub(xf_mul(xf_from_u64(count), ns), tsc_ns),
                                 .u_ns = xf_add(timing, xf_mul(tsc_ns, xf_abs(u_rel)))};
        return true;
    }
    return false;
}

uint64_t rtc_largest_discontinuity(const struct rtc_edge *e, uint32_t n, uint64_t tsc_hz_estimate)
{
    uint64_t at = 0;
    unsigned __int128 worst = 0;
    for (uint32_t i = 1; i < n; i++) {
        if (continuous(e, i, tsc_hz_estimate))
            continue;
        uint32_t count = rtc_seconds_between(e[i - 1].seconds_of_day, e[i].seconds_of_day);
        uint64_t p = mid(&e[i - 1]), q = mid(&e[i]);
        unsigned __int128 c = (unsigned __int128)count * tsc_hz_estimate, dt = q > p ? q - p : 0;
        unsigned __int128 d = c > dt ? c - dt : dt - c;
        if (d >= worst) {
            worst = d;
            at = rtc_tsc_mid(p, q);
        }
    }
    return at;
}

bool rtc_largest_jump(const struct rtc_edge *e, uint32_t n, uint64_t tsc_hz_estimate, struct xf tsc_per_s, struct xf u_rel,
                      struct xf rms_tsc, struct rtc_jump *out, uint64_t *at_tsc)
{
    bool found = false;
    struct rtc_jump j;
    for (uint32_t i = 1; i < n; i++) {
        if (continuous(e, i, tsc_hz_estimate) || mid(&e[i]) < mid(&e[i - 1]))
            continue;
        uint64_t at = rtc_tsc_mid(mid(&e[i - 1]), mid(&e[i]));
        if (!rtc_jump_across(e, n, at, tsc_per_s, u_rel, rms_tsc, &j))
            continue;
        if (!found || xf_cmp(xf_abs(j.step_ns), xf_abs(out->step_ns)) > 0) {
            *out = j;
            *at_tsc = at;
            found = true;
        }
    }
    return found;
}

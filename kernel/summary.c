/* Summary screen and QR payload (see summary.h; the payload's format is in
   docs/output.md, "QR payload"). */
#include "summary.h"

#include <stdarg.h>

#include "../drivers/fbcon.h"

#include "checks.h"
#include "cmdline.h"
#include "console.h"
#include "counters.h"
#include "cpuinfo.h"
#include "exp_cpus.h"
#include "format.h"
#include "results.h"
#include "qr.h"
#include "record.h"

#ifndef CLOCKBENCH_VERSION
#define CLOCKBENCH_VERSION "unknown"
#endif

#define PAYLOAD_MAX 700
#define QR_SCALE 4
#define QR_QUIET 4
#define QR_MARGIN_PX 16

static char payload[PAYLOAD_MAX];
static unsigned payload_len;

__attribute__((format(printf, 1, 2))) static void add(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vformat(payload + payload_len, sizeof payload - payload_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        payload_len += (unsigned)n < sizeof payload - payload_len ? (unsigned)n : (unsigned)(sizeof payload - payload_len - 1);
}

/* Values are kept free of the separators ';' and ',' */
static const char *clean(const char *s)
{
    static char out[64];
    unsigned i = 0;
    for (; s[i] && i < sizeof out - 1; i++)
        out[i] = (s[i] == ';' || s[i] == ',' || s[i] < 0x20 || s[i] > 0x7E) ? ' ' : s[i];
    out[i] = '\0';
    return out;
}

static void build_payload(enum run_status status, unsigned p, unsigned f, unsigned s)
{
    const struct cpu_info *ci = &boot_cpu.info;
    char hz[FMT_FIXED_CHARS];
    payload_len = 0;
    add("CB1;b=%s", clean(CLOCKBENCH_VERSION));
    add(";cpu=%s", clean(ci->vendor));
    add(" %s", clean(ci->brand));
    add(";fms=%u.%u.%u;hv=%s", ci->family, ci->model, ci->stepping, ci->hypervisor ? clean(ci->hv_vendor) : "-");
    add(";prof=%s;tsc_hz=%s;tsc_src=%s", results.profile ? results.profile->name : "-",
        fmt_fixed(hz, xf_to_fixed(results.tsc_hz, 0), 0, 0),
        results.tsc_measured ? counters[results.reference].name : "nominal");
    for (int i = 0; i < COUNTER_COUNT; i++) {
        const struct verdict_row *v = &results.verdict[i];
        if (!v->measured) {
            /* present but not measured (its experiments not chosen): "-" */
            add(";c=%s,-,-,-,%s", counters[i].name, v->present ? "-" : "absent");
            continue;
        }
        add(";c=%s,", counters[i].name);
        if (v->read[0] == '-')
            add("-,");
        else
            add("%lld,", (long long)v->read_ns_x10);
        if (v->res[0] == '-')
            add("-,");
        else
            add("%lld,", (long long)v->res_ns_x10);
        if (v->has_ppm)
            add("%lld", (long long)v->ppm_x100);
        else
            add("-");
        add(",%s", v->mono);
    }
    /* smp=running,enabled,sync,worst_ns,warps: sync "yes", "NO" or "-" (not compared) */
    const struct cpus_verdict *cv = &cpus_verdict;
    if (cv->ran && cv->compared)
        add(";smp=%u,%u,%s,%lld,%llu", cv->cpus, cv->listed, cv->synchronised ? "yes" : "NO", (long long)cv->worst_ns,
            (unsigned long long)cv->warps);
    else if (cv->ran)
        add(";smp=%u,%u,-,-,-", cv->cpus, cv->listed);
    add(";sum=%u,%u,%u;st=%s", p, f, s, run_status_name(status));
}

void summary_screen(enum run_status status)
{
    unsigned p, f, s;
    checks_counts(&p, &f, &s);
    build_payload(status, p, f, s);
    static struct qr_code qr;
    bool have_qr = qr_encode((const uint8_t *)payload, payload_len, QR_ECC_M, &qr) ||
                   qr_encode((const uint8_t *)payload, payload_len, QR_ECC_L, &qr);
    struct record r;
    record_begin(&r, "qr");
    record_str(&r, "payload", payload);
    record_u64(&r, "version", have_qr ? (uint64_t)qr.version : 0);
    console_emit_record(&r);

    if (cmdline_get(&boot_cmdline, "no_summary"))
        return;
    const struct cpu_info *ci = &boot_cpu.info;
    char a[FMT_FIXED_CHARS];
    console_screen_clear();
    screen_printf("clockbench %s: summary\n\n", CLOCKBENCH_VERSION);
    screen_printf("CPU:        %s %s\n", ci->vendor, ci->brand);
    screen_printf("Hypervisor: %s\n", ci->hypervisor ? ci->hv_vendor : "none reported");
    screen_printf("Profile:    %s\n", results.profile ? results.profile->name : "-");
    screen_printf("TSC:        %s MHz, %s\n\n", fmt_fixed(a, xf_to_fixed(results.tsc_hz, 3), 9, 3), results.tsc_hz_source);
    screen_printf("  %-8s %11s %11s %16s %9s\n", "counter", "read p50", "resolution", "freq error", "monotonic");
    for (int i = 0; i < COUNTER_COUNT; i++) {
        const struct verdict_row *v = &results.verdict[i];
        if (v->measured)
            screen_printf("  %-8s %8s ns %8s ns %16s %9s\n", counters[i].name, v->read, v->res, v->freq, v->mono);
        else
            screen_printf("  %-8s %s\n", counters[i].name, v->present ? "not measured" : "absent");
        if (v->advice)
            screen_printf("           -> %.66s\n", v->advice);
    }
    if (cpus_verdict.ran)
        screen_printf("\nCPUs:       %.66s\n", cpus_verdict.line);
    screen_printf("\nSUMMARY: %u passed, %u failed, %u skipped\n", p, f, s);
    if (have_qr && console_screen_is_framebuffer()) {
        fbcon_draw_modules(&qr.modules[0][0], qr.size, QR_MAX_SIZE, -QR_MARGIN_PX, QR_MARGIN_PX, QR_SCALE, QR_QUIET);
        screen_printf("The QR code carries these results: `clockbench decode` reads it back.\n");
    } else if (have_qr) {
        screen_printf("(A QR code of these results needs a framebuffer screen; the serial\n"
                      "port carries it as the qr record.)\n");
    }
    console_flush();
}

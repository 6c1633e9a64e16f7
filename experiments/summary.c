/* Summary screen, QR payload and the final screen's keys (see summary.h;
   the payload's format is in docs/output.md, "QR payload"). */
#include "summary.h"

#include <stdarg.h>

#include "../drivers/fbcon.h"
#include "../drivers/keyboard.h"
#include "../drivers/vga_text.h"

#include "../drivers/cpu.h"
#include "../drivers/cpuinfo.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/finish.h"
#include "../kernel/results.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/format.h"
#include "../lib/qr.h"
#include "../lib/record.h"
#include "../lib/string.h"

#ifndef CLOCKBENCH_VERSION
#define CLOCKBENCH_VERSION "unknown"
#endif

#define PAYLOAD_MAX 700
#define QR_SCALE 4
#define QR_QUIET 4
#define QR_MARGIN_PX 16
/* On an 80x25 text screen a character holds two modules, one above the
   other: 25 rows are 50 modules, so version 7 (45) with a quiet zone of 2
   is the largest code that fits. Its byte capacity at level L: */
#define QR_TEXT_QUIET 2
#define QR_TEXT_MAX_VERSION 7
#define QR_TEXT_CAPACITY 154 /* ISO/IEC 18004, Table 7: version 7-L */
#define QR_TEXT_MIN_TEXT 28  /* columns left of the code for the summary */

/* The payload's fields, in the order they are written. Each is built whole;
   when the payload must be shorter (a text screen's code), CUTS says what
   goes first: a field is left out, or a list (counters, check names) loses
   entries from its end down to a floor, and then, at a later cut, more. */
enum field { F_B, F_CPU, F_FMS, F_HV, F_SB, F_PROF, F_TSC_HZ, F_TSC_SRC, F_C, F_SMP, F_SUM, F_ST, F_FAIL, F_SKIP, F_COUNT };
static const struct {
    enum field field;
    unsigned floor; /* entries a list keeps at this cut */
} CUTS[] = {
    {F_CPU, 0}, {F_FMS, 0}, {F_SB, 0}, {F_SKIP, 0}, {F_SMP, 0},  {F_HV, 0},   {F_B, 0},   {F_PROF, 0},
    {F_TSC_SRC, 0}, {F_TSC_HZ, 0}, {F_C, 2}, {F_FAIL, 1}, {F_C, 0}, {F_FAIL, 0},
};

#define FIELD_MAX 320
static char fields[F_COUNT][FIELD_MAX];
static unsigned field_len[F_COUNT];
static bool field_on[F_COUNT];

static char payload[PAYLOAD_MAX];
static unsigned payload_len;
static unsigned counter_end[COUNTER_COUNT]; /* F_C's length after each counter carried */
static unsigned counter_total;               /* counters the payload carries before any cut */
static unsigned kept[F_COUNT];             /* entries a list field holds */

__attribute__((format(printf, 2, 3))) static void add(enum field f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    unsigned room = sizeof fields[f] - field_len[f];
    int n = fmt_vformat(fields[f] + field_len[f], room, fmt, ap);
    va_end(ap);
    if (n > 0)
        field_len[f] += (unsigned)n < room ? (unsigned)n : room - 1;
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

/* fail= or skip=: the first keep names, then +N for the rest (N counts
   every such check, named or not). */
static void build_list(enum field f, const char *key, bool failures, unsigned total, unsigned keep)
{
    const char *const *names;
    unsigned n = checks_named(failures, &names);
    field_len[f] = 0;
    fields[f][0] = '\0';
    if (total == 0)
        return;
    if (keep > n)
        keep = n;
    add(f, ";%s=", key);
    for (unsigned i = 0; i < keep; i++) {
        const char *name = clean(names[i]);
        if (field_len[f] + 1 + strlen(name) + 12 > FIELD_MAX) { /* room left for ",+N" */
            keep = i;
            break;
        }
        add(f, "%s%s", i ? "," : "", name);
    }
    if (keep < total)
        add(f, "%s+%u", keep ? "," : "", total - keep);
}

static void build_fields(enum run_status status, unsigned p, unsigned f, unsigned s)
{
    const struct cpu_info *ci = &boot_cpu.info;
    char hz[FMT_FIXED_CHARS];
    for (int i = 0; i < F_COUNT; i++) {
        field_len[i] = 0;
        fields[i][0] = '\0';
        field_on[i] = true;
    }
    add(F_B, ";b=%s", clean(CLOCKBENCH_VERSION));
    add(F_CPU, ";cpu=%s", clean(ci->vendor));
    add(F_CPU, " %s", clean(ci->brand));
    add(F_FMS, ";fms=%u.%u.%u", ci->family, ci->model, ci->stepping);
    add(F_HV, ";hv=%s", ci->hypervisor ? clean(ci->hv_vendor) : "-");
    /* sb=on|off, or - when unknown (not booted through the EFI entry) */
    add(F_SB, ";sb=%s", results.secure_boot && strcmp(results.secure_boot, "unknown") ? results.secure_boot : "-");
    add(F_PROF, ";prof=%s", results.profile ? results.profile->name : "-");
    add(F_TSC_HZ, ";tsc_hz=%s", fmt_fixed(hz, xf_to_fixed(results.tsc_hz, 0), 0, 0));
    add(F_TSC_SRC, ";tsc_src=%s", results.tsc_measured ? counters[results.reference].name : "nominal");
    counter_total = 0;
    for (int i = 0; i < COUNTER_COUNT; i++) {
        const struct verdict_row *v = &results.verdict[i];
        /* the counters every PC has are always carried; the APIC timer and
           the paravirtual clocks only when present */
        if (i > COUNTER_PIT && !counters[i].present)
            continue;
        if (!v->measured) {
            /* present but not measured (its experiments not chosen): "-" */
            add(F_C, ";c=%s,-,-,-,%s", counters[i].name, v->present ? "-" : "absent");
            counter_end[counter_total++] = field_len[F_C];
            continue;
        }
        add(F_C, ";c=%s,", counters[i].name);
        if (v->read[0] == '-')
            add(F_C, "-,");
        else
            add(F_C, "%lld,", (long long)v->read_ns_x10);
        if (v->res[0] == '-')
            add(F_C, "-,");
        else
            add(F_C, "%lld,", (long long)v->res_ns_x10);
        if (v->has_ppm)
            add(F_C, "%lld", (long long)v->ppm_x100);
        else
            add(F_C, "-");
        add(F_C, ",%s", v->mono);
        counter_end[counter_total++] = field_len[F_C];
    }
    /* smp=running,enabled,sync,worst_ns,warps: sync "yes", "NO" or "-" (not compared) */
    const struct cpus_verdict *cv = &results.cpus;
    if (cv->ran && cv->compared)
        add(F_SMP, ";smp=%u,%u,%s,%lld,%llu", cv->cpus, cv->listed, cv->synchronised ? "yes" : "NO", (long long)cv->worst_ns,
            (unsigned long long)cv->warps);
    else if (cv->ran)
        add(F_SMP, ";smp=%u,%u,-,-,-", cv->cpus, cv->listed);
    add(F_SUM, ";sum=%u,%u,%u", p, f, s);
    add(F_ST, ";st=%s", run_status_name(status));
    build_list(F_FAIL, "fail", true, f, f);
    build_list(F_SKIP, "skip", false, s, s);
    kept[F_C] = counter_total;
    kept[F_FAIL] = f;
    kept[F_SKIP] = s;
}

static unsigned total_len(void)
{
    unsigned n = 3; /* CB1 */
    for (int i = 0; i < F_COUNT; i++)
        if (field_on[i])
            n += field_len[i];
    return n;
}

/* Keeps the first keep entries of a list field. */
static void shrink(enum field which, unsigned keep, unsigned f, unsigned s)
{
    kept[which] = keep;
    if (which == F_C) {
        field_len[which] = keep ? counter_end[keep - 1] : 0;
        add(F_C, ";c=+%u", counter_total - keep); /* the rest, not carried */
    } else
        build_list(which, which == F_FAIL ? "fail" : "skip", which == F_FAIL, which == F_FAIL ? f : s, keep);
}

/* Fits the payload into budget bytes (see CUTS) and joins it. */
static void build_payload(unsigned budget, unsigned f, unsigned s)
{
    for (unsigned c = 0; c < sizeof CUTS / sizeof CUTS[0] && total_len() > budget; c++) {
        enum field which = CUTS[c].field;
        bool list = which == F_C || which == F_FAIL || which == F_SKIP;
        if (list) {
            while (kept[which] > CUTS[c].floor && total_len() > budget)
                shrink(which, kept[which] - 1, f, s);
            if (total_len() <= budget || CUTS[c].floor > 0)
                continue;
        }
        field_on[which] = false;
    }
    memcpy(payload, "CB1", 3);
    payload_len = 3;
    for (int i = 0; i < F_COUNT; i++)
        if (field_on[i] && payload_len + field_len[i] < sizeof payload) {
            memcpy(payload + payload_len, fields[i], field_len[i]);
            payload_len += field_len[i];
        }
    payload[payload_len] = '\0';
}

/* ---- the screen ---- */

enum screen_kind { SCREEN_NONE, SCREEN_TEXT, SCREEN_FRAMEBUFFER };
static enum screen_kind kind;
static struct qr_code qr;
static bool have_qr, qr_shown, keys_ready;
static enum run_status shown_status;
static const char *qr_why; /* why the screen shows no QR code */

static uint32_t screen_rows(void) { return kind == SCREEN_TEXT ? vga_text_rows() : fbcon_rows(); }

/* Check names as a list wrapped at width characters, each line indented. */
static void print_names(const char *title, bool failures, unsigned total, unsigned width, unsigned max_lines)
{
    const char *const *names;
    unsigned n = checks_named(failures, &names);
    if (total == 0)
        return;
    screen_printf("%s", title);
    unsigned col = (unsigned)strlen(title), lines = 1, shown = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned len = (unsigned)strlen(names[i]) + (i + 1 < n ? 1 : 0);
        if (shown > 0 && col + 1 + len > width) {
            if (lines >= max_lines)
                break;
            screen_printf("\n   ");
            col = 3;
            lines++;
        }
        screen_printf(" %s%s", names[i], i + 1 < n ? "," : "");
        col += 1 + len;
        for (; col > width; col -= width)
            lines++; /* wrapped by the console */
        shown++;
    }
    if (shown < total)
        screen_printf(" and %u more (R: the report)", total - shown);
    screen_printf("\n");
}

/* A verdict row shows the batch's figure, marked (lib/verdict.h). */
static bool marked(void)
{
    for (int i = 0; i < COUNTER_COUNT; i++)
        if (results.verdict[i].measured) {
            size_t n = strlen(results.verdict[i].read);
            if (n && results.verdict[i].read[n - 1] == '*')
                return true;
        }
    return false;
}

/* The whole screen width: identity, the verdict table, the checks. */
static void draw_wide(unsigned p, unsigned f, unsigned s)
{
    const struct cpu_info *ci = &boot_cpu.info;
    char a[FMT_FIXED_CHARS];
    screen_printf("clockbench %s: summary\n\n", CLOCKBENCH_VERSION);
    screen_printf("CPU:        %s %s\n", ci->vendor, ci->brand);
    screen_printf("Hypervisor: %s\n", ci->hypervisor ? ci->hv_vendor : "none reported");
    screen_printf("Secure Boot: %s\n", results.secure_boot_shown ? results.secure_boot_shown : "unknown");
    screen_printf("Profile:    %s\n", results.profile ? results.profile->name : "-");
    screen_printf("TSC:        %s MHz, %s\n", fmt_fixed(a, xf_to_fixed(results.tsc_hz, 3), 9, 3), results.tsc_hz_source);
    /* in place of the blank line, so the screen keeps its height */
    if (results.tsc_measured && results.tsc_reference_brief)
        screen_printf("            (%s)\n", results.tsc_reference_brief);
    else
        screen_printf("\n");
    screen_printf("  %-8s %11s %11s %16s %9s\n", "counter", "read p50", "resolution", "freq error", "monotonic");
    for (int i = 0; i < COUNTER_COUNT; i++) {
        const struct verdict_row *v = &results.verdict[i];
        if (i > COUNTER_PIT && !counters[i].present)
            continue; /* an APIC timer or paravirtual clock that is not there */
        if (v->measured)
            screen_printf("  %-8s %8s ns %8s ns %16s %9s\n", counters[i].name, v->read, v->res, v->freq, v->mono);
        else
            screen_printf("  %-8s %s\n", counters[i].name, v->present ? "not measured" : "absent");
        /* the TSC's advice speaks of the CPU: under an emulator, of the
           emulator's, as the report's verdict says (its own row, so the
           advice still fits beside the QR code) */
        if (v->advice && i == COUNTER_TSC && v->measured && results_emulator())
            screen_printf("           -> in this emulator:\n              %.63s\n", v->advice);
        else if (v->advice)
            screen_printf("           -> %.66s\n", v->advice);
    }
    if (marked())
        screen_printf("  %s\n", READ_COST_MARK_NOTE);
    if (results.cpus.ran)
        screen_printf("\nCPUs:       %.66s\n", results.cpus.line);
    screen_printf("\nSUMMARY: %u passed, %u failed, %u skipped\n", p, f, s);
    print_names("Failed: ", true, f, 72, 4);
    print_names("Skipped:", false, s, 72, 3);
}

/* Left of a QR code on an 80x25 text screen: width columns, and rows
   rows to fill (the rest is for the run's last line). */
static void draw_narrow(unsigned p, unsigned f, unsigned s, unsigned width, unsigned rows)
{
    char a[FMT_FIXED_CHARS];
    unsigned used = 0;
    screen_printf("clockbench %s\n", CLOCKBENCH_VERSION);
    screen_printf("SUMMARY: %u passed, %u failed, %u skipped\n", p, f, s);
    used += 1 + (27 + 3 * 5 + width - 1) / width;
    screen_printf("TSC %s MHz (%s)\n", fmt_fixed(a, xf_to_fixed(results.tsc_hz, 3), 9, 3),
                  results.tsc_measured ? counters[results.reference].name : "nominal");
    screen_printf("%-8s %10s %4s\n", "counter", "read p50", "mono");
    used += 2;
    for (int i = 0; i < COUNTER_COUNT; i++) {
        const struct verdict_row *v = &results.verdict[i];
        if (i > COUNTER_PIT && !counters[i].present)
            continue;
        used++;
        if (v->measured)
            screen_printf("%-8s %7s ns %4s\n", counters[i].name, v->read, v->mono);
        else
            screen_printf("%-8s %s\n", counters[i].name, v->present ? "not measured" : "absent");
    }
    if (marked()) {
        screen_printf("* by the batch\n");
        used++;
    }
    if (results.cpus.ran) {
        screen_printf("CPUs: %u running, %s\n", results.cpus.cpus,
                      !results.cpus.compared ? "not compared" : results.cpus.synchronised ? "TSC in sync" : "TSC NOT in sync");
        used++;
    }
    unsigned lines = rows > used + 2 ? rows - used - 2 : 1;
    unsigned fail_lines = f ? (s ? (lines + 1) / 2 : lines) : 0;
    if (f)
        print_names("Failed:", true, f, width, fail_lines);
    if (s && lines > fail_lines)
        print_names("Skipped:", false, s, width, lines - fail_lines);
}

static const char *why_no_keys;

static void draw_keys_hint(void)
{
    if (keys_ready)
        screen_printf("Keys: R the report, B reboot\n");
    else if (why_no_keys)
        screen_printf("No keys: %s\n", why_no_keys);
}

static void draw_qr_framebuffer(void)
{
    fbcon_draw_modules(&qr.modules[0][0], qr.size, QR_MAX_SIZE, -QR_MARGIN_PX, QR_MARGIN_PX, QR_SCALE, QR_QUIET);
}

static void draw(void)
{
    unsigned p, f, s;
    checks_counts(&p, &f, &s);
    if (kind == SCREEN_TEXT && qr_shown) {
        vga_text_wipe();
        vga_text_draw_modules(&qr.modules[0][0], qr.size, QR_MAX_SIZE, QR_TEXT_QUIET);
        unsigned width = vga_text_cols() - (unsigned)(qr.size + 2 * QR_TEXT_QUIET) - 1;
        /* 3 rows for the run's last line, 1 for the keys */
        draw_narrow(p, f, s, width, screen_rows() - 4);
        draw_keys_hint();
        return;
    }
    if (kind == SCREEN_TEXT)
        vga_text_wipe();
    else
        fbcon_wipe();
    draw_wide(p, f, s);
    if (qr_shown) {
        draw_qr_framebuffer();
        screen_printf("The QR code carries these results: `clockbench decode` reads it back.\n");
    } else if (qr_why) {
        screen_printf("%s\n", qr_why);
    }
    draw_keys_hint();
}

void summary_screen(enum run_status status)
{
    unsigned p, f, s;
    checks_counts(&p, &f, &s);
    shown_status = status;
    bool no_summary = cmdline_get(&boot_cmdline, "no_summary") != 0;
    kind = no_summary ? SCREEN_NONE
           : console_screen_is_framebuffer() ? SCREEN_FRAMEBUFFER
           : vga_text_cols() ? SCREEN_TEXT
                             : SCREEN_NONE;

    /* A text screen takes the code that fits it; elsewhere the payload
       goes whole (the serial port's record carries what the screen shows). */
    unsigned text_span = QR_TEXT_MAX_VERSION * 4 + 17 + 2 * QR_TEXT_QUIET;
    bool text_qr = kind == SCREEN_TEXT && vga_text_rows() * 2 >= text_span && vga_text_cols() >= text_span + 1 + QR_TEXT_MIN_TEXT;
    /* the serial record carries the whole payload; a text screen's code
       carries what fits it, recorded beside it */
    static char whole[PAYLOAD_MAX];
    build_fields(status, p, f, s);
    build_payload(PAYLOAD_MAX - 1, f, s);
    memcpy(whole, payload, payload_len + 1);
    if (text_qr) {
        build_fields(status, p, f, s);
        build_payload(QR_TEXT_CAPACITY, f, s);
    }
    /* level M where it fits (on a text screen, within its largest version),
       else L; chosen first, so that the one code is encoded once (under a
       hypervisor that emulates every instruction, an encode takes about a
       second) */
    int version_m = qr_version_for(payload_len, QR_ECC_M);
    enum qr_ecc level = version_m && (!text_qr || version_m <= QR_TEXT_MAX_VERSION) ? QR_ECC_M : QR_ECC_L;
    if (kind == SCREEN_NONE) {
        /* no screen to show it on: the record's version is the one an
           encode would choose, and nothing is encoded */
        qr.version = qr_version_for(payload_len, level);
        have_qr = qr.version != 0;
    } else {
        have_qr = qr_encode((const uint8_t *)payload, payload_len, level, &qr) && (!text_qr || qr.version <= QR_TEXT_MAX_VERSION);
    }
    struct record r;
    record_begin(&r, "qr");
    record_str(&r, "payload", whole);
    if (text_qr)
        record_str(&r, "screen_payload", payload);
    record_u64(&r, "version", have_qr ? (uint64_t)qr.version : 0);
    console_emit_record(&r);

    if (kind == SCREEN_NONE)
        return;
    qr_why = 0;
    qr_shown = false;
    if (!have_qr)
        qr_why = "(No QR code: the results do not fit one; the serial port carries them.)";
    else if (kind == SCREEN_FRAMEBUFFER || text_qr)
        qr_shown = true;
    else
        qr_why = "(No QR code: this text screen is smaller than 78x25; the serial port\n"
                 "carries the results as the qr record.)";
    why_no_keys = 0;
    keys_ready = keyboard_probe(&why_no_keys);
    console_screen_clear(); /* the report goes to the history, for the pager */
    draw();
    console_flush();
}

/* ---- the final screen's keys ---- */

static uint32_t history_lines(void) { return kind == SCREEN_TEXT ? vga_text_history_lines() : fbcon_history_lines(); }

static void page(uint32_t first)
{
    char footer[128];
    uint32_t total = history_lines(), last = first + screen_rows() - 1;
    fmt_format(footer, sizeof footer, " Report lines %u-%u of %u: Up Down PgUp PgDn Home End; Q back; B reboot", first + 1,
               last < total ? last : total, total);
    if (kind == SCREEN_TEXT)
        vga_text_page(first, footer);
    else
        fbcon_page(first, footer);
}

/* Waits for keys without end (the run is over; power off at any time):
   R shows the report, paged; Q or Escape comes back; B reboots. Polled, interrupts off. */
void summary_keys(void)
{
    if (kind == SCREEN_NONE || !keys_ready)
        return;
    bool paging = false;
    uint32_t first = 0;
    for (;;) {
        enum key k = keyboard_poll();
        if (k == KEY_NONE) {
            for (int i = 0; i < 1000; i++)
                cpu_relax();
            continue;
        }
        if (k == KEY_B) {
            kprintf("clockbench: rebooting (B pressed on the final screen)\n");
            console_flush();
            machine_reboot();
        }
        uint32_t total = history_lines(), height = screen_rows() - 1;
        uint32_t bottom = total > height ? total - height : 0;
        if (!paging) {
            if (k != KEY_R && k != KEY_PAGE_UP && k != KEY_UP && k != KEY_HOME && k != KEY_ENTER && k != KEY_SPACE)
                continue;
            paging = true;
            first = k == KEY_HOME ? 0 : bottom;
            page(first);
            continue;
        }
        switch (k) {
        case KEY_Q:
        case KEY_ESCAPE:
        case KEY_R:
            paging = false;
            draw();
            screen_printf("clockbench: run ended: %s (status %d). Halted; it is safe to power off.\n", run_status_name(shown_status),
                          (int)shown_status);
            console_flush();
            continue;
        case KEY_UP: first = first > 0 ? first - 1 : 0; break;
        case KEY_DOWN: first = first < bottom ? first + 1 : bottom; break;
        case KEY_PAGE_UP: first = first > height ? first - height : 0; break;
        case KEY_PAGE_DOWN:
        case KEY_SPACE: first = first + height < bottom ? first + height : bottom; break;
        case KEY_HOME: first = 0; break;
        case KEY_END: first = bottom; break;
        default: continue;
        }
        page(first);
    }
}

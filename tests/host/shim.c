/* Host-side entry points for the unit tests (loaded with ctypes). They call
   the kernel's pure logic unchanged and describe the results as JSON, built
   with the kernel's own record builder, so Python needs no struct mirrors. */
#include <stdint.h>
#include <string.h>

#include "../../lib/acpi.h"
#include "../../lib/acpi_record.h"
#include "../../lib/bootinfo.h"
#include "../../lib/cmdline.h"
#include "../../lib/counters.h"
#include "../../lib/cpuid_decode.h"
#include "../../lib/fit.h"
#include "../../lib/format.h"
#include "../../lib/qr.h"
#include "../../lib/record.h"
#include "../../lib/segfit.h"
#include "../../lib/stats.h"
#include "../../lib/uncertainty.h"
#include "../../lib/unwrap.h"
#include "../../lib/verdict.h"
#include "../../lib/xf.h"
#include "../../os/os_analysis.h"

static struct record rec;

static const char *finish(void)
{
    const char *line = record_end(&rec);
    return line + strlen(RECORD_PREFIX);
}

const char *shim_cmdline(const char *text, const char *const *keys, int nkeys)
{
    static struct cmdline cl;
    cmdline_parse(&cl, text);
    record_begin(&rec, "cmdline");
    record_u64(&rec, "count", (uint64_t)cl.count);
    record_bool(&rec, "truncated", cl.truncated);
    for (int i = 0; i < nkeys; i++)
        record_str(&rec, keys[i], cmdline_get(&cl, keys[i]));
    return finish();
}

/* -1 when absent or not a number, else the value (tests keep it < 2^63). */
int shim_parse_u64(const char *s, uint64_t *out) { return cmdline_parse_u64(s, out) ? 1 : 0; }

const char *shim_bootinfo(uint32_t magic, const uint8_t *mem, uint32_t info_addr)
{
    static struct boot_info bi;
    bool ok = bootinfo_parse(magic, (uintptr_t)mem, info_addr, &bi);
    record_begin(&rec, "bootinfo");
    record_bool(&rec, "ok", ok);
    record_str(&rec, "error", bi.error);
    record_u64(&rec, "protocol", (uint64_t)bi.protocol);
    record_u64(&rec, "pvh_version", bi.pvh_version);
    record_str(&rec, "protocol_name", bootinfo_protocol_name(bi.protocol));
    record_str(&rec, "cmdline", bi.cmdline);
    record_str(&rec, "loader", bi.loader);
    record_bool(&rec, "mem_truncated", bi.mem_truncated);
    record_array_begin(&rec, "mem");
    for (int i = 0; i < bi.mem_count; i++) {
        record_array_u64(&rec, bi.mem[i].base);
        record_array_u64(&rec, bi.mem[i].length);
        record_array_u64(&rec, bi.mem[i].type);
    }
    record_array_end(&rec);
    record_str(&rec, "secure_boot", bootinfo_secure_boot(&bi));
    record_bool(&rec, "efi_state", bi.efi_state_present);
    record_u64(&rec, "efi_setup_mode", bi.efi_setup_mode);
    record_bool(&rec, "efi_shim", bi.efi_shim);
    record_u64(&rec, "efi_fw_revision", bi.efi_fw_revision);
    record_str(&rec, "efi_firmware_vendor", bi.efi_firmware_vendor);
    record_u64(&rec, "efi_system_table", bi.efi_system_table);
    record_str(&rec, "firmware", bootinfo_firmware(&bi));
    record_str(&rec, "secure_boot_shown", bootinfo_secure_boot_shown(&bi));
    record_bool(&rec, "efi_boot_services", bi.efi_boot_services_tag);
    record_bool(&rec, "rsdp_old", bi.rsdp_old_present);
    record_bool(&rec, "rsdp_new", bi.rsdp_new_present);
    record_u64(&rec, "rsdp_new_len", bi.rsdp_new_len);
    record_strn(&rec, "rsdp_old_sig", (const char *)bi.rsdp_old, bi.rsdp_old_present ? 8 : 0);
    record_bool(&rec, "fb", bi.fb.present);
    if (bi.fb.present) {
        record_u64(&rec, "fb_addr", bi.fb.addr);
        record_u64(&rec, "fb_width", bi.fb.width);
        record_u64(&rec, "fb_height", bi.fb.height);
        record_u64(&rec, "fb_pitch", bi.fb.pitch);
        record_u64(&rec, "fb_bpp", bi.fb.bpp);
        record_u64(&rec, "fb_type", bi.fb.type);
        record_u64(&rec, "fb_red_pos", bi.fb.red_pos);
        record_u64(&rec, "fb_blue_size", bi.fb.blue_size);
    }
    return finish();
}

/* leaves: CPUID_LEAF_COUNT rows of {valid, eax, ebx, ecx, edx}. */
const char *shim_cpuid_decode(const uint32_t *rows)
{
    struct cpuid_leaf l[CPUID_LEAF_COUNT];
    static struct cpu_info ci;
    for (int i = 0; i < CPUID_LEAF_COUNT; i++) {
        const uint32_t *r = rows + 5 * i;
        l[i] = (struct cpuid_leaf){cpuid_leaf_numbers[i], 0, r[0] != 0, r[1], r[2], r[3], r[4]};
    }
    cpuid_decode(l, &ci);
    record_begin(&rec, "cpu");
    record_str(&rec, "vendor", ci.vendor);
    record_str(&rec, "brand", ci.brand);
    record_str(&rec, "hv_vendor", ci.hv_vendor);
    record_u64(&rec, "family", ci.family);
    record_u64(&rec, "model", ci.model);
    record_u64(&rec, "stepping", ci.stepping);
    record_bool(&rec, "tsc", ci.tsc);
    record_bool(&rec, "rdtscp", ci.rdtscp);
    record_bool(&rec, "invariant_tsc", ci.invariant_tsc);
    record_bool(&rec, "tsc_deadline", ci.tsc_deadline);
    record_bool(&rec, "tsc_adjust", ci.tsc_adjust);
    record_bool(&rec, "hypervisor", ci.hypervisor);
    record_bool(&rec, "amd_like", ci.amd_like);
    record_array_begin(&rec, "claim_hz");
    for (int i = 0; i < ci.claim_count; i++)
        record_array_u64(&rec, ci.claims[i].hz);
    record_array_end(&rec);
    for (int i = 0; i < ci.claim_count; i++) {
        char key[64];
        fmt_format(key, sizeof key, "%s/%s", ci.claims[i].source, ci.claims[i].what);
        record_u64(&rec, key, ci.claims[i].hz);
    }
    return finish();
}

/* The record builder itself, driven step by step from Python. */
struct record *shim_record_begin(const char *type)
{
    record_begin(&rec, type);
    return &rec;
}

/* ACPI discovery over a buffer that stands for physical memory
   [base, base + len); anything outside it is unreachable. */
struct buffer_memory {
    const uint8_t *mem;
    uint64_t base, len;
};

static const void *buffer_map(void *ctx, uint64_t phys, uint64_t len, const char **why)
{
    const struct buffer_memory *b = ctx;
    if (phys < b->base || phys - b->base > b->len || len > b->len - (phys - b->base)) {
        *why = "outside the test memory";
        return 0;
    }
    return b->mem + (phys - b->base);
}

static struct acpi_info shim_acpi_info; /* the last shim_acpi's, for shim_acpi_record */

const char *shim_acpi(const uint8_t *mem, uint64_t len, uint64_t base, const uint8_t *tag_new, uint32_t tag_new_len,
                      const uint8_t *tag_old)
{
    struct acpi_info *ap = &shim_acpi_info;
    struct buffer_memory b = {mem, base, len};
    struct acpi_mapper m = {buffer_map, &b};
    acpi_discover(&m, tag_new, tag_new_len, tag_old, ACPI_FROM_MULTIBOOT2, ap);
    record_begin(&rec, "acpi");
    record_bool(&rec, "rsdp_found", ap->rsdp_found);
    record_str(&rec, "rsdp_source", ap->rsdp_found ? ap->rsdp_source : 0);
    record_u64(&rec, "rsdp_address", ap->rsdp_address);
    record_u64(&rec, "revision", ap->revision);
    record_str(&rec, "oem_id", ap->oem_id);
    record_bool(&rec, "root_found", ap->root_found);
    record_bool(&rec, "xsdt", ap->root_is_xsdt);
    record_u64(&rec, "table_count", (uint64_t)ap->table_count);
    record_bool(&rec, "fadt", ap->fadt_found);
    record_bool(&rec, "pm", ap->pm_timer_found);
    record_u64(&rec, "pm_space", ap->pm_timer.space_id);
    record_u64(&rec, "pm_address", ap->pm_timer.address);
    record_str(&rec, "pm_field", ap->pm_timer_field);
    record_bool(&rec, "pm_32bit", ap->pm_timer_32bit);
    record_str(&rec, "pm_reason", ap->pm_timer_reason);
    record_u64(&rec, "fadt_revision", ap->fadt_revision);
    record_bool(&rec, "hw_reduced", ap->hardware_reduced);
    record_u64(&rec, "pm_len", ap->pm_timer_len);
    record_u64(&rec, "pm_width", ap->pm_timer_width);
    record_str(&rec, "pm_width_from", ap->pm_timer_width_from);
    record_u64(&rec, "pm_linux_port", ap->pm_timer_linux_port);
    record_bool(&rec, "pm_os_ignored", ap->pm_timer_os_ignored);
    record_bool(&rec, "pm_set_aside", ap->pm_timer_set_aside);
    record_str(&rec, "pm_os_note", ap->pm_timer_os_note);
    record_u64(&rec, "pm_conflicts", ap->pm_timer_conflicts);
    record_u64(&rec, "pm1_cnt_conflicts", ap->pm1_cnt_conflicts);
    record_bool(&rec, "hpet", ap->hpet_found);
    record_u64(&rec, "hpet_tables", (uint64_t)ap->hpet_tables);
    record_u64(&rec, "hpet_space", ap->hpet_base.space_id);
    record_u64(&rec, "hpet_address", ap->hpet_base.address);
    record_u64(&rec, "hpet_block_id", ap->hpet_block_id);
    record_u64(&rec, "hpet_comparators", ap->hpet_comparators);
    record_bool(&rec, "hpet_64bit", ap->hpet_64bit);
    record_u64(&rec, "hpet_number", ap->hpet_number);
    record_u64(&rec, "hpet_min_tick", ap->hpet_min_tick);
    record_str(&rec, "hpet_reason", ap->hpet_reason);
    record_bool(&rec, "madt", ap->madt_found);
    record_u64(&rec, "cpus_enabled", ap->cpus_enabled);
    record_u64(&rec, "cpus_listed", ap->cpus_listed);
    record_u64(&rec, "cpus_online_capable", ap->cpus_online_capable);
    record_u64(&rec, "lapic_address", ap->lapic_address);
    record_bool(&rec, "lapic_overridden", ap->lapic_address_overridden);
    record_bool(&rec, "cpus_dropped", ap->cpus_dropped);
    record_u64(&rec, "cpu_count", ap->cpu_count);
    record_u64(&rec, "cpus_x2apic", ap->cpus_x2apic);
    record_u64(&rec, "placeholders", ap->madt_placeholders);
    record_u64(&rec, "placeholders_enabled", ap->madt_placeholders_enabled);
    record_u64(&rec, "disabled_copies", ap->madt_disabled_copies);
    record_u64(&rec, "disabled_shared", ap->madt_disabled_shared);
    record_u64(&rec, "enabled_repeats", ap->madt_enabled_repeats);
    record_bool(&rec, "messages_dropped", ap->messages_dropped);
    record_u64(&rec, "messages_not_kept", ap->messages_not_kept);
    /* the first 16 processor entries: id, uid, type, enabled, online capable */
    record_array_begin(&rec, "cpus");
    for (uint32_t i = 0; i < ap->cpu_count && i < 16; i++) {
        record_array_u64(&rec, ap->cpus[i].apic_id);
        record_array_u64(&rec, ap->cpus[i].uid);
        record_array_u64(&rec, ap->cpus[i].type);
        record_array_u64(&rec, ap->cpus[i].enabled);
        record_array_u64(&rec, ap->cpus[i].online_capable);
    }
    record_array_end(&rec);
    record_array_begin(&rec, "ioapics");   /* id, address, gsi base */
    for (uint32_t i = 0; i < ap->ioapic_count; i++) {
        record_array_u64(&rec, ap->ioapics[i].id);
        record_array_u64(&rec, ap->ioapics[i].address);
        record_array_u64(&rec, ap->ioapics[i].gsi_base);
    }
    record_array_end(&rec);
    record_array_begin(&rec, "isa_irqs");  /* per ISA IRQ 0-15: gsi, active low, level */
    for (uint8_t irq = 0; irq < 16; irq++) {
        bool low, level;
        record_array_u64(&rec, acpi_isa_irq_gsi(ap, irq, &low, &level));
        record_array_u64(&rec, low);
        record_array_u64(&rec, level);
    }
    record_array_end(&rec);
    uint32_t pins[ACPI_MAX_IOAPICS];
    for (int i = 0; i < ACPI_MAX_IOAPICS; i++)
        pins[i] = 24;
    record_array_begin(&rec, "gsi_home");  /* for GSIs 0, 2, 23, 24, 40: I/O APIC index (or -1), pin */
    static const uint32_t gsis[] = {0, 2, 23, 24, 40};
    for (unsigned i = 0; i < sizeof gsis / sizeof *gsis; i++) {
        uint32_t pin = 0;
        int at = acpi_ioapic_of_gsi(ap, gsis[i], pins, &pin);
        record_array_i64(&rec, at);
        record_array_u64(&rec, at < 0 ? 0 : pin);
    }
    record_array_end(&rec);
    record_u64(&rec, "messages", (uint64_t)ap->message_count);
    for (int i = 0; i < ap->message_count; i++) {
        char key[16];
        fmt_format(key, sizeof key, "m%d", i);
        record_str(&rec, key, ap->messages[i]);
    }
    return finish();
}

/* Message i of the last shim_acpi ("" past the last): a long list can
   pass what shim_acpi's one record holds. */
const char *shim_acpi_message(int i)
{
    return i >= 0 && i < shim_acpi_info.message_count ? shim_acpi_info.messages[i] : "";
}

/* The image's `acpi` record (lib/acpi_record.c) for the last shim_acpi,
   whole, with its prefix. worst: every count at its largest, every string
   at the longest it can be and all of it escaped ('"' is two characters
   in JSON), so a test can hold the record's largest size. */
#define SHIM_ACPI_NAME_CHARS 112
int shim_acpi_name_chars(void)
{
    return SHIM_ACPI_NAME_CHARS;
}

const char *shim_acpi_record(bool worst)
{
    static struct acpi_info w;
    /* rsdp_source, pm_timer_field, pm_timer_width_from and pm_timer_os_note
       point at lib/acpi.c's fixed names, each shorter than this (held by
       tests/host/lib/test_acpi_messages.py) */
    static char longest[SHIM_ACPI_NAME_CHARS];
    const struct acpi_info *a = &shim_acpi_info;
    if (worst) {
        w = shim_acpi_info;
        memset(longest, '"', sizeof longest - 1);
        longest[sizeof longest - 1] = '\0';
        w.rsdp_found = w.root_found = w.fadt_found = w.madt_found = w.hpet_found = w.pm_timer_found = true;
        w.rsdp_source = w.pm_timer_field = w.pm_timer_width_from = w.pm_timer_os_note = longest;
        memset(w.oem_id, '"', 6);
        w.revision = w.fadt_revision = w.pm_timer_len = w.pm_timer_width = 0xFF;
        w.root_address = w.hpet_base.address = w.pm_timer.address = w.pm_timer_linux_port = UINT64_MAX;
        w.table_count = w.hpet_tables = w.message_count = INT32_MAX;
        w.pm_timer_conflicts = w.cpus_enabled = w.cpus_listed = w.cpus_online_capable = w.cpus_x2apic = UINT32_MAX;
        w.madt_placeholders = w.madt_disabled_copies = w.madt_disabled_shared = w.madt_enabled_repeats = UINT32_MAX;
        w.messages_not_kept = w.pm1_cnt_conflicts = UINT32_MAX;
        w.messages_dropped = true;
        a = &w;
    }
    acpi_record(&rec, a, worst);
    return record_end(&rec);
}

uint64_t shim_counter_delta(unsigned width, uint64_t a, uint64_t b)
{
    struct counter c = {.mask = counter_mask(width)};
    return counter_delta(&c, a, b);
}

/* Statistics and the line fit, described with their xf results as
   mantissa/exponent/sign triples, so Python can check them exactly. */
static void record_xf(struct record *r, const char *key, struct xf v)
{
    record_array_begin(r, key);
    record_array_u64(r, v.m);
    record_array_u64(r, (uint64_t)(int64_t)v.e + (1ull << 32)); /* offset keeps it unsigned */
    record_array_u64(r, v.neg);
    record_array_end(r);
}

const char *shim_summary(uint64_t *v, size_t n)
{
    struct summary s;
    static uint64_t scratch[1 << 20];
    stats_summarise(v, n, scratch, &s);
    record_begin(&rec, "summary");
    record_u64(&rec, "n", s.n);
    record_u64(&rec, "min", s.min);
    record_u64(&rec, "p50", s.p50);
    record_u64(&rec, "p99", s.p99);
    record_u64(&rec, "p999", s.p999);
    record_u64(&rec, "max", s.max);
    record_xf(&rec, "mean", s.mean);
    record_xf(&rec, "stddev", s.stddev);
    return finish();
}

size_t shim_histogram(const uint64_t *sorted, size_t n, uint64_t *out, size_t max)
{
    struct hist_bin bins[256];
    size_t distinct = stats_histogram(sorted, n, bins, max < 256 ? max : 256);
    for (size_t i = 0; i < distinct && i < max && i < 256; i++) {
        out[2 * i] = bins[i].value;
        out[2 * i + 1] = bins[i].count;
    }
    return distinct;
}

const char *shim_fit(const int64_t *x, const int64_t *y, uint32_t n)
{
    struct line_fit f;
    bool ok = fit_line(x, y, n, &f);
    record_begin(&rec, "fit");
    record_bool(&rec, "ok", ok);
    record_xf(&rec, "slope", f.slope);
    record_xf(&rec, "intercept", f.intercept);
    record_xf(&rec, "slope_stderr", f.slope_stderr);
    record_xf(&rec, "resid_rms", f.resid_rms);
    return finish();
}

struct xf shim_xf_from_parts(int64_t hi, uint64_t lo)
{
    return xf_from_i128((__int128)(((unsigned __int128)(uint64_t)hi << 64) | lo));
}

/* QR encoding: the module matrix row by row (1 = dark); returns the version, 0 when it does not fit. */
int shim_qr(const uint8_t *data, size_t len, int ecc, uint8_t *out, int *size)
{
    static struct qr_code qr;
    if (!qr_encode(data, len, ecc ? QR_ECC_M : QR_ECC_L, &qr))
        return 0;
    for (int y = 0; y < qr.size; y++)
        for (int x = 0; x < qr.size; x++)
            out[y * qr.size + x] = qr.modules[y][x];
    *size = qr.size;
    return qr.version;
}

/* Unwrapping: one step classified, with the bounds behind the verdict. */
static struct unwrap_params unwrap_params_of(uint64_t mask, uint64_t millihz, uint64_t tsc_hz, uint32_t tol_ppm,
                                             uint64_t slack)
{
    return (struct unwrap_params){mask, millihz, tsc_hz, tol_ppm, slack};
}

const char *shim_unwrap_step(uint64_t mask, uint64_t millihz, uint64_t tsc_hz, uint32_t tol_ppm, uint64_t slack,
                             uint64_t prev, uint64_t a0, uint64_t b0, uint64_t now, uint64_t a1, uint64_t b1)
{
    static const char *const kinds[] = {
        [STEP_NORMAL] = "NORMAL", [STEP_SLOW] = "SLOW", [STEP_FAST] = "FAST",
        [STEP_BACKWARD] = "BACKWARD", [STEP_GAP] = "GAP", [STEP_TSC_BACKWARD] = "TSC_BACKWARD",
    };
    struct unwrap_params p = unwrap_params_of(mask, millihz, tsc_hz, tol_ppm, slack);
    struct step st;
    unwrap_step(&p, prev, a0, b0, now, a1, b1, &st);
    record_begin(&rec, "step");
    record_str(&rec, "kind", kinds[st.kind]);
    record_u64(&rec, "advance", st.advance);
    record_u64(&rec, "backward", st.backward);
    record_u64(&rec, "min_expected", st.min_expected);
    record_u64(&rec, "max_expected", st.max_expected);
    return finish();
}

uint64_t shim_unwrap_limit_tsc(uint64_t mask, uint64_t millihz, uint64_t tsc_hz, uint32_t tol_ppm, uint64_t slack)
{
    struct unwrap_params p = unwrap_params_of(mask, millihz, tsc_hz, tol_ppm, slack);
    return unwrap_limit_tsc(&p);
}

uint64_t shim_unwrap_expected_ticks(uint64_t millihz, uint64_t tsc_hz, uint64_t tsc_ticks)
{
    struct unwrap_params p = unwrap_params_of(~0ull, millihz, tsc_hz, 0, 0);
    return unwrap_expected_ticks(&p, tsc_ticks);
}

/* The segmented fit: its scalars, and segment `k` (when there is one) so a
   record stays within RECORD_MAX_CHARS however many segments there are. */
const char *shim_segfit(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, uint32_t k)
{
    static struct seg_fit f;
    bool ok = segfit(x, y, seg, n, &f);
    record_begin(&rec, "segfit");
    record_bool(&rec, "ok", ok);
    record_u64(&rec, "n", f.n);
    record_u64(&rec, "segments", f.segments);
    record_u64(&rec, "dropped", f.dropped);
    record_xf(&rec, "slope", f.slope);
    record_xf(&rec, "slope_stderr", f.slope_stderr);
    record_xf(&rec, "resid_rms", f.resid_rms);
    if (k < f.segments) {
        record_u64(&rec, "seg_id", f.seg_id[k]);
        record_u64(&rec, "seg_n", f.seg_n[k]);
        record_xf(&rec, "intercept", f.intercept[k]);
    }
    return finish();
}

/* Every point's residual into out[0..n); false when the fit failed. */
bool shim_segfit_residuals(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, struct xf *out)
{
    static struct seg_fit f;
    bool ok = segfit(x, y, seg, n, &f);
    for (uint32_t i = 0; i < n; i++)
        out[i] = segfit_residual(&f, x[i], y[i], seg[i]);
    return ok;
}

const char *shim_segfit_find_step(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n,
                                  struct xf min_step, uint32_t k_rms)
{
    static struct seg_fit f;
    bool ok = segfit(x, y, seg, n, &f);
    uint32_t at = 0;
    struct xf size = {0, 0, false};
    bool found = ok && segfit_find_step(&f, x, y, seg, n, min_step, k_rms, &at, &size);
    record_begin(&rec, "step");
    record_bool(&rec, "ok", ok);
    record_bool(&rec, "found", found);
    record_u64(&rec, "at", at);
    record_xf(&rec, "size", size);
    record_xf(&rec, "resid_rms", f.resid_rms);
    return finish();
}

/* Sub-window `k` of subwindows_fit, with how many there are. */
const char *shim_subwindows_fit(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n, int64_t len_x,
                                uint32_t max, uint32_t k)
{
    static struct subwindow w[SUBWINDOWS_MAX];
    uint32_t count = subwindows_fit(x, y, seg, n, len_x, w, max);
    record_begin(&rec, "subwindows");
    record_u64(&rec, "count", count);
    if (k < count) {
        record_i64(&rec, "start_x", w[k].start_x);
        record_u64(&rec, "n", w[k].n);
        record_bool(&rec, "fitted", w[k].fitted);
        record_xf(&rec, "slope", w[k].slope);
        record_xf(&rec, "slope_stderr", w[k].slope_stderr);
    }
    return finish();
}

/* The whole-window fit and its uncertainty. */
const char *shim_freq_uncertainty(const int64_t *x, const int64_t *y, const uint32_t *seg, uint32_t n,
                                  struct xf quant_ticks, uint32_t k)
{
    static struct seg_fit f;
    struct freq_uncertainty u = {0};
    bool ok = segfit(x, y, seg, n, &f);
    if (ok)
        freq_uncertainty(x, y, seg, n, &f, quant_ticks, k, &u);
    record_begin(&rec, "uncertainty");
    record_bool(&rec, "ok", ok);
    record_xf(&rec, "slope", f.slope);
    record_xf(&rec, "slope_stderr", f.slope_stderr);
    record_xf(&rec, "statistical", u.statistical);
    record_xf(&rec, "correlated", u.correlated);
    record_xf(&rec, "quantisation", u.quantisation);
    record_xf(&rec, "total", u.total);
    record_u64(&rec, "subwindows", u.subwindows);
    return finish();
}

/* The verdict row for one counter's findings (figures in thousandths). */
const char *shim_verdict(int present, int measured, int64_t read_ns_x1000, int repeats, int64_t step_ns_x1000, int mono,
                         int freq, int64_t ppm_x1000, int64_t u_x1000, int is_tsc, int intercepted, int invariant,
                         int below_step, int64_t tsc_step_x1000, int batch_done, int64_t batch_x1000)
{
    struct verdict_input in = {
        .name = "c", .present = present, .absent_reason = "gone", .measured = measured,
        .cost = {.p50_ns = xf_div(xf_from_i64(read_ns_x1000), xf_from_u64(1000)), .below_step = below_step,
                 .step_ns = xf_div(xf_from_i64(tsc_step_x1000), xf_from_u64(1000)), .batch_done = batch_done,
                 .batch_ns = xf_div(xf_from_i64(batch_x1000), xf_from_u64(1000))},
        .repeats = repeats,
        .step_ns = xf_div(xf_from_i64(step_ns_x1000), xf_from_u64(1000)), .mono = (enum mono_state)mono,
        .freq = (enum freq_state)freq, .freq_ppm = xf_div(xf_from_i64(ppm_x1000), xf_from_u64(1000)),
        .uncertainty_ppm = xf_div(xf_from_i64(u_x1000), xf_from_u64(1000)), .is_tsc = is_tsc,
        .tsc_intercepted = intercepted, .tsc_invariant = invariant, .advice_good = "good",
    };
    struct verdict_row v;
    verdict_make(&in, &v);
    record_begin(&rec, "verdict");
    record_bool(&rec, "present", v.present);
    record_bool(&rec, "measured", v.measured);
    record_str(&rec, "read", v.read);
    record_str(&rec, "res", v.res);
    record_str(&rec, "freq", v.freq);
    record_str(&rec, "mono", v.mono);
    record_str(&rec, "advice", v.advice);
    record_bool(&rec, "has_ppm", v.has_ppm);
    record_i64(&rec, "ppm_x100", v.ppm_x100);
    record_i64(&rec, "read_ns_x10", v.read_ns_x10);
    record_i64(&rec, "res_ns_x10", v.res_ns_x10);
    return finish();
}

/* A read's cost in words and in a cell (figures in thousandths of ns). */
const char *shim_read_cost(int64_t p50_x1000, int below_step, int64_t step_x1000, int batch_done, int64_t batch_x1000)
{
    struct read_cost c = {.p50_ns = xf_div(xf_from_i64(p50_x1000), xf_from_u64(1000)), .below_step = below_step,
                          .step_ns = xf_div(xf_from_i64(step_x1000), xf_from_u64(1000)), .batch_done = batch_done,
                          .batch_ns = xf_div(xf_from_i64(batch_x1000), xf_from_u64(1000))};
    char text[READ_COST_CHARS], cell[FMT_FIXED_CHARS];
    record_begin(&rec, "read_cost");
    record_str(&rec, "text", read_cost_text(text, &c));
    record_str(&rec, "cell", read_cost_cell(cell, &c));
    record_i64(&rec, "ns_x10", read_cost_ns_x10(&c));
    return finish();
}

/* latency.c: the summary of v[0..n) (reordered) as a record */
#include "../../lib/deadline_errata.h"
#include "../../lib/latency.h"
const char *shim_latency(int64_t *v, size_t n, int64_t first_edge)
{
    static uint64_t scratch[4096];
    struct latency_summary s;
    if (n > 4096)
        n = 4096;
    latency_summarise(v, n, scratch, first_edge, &s);
    record_begin(&rec, "latency");
    record_u64(&rec, "n", s.n);
    record_u64(&rec, "early", s.early);
    record_i64(&rec, "min", s.min);
    record_i64(&rec, "p50", s.p50);
    record_i64(&rec, "p99", s.p99);
    record_i64(&rec, "p999", s.p999);
    record_i64(&rec, "max", s.max);
    record_i64(&rec, "mean_x1000", xf_to_fixed(s.mean, 3));
    record_array_begin(&rec, "bins");
    for (unsigned b = 0; b < LATENCY_BINS; b++)
        record_array_u64(&rec, s.bins[b]);
    record_array_end(&rec);
    record_array_begin(&rec, "bin_low");
    for (unsigned b = 1; b < LATENCY_BINS; b++)
        record_array_i64(&rec, latency_bin_low(b, first_edge));
    record_array_end(&rec);
    return finish();
}

const char *shim_deadline_erratum(uint32_t family, uint32_t model, uint32_t stepping)
{
    const struct deadline_erratum *e = deadline_erratum_of(family, model, stepping);
    record_begin(&rec, "erratum");
    record_bool(&rec, "listed", e != 0);
    record_str(&rec, "part", e ? e->part : 0);
    record_u64(&rec, "min_microcode", e ? e->min_microcode : 0);
    return finish();
}

/* pvclock.h: exposed for exact checks */
#include "../../lib/pvclock.h"
uint64_t shim_pvclock_ns(uint64_t tsc, uint64_t stamp, uint64_t system_time, uint32_t mul, int8_t shift)
{
    return pvclock_ns(tsc, stamp, system_time, mul, shift);
}
uint64_t shim_hv_ref_time(uint64_t tsc, uint64_t scale, int64_t offset) { return hv_ref_time(tsc, scale, offset); }

#include "../../lib/os_choice.h"
/* flags: bit 0 tsc, 1 invariant, 2 behaved, 3 kvm, 4 kvmclock, 5 hyperv, 6 hv page, 7 hv msr, 8 hv tsc invariant, 9 hpet, 10 acpi_pm */
const char *shim_os_choice(uint32_t flags)
{
    struct os_choice_input in = {
        .tsc = flags & 1, .invariant_tsc = flags & 2, .tsc_behaved = flags & 4, .kvm = flags & 8, .kvmclock = flags & 16,
        .hyperv = flags & 32, .hv_page = flags & 64, .hv_msr = flags & 128, .hv_tsc_invariant = flags & 256,
        .hpet = flags & 512, .acpi_pm = flags & 1024, .single_cpu = flags & 2048, .intel = flags & 4096,
    };
    struct os_choice c;
    os_choice_make(&in, &c);
    record_begin(&rec, "os_choice");
    record_str(&rec, "clock", c.clock);
    record_i64(&rec, "counter", c.counter);
    record_i64(&rec, "rating", c.rating);
    record_str(&rec, "why", c.why);
    return finish();
}

/* rtc_fit.c: the RTC's registers decoded, and the TSC fitted against its edges */
#include "../../lib/rtc_fit.h"
const char *shim_rtc_decode(uint8_t sec, uint8_t min, uint8_t hour, uint8_t day, uint8_t month, uint8_t year, uint8_t reg_b)
{
    struct rtc_raw raw = {sec, min, hour, day, month, year, reg_b};
    struct rtc_datetime d;
    uint32_t sod = 0;
    bool ok = rtc_decode(&raw, &d);
    bool clock_ok = rtc_decode_clock(&raw, &sod);
    record_begin(&rec, "rtc_decode");
    record_bool(&rec, "valid", ok);
    record_bool(&rec, "clock_valid", clock_ok);
    record_bool(&rec, "hour_mode_ignored", rtc_hour_ignores_mode(&raw));
    record_u64(&rec, "year", d.year);
    record_u64(&rec, "month", d.month);
    record_u64(&rec, "day", d.day);
    record_u64(&rec, "hour", d.hour);
    record_u64(&rec, "min", d.min);
    record_u64(&rec, "sec", d.sec);
    record_u64(&rec, "seconds_of_day", sod);
    return finish();
}

const char *shim_rtc_fit(const uint64_t *a, const uint64_t *b, const uint32_t *sod, uint32_t n, uint64_t hz)
{
    static struct rtc_edge e[4096];
    if (n > 4096)
        n = 4096;
    for (uint32_t i = 0; i < n; i++)
        e[i] = (struct rtc_edge){a[i], b[i], sod[i]};
    struct rtc_fit f;
    rtc_fit_edges(e, n, hz, &f);
    record_begin(&rec, "rtc_fit");
    record_bool(&rec, "fitted", f.fitted);
    record_u64(&rec, "edges", f.edges);
    record_u64(&rec, "used", f.used);
    record_u64(&rec, "wide", f.wide);
    record_u64(&rec, "outliers", f.outliers);
    record_u64(&rec, "discontinuities", f.discontinuities);
    record_u64(&rec, "backward", f.backward);
    record_u64(&rec, "span_s", f.span_s);
    record_u64(&rec, "widest_tsc", f.widest_tsc);
    record_xf(&rec, "tsc_per_s", f.tsc_per_s);
    record_xf(&rec, "stderr_rel", f.stderr_rel);
    record_xf(&rec, "bracket_rel", f.bracket_rel);
    record_xf(&rec, "uncertainty_rel", f.uncertainty_rel);
    record_xf(&rec, "resid_rms_tsc", f.resid_rms_tsc);
    return finish();
}

/* rtc_fit.c: the RTC's step across a stop, and where the largest one is */
const char *shim_rtc_jump(const uint64_t *a, const uint64_t *b, const uint32_t *sod, uint32_t n, uint64_t at_tsc,
                          uint64_t tsc_per_s, uint64_t u_rel_ppb, uint64_t rms_tsc, uint64_t hz_estimate)
{
    static struct rtc_edge e[4096];
    if (n > 4096)
        n = 4096;
    for (uint32_t i = 0; i < n; i++)
        e[i] = (struct rtc_edge){a[i], b[i], sod[i]};
    struct rtc_jump j;
    bool found = rtc_jump_across(e, n, at_tsc, xf_from_u64(tsc_per_s),
                                 xf_div(xf_from_u64(u_rel_ppb), xf_from_u64(1000000000ull)), xf_from_u64(rms_tsc), &j);
    record_begin(&rec, "rtc_jump");
    record_bool(&rec, "found", found);
    record_u64(&rec, "after", j.after);
    record_u64(&rec, "count_s", j.count_s);
    record_xf(&rec, "step_ns", j.step_ns);
    record_xf(&rec, "u_ns", j.u_ns);
    record_u64(&rec, "largest_at", rtc_largest_discontinuity(e, n, hz_estimate));
    uint64_t at = 0;
    bool big = rtc_largest_jump(e, n, hz_estimate, xf_from_u64(tsc_per_s),
                                xf_div(xf_from_u64(u_rel_ppb), xf_from_u64(1000000000ull)), xf_from_u64(rms_tsc), &j, &at);
    record_bool(&rec, "largest_found", big);
    record_u64(&rec, "largest_jump_at", at);
    record_xf(&rec, "largest_step_ns", big ? j.step_ns : xf_from_u64(0));
    return finish();
}

/* os/os_analysis.c: the OS side's sequential-reads table and kernel-log claims */
static void os_sequence_record(const struct os_sequence *q)
{
    record_begin(&rec, "os_sequence");
    record_u64(&rec, "reads", q->reads);
    record_u64(&rec, "deltas", q->deltas);
    record_u64(&rec, "zero_deltas", q->zero_deltas);
    record_u64(&rec, "backward", q->backward);
    record_u64(&rec, "largest_backward", q->largest_backward);
    record_u64(&rec, "min_step", q->min_step);
    record_u64(&rec, "step_gcd", q->step_gcd);
    record_u64(&rec, "max_delta", q->max_delta);
    record_u64(&rec, "distinct", q->distinct);
    record_array_begin(&rec, "bins");
    for (size_t i = 0; i < q->hist_kept && i < 32; i++) {
        record_array_u64(&rec, q->hist[i].value);
        record_array_u64(&rec, q->hist[i].count);
    }
    record_array_end(&rec);
}

const char *shim_os_sequence(uint64_t *v, size_t n, unsigned check_every)
{
    static uint64_t scratch[8192];
    static struct os_sequence q;
    if (n > 8192)
        n = 8192;
    os_sequence_analyse(v, n, check_every, scratch, &q);
    os_sequence_record(&q);
    return finish();
}

const char *shim_os_sequence_rle(uint64_t *v, const uint64_t *count, size_t n)
{
    static uint64_t scratch[8192];
    static struct os_sequence q;
    if (n > 8192)
        n = 8192;
    os_sequence_analyse_rle(v, count, n, scratch, &q);
    os_sequence_record(&q);
    return finish();
}

const char *shim_os_claim(const char *line)
{
    struct os_claim c;
    bool ok = os_claim_parse(line, &c);
    record_begin(&rec, "os_claim");
    record_bool(&rec, "claim", ok);
    record_str(&rec, "what", ok ? c.what : 0);
    record_u64(&rec, "khz", ok ? c.khz : 0);
    record_str(&rec, "detail", ok ? c.detail : 0);
    return finish();
}

/* lib/timer_analysis.c: the timers experiment's pure part. Arrays come
   flattened as [timer][wait][delay] (TIMER_COUNT x TIMER_MAX_WAITS x
   TIMER_DELAYS) so that Python builds them with plain ctypes arrays. */
#include "../../lib/timer_analysis.h"

const char *shim_timer_rate(uint64_t v0, uint64_t a0, uint64_t b0, uint64_t v1, uint64_t a1, uint64_t b1, uint64_t mask)
{
    struct xf ratio = xf_from_u64(0), u = xf_from_u64(0);
    bool ok = timer_rate_from_readings(v0, a0, b0, v1, a1, b1, mask, &ratio, &u);
    record_begin(&rec, "timer_rate");
    record_bool(&rec, "ok", ok);
    record_xf(&rec, "ratio", ratio);
    record_xf(&rec, "u", u);
    return finish();
}

int64_t shim_timer_distance(uint64_t a, uint64_t b, int bits64) { return timer_distance(a, b, bits64 != 0); }

const char *shim_timer_waits(int monitor, uint32_t max_leaf, uint32_t edx, uint32_t note_size)
{
    static struct timer_wait w[TIMER_MAX_WAITS];
    static char note[256 + 8];
    memset(note, 0x55, sizeof note);
    if (note_size > 256)
        note_size = 256;
    unsigned n = timer_waits_build(monitor != 0, max_leaf, edx, w, note, note_size);
    bool canary = true;
    for (size_t i = note_size; i < sizeof note; i++)
        canary = canary && note[i] == 0x55;
    record_begin(&rec, "timer_waits");
    record_str(&rec, "note", note);
    record_bool(&rec, "canary_intact", canary);
    char names[TIMER_MAX_WAITS * 17] = "";
    for (unsigned i = 0, used = 0; i < n; i++)
        used += (unsigned)fmt_format(names + used, sizeof names - used, "%s%s", i ? "," : "", w[i].name);
    record_str(&rec, "names", names); /* comma-separated */
    record_array_begin(&rec, "kinds"); /* 0 busy, 1 hlt, 2 mwait */
    for (unsigned i = 0; i < n; i++)
        record_array_u64(&rec, w[i].mwait ? 2 : w[i].hlt ? 1 : 0);
    record_array_end(&rec);
    record_array_begin(&rec, "hints");
    for (unsigned i = 0; i < n; i++)
        record_array_u64(&rec, w[i].hint);
    record_array_end(&rec);
    return finish();
}

/* I/O APICs given by their first GSI and pin count. */
const char *shim_timer_hpet_gsi(uint32_t caps, uint32_t count, const uint32_t *gsi_base, const uint32_t *pins)
{
    static struct acpi_info a;
    uint32_t pins_of[ACPI_MAX_IOAPICS] = {0};
    memset(&a, 0, sizeof a);
    a.ioapic_count = count < ACPI_MAX_IOAPICS ? count : ACPI_MAX_IOAPICS;
    for (uint32_t i = 0; i < a.ioapic_count; i++) {
        a.ioapics[i].gsi_base = gsi_base[i];
        pins_of[i] = pins[i];
    }
    uint32_t gsi = 0, pin = 0;
    int at = timer_hpet_gsi(caps, &a, pins_of, &gsi, &pin);
    record_begin(&rec, "timer_hpet_gsi");
    record_i64(&rec, "ioapic", at);
    record_u64(&rec, "gsi", gsi);
    record_u64(&rec, "pin", pin);
    return finish();
}

static struct timer_result shim_timers[TIMER_COUNT];

int shim_timer_watchdog(int id, uint32_t usable, uint32_t clean, int shared)
{
    memset(shim_timers, 0, sizeof shim_timers);
    for (int i = 0; i < TIMER_COUNT; i++) {
        shim_timers[i].usable = usable >> i & 1;
        shim_timers[i].clean = clean >> i & 1;
    }
    return timer_watchdog_for(shim_timers, id, shared != 0);
}

/* Cells from flat arrays (index [timer][wait][delay]). */
static void shim_timer_cells(const uint8_t *ran, const uint32_t *asked, const uint32_t *came, const uint64_t *early, const uint32_t *lost,
                             const uint32_t *stray, const int64_t *p99)
{
    for (int t = 0; t < TIMER_COUNT; t++)
        for (int w = 0; w < TIMER_MAX_WAITS; w++)
            for (int d = 0; d < TIMER_DELAYS; d++) {
                size_t i = ((size_t)t * TIMER_MAX_WAITS + w) * TIMER_DELAYS + d;
                shim_timers[t].cell[w][d] = (struct timer_cell){.ran = ran[i] != 0, .asked = asked[i], .came = came[i], .lost = lost[i],
                                                                .stray = stray[i], .s = {.early = early[i], .p99 = p99[i]}};
            }
}

const char *shim_timer_tally(const uint8_t *ran, const uint32_t *asked, const uint32_t *came, const uint64_t *early, const uint32_t *lost,
                             const uint32_t *stray, const int64_t *p99)
{
    memset(shim_timers, 0, sizeof shim_timers);
    shim_timer_cells(ran, asked, came, early, lost, stray, p99);
    struct timer_tally t = {0};
    for (int id = 0; id < TIMER_COUNT; id++)
        for (int w = 0; w < TIMER_MAX_WAITS; w++)
            for (int d = 0; d < TIMER_DELAYS; d++)
                timer_tally_add(&t, &shim_timers[id].cell[w][d]);
    enum timer_outcome o = timer_tally_outcome(&t);
    record_begin(&rec, "timer_tally");
    record_u64(&rec, "asked", t.asked);
    record_u64(&rec, "early", t.early);
    record_u64(&rec, "lost", t.lost);
    record_u64(&rec, "stray", t.stray);
    record_str(&rec, "outcome", o == TIMER_EARLY ? "early" : o == TIMER_LOST ? "lost" : "on_time");
    return finish();
}

const char *shim_timer_choose(uint32_t usable, unsigned waits, const uint8_t *ran, const uint32_t *came, const uint64_t *early,
                              const uint32_t *lost, const int64_t *p99)
{
    static uint32_t zeros[TIMER_COUNT * TIMER_MAX_WAITS * TIMER_DELAYS];
    memset(shim_timers, 0, sizeof shim_timers);
    shim_timer_cells(ran, zeros, came, early, lost, zeros, p99);
    for (int i = 0; i < TIMER_COUNT; i++)
        shim_timers[i].usable = usable >> i & 1;
    unsigned wait = 99;
    int best = timer_choose(shim_timers, waits, &wait);
    record_begin(&rec, "timer_choice");
    record_i64(&rec, "timer", best);
    record_u64(&rec, "wait", wait);
    return finish();
}

/* lib/cpus_analysis.c: the "cpus" experiment's analysis. */
#include "../../lib/cpus_analysis.h"

/* regs: CPUID.01h EBX ECX EDX, 07h EBX, 0Bh EBX EDX, 8000_0001h EDX, 8000_0007h EDX. */
const char *shim_cpus_time_bits(const uint32_t *regs)
{
    struct cpus_cpuid r = {regs[0], regs[1], regs[2], regs[3], regs[4], regs[5], regs[6], regs[7]};
    uint32_t apic_id = 0;
    uint32_t bits = cpus_time_bits(&r, &apic_id);
    record_begin(&rec, "cpus_time_bits");
    record_u64(&rec, "bits", bits);
    record_u64(&rec, "apic_id", apic_id);
    return finish();
}

/* One row per AP, SHIM_CPUS_ROW values each, tallied the way
   experiments/exp_cpus_report.c does; the worst bound in ns from the TSC
   rate in kHz. */
enum {
    SHIM_CPUS_CPU, SHIM_CPUS_MEASURED, SHIM_CPUS_LO, SHIM_CPUS_HI, SHIM_CPUS_EXCHANGES,
    SHIM_CPUS_WARP_DONE, SHIM_CPUS_WARPS, SHIM_CPUS_KVM_DONE, SHIM_CPUS_KVM_WARPS, SHIM_CPUS_KVM_CROSS,
    SHIM_CPUS_RATE_OK, SHIM_CPUS_RATE_MPPM, SHIM_CPUS_RATE_UNC_MPPM, SHIM_CPUS_ROW
};

const char *shim_cpus_tally(const int64_t *rows, uint32_t n, uint64_t tsc_khz)
{
    static const char *const names[] = {"not_compared", "synchronised", "sync_coarse", "offset", "warps", "rate", "unbounded"};
    struct cpus_tally t;
    const struct tsc_offset *worst_first = 0;
    static struct tsc_offset first[64];
    if (n > 64)
        n = 64;
    cpus_tally_init(&t);
    for (uint32_t k = 0; k < n; k++) {
        const int64_t *v = rows + (size_t)k * SHIM_CPUS_ROW;
        first[k] = (struct tsc_offset){.exchanges = (uint32_t)v[SHIM_CPUS_EXCHANGES], .lo = v[SHIM_CPUS_LO], .hi = v[SHIM_CPUS_HI]};
        if (!v[SHIM_CPUS_MEASURED])
            continue;
        cpus_tally_offset(&t, (int)v[SHIM_CPUS_CPU], &first[k]);
        if (v[SHIM_CPUS_WARP_DONE])
            cpus_tally_warps(&t, (uint64_t)v[SHIM_CPUS_WARPS]);
        if (v[SHIM_CPUS_KVM_DONE])
            cpus_tally_kvm_warps(&t, (uint64_t)v[SHIM_CPUS_KVM_WARPS], (uint64_t)v[SHIM_CPUS_KVM_CROSS]);
        if (v[SHIM_CPUS_RATE_OK])
            cpus_tally_rate(&t, v[SHIM_CPUS_RATE_MPPM], (uint64_t)v[SHIM_CPUS_RATE_UNC_MPPM]);
    }
    for (uint32_t k = 0; k < n; k++)
        if (rows[(size_t)k * SHIM_CPUS_ROW + SHIM_CPUS_CPU] == t.worst)
            worst_first = &first[k];
    struct xf ns = xf_div(xf_mul(xf_from_u64(t.worst_ticks), xf_from_u64(1000000)), xf_from_u64(tsc_khz));
    enum cpus_outcome o = cpus_outcome(&t, worst_first, ns);
    record_begin(&rec, "cpus_tally");
    record_u64(&rec, "compared", t.compared);
    record_i64(&rec, "worst", t.worst);
    record_u64(&rec, "worst_ticks", t.worst_ticks);
    record_bool(&rec, "worst_excludes", t.worst_excludes);
    record_bool(&rec, "all_contain", t.all_contain);
    record_bool(&rec, "rates_agree", t.rates_agree);
    record_u64(&rec, "warps", t.warps);
    record_u64(&rec, "kvm_warps", t.kvm_warps);
    record_u64(&rec, "kvm_cross", t.kvm_cross);
    record_str(&rec, "outcome", (unsigned)o < sizeof names / sizeof names[0] ? names[o] : "?");
    return finish();
}

/* rtc_fit.h: the RTC's edges between them (the period, the least steps) and the seconds register's steps */
uint64_t shim_rtc_tsc_mid(uint64_t a, uint64_t b) { return rtc_tsc_mid(a, b); }

uint64_t shim_rtc_period_tsc(uint64_t pa, uint64_t pb, uint32_t psod, uint64_t qa, uint64_t qb, uint32_t qsod, uint64_t hz)
{
    struct rtc_edge p = {pa, pb, psod}, q = {qa, qb, qsod};
    return rtc_period_tsc(&p, &q, hz);
}

const char *shim_rtc_min_steps(const uint64_t *a, const uint64_t *b, const uint32_t *sod, uint32_t n)
{
    static struct rtc_edge e[4096];
    uint32_t min_s;
    uint64_t min_tsc;
    if (n > 4096)
        n = 4096;
    for (uint32_t i = 0; i < n; i++)
        e[i] = (struct rtc_edge){a[i], b[i], sod[i]};
    rtc_min_steps(e, n, &min_s, &min_tsc);
    record_begin(&rec, "rtc_min_steps");
    record_u64(&rec, "min_step_s", min_s);
    record_u64(&rec, "min_step_tsc", min_tsc);
    return finish();
}

int shim_rtc_seconds_step(uint8_t prev, uint8_t now) { return (int)rtc_seconds_step(prev, now); }

/* rtc_fit.h: a rate by the RTC held against the drift reference's */
static void rtc_vs_record(struct rtc_vs v, uint32_t tolerance_ppm)
{
    record_xf(&rec, "ppm", v.ppm);
    record_xf(&rec, "u_ppm", v.u_ppm);
    record_bool(&rec, "agrees", rtc_agrees(v, tolerance_ppm));
}

const char *shim_rtc_tsc_vs(struct xf tsc_per_rtc_s, struct xf u_fit_ppm, struct xf tsc_hz, struct xf u_tsc_ppm, uint32_t tolerance_ppm)
{
    struct xf ratio;
    struct rtc_vs v = rtc_tsc_vs(tsc_per_rtc_s, u_fit_ppm, tsc_hz, u_tsc_ppm, &ratio);
    record_begin(&rec, "rtc_tsc_vs");
    record_xf(&rec, "ratio", ratio);
    rtc_vs_record(v, tolerance_ppm);
    return finish();
}

const char *shim_rtc_counter_vs(struct xf ppm_ref, struct xf u_ref, struct xf ratio, struct xf u_fit_ppm, uint32_t tolerance_ppm)
{
    struct rtc_vs v = rtc_counter_vs(ppm_ref, u_ref, ratio, u_fit_ppm);
    record_begin(&rec, "rtc_counter_vs");
    rtc_vs_record(v, tolerance_ppm);
    return finish();
}

uint64_t shim_pvclock_tsc_hz(uint32_t mul, int8_t shift) { return pvclock_tsc_hz(mul, shift); }

/* lib/stats.c: the TSC's step from a staircase. */
const char *shim_stats_step(const uint64_t *v, uint32_t n)
{
    record_begin(&rec, "step");
    record_u64(&rec, "staircase", stats_staircase_step(v, n));
    return finish();
}

/* drift_analysis.h: one counter's readings judged one by one; its cuts; its narrow samples */
#include "../../lib/drift_analysis.h"

/* Readings v[i] in brackets [a[i], b[i]], the first one the reference;
   each later one's y, segment and stall state go to the out arrays. */
const char *shim_drift_track(uint64_t mask, uint64_t counter_millihz, uint64_t tsc_hz, uint32_t rate_tol_ppm, uint64_t slack,
                             const uint64_t *v, const uint64_t *a, const uint64_t *b, uint32_t n, uint64_t start,
                             uint64_t gap_tsc, uint64_t stall_tsc, uint64_t *y_out, uint32_t *seg_out, uint8_t *stall_out)
{
    static struct drift_track t;
    memset(&t, 0, sizeof t);
    t.up = (struct unwrap_params){mask, counter_millihz, tsc_hz, rate_tol_ppm, slack};
    drift_track_begin(&t, v[0], a[0], b[0]);
    for (uint32_t i = 1; i < n; i++) {
        drift_track_read(&t, v[i], a[i], b[i], start, gap_tsc, stall_tsc);
        y_out[i] = t.y;
        seg_out[i] = t.seg;
        stall_out[i] = t.in_stall;
    }
    record_begin(&rec, "drift_track");
    record_u64(&rec, "reads", t.reads);
    record_u64(&rec, "wraps", t.wraps);
    record_u64(&rec, "stalls", t.stalls);
    record_u64(&rec, "longest_stall_tsc", t.longest_stall_tsc);
    record_u64(&rec, "backward", t.backward);
    record_u64(&rec, "largest_backward", t.largest_backward);
    record_u64(&rec, "gaps", t.gaps);
    record_u64(&rec, "away_tsc", t.away_tsc);
    record_u64(&rec, "tsc_back", t.tsc_back);
    record_u64(&rec, "still_tsc", t.still_tsc);
    record_u64(&rec, "event_count", t.event_count);
    uint32_t kept = t.event_count < DRIFT_EVENTS_KEPT ? t.event_count : DRIFT_EVENTS_KEPT;
    record_array_begin(&rec, "kind");
    for (uint32_t e = 0; e < kept; e++)
        record_array_u64(&rec, t.events[e].kind);
    record_array_end(&rec);
    record_array_begin(&rec, "at_tsc");
    for (uint32_t e = 0; e < kept; e++)
        record_array_u64(&rec, t.events[e].at_tsc);
    record_array_end(&rec);
    record_array_begin(&rec, "tsc_ticks");
    for (uint32_t e = 0; e < kept; e++)
        record_array_u64(&rec, t.events[e].tsc_ticks);
    record_array_end(&rec);
    record_array_begin(&rec, "counter_known");
    for (uint32_t e = 0; e < kept; e++)
        record_array_u64(&rec, t.events[e].counter_known);
    record_array_end(&rec);
    record_array_begin(&rec, "counter_ticks");
    for (uint32_t e = 0; e < kept; e++)
        record_array_i64(&rec, t.events[e].counter_ticks);
    record_array_end(&rec);
    return finish();
}

/* Cuts added in the order given (kind < EV_KINDS: an event of that kind at
   that time, through drift_cuts_from_events; else a cut of its own), then
   applied to the samples (x, sg, n) into cut_sg. */
const char *shim_drift_cuts(const uint64_t *at, const uint32_t *kind, uint32_t count, const int64_t *x, const uint32_t *sg,
                            uint32_t n, uint32_t *cut_sg)
{
    static struct drift_cuts c;
    static struct drift_track t;
    memset(&c, 0, sizeof c);
    memset(&t, 0, sizeof t);
    for (uint32_t i = 0; i < count; i++) {
        if (kind[i] < EV_KINDS)
            drift_track_event(&t, (enum drift_event_kind)kind[i], at[i], 0, true, 0);
        else
            drift_cuts_add(&c, at[i]);
    }
    drift_cuts_from_events(&c, &t);
    drift_cuts_apply(&c, x, sg, n, cut_sg);
    record_begin(&rec, "drift_cuts");
    record_u64(&rec, "count", c.count);
    record_bool(&rec, "overflowed", c.overflowed);
    record_array_begin(&rec, "at");
    for (uint32_t i = 0; i < c.count; i++)
        record_array_u64(&rec, c.at[i]);
    record_array_end(&rec);
    return finish();
}

/* The slots packed in place; min_width is ~0 when it was left alone. */
const char *shim_drift_keep_narrow(int64_t *x, int64_t *yv, uint32_t *sg, const uint32_t *w, uint32_t slots)
{
    uint32_t filled = 7;
    uint64_t min_width = ~0ull;
    uint32_t n = drift_keep_narrow(x, yv, sg, w, slots, &filled, &min_width);
    record_begin(&rec, "drift_keep_narrow");
    record_u64(&rec, "kept", n);
    record_u64(&rec, "filled", filled);
    if (min_width == ~0ull)
        record_null(&rec, "min_width");
    else
        record_u64(&rec, "min_width", min_width);
    return finish();
}

/* cpu_topology.h: the shifts from 0Bh/1Fh subleaves (eax, ecx pairs) or
   AMD's leaves (amd: e8_ecx, have_1e, e1e_ebx), each ID's place, and the
   groups they fall into */
#include "../../lib/cpu_topology.h"

static void topo_record(const struct topo_shifts *t, bool ok, const uint32_t *ids, uint32_t count)
{
    static uint32_t scratch[1024];
    if (count > 1024)
        count = 1024;
    record_bool(&rec, "ok", ok);
    record_bool(&rec, "valid", t->valid);
    record_u64(&rec, "thread_bits", t->thread_bits);
    record_u64(&rec, "package_shift", t->package_shift);
    record_str(&rec, "source", t->source);
    record_array_begin(&rec, "places");
    for (uint32_t i = 0; i < count; i++) {
        struct topo_place p = topo_place_of(t, ids[i]);
        record_array_u64(&rec, p.package);
        record_array_u64(&rec, p.core);
        record_array_u64(&rec, p.thread);
    }
    record_array_end(&rec);
    struct topo_summary s;
    topo_summarise(t, ids, count, scratch, &s);
    record_u64(&rec, "cpus", s.cpus);
    record_u64(&rec, "packages", s.packages);
    record_u64(&rec, "cores", s.cores);
    record_u64(&rec, "cores_per_package_min", s.cores_per_package_min);
    record_u64(&rec, "cores_per_package_max", s.cores_per_package_max);
    record_u64(&rec, "threads_per_core_min", s.threads_per_core_min);
    record_u64(&rec, "threads_per_core_max", s.threads_per_core_max);
}

const char *shim_topo_extended(const uint32_t *regs, uint32_t levels, const uint32_t *ids, uint32_t count)
{
    struct topo_level l[TOPO_MAX_LEVELS];
    if (levels > TOPO_MAX_LEVELS)
        levels = TOPO_MAX_LEVELS;
    for (uint32_t i = 0; i < levels; i++)
        l[i] = (struct topo_level){.eax = regs[2 * i], .ecx = regs[2 * i + 1]};
    struct topo_shifts t;
    bool ok = topo_from_extended(l, levels, "CPUID 0Bh", &t);
    record_begin(&rec, "topo");
    topo_record(&t, ok, ids, count);
    return finish();
}

const char *shim_topo_amd(uint32_t e8_ecx, bool have_1e, uint32_t e1e_ebx, const uint32_t *ids, uint32_t count)
{
    struct topo_shifts t;
    bool ok = topo_from_amd(e8_ecx, have_1e, e1e_ebx, &t);
    record_begin(&rec, "topo");
    topo_record(&t, ok, ids, count);
    return finish();
}

/* cpus_analysis.h, many CPUs: one row per AP, SHIM_SUM_ROW values each
   (the tally's SHIM_CPUS_* layout first, then the warp comparisons, the
   facts and the time bits); the median width, each row's flags, the worst
   pair and the spread. */
enum { SHIM_SUM_WARP_CROSS = SHIM_CPUS_ROW, SHIM_SUM_FACTS, SHIM_SUM_BITS, SHIM_SUM_ROW };

const char *shim_cpus_summary(const int64_t *rows, uint32_t n, uint32_t bsp_bits)
{
    static struct cpus_row_view v[256];
    static uint64_t scratch[256];
    if (n > 256)
        n = 256;
    for (uint32_t k = 0; k < n; k++) {
        const int64_t *r = rows + (size_t)k * SHIM_SUM_ROW;
        v[k] = (struct cpus_row_view){
            .cpu = (int)r[SHIM_CPUS_CPU], .measured = r[SHIM_CPUS_MEASURED] != 0,
            .first = {.exchanges = (uint32_t)r[SHIM_CPUS_EXCHANGES], .lo = r[SHIM_CPUS_LO], .hi = r[SHIM_CPUS_HI]},
            .warp_done = r[SHIM_CPUS_WARP_DONE] != 0, .warps = (uint64_t)r[SHIM_CPUS_WARPS],
            .warp_cross = (uint64_t)r[SHIM_SUM_WARP_CROSS], .rate_ok = r[SHIM_CPUS_RATE_OK] != 0,
            .rate_mppm = r[SHIM_CPUS_RATE_MPPM], .rate_unc_mppm = (uint64_t)r[SHIM_CPUS_RATE_UNC_MPPM],
            .facts_done = r[SHIM_SUM_FACTS] != 0, .time_bits = (uint32_t)r[SHIM_SUM_BITS]};
    }
    uint64_t median = cpus_median_width(v, n, scratch);
    record_begin(&rec, "cpus_summary");
    record_bool(&rec, "in_full", cpus_report_in_full(n + 1));
    record_u64(&rec, "median_width", median);
    record_array_begin(&rec, "flags");
    for (uint32_t k = 0; k < n; k++)
        record_array_u64(&rec, cpus_stands_out(&v[k], median, bsp_bits));
    record_array_end(&rec);
    struct cpus_pair p;
    if (cpus_worst_pair(v, n, &p)) {
        record_array_begin(&rec, "pair");
        record_array_i64(&rec, p.a);
        record_array_i64(&rec, p.b);
        record_array_i64(&rec, p.lo);
        record_array_i64(&rec, p.hi);
        record_array_u64(&rec, p.worst);
        record_array_end(&rec);
    } else {
        record_null(&rec, "pair");
    }
    struct cpus_spread s;
    if (cpus_offset_spread(v, n, &s)) {
        record_array_begin(&rec, "spread");
        record_array_i64(&rec, s.mid_min);
        record_array_i64(&rec, s.cpu_min);
        record_array_i64(&rec, s.mid_max);
        record_array_i64(&rec, s.cpu_max);
        record_array_i64(&rec, s.lo_min);
        record_array_i64(&rec, s.hi_max);
        record_array_end(&rec);
    } else {
        record_null(&rec, "spread");
    }
    return finish();
}

/* steal.h: the area's field offsets, packed (steal, version, flags, preempted, size) */
#include <stddef.h>
#include "../../lib/steal.h"
uint64_t shim_steal_layout(void)
{
    return offsetof(struct kvm_steal_time, steal) | offsetof(struct kvm_steal_time, version) << 8 |
           offsetof(struct kvm_steal_time, flags) << 16 | offsetof(struct kvm_steal_time, preempted) << 24 |
           (uint64_t)sizeof(struct kvm_steal_time) << 32;
}

/* lib/counters.c: the reference order for a set of present (bit per
   COUNTER_*) and set-aside counters, as names, with each one's role. */
const char *shim_reference_order(uint32_t present, uint32_t set_aside)
{
    for (int c = 0; c < COUNTER_COUNT; c++) {
        counters[c].present = present & (1u << c);
        counters[c].set_aside = set_aside & (1u << c);
    }
    int order[COUNTER_COUNT];
    int n = counters_by_rank(order);
    char names[160] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof names; i++)
        len += (size_t)fmt_format(names + len, sizeof names - len, "%s%s", i ? "," : "", counters[order[i]].name);
    record_begin(&rec, "order");
    record_str(&rec, "order", names);
    for (int c = 0; c < COUNTER_COUNT; c++) {
        char key[40];
        fmt_format(key, sizeof key, "role_%s", counters[c].name);
        record_str(&rec, key, counter_reference_role(c));
    }
    for (int c = 0; c < COUNTER_COUNT; c++)
        counters[c].present = counters[c].set_aside = false;
    return finish();
}

/* How the image would end the machine described by mem: the FADT's power
   fields, the DSDT's \_S5 and its QEMU fw_cfg device (lib/acpi.c,
   acpi_read_power; lib/aml.c). */
static void record_gas(struct record *r, const char *key, const struct acpi_gas *g)
{
    record_array_begin(r, key); /* space, bit width, address */
    record_array_u64(r, g->space_id);
    record_array_u64(r, g->bit_width);
    record_array_u64(r, g->address);
    record_array_end(r);
}

const char *shim_acpi_power(const uint8_t *mem, uint64_t len, uint64_t base, const uint8_t *rsdp, uint32_t rsdp_len)
{
    static struct acpi_info a;
    struct buffer_memory b = {mem, base, len};
    struct acpi_mapper m = {buffer_map, &b};
    bool v2 = rsdp && rsdp_len >= 36;
    acpi_discover(&m, v2 ? rsdp : 0, rsdp_len, v2 ? 0 : rsdp, ACPI_FROM_MULTIBOOT2, &a);
    record_begin(&rec, "acpi_power");
    record_u64(&rec, "fadt_revision", a.fadt_revision);
    record_bool(&rec, "hardware_reduced", a.hardware_reduced);
    record_gas(&rec, "pm1a_cnt", &a.pm1a_cnt);
    record_str(&rec, "pm1a_cnt_field", a.pm1a_cnt_field);
    record_gas(&rec, "pm1b_cnt", &a.pm1b_cnt);
    record_u64(&rec, "pm1_cnt_len", a.pm1_cnt_len);
    record_gas(&rec, "sleep_control", &a.sleep_control);
    record_bool(&rec, "iapc_valid", a.iapc_boot_arch_valid);
    record_u64(&rec, "iapc_boot_arch", a.iapc_boot_arch);
    record_str(&rec, "hypervisor_vendor", a.hypervisor_vendor);
    record_u64(&rec, "dsdt_address", a.dsdt_address);
    record_bool(&rec, "dsdt", a.dsdt_found);
    record_bool(&rec, "qemu_fw_cfg", a.qemu_fw_cfg);
    record_bool(&rec, "s5", a.s5.found);
    record_u64(&rec, "slp_typa", a.s5.slp_typa);
    record_u64(&rec, "slp_typb", a.s5.slp_typb);
    record_str(&rec, "s5_why", a.s5.why);
    record_bool(&rec, "pm", a.pm_timer_found);
    record_bool(&rec, "madt", a.madt_found);
    return finish();
}

const char *shim_aml_s5(const uint8_t *aml, uint32_t len)
{
    struct aml_s5 s;
    bool ok = aml_find_s5(aml, len, &s);
    record_begin(&rec, "aml_s5");
    record_bool(&rec, "found", ok);
    record_u64(&rec, "slp_typa", s.slp_typa);
    record_u64(&rec, "slp_typb", s.slp_typb);
    record_u64(&rec, "elements", s.elements);
    record_u64(&rec, "offset", s.offset);
    record_str(&rec, "why", s.why);
    return finish();
}

bool shim_aml_has_string_hid(const uint8_t *aml, uint32_t len, const char *hid) { return aml_has_string_hid(aml, len, hid); }

/* drift_analysis.c: a clock across a stop */
int shim_stop_judge(int64_t advanced_ns, uint64_t u_ns, int64_t wall_ns, uint64_t u_wall_ns)
{
    return (int)drift_stop_judge(advanced_ns, u_ns, wall_ns, u_wall_ns);
}

/* os/os_lang_parse.c: the language probes' lines, bracketing, the path's
   sentence. Figures come back as thousandths (record_fixed), exact for the
   probes' decimals. */
#include "../../os/os_lang_parse.h"

static void rec_milli(const char *key, double v) { record_fixed(&rec, key, (int64_t)(v * 1000 + (v < 0 ? -0.5 : 0.5)), 3); }

const char *shim_lang_parse(const char *kind, const char *line, const char *api)
{
    const char *why = 0;
    bool ok = false;
    record_begin(&rec, "lang_parse");
    if (!strcmp(kind, "cost")) {
        struct lang_cost c;
        ok = lang_parse_cost(line, api, &c, &why);
        record_bool(&rec, "tsc", c.tsc);
        record_u64(&rec, "n", c.n);
        record_u64(&rec, "batch", c.batch);
        rec_milli("min", c.min), rec_milli("p50", c.p50), rec_milli("mean", c.mean), rec_milli("p99", c.p99);
        rec_milli("p999", c.p999), rec_milli("max", c.max), rec_milli("bracket", c.bracket);
        record_str(&rec, "timer", c.timer);
        record_bool(&rec, "bounded", c.bound.bounded), record_bool(&rec, "cut", c.bound.cut), record_u64(&rec, "budget_ms", c.bound.budget_ms);
        /* the p50's interval, at a 2.5 GHz TSC whose step is 25 ticks (10 ns), or a batch timer stepping by 40 ns */
        double lo = 0, hi = 0;
        bool ci = ok && lang_p50_ci_ns(&c, 2.5e9, c.tsc ? 10.0 : 40.0, &lo, &hi);
        record_bool(&rec, "ci", ci);
        rec_milli("ci_lo_ns", lo), rec_milli("ci_hi_ns", hi);
    } else if (!strcmp(kind, "steps")) {
        struct lang_steps s;
        ok = lang_parse_steps(line, api, &s, &why);
        record_u64(&rec, "n", s.n);
        record_u64(&rec, "zero", s.zero);
        record_u64(&rec, "backward", s.backward);
        record_bool(&rec, "cut", s.bound.cut);
        record_bool(&rec, "least_known", s.least_known);
        rec_milli("least_ns", s.least_ns), rec_milli("max_backward_ns", s.max_backward_ns);
        record_array_begin(&rec, "hist");
        for (int i = 0; i < s.bins; i++) {
            record_array_u64(&rec, (uint64_t)s.bin_upper_ns[i]);
            record_array_u64(&rec, s.bin_count[i]);
        }
        record_array_end(&rec);
    } else if (!strcmp(kind, "cross")) {
        struct lang_cross x;
        ok = lang_parse_cross(line, api, &x, &why);
        record_u64(&rec, "a", x.a), record_u64(&rec, "b", x.b), record_u64(&rec, "rounds", x.rounds);
        record_u64(&rec, "violations", x.violations), record_u64(&rec, "lost", x.lost);
        rec_milli("max_violation_ns", x.max_violation_ns);
        record_str(&rec, "pinned", x.pinned);
        record_bool(&rec, "bounded", x.bound.bounded), record_bool(&rec, "cut", x.bound.cut), record_u64(&rec, "budget_ms", x.bound.budget_ms);
    } else if (!strcmp(kind, "threads")) {
        struct lang_threads t;
        ok = lang_parse_threads(line, api, &t, &why);
        record_u64(&rec, "k", t.k), record_u64(&rec, "n", t.n);
        rec_milli("per_call_ns", t.per_call_ns), rec_milli("max_per_call_ns", t.max_per_call_ns);
        record_bool(&rec, "chunked", t.chunked);
        record_u64(&rec, "chunk", t.chunk);
        record_str(&rec, "pinned", t.pinned);
        rec_milli("least_ns", t.least_ns), rec_milli("median_ns", t.median_ns);
        record_u64(&rec, "disturbed", t.disturbed), record_u64(&rec, "judged", t.judged);
        record_array_begin(&rec, "disturbed_cpus");
        for (int i = 0; i < t.n_disturbed_cpu; i++)
            record_array_i64(&rec, t.disturbed_cpu[i]);
        record_array_end(&rec);
        record_u64(&rec, "switches", t.switches);
        record_bool(&rec, "share_known", t.share_known);
        rec_milli("cpu_share", t.cpu_share);
        record_bool(&rec, "cut", t.bound.cut), record_u64(&rec, "least_done", t.least_done);
    } else if (!strcmp(kind, "stamp")) {
        uint64_t ns = 0;
        ok = lang_parse_stamp(line, &ns);
        record_u64(&rec, "ns", ns);
    }
    record_bool(&rec, "ok", ok);
    record_str(&rec, "why", ok ? 0 : why);
    return finish();
}

const char *shim_lang_info(int l, const char *text)
{
    static struct lang_info li;
    const char *why = 0;
    bool ok = lang_parse_info(l, text, &li, &why);
    record_begin(&rec, "lang_info");
    record_bool(&rec, "ok", ok);
    record_str(&rec, "why", ok ? 0 : why);
    record_str(&rec, "runtime", li.runtime);
    record_u64(&rec, "n", (uint64_t)li.n);
    record_array_begin(&rec, "claims_milli_ns"); /* -1: none stated */
    for (int i = 0; i < li.n; i++)
        record_array_i64(&rec, li.apis[i].claim_known ? (int64_t)(li.apis[i].claim_ns * 1000 + 0.5) : -1);
    record_array_end(&rec);
    record_array_begin(&rec, "private");
    for (int i = 0; i < li.n; i++)
        record_array_u64(&rec, li.apis[i].private_origin);
    record_array_end(&rec);
    record_str(&rec, "claim_source_0", li.n ? li.apis[0].claim_source : 0);
    char absent[LANG_API_MAX * (LANG_TEXT_MAX + 1)] = ""; /* each API's absent= reason, "" when present, joined by | */
    for (int i = 0; i < li.n; i++) {
        if (i)
            strcat(absent, "|");
        if (li.apis[i].absent)
            strcat(absent, li.apis[i].absent_why);
    }
    record_str(&rec, "absent", absent);
    return finish();
}

/* os/os_rounds.c: rounds given as p50, lo, hi, ref and bare arrays (ns). */
#include "../../os/os_rounds.h"
const char *shim_lang_rounds(const double *p50, const double *lo, const double *hi, const double *ref, const double *bare, int n, double step_ns,
                             double fastest_ref_ns)
{
    struct lang_rounds r = {.n = n, .step_ns = step_ns, .fastest_ref_ns = fastest_ref_ns};
    for (int i = 0; i < n && i < LANG_ROUNDS_MAX; i++)
        r.p50_ns[i] = p50[i], r.lo_ns[i] = lo[i], r.hi_ns[i] = hi[i], r.ref_ns[i] = ref[i], r.bare_ns[i] = bare[i];
    struct lang_rounds_summary s;
    bool ok = lang_rounds_summarise(&r, &s);
    record_begin(&rec, "lang_rounds");
    record_bool(&rec, "ok", ok);
    record_u64(&rec, "median_round", (uint64_t)s.median_round);
    rec_milli("p50_ns", s.p50_ns), rec_milli("lo_ns", s.lo_ns), rec_milli("hi_ns", s.hi_ns), rec_milli("confidence", s.confidence);
    record_bool(&rec, "ratio_known", s.ratio_known), rec_milli("ratio_p50", s.ratio_p50);
    record_bool(&rec, "speed_known", s.speed_known), rec_milli("speed_spread", s.speed_spread);
    record_u64(&rec, "slow_rounds", (uint64_t)s.slow_rounds);
    record_u64(&rec, "kept", (uint64_t)s.kept);
    record_bool(&rec, "slow_throughout", s.slow_throughout);
    rec_milli("p50_all_ns", s.p50_all_ns);
    return finish();
}

const char *shim_lang_rounds_rank(int n)
{
    double coverage = 0;
    int k = lang_rounds_rank(n, &coverage);
    record_begin(&rec, "lang_rounds_rank");
    record_u64(&rec, "k", (uint64_t)k);
    record_fixed(&rec, "coverage", (int64_t)(coverage * 1e6 + 0.5), 6);
    return finish();
}

/* A trace from system call numbers and first arguments; the pattern of
   one call, the per-1000 count and the sentence (seen, and optionally a
   trace with the vDSO hidden). */
const char *shim_lang_trace(const long *nr, const uint64_t *arg0, size_t n_sys, const long *hnr, const uint64_t *harg0, size_t n_hidden,
                            bool with_hidden, uint64_t calls, unsigned bracket, bool bracketed, bool private_origin)
{
    struct lang_trace seen = {.begin_seen = true, .end_seen = true}, hidden = {.begin_seen = true, .end_seen = true};
    for (size_t i = 0; i < n_sys; i++)
        lang_trace_add(&seen, nr[i], arg0[i]);
    for (size_t i = 0; i < n_hidden; i++)
        lang_trace_add(&hidden, hnr[i], harg0[i]);
    static char sentence[400];
    lang_path_sentence("Lang", "api", calls, &seen, with_hidden ? &hidden : 0, bracket, bracketed, private_origin, sentence, sizeof sentence);
    int p[LANG_PATTERN_MAX];
    int k = lang_trace_pattern(&seen, calls, p);
    record_begin(&rec, "lang_trace");
    record_u64(&rec, "syscalls", seen.syscalls);
    record_u64(&rec, "clock_calls", seen.clock_calls);
    record_u64(&rec, "other", seen.other);
    rec_milli("per_1000", lang_per_1000(seen.syscalls, calls));
    record_array_begin(&rec, "pattern");
    for (int i = 0; i < k; i++)
        record_array_i64(&rec, p[i]);
    record_array_end(&rec);
    record_str(&rec, "sentence", sentence);
    return finish();
}

/* lib/vmm_rates.c: the table's rows by index (null past the end), the
   candidates for one machine and device, and the choice between two. */
#include "../../lib/vmm_rates.h"
static void record_rate(const struct vmm_rate *v)
{
    record_begin(&rec, "vmm_rate");
    record_u64(&rec, "vmm", v->vmm);
    record_str(&rec, "vmm_name", vmm_name(v->vmm));
    record_u64(&rec, "device", v->device);
    record_str(&rec, "model", v->model);
    record_u64(&rec, "millihz", v->millihz);
    record_str(&rec, "constant", v->constant);
    record_str(&rec, "file", v->file);
}

const char *shim_vmm_rate_row(unsigned i)
{
    unsigned n;
    const struct vmm_rate *t = vmm_rate_table(&n);
    if (i >= n)
        return 0;
    record_rate(&t[i]);
    return finish();
}

const char *shim_vmm_rate_of(unsigned vmm, unsigned device, unsigned which)
{
    const struct vmm_rate *v = vmm_rate_of((enum vmm_id)vmm, (enum vmm_device)device, which);
    if (!v)
        return 0;
    record_rate(v);
    record_u64(&rec, "candidates", vmm_rate_candidates((enum vmm_id)vmm, (enum vmm_device)device));
    return finish();
}

const char *shim_vmm_rate_pick(uint64_t a, uint64_t b, uint64_t measured, uint64_t u_ppb, bool unmeasured)
{
    struct vmm_pick p = unmeasured ? vmm_rate_unmeasured(a, b) : vmm_rate_pick(a, b, measured, u_ppb);
    record_begin(&rec, "vmm_pick");
    record_i64(&rec, "chosen", p.chosen);
    record_u64(&rec, "millihz", p.millihz);
    record_u64(&rec, "spread_ppb", p.spread_ppb);
    record_u64(&rec, "off_a_ppb", p.off_a_ppb);
    record_u64(&rec, "off_b_ppb", p.off_b_ppb);
    return finish();
}

/* lib/drift_analysis.c: one count of a series' events (drift_count_events),
   events of the kinds given, in order, with counter_ticks[i] each; a
   residual step within +-half counter ticks is one within its brackets. */
static int64_t shim_half_ticks;
static bool shim_within(const struct drift_event *ev, const void *ctx)
{
    (void)ctx;
    return ev->kind == EV_RESIDUAL_STEP && ev->counter_ticks <= shim_half_ticks && ev->counter_ticks >= -shim_half_ticks;
}
const char *shim_drift_counts(const uint32_t *kind, const int64_t *counter_ticks, uint32_t count, int64_t half_ticks)
{
    static struct drift_track t;
    memset(&t, 0, sizeof t);
    shim_half_ticks = half_ticks;
    for (uint32_t i = 0; i < count; i++)
        drift_track_event(&t, (enum drift_event_kind)kind[i], i, 1000 + i, kind[i] != EV_TOO_LONG, counter_ticks[i]);
    struct drift_counts c = drift_count_events(&t, shim_within, 0);
    record_begin(&rec, "drift_counts");
    record_u64(&rec, "event_count", t.event_count);
    record_u64(&rec, "discontinuities", c.discontinuities);
    record_u64(&rec, "gaps", c.gaps);
    record_u64(&rec, "too_long", c.too_long);
    record_u64(&rec, "within_bracket", c.within_bracket);
    return finish();
}

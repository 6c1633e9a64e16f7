/* The inventory section of the report: what was found, where, how wide,
   at what claimed frequency, and why anything is missing. */
#include "../lib/acpi_record.h"
#include "../lib/cmdline.h"
#include "../lib/counters.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "checks.h"
#include "console.h"
#include "discover.h"
#include "paging.h"
#include "report_util.h"

static const char *yes_no(bool b) { return b ? "yes" : "no"; }

static void report_cpu(const struct cpu_probe *cpu)
{
    const struct cpu_info *ci = &cpu->info;
    struct record r;
    kprintf("\n== CPU time features (CPUID) ==\n");
    kprintf("  TSC %s, RDTSCP %s, invariant TSC %s, TSC-deadline %s, TSC_ADJUST %s\n", yes_no(ci->tsc), yes_no(ci->rdtscp),
            yes_no(ci->invariant_tsc), yes_no(ci->tsc_deadline), yes_no(ci->tsc_adjust));
    kprintf("  Max leaves: standard 0x%x, extended 0x%x, hypervisor 0x%x\n", ci->max_leaf, ci->max_ext_leaf, ci->max_hv_leaf);
    for (int i = 0; i < CPUID_LEAF_COUNT; i++) {
        const struct cpuid_leaf *l = &cpu->leaves[i];
        record_begin(&r, "cpuid");
        record_hex(&r, "leaf", l->leaf);
        record_u64(&r, "subleaf", l->subleaf);
        record_bool(&r, "valid", l->valid);
        record_hex(&r, "eax", l->eax);
        record_hex(&r, "ebx", l->ebx);
        record_hex(&r, "ecx", l->ecx);
        record_hex(&r, "edx", l->edx);
        emit(&r);
    }
    record_begin(&r, "cpu_features");
    record_bool(&r, "tsc", ci->tsc);
    record_bool(&r, "rdtscp", ci->rdtscp);
    record_bool(&r, "invariant_tsc", ci->invariant_tsc);
    record_bool(&r, "tsc_deadline", ci->tsc_deadline);
    record_bool(&r, "tsc_adjust", ci->tsc_adjust);
    record_bool(&r, "hypervisor", ci->hypervisor);
    record_hex(&r, "max_leaf", ci->max_leaf);
    record_hex(&r, "max_ext_leaf", ci->max_ext_leaf);
    record_hex(&r, "max_hv_leaf", ci->max_hv_leaf);
    record_str(&r, "lfence", discovered.lfence.state);
    record_str(&r, "lfence_detail", discovered.lfence.detail);
    emit(&r);

    if (ci->claim_count == 0)
        kprintf("  Claimed frequencies: none (no CPUID leaf 0x15, 0x16 or 0x40000010 states one)\n");
    else
        kprintf("  Claimed frequencies (stated by the CPU or hypervisor, not measured):\n");
    for (int i = 0; i < ci->claim_count; i++) {
        char f[FMT_FIXED_CHARS];
        kprintf("    %-17s %-9s %17s MHz\n", ci->claims[i].source, ci->claims[i].what, fmt_fixed(f, (int64_t)ci->claims[i].hz, 6, 6));
        record_begin(&r, "freq_claim");
        record_str(&r, "source", ci->claims[i].source);
        record_str(&r, "what", ci->claims[i].what);
        record_u64(&r, "hz", ci->claims[i].hz);
        emit(&r);
    }
    kprintf("  LFENCE: %s (%s)\n", discovered.lfence.state, discovered.lfence.detail);
    kprintf("  TSC read variants:\n");
    for (int i = 0; i < TSC_VARIANT_COUNT; i++) {
        const struct tsc_variant *v = &tsc_variants[i];
        kprintf("    %-13s %s%s\n", v->name, v->available ? "available" : "skipped: ", v->available ? "" : v->reason);
        record_begin(&r, "tsc_variant");
        record_str(&r, "name", v->name);
        record_bool(&r, "available", v->available);
        if (v->available)
            record_null(&r, "reason");
        else
            record_str(&r, "reason", v->reason);
        emit(&r);
    }
    if (!ci->invariant_tsc && ci->tsc)
        report_note("no invariant-TSC bit: the TSC rate may change with P-states or stop in deep C-states");
}

/* dump_acpi on the command line: every table the root lists (and the RSDP,
   the root itself and the DSDT) as hex in acpi_dump records, like acpidump, for
   offline reading and for the fuzzer's seeds (tests/fuzz/make_seeds.py). */
#define DUMP_CHUNK 512

static void dump_bytes(const char *sig, uint64_t address, const uint8_t *p, uint32_t len)
{
    static const char digits[] = "0123456789abcdef";
    for (uint32_t off = 0; off < len; off += DUMP_CHUNK) {
        char hex[2 * DUMP_CHUNK + 1];
        uint32_t n = len - off < DUMP_CHUNK ? len - off : DUMP_CHUNK;
        for (uint32_t i = 0; i < n; i++) {
            hex[2 * i] = digits[p[off + i] >> 4];
            hex[2 * i + 1] = digits[p[off + i] & 15];
        }
        hex[2 * n] = '\0';
        struct record r;
        record_begin(&r, "acpi_dump");
        record_str(&r, "signature", sig);
        record_hex(&r, "address", address);
        record_u64(&r, "offset", off);
        record_u64(&r, "length", len);
        record_str(&r, "hex", hex);
        emit(&r);
    }
}

static void dump_acpi(const struct boot_info *bi)
{
    const struct acpi_info *a = &discovered.acpi;
    if (!cmdline_get(&boot_cmdline, "dump_acpi") || !a->rsdp_found)
        return;
    if (a->rsdp_address && paging_map(a->rsdp_address, 36, false, 0))
        dump_bytes("RSD PTR ", a->rsdp_address, (const uint8_t *)(uintptr_t)a->rsdp_address, a->revision >= 2 ? 36 : 20);
    else if (bi->rsdp_new_present)
        dump_bytes("RSD PTR ", 0, bi->rsdp_new, bi->rsdp_new_len);
    else if (bi->rsdp_old_present)
        dump_bytes("RSD PTR ", 0, bi->rsdp_old, 20);
    if (a->root_found && paging_map(a->root_address, 36, false, 0)) {
        const uint8_t *root = (const uint8_t *)(uintptr_t)a->root_address;
        uint32_t len = (uint32_t)root[4] | (uint32_t)root[5] << 8 | (uint32_t)root[6] << 16 | (uint32_t)root[7] << 24;
        if (len <= ACPI_MAX_TABLE_BYTES && paging_map(a->root_address, len, false, 0))
            dump_bytes(a->root_is_xsdt ? "XSDT" : "RSDT", a->root_address, root, len);
    }
    for (int i = 0; i < a->table_count; i++) {
        const struct acpi_table_ref *t = &a->tables[i];
        if (t->valid && paging_map(t->address, t->length, false, 0))
            dump_bytes(t->signature, t->address, (const uint8_t *)(uintptr_t)t->address, t->length);
    }
    /* the DSDT too, as acpidump gives it: the FADT names it, the root does not */
    if (a->dsdt_found && paging_map(a->dsdt_address, a->dsdt_length, false, 0))
        dump_bytes("DSDT", a->dsdt_address, (const uint8_t *)(uintptr_t)a->dsdt_address, a->dsdt_length);
}

static void report_acpi(void)
{
    const struct acpi_info *a = &discovered.acpi;
    struct record r;
    kprintf("\n== ACPI tables ==\n");
    if (a->rsdp_found) {
        kprintf("  RSDP revision %u, OEM \"%s\", from the %s", a->revision, a->oem_id, a->rsdp_source);
        if (a->rsdp_address)
            kprintf(" at 0x%llx", (unsigned long long)a->rsdp_address);
        kprintf("\n");
    }
    if (a->root_found)
        kprintf("  %s at 0x%llx lists %d tables:\n", a->root_is_xsdt ? "XSDT" : "RSDT", (unsigned long long)a->root_address, a->table_count);
    for (int i = 0; i < a->table_count; i++) {
        const struct acpi_table_ref *t = &a->tables[i];
        kprintf("    %-4s at 0x%-10llx %6u bytes  %s\n", t->signature, (unsigned long long)t->address, t->length,
                t->valid ? "valid" : "REJECTED");
        record_begin(&r, "acpi_table");
        record_str(&r, "signature", t->signature);
        record_hex(&r, "address", t->address);
        record_u64(&r, "length", t->length);
        record_bool(&r, "valid", t->valid);
        emit(&r);
    }
    if (a->madt_found)
        kprintf("  MADT: %u of %u processors enabled\n", a->cpus_enabled, a->cpus_listed);
    for (int i = 0; i < a->message_count; i++) {
        kprintf("  ACPI: %s\n", a->messages[i]);
        record_begin(&r, "acpi_message");
        record_str(&r, "text", a->messages[i]);
        emit(&r);
    }
    if (a->messages_dropped)
        kprintf("  ACPI: %u more message%s not kept\n", a->messages_not_kept, a->messages_not_kept == 1 ? "" : "s");
    if (discovered.acpi_faulted)
        kprintf("  ACPI: reading the tables faulted: %s; the run goes on without them\n", discovered.acpi_fault);

    acpi_record(&r, a, discovered.acpi_faulted);
    emit(&r);

    if (discovered.acpi_faulted)
        check_skip("ACPI tables", "reading them faulted (%s): no HPET or PM timer from ACPI", discovered.acpi_fault);
    else if (a->rsdp_found && a->root_found)
        check_pass("ACPI tables", "RSDP revision %u from the %s, %s with %d tables", a->revision, a->rsdp_source,
                   a->root_is_xsdt ? "XSDT" : "RSDT", a->table_count);
    else if (!a->rsdp_found)
        check_skip("ACPI tables", "no valid RSDP found (the machine may have ACPI disabled): no HPET or PM timer from ACPI");
    else
        check_skip("ACPI tables", "the RSDP gives no usable RSDT or XSDT: %s", a->message_count ? a->messages[a->message_count - 1] : "");
}

static void report_hpet(void)
{
    const struct acpi_info *a = &discovered.acpi;
    const struct hpet *h = &discovered.hpet;
    struct record r;
    if (a->hpet_found) {
        kprintf("\n== HPET ==\n");
        kprintf("  ACPI HPET table: base 0x%llx (%s space), block ID 0x%08x\n    (%u comparators, %s), number %u, min tick %u\n",
                (unsigned long long)a->hpet_base.address, a->hpet_base.space_id == ACPI_GAS_MEMORY ? "memory" : "other",
                a->hpet_block_id, a->hpet_comparators, a->hpet_64bit ? "64-bit" : "32-bit", a->hpet_number, a->hpet_min_tick);
    }
    if (!h->base)
        return;
    kprintf("  Registers: revision %u, %u comparators, %s counter, legacy routing %s,\n    vendor 0x%04x, period %u fs\n",
            h->revision, h->comparators, h->counter_64bit ? "64-bit" : "32-bit", h->legacy_capable ? "capable" : "absent",
            h->vendor, h->period_fs);
    record_begin(&r, "hpet");
    record_hex(&r, "base", h->base);
    record_hex(&r, "capabilities", h->caps);
    record_u64(&r, "revision", h->revision);
    record_u64(&r, "comparators", h->comparators);
    record_bool(&r, "counter_64bit", h->counter_64bit);
    record_bool(&r, "legacy_capable", h->legacy_capable);
    record_hex(&r, "vendor", h->vendor);
    record_u64(&r, "period_fs", h->period_fs);
    emit(&r);
}

static void report_pm_latch(void)
{
    if (!counters[COUNTER_ACPI_PM].present)
        return;
    uint64_t bad = discovered.pm.disagreements;
    kprintf("\n== ACPI PM timer ==\n  Latch check: %llu disagreements in 256 triple reads (%s)\n", (unsigned long long)bad,
            bad ? "this chipset's latch is unreliable: read it three times, as Linux does" : "the latch reads cleanly");
    struct record r;
    record_begin(&r, "pm_timer");
    record_u64(&r, "triple_reads", 256);
    record_u64(&r, "disagreements", bad);
    record_u64(&r, "width_bits", discovered.pm.width);
    emit(&r);
}

/* Where a counter's nominal rate comes from (docs/output.md, "Nominal
   rates under a VMM"): its kind, the VMM and the constant behind it, and
   the spread still open between two candidates. */
static void nominal_records(struct record *r, const struct counter *c)
{
    const struct vmm_rate *a = c->nominal_vmm[0], *b = c->nominal_vmm[1];
    record_str(r, "nominal_from", c->nominal_from);
    record_str(r, "nominal_vmm", a ? vmm_name(a->vmm) : 0);
    if (a) {
        char text[160];
        if (b)
            fmt_format(text, sizeof text, "%s, %s; or %s, %s", a->constant, a->file, b->constant, b->file);
        else
            fmt_format(text, sizeof text, "%s, %s", a->constant, a->file);
        record_str(r, "nominal_constant", text);
    } else
        record_null(r, "nominal_constant");
    if (b)
        record_fixed(r, "nominal_spread_ppm", c->nominal_spread_ppb, 3);
    else
        record_null(r, "nominal_spread_ppm");
}

/* "nominal: KVM's in-kernel PIT, 1,193,181 Hz (KVM_PIT_FREQ)", its file
   beneath, within 80 columns */
static void nominal_vmm_lines(const struct counter *c)
{
    const struct vmm_rate *a = c->nominal_vmm[0], *b = c->nominal_vmm[1];
    if (b) {
        char f[FMT_FIXED_CHARS];
        kprintf("    nominal: %s or %s, midway,\n      +-%s ppm until measured (%s or %s)\n", a->model, b->model,
                fmt_fixed(f, c->nominal_spread_ppb, 3, 3), a->constant, b->constant);
    } else
        kprintf("    nominal: %s\n      in %s\n", c->nominal_source, a->file);
    kprintf("    read by %s\n", c->access);
}

static void report_counters(void)
{
    struct record r;
    kprintf("\n== Inventory of time counters ==\n");
    kprintf("  %-14s %-7s %5s %19s\n", "counter", "state", "width", "nominal frequency");
    for (int i = 0; i < COUNTER_COUNT; i++) {
        const struct counter *c = &counters[i];
        char f[FMT_FIXED_CHARS];
        record_begin(&r, "counter");
        record_str(&r, "name", c->name);
        record_bool(&r, "present", c->present);
        if (c->present) {
            record_null(&r, "reason");
            if (c->nominal_millihz)
                record_fixed(&r, "nominal_hz", (int64_t)c->nominal_millihz, 3);
            else
                record_null(&r, "nominal_hz");
            record_str(&r, "nominal_source", c->nominal_source);
            nominal_records(&r, c);
            record_u64(&r, "width_bits", c->width_bits);
            record_str(&r, "access", c->access);
            record_str(&r, "reference_role", counter_reference_role(i));
            record_str(&r, "note", c->note[0] ? c->note : 0);
            if (c->nominal_millihz)
                kprintf("  %-14s %-7s %5u %15s MHz\n", c->name, "present", c->width_bits,
                        fmt_fixed(f, (int64_t)c->nominal_millihz, 9, 6));
            else
                kprintf("  %-14s %-7s %5u %19s\n", c->name, "present", c->width_bits, "no rate stated");
            if (c->nominal_estimated)
                /* no rate stated anywhere: the figure above, if any, is a start-up estimate, not a nominal */
                kprintf("    no rate stated%s;\n    read by %s\n",
                        c->nominal_millihz ? ": the figure is an estimate at start-up, not a nominal" : " and none estimated",
                        c->access);
            else if (c->nominal_vmm[0] && !strcmp(c->nominal_from, "vmm"))
                nominal_vmm_lines(c);
            else
                kprintf("    nominal from %s; read by %s\n", c->nominal_source, c->access);
            if (c->note[0])
                kprintf("    %s%s\n", c->note, c->set_aside ? ": measured, never the default reference" : "");
            check_pass(c->name, "present: %s, %u bits", c->access, c->width_bits);
        } else {
            record_str(&r, "reason", c->reason);
            record_null(&r, "nominal_hz");
            record_null(&r, "nominal_source");
            record_null(&r, "nominal_from");
            record_null(&r, "nominal_vmm");
            record_null(&r, "nominal_constant");
            record_null(&r, "nominal_spread_ppm");
            record_null(&r, "width_bits");
            record_null(&r, "access");
            kprintf("  %-14s %-7s  %s\n", c->name, "absent", c->reason);
            check_skip(c->name, "%s", c->reason);
        }
        emit(&r);
    }
}

/* kvmclock's page and Hyper-V's claims, as found. */
static void report_pvclocks(void)
{
    const struct pvclocks *pv = &discovered.pv;
    struct record r;
    if (pv->kvm_base) {
        kprintf("  kvmclock: KVM at CPUID 0x%x, features 0x%x", pv->kvm_base, pv->kvm_features);
        if (counters[COUNTER_KVMCLOCK].present)
            kprintf("; tsc_to_system_mul 0x%x, tsc_shift %d,\n    stable bit %s%s; %u version retries while it settled\n", pv->mul,
                    pv->shift, pv->stable_bit ? "set" : "clear",
                    pv->stable_bit_meaningful ? "" : " (KVM does not promise to keep it: CPUID feature bit 24 clear)",
                    pv->version_retries);
        else
            kprintf("\n");
        record_begin(&r, "pvclock");
        record_hex(&r, "kvm_cpuid_base", pv->kvm_base);
        record_hex(&r, "kvm_features", pv->kvm_features);
        record_bool(&r, "registered", counters[COUNTER_KVMCLOCK].present);
        record_bool(&r, "stable_bit", pv->stable_bit);
        record_bool(&r, "stable_bit_promised", pv->stable_bit_meaningful);
        record_u64(&r, "version_retries", pv->version_retries);
        record_i64(&r, "tsc_shift", pv->shift);
        record_u64(&r, "tsc_to_system_mul", pv->mul);
        emit(&r);
    }
    if (!pv->hyperv)
        return;
    kprintf("  Hyper-V interface: features 0x%x%s\n", pv->hv_features,
            pv->hv_features & HV_ACCESS_TSC_INVARIANT ? " (says the TSC is invariant)" : "");
    record_begin(&r, "hyperv");
    record_hex(&r, "features", pv->hv_features);
    record_bool(&r, "tsc_invariant", pv->hv_features & HV_ACCESS_TSC_INVARIANT);
    record_bool(&r, "page_valid", pv->hv_page_valid);
    record_u64(&r, "between_checked", pv->hv_between_checked);
    record_u64(&r, "between_outside", pv->hv_between_outside);
    emit(&r);
    const struct {
        uint64_t hz;
        const char *source, *what;
    } claims[] = {{pv->hv_tsc_hz, "hv.msr.40000022", "tsc"}, {pv->hv_apic_hz, "hv.msr.40000023", "bus"}};
    for (unsigned i = 0; i < 2; i++) {
        if (!claims[i].hz)
            continue;
        char f[FMT_FIXED_CHARS];
        kprintf("    Hyper-V claims the %s runs at %s MHz (MSR %s)\n", claims[i].what, fmt_fixed(f, (int64_t)claims[i].hz, 6, 6),
                claims[i].source + 7);
        record_begin(&r, "freq_claim");
        record_str(&r, "source", claims[i].source);
        record_str(&r, "what", claims[i].what);
        record_u64(&r, "hz", claims[i].hz);
        emit(&r);
    }
    if (pv->hv_between_checked) {
        if (pv->hv_between_outside)
            check_fail("Hyper-V reference counter within its TSC page", "%u of %u MSR readings fell outside the page readings around them",
                       pv->hv_between_outside, pv->hv_between_checked);
        else
            check_pass("Hyper-V reference counter within its TSC page", "%u MSR readings, each between the page readings around it",
                       pv->hv_between_checked);
    }
}

void discover_report(const struct cpu_probe *cpu, const struct boot_info *bi)
{
    report_cpu(cpu);
    report_acpi();
    dump_acpi(bi);
    report_hpet();
    report_pm_latch();
    report_counters();
    report_pvclocks();
}

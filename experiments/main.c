/* The run: discover, then measure, then report. Interrupts stay off from
   the first instruction to the last; nothing else runs. */
#include <stdint.h>

#include "../drivers/cpu.h"
#include "../drivers/cpuinfo.h"
#include "../kernel/checks.h"
#include "../kernel/console.h"
#include "../kernel/discover.h"
#include "../kernel/exceptions.h"
#include "../kernel/finish.h"
#include "../kernel/memory.h"
#include "../kernel/percpu.h"
#include "../kernel/probe.h"
#include "../kernel/profile.h"
#include "../kernel/results.h"
#include "../lib/bootinfo.h"
#include "../lib/cmdline.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "experiment.h"
#include "summary.h"
#include "verdict_report.h"

#ifndef CLOCKBENCH_VERSION
#define CLOCKBENCH_VERSION "unknown"
#endif

static struct boot_info boot;
/* For code that needs the memory map after boot (kernel/smp.c: a page for
   the AP trampoline). */

/* How the Secure Boot state is known: only clockbench's EFI entry reads
   the firmware's variables (efi/stub.c); any other loader leaves it unknown. */
static const char *secure_boot_how(void)
{
    static char how[160];
    const char *state = bootinfo_secure_boot(&boot);
    const char *fw = bootinfo_firmware(&boot);
    /* the summary screen's shorter word (bootinfo_secure_boot_shown) with its reason */
    bool not_applicable = !strncmp(bootinfo_secure_boot_shown(&boot), "not applicable", 14);
    if (not_applicable && fw && !strcmp(fw, "bios"))
        fmt_format(how, sizeof how, "not applicable (BIOS: the Multiboot 2 information has no EFI system table tag)");
    else if (not_applicable && boot.protocol == BOOT_MULTIBOOT1)
        fmt_format(how, sizeof how, "not applicable (BIOS: QEMU's Multiboot 1 loader)");
    else if (not_applicable)
        fmt_format(how, sizeof how, "not applicable (PVH entry: no UEFI loaded the image)");
    else if (!boot.efi_state_present)
        fmt_format(how, sizeof how, "%s (not started through clockbench's EFI entry, which reads the firmware's variables)",
                   state);
    else if (boot.efi_secure_boot == BOOTINFO_EFI_VAR_ABSENT)
        fmt_format(how, sizeof how, "%s (the firmware has no readable SecureBoot variable)", state);
    else
        fmt_format(how, sizeof how, "%s (EFI variables SecureBoot=%u, SetupMode=%s, read by clockbench's EFI entry%s)",
                   state, boot.efi_secure_boot, boot.efi_setup_mode == BOOTINFO_EFI_VAR_ABSENT ? "absent" :
                   boot.efi_setup_mode ? "1" : "0", boot.efi_shim ? "; started through shim" : "");
    return how;
}

static void print_banner(void)
{
    const struct console_status *cs = console_status();
    const struct cpu_info *ci = &boot_cpu.info;
    kprintf("\nclockbench %s: time counters, measured with no OS in the way\n", CLOCKBENCH_VERSION);
    kprintf("CPU:        %s, %s\n            family %u, model %u, stepping %u\n", ci->vendor,
            ci->brand[0] ? ci->brand : "no brand string", ci->family, ci->model, ci->stepping);
    if (ci->hypervisor)
        kprintf("Hypervisor: \"%s\" (CPUID leaf 0x40000000, max leaf 0x%x)\n", ci->hv_vendor, ci->max_hv_leaf);
    else
        kprintf("Hypervisor: none reported (CPUID.1:ECX[31] clear)\n");
    if (boot.protocol == BOOT_PVH) /* the start_info names no loader */
        kprintf("Boot:       PVH entry (start_info version %u), command line \"%s\"\n", boot.pvh_version, boot.cmdline);
    else
        kprintf("Boot:       %s via %s, command line \"%s\"\n", boot.loader[0] ? boot.loader : "unnamed loader",
                bootinfo_protocol_name(boot.protocol), boot.cmdline);
    kprintf("Secure Boot: %s\n", secure_boot_how());
    if (cs->serial)
        kprintf("Console:    serial port 0x%x at %u baud, screen %s\n", cs->serial_port, cs->serial_baud, cs->screen);
    else
        kprintf("Console:    no serial port, screen %s\n", cs->screen);

    struct record r;
    record_begin(&r, "schema");
    record_u64(&r, "version", RECORD_SCHEMA_VERSION);
    record_str(&r, "tool", "clockbench");
    record_str(&r, "build", CLOCKBENCH_VERSION);
    console_emit_record(&r);
    record_begin(&r, "machine");
    cpu_identity_record(&r, ci);
    record_str(&r, "loader", boot.loader);
    if (boot.protocol == BOOT_MULTIBOOT1 || boot.protocol == BOOT_MULTIBOOT2)
        record_u64(&r, "multiboot", (uint64_t)boot.protocol);
    else
        record_null(&r, "multiboot");
    record_str(&r, "boot_protocol", boot.protocol == BOOT_PVH ? "pvh" : boot.protocol == BOOT_MULTIBOOT2 ? "multiboot2"
                                     : boot.protocol == BOOT_MULTIBOOT1 ? "multiboot1" : "unknown");
    record_str(&r, "cmdline", boot.cmdline);
    record_str(&r, "build", CLOCKBENCH_VERSION); /* the schema record's, again: the machine record is what a fleet keeps */
    record_str(&r, "secure_boot", bootinfo_secure_boot(&boot));
    record_str(&r, "firmware", bootinfo_firmware(&boot));
    if (boot.efi_state_present) {
        record_str(&r, "secure_boot_source", "efi variables");
        if (boot.efi_setup_mode == BOOTINFO_EFI_VAR_ABSENT)
            record_null(&r, "setup_mode");
        else
            record_bool(&r, "setup_mode", boot.efi_setup_mode == 1);
        record_bool(&r, "shim", boot.efi_shim);
        record_str(&r, "firmware_vendor", boot.efi_firmware_vendor);
        record_hex(&r, "firmware_revision", boot.efi_fw_revision);
        record_hex(&r, "uefi_revision", boot.efi_uefi_revision);
    } else {
        record_str(&r, "secure_boot_source", "none");
        record_null(&r, "setup_mode");
        record_null(&r, "shim");
    }
    record_str(&r, "screen", cs->screen);
    if (cs->serial)
        record_hex(&r, "serial_port", cs->serial_port);
    else
        record_null(&r, "serial_port");
    console_emit_record(&r);
}

static void report_memory(void)
{
    uint64_t usable = 0;
    for (int i = 0; i < boot.mem_count; i++)
        if (boot.mem[i].type == MEM_AVAILABLE)
            usable += boot.mem[i].length;
    kprintf("Memory:     %llu MiB usable in %d map entries%s\n", (unsigned long long)(usable >> 20), boot.mem_count,
            boot.mem_truncated ? " (map truncated)" : "");
    if (boot.mem_count > 0 && usable > 0)
        check_pass("boot memory map", "%d entries, %llu MiB usable", boot.mem_count, (unsigned long long)(usable >> 20));
    else
        check_fail("boot memory map", "the loader gave no usable memory map");
}

/* crash=ud2|pf|gp|de: a deliberate fault outside any probe, to prove the
   exception report and the crash status. */
static void maybe_crash(void)
{
    const char *how = cmdline_get(&boot_cmdline, "crash");
    if (!how)
        return;
    kprintf("Deliberate fault requested: crash=%s\n", how);
    if (!strcmp(how, "ud2"))
        __asm__ volatile("ud2");
    else if (!strcmp(how, "pf"))
        (void)*(volatile uint64_t *)0x7FFF00000000ull; /* canonical but never mapped */
    else if (!strcmp(how, "gp"))
        (void)*(volatile uint64_t *)0x8000000000000000ull; /* non-canonical */
    else if (!strcmp(how, "de")) {
        uint32_t zero = 0;
        __asm__ volatile("xor %%edx, %%edx; mov $1, %%eax; div %0" ::"r"(zero) : "eax", "edx");
    } else
        kprintf("crash=%s is not one of ud2, pf, gp, de; ignored\n", how);
}

void kmain(uint32_t magic, uint32_t info_addr)
{
    percpu_init(0);
    exceptions_init();
    bool boot_ok = bootinfo_parse(magic, 0, info_addr, &boot);
    cmdline_parse(&boot_cmdline, boot.cmdline);
    results.secure_boot = bootinfo_secure_boot(&boot);
    results.secure_boot_shown = bootinfo_secure_boot_shown(&boot);
    console_init(&boot);
    cpuinfo_probe(&boot_cpu);
    print_banner();
    if (!boot_ok)
        check_fail("boot information", "%s", boot.error);
    if (boot_cmdline.truncated)
        kprintf("Note: the command line was longer than %d characters or %d words; the rest was ignored\n",
                CMDLINE_MAX_CHARS, CMDLINE_MAX_WORDS);
    maybe_crash();
    char msr_why[128], msr_list[96];
    if (!msr_fault_setup(msr_why, sizeof msr_why))
        kprintf("Note: %s\n", msr_why);
    else if (msr_fault_list(msr_list, sizeof msr_list))
        kprintf("Injected: these MSRs fault (msr_fault): %s\n", msr_list);
    report_memory();
    discover_all(&boot, &boot_cpu);
    discover_report(&boot_cpu, &boot);
    char note[128];
    const struct profile *prof = profile_select(note, sizeof note);
    if (note[0])
        kprintf("Note: %s\n", note);
    if (!memory_init(&boot))
        kprintf("Note: the memory map has no usable region above the kernel: sample memory is unavailable\n");
    results.tsc_usable = boot_cpu.info.tsc;
    if (!results.tsc_usable)
        kprintf("Note: this CPU does not advertise a TSC (CPUID.1:EDX[4] clear); every experiment\n"
                "      times with it, so none runs, and no figure claims a measured TSC\n");
    experiments_run(prof);
    verdict_report();
    discover_release();
    enum run_status status = checks_summary();
    summary_screen(status);
    run_finish_set_idle(summary_keys);
    run_finish(status);
}

/* Ending a run (see finish.h). ACPI 6.5, 7.4.2.5 (\_S5), 4.8.3.2.1 (PM1
   control: SLP_TYP bits 12:10, SLP_EN bit 13), 4.8.3.7 (sleep control
   register: SLP_TYP bits 4:2, SLP_EN bit 5), 16.1.1 and 4.8.2.1.1 (entering
   ACPI mode through SMI_CMD); the order of the writes is ACPICA's
   (hwsleep.c: SLP_TYP first, then SLP_TYP with SLP_EN; hwesleep.c: one
   write on a hardware-reduced machine). */
#include "finish.h"

#include "../drivers/cpu.h"
#include "../drivers/keyboard.h"
#include "../lib/cmdline.h"
#include "../lib/format.h"
#include "../lib/record.h"
#include "../lib/string.h"
#include "console.h"
#include "paging.h"
#include "results.h"

#define PCI_RESET_CONTROL 0xCF9 /* Intel chipsets' Reset Control Register */
#define   RESET_SYS  (1u << 1)  /* system reset, not only the CPU */
#define   RESET_CPU  (1u << 2)  /* the 0-to-1 edge starts the reset */
#define   RESET_FULL (1u << 3)  /* power-cycle style (full) reset */

#define PM1_CNT_SCI_EN (1u << 0)
#define PM1_CNT_SLP_TYP_SHIFT 10
#define PM1_CNT_SLP_TYP_MASK (7u << 10)
#define PM1_CNT_SLP_EN (1u << 13)
#define SLEEP_CTL_SLP_TYP_SHIFT 2
#define SLEEP_CTL_SLP_EN (1u << 5)

#define CPUID1_ECX_HYPERVISOR (1u << 31)
#define CPUID_HV_VENDOR_LEAF 0x40000000u

/* How long a power-off may take to land before the next way is tried:
   QEMU and Cloud Hypervisor stop the VM within the trapped write; real
   chipsets within milliseconds. ACPICA waits up to 3 s for SCI_EN. */
#define POWER_OFF_WAIT_MS 1000
#define ACPI_MODE_WAIT_MS 3000
#define WAIT_SPIN_CAP 500000000u
#define UNKNOWN_TSC_HZ 6000000000ull /* when no rate is known: the fastest TSC, so a wait is never short */

static void (*finish_idle)(void);
static const struct acpi_info *finish_acpi;

void run_finish_set_idle(void (*idle)(void)) { finish_idle = idle; }
void run_finish_use(const struct acpi_info *acpi) { finish_acpi = acpi; }

const char *run_status_name(enum run_status s)
{
    switch (s) {
    case RUN_PASSED: return "passed";
    case RUN_FAILED: return "failed";
    case RUN_NOTHING_RAN: return "nothing ran";
    case RUN_CRASHED: return "crashed";
    }
    return "unknown";
}

static uint64_t wait_ticks(uint64_t ms)
{
    uint64_t hz = results.tsc_estimate_hz ? results.tsc_estimate_hz : UNKNOWN_TSC_HZ;
    return hz / 1000 * ms;
}

/* Waits ms milliseconds of TSC time (bounded by iterations too), or until
   done(arg) says so; true when done. */
static bool wait_ms(uint64_t ms, bool (*done)(const void *), const void *arg)
{
    uint64_t t0 = rdtsc(), n = wait_ticks(ms);
    for (uint32_t i = 0; i < WAIT_SPIN_CAP && rdtsc() - t0 < n; i++) {
        if (done && done(arg))
            return true;
        cpu_relax();
    }
    return done && done(arg);
}

/* The ways Linux tries in turn (arch/x86/kernel/reboot.c): the keyboard
   controller's reset line, the chipset's reset register, and a triple
   fault, which every x86 turns into a reset. */
void machine_reboot(void)
{
    interrupts_off();
    keyboard_pulse_reset();
    wait_ms(50, 0, 0);
    uint8_t cf9 = inb(PCI_RESET_CONTROL) & (uint8_t)~(RESET_SYS | RESET_CPU | RESET_FULL);
    outb(PCI_RESET_CONTROL, cf9 | RESET_SYS);
    wait_ms(1, 0, 0);
    outb(PCI_RESET_CONTROL, cf9 | RESET_SYS | RESET_CPU | RESET_FULL);
    wait_ms(50, 0, 0);
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } no_idt = {0, 0};
    __asm__ volatile("lidt %0; int3" ::"m"(no_idt));
    for (;;)
        cpu_halt();
}

/* --- which machine this is --- */
enum machine_kind { MACHINE_QEMU, MACHINE_VMM, MACHINE_PC };

struct machine {
    enum machine_kind kind;
    char hv_vendor[13];     /* CPUID 0x40000000, "" without a hypervisor */
    const char *why;        /* what identified it */
    char vendor[48];        /* the FADT's hypervisor vendor, as "FADT hypervisor vendor \"...\"", or "" */
    bool firecracker;       /* the firmware names Firecracker */
    bool cloud_hypervisor;  /* the firmware names Cloud Hypervisor */
};

static void read_hv_vendor_at(uint32_t leaf, char out[13])
{
    out[0] = '\0';
    if (!(cpuid(1, 0).ecx & CPUID1_ECX_HYPERVISOR))
        return;
    struct cpuid_regs r = cpuid(leaf, 0);
    uint32_t regs[3] = {r.ebx, r.ecx, r.edx};
    int n = 0;
    for (int i = 0; i < 12; i++) {
        char c = (char)(regs[i / 4] >> (8 * (i % 4)));
        if (!c)
            break;
        out[n++] = c >= 0x20 && c < 0x7F ? c : '?';
    }
    out[n] = '\0';
}

static void read_hv_vendor(char out[13]) { read_hv_vendor_at(CPUID_HV_VENDOR_LEAF, out); }

/* QEMU is known from its firmware, never by touching a port it may not
   have: its fw_cfg device in the DSDT (_HID "QEMU0002", which QEMU's own
   ACPI builder adds on pc, q35 and microvm, whichever firmware or loader
   boots us), or TCG (QEMU's own accelerator) in CPUID. Nothing else makes
   a machine QEMU: a virtual machine with no ACPI tables, or one whose run
   ended before they were read, is not identified (issue 37: Bochs, or any
   other VMM, may have no isa-debug-exit, or a device of its own at 0xf4).
   The command line's `debug_exit` word vouches for the port instead
   (clockbench run adds it under KVM, where QEMU with acpi=off is such a
   machine). The ACPI OEM ID ("BOCHS ") is not used: it is QEMU's default
   but a user's to change, and Bochs's too. */
static void identify(struct machine *m)
{
    *m = (struct machine){.kind = MACHINE_PC, .why = "no hypervisor (CPUID.1:ECX[31] clear)"};
    read_hv_vendor(m->hv_vendor);
    const struct acpi_info *a = finish_acpi;
    if (a && a->qemu_fw_cfg) {
        m->kind = MACHINE_QEMU;
        m->why = "the DSDT declares QEMU's fw_cfg device (_HID \"QEMU0002\")";
        return;
    }
    if (!strcmp(m->hv_vendor, "TCGTCGTCGTCG")) {
        m->kind = MACHINE_QEMU;
        m->why = "CPUID 0x40000000 names TCG, QEMU's accelerator";
        return;
    }
    if (!m->hv_vendor[0])
        return;
    m->kind = MACHINE_VMM;
    if (!a) {
        m->why = "a hypervisor, not identified: the run ended before the ACPI tables were read";
        return;
    }
    if (!a->rsdp_found) {
        m->why = "a hypervisor with no ACPI tables: not identified";
        return;
    }
    m->why = "a hypervisor whose DSDT has no QEMU fw_cfg device";
    if (a->hypervisor_vendor[0])
        fmt_format(m->vendor, sizeof m->vendor, "FADT hypervisor vendor \"%s\"", a->hypervisor_vendor);
    m->firecracker = !strcmp(a->hypervisor_vendor, "FIRECKVM") || !strcmp(a->oem_id, "FIRECK");
    /* vmm/src/acpi.rs: every table's OEM ID "CLOUDH", the FADT's vendor "CLOUDHYP" */
    m->cloud_hypervisor = !strcmp(a->hypervisor_vendor, "CLOUDHYP") || !strcmp(a->oem_id, "CLOUDH");
}

/* See finish.h. QEMU's accelerator from CPUID: TCG names itself; KVM's
   signature is at 0x40000000, or at 0x40000100 behind Hyper-V's (hv-*). */
enum vmm_id machine_vmm(void)
{
    struct machine m;
    identify(&m);
    if (m.kind == MACHINE_QEMU) {
        char at_hv[13];
        read_hv_vendor_at(CPUID_HV_VENDOR_LEAF + 0x100, at_hv);
        if (!strcmp(m.hv_vendor, "TCGTCGTCGTCG"))
            return VMM_QEMU_TCG;
        if (!strcmp(m.hv_vendor, "KVMKVMKVM") || !strcmp(at_hv, "KVMKVMKVM"))
            return VMM_QEMU_KVM;
        return VMM_UNKNOWN; /* another accelerator (HVF, WHPX): its PIT and APIC are not in the table */
    }
    if (m.kind == MACHINE_VMM && m.firecracker)
        return VMM_FIRECRACKER;
    if (m.kind == MACHINE_VMM && m.cloud_hypervisor)
        return VMM_CLOUD_HYPERVISOR;
    return VMM_UNKNOWN;
}

/* See finish.h. A hardware-reduced machine (FADT flags bit 20) other than
   QEMU: its firmware promises none of the PC's legacy devices, and Linux
   sets up no PIT and no legacy PIC there (arch/x86/kernel/acpi/boot.c,
   acpi_generic_reduced_hw_init). QEMU is excepted: its microvm keeps a PIT
   if asked (pit=on), and it ignores an absent device's ports silently. */
static bool legacy_unpromised(struct machine *m)
{
    const struct acpi_info *a = finish_acpi;
    if (!a || !a->fadt_length || !a->hardware_reduced)
        return false;
    identify(m);
    return m->kind != MACHINE_QEMU;
}

/* Firecracker has a PIT all the same (KVM's in-kernel one, which it
   creates); Cloud Hypervisor has none, and logs each access to 0x42/0x43. */
const char *machine_pit_ruled_out(void)
{
    struct machine m;
    if (!legacy_unpromised(&m) || (m.kind == MACHINE_VMM && m.firecracker))
        return 0;
    return "not probed: hardware-reduced ACPI (FADT flags bit 20) promises no PIT, and no PIT is known on this machine";
}

/* The same for the legacy PIC (0x20/0x21, 0xA0/0xA1): Linux sets up none
   there (legacy_pic = &null_legacy_pic); Firecracker has KVM's in-kernel
   one all the same, Cloud Hypervisor none, and logs each write to it. */
const char *machine_pic_ruled_out(void)
{
    struct machine m;
    if (!legacy_unpromised(&m) || (m.kind == MACHINE_VMM && m.firecracker))
        return 0;
    return "hardware-reduced ACPI (FADT flags bit 20) promises no legacy PIC, and none is known on this machine";
}

/* ACPI 6.5, 5.2.9.3, Table 5.11: IAPC_BOOT_ARCH bit 2, VGA Not Present: the
   OS "must not blindly probe" its ports (Firecracker sets it). Cloud
   Hypervisor has no VGA either, yet leaves the bit clear: there the
   hardware-reduced rule above decides. */
#define FADT_IAPC_VGA_NOT_PRESENT (1u << 2)

const char *machine_vga_ruled_out(void)
{
    const struct acpi_info *a = finish_acpi;
    if (a && a->iapc_boot_arch_valid && (a->iapc_boot_arch & FADT_IAPC_VGA_NOT_PRESENT))
        return "the FADT says VGA Not Present (IAPC_BOOT_ARCH bit 2)";
    struct machine m;
    if (legacy_unpromised(&m))
        return "hardware-reduced ACPI (FADT flags bit 20) promises no VGA";
    return 0;
}

static const char *kind_name(enum machine_kind k)
{
    return k == MACHINE_QEMU ? "qemu" : k == MACHINE_VMM ? "vmm" : "pc";
}

/* One record and one line before each way out, so nothing is silent. */
static void announce(const char *way, const char *detail)
{
    struct record r;
    record_begin(&r, "power_off");
    record_str(&r, "way", way);
    record_str(&r, "detail", detail);
    console_emit_record(&r);
    /* two lines, each within the report's 80 columns */
    serial_printf("clockbench: ending the machine: %s\n  %s\n", way, detail);
    console_flush();
}

/* tried: the write was made (and the machine went on); else it could not be made */
static void failed(const char *way, bool tried, const char *why)
{
    struct record r;
    record_begin(&r, "power_off_failed");
    record_str(&r, "way", way);
    record_bool(&r, "tried", tried);
    record_str(&r, "reason", why);
    console_emit_record(&r);
    serial_printf("clockbench: %s %s: %s\n", way, tried ? "did not end the machine" : "cannot be tried", why);
    console_flush();
}

/* --- ACPI S5 --- */
static bool gas_usable(const struct acpi_gas *g, char *why, unsigned n, const char *name)
{
    if (!g->address) {
        fmt_format(why, n, "the FADT gives no %s", name);
        return false;
    }
    if (g->space_id != ACPI_GAS_IO && g->space_id != ACPI_GAS_MEMORY) {
        fmt_format(why, n, "%s is in address space %u, neither I/O nor memory", name, g->space_id);
        return false;
    }
    const char *pwhy = "";
    if (g->space_id == ACPI_GAS_MEMORY && !paging_map(g->address, 2, true, &pwhy)) {
        fmt_format(why, n, "%s at 0x%llx cannot be mapped: %s", name, (unsigned long long)g->address, pwhy);
        return false;
    }
    if (g->space_id == ACPI_GAS_IO && g->address > 0xFFFF) {
        fmt_format(why, n, "%s names port 0x%llx, beyond the 64 KiB I/O space", name, (unsigned long long)g->address);
        return false;
    }
    return true;
}

static uint16_t gas_read16(const struct acpi_gas *g)
{
    if (g->space_id == ACPI_GAS_IO)
        return inw((uint16_t)g->address);
    return *(volatile uint16_t *)(uintptr_t)g->address;
}

static void gas_write16(const struct acpi_gas *g, uint16_t v)
{
    if (g->space_id == ACPI_GAS_IO)
        outw((uint16_t)g->address, v);
    else
        *(volatile uint16_t *)(uintptr_t)g->address = v;
}

static void gas_write8(const struct acpi_gas *g, uint8_t v)
{
    if (g->space_id == ACPI_GAS_IO)
        outb((uint16_t)g->address, v);
    else
        *(volatile uint8_t *)(uintptr_t)g->address = v;
}

static bool sci_enabled(const void *g) { return gas_read16(g) & PM1_CNT_SCI_EN; }

static void gas_text(char *out, unsigned n, const struct acpi_gas *g)
{
    fmt_format(out, n, "%s 0x%llx", g->space_id == ACPI_GAS_IO ? "I/O" : "MMIO", (unsigned long long)g->address);
}

/* False with why when S5 cannot be tried (*tried false) or did not take. */
static bool acpi_s5(char *why, unsigned n, bool *tried)
{
    *tried = false;
    const struct acpi_info *a = finish_acpi;
    if (!a || !a->fadt_length) {
        fmt_format(why, n, "%s", !a ? "the ACPI tables were not read" : "no valid FADT");
        return false;
    }
    if (!a->s5.found) {
        fmt_format(why, n, "%s", a->s5.why[0] ? a->s5.why : "no \\_S5 package");
        return false;
    }
    char detail[160], where[48];
    if (a->hardware_reduced) {
        /* ACPI 6.5, 4.1: a hardware-reduced machine has no PM1 blocks; its
           sleep control register is the way (ACPICA's hwesleep.c) */
        if (!gas_usable(&a->sleep_control, why, n, "SLEEP_CONTROL_REG"))
            return false;
        uint8_t v = (uint8_t)(((a->s5.slp_typa << SLEEP_CTL_SLP_TYP_SHIFT) & 0x1C) | SLEEP_CTL_SLP_EN);
        gas_text(where, sizeof where, &a->sleep_control);
        fmt_format(detail, sizeof detail, "ACPI S5: writing 0x%02x to SLEEP_CONTROL_REG (%s), SLP_TYP %u from \\_S5", v, where,
                   a->s5.slp_typa);
        announce("acpi_s5", detail);
        gas_write8(&a->sleep_control, v);
    } else {
        if (!gas_usable(&a->pm1a_cnt, why, n, "PM1a control block"))
            return false;
        bool b = a->pm1b_cnt.address && gas_usable(&a->pm1b_cnt, why, n, "PM1b control block");
        /* Enter ACPI mode first where the firmware has not (SCI_EN clear and
           an SMI_CMD port): the PM1 registers may belong to SMM until then. */
        if (!(gas_read16(&a->pm1a_cnt) & PM1_CNT_SCI_EN) && a->smi_cmd && a->acpi_enable && a->smi_cmd <= 0xFFFF) {
            fmt_format(detail, sizeof detail, "entering ACPI mode: writing 0x%02x to SMI_CMD (I/O 0x%x)", a->acpi_enable,
                       a->smi_cmd);
            announce("acpi_enable", detail);
            outb((uint16_t)a->smi_cmd, a->acpi_enable);
            if (!wait_ms(ACPI_MODE_WAIT_MS, sci_enabled, &a->pm1a_cnt))
                serial_printf("clockbench: SCI_EN still clear %u ms after ACPI_ENABLE; trying S5 anyway\n", ACPI_MODE_WAIT_MS);
        }
        uint16_t ca = gas_read16(&a->pm1a_cnt) & (uint16_t)~(PM1_CNT_SLP_TYP_MASK | PM1_CNT_SLP_EN);
        uint16_t typa = (uint16_t)(ca | (a->s5.slp_typa << PM1_CNT_SLP_TYP_SHIFT));
        uint16_t cb = 0, typb = 0;
        if (b) {
            cb = gas_read16(&a->pm1b_cnt) & (uint16_t)~(PM1_CNT_SLP_TYP_MASK | PM1_CNT_SLP_EN);
            typb = (uint16_t)(cb | (a->s5.slp_typb << PM1_CNT_SLP_TYP_SHIFT));
        }
        gas_text(where, sizeof where, &a->pm1a_cnt);
        fmt_format(detail, sizeof detail, "ACPI S5: writing 0x%04x to %s (%s)%s, SLP_TYPa %u and SLP_TYPb %u from \\_S5",
                   typa | PM1_CNT_SLP_EN, a->pm1a_cnt_field, where, b ? " and PM1b" : "", a->s5.slp_typa, a->s5.slp_typb);
        announce("acpi_s5", detail);
        gas_write16(&a->pm1a_cnt, typa);
        if (b)
            gas_write16(&a->pm1b_cnt, typb);
        gas_write16(&a->pm1a_cnt, typa | PM1_CNT_SLP_EN);
        if (b)
            gas_write16(&a->pm1b_cnt, typb | PM1_CNT_SLP_EN);
    }
    *tried = true;
    wait_ms(POWER_OFF_WAIT_MS, 0, 0);
    fmt_format(why, n, "the machine still runs %u ms after the write", POWER_OFF_WAIT_MS);
    return false;
}

/* --- the ways out, per machine --- */
static void power_off(const struct machine *m)
{
    char why[ACPI_MESSAGE_CHARS + 16];
    bool tried;
    if (acpi_s5(why, sizeof why, &tried))
        return;
    failed("acpi_s5", tried, why);
    /* The i8042 reset ends the VM only where the VMM has no reboot:
       Firecracker (src/vmm/src/devices/legacy/i8042.rs, CMD_RESET_CPU stops
       the VMM). QEMU (without -no-reboot), Cloud Hypervisor and every PC
       restart instead, and the run would begin again, silently: a loop. */
    if (m->kind == MACHINE_VMM && m->firecracker) {
        announce("i8042_reset", "writing 0xFE to the keyboard controller (I/O 0x64): Firecracker stops on it");
        keyboard_pulse_reset();
        wait_ms(POWER_OFF_WAIT_MS, 0, 0);
        failed("i8042_reset", true, "the machine still runs (or the controller never took the command)");
    } else {
        serial_printf("clockbench: no i8042 reset here: %s\n",
                m->kind == MACHINE_VMM ? "only Firecracker is known to stop on it; this VMM may restart, and the run begin again"
                                       : "on this machine it restarts, and the run would begin again");
    }
}

/* The serial port gets every step; the screen, whose final summary must
   not scroll away, one line: the one it has always had. */
void run_finish(enum run_status s)
{
    interrupts_off();
    serial_printf("clockbench: run ended: %s (status %d).\n", run_status_name(s), (int)s);
    struct machine m;
    identify(&m);
    const char *word = cmdline_get(&boot_cmdline, "poweroff");
    bool asked = word && !word[0];
    if (word && word[0])
        serial_printf("Note: poweroff=%s ignored: the word takes no value\n", word);
    /* short lines, each within the report's 80 columns */
    serial_printf("clockbench: machine: %s%s%s%s\n  identified by: %s\n", kind_name(m.kind),
                  m.hv_vendor[0] ? " (CPUID hypervisor \"" : "", m.hv_vendor, m.hv_vendor[0] ? "\")" : "", m.why);
    if (m.vendor[0])
        serial_printf("  %s\n", m.vendor);
    struct record r;
    record_begin(&r, "ending");
    record_str(&r, "machine", kind_name(m.kind));
    record_str(&r, "identified_by", m.why);
    record_str(&r, "hypervisor", m.hv_vendor[0] ? m.hv_vendor : 0);
    record_str(&r, "fadt_vendor", finish_acpi && finish_acpi->hypervisor_vendor[0] ? finish_acpi->hypervisor_vendor : 0);
    record_bool(&r, "poweroff", asked);
    console_emit_record(&r);
    console_flush();
    /* the command line vouches for QEMU's isa-debug-exit where the machine
       cannot be identified (QEMU under KVM with no ACPI tables) */
    const char *vouch = cmdline_get(&boot_cmdline, "debug_exit");
    bool vouched = vouch && !vouch[0];
    if (vouch && vouch[0])
        serial_printf("Note: debug_exit=%s ignored: the word takes no value\n", vouch);
    if (m.kind == MACHINE_QEMU || vouched) {
        char detail[128];
        fmt_format(detail, sizeof detail, "QEMU's isa-debug-exit%s: writing 0x%02x to I/O 0x%x",
                   m.kind == MACHINE_QEMU ? "" : " (the command line says debug_exit)", DEBUG_EXIT_BASE + s,
                   DEBUG_EXIT_PORT);
        announce("isa_debug_exit", detail);
        outb(DEBUG_EXIT_PORT, (uint8_t)(DEBUG_EXIT_BASE + s));
        /* Still here: QEMU without isa-debug-exit */
        if (asked) {
            failed("isa_debug_exit", true, "QEMU has no isa-debug-exit device; powering off as asked (poweroff)");
            power_off(&m);
        }
    } else if (m.kind == MACHINE_VMM || asked) {
        screen_printf("clockbench: run ended: %s (status %d). Powering off.\n", run_status_name(s), (int)s);
        power_off(&m);
    }
    serial_printf("clockbench: halted; it is safe to power off.\n");
    screen_printf("clockbench: run ended: %s (status %d). Halted; it is safe to power off.\n", run_status_name(s), (int)s);
    console_flush();
    /* The final screen's keys, if there is a screen and a keyboard. */
    if (finish_idle)
        finish_idle();
    for (;;)
        cpu_halt();
}

void run_finish_crashed(void) { run_finish(RUN_CRASHED); }

/* Recoverable probes (see probe.h), on a setjmp/longjmp pair in
   boot/probe_jump.asm. Interrupts are off for the whole run, so the only
   way into the handler while a probe is armed is the probe's own fault. */
#include "probe.h"

#include "../drivers/cpu.h"
#include "../drivers/lapic.h"
#include "../drivers/pvclock.h"
#include "../drivers/kvm_steal.h"
#include "../lib/cmdline.h"
#include "../lib/format.h"
#include "../lib/string.h"
#include "percpu.h"
#include "trap.h"

struct probe_jmp {
    uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
};

__attribute__((returns_twice)) int probe_setjmp(struct probe_jmp *buf);
__attribute__((noreturn)) void probe_longjmp(struct probe_jmp *buf, int value);

/* The armed probe lives in the CPU's own slot: a probe on one CPU must
   never catch another CPU's fault. */
#define armed (this_cpu()->probe_armed)
#define armed_fault (this_cpu()->probe_fault)

bool probe_run(probe_fn fn, void *ctx, struct probe_fault *fault)
{
    struct probe_jmp jb;
    struct probe_jmp *volatile outer = armed;
    struct probe_fault *volatile outer_fault = armed_fault;
    if (probe_setjmp(&jb) == 0) {
        armed = &jb;
        armed_fault = fault;
        fn(ctx);
        armed = outer;
        armed_fault = outer_fault;
        return true;
    }
    armed = outer;
    armed_fault = outer_fault;
    return false;
}

static bool recoverable(uint64_t vector)
{
    switch (vector) {
    case VEC_DIVIDE:
    case VEC_INVALID_OPCODE:
    case VEC_STACK:
    case VEC_GENERAL_PROTECTION:
    case VEC_PAGE_FAULT:
    case VEC_ALIGNMENT:
        return true;
    default:
        return false;
    }
}

void probe_recover(const struct trap_frame *f, uint64_t cr2)
{
    if (!armed || !recoverable(f->vector))
        return;
    struct probe_fault *out = armed_fault;
    out->vector = f->vector;
    out->error_code = f->error_code;
    out->rip = f->rip;
    out->cr2 = cr2;
    if (f->vector == VEC_PAGE_FAULT)
        fmt_format(out->text, sizeof out->text, "%s at address 0x%llx", exception_name(f->vector),
                   (unsigned long long)cr2);
    else
        fmt_format(out->text, sizeof out->text, "%s, error code 0x%llx", exception_name(f->vector),
                   (unsigned long long)f->error_code);
    struct probe_jmp *jb = armed;
    armed = 0;
    probe_longjmp(jb, 1);
}

/* --- MSRs --- */
static uint32_t msr_faults[MSR_FAULT_MAX];
static unsigned msr_fault_count;

bool msr_fault_setup(char *why, unsigned why_len)
{
    const char *v = cmdline_get(&boot_cmdline, "msr_fault");
    msr_fault_count = 0;
    if (!v)
        return true;
    char item[24];
    const char *rest = v;
    unsigned n = 0;
    while (rest) {
        const char *next = cmdline_split(rest, ',', item, sizeof item);
        if (!next) { /* the last item, or one too long for item */
            if (strlen(rest) >= sizeof item)
                goto bad;
            memcpy(item, rest, strlen(rest) + 1);
        }
        uint64_t msr;
        if (n == MSR_FAULT_MAX || !cmdline_parse_u64(item, &msr) || msr > 0xFFFFFFFFull)
            goto bad;
        msr_faults[n++] = (uint32_t)msr;
        rest = next;
    }
    msr_fault_count = n;
    return true;
bad:
    fmt_format(why, why_len, "msr_fault=%s is not a list of up to %u MSR numbers (0x8b,0x10); nothing is injected", v,
               MSR_FAULT_MAX);
    return false;
}

unsigned msr_fault_list(char *out, unsigned out_len)
{
    unsigned len = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < msr_fault_count && len + 16 < out_len; i++)
        len += (unsigned)fmt_format(out + len, out_len - len, "%s0x%x", i ? ", " : "", msr_faults[i]);
    return msr_fault_count;
}

static bool msr_fault_injected(uint32_t msr)
{
    for (unsigned i = 0; i < msr_fault_count; i++)
        if (msr_faults[i] == msr)
            return true;
    return false;
}

/* The #GP a missing MSR raises, made the way probe_fault= makes one: a
   non-canonical address, so the real trap and recovery path runs. */
static void msr_inject_gp(void) { (void)*(volatile uint64_t *)0x8000000000000008ull; }

const char *msr_name(uint32_t msr, char buf[48])
{
    static const struct {
        uint32_t msr;
        const char *name;
    } names[] = {
        {MSR_TSC, "IA32_TIME_STAMP_COUNTER"},
        {MSR_TSC_ADJUST, "IA32_TSC_ADJUST"},
        {MSR_BIOS_SIGN_ID, "IA32_BIOS_SIGN_ID"},
        {MSR_TSC_DEADLINE, "IA32_TSC_DEADLINE"},
        {MSR_KVM_SYSTEM_TIME_NEW, "MSR_KVM_SYSTEM_TIME_NEW"},
        {MSR_KVM_STEAL_TIME, "MSR_KVM_STEAL_TIME"},
        {HV_X64_MSR_TIME_REF_COUNT, "HV_X64_MSR_TIME_REF_COUNT"},
        {HV_X64_MSR_REFERENCE_TSC, "HV_X64_MSR_REFERENCE_TSC"},
        {HV_X64_MSR_TSC_FREQUENCY, "HV_X64_MSR_TSC_FREQUENCY"},
        {HV_X64_MSR_APIC_FREQUENCY, "HV_X64_MSR_APIC_FREQUENCY"},
    };
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].msr == msr) {
            fmt_format(buf, 48, "MSR 0x%x (%s)", msr, names[i].name);
            return buf;
        }
    fmt_format(buf, 48, "MSR 0x%x", msr);
    return buf;
}

struct msr_ctx {
    uint32_t msr;
    uint64_t value;
};

static void msr_read_probe(void *p)
{
    struct msr_ctx *c = p;
    if (msr_fault_injected(c->msr))
        msr_inject_gp();
    c->value = rdmsr(c->msr);
}

static void msr_write_probe(void *p)
{
    struct msr_ctx *c = p;
    if (msr_fault_injected(c->msr))
        msr_inject_gp();
    wrmsr(c->msr, c->value);
}

/* An injected fault says so in its text, after the CPU's own words. */
static void mark_injected(uint32_t msr, struct probe_fault *fault)
{
    if (msr_fault_injected(msr)) {
        size_t n = strlen(fault->text);
        fmt_format(fault->text + n, sizeof fault->text - n, " (injected: msr_fault)");
    }
}

bool msr_read_safe(uint32_t msr, uint64_t *value, struct probe_fault *fault)
{
    struct msr_ctx c = {msr, 0};
    if (!probe_run(msr_read_probe, &c, fault)) {
        mark_injected(msr, fault);
        return false;
    }
    *value = c.value;
    return true;
}

bool msr_write_safe(uint32_t msr, uint64_t value, struct probe_fault *fault)
{
    struct msr_ctx c = {msr, value};
    if (!probe_run(msr_write_probe, &c, fault)) {
        mark_injected(msr, fault);
        return false;
    }
    return true;
}

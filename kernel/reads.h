/* Every read clockbench times, inlined where it is timed (STYLE: "what sits
   between two timestamps is the thing measured and nothing else").

   A target is a TSC read variant or a counter. Each is read by one `kind`
   of code; the loops in the experiments are written once, as always-inline
   functions of the kind, and called through a switch on the kind outside
   any bracket, so the compiler makes one specialised loop per kind with
   the read inlined between the brackets and no call, no indirect jump and
   no branch on the kind inside them. The empty bracket is the same loop
   with READ_NONE. */
#ifndef CLOCKBENCH_READS_H
#define CLOCKBENCH_READS_H

#include <stdbool.h>
#include <stdint.h>

#include "../drivers/cpu.h"
#include "../drivers/hpet.h"
#include "../drivers/lapic.h"
#include "../drivers/pit.h"
#include "../drivers/pvclock.h"
#include "../lib/counters.h"
#include "tsc.h"

enum target_id {
    TARGET_RDTSC, TARGET_RDTSCP, TARGET_LFENCE_RDTSC, TARGET_MFENCE_RDTSC, TARGET_CPUID_RDTSC,
    TARGET_HPET, TARGET_ACPI_PM, TARGET_PIT, TARGET_LAPIC, TARGET_KVMCLOCK, TARGET_HV_REF_COUNTER, TARGET_HV_REF_PAGE,
    TARGET_COUNT
};

enum read_kind {
    READ_NONE, READ_RDTSC, READ_RDTSCP, READ_LFENCE_RDTSC, READ_MFENCE_RDTSC, READ_CPUID_RDTSC,
    READ_HPET64, READ_HPET32, READ_PM_IO, READ_PM_MMIO, READ_PIT, READ_LAPIC_MMIO, READ_LAPIC_MSR,
    READ_KVMCLOCK, READ_HV_MSR, READ_HV_PAGE
};

/* Where a target's kind of read goes: an MMIO address or an I/O port. */
struct read_src {
    enum read_kind kind;
    uintptr_t addr;
    uint16_t port;
    uint64_t mask;   /* the value's width */
};

struct target_info {
    const char *name;
    int counter;     /* COUNTER_* for a counter, -1 for a TSC read variant */
};

extern const struct target_info target_info[TARGET_COUNT];

static inline bool target_is_tsc(enum target_id t) { return target_info[t].counter < 0; }

/* Serialised TSC brackets (Intel SDM vol. 3A, 18.17; LFENCE in vol. 2A):
   nothing of the read starts before the first TSC read is done, and the
   second waits for the read to finish. The 64-bit value is formed inside
   the asm, so the bracket's own instructions are fixed and the same with
   and without a read. */
static inline __attribute__((always_inline)) uint64_t bracket_begin(void)
{
    uint64_t t;
    __asm__ volatile("lfence; rdtsc; lfence; shl $32, %%rdx; or %%rdx, %%rax" : "=a"(t)::"rdx", "memory");
    return t;
}
static inline __attribute__((always_inline)) uint64_t bracket_end(void)
{
    uint64_t t;
    __asm__ volatile("lfence; rdtsc; shl $32, %%rdx; or %%rdx, %%rax" : "=a"(t)::"rdx", "memory");
    return t;
}

/* Keeps a value alive without an instruction. */
#define READ_SINK(v) __asm__ volatile("" ::"r"(v))

/* The read alone, its result discarded: the instruction(s) a user would
   run and nothing more (no shift-and-or of EDX:EAX, no mask). */
static inline __attribute__((always_inline)) void read_raw(enum read_kind k, const struct read_src *s)
{
    switch (k) {
    case READ_NONE:
        break;
    case READ_RDTSC:
        __asm__ volatile("rdtsc" ::: "rax", "rdx");
        break;
    case READ_RDTSCP:
        __asm__ volatile("rdtscp" ::: "rax", "rdx", "rcx");
        break;
    case READ_LFENCE_RDTSC:
        __asm__ volatile("lfence; rdtsc" ::: "rax", "rdx", "memory");
        break;
    case READ_MFENCE_RDTSC:
        __asm__ volatile("mfence; rdtsc" ::: "rax", "rdx", "memory");
        break;
    case READ_CPUID_RDTSC:
        __asm__ volatile("xor %%eax, %%eax; cpuid; rdtsc" ::: "rax", "rbx", "rcx", "rdx", "memory");
        break;
    case READ_HPET64: {
        uint64_t v = *(volatile uint64_t *)s->addr;
        READ_SINK(v);
        break;
    }
    case READ_HPET32:
    case READ_PM_MMIO: {
        uint32_t v = *(volatile uint32_t *)s->addr;
        READ_SINK(v);
        break;
    }
    case READ_PM_IO: {
        uint32_t v = inl(s->port);
        READ_SINK(v);
        break;
    }
    case READ_LAPIC_MMIO: {
        uint32_t v = *(volatile uint32_t *)s->addr;
        READ_SINK(v);
        break;
    }
    case READ_LAPIC_MSR: {
        uint64_t v = rdmsr(MSR_X2APIC_FIRST + (LAPIC_TIMER_CURRENT >> 4));
        READ_SINK(v);
        break;
    }
    case READ_KVMCLOCK: {
        uint64_t v = kvmclock_read((const volatile struct pvclock_vcpu_time_info *)s->addr);
        READ_SINK(v);
        break;
    }
    case READ_HV_MSR: {
        uint64_t v = rdmsr(HV_X64_MSR_TIME_REF_COUNT);
        READ_SINK(v);
        break;
    }
    case READ_HV_PAGE: {
        uint64_t v = hv_page_read((const volatile struct hv_tsc_page *)s->addr);
        READ_SINK(v);
        break;
    }
    case READ_PIT: {
        /* latch, then low and high byte: the combining is the caller's */
        outb(PIT_COMMAND, PIT_LATCH_CH2);
        uint8_t lo = inb(PIT_CH2_DATA);
        uint8_t hi = inb(PIT_CH2_DATA);
        READ_SINK(lo);
        READ_SINK(hi);
        break;
    }
    }
}

/* The read's value, masked to the counter's width. */
static inline __attribute__((always_inline)) uint64_t read_value(enum read_kind k, const struct read_src *s)
{
    switch (k) {
    case READ_NONE:
        return 0;
    case READ_RDTSC:
        return rdtsc();
    case READ_RDTSCP:
        return rdtscp(0);
    case READ_LFENCE_RDTSC:
        return rdtsc_lfence();
    case READ_MFENCE_RDTSC:
        return rdtsc_mfence();
    case READ_CPUID_RDTSC:
        return rdtsc_cpuid();
    case READ_HPET64:
        return *(volatile uint64_t *)s->addr;
    case READ_HPET32:
        return *(volatile uint32_t *)s->addr;
    case READ_PM_IO:
        return inl(s->port) & s->mask;
    case READ_PM_MMIO:
        return *(volatile uint32_t *)s->addr & s->mask;
    case READ_PIT:
        return pit_read();
    case READ_LAPIC_MMIO: /* a down-counter: turned into an up-counter */
        return s->mask - *(volatile uint32_t *)s->addr;
    case READ_LAPIC_MSR:
        return s->mask - (uint32_t)rdmsr(MSR_X2APIC_FIRST + (LAPIC_TIMER_CURRENT >> 4));
    case READ_KVMCLOCK:
        return kvmclock_read((const volatile struct pvclock_vcpu_time_info *)s->addr);
    case READ_HV_MSR:
        return rdmsr(HV_X64_MSR_TIME_REF_COUNT);
    case READ_HV_PAGE:
        return hv_page_read((const volatile struct hv_tsc_page *)s->addr);
    }
    return 0;
}

/* One read between brackets, for code that needs the value and when it was
   taken (the drift sampler): the switch sits outside the brackets. */
static inline __attribute__((always_inline)) uint64_t read_bracketed(const struct read_src *s, uint64_t *a, uint64_t *b)
{
    uint64_t v = 0;
#define READ_BRACKETED_CASE(K)                                                                                                   \
    case K:                                                                                                                      \
        *a = bracket_begin();                                                                                                    \
        v = read_value(K, s);                                                                                                    \
        *b = bracket_end();                                                                                                      \
        break;
    switch (s->kind) {
        READ_BRACKETED_CASE(READ_NONE)
        READ_BRACKETED_CASE(READ_RDTSC)
        READ_BRACKETED_CASE(READ_RDTSCP)
        READ_BRACKETED_CASE(READ_LFENCE_RDTSC)
        READ_BRACKETED_CASE(READ_MFENCE_RDTSC)
        READ_BRACKETED_CASE(READ_CPUID_RDTSC)
        READ_BRACKETED_CASE(READ_HPET64)
        READ_BRACKETED_CASE(READ_HPET32)
        READ_BRACKETED_CASE(READ_PM_IO)
        READ_BRACKETED_CASE(READ_PM_MMIO)
        READ_BRACKETED_CASE(READ_PIT)
        READ_BRACKETED_CASE(READ_LAPIC_MMIO)
        READ_BRACKETED_CASE(READ_LAPIC_MSR)
        READ_BRACKETED_CASE(READ_KVMCLOCK)
        READ_BRACKETED_CASE(READ_HV_MSR)
        READ_BRACKETED_CASE(READ_HV_PAGE)
    default:
        *a = *b = bracket_begin();
    }
#undef READ_BRACKETED_CASE
    return v;
}

/* Calls F(K, args...) with K the source's kind as a constant, so that an
   always-inline F is specialised for each kind. */
#define READ_DISPATCH(kind, F, ...)                                                                                              \
    do {                                                                                                                         \
        switch (kind) {                                                                                                          \
        case READ_NONE: F(READ_NONE, __VA_ARGS__); break;                                                                        \
        case READ_RDTSC: F(READ_RDTSC, __VA_ARGS__); break;                                                                      \
        case READ_RDTSCP: F(READ_RDTSCP, __VA_ARGS__); break;                                                                    \
        case READ_LFENCE_RDTSC: F(READ_LFENCE_RDTSC, __VA_ARGS__); break;                                                        \
        case READ_MFENCE_RDTSC: F(READ_MFENCE_RDTSC, __VA_ARGS__); break;                                                        \
        case READ_CPUID_RDTSC: F(READ_CPUID_RDTSC, __VA_ARGS__); break;                                                          \
        case READ_HPET64: F(READ_HPET64, __VA_ARGS__); break;                                                                    \
        case READ_HPET32: F(READ_HPET32, __VA_ARGS__); break;                                                                    \
        case READ_PM_IO: F(READ_PM_IO, __VA_ARGS__); break;                                                                      \
        case READ_PM_MMIO: F(READ_PM_MMIO, __VA_ARGS__); break;                                                                  \
        case READ_PIT: F(READ_PIT, __VA_ARGS__); break;                                                                          \
        case READ_LAPIC_MMIO: F(READ_LAPIC_MMIO, __VA_ARGS__); break;                                                            \
        case READ_LAPIC_MSR: F(READ_LAPIC_MSR, __VA_ARGS__); break;                                                              \
        case READ_KVMCLOCK: F(READ_KVMCLOCK, __VA_ARGS__); break;                                                                \
        case READ_HV_MSR: F(READ_HV_MSR, __VA_ARGS__); break;                                                                    \
        case READ_HV_PAGE: F(READ_HV_PAGE, __VA_ARGS__); break;                                                                  \
        }                                                                                                                        \
    } while (0)

#endif

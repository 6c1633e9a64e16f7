/* Paravirtual clocks: KVM's kvmclock (Linux Documentation/virt/kvm/x86/
   cpuid.rst and msr.rst) and Hyper-V's partition reference counter and
   reference TSC page (Hyper-V TLFS 6.0, 2.4 "Feature and interface
   discovery", 12.4 and 12.7). The arithmetic is in lib/pvclock.h. */
#ifndef CLOCKBENCH_PVCLOCK_DRV_H
#define CLOCKBENCH_PVCLOCK_DRV_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/pvclock.h"
#include "cpu.h"

#define KVM_CPUID_SIGNATURE_LOW       0x40000000u   /* also at 0x40000100 beside Hyper-V's */
#define KVM_CPUID_SIGNATURE_HIGH      0x40000100u
#define KVM_CPUID_FEATURES            1u            /* added to the signature leaf */
#define   KVM_FEATURE_CLOCKSOURCE2    (1u << 3)
#define   KVM_FEATURE_CLOCKSOURCE_STABLE_BIT (1u << 24)
#define MSR_KVM_SYSTEM_TIME_NEW       0x4b564d01u   /* GPA of the page | 1 enables; 0 disables */
#define   KVM_SYSTEM_TIME_ENABLE      1ull

#define HV_CPUID_SIGNATURE            0x40000000u   /* "Microsoft Hv" */
#define HV_CPUID_FEATURES             0x40000003u
#define   HV_MSR_TIME_REF_COUNT_AVAILABLE (1u << 1)
#define   HV_MSR_REFERENCE_TSC_AVAILABLE  (1u << 9)
#define   HV_ACCESS_FREQUENCY_MSRS        (1u << 11)
#define   HV_ACCESS_TSC_INVARIANT         (1u << 15)
#define HV_X64_MSR_TIME_REF_COUNT     0x40000020u   /* 100 ns units since the partition started */
#define HV_X64_MSR_REFERENCE_TSC      0x40000021u   /* GPA page number << 12 | 1 enables */
#define   HV_REFERENCE_TSC_ENABLE     1ull
#define HV_X64_MSR_TSC_FREQUENCY      0x40000022u
#define HV_X64_MSR_APIC_FREQUENCY     0x40000023u

#define PVCLOCK_READ_TRIES 64         /* a version or sequence that keeps changing: give up, return the last */

/* lfence; rdtsc: the TSC read after the loads before it, as Linux's
   rdtsc_ordered() does for both clocks. */
static inline uint64_t pv_rdtsc_ordered(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return (uint64_t)hi << 32 | lo;
}

/* kvmclock in ns: the version protocol, bounded. */
static inline uint64_t kvmclock_read(const volatile struct pvclock_vcpu_time_info *p)
{
    uint32_t v;
    uint64_t ns;
    int tries = 0;
    do {
        v = p->version;
        __asm__ volatile("" ::: "memory");
        uint64_t tsc = pv_rdtsc_ordered();
        ns = pvclock_ns(tsc, p->tsc_timestamp, p->system_time, p->tsc_to_system_mul, p->tsc_shift);
        __asm__ volatile("" ::: "memory");
    } while (((v & 1) || v != p->version) && ++tries < PVCLOCK_READ_TRIES);
    return ns;
}

/* The reference TSC page in 100 ns units; 0 when its sequence is 0 (not
   valid: the caller falls back to the MSR). */
static inline uint64_t hv_page_read(const volatile struct hv_tsc_page *p)
{
    uint32_t seq;
    uint64_t t;
    int tries = 0;
    do {
        seq = p->tsc_sequence;
        if (!seq)
            return 0;
        __asm__ volatile("" ::: "memory");
        uint64_t tsc = pv_rdtsc_ordered();
        t = hv_ref_time(tsc, p->tsc_scale, p->tsc_offset);
        __asm__ volatile("" ::: "memory");
    } while (seq != p->tsc_sequence && ++tries < PVCLOCK_READ_TRIES);
    return t;
}

struct pvclocks {
    /* kvmclock */
    uint32_t kvm_base;                 /* the KVM signature leaf, 0 when none */
    uint32_t kvm_features;
    bool kvmclock_on;                  /* the page is registered */
    uint32_t version_retries;          /* odd or changing versions met while checking it */
    bool stable_bit;                   /* PVCLOCK_TSC_STABLE_BIT in the page's flags */
    bool stable_bit_meaningful;        /* KVM_FEATURE_CLOCKSOURCE_STABLE_BIT */
    uint32_t mul;
    int8_t shift;
    /* Hyper-V */
    bool hyperv;                       /* "Microsoft Hv" at 0x40000000 */
    uint32_t hv_features;
    bool hv_page_on;
    bool hv_page_valid;                /* the sequence was not 0 */
    uint64_t hv_tsc_hz, hv_apic_hz;    /* the frequency MSRs, 0 when not offered */
    uint32_t hv_between_checked, hv_between_outside; /* MSR readings checked against two page readings */
};

extern volatile struct pvclock_vcpu_time_info kvmclock_page;
extern volatile struct hv_tsc_page *const hv_page;

#endif

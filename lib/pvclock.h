/* Paravirtual clock arithmetic, pure (host-tested against exact integers).

   kvmclock (Linux Documentation/virt/kvm/x86/msr.rst, MSR_KVM_SYSTEM_TIME_NEW;
   the page layout is pvclock_vcpu_time_info): time in ns is
     system_time + (((tsc - tsc_timestamp) << tsc_shift) * tsc_to_system_mul) >> 32
   with a negative tsc_shift shifting right. The product is 96 bits wide: a
   128-bit intermediate, no division.

   Hyper-V reference TSC page (Hyper-V TLFS 6.0, 12.7 "Partition Reference
   TSC Mechanism"): time in 100 ns units is
     ((tsc * tsc_scale) >> 64) + tsc_offset
   where a sequence of 0 means the page is not valid (read the reference
   counter MSR instead). */
#ifndef CLOCKBENCH_PVCLOCK_H
#define CLOCKBENCH_PVCLOCK_H

#include <stdint.h>

/* The per-CPU page kvmclock fills (32 bytes). */
struct pvclock_vcpu_time_info {
    uint32_t version;           /* odd while the hypervisor updates it */
    uint32_t pad0;
    uint64_t tsc_timestamp;     /* the TSC when system_time was taken */
    uint64_t system_time;       /* ns */
    uint32_t tsc_to_system_mul; /* 32.32 fixed point */
    int8_t tsc_shift;
    uint8_t flags;
    uint8_t pad[2];
} __attribute__((packed));
_Static_assert(sizeof(struct pvclock_vcpu_time_info) == 32, "pvclock page is 32 bytes");

#define PVCLOCK_TSC_STABLE_BIT (1u << 0)  /* the hypervisor vouches for a TSC stable across CPUs */
#define PVCLOCK_GUEST_STOPPED (1u << 1)   /* the host stopped the guest (set by the host, cleared by the guest) */

/* The reference TSC page's header (the rest of the 4 KiB is reserved). */
struct hv_tsc_page {
    uint32_t tsc_sequence;      /* 0: not valid; changes while the hypervisor updates it */
    uint32_t reserved1;
    uint64_t tsc_scale;         /* 0.64 fixed point */
    int64_t tsc_offset;         /* 100 ns units */
} __attribute__((packed));

static inline uint64_t pvclock_scale_delta(uint64_t delta, uint32_t mul, int8_t shift)
{
    if (shift < 0)
        delta >>= -shift;
    else
        delta <<= shift;
    return (uint64_t)(((unsigned __int128)delta * mul) >> 32);
}

/* The TSC rate kvmclock's scale states, in Hz, rounded down: one tick is
   mul * 2^shift / 2^32 ns, so the rate is 10^9 * 2^32 / mul / 2^shift
   (Linux's pvclock_tsc_khz does the same in kHz). 10^9 * 2^32 fits 64 bits,
   so no 128-bit division (which the freestanding image lacks). 0 for mul 0
   or a shift that leaves no rate. */
static inline uint64_t pvclock_tsc_hz(uint32_t mul, int8_t shift)
{
    if (!mul || shift > 31 || shift < -31)
        return 0;
    uint64_t per_shift0 = (1000000000ull << 32) / mul;
    if (shift >= 0)
        return per_shift0 >> shift;
    return per_shift0 > (~0ull >> -shift) ? 0 : per_shift0 << -shift;
}

/* ns from a consistent copy of the page and a TSC reading. */
static inline uint64_t pvclock_ns(uint64_t tsc, uint64_t tsc_timestamp, uint64_t system_time, uint32_t mul, int8_t shift)
{
    return system_time + pvclock_scale_delta(tsc - tsc_timestamp, mul, shift);
}

/* 100 ns units from a consistent copy of the page and a TSC reading. */
static inline uint64_t hv_ref_time(uint64_t tsc, uint64_t scale, int64_t offset)
{
    return (uint64_t)((((unsigned __int128)tsc * scale) >> 64) + (uint64_t)offset);
}

#endif

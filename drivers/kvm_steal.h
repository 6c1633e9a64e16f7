/* KVM steal time (Linux Documentation/virt/kvm/x86/cpuid.rst, feature bit
   KVM_FEATURE_STEAL_TIME; msr.rst, MSR_KVM_STEAL_TIME): each vCPU names a
   64-byte area in guest memory, and KVM keeps in it how long that vCPU
   waited for a host CPU. The area's layout and the arithmetic are in
   lib/steal.h. */
#ifndef CLOCKBENCH_KVM_STEAL_H
#define CLOCKBENCH_KVM_STEAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/steal.h"
#include "cpu.h"

#define KVM_FEATURE_STEAL_TIME   (1u << 5)      /* CPUID 0x40000001 (or 0x40000101) EAX */
#define MSR_KVM_STEAL_TIME       0x4b564d03u    /* GPA of the area, 64-byte aligned, | 1 enables; 0 disables */
#define   KVM_STEAL_ENABLE       1ull
#define   KVM_STEAL_ALIGN        64u
#define KVM_STEAL_READ_TRIES     64             /* a version that keeps changing: give up, say so */

/* The area is registered by writing its guest-physical address (zeroed,
   64-byte aligned) | KVM_STEAL_ENABLE to MSR_KVM_STEAL_TIME on the vCPU it
   belongs to, and 0 disables it: always through kernel/probe.h's
   msr_write_safe, since a KVM may refuse it. */

/* The steal count in ns by the version protocol: an even version the same
   before and after the read. False when it never settled within
   KVM_STEAL_READ_TRIES (*ns is then the last value seen); *retries counts
   the reads thrown away. */
static inline bool kvm_steal_read(const volatile struct kvm_steal_time *st, uint64_t *ns, uint32_t *retries)
{
    for (int tries = 0; tries < KVM_STEAL_READ_TRIES; tries++) {
        uint32_t v = st->version;
        __asm__ volatile("" ::: "memory");
        *ns = st->steal;
        __asm__ volatile("" ::: "memory");
        if (!(v & 1) && v == st->version)
            return true;
        (*retries)++;
        __asm__ volatile("pause");
    }
    return false;
}

#endif

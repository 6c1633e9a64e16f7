/* Inline accessors for privileged and timing instructions. They are static
   inline on purpose: a call around a measured instruction would distort the
   very cost being measured. Intel SDM vol. 2 for each instruction. */
#ifndef CLOCKBENCH_CPU_H
#define CLOCKBENCH_CPU_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v) { __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outw(uint16_t port, uint16_t v) { __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outl(uint16_t port, uint32_t v) { __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
/* n bytes from buf to one port, by one string instruction (no loop of our
   own around each byte: where every instruction is emulated, that loop
   cost as much as the port write). */
static inline void outsb(uint16_t port, const void *buf, unsigned long n)
{
    __asm__ volatile("rep outsb" : "+S"(buf), "+c"(n) : "d"(port) : "memory");
}
static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint16_t inw(uint16_t port)
{
    uint16_t v;
    __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint32_t inl(uint16_t port)
{
    uint32_t v;
    __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

struct cpuid_regs {
    uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
    struct cpuid_regs r;
    __asm__ volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(subleaf));
    return r;
}

/* The TSC read variants (Intel SDM vol. 2B RDTSC/RDTSCP; vol. 3A 8.3 on
   serialisation). Each is the whole read as it would be used. */
static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t rdtscp(uint32_t *aux)
{
    uint32_t lo, hi, c;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c));
    if (aux)
        *aux = c;
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t rdtsc_lfence(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t rdtsc_mfence(void)
{
    uint32_t lo, hi;
    __asm__ volatile("mfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t rdtsc_cpuid(void)
{
    uint32_t lo, hi;
    __asm__ volatile("push %%rbx; xor %%eax, %%eax; cpuid; pop %%rbx; rdtsc"
                     : "=a"(lo), "=d"(hi)
                     :
                     : "rcx", "memory");
    return ((uint64_t)hi << 32) | lo;
}

/* Brackets around a measured read: nothing of the read starts before the
   first TSC read is done, and the second waits for the read to finish
   (Intel SDM vol. 3A, 18.17 and the LFENCE entry in vol. 2A). */
static inline uint64_t rdtsc_begin(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t rdtsc_end(void) { return rdtsc_lfence(); }

/* The TSC's staircase (lib/stats.h, stats_staircase_step): mins[j] is the
   least of `reps` bracketed runs of j dependent additions, j = 0..n-1 (at
   most TSC_STAIR_MAX). The additions are one unrolled sled entered j
   instructions before its end, so no loop counter adds instructions: under
   QEMU's -icount shift=0, where every instruction is one tick, the stairs
   rise by exactly one tick; on hardware by a cycle's worth of ticks, unless
   the TSC moves in coarser steps. Shared by the image and clockbench-os. */
#define TSC_STAIR_MAX 128
#define TSC_STAIR_ADD_BYTES 4 /* add $1, %rax: 48 83 c0 01 */
static inline void tsc_staircase(uint64_t *mins, uint32_t n, uint32_t reps)
{
    for (uint32_t j = 0; j < n && j < TSC_STAIR_MAX; j++) {
        mins[j] = ~0ull;
        for (uint32_t r = 0; r < reps; r++) {
            uint64_t x = 0, back = (uint64_t)j * TSC_STAIR_ADD_BYTES, target;
            uint64_t a = rdtsc_begin();
            __asm__ volatile("lea 1f(%%rip), %2\n\t"
                             "sub %1, %2\n\t"
                             "jmp *%2\n\t"
                             ".rept 128\n\t"
                             ".byte 0x48, 0x83, 0xc0, 0x01\n\t" /* add $1, %%rax */
                             ".endr\n"
                             "1:"
                             : "+a"(x), "+r"(back), "=&r"(target)
                             :
                             : "cc");
            uint64_t b = rdtsc_end();
            if (b - a < mins[j])
                mins[j] = b - a;
        }
    }
}

/* Architectural MSRs the experiments move or read (Intel SDM vol. 4, 2.1);
   a CPU or hypervisor may lack any of them: kernel/probe.h's safe paths. */
#define MSR_TSC           0x10u  /* IA32_TIME_STAMP_COUNTER */
#define MSR_TSC_ADJUST    0x3Bu  /* IA32_TSC_ADJUST, CPUID.(7,0):EBX[1] */
#define MSR_BIOS_SIGN_ID  0x8Bu  /* IA32_BIOS_SIGN_ID: the microcode revision in bits 63:32 after a write of 0 and CPUID(1) */

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline void cpu_relax(void) { __asm__ volatile("pause"); }
/* A pause of at least a microsecond that touches no port: in place of the
   PC's I/O delay, a write to port 0x80 (one ISA bus cycle, about 1 us),
   which Cloud Hypervisor logs as a debug port and Firecracker as a missing
   device. 6000 TSC ticks are 1 us at 6 GHz, faster than any TSC (or is a
   few microseconds on a slower one), so the pause is never shorter than
   the bus cycle it replaces; the iteration bound ends it even if the TSC
   stood still. */
#define IO_DELAY_TSC_TICKS 6000u
#define IO_DELAY_MAX_SPINS 100000u
static inline void io_delay(void)
{
    uint64_t t0 = rdtsc();
    for (uint32_t i = 0; i < IO_DELAY_MAX_SPINS && rdtsc() - t0 < IO_DELAY_TSC_TICKS; i++)
        __asm__ volatile("pause");
}
/* Orders this CPU's earlier stores before its later loads (SDM vol. 3A, 9.2.3.4). */
static inline void cpu_store_load_fence(void) { __asm__ volatile("mfence" ::: "memory"); }
static inline void interrupts_off(void) { __asm__ volatile("cli" ::: "memory"); }
static inline void cpu_halt(void) { __asm__ volatile("hlt"); }
/* Halts until an interrupt, then turns interrupts off again. STI holds
   interrupts off for one more instruction (SDM vol. 2B, STI), so one that
   is already pending wakes the HLT instead of being taken before it. */
static inline void cpu_halt_for_interrupt(void) { __asm__ volatile("sti; hlt; cli" ::: "memory"); }
static inline void invlpg(uint64_t addr) { __asm__ volatile("invlpg (%0)" ::"r"(addr) : "memory"); }
static inline uint64_t read_cr2(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr2, %0" : "=r"(v));
    return v;
}
static inline uint64_t read_cr3(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}
static inline void write_cr3(uint64_t v) { __asm__ volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }

#endif

/* High Precision Event Timer (IA-PC HPET Specification 1.0a). */
#ifndef CLOCKBENCH_HPET_H
#define CLOCKBENCH_HPET_H

#include <stdbool.h>
#include <stdint.h>

/* Register offsets (HPET 1.0a, 2.3.1 "Register Overview") */
#define HPET_GCAP_ID 0x000
#define   HPET_GCAP_REV_MASK 0xFFull
#define   HPET_GCAP_NUM_TIM_SHIFT 8
#define   HPET_GCAP_NUM_TIM_MASK 0x1Full
#define   HPET_GCAP_COUNT_SIZE_CAP (1ull << 13)
#define   HPET_GCAP_LEG_RT_CAP (1ull << 15)
#define   HPET_GCAP_VENDOR_SHIFT 16
#define   HPET_GCAP_PERIOD_SHIFT 32
#define HPET_GEN_CONF 0x010
#define   HPET_CONF_ENABLE (1ull << 0)
#define   HPET_CONF_LEGACY (1ull << 1)
#define HPET_GINTR_STA 0x020
#define HPET_MAIN_COUNTER 0x0F0
#define HPET_TIMER_CONF(n) (0x100 + 0x20 * (n))
#define   HPET_TN_INT_TYPE_LEVEL (1ull << 1)
#define   HPET_TN_INT_ENB (1ull << 2)
#define   HPET_TN_TYPE_PERIODIC (1ull << 3)
#define   HPET_TN_PER_INT_CAP (1ull << 4)
#define   HPET_TN_SIZE_CAP (1ull << 5)
#define   HPET_TN_VAL_SET (1ull << 6)
#define   HPET_TN_32MODE (1ull << 8)
#define HPET_TIMER_COMPARATOR(n) (0x108 + 0x20 * (n))

#define HPET_MAX_PERIOD_FS 100000000ull /* 2.3.4: COUNTER_CLK_PERIOD <= 0x05F5E100 (100 ns) */
#define HPET_MMIO_SIZE 1024

struct hpet {
    uint64_t base;        /* physical = virtual (identity map), 0 when absent */
    uint64_t caps;
    uint32_t period_fs;
    uint8_t revision;
    uint8_t comparators;
    bool counter_64bit;
    bool legacy_capable;
    uint16_t vendor;
    bool t0_periodic_capable;
    bool t0_64bit;
};

static inline uint64_t hpet_read64(const struct hpet *h, uint32_t reg)
{
    return *(volatile uint64_t *)(uintptr_t)(h->base + reg);
}
static inline uint32_t hpet_read32(const struct hpet *h, uint32_t reg)
{
    return *(volatile uint32_t *)(uintptr_t)(h->base + reg);
}
static inline void hpet_write64(const struct hpet *h, uint32_t reg, uint64_t v)
{
    *(volatile uint64_t *)(uintptr_t)(h->base + reg) = v;
}

/* The main counter as one read: 64-bit when the counter is, else the low 32 bits. */
static inline uint64_t hpet_counter(const struct hpet *h)
{
    return h->counter_64bit ? hpet_read64(h, HPET_MAIN_COUNTER) : hpet_read32(h, HPET_MAIN_COUNTER);
}

/* Stops or restarts the main counter (ENABLE_CNF, HPET 1.0a, 2.3.5): for
   fault injection, a reference that stands still while the TSC runs. */
static inline void hpet_set_running(const struct hpet *h, bool running)
{
    uint64_t conf = hpet_read64(h, HPET_GEN_CONF);
    hpet_write64(h, HPET_GEN_CONF, running ? conf | HPET_CONF_ENABLE : conf & ~HPET_CONF_ENABLE);
}

/* Checks the register block at base (already mapped uncached) and starts the
   counter from zero. Faults are the caller's to catch (probe_run). False,
   with why filled, when the block is not a usable HPET. */
bool hpet_init(struct hpet *h, uint64_t base, char *why, unsigned why_len);

struct hpet_comparator_result {
    bool ran;
    bool matched;
    uint64_t target, seen_at; /* counter values */
    uint64_t late_ticks;      /* seen_at - target */
    bool periodic_tested;
    bool periodic_ok;
    uint32_t periods_seen;
    uint64_t period_asked_ticks;
    uint64_t period_achieved_ticks_x1000; /* mean of the observed periods, in 1/1000 tick */
    char note[96];
};

/* One-shot match on comparator 0 (and periodic when it can), observed through
   the general interrupt status register with the CPU's interrupts off.
   Leaves the counter running and every comparator interrupt disabled. */
void hpet_test_comparator(const struct hpet *h, uint64_t ticks_ahead, struct hpet_comparator_result *r);

#endif

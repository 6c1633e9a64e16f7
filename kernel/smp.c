/* Starting the application processors (see smp.h). Intel SDM vol. 3A:
   9.4.4.1 "Typical BSP Initialization Sequence" (INIT, 10 ms, SIPI, 200 us,
   SIPI, 200 us), 9.4.3 (an AP waits for SIPI after INIT), 11.6.1 (the ICR),
   11.12 (x2APIC). The MADT (ACPI 6.5, 5.2.12) says which CPUs exist. */
#include "smp.h"

#include "../drivers/cpu.h"
#include "../drivers/cpuinfo.h"
#include "../lib/cmdline.h"
#include "../lib/format.h"
#include "../lib/string.h"
#include "paging.h"
#include "results.h"

struct smp_info smp;

/* The SDM's delays (9.4.4.1); the wait for an AP to reach C is ours: a real
   CPU gets there in microseconds, an emulated one (every instruction
   trapped, ../shared/PLATFORM.md) in well under 100 ms. */
#define INIT_DELAY_US 10000
#define SIPI_DELAY_US 200
#define AP_ALIVE_US 200000
#define IPI_SEND_US 10000
#define WAKE_RESEND_US 10000         /* a job not taken by then gets another wake-up IPI */
#define SPIN_CAP 100000000u

#define CPUID1_EDX_APIC (1u << 9)
#define CPUID1_ECX_X2APIC (1u << 21)
#define XAPIC_MAX_ID 0xFE            /* 0xFF is the xAPIC broadcast ID */
#define LOW_MEMORY_END 0xA0000       /* conventional memory ends at 640 KiB */
#define PREFERRED_PAGE 0x8000
#define PAGE 0x1000ull
#define SVR_SPURIOUS_VECTOR 0xFF

/* Each AP's stack: jobs are short and keep their data in memory the boot
   CPU hands them, so 8 KiB holds a job, probe_run and an exception frame. */
#define AP_STACK_BYTES 8192
static uint8_t ap_stacks[PERCPU_MAX][AP_STACK_BYTES] __attribute__((aligned(16)));

/* boot/trampoline.asm */
extern const uint8_t trampoline_start[], trampoline_end[];
extern const uint32_t trampoline_pm_entry_off, trampoline_lm_entry_off, trampoline_gdt_off, trampoline_gdt_size;

/* Its shared header, at offset 8 of the first page (TRAMP_* in the .asm):
   the same for every AP and written once, before any STARTUP IPI. */
struct trampoline_params {
    uint32_t pm_jump_offset;
    uint16_t pm_jump_selector;
    uint16_t gdt_limit;
    uint32_t gdt_base;
    uint32_t cr3;
    uint32_t lm_jump_offset;
    uint16_t lm_jump_selector;
    uint16_t pad;
    uint64_t entry;
    uint16_t blocks_off, block_count;
    volatile uint32_t strangers;     /* APs whose APIC ID is in no block */
    volatile uint32_t stranger_id;   /* the last one's */
    uint32_t pad1;
    uint16_t idt_limit;
    uint64_t idt_base;
    uint8_t pad2[6];
} __attribute__((packed));
/* One per AP, after the code (BLK_* in the .asm): only its own AP reads it. */
struct trampoline_cpu {
    uint32_t apic_id;
    volatile uint8_t stage;
    volatile uint8_t claim;          /* CLAIM_* */
    uint16_t pad;
    uint64_t stack_top, arg;
};
#define CLAIM_OPEN 0
#define CLAIM_TAKEN 1                /* its AP is in long mode, on its way to ap_main */
#define CLAIM_WITHDRAWN 2            /* the boot CPU gave up on it: an AP that comes late halts */
#define TRAMP_PARAMS_OFF 8
#define TRAMP_CODE32 0x18
#define TRAMP_CODE64 0x08
_Static_assert(__builtin_offsetof(struct trampoline_params, pm_jump_offset) + TRAMP_PARAMS_OFF == 8, "TRAMP_PM_JUMP");
_Static_assert(__builtin_offsetof(struct trampoline_params, gdt_limit) + TRAMP_PARAMS_OFF == 14, "TRAMP_GDTR");
_Static_assert(__builtin_offsetof(struct trampoline_params, cr3) + TRAMP_PARAMS_OFF == 20, "TRAMP_CR3");
_Static_assert(__builtin_offsetof(struct trampoline_params, lm_jump_offset) + TRAMP_PARAMS_OFF == 24, "TRAMP_LM_JUMP");
_Static_assert(__builtin_offsetof(struct trampoline_params, entry) + TRAMP_PARAMS_OFF == 32, "TRAMP_ENTRY");
_Static_assert(__builtin_offsetof(struct trampoline_params, blocks_off) + TRAMP_PARAMS_OFF == 40, "TRAMP_BLOCKS");
_Static_assert(__builtin_offsetof(struct trampoline_params, block_count) + TRAMP_PARAMS_OFF == 42, "TRAMP_BLOCK_COUNT");
_Static_assert(__builtin_offsetof(struct trampoline_params, strangers) + TRAMP_PARAMS_OFF == 44, "TRAMP_STRANGERS");
_Static_assert(__builtin_offsetof(struct trampoline_params, stranger_id) + TRAMP_PARAMS_OFF == 48, "TRAMP_STRANGER_ID");
_Static_assert(__builtin_offsetof(struct trampoline_params, idt_limit) + TRAMP_PARAMS_OFF == 56, "TRAMP_IDTR");
_Static_assert(sizeof(struct trampoline_params) + TRAMP_PARAMS_OFF <= 80, "the header fits before real_entry");
_Static_assert(__builtin_offsetof(struct trampoline_cpu, stage) == 4, "BLK_STAGE");
_Static_assert(__builtin_offsetof(struct trampoline_cpu, claim) == 5, "BLK_CLAIM");
_Static_assert(__builtin_offsetof(struct trampoline_cpu, stack_top) == 8, "BLK_STACK");
_Static_assert(__builtin_offsetof(struct trampoline_cpu, arg) == 16, "BLK_ARG");
_Static_assert(sizeof(struct trampoline_cpu) == 24, "BLK_SIZE");

/* One cache line each, so that one CPU polling its mailbox does not slow
   another's. */
struct mailbox {
    volatile uint64_t posted, taken, finished;   /* job sequence numbers */
    smp_job volatile fn;
    void *volatile arg;
    volatile bool faulted, park, running;
    volatile bool napping;                       /* its job sleeps in smp_nap: the wake-up IPI is for it */
    struct probe_fault fault;
} __attribute__((aligned(64)));
static struct mailbox mailbox[PERCPU_MAX];

static inline void barrier(void) { __asm__ volatile("" ::: "memory"); }

static uint64_t us_to_tsc(uint64_t us) { return results.tsc_estimate_hz / 1000000 * us + 1; }

static void delay_us(uint64_t us)
{
    uint64_t t0 = rdtsc(), n = us_to_tsc(us);
    for (uint32_t i = 0; i < SPIN_CAP && rdtsc() - t0 < n; i++)
        cpu_relax();
}

/* --- the AP side --- */

/* Where every AP goes from the trampoline: its own per-CPU slot first (the
   probe machinery reads it), then jobs until it is parked. Between jobs it
   sleeps: the boot CPU's wake-up IPI (or any interrupt) ends the HLT, and
   it looks at its mailbox again. Its APIC comes out of INIT software-
   disabled (SDM 11.4.7.2), which would hold back the fixed IPI: enable it,
   accepting every vector (TPR 0). */
__attribute__((noreturn)) static void ap_main(uint64_t index)
{
    percpu_init((uint32_t)index);
    struct mailbox *mb = &mailbox[index];
    struct lapic l = smp.lapic;
    if (l.x2apic && !(rdmsr(MSR_APIC_BASE) & APIC_BASE_EXTD))
        lapic_enable_x2apic(&l); /* all CPUs use one APIC mode (SDM 11.12.5) */
    uint32_t svr = lapic_read(&l, LAPIC_SVR);
    lapic_write(&l, LAPIC_SVR, (svr & ~LAPIC_SVR_VECTOR_MASK) | LAPIC_SVR_ENABLE | SVR_SPURIOUS_VECTOR);
    lapic_write(&l, LAPIC_TPR, 0);
    mb->running = true;
    for (;;) {
        interrupts_off();
        while (mb->posted == mb->finished)
            cpu_halt_for_interrupt();
        uint64_t seq = mb->posted;
        mb->taken = seq;
        barrier();
        if (mb->park) {
            mb->finished = seq;
            for (;;) {
                interrupts_off();
                cpu_halt(); /* only an NMI or SMI ends this; then halt again */
            }
        }
        struct probe_fault fault;
        bool ok = probe_run(mb->fn, mb->arg, &fault);
        if (!ok)
            mb->fault = fault;
        mb->faulted = !ok;
        barrier();
        mb->finished = seq;
    }
}

/* --- the boot CPU side --- */

/* A 4 KiB page below 640 KiB that the memory map calls usable and that no
   other entry claims: 0x8000 if it qualifies (where most kernels put
   theirs), else the highest such page. Page 0 (real-mode IVT, BIOS data)
   is never taken. */
static bool page_usable(const struct boot_info *bi, uint64_t page)
{
    bool inside = false;
    for (int i = 0; i < bi->mem_count; i++) {
        const struct mem_region *r = &bi->mem[i];
        uint64_t end = r->base + r->length;
        bool overlaps = r->base < page + PAGE && end > page;
        if (!overlaps)
            continue;
        if (r->type != MEM_AVAILABLE)
            return false;
        if (r->base <= page && end >= page + PAGE)
            inside = true;
    }
    return inside;
}

static bool pages_usable(const struct boot_info *bi, uint64_t first, uint32_t pages)
{
    for (uint32_t k = 0; k < pages; k++)
        if (!page_usable(bi, first + k * PAGE))
            return false;
    return true;
}

/* pages contiguous pages, the first at 0x8000 if they fit there, else the
   highest run that does. */
static uint64_t find_trampoline_pages(const struct boot_info *bi, uint32_t pages)
{
    if (!bi)
        return 0;
    if (pages_usable(bi, PREFERRED_PAGE, pages))
        return PREFERRED_PAGE;
    for (uint64_t p = LOW_MEMORY_END - pages * PAGE; p >= PAGE; p -= PAGE)
        if (pages_usable(bi, p, pages))
            return p;
    return 0;
}

struct apic_job {
    uint64_t apic_base;
};

static void read_apic_base(void *p) { ((struct apic_job *)p)->apic_base = rdmsr(MSR_APIC_BASE); }

/* Whether the MADT enables a CPU whose APIC ID only x2APIC mode can
   address (above 254; 0xFF is the xAPIC broadcast, SDM 11.12.1). */
static bool madt_needs_x2apic(void)
{
    if (!smp.acpi)
        return false;
    for (uint32_t i = 0; i < smp.acpi->cpu_count; i++)
        if (smp.acpi->cpus[i].enabled && smp.acpi->cpus[i].apic_id > XAPIC_MAX_ID)
            return true;
    return false;
}

static void bsp_apic_setup(void *unused)
{
    (void)unused;
    struct lapic *l = &smp.lapic;
    bool asked = cmdline_get(&boot_cmdline, "x2apic") != 0;
    smp.x2apic_needed = madt_needs_x2apic();
    if (!l->x2apic && (asked || smp.x2apic_needed) && (boot_cpu.leaves[CPUID_IDX_1].ecx & CPUID1_ECX_X2APIC)) {
        lapic_enable_x2apic(l);
        smp.x2apic_by_us = true;
    }
    uint32_t svr = lapic_read(l, LAPIC_SVR);
    if (!(svr & LAPIC_SVR_ENABLE)) {
        lapic_write(l, LAPIC_SVR, (svr & ~LAPIC_SVR_VECTOR_MASK) | LAPIC_SVR_ENABLE | SVR_SPURIOUS_VECTOR);
        smp.svr_enabled_by_us = true;
    }
    smp.bsp_apic_id = lapic_id(l);
}

/* False with smp.why when no AP can be started here. */
static bool apic_ready(void)
{
    const struct cpuid_leaf *l1 = &boot_cpu.leaves[CPUID_IDX_1];
    if (!l1->valid || !(l1->edx & CPUID1_EDX_APIC)) {
        fmt_format(smp.why, sizeof smp.why, "the CPU has no local APIC (CPUID.1:EDX[9] clear)");
        return false;
    }
    struct apic_job job;
    struct probe_fault fault;
    if (!probe_run(read_apic_base, &job, &fault)) {
        fmt_format(smp.why, sizeof smp.why, "reading IA32_APIC_BASE faulted: %s", fault.text);
        return false;
    }
    const char *why = "";
    if (!lapic_init(&smp.lapic, job.apic_base, &why)) {
        fmt_format(smp.why, sizeof smp.why, "%s", why);
        return false;
    }
    if (!smp.lapic.x2apic && !paging_map(smp.lapic.base, LAPIC_MMIO_SIZE, true, &why)) {
        fmt_format(smp.why, sizeof smp.why, "the local APIC at 0x%llx cannot be mapped: %s", (unsigned long long)smp.lapic.base,
                   why);
        return false;
    }
    if (!probe_run(bsp_apic_setup, 0, &fault)) {
        fmt_format(smp.why, sizeof smp.why, "the local APIC faulted: %s", fault.text);
        return false;
    }
    smp.apic_ok = true;
    return true;
}

static void list_cpus(void)
{
    const struct acpi_info *a = smp.acpi;
    for (uint32_t i = 0; i < a->cpu_count; i++) {
        struct smp_cpu *c = &smp.cpus[smp.count++];
        *c = (struct smp_cpu){.apic_id = a->cpus[i].apic_id, .uid = a->cpus[i].uid, .madt_type = a->cpus[i].type,
                              .enabled = a->cpus[i].enabled, .online_capable = a->cpus[i].online_capable, .index = -1};
        if (smp.apic_ok && c->apic_id == smp.bsp_apic_id) {
            c->is_bsp = c->started = true;
            c->index = 0;
            c->stage = STAGE_RUNNING;
        } else if (!c->enabled)
            fmt_format(c->reason, sizeof c->reason, "%s in the MADT: left alone",
                       c->online_capable ? "online-capable but not enabled" : "disabled");
    }
}

static struct trampoline_params *install_trampoline(uint64_t page, uint32_t blocks_off, uint32_t blocks)
{
    uint8_t *dst = (uint8_t *)(uintptr_t)page;
    memcpy(dst, trampoline_start, (size_t)(trampoline_end - trampoline_start));
    struct trampoline_params *tp = (struct trampoline_params *)(dst + TRAMP_PARAMS_OFF);
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) idtr;
    __asm__ volatile("sidt %0" : "=m"(idtr));
    tp->pm_jump_offset = (uint32_t)(page + trampoline_pm_entry_off);
    tp->pm_jump_selector = TRAMP_CODE32;
    tp->gdt_limit = (uint16_t)(trampoline_gdt_size - 1);
    tp->gdt_base = (uint32_t)(page + trampoline_gdt_off);
    tp->cr3 = (uint32_t)read_cr3();
    tp->lm_jump_offset = (uint32_t)(page + trampoline_lm_entry_off);
    tp->lm_jump_selector = TRAMP_CODE64;
    tp->entry = (uint64_t)(uintptr_t)ap_main;
    tp->blocks_off = (uint16_t)blocks_off;
    tp->block_count = (uint16_t)blocks;
    tp->strangers = 0;
    tp->idt_limit = idtr.limit;
    tp->idt_base = idtr.base;
    return tp;
}

struct ipi_job {
    uint32_t dest, icr;
    bool sent;
};

static void ipi_run(void *p)
{
    struct ipi_job *j = p;
    j->sent = lapic_send_ipi(&smp.lapic, j->dest, j->icr, us_to_tsc(IPI_SEND_US));
}

/* False with the reason in c when the IPI could not be sent. */
static bool send_ipi(struct smp_cpu *c, uint32_t icr, const char *what)
{
    struct ipi_job j = {c->apic_id, icr, false};
    struct probe_fault fault;
    if (!probe_run(ipi_run, &j, &fault)) {
        fmt_format(c->reason, sizeof c->reason, "sending %s faulted: %s", what, fault.text);
        return false;
    }
    if (!j.sent) {
        fmt_format(c->reason, sizeof c->reason, "%s stayed pending in the ICR for %u us", what, IPI_SEND_US);
        return false;
    }
    return true;
}

static bool send_init(struct smp_cpu *c)
{
    if (!send_ipi(c, ICR_DELIVERY_INIT | ICR_TRIGGER_LEVEL | ICR_LEVEL_ASSERT, "INIT"))
        return false;
    /* The de-assert only matters to old APICs (SDM 11.6.1, "INIT Level
       De-assert"), and x2APIC mode does not have it. */
    if (!smp.lapic.x2apic && !send_ipi(c, ICR_DELIVERY_INIT | ICR_TRIGGER_LEVEL, "INIT de-assert"))
        return false;
    return true;
}

static const char *stage_text(uint8_t stage)
{
    switch (stage) {
    case STAGE_NONE: return "it never ran the trampoline (no sign of life after INIT-SIPI-SIPI)";
    case STAGE_REAL: return "it started in real mode but did not reach protected mode";
    case STAGE_PROTECTED: return "it reached protected mode but not long mode";
    case STAGE_LONG: return "it reached long mode but not its mailbox";
    }
    return "unknown";
}

/* False when the AP took its block and still did not answer: its index
   (its stack, its mailbox) may yet be used by it, so no other CPU may have
   it. */
static bool start_one(struct smp_cpu *c, const struct trampoline_params *tp, struct trampoline_cpu *b, int index)
{
    struct mailbox *mb = &mailbox[index];
    *mb = (struct mailbox){0};
    b->stack_top = (uint64_t)(uintptr_t)(ap_stacks[index] + AP_STACK_BYTES);
    b->arg = (uint64_t)index;
    b->stage = STAGE_NONE;
    barrier();
    b->claim = CLAIM_OPEN;
    barrier();
    uint32_t vector = (uint32_t)(smp.trampoline_page >> 12);
    uint64_t t0 = rdtsc();
    for (int sipi = 0; sipi < 2; sipi++) {
        /* The second SIPI is ignored by a CPU the first one started (9.4.4.1). */
        if (!send_ipi(c, ICR_DELIVERY_STARTUP | vector, "STARTUP")) {
            uint8_t open = CLAIM_OPEN;
            if (__atomic_compare_exchange_n(&b->claim, &open, CLAIM_WITHDRAWN, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return true; /* c->reason says why the IPI failed */
            break;           /* the first SIPI started it after all: wait for it below */
        }
        delay_us(SIPI_DELAY_US);
    }
    uint64_t limit = us_to_tsc(AP_ALIVE_US);
    for (uint32_t i = 0; i < SPIN_CAP && !mb->running && rdtsc() - t0 < limit; i++)
        cpu_relax();
    bool withdrawn = false;
    if (!mb->running) {
        uint8_t open = CLAIM_OPEN;
        withdrawn = __atomic_compare_exchange_n(&b->claim, &open, CLAIM_WITHDRAWN, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        /* Not withdrawn: it took its block in that instant and is on its
           way to ap_main; give it the same time again. */
        uint64_t t1 = rdtsc();
        for (uint32_t i = 0; !withdrawn && i < SPIN_CAP && !mb->running && rdtsc() - t1 < limit; i++)
            cpu_relax();
    }
    c->stage = mb->running ? STAGE_RUNNING : b->stage;
    if (!mb->running) {
        if (!withdrawn)
            fmt_format(c->reason, sizeof c->reason, "it took its trampoline block but did not reach its mailbox within %u ms",
                       2 * AP_ALIVE_US / 1000);
        else if (c->stage == STAGE_NONE && tp->strangers)
            fmt_format(c->reason, sizeof c->reason, "no answer within %u ms; a CPU with APIC ID %u ran the trampoline, not in the MADT",
                       AP_ALIVE_US / 1000, tp->stranger_id);
        else
            fmt_format(c->reason, sizeof c->reason, "no answer within %u ms: %s", AP_ALIVE_US / 1000, stage_text(c->stage));
        /* Back to wait-for-SIPI: a late start finds its block withdrawn
           and halts; INIT makes sure of it. */
        send_init(c);
        return withdrawn;
    }
    c->start_ticks = rdtsc() - t0;
    c->started = true;
    c->index = index;
    return true;
}

bool smp_bsp_apic(void)
{
    static int state; /* 0 not tried, 1 ready, -1 not usable */
    if (!state)
        state = apic_ready() ? 1 : -1;
    return state > 0;
}

void smp_use(const struct boot_info *bi, const struct acpi_info *acpi)
{
    smp.boot = bi;
    smp.acpi = acpi;
}

void smp_start(void)
{
    if (smp.tried)
        return;
    smp.tried = true;
    smp.deaf_asked = cmdline_get_u64(&boot_cmdline, "smp_deaf", &smp.deaf_index);
    for (int i = 0; i < PERCPU_MAX; i++)
        smp.entry_of[i] = -1;
    smp.running = 1;
    uint64_t t0 = rdtsc();
    bool ok = smp_bsp_apic();
    if (!smp.acpi || !smp.acpi->madt_found) {
        if (!smp.why[0])
            fmt_format(smp.why, sizeof smp.why, "no valid MADT (ACPI APIC table): the other CPUs cannot be found");
        return;
    }
    list_cpus();
    for (uint32_t i = 0; i < smp.count; i++)
        if (smp.cpus[i].is_bsp)
            smp.entry_of[0] = (int)i;
    if (!ok)
        return;
    if (smp.entry_of[0] < 0) {
        fmt_format(smp.why, sizeof smp.why, "the boot CPU's APIC ID %u is not in the MADT: the list cannot be trusted",
                   smp.bsp_apic_id);
        return;
    }
    /* The APs to start: enabled, addressable in this APIC mode, within
       PERCPU_MAX. Each gets its own block in the trampoline's pages. */
    bool wanted[ACPI_MAX_CPUS] = {0};
    uint32_t blocks = 0;
    for (uint32_t i = 0; i < smp.count; i++) {
        struct smp_cpu *c = &smp.cpus[i];
        if (c->is_bsp || !c->enabled)
            continue;
        if (!smp.lapic.x2apic && c->apic_id > XAPIC_MAX_ID) {
            fmt_format(c->reason, sizeof c->reason, "APIC ID %u needs x2APIC mode, which this CPU %s", c->apic_id,
                       boot_cpu.leaves[CPUID_IDX_1].ecx & CPUID1_ECX_X2APIC ? "is not in" : "does not have (CPUID.1:ECX[21] clear)");
            continue;
        }
        if (blocks + 1 >= PERCPU_MAX) {
            fmt_format(c->reason, sizeof c->reason, "beyond the %d CPUs this image runs (PERCPU_MAX)", PERCPU_MAX);
            continue;
        }
        wanted[i] = true;
        blocks++;
    }
    uint32_t blocks_off = ((uint32_t)(trampoline_end - trampoline_start) + 7u) & ~7u;
    uint32_t pages = (uint32_t)((blocks_off + blocks * sizeof(struct trampoline_cpu) + PAGE - 1) / PAGE);
    smp.trampoline_page = find_trampoline_pages(smp.boot, pages);
    if (!smp.trampoline_page) {
        fmt_format(smp.why, sizeof smp.why, "the memory map has no %u usable 4 KiB page%s below 640 KiB for the trampoline", pages,
                   pages == 1 ? "" : "s");
        return;
    }
    struct trampoline_params *tp = install_trampoline(smp.trampoline_page, blocks_off, blocks);
    struct trampoline_cpu *block = (struct trampoline_cpu *)(uintptr_t)(smp.trampoline_page + blocks_off);
    uint16_t block_of[ACPI_MAX_CPUS];
    uint32_t b = 0;
    for (uint32_t i = 0; i < smp.count; i++)
        if (wanted[i]) {
            block[b] = (struct trampoline_cpu){.apic_id = smp.cpus[i].apic_id, .stage = STAGE_NONE, .claim = CLAIM_WITHDRAWN};
            block_of[i] = (uint16_t)b++;
        }

    /* INIT every AP, then one 10 ms wait for them all (each waits for its
       SIPI as long as it takes), then SIPI-SIPI one at a time. */
    bool inited[ACPI_MAX_CPUS] = {0};
    for (uint32_t i = 0; i < smp.count; i++)
        if (wanted[i])
            inited[i] = send_init(&smp.cpus[i]);
    delay_us(INIT_DELAY_US);
    int next = 1;
    const struct smp_cpu *lost = 0;
    for (uint32_t i = 0; i < smp.count; i++) {
        if (!inited[i])
            continue;
        struct smp_cpu *c = &smp.cpus[i];
        if (lost) {
            fmt_format(c->reason, sizeof c->reason, "not started: APIC ID %u may still take index %d, which would be this CPU's",
                       lost->apic_id, next);
            continue;
        }
        if (!start_one(c, tp, &block[block_of[i]], next))
            lost = c;
        if (c->started) {
            smp.entry_of[next] = (int)i;
            next++;
            smp.running++;
        }
    }
    smp.total_ticks = rdtsc() - t0;
}

/* The wake-up IPI: a fixed interrupt, so it ends an HLT with interrupts
   on; a CPU that is awake takes it when it next waits, and looks at its
   mailbox once more. */
static void wake(int index)
{
    if (smp.deaf_asked && smp.deaf_index == (uint64_t)index)
        return; /* smp_deaf=: a CPU that never wakes, on purpose */
    const struct smp_cpu *c = &smp.cpus[smp.entry_of[index]];
    lapic_send_ipi(&smp.lapic, c->apic_id, ICR_DELIVERY_FIXED | VEC_SMP_WAKE, us_to_tsc(IPI_SEND_US));
}

void smp_wake(int index)
{
    if (index > 0 && index < PERCPU_MAX && smp.entry_of[index] >= 0)
        wake(index);
}

bool smp_nap_due(uint64_t last_seen_tsc, uint32_t spin_us) { return rdtsc() - last_seen_tsc > us_to_tsc(spin_us); }

void smp_nap(volatile uint32_t *napping, const volatile uint64_t *word, uint64_t seen)
{
    struct mailbox *mb = &mailbox[this_cpu()->index];
    *napping = 1;
    mb->napping = true;
    cpu_store_load_fence();
    if (*word == seen)
        cpu_halt_for_interrupt();
    mb->napping = false;
    *napping = 0;
}

static struct mailbox *usable(int index)
{
    if (index <= 0 || index >= PERCPU_MAX || smp.entry_of[index] < 0)
        return 0;
    if (smp.cpus[smp.entry_of[index]].lost)
        return 0;
    return &mailbox[index];
}

bool smp_post(int index, smp_job fn, void *arg)
{
    struct mailbox *mb = usable(index);
    if (!mb || mb->posted != mb->finished || mb->park)
        return false;
    mb->fn = fn;
    mb->arg = arg;
    mb->faulted = false;
    barrier();
    mb->posted = mb->finished + 1;
    wake(index);
    return true;
}

bool smp_wait_past(int index, uint64_t budget_ticks, uint64_t grace_ticks, bool *faulted, struct probe_fault *fault)
{
    struct mailbox *mb = usable(index);
    if (!mb)
        return false;
    uint64_t t0 = rdtsc(), resend = us_to_tsc(WAKE_RESEND_US), last = t0, total = budget_ticks + grace_ticks;
    /* the TSC deadline ends the wait; the count only bounds it if the TSC
       stood still. A PAUSE can take 140 cycles (Skylake on), so a fixed
       SPIN_CAP would end a soak job's long budget early: scale it. */
    uint64_t cap = total / 64 > SPIN_CAP ? total / 64 : SPIN_CAP;
    for (uint64_t i = 0; i < cap && mb->finished != mb->posted; i++) {
        uint64_t now = rdtsc();
        if (now - t0 > total)
            break;
        if (now - last > resend && (mb->taken != mb->posted || mb->napping || now - t0 > budget_ticks)) {
            /* not taken: in case the first IPI was lost; napping: a job
               asleep in smp_nap looks at its stop flag again; past its
               budget: a job halted for an interrupt that never comes. A
               job that runs with interrupts on (the timers') is otherwise
               left undisturbed. */
            wake(index);
            last = now;
        }
        cpu_relax();
    }
    if (mb->finished != mb->posted) {
        struct smp_cpu *c = &smp.cpus[smp.entry_of[index]];
        c->lost = true;
        c->never_woke = mb->taken != mb->posted;
        if (c->never_woke)
            fmt_format(c->reason, sizeof c->reason,
                       "it never woke for a job (asleep in HLT through the wake-up IPIs); no more jobs sent to it");
        else if (grace_ticks)
            fmt_format(c->reason, sizeof c->reason, "a job did not end within %llu ms past its %llu ms; no more jobs sent to it",
                       (unsigned long long)(grace_ticks / us_to_tsc(1000)), (unsigned long long)(budget_ticks / us_to_tsc(1000)));
        else
            fmt_format(c->reason, sizeof c->reason, "a job did not finish within its %llu ms; no more jobs sent to it",
                       (unsigned long long)(budget_ticks / us_to_tsc(1000)));
        return false;
    }
    barrier();
    if (faulted)
        *faulted = mb->faulted;
    if (fault && mb->faulted)
        *fault = mb->fault;
    return true;
}

bool smp_wait(int index, uint64_t budget_ticks, bool *faulted, struct probe_fault *fault)
{
    return smp_wait_past(index, budget_ticks, 0, faulted, fault);
}

bool smp_run(int index, smp_job fn, void *arg, uint64_t budget_ticks, bool *faulted, struct probe_fault *fault)
{
    return smp_post(index, fn, arg) && smp_wait(index, budget_ticks, faulted, fault);
}

void smp_park_all(void)
{
    for (int i = 1; i < PERCPU_MAX; i++) {
        struct mailbox *mb = usable(i);
        if (!mb || mb->posted != mb->finished)
            continue;
        mb->park = true;
        barrier();
        mb->posted = mb->finished + 1;
        wake(i);
    }
}

const struct smp_cpu *smp_cpu_of(int index)
{
    if (index < 0 || index >= PERCPU_MAX || smp.entry_of[index] < 0)
        return 0;
    return &smp.cpus[smp.entry_of[index]];
}

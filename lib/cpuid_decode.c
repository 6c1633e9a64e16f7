/* CPUID decoding (see cpuid_decode.h). Bit positions: Intel SDM vol. 2A,
   Table 3-8 "Information Returned by CPUID Instruction"; AMD APM vol. 3,
   E.3/E.4 (0x80000001 EDX[27] RDTSCP, 0x80000007 EDX[8] invariant TSC). */
#include "cpuid_decode.h"

#include "record.h"

const uint32_t cpuid_leaf_numbers[CPUID_LEAF_COUNT] = {
    0x0, 0x1, 0x7, 0x15, 0x16, 0x40000000, 0x40000010,
    0x80000000, 0x80000001, 0x80000002, 0x80000003, 0x80000004, 0x80000007,
};

#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID1_ECX_HYPERVISOR (1u << 31)
#define CPUID1_EDX_TSC (1u << 4)
#define CPUID7_EBX_TSC_ADJUST (1u << 1)
#define CPUIDX1_EDX_RDTSCP (1u << 27)
#define CPUIDX1_EDX_LONG_MODE (1u << 29)
#define CPUIDX7_EDX_INVARIANT_TSC (1u << 8)

static void put_reg(char *dst, uint32_t r)
{
    for (int i = 0; i < 4; i++)
        dst[i] = (char)(r >> (8 * i));
}

static bool str_is(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static void add_claim(struct cpu_info *ci, const char *source, const char *what, uint64_t hz)
{
    if (hz == 0 || ci->claim_count == FREQ_CLAIMS_MAX)
        return;
    ci->claims[ci->claim_count++] = (struct freq_claim){source, what, hz};
}

void cpuid_decode(const struct cpuid_leaf l[CPUID_LEAF_COUNT], struct cpu_info *ci)
{
    *ci = (struct cpu_info){0};
    const struct cpuid_leaf *l0 = &l[CPUID_IDX_0];
    ci->max_leaf = l0->eax;
    put_reg(ci->vendor, l0->ebx);
    put_reg(ci->vendor + 4, l0->edx);
    put_reg(ci->vendor + 8, l0->ecx);
    ci->amd_like = str_is(ci->vendor, "AuthenticAMD") || str_is(ci->vendor, "HygonGenuine");

    const struct cpuid_leaf *l1 = &l[CPUID_IDX_1];
    if (l1->valid) {
        /* Display family/model: SDM vol. 2A, Figure 3-6 and the text under it. */
        uint32_t base_family = (l1->eax >> 8) & 0xF, base_model = (l1->eax >> 4) & 0xF;
        ci->family = base_family == 0xF ? base_family + ((l1->eax >> 20) & 0xFF) : base_family;
        ci->model = (base_family == 0x6 || base_family == 0xF) ? (((l1->eax >> 16) & 0xF) << 4) + base_model : base_model;
        ci->stepping = l1->eax & 0xF;
        ci->tsc = l1->edx & CPUID1_EDX_TSC;
        ci->tsc_deadline = l1->ecx & CPUID1_ECX_TSC_DEADLINE;
        ci->hypervisor = l1->ecx & CPUID1_ECX_HYPERVISOR;
    }
    if (l[CPUID_IDX_7].valid)
        ci->tsc_adjust = l[CPUID_IDX_7].ebx & CPUID7_EBX_TSC_ADJUST;

    ci->max_ext_leaf = l[CPUID_IDX_EXT0].valid ? l[CPUID_IDX_EXT0].eax : 0;
    if (l[CPUID_IDX_EXT1].valid) {
        ci->rdtscp = l[CPUID_IDX_EXT1].edx & CPUIDX1_EDX_RDTSCP;
        ci->long_mode = l[CPUID_IDX_EXT1].edx & CPUIDX1_EDX_LONG_MODE;
    }
    if (l[CPUID_IDX_EXT7].valid)
        ci->invariant_tsc = l[CPUID_IDX_EXT7].edx & CPUIDX7_EDX_INVARIANT_TSC;
    if (l[CPUID_IDX_EXT4].valid) {
        for (int i = 0; i < 3; i++) {
            const struct cpuid_leaf *b = &l[CPUID_IDX_EXT2 + i];
            put_reg(ci->brand + 16 * i, b->eax);
            put_reg(ci->brand + 16 * i + 4, b->ebx);
            put_reg(ci->brand + 16 * i + 8, b->ecx);
            put_reg(ci->brand + 16 * i + 12, b->edx);
        }
        /* Brand strings are padded with leading spaces on some parts. */
        int start = 0;
        while (ci->brand[start] == ' ')
            start++;
        int i = 0;
        for (; ci->brand[start + i] && start + i < 48; i++)
            ci->brand[i] = ci->brand[start + i];
        ci->brand[i] = '\0';
        while (i > 0 && ci->brand[i - 1] == ' ')
            ci->brand[--i] = '\0';
    }

    if (ci->hypervisor && l[CPUID_IDX_HV0].valid) {
        ci->max_hv_leaf = l[CPUID_IDX_HV0].eax;
        put_reg(ci->hv_vendor, l[CPUID_IDX_HV0].ebx);
        put_reg(ci->hv_vendor + 4, l[CPUID_IDX_HV0].ecx);
        put_reg(ci->hv_vendor + 8, l[CPUID_IDX_HV0].edx);
    }

    /* Leaf 0x15: TSC = crystal * EBX / EAX (SDM vol. 2A, CPUID leaf 15H).
       With the crystal field 0, derive the crystal from leaf 0x16's base
       frequency the way the SDM's note and Linux native_calibrate_tsc() do:
       crystal = base_MHz * 10^6 * EAX / EBX, so the TSC claim equals base. */
    const struct cpuid_leaf *l15 = &l[CPUID_IDX_15], *l16 = &l[CPUID_IDX_16];
    uint64_t base_hz = l16->valid ? (uint64_t)(l16->eax & 0xFFFF) * 1000000u : 0;
    if (l15->valid && l15->eax && l15->ebx) {
        if (l15->ecx) {
            add_claim(ci, "cpuid.15h", "crystal", l15->ecx);
            add_claim(ci, "cpuid.15h", "tsc", (uint64_t)l15->ecx * l15->ebx / l15->eax);
        } else if (base_hz) {
            uint64_t crystal = base_hz * l15->eax / l15->ebx;
            add_claim(ci, "cpuid.15h+16h", "crystal", crystal);
            add_claim(ci, "cpuid.15h+16h", "tsc", crystal * l15->ebx / l15->eax);
        }
    }
    if (l16->valid) {
        add_claim(ci, "cpuid.16h", "cpu_base", base_hz);
        add_claim(ci, "cpuid.16h", "cpu_max", (uint64_t)(l16->ebx & 0xFFFF) * 1000000u);
        add_claim(ci, "cpuid.16h", "bus", (uint64_t)(l16->ecx & 0xFFFF) * 1000000u);
    }
    /* Hypervisor timing leaf (VMware's convention, used by KVM and QEMU):
       EAX = TSC kHz, EBX = local APIC bus kHz. */
    if (ci->max_hv_leaf >= 0x40000010 && l[CPUID_IDX_HV10].valid) {
        add_claim(ci, "cpuid.40000010h", "tsc", (uint64_t)l[CPUID_IDX_HV10].eax * 1000u);
        if (l[CPUID_IDX_HV10].ebx)
            add_claim(ci, "cpuid.40000010h", "bus", (uint64_t)l[CPUID_IDX_HV10].ebx * 1000u);
    }
}

void cpu_identity_record(struct record *r, const struct cpu_info *ci)
{
    record_str(r, "vendor", ci->vendor);
    record_str(r, "brand", ci->brand);
    record_u64(r, "family", ci->family);
    record_u64(r, "model", ci->model);
    record_u64(r, "stepping", ci->stepping);
    if (ci->hypervisor)
        record_str(r, "hypervisor", ci->hv_vendor);
    else
        record_null(r, "hypervisor");
}

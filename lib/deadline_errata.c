/* The TSC-deadline errata table (see deadline_errata.h). */
#include "deadline_errata.h"

#include <stddef.h>

#define ANY_STEPPING 0xFFu

static const struct {
    uint8_t model, stepping_first, stepping_last;
    struct deadline_erratum e;
} table[] = {
    {0x3F, 0x2, 0x2, {"Haswell-EP", 0x3a}},
    {0x3F, 0x4, 0x4, {"Haswell-EX", 0x0f}},
    {0x4F, 0x0, ANY_STEPPING, {"Broadwell-X", 0x0b000020}},
    {0x56, 0x2, 0x2, {"Broadwell-DE", 0x00000011}},
    {0x56, 0x3, 0x3, {"Broadwell-DE", 0x0700000e}},
    {0x56, 0x4, 0x4, {"Broadwell-DE", 0x0f00000c}},
    {0x56, 0x5, 0x5, {"Broadwell-DE", 0x0e000003}},
    {0x55, 0x3, 0x3, {"Skylake-X", 0x01000136}},
    {0x55, 0x4, 0x4, {"Skylake-X", 0x02000014}},
    {0x55, 0x5, 0xF, {"Skylake-X", 0}},
    {0x3C, 0x0, ANY_STEPPING, {"Haswell", 0x22}},
    {0x45, 0x0, ANY_STEPPING, {"Haswell (mobile)", 0x20}},
    {0x46, 0x0, ANY_STEPPING, {"Haswell (GT3e)", 0x17}},
    {0x3D, 0x0, ANY_STEPPING, {"Broadwell", 0x25}},
    {0x47, 0x0, ANY_STEPPING, {"Broadwell (GT3e)", 0x17}},
    {0x4E, 0x0, ANY_STEPPING, {"Skylake (mobile)", 0xb2}},
    {0x5E, 0x0, ANY_STEPPING, {"Skylake", 0xb2}},
    {0x8E, 0x0, ANY_STEPPING, {"Kaby Lake (mobile)", 0x52}},
    {0x9E, 0x0, ANY_STEPPING, {"Kaby Lake", 0x52}},
};

const struct deadline_erratum *deadline_erratum_of(uint32_t family, uint32_t model, uint32_t stepping)
{
    if (family != 6)
        return NULL;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].model == model && stepping >= table[i].stepping_first &&
            (table[i].stepping_last == ANY_STEPPING || stepping <= table[i].stepping_last))
            return &table[i].e;
    return NULL;
}

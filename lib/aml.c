/* AML scans (see aml.h). Encodings: ACPI 6.5, 20.2.2 (NameOp 0x08, NameSeg,
   RootChar '\'), 20.2.3 (ByteConst ... QWordConst, ConstObj ZeroOp 0x00,
   OneOp 0x01, OnesOp 0xFF, StringPrefix 0x0D), 20.2.4 (PkgLength),
   20.2.5.4 (DefPackage: PackageOp 0x12 PkgLength NumElements
   PackageElementList). */
#include "aml.h"

#include "format.h"

#define AML_NAME_OP 0x08
#define AML_ROOT_CHAR 0x5C
#define AML_PACKAGE_OP 0x12
#define AML_ZERO_OP 0x00
#define AML_ONE_OP 0x01
#define AML_ONES_OP 0xFF
#define AML_BYTE_PREFIX 0x0A
#define AML_WORD_PREFIX 0x0B
#define AML_DWORD_PREFIX 0x0C
#define AML_STRING_PREFIX 0x0D
#define AML_QWORD_PREFIX 0x0E
#define PKGLEN_EXTRA_SHIFT 6      /* lead byte bits 7:6: how many bytes follow */
#define PKGLEN_ONE_BYTE_MASK 0x3F /* bits 5:0 when no byte follows */
#define PKGLEN_LOW_NIBBLE 0x0F    /* bits 3:0 when bytes follow; 5:4 must be zero */
#define PKGLEN_RESERVED 0x30
#define SLP_TYP_MAX 7

static bool seg_is(const uint8_t *p, const char *seg)
{
    for (int i = 0; i < 4; i++)
        if (p[i] != (uint8_t)seg[i])
            return false;
    return true;
}

/* PkgLength at p (avail bytes readable): the length it encodes (which
   counts its own bytes) and how many bytes it took. False when malformed. */
static bool pkg_length(const uint8_t *p, uint32_t avail, uint32_t *length, uint32_t *used, char *why, unsigned why_len)
{
    if (avail < 1) {
        fmt_format(why, why_len, "\\_S5_: the package ends before its PkgLength");
        return false;
    }
    uint32_t extra = p[0] >> PKGLEN_EXTRA_SHIFT;
    if (extra == 0) {
        *length = p[0] & PKGLEN_ONE_BYTE_MASK;
        *used = 1;
        return true;
    }
    if (p[0] & PKGLEN_RESERVED) {
        fmt_format(why, why_len, "\\_S5_: bad PkgLength lead byte 0x%02x (bits 5:4 set with %u bytes following)", p[0], extra);
        return false;
    }
    if (avail < 1 + extra) {
        fmt_format(why, why_len, "\\_S5_: the package's %u-byte PkgLength is cut off", 1 + extra);
        return false;
    }
    uint32_t v = p[0] & PKGLEN_LOW_NIBBLE;
    for (uint32_t i = 0; i < extra; i++)
        v |= (uint32_t)p[1 + i] << (4 + 8 * i);
    *length = v;
    *used = 1 + extra;
    return true;
}

/* One integer element at p, at most avail bytes: its value and size. */
static bool integer_element(const uint8_t *p, uint32_t avail, uint64_t *value, uint32_t *used)
{
    static const uint8_t prefix[] = {AML_BYTE_PREFIX, AML_WORD_PREFIX, AML_DWORD_PREFIX, AML_QWORD_PREFIX};
    static const uint8_t bytes[] = {1, 2, 4, 8};
    if (avail < 1)
        return false;
    if (p[0] == AML_ZERO_OP || p[0] == AML_ONE_OP) {
        *value = p[0];
        *used = 1;
        return true;
    }
    if (p[0] == AML_ONES_OP) {
        *value = ~0ull;
        *used = 1;
        return true;
    }
    for (unsigned k = 0; k < sizeof prefix; k++) {
        if (p[0] != prefix[k])
            continue;
        if (avail < 1u + bytes[k])
            return false;
        uint64_t v = 0;
        for (unsigned i = 0; i < bytes[k]; i++)
            v |= (uint64_t)p[1 + i] << (8 * i);
        *value = v;
        *used = 1u + bytes[k];
        return true;
    }
    return false;
}

static bool read_s5_package(const uint8_t *aml, uint32_t len, uint32_t at, struct aml_s5 *out)
{
    /* at: the PackageOp */
    uint32_t length, used;
    if (!pkg_length(aml + at + 1, len - at - 1, &length, &used, out->why, sizeof out->why))
        return false;
    /* the package spans from its PkgLength to PkgLength + length */
    uint32_t start = at + 1, end = start + length;
    if (length < used + 1 || end > len || end < start) {
        fmt_format(out->why, sizeof out->why, "\\_S5_: PkgLength %u does not fit (%u bytes left in the table, NumElements needs %u)",
                   length, len - start, used + 1);
        return false;
    }
    uint32_t p = start + used;
    out->elements = aml[p++];
    if (out->elements == 0) {
        fmt_format(out->why, sizeof out->why, "\\_S5_: the package declares no elements");
        return false;
    }
    uint64_t v[2];
    unsigned want = out->elements >= 2 ? 2 : 1;
    for (unsigned i = 0; i < want; i++) {
        uint32_t n;
        if (p >= end || !integer_element(aml + p, end - p, &v[i], &n)) {
            if (p >= end)
                fmt_format(out->why, sizeof out->why, "\\_S5_: the package ends before element %u", i);
            else
                fmt_format(out->why, sizeof out->why, "\\_S5_: element %u is not an integer (opcode 0x%02x)", i, aml[p]);
            return false;
        }
        if (v[i] > SLP_TYP_MAX) {
            fmt_format(out->why, sizeof out->why, "\\_S5_: element %u is %llu, not a 3-bit SLP_TYP", i, (unsigned long long)v[i]);
            return false;
        }
        p += n;
    }
    out->slp_typa = (uint8_t)v[0];
    out->slp_typb = (uint8_t)(want == 2 ? v[1] : v[0]);
    return true;
}

bool aml_find_s5(const uint8_t *aml, uint32_t len, struct aml_s5 *out)
{
    *out = (struct aml_s5){0};
    if (!aml) {
        fmt_format(out->why, sizeof out->why, "no DSDT to search for \\_S5_");
        return false;
    }
    for (uint32_t i = 0; i + 5 <= len; i++) {
        if (aml[i] != AML_NAME_OP)
            continue;
        uint32_t name = i + 1;
        if (aml[name] == AML_ROOT_CHAR)
            name++;
        if (name + 4 > len || !seg_is(aml + name, "_S5_"))
            continue;
        uint32_t pkg = name + 4;
        if (pkg >= len) {
            fmt_format(out->why, sizeof out->why, "\\_S5_ at offset %u: the table ends after its name", i);
            return false;
        }
        if (aml[pkg] != AML_PACKAGE_OP) {
            fmt_format(out->why, sizeof out->why, "\\_S5_ at offset %u is not a package (opcode 0x%02x)", i, aml[pkg]);
            return false;
        }
        out->offset = i;
        if (!read_s5_package(aml, len, pkg, out))
            return false;
        out->found = true;
        return true;
    }
    fmt_format(out->why, sizeof out->why, "no \\_S5_ package in the DSDT (%u bytes of AML searched)", len);
    return false;
}

bool aml_has_string_hid(const uint8_t *aml, uint32_t len, const char *hid)
{
    uint32_t hid_len = 0;
    while (hid[hid_len])
        hid_len++;
    if (!aml)
        return false;
    /* NameOp "_HID" StringPrefix hid NullChar */
    for (uint32_t i = 0; i + 6 + hid_len + 1 <= len; i++) {
        if (aml[i] != AML_NAME_OP || !seg_is(aml + i + 1, "_HID") || aml[i + 5] != AML_STRING_PREFIX)
            continue;
        uint32_t k = 0;
        while (k < hid_len && aml[i + 6 + k] == (uint8_t)hid[k])
            k++;
        if (k == hid_len && aml[i + 6 + k] == 0)
            return true;
    }
    return false;
}

"""CPUID decoding: identity, time features and every claimed TSC frequency."""

import ctypes
import struct

from helpers.hostlib import as_json

LEAVES = [0x0, 0x1, 0x7, 0x15, 0x16, 0x40000000, 0x40000010, 0x80000000, 0x80000001, 0x80000002, 0x80000003, 0x80000004, 0x80000007]


def regs_of(s: str):
    return struct.unpack("<4I", s.encode().ljust(16, b"\0"))


def decode(lib, leaves: dict):
    rows = []
    for n in LEAVES:
        if n in leaves:
            rows += [1, *leaves[n]]
        else:
            rows += [0, 0, 0, 0, 0]
    arr = (ctypes.c_uint32 * len(rows))(*rows)
    return as_json(lib.shim_cpuid_decode(arr))


def vendor_regs(v: str, max_leaf: int):
    b, d, c = struct.unpack("<3I", v.encode())
    return (max_leaf, b, c, d)


def brand_leaves(brand: str):
    raw = brand.encode().ljust(48, b"\0")
    return {0x80000002 + i: struct.unpack("<4I", raw[16 * i:16 * i + 16]) for i in range(3)}


def intel_skylake():
    # family 6 model 0x5E stepping 3: eax = ext model 5, family 6, model E, stepping 3
    leaves = {
        0x0: vendor_regs("GenuineIntel", 0x16),
        0x1: (0x000506E3, 0, 1 << 24, 1 << 4),
        0x7: (0, 1 << 1, 0, 0),
        0x80000000: (0x80000008, 0, 0, 0),
        0x80000001: (0, 0, 0, (1 << 27) | (1 << 29)),
        0x80000007: (0, 0, 0, 1 << 8),
    }
    leaves.update(brand_leaves("       Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz"))
    return leaves


def test_identity_and_features(lib):
    r = decode(lib, intel_skylake())
    assert r["vendor"] == "GenuineIntel"
    assert r["brand"] == "Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz"  # leading spaces dropped
    assert (r["family"], r["model"], r["stepping"]) == (6, 0x5E, 3)
    assert r["tsc"] and r["rdtscp"] and r["invariant_tsc"] and r["tsc_deadline"] and r["tsc_adjust"]
    assert not r["hypervisor"] and not r["amd_like"]


def test_amd_family_uses_extended_family(lib):
    leaves = {0x0: vendor_regs("AuthenticAMD", 0x10), 0x1: (0x00A00F11, 0, 0, 1 << 4)}  # Zen 3: family 0x19
    r = decode(lib, leaves)
    assert r["amd_like"] and r["family"] == 0x19 and r["model"] == 0x01 and r["stepping"] == 1
    assert not r["rdtscp"] and not r["invariant_tsc"]  # extended leaves absent


def test_leaf_15_with_crystal(lib):
    leaves = intel_skylake()
    leaves[0x15] = (2, 168, 24_000_000, 0)  # 24 MHz * 168 / 2 = 2016 MHz
    r = decode(lib, leaves)
    assert r["cpuid.15h/crystal"] == 24_000_000
    assert r["cpuid.15h/tsc"] == 2_016_000_000


def test_leaf_15_without_crystal_derives_it_from_leaf_16(lib):
    leaves = intel_skylake()
    leaves[0x15] = (2, 334, 0, 0)
    leaves[0x16] = (4000, 4200, 100, 0)
    r = decode(lib, leaves)
    # crystal = 4000 MHz * 2 / 334; TSC = crystal * 334 / 2, which is base up to integer rounding
    assert r["cpuid.15h+16h/crystal"] == 4_000_000_000 * 2 // 334
    assert r["cpuid.15h+16h/tsc"] == (4_000_000_000 * 2 // 334) * 334 // 2
    assert abs(r["cpuid.15h+16h/tsc"] - 4_000_000_000) < 200
    assert r["cpuid.16h/cpu_base"] == 4_000_000_000
    assert r["cpuid.16h/cpu_max"] == 4_200_000_000
    assert r["cpuid.16h/bus"] == 100_000_000


def test_leaf_15_zero_ratio_and_no_leaf_16_claims_nothing(lib):
    leaves = intel_skylake()
    leaves[0x15] = (0, 0, 24_000_000, 0)
    assert decode(lib, leaves)["claim_hz"] == []
    leaves[0x15] = (2, 334, 0, 0)  # crystal unknown and no leaf 0x16
    assert decode(lib, leaves)["claim_hz"] == []


def test_hypervisor_signature_and_timing_leaf(lib):
    leaves = intel_skylake()
    leaves[0x1] = (0x000506E3, 0, (1 << 31), 1 << 4)
    leaves[0x40000000] = (0x40000010, *struct.unpack("<3I", b"KVMKVMKVM\0\0\0"))
    leaves[0x40000010] = (2_596_122, 1_000_000, 0, 0)
    r = decode(lib, leaves)
    assert r["hypervisor"] and r["hv_vendor"] == "KVMKVMKVM"
    assert r["cpuid.40000010h/tsc"] == 2_596_122_000


def test_timing_leaf_ignored_when_beyond_the_hypervisor_maximum(lib):
    leaves = intel_skylake()
    leaves[0x1] = (0x000506E3, 0, (1 << 31), 1 << 4)
    leaves[0x40000000] = (0x40000001, *struct.unpack("<3I", b"TCGTCGTCGTCG"))
    leaves[0x40000010] = (1_000_000, 0, 0, 0)
    r = decode(lib, leaves)
    assert r["hv_vendor"] == "TCGTCGTCGTCG"
    assert "cpuid.40000010h/tsc" not in r

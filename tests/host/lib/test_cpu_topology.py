"""CPU topology from APIC IDs (lib/cpu_topology.c): the shifts CPUID leaf
0Bh/1Fh or AMD's 8000_0008h/8000_001Eh give, each ID's package, core and
thread, and the groups a set of IDs falls into. Known answers worked by
hand from the SDM's and APM's field definitions, and QEMU's layout of
`-smp N,sockets=S,cores=C,threads=T` (APIC ID = package << pkg_bits |
core << thread_bits | thread, each field rounded up to a power of two)."""

from __future__ import annotations

import ctypes

import pytest

from helpers.hostlib import as_json

u32 = ctypes.c_uint32

SMT, CORE, DIE = 1, 2, 5


@pytest.fixture(scope="module")
def topo(lib):
    lib.shim_topo_extended.restype = ctypes.c_char_p
    lib.shim_topo_extended.argtypes = [ctypes.POINTER(u32), u32, ctypes.POINTER(u32), u32]
    lib.shim_topo_amd.restype = ctypes.c_char_p
    lib.shim_topo_amd.argtypes = [u32, ctypes.c_bool, u32, ctypes.POINTER(u32), u32]
    return lib


def level(shift, kind, count=0, level_no=0):
    """One subleaf: EAX[4:0] shift, EBX[15:0] count (not read), ECX[15:8] type, ECX[7:0] level number."""
    return (shift, kind << 8 | level_no)


def extended(topo, levels, ids):
    regs = [v for l in levels for v in l]
    raw = topo.shim_topo_extended((u32 * max(len(regs), 1))(*regs), len(levels), (u32 * max(len(ids), 1))(*ids), len(ids))
    return as_json(raw)


def amd(topo, e8_ecx, have_1e, e1e_ebx, ids):
    return as_json(topo.shim_topo_amd(e8_ecx, have_1e, e1e_ebx, (u32 * max(len(ids), 1))(*ids), len(ids)))


def places(r):
    p = r["places"]
    return [tuple(p[i : i + 3]) for i in range(0, len(p), 3)]


def qemu_ids(sockets, cores, threads):
    """QEMU's APIC IDs for sockets x cores x threads (x86_topo.h, one die)."""
    tb = (threads - 1).bit_length()
    cb = (cores - 1).bit_length()
    return [s << (cb + tb) | c << tb | t for s in range(sockets) for c in range(cores) for t in range(threads)], tb, cb + tb


@pytest.mark.parametrize("sockets,cores,threads", [(1, 1, 1), (1, 4, 1), (2, 4, 2), (2, 3, 1), (4, 8, 2), (2, 16, 1), (1, 128, 1)])
def test_qemu_layouts_group_as_given(topo, sockets, cores, threads):
    ids, tb, pb = qemu_ids(sockets, cores, threads)
    r = extended(topo, [level(tb, SMT), level(pb, CORE)], ids)
    assert r["ok"] and r["valid"] and r["thread_bits"] == tb and r["package_shift"] == pb
    assert places(r) == [(s, c, t) for s in range(sockets) for c in range(cores) for t in range(threads)]
    assert r["cpus"] == len(ids) and r["packages"] == sockets and r["cores"] == sockets * cores
    assert r["cores_per_package_min"] == r["cores_per_package_max"] == cores
    assert r["threads_per_core_min"] == r["threads_per_core_max"] == threads


def test_order_of_ids_does_not_matter(topo):
    ids, tb, pb = qemu_ids(2, 4, 2)
    r = extended(topo, [level(tb, SMT), level(pb, CORE)], list(reversed(ids)))
    assert r["packages"] == 2 and r["cores"] == 8 and r["threads_per_core_max"] == 2


def test_uneven_groups_show_min_and_max(topo):
    # package 0: cores 0 (2 threads) and 1 (1 thread); package 1: core 0 (1 thread)
    ids = [0b0_0_0, 0b0_0_1, 0b0_1_0, 0b1_0_0]
    r = extended(topo, [level(1, SMT), level(2, CORE)], ids)
    assert places(r) == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0)]
    assert r["packages"] == 2 and r["cores"] == 3
    assert (r["cores_per_package_min"], r["cores_per_package_max"]) == (1, 2)
    assert (r["threads_per_core_min"], r["threads_per_core_max"]) == (1, 2)


def test_leaf_1f_with_a_die_level_uses_the_highest_level_as_the_package(topo):
    # SMT 1 bit, core 4 bits, die 1 bit: package = ID >> 6
    r = extended(topo, [level(1, SMT), level(5, CORE), level(6, DIE)], [0, 1, 2, 0x40, 0x41])
    assert r["thread_bits"] == 1 and r["package_shift"] == 6
    assert places(r) == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0), (1, 0, 1)]


def test_x2apic_ids_above_255(topo):
    # QEMU -smp 288,sockets=2,cores=144: core field 8 bits, socket 1 from ID 256
    r = extended(topo, [level(0, SMT), level(8, CORE)], [0, 143, 256, 399])
    assert places(r) == [(0, 0, 0), (0, 143, 0), (1, 0, 0), (1, 143, 0)]
    assert r["packages"] == 2 and r["cores"] == 4


def test_no_smt_level_means_no_thread_bits(topo):
    r = extended(topo, [level(3, CORE)], [0, 1, 8])
    assert r["valid"] and r["thread_bits"] == 0 and r["package_shift"] == 3
    assert places(r) == [(0, 0, 0), (0, 1, 0), (1, 0, 0)]


@pytest.mark.parametrize("levels", [[], [level(1, 0)], [level(4, SMT), level(2, CORE)]])
def test_an_empty_or_shrinking_leaf_is_not_valid(topo, levels):
    r = extended(topo, levels, [0, 1, 2, 3])
    assert not r["ok"] and not r["valid"]
    # without shifts: every CPU its own core, one package
    assert places(r) == [(0, i, 0) for i in range(4)]
    assert r["packages"] == 1 and r["cores"] == 4 and r["threads_per_core_max"] == 1


def test_the_list_ends_at_the_first_type_0(topo):
    r = extended(topo, [level(1, SMT), level(3, CORE), level(0, 0), level(9, DIE)], [0, 9])
    assert r["package_shift"] == 3 and places(r) == [(0, 0, 0), (1, 0, 1)]


def test_amd_apic_id_size_and_threads_per_core(topo):
    # ApicIdSize 4 (16 IDs a package), ThreadsPerCore 2 (EBX[15:8] = 1)
    r = amd(topo, 4 << 12 | 15, True, 1 << 8, [0, 1, 2, 3, 16, 17])
    assert r["valid"] and r["thread_bits"] == 1 and r["package_shift"] == 4
    assert places(r) == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1)]
    assert "8000_001Eh" in r["source"]


def test_amd_without_apic_id_size_rounds_nc_up(topo):
    # ApicIdSize 0: NC = 5 (6 cores) -> 3 bits; no 8000_001Eh: one thread a core
    r = amd(topo, 5, False, 0, [0, 5, 8])
    assert r["package_shift"] == 3 and r["thread_bits"] == 0
    assert places(r) == [(0, 0, 0), (0, 5, 0), (1, 0, 0)]
    assert r["source"] == "CPUID 8000_0008h"


def test_no_ids(topo):
    r = extended(topo, [level(1, SMT), level(2, CORE)], [])
    assert r["cpus"] == 0 and r["packages"] == 0 and r["cores"] == 0

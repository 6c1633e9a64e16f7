"""Which counter the TSC is measured against (lib/counters.c): the ranked
references present, HPET, PM timer, PIT; never one set aside (a PM timer
the OS ignores on a hardware-reduced machine); kvmclock only when none of
them is present."""

import ctypes

import pytest

from helpers.hostlib import as_json

BIT = {name: 1 << i for i, name in enumerate(
    ["tsc", "hpet", "acpi_pm", "pit", "lapic", "kvmclock", "hv_ref_counter", "hv_ref_page"])}


def order(lib, present, set_aside=()):
    lib.shim_reference_order.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
    lib.shim_reference_order.restype = ctypes.c_char_p
    r = as_json(lib.shim_reference_order(sum(BIT[p] for p in present), sum(BIT[s] for s in set_aside)))
    return (r["order"].split(",") if r["order"] else []), r


@pytest.mark.parametrize("present, set_aside, expected", [
    (["tsc", "hpet", "acpi_pm", "pit", "lapic", "kvmclock"], [], ["hpet", "acpi_pm", "pit"]),
    (["tsc", "acpi_pm", "lapic", "kvmclock"], [], ["acpi_pm"]),                   # Cloud Hypervisor
    (["tsc", "pit", "lapic", "kvmclock"], [], ["pit"]),                           # Firecracker
    (["tsc", "lapic", "kvmclock"], [], ["kvmclock"]),                             # a microVM with nothing else
    (["tsc", "acpi_pm", "lapic", "kvmclock"], ["acpi_pm"], ["kvmclock"]),         # a set-aside PM timer never wins
    (["tsc", "acpi_pm", "lapic"], ["acpi_pm"], []),                               # a hardware-reduced tablet: no reference
    (["tsc", "lapic", "hv_ref_counter", "hv_ref_page"], [], []),
])
def test_reference_order(lib, present, set_aside, expected):
    got, r = order(lib, present, set_aside)
    assert got == expected, r


def test_roles(lib):
    _, r = order(lib, ["tsc", "acpi_pm", "kvmclock"], ["acpi_pm"])
    assert r["role_hpet"] == "ranked" and r["role_acpi_pm"] == "set aside" and r["role_kvmclock"] == "last resort"
    assert r["role_tsc"] == "no" and r["role_lapic"] == "no"

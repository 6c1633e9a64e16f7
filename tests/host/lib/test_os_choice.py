"""Which clocksource Linux would pick (lib/os_choice.c), from its ratings."""

from __future__ import annotations

from helpers.hostlib import as_json

TSC, INV, OK, KVM, KVMCLOCK, HV, HV_PAGE, HV_MSR, HV_INV, HPET, PM, ONE_CPU, INTEL = (1 << i for i in range(13))
GOOD_TSC = TSC | INV | OK


def choose(lib, flags):
    return as_json(lib.shim_os_choice(flags))


def test_kvm_with_an_invariant_tsc_uses_the_tsc(lib):
    c = choose(lib, GOOD_TSC | KVM | KVMCLOCK | HPET | PM)
    assert c["clock"] == "tsc" and c["rating"] == 300 and "kvm-clock's 299" in c["why"], c


def test_kvm_without_an_invariant_tsc_uses_kvm_clock(lib):
    c = choose(lib, TSC | OK | KVM | KVMCLOCK | HPET | PM)
    assert c["clock"] == "kvm-clock" and c["rating"] == 400, c
    assert "no invariant TSC" in c["why"], c


def test_hyperv_page_unless_tsc_invariant(lib):
    assert choose(lib, GOOD_TSC | HV | HV_PAGE | HV_MSR | HPET)["clock"] == "hyperv_clocksource_tsc_page"
    assert choose(lib, GOOD_TSC | HV | HV_PAGE | HV_MSR | HV_INV | HPET)["clock"] == "tsc"
    # Hyper-V detected: kvm-clock is not a candidate even when KVM's leaves are there too
    assert choose(lib, TSC | HV | HV_MSR | KVM | KVMCLOCK)["clock"] == "hyperv_clocksource_msr"


def test_bare_metal_falls_back_from_a_bad_tsc(lib):
    assert choose(lib, GOOD_TSC | HPET | PM)["clock"] == "tsc"
    assert choose(lib, TSC | INV | HPET | PM)["clock"] == "hpet"   # the TSC misbehaved here
    assert choose(lib, TSC | PM)["clock"] == "acpi_pm"
    c = choose(lib, TSC)
    assert c["clock"] is None and c["counter"] == -1 and "no clocksource" in c["why"]


def test_without_an_invariant_tsc_linux_keeps_it_on_one_cpu_or_on_intel(lib):
    # arch/x86/kernel/tsc.c unsynchronized_tsc(): only non-Intel machines
    # with several CPUs and no constant TSC are assumed unsynchronised.
    # Seen: Debian's 6.1 under QEMU TCG (-cpu max: AMD, no invariant TSC,
    # one CPU) runs on tsc (tests/fixtures/os-vm-tcg-q35.log).
    c = choose(lib, TSC | OK | ONE_CPU | HPET | PM)
    assert c["clock"] == "tsc" and "on one CPU Linux keeps it" in c["why"], c
    assert choose(lib, TSC | OK | INTEL | HPET | PM)["clock"] == "tsc"
    assert choose(lib, TSC | OK | HPET | PM)["clock"] == "hpet"          # AMD, several CPUs
    assert choose(lib, TSC | ONE_CPU | HPET | PM)["clock"] == "hpet"     # misbehaved here
    assert choose(lib, TSC | OK | ONE_CPU | KVM | KVMCLOCK)["clock"] == "kvm-clock"  # 400 over 300


"""`clockbench compare`: columns named by machine and run, machine and CPU
rows, ratios as "1.9x", one row per read target, and mean and standard
deviation over several runs of one machine (hand-made results with known
answers, and the real fixture logs)."""

from __future__ import annotations

import json
import statistics

import pytest

from helpers.logs import EPYC, KVM, TCG
from helpers.tool import run_cli
from clockbench.report import compare
from clockbench.records import records, results


def made(hpet_ns: float, rdtsc_ns: float, tsc_hz: float, brand: str = "Brand A", hv=None, fms=(6, 85, 4), **boot) -> dict:
    """Results as `report` writes them, with only what compare reads (boot:
    more of the machine record, such as its loader and firmware)."""
    res = results.from_log("\n".join("@cb " + json.dumps(r) for r in [
        {"type": "schema", "version": 1, "tool": "clockbench", "build": "t1"},
        {"type": "machine", "vendor": "GenuineIntel", "brand": brand, "family": fms[0], "model": fms[1], "stepping": fms[2],
         "hypervisor": hv, **boot},
        {"type": "profile", "name": "quick", "tsc_hz": tsc_hz, "tsc_hz_source": "measured against hpet"},
        {"type": "latency", "counter": "rdtsc", "p50_ns": rdtsc_ns},
        {"type": "latency", "counter": "hpet", "p50_ns": hpet_ns},
        {"type": "summary", "pass": 3, "fail": 0, "skip": 1, "status": "passed"}]))
    return res


def write(tmp_path, folder: str, res: dict):
    d = tmp_path / folder
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps(res))
    return d / "results.json"


def row(rows, label):
    found = [r for r in rows if r[0] == label]
    assert len(found) == 1, f"{label!r} is not one row: {[r[0] for r in rows]}"
    return found[0][1:]


def test_columns_are_named_by_run_not_file_stem(tmp_path, capsys):
    a = write(tmp_path, "2026-11-21-a/run", made(100, 20, 2e9))
    b = write(tmp_path, "2026-11-21-b/run", made(190, 20, 2e9, brand="B"))
    r = run_cli(capsys, "compare", a, b)
    assert r.code == 0, r.err
    head = r.out.split("\n")[0].split()
    assert head == ["2026-11-21-a/run", "2026-11-21-b/run"], head
    assert "results" not in r.out.split("\n")[0]


def test_run_names_tell_runs_apart():
    assert compare.run_names(["x/a/results.json", "x/b/results.json"]) == ["a", "b"]
    assert compare.run_names(["p/run/results.json", "q/run/results.json"]) == ["p/run", "q/run"]
    assert compare.run_names(["k.log", "k.log"]) == ["k #1", "k #2"]
    assert compare.run_names(["one/kvm.log", "tcg.log"]) == ["kvm", "tcg"]


def test_machine_and_cpu_rows():
    rows = compare.table([made(100, 20, 2e9), made(100, 20, 2e9, brand="Brand B", hv="KVMKVMKVM", fms=(25, 1, 1))], ["a", "b"])
    assert row(rows, "machine") == ["Brand A, bare metal", "Brand B, KVM"]
    assert row(rows, "CPU (family.model.stepping)") == ["GenuineIntel 6.85.4", "GenuineIntel 25.1.1"]


@pytest.mark.parametrize("v, base, said", [(190, 100, "1.9x"), (100, 100, "1.0x"), (1, 100, "0.01x"), (1.3, 100, "0.013x"),
                                           (2700, 100, "27x"), (99.9, 100, "1.0x"), (99, 100, "0.99x")])
def test_ratios_read_like_1_9x(v, base, said):
    assert compare.ratio(v, base) == said


def test_each_target_once_with_its_ratio():
    rows = compare.table([made(100, 20, 2e9), made(190, 5, 2e9, brand="B")], ["a", "b"])
    labels = [r[0] for r in rows]
    assert labels.count("rdtsc read p50") == 1 and "tsc read p50" not in labels
    assert row(rows, "hpet read p50") == ["100.0 ns 1.0x", "190.0 ns 1.9x"]
    assert row(rows, "rdtsc read p50") == ["20.0 ns 1.0x", "5.0 ns 0.25x"]


def test_several_runs_of_one_machine_give_mean_and_spread():
    a = [made(100, 20, 2e9), made(110, 22, 2e9 + 2000), made(120, 24, 2e9 + 4000)]
    b = [made(200, 40, 3e9, brand="B"), made(220, 40, 3e9, brand="B")]
    rows = compare.table(a + b, ["a1", "a2", "a3", "b1", "b2"])
    assert rows[0][-2:] == ["mean ± σ of 3 runs", "mean ± σ of 2 runs"]
    assert row(rows, "machine")[-2:] == ["Brand A, bare metal", "B, bare metal"]
    sd_b = statistics.stdev([200, 220])
    assert row(rows, "hpet read p50")[-2:] == ["110.0 ns ± 10.0 ns 1.0x", f"210.0 ns ± {sd_b:.1f} ns 1.9x"]
    assert row(rows, "rdtsc read p50")[-2:] == ["22.0 ns ± 2.0 ns 1.0x", "40.0 ns ± 0.0 ns 1.8x"]
    sd_ppm = statistics.stdev([2e9, 2e9 + 2000, 2e9 + 4000]) / (2e9 + 2000) * 1e6
    assert row(rows, "TSC frequency")[-2] == f"2000002000 Hz ± {sd_ppm:.2f} ppm"
    assert row(rows, "hpet read p50")[:3] == ["100.0 ns 1.0x", "110.0 ns 1.1x", "120.0 ns 1.2x"]


def test_a_bios_and_a_uefi_run_of_one_machine_are_two_columns_with_their_boot():
    bios = made(100, 20, 2e9, loader="GRUB 2.06", multiboot=2, boot_protocol="multiboot2")
    uefi = made(110, 20, 2e9, loader="clockbench EFI (GRUB 2.06)", multiboot=2, boot_protocol="multiboot2",
                firmware_vendor="EDK II", secure_boot="off")
    rows = compare.table([bios, uefi], ["bios", "uefi"])
    assert rows[0] == ["", "bios", "uefi"]  # no mean over runs booted two ways
    assert row(rows, "firmware") == ["not through UEFI", "UEFI, EDK II, Secure Boot off"]
    assert row(rows, "boot") == ["GRUB 2.06 (multiboot2)", "clockbench EFI (GRUB 2.06) (multiboot2)"]
    # the same two boots repeated are averaged each
    rows = compare.table([bios, uefi, bios, uefi], ["b1", "u1", "b2", "u2"])
    assert rows[0][-2:] == ["mean ± σ of 2 runs", "mean ± σ of 2 runs"]
    assert row(rows, "firmware")[-2:] == ["not through UEFI", "UEFI, EDK II, Secure Boot off"]


def test_two_vmms_on_one_host_are_two_columns_not_a_mean():
    """Firecracker and Cloud Hypervisor on one host: the same CPU and
    hypervisor, booted the same way, but not the same devices (a PIT, a PM
    timer): not repeats of one measurement."""
    def vmm(extra: str) -> dict:
        res = made(100, 20, 2e9, hv="KVMKVMKVM", loader="", boot_protocol="pvh")
        res["counters"] = [{"name": n, "present": True} for n in ("tsc", "kvmclock", extra)]
        return res

    rows = compare.table([vmm("pit"), vmm("acpi_pm")], ["firecracker", "cloud-hypervisor"])
    assert rows[0] == ["", "firecracker", "cloud-hypervisor"], rows[0]
    assert row(rows, "counters present") == ["kvmclock pit tsc", "acpi_pm kvmclock tsc"]
    rows = compare.table([vmm("pit"), vmm("acpi_pm"), vmm("pit")], ["f1", "c1", "f2"])
    assert rows[0][-1] == "mean ± σ of 2 runs" and row(rows, "counters present")[-1] == "kvmclock pit tsc"
    # one machine's runs all alike: no counters row
    assert not [r for r in compare.table([vmm("pit"), vmm("pit")], ["a", "b"]) if r[0] == "counters present"]


def test_no_spread_column_for_one_run_per_machine():
    rows = compare.table([made(100, 20, 2e9), made(100, 20, 2e9, brand="B")], ["a", "b"])
    assert len(rows[0]) == 3


def test_real_runs_side_by_side(tmp_path, capsys):
    r = run_cli(capsys, "compare", KVM, TCG, EPYC, "--html", tmp_path / "c.html")
    assert r.code == 0, r.err
    lines = r.out.split("\n")
    assert lines[0].split() == ["kvm-q35", "tcg-q35", "tcg-pc-epyc"]
    machine = next(l for l in lines if l.startswith("machine"))
    kvm_cpu = records.one(records.parse_log(KVM.read_text()).records, "machine")["brand"]  # the fixture's host
    assert f"{kvm_cpu}, KVM" in machine and "QEMU TCG CPU version 2.5+, QEMU TCG" in machine
    for target in ("rdtsc", "lfence;rdtsc", "hpet", "acpi_pm", "pit"):
        assert sum(l.startswith(f"{target} read p50 ") for l in lines) == 1
    # the row says where the rate came from once (not "TSC measured against: measured against hpet")
    assert any(l.startswith("TSC frequency from") and "measured against hpet" in l for l in lines), lines
    hpet = next(l for l in lines if l.startswith("hpet read p50"))
    p50 = [records.one(records.parse_log(f.read_text()).records, "latency", counter="hpet")["p50_ns"] for f in (KVM, TCG)]
    assert f"{p50[0]:.1f} ns 1.0x" in hpet and f"{p50[1]:.1f} ns {p50[1] / p50[0]:.2g}x" in hpet, (hpet, p50)
    page = (tmp_path / "c.html").read_text()
    # a row per line of the text, but for the lines a long cell wraps onto (their first column blank)
    assert page.count("<tr>") == 1 + len([l for l in lines[1:] if l.strip() and not l.startswith((" ", "clockbench compare:"))])
    assert max(len(l) for l in lines) < 160


def test_the_same_machine_twice_from_a_log_and_its_results(tmp_path, capsys):
    res = results.from_log(KVM.read_text(), str(KVM))
    other = write(tmp_path, "kept", res)
    r = run_cli(capsys, "compare", KVM, other)
    assert r.code == 0, r.err
    hpet = next(l for l in r.out.split("\n") if l.startswith("hpet read p50"))
    p50 = records.one(records.parse_log(KVM.read_text()).records, "latency", counter="hpet")["p50_ns"]
    assert hpet.split("  ")[-1].strip() == f"{p50:.1f} ns ± 0.0 ns"


def test_an_incomplete_run_is_compared_with_a_note(tmp_path, capsys):
    text = KVM.read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(text[: text.index('"type":"summary"') - 10])
    r = run_cli(capsys, "compare", TCG, cut)
    assert r.code == 0
    assert "an incomplete run" in r.err and "incomplete run" in next(l for l in r.out.split("\n") if l.startswith("checks"))

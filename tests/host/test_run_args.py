"""`clockbench run`'s choices before it starts QEMU, booting nothing: which
accelerator --accel auto takes (qemu.resolve_accel, the one place that
decides it, for `run` and `os-vm` alike; a fake /dev/kvm and a fake
/sys/module/kvm_pvm stand in for this machine's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_logs import run_cli
from clockbench import osvm, qemu, runs

ROOT = Path(__file__).resolve().parents[2]


# --- --accel auto ------------------------------------------------------------

@pytest.fixture
def real_kvm(tmp_path, monkeypatch):
    """A host whose KVM device opens and which has no kvm_pvm module."""
    dev = tmp_path / "kvm"
    dev.write_bytes(b"")
    monkeypatch.setattr(qemu, "KVM_DEVICE", str(dev))
    monkeypatch.setattr(qemu, "PVM_MODULE", str(tmp_path / "sys" / "module" / "kvm_pvm"))
    return tmp_path


@pytest.fixture
def pvm_kvm(real_kvm, monkeypatch):
    """The same host with the PVM module loaded, as on our machines."""
    (real_kvm / "sys" / "module" / "kvm_pvm").mkdir(parents=True)
    return real_kvm


def test_auto_keeps_a_real_kvm(real_kvm):
    assert qemu.resolve_accel("auto") == ("kvm", f"KVM, because {real_kvm / 'kvm'} is usable")


def test_auto_takes_tcg_on_a_pvm_kvm_and_says_why_in_one_line(pvm_kvm):
    accel, why = qemu.resolve_accel("auto")
    assert accel == "tcg"
    assert "\n" not in why and "PVM (module kvm_pvm)" in why and "emulates every instruction" in why
    assert "--accel kvm" in why


def test_the_host_can_be_given_instead_of_patched(tmp_path):
    dev = tmp_path / "kvm"
    dev.write_bytes(b"")
    assert qemu.resolve_accel("auto", device=str(dev), pvm_module=str(tmp_path / "none"))[0] == "kvm"
    assert qemu.resolve_accel("auto", device=str(dev), pvm_module=str(tmp_path))[0] == "tcg"
    assert qemu.resolve_accel("auto", device=str(tmp_path / "none"), pvm_module=str(tmp_path / "none"))[0] == "tcg"


def test_kvm_and_tcg_are_taken_as_asked(pvm_kvm):
    assert qemu.resolve_accel("kvm") == ("kvm", "KVM as asked")
    assert qemu.resolve_accel("tcg")[0] == "tcg"


def test_no_kvm_device_is_tcg_and_asking_for_kvm_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(qemu, "KVM_DEVICE", str(tmp_path / "kvm"))
    monkeypatch.setattr(qemu, "PVM_MODULE", str(tmp_path / "kvm_pvm"))
    accel, why = qemu.resolve_accel("auto")
    assert accel == "tcg" and "does not exist" in why
    with pytest.raises(RuntimeError, match="KVM was asked for but"):
        qemu.resolve_accel("kvm")


class FakeQemu:
    """Stands in for qemu.run: a run that passed, and what it was given."""

    def __init__(self):
        self.configs = []

    def __call__(self, cfg, timeout, echo=None, stop=None):
        self.configs.append(cfg)
        return qemu.RunResult(command=["qemu-system-x86_64"], accel=cfg.accel, qemu_exit=33, status=0, output="",
                              stderr="", seconds=0.1, timed_out=False, timeout_s=timeout)


@pytest.fixture
def fake_qemu(monkeypatch):
    fake = FakeQemu()
    monkeypatch.setattr(qemu, "run", fake)
    monkeypatch.setattr(runs, "qemu_version", lambda binary="": "QEMU emulator version 7.2.0 (a test's)")
    return fake


def _run(capsys, tmp_path, *argv):
    image = tmp_path / "clockbench.iso"
    image.write_bytes(b"iso")
    return run_cli(capsys, "run", "--iso", image, "--kernel", image, "--runs-dir", tmp_path / "runs", "--no-report", *argv)


@pytest.mark.parametrize("which", ["real", "pvm"])
def test_run_says_which_accelerator_and_why_where_make_run_shows_it(capsys, tmp_path, fake_qemu, request, which):
    host = request.getfixturevalue(f"{which}_kvm")
    r = _run(capsys, tmp_path)
    assert r.code == 0, r.err
    [line] = [l for l in r.out.split("\n") if l.startswith("clockbench: booting ")]
    [meta] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/metadata.json")]
    if which == "pvm":
        assert fake_qemu.configs[0].accel == "tcg" and meta["qemu"]["accel"] == "tcg"
        assert line.endswith("under " + qemu.resolve_accel("auto")[1])
        assert "GRUB can take tens of seconds" not in r.out
    else:
        assert fake_qemu.configs[0].accel == "kvm" and meta["qemu"]["accel"] == "kvm"
        assert line.endswith(f"under KVM, because {host / 'kvm'} is usable")
    assert meta["qemu"]["accel_why"] == qemu.resolve_accel("auto")[1]


def test_run_with_accel_kvm_still_forces_kvm_on_a_pvm_kvm(capsys, tmp_path, fake_qemu, pvm_kvm):
    r = _run(capsys, tmp_path, "--accel", "kvm")
    assert r.code == 0, r.err
    assert fake_qemu.configs[0].accel == "kvm" and "under KVM as asked" in r.out


def test_os_vm_decides_the_same_way(capsys, tmp_path, fake_qemu, pvm_kvm, monkeypatch):
    kernel, program = tmp_path / "bzImage", tmp_path / "init"
    kernel.write_bytes(b"\0" * 0x202 + b"HdrS")
    program.write_bytes(b"\x7fELF\x02" + b"\0" * 100)  # 64-bit, no program headers: static
    monkeypatch.setattr(osvm, "LINUX_DIR", tmp_path / "linux")
    r = run_cli(capsys, "os-vm", "--kernel", kernel, "--program", program, "--log", tmp_path / "os.log")
    assert r.code == 0, r.err
    assert fake_qemu.configs[0].accel == "tcg"
    assert f"Linux under {qemu.resolve_accel('auto')[1]};" in r.out
    r = run_cli(capsys, "os-vm", "--kernel", kernel, "--program", program, "--log", tmp_path / "os.log", "--accel", "kvm")
    assert r.code == 0 and fake_qemu.configs[1].accel == "kvm"

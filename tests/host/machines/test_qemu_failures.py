"""QEMU failing in ways the image cannot report: QEMU ending with an error
of its own before the image starts (status 71, not "no verdict"), and KVM
pausing the guest for good on an instruction it cannot emulate (the run
ends at once instead of waiting out its time bound). A real process on
real pipes stands in for QEMU, printing what QEMU prints."""

import sys
import time

from clockbench.machines import qemu

KVM_FAILURE = ("KVM internal error. Suberror: 1\\nextra data[0]: 0x0000000000000000\\n"
               "Code=d2 45 31 db <9b> db e3 d9 2d\\n")


def fake_qemu(monkeypatch, script: str) -> None:
    """QEMU's real command line, run by a script in QEMU's place."""
    real = qemu.build_command
    monkeypatch.setattr(qemu, "build_command", lambda cfg, accel: [sys.executable, "-c", script, *real(cfg, accel)[1:]])


def run_fake(monkeypatch, script: str, timeout: float = 60) -> qemu.RunResult:
    fake_qemu(monkeypatch, script)
    return qemu.run(qemu.QemuConfig(accel="tcg", boot="direct"), timeout=timeout)


def test_a_kvm_emulation_failure_ends_the_run_at_once(monkeypatch):
    script = f"import sys, time; sys.stderr.write('{KVM_FAILURE}'); sys.stderr.flush(); time.sleep(120)"
    t0 = time.monotonic()
    r = run_fake(monkeypatch, script)
    assert time.monotonic() - t0 < 20, "waited for the time bound instead of seeing the failure"
    assert r.emulation_failed == "KVM internal error. Suberror: 1"
    assert r.status is None and not r.timed_out and r.exit_code == qemu.EXIT_NO_VERDICT
    assert "KVM could not emulate an instruction" in r.describe() and "--accel tcg" in r.describe()
    assert not r.never_started


def test_qemu_ending_with_its_own_error_never_started(monkeypatch):
    script = ("import sys; sys.stderr.write(\"qemu-system-x86_64: cannot set up guest memory 'pc.ram': "
              "Cannot allocate memory\\n\"); sys.exit(1)")
    r = run_fake(monkeypatch, script)
    assert r.never_started and r.qemu_exit == 1 and r.status is None
    assert "Cannot allocate memory" in r.stderr


def test_an_image_that_printed_then_died_did_start(monkeypatch):
    r = run_fake(monkeypatch, "import sys; print('clockbench 1.0: time counters'); sys.exit(1)")
    assert not r.never_started and r.status is None and r.exit_code == qemu.EXIT_NO_VERDICT


def test_a_clean_image_exit_is_its_status(monkeypatch):
    # isa-debug-exit: (0x10 + 1) << 1 | 1 = 35, the image's "failed"
    r = run_fake(monkeypatch, "import sys; print('SUMMARY: 1 passed, 1 failed'); sys.exit(35)")
    assert r.status == 1 and not r.never_started and r.emulation_failed is None


def test_run_says_qemu_failed_with_status_71(monkeypatch, tmp_path, capsys):
    from clockbench.cli import main as cli

    kernel = tmp_path / "clockbench.elf"
    kernel.write_bytes(b"\x7fELF")
    fake_qemu(monkeypatch, "import sys; sys.stderr.write('qemu-system-x86_64: -m 900G: cannot set up guest memory\\n'); sys.exit(1)")
    code = cli.main(["run", "--boot", "direct", "--accel", "tcg", "--kernel", str(kernel), "--runs-dir", str(tmp_path / "runs"),
                     "--no-report"])
    err = capsys.readouterr().err
    assert code == 71, err
    assert "QEMU exited 1 before the image started" in err and "cannot set up guest memory" in err

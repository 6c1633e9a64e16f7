"""`clockbench run`'s choices before it starts QEMU, booting nothing: which
accelerator --accel auto takes (qemu.resolve_accel, the one place that
decides it, for `run` and `os-vm` alike; a fake /dev/kvm and a fake
/sys/module/kvm_pvm stand in for this machine's), and the options' values:
out of range, or disagreeing with each other, is a usage error (exit 64),
one line naming the option and what it allows, and no QEMU is started
(run_args.check_run_arguments). Hypothesis keeps it so over generated values."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.tool import run_cli
from clockbench import errors
from clockbench.runs import plan
from clockbench.cli import osvm, run_args
from clockbench.machines import qemu
from clockbench.runs import runs
from helpers.paths import ROOT


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
    assert "\n" not in why and "PVM (kvm_pvm)" in why and "emulates every instruction" in why
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


# --- the options' values -----------------------------------------------------

class QemuStarted(AssertionError):
    pass


@pytest.fixture
def no_qemu(monkeypatch):
    """Fails the test if anything tries to start QEMU (or ask its version),
    even where the tool would catch the exception."""
    started = []

    def start(*a, **k):
        started.append(a[:1])
        raise QemuStarted(f"QEMU was started: {a[:1]}")

    monkeypatch.setattr(qemu, "run", start)
    monkeypatch.setattr(qemu, "_run", start)
    monkeypatch.setattr(qemu.subprocess, "Popen", start)
    monkeypatch.setattr(runs, "qemu_version", start)
    yield started
    assert not started, f"QEMU was started: {started}"


def _refused(r, *words):
    assert r.code == errors.USAGE, (r.code, r.out, r.err)
    lines = [l for l in r.err.split("\n") if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("clockbench run: "), r.err
    assert "Traceback" not in r.err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


BAD = [
    (["--smp", "0"], ["--smp 0", "from 1 to 255"]),
    (["--smp", "-2"], ["--smp -2", "from 1 to 255"]),
    (["--smp", "256", "--machine", "pc"], ["--smp 256", "from 1 to 255", "machine pc"]),
    (["--duration", "-5"], ["--duration -5", "from 1 to 86400"]),
    (["--duration", "0"], ["--duration 0", "from 1 to 86400"]),
    (["--duration", "86401"], ["--duration 86401", "from 1 to 86400"]),
    (["--memory", "0"], ["--memory 0", "from 64M to 1T"]),
    (["--memory=-256M"], ["--memory -256M", "from 64M to 1T"]),
    (["--memory", "0G"], ["--memory 0G", "from 64M to 1T"]),
    (["--memory", "48M"], ["--memory 48M", "from 64M to 1T"]),
    (["--memory", "2T"], ["--memory 2T", "from 64M to 1T"]),
    (["--memory", "lots"], ["--memory lots", "from 64M to 1T"]),
    (["--timeout", "0"], ["--timeout 0", "above 0"]),
    (["--timeout", "-1"], ["--timeout -1:", "above 0"]),
    (["--timeout", "-0.5"], ["--timeout -0.5:", "above 0"]),
    (["--timeout", "nan"], ["--timeout nan", "above 0"]),
    (["--timeout", "inf"], ["--timeout inf", "above 0"]),
    (["--profile", "soak", "--duration", "30"], ["--duration 30 and --profile soak disagree", "must be 300 or left out"]),
    (["--profile", "quick", "--duration", "60"], ["--duration 60 and --profile quick disagree", "must be 2 or left out"]),
    (["--append", "duration=-5"], ["--append duration=-5", "from 1 to 86400"]),
    (["--append", "skip=cpus duration=99999"], ["--append duration=99999", "from 1 to 86400"]),
    (["--append", "profile=fast"], ["--append profile=fast", "quick, standard or soak"]),
    (["--append", "poweroff=yes"], ["--append poweroff=yes", "poweroff takes no value"]),
    (["--append", "profile=soak", "--profile", "quick"], ["--append profile=soak and --profile quick disagree"]),
    (["--append", "duration=10", "--duration", "20"], ["--append duration=10 and --duration 20 disagree"]),
    (["--append", "profile=standard", "--duration", "10"], ["--duration 10 and --append profile=standard disagree"]),
    (["--firmware", "qboot"], ["--firmware qboot", "--boot direct"]),
    (["--firmware", "uefi-secboot", "--boot", "direct"], ["--firmware uefi-secboot", "with --boot iso on the q35 machine"]),
    (["--firmware", "uefi", "--boot", "direct"], ["--firmware uefi", "Multiboot kernel under SeaBIOS or qboot, not OVMF"]),
    (["--firmware", "uefi-secboot", "--machine", "pc"], ["--firmware uefi-secboot", "with --boot iso on the q35 machine"]),
    (["--firmware", "uefi", "--secure-boot-vars", "vars.fd"], ["--secure-boot-vars vars.fd", "for --firmware uefi-secboot"]),
]


@pytest.mark.parametrize("argv,words", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_value_out_of_range_is_one_line_exit_64_and_no_qemu(capsys, tmp_path, no_qemu, argv, words):
    _refused(_run(capsys, tmp_path, *argv), *words)
    assert not no_qemu
    assert not (tmp_path / "runs").exists(), "nothing is kept for a command line that was refused"


def test_the_first_two_a_new_user_hit_as_a_separate_process(tmp_path):
    """As `make run RUN_ARGS=...` runs it: no QEMU on PATH, so one started would fail otherwise."""
    for argv, line in ((["--smp", "0"], "--smp 0: the number of CPUs must be from 1 to 255 (machine q35)"),
                       (["--duration", "-5"], "--duration -5: seconds of drift measurement must be from 1 to 86400 "
                                              "(the image's limit)")):
        r = subprocess.run(["/usr/bin/python3", "-m", "clockbench", "run", "--runs-dir", str(tmp_path / "runs"), *argv],
                           capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT / "tools"), "PATH": "/nonexistent"})
        assert (r.returncode, r.stdout, r.stderr) == (errors.USAGE, "", f"clockbench run: {line}\n")
        assert not list(tmp_path.iterdir())


def test_os_vm_checks_the_machine_options_the_same_way(capsys, tmp_path, no_qemu):
    for argv, words in ((["--smp", "0"], "--smp 0"), (["--memory=-1G"], "--memory -1G"), (["--timeout", "0"], "--timeout 0")):
        r = run_cli(capsys, "os-vm", "--kernel", tmp_path / "none", "--log", tmp_path / "x.log", *argv)
        assert r.code == errors.USAGE and r.err.count("\n") == 1 and r.err.startswith(f"clockbench os-vm: {words}: "), r.err


@pytest.mark.parametrize("argv,cmdline", [
    ([], "profile=quick"),
    (["--profile", "standard", "--duration", "60"], "profile=standard"),  # the profile's own window: the profile alone
    (["--duration", "60"], "duration=60"),
    (["--profile", "soak", "--append", "skip=cpus"], "skip=cpus profile=soak"),
    (["--append", "duration=0x3c", "--duration", "60"], "duration=0x3c duration=60"),
])
def test_agreeing_values_run_and_reach_the_image(capsys, tmp_path, fake_qemu, argv, cmdline):
    r = _run(capsys, tmp_path, "--accel", "tcg", *argv)
    assert r.code == 0, r.err
    assert fake_qemu.configs[0].append == cmdline


def test_the_time_bound_reads_duration_as_the_image_does():
    assert plan.parse_duration("0x3c") == 60 and plan.parse_duration("60") == 60
    assert plan.parse_duration("0") is None and plan.parse_duration("86401") is None
    assert plan.parse_duration("-5") is None and plan.parse_duration("0x") is None and plan.parse_duration("1e3") is None
    assert plan.default_timeout("duration=0x15180") == plan.default_timeout("duration=86400")


def test_memory_is_read_as_qemu_reads_it():
    assert run_args.memory_mib("256") == 256 and run_args.memory_mib("256M") == 256 and run_args.memory_mib("1.5g") == 1536
    assert run_args.memory_mib("8G") == 8192 and run_args.memory_mib("1T") == 1024 * 1024
    assert run_args.memory_mib("33554432B") == 32 and run_args.memory_mib("32768k") == 32
    assert run_args.memory_mib("-1") is None and run_args.memory_mib("") is None and run_args.memory_mib("1 G") is None


# --- generated values ----------------------------------------------------------

GENERATED = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SUFFIX = {"": 1, "M": 1, "G": 1024, "K": 1 / 1024}


@st.composite
def memories(draw, valid: bool) -> str:
    suffix = draw(st.sampled_from(sorted(SUFFIX)))
    top = run_args.MEMORY_MAX_MIB / SUFFIX[suffix]
    low = run_args.MEMORY_MIN_MIB / SUFFIX[suffix]
    if valid:
        return f"{draw(st.integers(math.ceil(low), int(top)))}{suffix}"
    n = draw(st.integers(-10**6, math.ceil(low) - 1) | st.integers(int(top) + 1, 10**12))
    return f"{n}{suffix}"


def valid_runs():
    """Values `run` must take: each option in range, the profile and the
    duration agreeing."""
    profile = st.sampled_from([None, *plan.PROFILES])
    return st.fixed_dictionaries({
        "--smp": st.integers(1, 255).map(str),
        "--memory": memories(valid=True),
        "--timeout": st.floats(0.001, 1e9).map(repr),
        "--machine": st.sampled_from(["q35", "pc"]),
        "--profile": profile,
        "--duration": st.none() | st.integers(1, 86400).map(str),
    }).map(lambda d: {**d, "--duration": (str(plan.PROFILE_SECONDS[d["--profile"]][0]) if d["--profile"] and d["--duration"]
                                          else d["--duration"])})


def invalid_runs():
    """One option out of its range, or a profile and a duration that
    disagree, among otherwise valid values: (the options, words the message
    must hold)."""
    def one(option, values, shown=str):
        return st.tuples(valid_runs(), values).map(lambda t: ({**t[0], option: t[1]}, f"{option} {shown(t[1])}: "))

    bad_durations = st.integers(-10**9, 0) | st.integers(86401, 10**12)
    return st.one_of(
        one("--smp", (st.integers(-10**6, 0) | st.integers(256, 10**6)).map(str)),
        one("--memory", memories(valid=False)),
        one("--timeout", (st.floats(max_value=0) | st.sampled_from([math.nan, math.inf])).map(repr), lambda v: f"{float(v):g}"),
        one("--duration", bad_durations.map(str)),
        st.tuples(valid_runs(), bad_durations).map(
            lambda t: ({**t[0], "--append": f"duration={t[1]}"}, f"--append duration={t[1]}: ")),
        st.tuples(valid_runs(), st.sampled_from(plan.PROFILES), st.integers(1, 86400)).filter(
            lambda t: plan.PROFILE_SECONDS[t[1]][0] != t[2]).map(
            lambda t: ({**t[0], "--profile": t[1], "--duration": str(t[2])},
                       f"--duration {t[2]} and --profile {t[1]} disagree")),
    )


def _argv(options: dict) -> list[str]:
    argv = []
    for k, v in options.items():
        if v is not None:
            argv += [f"{k}={v}"] if v.startswith("-") else [k, v]  # "-1e+300" would read as an option
    return argv


@GENERATED
@given(case=invalid_runs())
def test_generated_invalid_values_are_refused_before_qemu(capsys, tmp_path, no_qemu, case):
    options, words = case
    _refused(_run(capsys, tmp_path, *_argv(options)), words)
    assert not no_qemu, no_qemu


@GENERATED
@given(options=valid_runs(), boot=st.sampled_from(["iso", "direct"]), accel=st.sampled_from(["auto", "tcg"]))
def test_generated_valid_values_are_no_usage_error(capsys, tmp_path, fake_qemu, options, boot, accel):
    fake_qemu.configs.clear()
    r = _run(capsys, tmp_path, "--boot", boot, "--accel", accel, *_argv(options))
    assert r.code == 0, (options, r.err)
    [cfg] = fake_qemu.configs
    assert str(cfg.smp) == options["--smp"] and cfg.memory == options["--memory"]
    if boot == "iso":  # GRUB gets a command line (the SMBIOS string) and so boots at once, with no menu to wait for
        assert cfg.append.strip()


def test_a_secure_boot_store_that_is_missing_or_the_wrong_size_is_refused_before_qemu(capsys, tmp_path, no_qemu):
    r = _run(capsys, tmp_path, "--firmware", "uefi-secboot", "--secure-boot-vars", str(tmp_path / "none.fd"))
    assert r.code == errors.NoInput.code and "none.fd: no such file (--secure-boot-vars)" in r.err, (r.code, r.err)
    if Path(qemu.OVMF_VARS_MS).is_file():
        small = tmp_path / "small.fd"
        small.write_bytes(b"\0" * 4096)
        r = _run(capsys, tmp_path, "--firmware", "uefi-secboot", "--secure-boot-vars", str(small))
        assert r.code == errors.BadInput.code and "4096 bytes, not a store for OVMF's 4M Secure Boot build" in r.err, r.err
    assert not no_qemu and not (tmp_path / "runs").exists()


def test_an_iso_without_our_certificate_leaves_no_run_folder(capsys, tmp_path, fake_qemu):
    # the fake ISO has no EFI system partition: refused with its reason, and nothing kept
    r = _run(capsys, tmp_path, "--firmware", "uefi-secboot")
    if not Path(qemu.OVMF_SECBOOT_CODE).is_file():
        assert r.code == errors.MissingTool.code, r.err
    else:
        assert r.code in (errors.BadInput.code, errors.MissingTool.code), (r.code, r.err)
        assert "EFI system partition" in r.err or "not installed" in r.err, r.err
    assert not fake_qemu.configs
    assert not any((tmp_path / "runs").glob("*/")), "no run folder is left for a run that never started"

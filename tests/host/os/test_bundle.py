"""The bundle people download (issue 43): `make bundle`'s tarball, unpacked
in an empty folder and run as nobody with only PATH=/usr/bin:/bin,
measures every language with this host's runtimes and keeps its log in a
folder of its own, never overwriting; a runtime named with --python is the
one measured; a bad one is one line and 64, with nothing made."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from helpers.paths import BUILD, ROOT

LANGUAGES = {"cpp-libstdc++", "cpp-libc++", "rust", "go", "java", "python", "node", "dotnet"}
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
BARE_ENV = ["env", "-i", "PATH=/usr/bin:/bin"]


def records(text: str) -> list[dict]:
    return [json.loads(line[4:]) for line in text.splitlines() if line.startswith("@cb {")]


def bundle_tarball() -> Path:
    """This version's bundle, as `make test` makes it (`make bundle`) before the tests start: no
    test runs make itself, for two at once would rewrite build/bundle/ under each other."""
    version = (BUILD / "version.txt").read_text().strip()
    made = BUILD / "bundle" / f"clockbench-os-{version}-x86_64-linux.tar.gz"
    assert made.is_file(), f"{made} is missing: `make bundle` makes it (`make test` does, before the tests)"
    return made


@pytest.fixture(scope="module")
def tarball() -> Path:
    return bundle_tarball()


@pytest.fixture
def unpacked(tarball):
    """The tarball unpacked in an empty folder that nobody may write in
    (outside pytest's own folders, which only root may enter)."""
    where = Path(tempfile.mkdtemp(prefix="clockbench-bundle-", dir="/tmp"))
    os.chmod(where, 0o777)
    try:
        with tarfile.open(tarball) as t:
            top = {n.split("/")[0] for n in t.getnames()}
            assert len(top) == 1, top  # one folder
            t.extractall(where)
        folder = where / top.pop()
        assert (folder / "clockbench-os").is_file() and os.access(folder / "clockbench-os", os.X_OK)
        yield folder
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_the_tarball_is_one_folder_of_static_programs_and_every_probe(tarball, unpacked):
    assert unpacked.name == tarball.name.removesuffix(".tar.gz")
    bundle = (unpacked / "BUNDLE").read_text().splitlines()
    assert bundle[0].startswith("clockbench-os ") and bundle[0].endswith(" x86_64-linux"), bundle[0]
    listed = {line.split()[1] for line in bundle[1:]}
    for f in ("clockbench-os", "clockbench-os-libc", "README", "lang/probe-cpp-libstdcxx", "lang/probe-cpp-libcxx", "lang/probe-rust", "lang/probe-go",
              "lang/java/Probe.class", "lang/probe.py", "lang/probe.js", "lang/Probe.exe"):
        assert f in listed and (unpacked / f).is_file(), f
    for f in ("clockbench-os", "lang/probe-cpp-libstdcxx", "lang/probe-cpp-libcxx", "lang/probe-rust", "lang/probe-go"):
        head = subprocess.run(["readelf", "-lW", str(unpacked / f)], capture_output=True, text=True, timeout=30).stdout
        assert "Requesting program interpreter" not in head, f"{f} is not static"
    # the one dynamic program, on purpose: the host's own C library (tests/host/os/test_hostlibc.py)
    head = subprocess.run(["readelf", "-lW", str(unpacked / "clockbench-os-libc")], capture_output=True, text=True, timeout=30).stdout
    assert "Requesting program interpreter: /lib64/ld-linux-x86-64.so.2" in head


def test_as_nobody_with_a_bare_environment_every_language_is_measured_and_the_log_kept(unpacked):
    run_in = unpacked.parent
    before = set(run_in.iterdir())
    p = subprocess.run(NOBODY + BARE_ENV + [str(unpacked / "clockbench-os"), "--lang-calls", "1000"], cwd=run_in,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    recs = records(p.stdout)
    os_rec = next(r for r in recs if r["type"] == "os")
    assert os_rec["root"] is False and os_rec["switching"] is False
    said = [line for line in p.stdout.splitlines() if "the current clocksource only" in line and not line.startswith("@cb")]
    assert len(said) == 1 and "nothing on this host changed" in said[0] and "as root" in said[0], said
    assert os_rec["bundle"] and os_rec["hostname"] == os.uname().nodename
    measured = {r["language"] for r in recs if r["type"] == "lang_clock"}
    assert measured == LANGUAGES, LANGUAGES - measured
    assert ": not measured:" not in p.stdout
    # the libc and syscall rows are this host's own C library and kernel; libc-static is the bundle's copy
    assert any(r["type"] == "os_latency" and r.get("path") == "syscall" for r in recs)
    host_libc = [r for r in recs if r["type"] == "os_latency" and r.get("path") == "libc"]
    assert host_libc and {r["libc"]["version"] for r in host_libc} == {os.confstr("CS_GNU_LIBC_VERSION").split()[-1]}
    assert {r["libc"]["file"] for r in recs if r["type"] == "os_latency" and r.get("path") == "libc-static"} == {
        str(unpacked / "clockbench-os")}
    # the log: a new folder named by host and time, holding everything printed
    made = set(run_in.iterdir()) - before
    assert len(made) == 1, made
    folder = made.pop()
    assert folder.name.startswith(f"clockbench-os-{os.uname().nodename}-"), folder.name
    assert os_rec["log_dir"] == str(folder)
    log = (folder / "os.log").read_text()
    assert p.stdout.startswith(log) and p.stdout[len(log):].strip() == f"clockbench-os: this run's log is kept in {folder}/os.log"
    assert folder.stat().st_uid != 0  # nobody's


def test_out_never_overwrites_a_run(unpacked, tmp_path):
    out = tmp_path / "runs" / "one"
    argv = [str(unpacked / "clockbench-os"), "--no-lang", "--quick", "--current-only", "--out", str(out)]
    first = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout[-3000:]
    kept = (out / "os.log").read_bytes()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert again.returncode == 73, again.stdout[-2000:] + again.stderr
    assert again.stdout == "" and again.stderr.count("\n") == 1 and "never overwritten" in again.stderr, again.stderr
    assert (out / "os.log").read_bytes() == kept


def test_a_named_runtime_is_the_one_measured(unpacked, tmp_path):
    # PATH holds no python3 at all: only --python can have found it
    python = tmp_path / "my-python"
    python.symlink_to("/usr/bin/python3")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    p = subprocess.run(["env", "-i", f"PATH={empty}", str(unpacked / "clockbench-os"), "--current-only", "--lang", "python",
                        "--lang-calls", "500", "--python", str(python), "--out", str(tmp_path / "py")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    assert {r["language"] for r in records(p.stdout) if r["type"] == "lang_clock"} == {"python"}


def test_a_bad_runtime_or_out_is_one_line_and_64_with_nothing_made(unpacked, tmp_path):
    run_in = tmp_path / "here"
    run_in.mkdir()
    for bad in (["--python", str(tmp_path / "nope")], ["--java", "/etc/passwd"], ["--out"]):
        p = subprocess.run([str(unpacked / "clockbench-os")] + bad, cwd=run_in, capture_output=True, text=True, timeout=60)
        assert p.returncode == 64, (bad, p.stdout, p.stderr)
        assert p.stdout == "" and p.stderr.count("\n") == 1, (bad, p.stderr)
    assert list(run_in.iterdir()) == []


def test_stopped_from_outside_the_log_holds_what_was_done_and_says_so(unpacked, tmp_path):
    # `timeout` (or Ansible) signals the process it started: the parent that
    # keeps the log passes it on, and ends as the measuring side ended
    out = tmp_path / "stopped"
    p = subprocess.Popen([str(unpacked / "clockbench-os"), "--current-only", "--out", str(out)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "== Through the OS" not in ((out / "os.log").read_text() if (out / "os.log").exists() else ""):
        time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    text, _ = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGTERM, (p.returncode, text[-2000:])
    log = (out / "os.log").read_text()
    assert "clockbench-os: stopped (signal 15)" in log, log[-2000:]
    assert any(r["type"] == "os" for r in records(log))

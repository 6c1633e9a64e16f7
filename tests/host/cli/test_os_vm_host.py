"""`clockbench os-vm` on the host, booting nothing: the initramfs archive
byte for byte (newc cpio, as the kernel's buffer-format.rst specifies it),
the kernel cache (a cached kernel is used with no apt call; a fetch runs
apt-get and dpkg-deb as documented; their failures are one-line tool
errors), the kernel command line, and the checks on --kernel and --program."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT
from helpers.newc import parse_newc
from helpers.tool import run_cli, run_process
from clockbench import errors
from clockbench.machines import initramfs
from clockbench.cli import osvm


def test_archive_structure_modes_and_devices():
    program = b"\x7fELF" + bytes(range(256)) * 3 + b"xyz"  # a length that needs padding
    data = initramfs.archive(program)
    assert len(data) % 4 == 0
    entries = parse_newc(data)
    by = {e["name"]: e for e in entries}
    assert [e["name"] for e in entries] == ["dev", "dev/console", "proc", "sys", "init", "TRAILER!!!"]
    for d in ("dev", "proc", "sys"):
        assert by[d]["mode"] == stat.S_IFDIR | 0o755 and by[d]["filesize"] == 0 and by[d]["nlink"] == 2
    console = by["dev/console"]
    assert console["mode"] == stat.S_IFCHR | 0o600
    assert (console["rdevmajor"], console["rdevminor"]) == (5, 1)
    init = by["init"]
    assert init["mode"] == stat.S_IFREG | 0o755 and init["data"] == program and init["filesize"] == len(program)
    for e in entries:  # root-owned, no timestamps: the same program gives the same bytes
        assert e["uid"] == e["gid"] == e["mtime"] == e["check"] == 0
        assert e["namesize"] == len(e["name"]) + 1
    inos = [e["ino"] for e in entries[:-1]]
    assert len(set(inos)) == len(inos) and 0 not in inos
    trailer = by["TRAILER!!!"]
    assert trailer["mode"] == trailer["filesize"] == trailer["ino"] == 0


def test_first_header_byte_for_byte():
    assert initramfs.archive(b"")[:116] == (b"070701" + b"00000001" + b"000041ED" + b"00000000" * 2 + b"00000002"
                                            + b"00000000" * 6 + b"00000004" + b"00000000" + b"dev\0" + b"\0\0")  # 114 bytes, padded to 116


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5])
def test_every_data_length_is_padded(size):
    entries = parse_newc(initramfs.archive(b"A" * size))
    assert entries[4]["data"] == b"A" * size


def test_the_archive_is_rewritten_only_when_the_program_changes(tmp_path):
    prog, out = tmp_path / "prog", tmp_path / "linux" / "initramfs.cpio"
    prog.write_bytes(b"one")
    assert initramfs.write(prog, out) is True
    assert initramfs.write(prog, out) is False
    prog.write_bytes(b"two")
    assert initramfs.write(prog, out) is True
    assert parse_newc(out.read_bytes())[4]["data"] == b"two"
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # no temporary left behind


def test_gnu_cpio_reads_it(tmp_path):
    """A second opinion from GNU cpio (`make deps` installs it): the names,
    the console's device numbers and init's mode and contents."""
    lister = shutil.which("cpio")
    assert lister, "cpio is not installed: `make deps` installs it"
    path = tmp_path / "a.cpio"
    path.write_bytes(initramfs.archive(b"hello"))
    listing = subprocess.run([lister, "-itv", "-F", str(path)], capture_output=True, text=True, check=True).stdout
    lines = {line.split()[-1]: line for line in listing.splitlines()}
    assert set(lines) == {"dev", "proc", "sys", "dev/console", "init"}, listing
    assert lines["dev/console"].startswith("crw-------") and "5,   1" in lines["dev/console"], listing
    assert lines["init"].startswith("-rwxr-xr-x"), listing
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run([lister, "-id", "--no-absolute-filenames", "--quiet", "-F", str(path), "init"], cwd=out, check=True,
                   capture_output=True)
    assert (out / "init").read_bytes() == b"hello"


# --- the kernel cache ----------------------------------------------------------

class FakeApt:
    """Stands in for apt-cache, apt-get and dpkg-deb; records every call."""

    def __init__(self, linux_dir, download_ok=True):
        self.calls, self.linux_dir, self.download_ok = [], linux_dir, download_ok

    def run(self, cmd, cwd=None, **kw):
        self.calls.append(cmd)
        if cmd[:2] == ["apt-cache", "depends"]:
            return subprocess.CompletedProcess(cmd, 0, "linux-image-amd64\n  Depends: linux-image-6.1.0-99-amd64-unsigned\n"
                                               "  Depends: linux-image-6.1.0-99-amd64\n", "")
        if cmd[:2] == ["apt-get", "download"]:
            if not self.download_ok:
                return subprocess.CompletedProcess(cmd, 100, "", "W: Download is performed unsandboxed as root as file "
                                                   "... _apt ...\nE: Failed to fetch http://deb.debian.org/x  Could not "
                                                   "resolve 'deb.debian.org'\n")
            (cwd / f"{cmd[2]}_6.1.999-1_amd64.deb").write_bytes(b"deb")
            return subprocess.CompletedProcess(cmd, 0, "", "")
        if cmd[:2] == ["dpkg-deb", "-f"]:
            return subprocess.CompletedProcess(cmd, 0, "6.1.999-1\n", "")
        if cmd[0] == "tar":  # what `dpkg-deb --fsys-tarfile | tar -x` leaves
            boot = Path(cmd[cmd.index("-C") + 1]) / "boot"
            boot.mkdir()
            (boot / "vmlinuz-6.1.0-99-amd64").write_bytes(b"\0" * 0x202 + b"HdrS")
            return subprocess.CompletedProcess(cmd, 0, "", "")
        raise AssertionError(f"unexpected command {cmd}")


class FakePopen:
    def __init__(self, cmd, **kw):
        assert cmd[:2] == ["dpkg-deb", "--fsys-tarfile"]
        import io

        self.stdout, self.stderr, self.returncode = io.BytesIO(b""), io.BytesIO(b""), 0

    def wait(self):
        return 0


def test_a_cached_kernel_is_used_with_no_apt_call(tmp_path, monkeypatch):
    (tmp_path / "vmlinuz-6.1.0-42-amd64").write_bytes(b"k")
    (tmp_path / "package-6.1.0-42-amd64.txt").write_text("Debian linux-image-6.1.0-42-amd64 6.1.100-1\n")

    def no_subprocess(*a, **k):
        raise AssertionError(f"a cached kernel needs no command: {a}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    path, which = osvm.fetch_kernel(tmp_path)
    assert path == tmp_path / "vmlinuz-6.1.0-42-amd64"
    assert which == "Debian linux-image-6.1.0-42-amd64 6.1.100-1, cached"


def test_a_fetch_picks_the_plain_package_keeps_vmlinuz_and_drops_the_deb(tmp_path, monkeypatch, capsys):
    apt = FakeApt(tmp_path)
    monkeypatch.setattr(subprocess, "run", apt.run)
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    path, which = osvm.fetch_kernel(tmp_path)
    assert ["apt-get", "download", "linux-image-6.1.0-99-amd64"] in apt.calls
    assert path == tmp_path / "vmlinuz-6.1.0-99-amd64" and path.read_bytes().endswith(b"HdrS")
    assert which == "Debian linux-image-6.1.0-99-amd64 6.1.999-1, fetched now"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["package-6.1.0-99-amd64.txt", "vmlinuz-6.1.0-99-amd64"]
    assert "fetching Debian's kernel, package linux-image-6.1.0-99-amd64" in capsys.readouterr().out
    apt.calls.clear()
    assert osvm.fetch_kernel(tmp_path) == (path, "Debian linux-image-6.1.0-99-amd64 6.1.999-1, cached")
    assert apt.calls == []


def test_a_failed_download_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", FakeApt(tmp_path, download_ok=False).run)
    with pytest.raises(errors.NoInput) as e:
        osvm.fetch_kernel(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "Could not resolve" in msg and "--kernel PATH" in msg and "_apt" not in msg
    assert not list(tmp_path.glob("*.deb"))


def test_missing_apt_is_a_missing_tool(tmp_path, monkeypatch):
    def gone(cmd, **kw):
        raise FileNotFoundError(2, "No such file or directory", cmd[0])

    monkeypatch.setattr(subprocess, "run", gone)
    with pytest.raises(errors.MissingTool) as e:
        osvm.fetch_kernel(tmp_path)
    assert e.value.code == errors.MISSING_TOOL and "apt-cache not found" in str(e.value)


# --- the command line and the inputs ----------------------------------------

def test_the_kernel_command_line_hands_the_program_its_arguments():
    assert osvm.kernel_cmdline("") == "console=ttyS0,115200 quiet loglevel=3 panic=-1"
    assert osvm.kernel_cmdline("--profile quick 'a b'").endswith(' panic=-1 -- --profile quick "a b"')
    with pytest.raises(errors.UsageError):
        osvm.kernel_cmdline("'say \"hi\"'")


def test_a_missing_kernel_is_66_and_a_non_kernel_65(capsys, tmp_path):
    r = run_cli(capsys, "os-vm", "--kernel", tmp_path / "nope", "--log", tmp_path / "x.log")
    assert r.code == errors.NO_INPUT and "no such kernel file" in r.err and len(r.err.strip().split("\n")) == 1
    (tmp_path / "elf").write_bytes(b"\x7fELF" + b"\0" * 1000)
    r = run_cli(capsys, "os-vm", "--kernel", tmp_path / "elf", "--log", tmp_path / "x.log")
    assert r.code == errors.BAD_INPUT and "not a Linux bzImage" in r.err
    assert not (tmp_path / "x.log").exists()


def test_a_missing_or_dynamic_program_is_refused_before_any_fetch(capsys, tmp_path):
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"\0" * 0x202 + b"HdrS")
    r = run_cli(capsys, "os-vm", "--kernel", kernel, "--program", tmp_path / "none")
    assert r.code == errors.NO_INPUT and "`make os` builds it" in r.err
    r = run_cli(capsys, "os-vm", "--kernel", kernel, "--program", "/bin/sh")
    assert r.code == errors.BAD_INPUT and "dynamically linked" in r.err


def test_the_real_command_line_says_the_same(tmp_path):
    r = run_process("os-vm", "--kernel", tmp_path / "nope")
    assert r.code == errors.NO_INPUT and "Traceback" not in r.err
    assert r.err.strip() == f"clockbench os-vm: {tmp_path / 'nope'}: no such kernel file (give a Linux bzImage, or " \
                            "leave --kernel out to use Debian's)"


# ---- the languages in the initramfs (machines/runtimes.py) ----

from clockbench.machines import runtimes  # noqa: E402


def test_a_tree_goes_in_with_its_links_devices_and_parents_first(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "python3.11").write_bytes(b"\x7fELF-python")
    (tmp_path / "real" / "python3").symlink_to("python3.11")
    (tmp_path / "lnk").symlink_to("real")
    tree = runtimes.Tree()
    tree.add_host(tmp_path / "lnk" / "python3")  # two links on the way: each kept, the file at its real place
    tree.add_as("lang/probe-go", tmp_path / "real" / "python3.11")
    entries = parse_newc(initramfs.archive(b"\x7fELF-init", tree))
    by = {e["name"]: e for e in entries}
    base = str(tmp_path)[1:]
    assert stat.S_ISLNK(by[f"{base}/lnk"]["mode"]) and by[f"{base}/lnk"]["data"] == b"real"
    assert stat.S_ISLNK(by[f"{base}/real/python3"]["mode"]) and by[f"{base}/real/python3"]["data"] == b"python3.11"
    assert by[f"{base}/real/python3.11"]["data"] == b"\x7fELF-python"
    assert by["lang/probe-go"]["mode"] == stat.S_IFREG | 0o644 and stat.S_ISDIR(by["lang"]["mode"])
    # the devices a runtime opens: Linux's memory devices, major 1
    assert (by["dev/null"]["rdevmajor"], by["dev/null"]["rdevminor"]) == (1, 3)
    assert (by["dev/urandom"]["rdevmajor"], by["dev/urandom"]["rdevminor"]) == (1, 9)
    assert by["tmp"]["mode"] == stat.S_IFDIR | 0o1777
    names = [e["name"] for e in entries]
    for i, n in enumerate(names[:-1]):
        parent = n.rpartition("/")[0]
        assert not parent or parent in names[:i], f"{n} comes before its folder"
    assert len(set(names)) == len(names) and len({e["ino"] for e in entries[:-1]}) == len(entries) - 1


def test_without_languages_the_archive_is_as_before():
    assert [e["name"] for e in parse_newc(initramfs.archive(b"x"))] == ["dev", "dev/console", "proc", "sys", "init", "TRAILER!!!"]


def test_a_missing_probe_leaves_its_language_out_saying_why(tmp_path):
    (tmp_path / "lang").mkdir()
    (tmp_path / "lang" / "probe-go").write_bytes(b"#!static")
    got = runtimes.collect(["go", "rust"], tmp_path / "lang", tmp_path / "cache")
    assert got.measured == ["go"] and list(got.tree.files) == ["lang/probe-go"]
    assert got.left_out["rust"].startswith("no probe ") and "make lang" in got.left_out["rust"]


@pytest.mark.skipif(not (Path("/usr/bin/python3").exists() and shutil.which("strace")), reason="Debian's python3 and strace")
def test_python_goes_in_with_what_the_probe_imports_and_no_more(tmp_path):
    probe = ROOT / "os" / "lang" / "python" / "probe.py"
    (tmp_path / "lang").mkdir()
    shutil.copy(probe, tmp_path / "lang" / "probe.py")
    got = runtimes.collect(["python"], tmp_path / "lang", tmp_path / "cache")
    assert got.measured == ["python"], got.left_out
    files, links = got.tree.files, got.tree.links
    assert "usr/bin/python3" in links and any(f.startswith("usr/bin/python3.") for f in files)
    # the modules it imports (threading, platform), their sources beside their cached code, getpath's landmark
    stdlib = [f for f in files if "/python3." in f and f.endswith(".py")]
    assert any(f.endswith("/threading.py") for f in stdlib) and any(f.endswith("/os.py") for f in stdlib)
    lost = [f for f in files if f.endswith(".cpython-311.pyc")
            and f[:-len(".cpython-311.pyc")].replace("/__pycache__", "") + ".py" not in set(files) | set(links)]
    assert not lost, f"a cached module without its source is never read: {lost}"
    assert any(f.endswith("ld-linux-x86-64.so.2") for f in list(files) + list(links)), "the loader ldd names"
    assert not any("dist-packages" in f or "site-packages" in f or f.startswith(("etc/passwd", "proc/")) for f in files)
    assert not any("asyncio" in f or "unittest" in f for f in files), "the whole stdlib went in"
    # kept: a second collection reads the list back
    again = runtimes.collect(["python"], tmp_path / "lang", tmp_path / "cache")
    assert again.tree.to_json() == got.tree.to_json()


@pytest.mark.parametrize("args, says", [
    (["--no-lang", "--lang", "go"], "--no-lang and --lang"),
    (["--lang", "go,cobol"], "--lang: unknown language 'cobol'"),
])
def test_bad_language_options_are_64_with_one_line(capsys, tmp_path, args, says):
    r = run_cli(capsys, "os-vm", "--log", tmp_path / "x.log", *args)
    assert r.code == 64 and says in r.err and len(r.err.strip().split("\n")) == 1, r
    assert not (tmp_path / "x.log").exists()


def test_the_language_options_reach_the_program():
    parse = lambda *a: osvm.program_args(__import__("argparse").Namespace(**{"no_lang": False, "lang": None, "args": "", **dict(a)}))  # noqa: E731
    # the VM is ours: every clocksource it offers, unless --args says --current-only
    assert parse() == "--all-clocksources"
    assert parse(("no_lang", True), ("args", "--quick")) == "--no-lang --all-clocksources --quick"
    assert parse(("lang", "go,python")) == "--lang go,python --all-clocksources"
    assert parse(("args", "--quick --current-only")) == "--quick --current-only"
    assert parse(("args", "--all-clocksources --quick")) == "--all-clocksources --quick"

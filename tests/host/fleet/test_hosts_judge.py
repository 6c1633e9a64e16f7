"""`clockbench hosts` reading what came back, without Ansible: each way a
host's status file and log can end (fleet/hosts.py's judge), the runtimes a
clockbench-os log says it could not measure, Ansible's reason for an
inventory it cannot parse, and the bundle refused when it is none.
tests/fleet/test_hosts.py runs the whole command against real ssh hosts."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from helpers.paths import FIXTURES
from clockbench import errors
from clockbench.fleet import hosts
from clockbench.runs import store

OS_LOG = (FIXTURES / "os-lang-host.log").read_text()


def _host(tmp_path, status: dict | None, log: str | None = None):
    folder = tmp_path / "h"
    folder.mkdir()
    if status is not None:
        base = {"host": "h", "address": "127.0.0.9", "reached": True, "unreachable": None, "reach_failed": None,
                "failed_step": None, "failed_msg": None, "run_unreachable": None, "rc": 0, "stderr": "",
                "start": "2026-11-28 00:00:00.0", "end": "2026-11-28 00:00:05.0", "delta": "0:00:05.000000",
                "timeout_s": 900, "args": "--current-only", "wrapper": "", "bundle": "b.tar.gz"}
        (folder / "status.json").write_text(json.dumps({**base, **status}))
    if log is not None:
        (folder / "os.log").write_text(log)
    with store.open_store(tmp_path / "runs.db") as st:
        o = hosts.judge("h", {"ansible_host": "127.0.0.9"}, folder, st, 0, True, 1000)
        count = st.count()
    return o, count


def test_a_whole_log_is_stored_under_the_inventory_name(tmp_path):
    o, count = _host(tmp_path, {}, OS_LOG)
    assert o.measured and o.run_id == 1 and count == 1 and o.said.startswith("stored as run 1 (passed"), o
    with store.open_store(tmp_path / "runs.db") as st:
        [run] = st.runs()
    assert run["machine"] == "h" and run["source"] == "hosts" and run["host"] == "127.0.0.9" and run["exit"] == 0


@pytest.mark.parametrize("status, log, says, why_not", [
    (None, None, "no status: ansible-playbook ended (status 0) before this host's results", "no status"),
    ({"reached": False, "unreachable": "Data could not be sent to remote host \"127.0.0.9\". Make sure this host can be "
      "reached over ssh: ssh: connect to host 127.0.0.9 port 22: No route to host\r\n", "rc": None},
     None, "unreachable: ssh: connect to host 127.0.0.9 port 22: No route to host", "unreachable"),
    ({"reached": False, "reach_failed": "/usr/bin/python3: not found", "rc": None}, None,
     "reached, but Ansible could not make its folder there (it needs Python 3 on the host): /usr/bin/python3: not found",
     "no Ansible there"),
    ({"failed_step": "Unpack the bundle into it", "failed_msg": "No space left on device", "rc": None}, None,
     "failed at 'Unpack the bundle into it': No space left on device", "failed at 'Unpack the bundle into it'"),
    ({"rc": 124, "delta": "0:00:02.003000", "timeout_s": 2}, OS_LOG[:3000],
     "the run was stopped by its time bound (2 s) after 2 s; what it wrote:", "stopped by its time bound"),
    ({"rc": 137, "delta": "0:00:01.000000"}, "", "the run was killed by signal 9 (SIGKILL) after 1 s (not stored)", "killed"),
    ({"rc": 64, "stderr": "clockbench-os: unknown argument '--bogus'\nusage: ...\n  --quick ...", "args": "--bogus"}, "",
     "clockbench-os refused its arguments ('--bogus'): --quick ...", "arguments refused"),
    ({"rc": 127, "stderr": "timeout: failed to run command './clockbench-os': No such file or directory"}, "",
     "the run could not start (exit status 127): timeout: failed to run command", "could not start"),
    ({"rc": 73, "stderr": "clockbench-os: cannot keep the log"}, "", "the run ended with exit status 73 after 5 s: "
     "clockbench-os: cannot keep the log (not stored)", "exit status 73"),
    ({"rc": 0}, None, "the run ended (exit status 0) but no log came back", "no log"),
    ({"rc": 0}, "\x00\x01garbage\n" * 50, "its log is garbage, not clockbench-os's (exit status 0)", "log garbage"),
    ({"rc": 1}, (FIXTURES / "tcg-q35.log").read_text(), "its log is not clockbench-os's (no os record; exit status 1)",
     "log garbage"),
    ({"rc": 0}, OS_LOG[:OS_LOG.index('"type":"summary"')].rsplit("\n", 1)[0] + "\n",
     "its log ends before its summary (exit status 0)", "log cut short"),
])
def test_a_host_not_measured_says_how_and_stores_nothing(tmp_path, status, log, says, why_not):
    o, count = _host(tmp_path, status, log)
    assert not o.measured and count == 0, o
    assert says in o.said and o.why_not == why_not, o.said


def test_a_host_the_tool_stopped_waiting_for(tmp_path):
    folder = tmp_path / "h"
    with store.open_store(tmp_path / "runs.db") as st:
        o = hosts.judge("h", {}, folder, st, None, False, 1234)
    assert not o.measured and o.said.startswith("no answer within the tool's bound of 1234 s"), o


def test_the_runtimes_a_log_could_not_measure():
    assert hosts.runtimes_missing(OS_LOG) == []
    lines = OS_LOG.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("== Languages"))
    lines[at + 1:at + 1] = ["  Java: not measured: no JDK (apt install openjdk-17-jdk-headless)",
                            "  .NET: not measured: no dotnet or mono on PATH"]
    lines.append("    (Node.js is not measured)")
    assert hosts.runtimes_missing("\n".join(lines)) == [
        "Java not measured: no JDK (apt install openjdk-17-jdk-headless)", ".NET not measured: no dotnet or mono on PATH",
        "Node.js not measured: its probe failed"]
    # the same words outside the languages' heading are some other row's
    assert hosts.runtimes_missing("  TSC rate: not measured: no MONOTONIC_RAW\n") == []


def test_a_measured_host_with_a_runtime_missing_counts_as_measured(tmp_path):
    lines = OS_LOG.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("== Languages"))
    lines.insert(at + 1, "  Java: not measured: no JDK (apt install openjdk-17-jdk-headless)")
    o, count = _host(tmp_path, {}, "\n".join(lines) + "\n")
    assert o.measured and count == 1 and o.missing == ["Java not measured: no JDK (apt install openjdk-17-jdk-headless)"]


def test_ansibles_reason_for_an_inventory_it_cannot_parse():
    stderr = ("[WARNING]:  * Failed to parse /tmp/bad.ini with ini plugin: /tmp/bad.ini:1:\n"
              "Section [x] has unknown type: y\n[WARNING]: Unable to parse /tmp/bad.ini as an inventory source\n"
              "ERROR! Completely failed to parse inventory source /tmp/bad.ini\n")
    assert hosts._ansible_error(stderr) == "ini plugin: /tmp/bad.ini:1: Section [x] has unknown type: y"
    assert hosts._ansible_error("ERROR! Completely failed to parse inventory source x\n") == \
        "Completely failed to parse inventory source x"


def _tarball(path, members: dict[str, bytes]):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_bundle_is_one_folder_with_clockbench_os_at_its_top(tmp_path):
    good = _tarball(tmp_path / "good.tar.gz", {"cb-1/clockbench-os": b"\x7fELF", "cb-1/lang/probe.py": b""})
    assert hosts.find_bundle(str(good)) == good.resolve()
    for name, members in (("two.tar.gz", {"a/clockbench-os": b"", "b/x": b""}), ("none.tar.gz", {"a/other": b""})):
        with pytest.raises(errors.BadInput, match="not a bundle: it must unpack to one folder"):
            hosts.find_bundle(str(_tarball(tmp_path / name, members)))
    (tmp_path / "text.tar.gz").write_text("no tar")
    with pytest.raises(errors.BadInput, match="not a bundle: not a tarball"):
        hosts.find_bundle(str(tmp_path / "text.tar.gz"))
    with pytest.raises(errors.NoInput, match="no such bundle"):
        hosts.find_bundle(str(tmp_path / "missing.tar.gz"))


def test_the_lab_mode_is_warned_of_wherever_it_is_asked():
    """--all-clocksources, an inventory's clockbench_all_clocksources (as
    Ansible reads a boolean) or its clockbench_os_args; --os-args wins over
    the inventory's arguments, as -e does."""
    import argparse

    def asked(hostvars, all_clocksources=False, os_args=None):
        args = argparse.Namespace(all_clocksources=all_clocksources, os_args=os_args)
        return hosts.switching_asked(args, list(hostvars), hostvars)

    assert not asked({"a": {}, "b": {"clockbench_os_args": "--quick"}})
    assert asked({"a": {}}, all_clocksources=True)
    assert asked({"a": {}, "b": {"clockbench_all_clocksources": "yes"}})
    assert not asked({"a": {"clockbench_all_clocksources": "false"}})
    assert asked({"a": {"clockbench_os_args": "--quick --all-clocksources"}})
    assert not asked({"a": {"clockbench_os_args": "--all-clocksources"}}, os_args="--quick")
    assert asked({"a": {}}, os_args="--all-clocksources --no-lang")

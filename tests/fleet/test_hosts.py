"""`clockbench hosts` and ansible/clockbench-os.yml against real ssh hosts:
OpenSSH sshd servers on 127.0.0.2-5 (conftest.py's ssh_fleet, sshhosts.py; one fleet for the whole
module), the bundle copied, run and fetched back by ansible-playbook.

One fleet, one `clockbench hosts`: three healthy hosts, and beside them
each fault a host can have, every one under its own inventory name: one
where nothing listens (unreachable), a run its time bound stops mid-way
(`bounded`, on b's sshd), a host without Java (its sshd in a mount
namespace where the JDK's folder is an empty tmpfs: the host really lacks
it), a log that is garbage (`garbled`, on c's sshd, which runs the program
under a wrapper, clockbench_os_wrapper, that prints something else). The
healthy hosts are stored under their names, each fault named in its recap
line, exit 1, a run stored before still there, and `fleet` a row for each.
(Each fault had a run of its own beside a healthy host: four runs of the
fleet, 4 of the busy lane's minutes; one host's fault reaching no other is
checked as well by one run.) Then an inventory Ansible cannot parse (64)
and a --limit that matches no host (66), both one line with nothing run or
stored. The playbook alone (ansible-playbook -i ...) fetches a log and
a status per host and leaves no folder behind on the hosts.

clockbench-os runs with --quick and few languages (Go, Python, and Java
for the host that lacks it): a run takes 4-6 s here, a whole `clockbench
hosts` about 20 s. The hosts log in as root, and by default nothing on them
changes: this machine's clocksource (theirs) is watched through the whole
fleet's run and never moves. `--all-clocksources` reaches a host with a
warning, there switching a stand-in for sysfs (--sysfs), not this machine's
clock, and putting it back."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.paths import FIXTURES, ROOT
from helpers.tool import PYTHON, tool_env
from clockbench.runs import store
from sshhosts import OS_ARGS, RUN_S, ansible_env, fleet_rows, recap_line, run_hosts, stored

# one worker holds the module's sshd fleet; about 2 minutes, so started first (conftest.py, FIRST)
pytestmark = [pytest.mark.xdist_group("ssh_hosts"), pytest.mark.first]

def _store_with_an_earlier_run(path: Path) -> int:
    with store.open_store(path) as st:
        rid, _ = st.add_log((FIXTURES / "tcg-q35.log").read_text(), "earlier", "import")
    return rid


def _check_healthy(rows: dict, name: str, earlier: int) -> None:
    row = rows[name]
    assert row["source"] == "hosts" and row["tool"] == "clockbench-os" and row["status"] == "passed", dict(row.row)
    assert rows["earlier"]["id"] == earlier, "a run stored before was lost"


# Go and Python as everywhere (sshhosts.OS_ARGS), and Java, which nojava lacks
FLEET_ARGS = "--quick --lang go,python,java --lang-calls 500"
SYSFS = Path("/sys/devices/system/clocksource/clocksource0")


def _watch_clocksource(stop: threading.Event, seen: list[str]) -> None:
    """Every name current_clocksource holds until stop, in order (read every 5 ms)."""
    while not stop.is_set():
        now = (SYSFS / "current_clocksource").read_text().strip()
        if not seen or seen[-1] != now:
            seen.append(now)
        time.sleep(0.005)
HEALTHY = "abc"
# what a host's broken wrapper (or a program that is not clockbench-os) leaves: its output, and exit 0
GARBLE = "#!/bin/sh\nhead -c 4096 /dev/urandom | od -An -tx1\nexit 0\n"


@pytest.fixture(scope="module")
def whole_fleet(ssh_fleet, tmp_path_factory):
    """a, b and c, and a host for each fault: one `clockbench hosts`, read by the tests below."""
    tmp = tmp_path_factory.mktemp("whole-fleet")
    earlier = _store_with_an_earlier_run(tmp / "runs.db")
    remote = {n: tmp / f"remote-{n}" for n in HEALTHY}
    for d in remote.values():
        d.mkdir()
    wrapper = tmp / "garble"
    wrapper.write_text(GARBLE)
    wrapper.chmod(0o755)
    b, c = ssh_fleet.hosts["b"], ssh_fleet.hosts["c"]
    # 1 s: the run is still in its first measurements (a whole one takes 4-6 s here)
    ssh_fleet.add("bounded", b.address, b.port, clockbench_timeout_s=1)
    ssh_fleet.add("garbled", c.address, c.port, clockbench_os_wrapper=wrapper)
    inventory = ssh_fleet.inventory([*HEALTHY, "bounded", "nojava", "garbled", "gone"],
                                    **{n: {"clockbench_remote_tmp": d} for n, d in remote.items()})
    seen: list[str] = []
    stop = threading.Event()
    watch = threading.Thread(target=_watch_clocksource, args=(stop, seen), daemon=True)
    watch.start()
    try:
        r = run_hosts(ssh_fleet, tmp, inventory, os_args=FLEET_ARGS)
    finally:
        stop.set()
        watch.join(timeout=10)
    return r, tmp, earlier, remote, seen


def test_the_healthy_hosts_stored_and_the_unreachable_one_named(whole_fleet):
    r, tmp, earlier, remote, _ = whole_fleet
    assert r.returncode == 1, f"{r.stdout}\n{r.stderr}"
    rows = stored(tmp / "runs.db")
    assert set(rows) == {"earlier", *HEALTHY, "nojava"}, r.stdout
    for name in HEALTHY:
        _check_healthy(rows, name, earlier)
        assert f"stored as run {rows[name]['id']} (passed)" in recap_line(r.stdout, name), r.stdout
        assert "not measured" not in recap_line(r.stdout, name), r.stdout
        assert (tmp / "out" / name / "os.log").is_file()
        assert not any(remote[name].iterdir()), f"the playbook left {list(remote[name].iterdir())} on {name}"
    gone = recap_line(r.stdout, "gone")
    # ssh's "Connection refused"; with pipelining, Ansible's write to an ssh that has already ended may be said
    # first ("Broken pipe"): either way the host is named unreachable
    assert "unreachable: ssh: " in gone and ("Connection refused" in gone or "Broken pipe" in gone), r.stdout
    last = r.stdout.splitlines()[-1]
    assert last.startswith("clockbench hosts: 4 of 7 hosts measured and stored; not measured: bounded (stopped by its "
                           "time bound), garbled (log garbage), gone (unreachable); a runtime missing on nojava"), r.stdout
    assert r.stderr == "", r.stderr


def test_fleet_has_a_row_for_each_host(whole_fleet):
    r, tmp, earlier, remote, _ = whole_fleet
    rows = fleet_rows(tmp / "runs.db")
    assert {*HEALTHY, "nojava"} <= set(rows), rows.keys()
    for name in HEALTHY:
        row = rows[name]
        assert row["clocksource"] and row["clocksource"] in row["clocksources"], row
        # the languages FLEET_ARGS picks, each with its clock's cost and its system calls per call
        assert {"go", "python", "java"} <= set(row["languages"]), row["languages"]
        for lang in ("go", "python", "java"):
            cell = row["languages"][lang]
            assert cell["p50_ns"] > 0 and cell["syscalls_per_call"] is not None, cell
    assert "java" not in rows["nojava"]["languages"] and "go" in rows["nojava"]["languages"], rows["nojava"]


def test_as_root_by_default_no_hosts_clocksource_changes(whole_fleet):
    """The hosts are this machine, logged into as root (become's effect):
    the default measures the current clocksource and never switches it."""
    r, tmp, earlier, remote, seen = whole_fleet
    assert len(seen) == 1, f"the clocksource moved during the fleet's run: {seen}"
    assert "WARNING" not in r.stdout, r.stdout
    for name in HEALTHY:
        log = (tmp / "out" / name / "os.log").read_text()
        os_rec = next(json.loads(line[4:]) for line in log.splitlines() if line.startswith('@cb {"type":"os",'))
        assert os_rec["root"] is True and os_rec["switching"] is False and os_rec["clocksource"] == seen[0], os_rec
        assert '"type":"os_clocksource"' not in log and "nothing on this host changed" in log


def test_all_clocksources_reaches_a_host_with_a_warning_and_puts_it_back(ssh_fleet, tmp_path):
    """--all-clocksources through clockbench hosts and the playbook's
    clockbench_all_clocksources: clockbench-os switches every clocksource of
    a stand-in sysfs folder (the host is this machine: its real clock is
    left alone) and puts the original back; the command warned first."""
    fake = tmp_path / "clocksource0"
    fake.mkdir()
    (fake / "current_clocksource").write_text("tsc\n")
    (fake / "available_clocksource").write_text("tsc slowone other \n")
    inventory = ssh_fleet.inventory(["a"])
    r = run_hosts(ssh_fleet, tmp_path, inventory, "--all-clocksources",
                  os_args=f"--quick --no-lang --reads 200 --rate-ms 50 --sysfs {fake}")
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    warning = [line for line in r.stdout.splitlines() if line.startswith("clockbench hosts: WARNING: --all-clocksources")]
    assert len(warning) == 1 and "WHOLE machine's clocksource" in warning[0], r.stdout
    status = json.loads((tmp_path / "out" / "a" / "status.json").read_text())
    assert status["args"].startswith("--all-clocksources --quick"), status
    log = (tmp_path / "out" / "a" / "os.log").read_text()
    recs = [json.loads(line[4:]) for line in log.splitlines() if line.startswith("@cb ")]
    assert next(x for x in recs if x["type"] == "os")["switching"] is True
    assert [x["name"] for x in recs if x["type"] == "os_clocksource"] == ["slowone", "other"]
    assert next(x for x in recs if x["type"] == "os_restore")["restored"] is True
    assert (fake / "current_clocksource").read_text().strip() == "tsc"


def test_a_run_its_time_bound_stops_mid_way(whole_fleet):
    r, tmp, earlier, remote, _ = whole_fleet
    assert "the run was stopped by its time bound (1 s)" in recap_line(r.stdout, "bounded"), r.stdout
    assert "bounded" not in stored(tmp / "runs.db"), r.stdout


def test_a_host_without_java(whole_fleet):
    # a runtime missing is said, and the host still counts as measured (fleet.md; the
    # exit status's rule: tests/host/fleet/test_hosts_judge.py)
    r, tmp, earlier, remote, _ = whole_fleet
    rows = stored(tmp / "runs.db")
    said = recap_line(r.stdout, "nojava")
    assert f"stored as run {rows['nojava']['id']}" in said and "Java not measured: no JDK" in said, r.stdout
    for name in HEALTHY:
        assert "Java not measured" not in recap_line(r.stdout, name), r.stdout


def test_a_log_that_is_garbage(whole_fleet):
    r, tmp, earlier, remote, _ = whole_fleet
    said = recap_line(r.stdout, "garbled")
    assert "its log is garbage, not clockbench-os's (exit status 0)" in said and str(tmp / "out" / "garbled" / "os.log") in said
    assert "garbled" not in stored(tmp / "runs.db"), r.stdout


def test_an_inventory_that_does_not_parse(ssh_fleet, tmp_path):
    db = tmp_path / "runs.db"
    earlier = _store_with_an_earlier_run(db)
    bad = tmp_path / "bad.ini"
    bad.write_text("[clockbench_test_hosts\na ansible_host=127.0.0.2 = =\n")
    r = run_hosts(ssh_fleet, tmp_path, bad)
    assert r.returncode == 64 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert r.stderr.startswith(f"clockbench hosts: {bad}: not an inventory Ansible can parse (")
    assert set(stored(db)) == {"earlier"} and stored(db)["earlier"]["id"] == earlier
    assert not (tmp_path / "out").exists()


def test_a_limit_that_matches_no_host(ssh_fleet, tmp_path):
    db = tmp_path / "runs.db"
    _store_with_an_earlier_run(db)
    inventory = ssh_fleet.inventory(["a", "b"])
    r = run_hosts(ssh_fleet, tmp_path, inventory, "--limit", "web*")
    assert r.returncode == 66 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert r.stderr.strip() == f"clockbench hosts: --limit 'web*' matches no host of {inventory} (its hosts: a, b)"
    assert set(stored(db)) == {"earlier"} and not (tmp_path / "out").exists()


def test_no_such_inventory_no_ansible_and_bad_options(tmp_path):
    r = subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(tmp_path / "none.ini"), "--store",
                        str(tmp_path / "runs.db")], capture_output=True, text=True, timeout=60, env=tool_env())
    assert r.returncode == 66 and r.stderr.startswith(f"clockbench hosts: {tmp_path / 'none.ini'}: no such inventory"), r
    r = subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(tmp_path / "none.ini")], capture_output=True,
                       text=True, timeout=60, env=tool_env(PATH=str(tmp_path)))
    assert r.returncode == 69 and "ansible-playbook is not installed" in r.stderr, r
    for bad, says in ((["--os-args=--lang 'go"], "--os-args \"--lang 'go\": No closing quotation"),
                      (["--forks", "0"], "--forks 0: from 1 to 1000 hosts at once"),
                      (["--all-clocksources", "--os-args=--quick --current-only"],
                       "--all-clocksources and --os-args '--quick --current-only': --current-only contradicts it: give one of them")):
        r = subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(tmp_path / "none.ini"), *bad], capture_output=True,
                           text=True, timeout=60, env=tool_env())
        assert r.returncode == 64 and r.stderr == f"clockbench hosts: {says}\n", r
    assert not (tmp_path / "runs.db").exists()


def test_the_playbook_alone(ssh_fleet, tmp_path):
    """As someone who runs Ansible already: ansible-playbook -i INVENTORY ansible/clockbench-os.yml -e ..."""
    remote = tmp_path / "remote"
    remote.mkdir()
    inventory = ssh_fleet.inventory(["a", "gone"], a={"clockbench_remote_tmp": remote})
    out = tmp_path / "logs"
    r = subprocess.run(["ansible-playbook", "-i", str(inventory), str(ROOT / "ansible" / "clockbench-os.yml"),
                        "-e", f"bundle={ssh_fleet.bundle}", "-e", f"fetch_dir={out}",
                        "-e", json.dumps({"clockbench_os_args": OS_ARGS})],
                       capture_output=True, text=True, timeout=RUN_S, env={**tool_env(), **ansible_env(tmp_path)})
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    status = json.loads((out / "a" / "status.json").read_text())
    assert status["rc"] == 0 and status["reached"] and status["args"] == OS_ARGS, status
    assert "SUMMARY:" in (out / "a" / "os.log").read_text()
    gone = json.loads((out / "gone" / "status.json").read_text())
    assert not gone["reached"] and gone["unreachable"] and not (out / "gone" / "os.log").exists(), gone
    assert not any(remote.iterdir())
    # again, for gone alone: its folder is started afresh (never a mix of two runs), a's is left as it was
    (out / "gone" / "stale").write_text("from before")
    r = subprocess.run(["ansible-playbook", "-i", str(inventory), str(ROOT / "ansible" / "clockbench-os.yml"),
                        "-e", f"bundle={ssh_fleet.bundle}", "-e", f"fetch_dir={out}", "--limit", "gone"],
                       capture_output=True, text=True, timeout=RUN_S, env={**tool_env(), **ansible_env(tmp_path)})
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert not (out / "gone" / "stale").exists() and (out / "gone" / "status.json").exists()
    assert (out / "a" / "os.log").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

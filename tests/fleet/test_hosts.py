"""`clockbench hosts` and ansible/clockbench-os.yml against real ssh hosts:
OpenSSH sshd servers on 127.0.0.2-5 (sshhosts.py; one fleet for the whole
module), the bundle copied, run and fetched back by ansible-playbook.

Three hosts and one where nothing listens: three OS runs stored under their
inventory names, the unreachable one named, exit 1, and `fleet` a row for
each. Then each fault alone beside a healthy host: a run its time bound
stops mid-way, a host without Java (its sshd in a mount namespace where the
JDK's folder is an empty tmpfs: the host really lacks it), a log that is
garbage (the host runs the program under a wrapper, clockbench_os_wrapper,
that prints something else), an inventory Ansible cannot parse (64) and a
--limit that matches no host (66), both one line with nothing run or
stored. In each the healthy host is stored, and a run stored before is
still there. The playbook alone (ansible-playbook -i ...) fetches a log and
a status per host and leaves no folder behind on the hosts.

clockbench-os runs with --current-only --quick and few languages: a run
takes 4-6 s here, a whole `clockbench hosts` about 20 s."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import BUILD, FIXTURES, ROOT
from helpers.tool import PYTHON, tool_env
from clockbench.runs import store
from sshhosts import SshFleet, ansible_env, bundle, need_tools

# one worker holds the module's sshd fleet; about 2 minutes, so started first (conftest.py, FIRST)
pytestmark = [pytest.mark.xdist_group("ssh_hosts"), pytest.mark.first]

OS_ARGS = "--current-only --quick --lang go,python --lang-calls 500"
RUN_S = 300  # the bound on any one `clockbench hosts` here


def _jdk_folder() -> Path:
    """The JDK's own folder (/usr/lib/jvm/java-17-openjdk-amd64): hidden, java on PATH leads nowhere."""
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not installed (`make deps` installs openjdk-17-jdk-headless)")
    return Path(java).resolve().parents[1]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    need_tools()
    root = tmp_path_factory.mktemp("ssh-hosts")
    f = SshFleet(root)
    try:
        for name, address in (("a", "127.0.0.2"), ("b", "127.0.0.3"), ("c", "127.0.0.4")):
            f.start(name, address)
        f.start("nojava", "127.0.0.5", hide=[_jdk_folder()])
        f.unreachable("gone", "127.0.0.6")
        f.bundle = bundle(root, ROOT, BUILD)
        yield f
    finally:
        f.close()


def _store_with_an_earlier_run(path: Path) -> int:
    with store.open_store(path) as st:
        rid, _ = st.add_log((FIXTURES / "tcg-q35.log").read_text(), "earlier", "import")
    return rid


def _stored(path: Path) -> dict[str, store.Run]:
    with store.open_store(path, create=False) as st:
        return {r["machine"]: r for r in st.runs()}


def _hosts(fleet, tmp_path: Path, inventory: Path, *extra: str, os_args: str = OS_ARGS) -> subprocess.CompletedProcess:
    env = tool_env(**ansible_env(tmp_path))
    return subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(inventory), "--bundle", str(fleet.bundle),
                           f"--os-args={os_args}", "--store", str(tmp_path / "runs.db"), "--out", str(tmp_path / "out"),
                           "--forks", "4", *extra], capture_output=True, text=True, timeout=RUN_S, env=env)


def _line(out: str, host: str) -> str:
    """The host's recap line, with the lines under it (a runtime missing:
    they start with blanks where the hosts' names stand)."""
    lines = out.splitlines()
    i = next((i for i, line in enumerate(lines) if line.startswith(f"  {host} (")), None)
    assert i is not None, f"no recap line for {host}:\n{out}"
    said = [lines[i]]
    for line in lines[i + 1:]:
        if not line.startswith("   "):
            break
        said.append(line)
    return "\n".join(said)


def _check_healthy(rows: dict, name: str, earlier: int) -> None:
    row = rows[name]
    assert row["source"] == "hosts" and row["tool"] == "clockbench-os" and row["status"] == "passed", dict(row.row)
    assert rows["earlier"]["id"] == earlier, "a run stored before was lost"


def _fleet_rows(db: Path) -> dict:
    """`fleet --json -`'s machines, wherever its JSON lists them."""
    r = subprocess.run([PYTHON, "-m", "clockbench", "fleet", "--json", "-", "--store", str(db)], capture_output=True,
                       text=True, timeout=120, env=tool_env())
    if r.returncode == 66 and "no run of a bare machine" in r.stderr:
        pytest.xfail("fleet leaves clockbench-os runs out until the store's OS rows land (issue 43, section 2)")
    assert r.returncode == 0, r.stderr
    found: dict = {}

    def walk(v) -> None:
        if isinstance(v, dict):
            if isinstance(v.get("machine"), str):
                found[v["machine"]] = v
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    table = json.loads(r.stdout)
    walk(table)
    if not any(h in found for h in "abc") and any("clockbench-os" in str(x) for x in table.get("left_out", [])):
        pytest.xfail("fleet leaves clockbench-os runs out until the store's OS rows land (issue 43, section 2): "
                     f"{table['left_out']}")
    return found


@pytest.fixture(scope="module")
def three_and_one(fleet, tmp_path_factory):
    """a, b and c, and gone where nothing listens: one `clockbench hosts`, read by the tests below."""
    tmp = tmp_path_factory.mktemp("three-and-one")
    earlier = _store_with_an_earlier_run(tmp / "runs.db")
    remote = {n: tmp / f"remote-{n}" for n in "abc"}
    for d in remote.values():
        d.mkdir()
    inventory = fleet.inventory(["a", "b", "c", "gone"], **{n: {"clockbench_remote_tmp": d} for n, d in remote.items()})
    r = _hosts(fleet, tmp, inventory)
    return r, tmp, earlier, remote


def test_three_hosts_stored_and_the_unreachable_one_named(three_and_one):
    r, tmp, earlier, remote = three_and_one
    assert r.returncode == 1, f"{r.stdout}\n{r.stderr}"
    rows = _stored(tmp / "runs.db")
    assert set(rows) == {"earlier", "a", "b", "c"}, r.stdout
    for name in "abc":
        _check_healthy(rows, name, earlier)
        assert f"stored as run {rows[name]['id']} (passed)" in _line(r.stdout, name), r.stdout
        assert (tmp / "out" / name / "os.log").is_file()
        assert not any(remote[name].iterdir()), f"the playbook left {list(remote[name].iterdir())} on {name}"
    gone = _line(r.stdout, "gone")
    assert "unreachable: " in gone and "Connection refused" in gone, r.stdout
    assert r.stdout.splitlines()[-1].startswith("clockbench hosts: 3 of 4 hosts measured and stored; not measured: gone "
                                                "(unreachable)"), r.stdout
    assert r.stderr == "", r.stderr


def test_fleet_has_a_row_for_each_host(three_and_one):
    r, tmp, earlier, remote = three_and_one
    rows = _fleet_rows(tmp / "runs.db")
    assert {"a", "b", "c"} <= set(rows), rows.keys()


def test_a_run_its_time_bound_stops_mid_way(fleet, tmp_path):
    earlier = _store_with_an_earlier_run(tmp_path / "runs.db")
    # 1 s: the run is still in its first measurements (a whole one takes 4-6 s here)
    inventory = fleet.inventory(["a", "b"], b={"clockbench_timeout_s": 1})
    r = _hosts(fleet, tmp_path, inventory)
    assert r.returncode == 1, f"{r.stdout}\n{r.stderr}"
    rows = _stored(tmp_path / "runs.db")
    assert set(rows) == {"earlier", "a"}, r.stdout
    _check_healthy(rows, "a", earlier)
    assert "the run was stopped by its time bound (1 s)" in _line(r.stdout, "b"), r.stdout
    assert "not measured: b (stopped by its time bound)" in r.stdout.splitlines()[-1]


def test_a_host_without_java(fleet, tmp_path):
    earlier = _store_with_an_earlier_run(tmp_path / "runs.db")
    inventory = fleet.inventory(["a", "nojava"])
    r = _hosts(fleet, tmp_path, inventory, os_args="--current-only --quick --lang go,java --lang-calls 500")
    # a runtime missing is said, and the host still counts as measured (fleet.md)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    rows = _stored(tmp_path / "runs.db")
    assert set(rows) == {"earlier", "a", "nojava"}, r.stdout
    _check_healthy(rows, "a", earlier)
    said = _line(r.stdout, "nojava")
    assert f"stored as run {rows['nojava']['id']}" in said and "Java not measured: no JDK" in said, r.stdout
    assert "Java not measured" not in _line(r.stdout, "a"), r.stdout
    assert "a runtime missing on nojava" in r.stdout.splitlines()[-1]


def test_a_log_that_is_garbage(fleet, tmp_path):
    earlier = _store_with_an_earlier_run(tmp_path / "runs.db")
    wrapper = tmp_path / "garble"
    # what a host's broken wrapper (or a program that is not clockbench-os) leaves: its output, and exit 0
    wrapper.write_text("#!/bin/sh\nhead -c 4096 /dev/urandom | od -An -tx1\nexit 0\n")
    wrapper.chmod(0o755)
    inventory = fleet.inventory(["a", "c"], c={"clockbench_os_wrapper": wrapper})
    r = _hosts(fleet, tmp_path, inventory)
    assert r.returncode == 1, f"{r.stdout}\n{r.stderr}"
    rows = _stored(tmp_path / "runs.db")
    assert set(rows) == {"earlier", "a"}, r.stdout
    _check_healthy(rows, "a", earlier)
    said = _line(r.stdout, "c")
    assert "its log is garbage, not clockbench-os's (exit status 0)" in said and str(tmp_path / "out" / "c" / "os.log") in said
    assert "not measured: c (log garbage)" in r.stdout.splitlines()[-1]


def test_an_inventory_that_does_not_parse(fleet, tmp_path):
    db = tmp_path / "runs.db"
    earlier = _store_with_an_earlier_run(db)
    bad = tmp_path / "bad.ini"
    bad.write_text("[clockbench_test_hosts\na ansible_host=127.0.0.2 = =\n")
    r = _hosts(fleet, tmp_path, bad)
    assert r.returncode == 64 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert r.stderr.startswith(f"clockbench hosts: {bad}: not an inventory Ansible can parse (")
    assert set(_stored(db)) == {"earlier"} and _stored(db)["earlier"]["id"] == earlier
    assert not (tmp_path / "out").exists()


def test_a_limit_that_matches_no_host(fleet, tmp_path):
    db = tmp_path / "runs.db"
    _store_with_an_earlier_run(db)
    inventory = fleet.inventory(["a", "b"])
    r = _hosts(fleet, tmp_path, inventory, "--limit", "web*")
    assert r.returncode == 66 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert r.stderr.strip() == f"clockbench hosts: --limit 'web*' matches no host of {inventory} (its hosts: a, b)"
    assert set(_stored(db)) == {"earlier"} and not (tmp_path / "out").exists()


def test_no_such_inventory_no_ansible_and_bad_options(tmp_path):
    r = subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(tmp_path / "none.ini"), "--store",
                        str(tmp_path / "runs.db")], capture_output=True, text=True, timeout=60, env=tool_env())
    assert r.returncode == 66 and r.stderr.startswith(f"clockbench hosts: {tmp_path / 'none.ini'}: no such inventory"), r
    r = subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(tmp_path / "none.ini")], capture_output=True,
                       text=True, timeout=60, env=tool_env(PATH=str(tmp_path)))
    assert r.returncode == 69 and "ansible-playbook is not installed" in r.stderr, r
    for bad, says in ((["--os-args=--lang 'go"], "--os-args \"--lang 'go\": No closing quotation"),
                      (["--forks", "0"], "--forks 0: from 1 to 1000 hosts at once")):
        r = subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(tmp_path / "none.ini"), *bad], capture_output=True,
                           text=True, timeout=60, env=tool_env())
        assert r.returncode == 64 and r.stderr == f"clockbench hosts: {says}\n", r
    assert not (tmp_path / "runs.db").exists()


def test_the_playbook_alone(fleet, tmp_path):
    """As someone who runs Ansible already: ansible-playbook -i INVENTORY ansible/clockbench-os.yml -e ..."""
    remote = tmp_path / "remote"
    remote.mkdir()
    inventory = fleet.inventory(["a", "gone"], a={"clockbench_remote_tmp": remote})
    out = tmp_path / "logs"
    r = subprocess.run(["ansible-playbook", "-i", str(inventory), str(ROOT / "ansible" / "clockbench-os.yml"),
                        "-e", f"bundle={fleet.bundle}", "-e", f"fetch_dir={out}",
                        "-e", json.dumps({"clockbench_os_args": OS_ARGS})],
                       capture_output=True, text=True, timeout=RUN_S, env={**tool_env(), **ansible_env(tmp_path)})
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    status = json.loads((out / "a" / "status.json").read_text())
    assert status["rc"] == 0 and status["reached"] and status["args"] == OS_ARGS, status
    assert "SUMMARY:" in (out / "a" / "os.log").read_text()
    gone = json.loads((out / "gone" / "status.json").read_text())
    assert not gone["reached"] and "Connection refused" in gone["unreachable"] and not (out / "gone" / "os.log").exists()
    assert not any(remote.iterdir())
    # again, for gone alone: its folder is started afresh (never a mix of two runs), a's is left as it was
    (out / "gone" / "stale").write_text("from before")
    r = subprocess.run(["ansible-playbook", "-i", str(inventory), str(ROOT / "ansible" / "clockbench-os.yml"),
                        "-e", f"bundle={fleet.bundle}", "-e", f"fetch_dir={out}", "--limit", "gone"],
                       capture_output=True, text=True, timeout=RUN_S, env={**tool_env(), **ansible_env(tmp_path)})
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert not (out / "gone" / "stale").exists() and (out / "gone" / "status.json").exists()
    assert (out / "a" / "os.log").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

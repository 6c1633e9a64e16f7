"""`clockbench hosts`: clockbench-os on a fleet of Linux hosts through Ansible
(docs/fleet.md, "Linux hosts through Ansible").

The adapter's one shape (as lab.py's for labgrid): plan (the inventory's
hosts, checked with ansible-inventory before anything runs; the bundle),
hand to the engine (ansible-playbook running ansible/clockbench-os.yml, its
output kept in OUT/ansible.log, every wait bounded), fetch what came back
(the playbook writes OUT/<host>/status.json on the controller for every
host it knew, and OUT/<host>/os.log when the run left a log), read it
(the log's records, the runtimes it could not measure) and store it under
the host's inventory name. A recap line per host says what happened:
stored as run N, unreachable, the run failed and how, a runtime missing.

Nothing on a host changes unless asked: clockbench-os measures the
clocksource in use, as root (become) too. --all-clocksources (the playbook's
clockbench_all_clocksources) is the lab mode, which switches each root
host's whole clocksource for the run and puts it back; it is warned of
before anything runs, also when the inventory or --os-args asks for it.

A host is measured when its run ended on its own (exit 0, or 1: a check
failed, which is a finding about the host) and left a whole clockbench-os
log, which is stored. A runtime the host lacks (Java, say) is said on the
host's line, and the host still counts as measured: the languages it has
were measured, and the one it lacks runs no code there. Nothing else is
stored: an unreachable host, a run stopped by its time bound, killed, or
refused, a log that is not clockbench-os's; what came back stays in OUT
(`clockbench import OUT/<host>/os.log --machine <host>` takes a partial
log by hand)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from clockbench import errors, paths
from clockbench.records import records, results
from clockbench.runs import store

PLAYBOOK = paths.ROOT / "ansible" / "clockbench-os.yml"
BUNDLE_DIR = paths.BUILD / "bundle"
BUNDLE_GLOB = "clockbench-os-*-x86_64-linux.tar.gz"
OUT_DIR = paths.BUILD / "hosts"
DEFAULT_TIMEOUT_S = 900  # the playbook's clockbench_timeout_s
KILL_AFTER_S = 10  # the playbook's `timeout -k`
# Beyond a host's run: its other four steps on the host (the temporary folder,
# the bundle unpacked, the log fetched, the folder removed), each bounded by
# the playbook's clockbench_step_timeout_s, and the controller's own.
STEP_TIMEOUT_S = 300
STEPS_S = 4 * STEP_TIMEOUT_S + 60
INVENTORY_WAIT_S = 60
# ansible-playbook's settings for this run only (the user's ansible.cfg is read as ever):
# an inventory Ansible cannot parse is an error, not a warning over an empty
# inventory (a folder of sources where some parse is taken, as Ansible takes it)
ANSIBLE_ENV = {"ANSIBLE_INVENTORY_UNPARSED_FAILED": "True", "ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_NOCOLOR": "True",
               "ANSIBLE_FORCE_COLOR": "False", "ANSIBLE_LOCALHOST_WARNING": "False"}
SIGNALS = {9: "SIGKILL", 15: "SIGTERM", 6: "SIGABRT", 11: "SIGSEGV", 7: "SIGBUS", 4: "SIGILL", 2: "SIGINT", 1: "SIGHUP"}

# exit statuses (docs/fleet.md, "Linux hosts through Ansible")
ALL_MEASURED = 0
SOME_NOT_MEASURED = 1


@dataclass
class Outcome:
    """One host's line in the recap."""
    host: str
    address: str
    measured: bool
    said: str
    run_id: int | None = None
    missing: list[str] = field(default_factory=list)
    why_not: str = ""  # a few words for the last line: "unreachable", "stopped by its time bound"


def add_parser(sub, add_store_argument) -> None:
    p = sub.add_parser("hosts", help="clockbench-os on every host of an Ansible inventory: each log fetched and stored, "
                       "a recap line per host", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-i", "--inventory", required=True, metavar="INVENTORY",
                   help="an Ansible inventory (a file or folder Ansible reads, or 'host1,host2,')")
    p.add_argument("--limit", metavar="PATTERN", help="only the hosts this Ansible pattern matches (as ansible-playbook's --limit)")
    p.add_argument("--os-args", default=None, metavar="ARGS",
                   help="clockbench-os's arguments on every host, one string: --os-args=\"--lang go,python --quick\" "
                   "(default: the inventory's clockbench_os_args, else none: the current clocksource only, every language)")
    p.add_argument("--all-clocksources", action="store_true",
                   help="the lab mode: with become (root), each host's clocksource is switched to every available one in "
                   "turn for the run, every process there paying for it (10-50x a clock read on hpet or acpi_pm), then "
                   "put back; not for hosts in service (default: the current clocksource only, nothing changed)")
    p.add_argument("--bundle", metavar="PATH", help=f"the bundle to copy (default: the newest {BUNDLE_GLOB} in "
                   f"{paths.default(BUNDLE_DIR)}: make bundle)")
    p.add_argument("--forks", type=int, default=10, metavar="N", help="hosts measured at once (ansible-playbook --forks; default: %(default)s)")
    p.add_argument("--timeout", type=float, metavar="S", help="each host's time bound for its run, in seconds (default: the "
                   f"inventory's clockbench_timeout_s, else {DEFAULT_TIMEOUT_S}); the run is stopped past it and not stored")
    p.add_argument("--out", metavar="DIR", help="the folder for each host's log and status, DIR/<host>/, and ansible-playbook's "
                   f"output, DIR/ansible.log (default: {paths.default(OUT_DIR)}/<UTC time>/)")
    add_store_argument(p)
    p.set_defaults(func=main, check=check)


def check(args) -> None:
    if args.forks < 1 or args.forks > 1000:
        raise errors.UsageError(f"--forks {args.forks}: from 1 to 1000 hosts at once")
    if args.timeout is not None and not (0 < args.timeout <= 86400):
        raise errors.UsageError(f"--timeout {args.timeout:g}: above 0, at most 86400 s")
    if args.os_args is not None:
        try:
            words = shlex.split(args.os_args)
        except ValueError as e:
            raise errors.UsageError(f"--os-args {args.os_args!r}: {e}") from None
        if args.all_clocksources and "--current-only" in words:
            raise errors.UsageError(f"--all-clocksources and --os-args {args.os_args!r}: --current-only contradicts it: give one of them")


def main(args) -> int:
    playbook_cmd, inventory_cmd, ansible_cmd = (_need(c) for c in ("ansible-playbook", "ansible-inventory", "ansible"))
    inventory = _inventory_arg(args.inventory)
    bundle = find_bundle(args.bundle)
    hosts, hostvars = inventory_hosts(inventory_cmd, ansible_cmd, inventory, args.limit)
    out = Path(args.out) if args.out else OUT_DIR / dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H-%M-%SZ")
    try:
        out = out.resolve()
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise errors.ToolError(f"{out}: cannot make the folder: {e.strerror or e}", errors.CANNOT_WRITE) from None
    extra = {"bundle": str(bundle), "fetch_dir": str(out)}
    if args.os_args is not None:
        extra["clockbench_os_args"] = " ".join(shlex.quote(a) for a in shlex.split(args.os_args))
    if args.all_clocksources:
        extra["clockbench_all_clocksources"] = True
    if args.timeout is not None:
        extra["clockbench_timeout_s"] = max(1, math.ceil(args.timeout))
    bound = _bound(hosts, hostvars, args.forks, extra.get("clockbench_timeout_s"))
    (out / "extra-vars.json").write_text(json.dumps(extra, indent=1) + "\n")
    print(f"clockbench hosts: {len(hosts)} host{'' if len(hosts) == 1 else 's'} of {args.inventory}"
          + (f" matching {args.limit!r}" if args.limit else "") + f", {bundle.name}, {args.forks} at once; "
          f"logs in {out}/", flush=True)
    if switching_asked(args, hosts, hostvars):
        print("clockbench hosts: WARNING: --all-clocksources: on each host run as root (become) the WHOLE machine's clocksource "
              "is switched to every available one in turn for the run, every process there paying for it (10-50x a clock "
              "read on hpet or acpi_pm); the original is put back at the end, on a signal and at the time bound, not on a "
              "SIGKILL", flush=True)
    argv = [playbook_cmd, "-i", inventory, str(PLAYBOOK), "-e", f"@{out / 'extra-vars.json'}", "--forks", str(args.forks)]
    if args.limit:
        argv += ["--limit", args.limit]
    # opened first: a store that cannot be written (75, 76, 67) is said before any host is measured
    with store.open_store(args.store) as st:
        rc, finished = run_playbook(argv, out / "ansible.log", bound)
        outcomes = [judge(h, hostvars.get(h, {}), out / h, st, rc, finished, bound) for h in hosts]
    print_recap(outcomes, out)
    return ALL_MEASURED if all(o.measured for o in outcomes) else SOME_NOT_MEASURED


def switching_asked(args, hosts: list[str], hostvars: dict) -> bool:
    """Whether any host's run is asked to switch its clocksource: this
    command's --all-clocksources, or the host's clockbench_os_args (this
    command's --os-args wins over it, as -e does) or its
    clockbench_all_clocksources in the inventory."""
    if args.all_clocksources:
        return True
    for h in hosts:
        v = hostvars.get(h, {})
        words = str(args.os_args if args.os_args is not None else v.get("clockbench_os_args") or "").split()
        if "--all-clocksources" in words or _true(v.get("clockbench_all_clocksources")):
            return True
    return False


def _true(value) -> bool:
    """An Ansible boolean as an inventory gives it (true, "yes", "1", "on")."""
    return value is True or str(value).strip().lower() in ("true", "yes", "1", "on", "y")


def _need(command: str) -> str:
    path = shutil.which(command)
    if path is None:
        raise errors.MissingTool(f"{command} is not installed (Debian: apt install ansible-core; `make deps` installs it)")
    return path


def _inventory_arg(given: str) -> str:
    """A path, made absolute; or Ansible's own host list ("a,b,")."""
    p = Path(given)
    if p.exists():
        return str(p.resolve())
    if "," in given:
        return given
    raise errors.NoInput(f"{given}: no such inventory (a file or folder Ansible reads, or 'host1,host2,')")


def find_bundle(given: str | None) -> Path:
    """The bundle to copy: the one given, else the newest that `make bundle`
    made. One folder at its top holding clockbench-os, or it is refused."""
    if given is None:
        found = sorted(BUNDLE_DIR.glob(BUNDLE_GLOB), key=lambda p: p.stat().st_mtime)
        if not found:
            raise errors.NoInput(f"no bundle in {paths.default(BUNDLE_DIR)}/: run `make bundle`, or give --bundle PATH")
        path = found[-1]
    else:
        path = Path(given)
        if not path.is_file():
            raise errors.NoInput(f"{given}: no such bundle (make bundle writes {paths.default(BUNDLE_DIR)}/{BUNDLE_GLOB})")
    try:
        with tarfile.open(path) as tar:
            names = tar.getnames()
    except (OSError, tarfile.TarError, EOFError) as e:
        raise errors.BadInput(f"{path}: not a bundle: not a tarball ({e})") from None
    tops = {n.split("/")[0] for n in names if n.strip("/") and n != "."}
    if len(tops) != 1 or f"{next(iter(tops))}/clockbench-os" not in names:
        raise errors.BadInput(f"{path}: not a bundle: it must unpack to one folder with clockbench-os at its top "
                              f"(it holds {', '.join(sorted(tops)[:4]) or 'nothing'})")
    return path.resolve()


def _ansible(argv: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=INVENTORY_WAIT_S, env={**os.environ, **ANSIBLE_ENV},
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise errors.ToolError(f"{what}: {Path(argv[0]).name} gave no answer in {INVENTORY_WAIT_S} s (an inventory script "
                               "that hangs?)", errors.MISSING_TOOL) from None


def _ansible_error(stderr: str) -> str:
    """Ansible's reason in one line: a plugin's words where it gave them
    (" * Failed to parse X with ini plugin: ..."), else its ERROR! line."""
    text = " ".join(stderr.split())  # its warnings wrap at the terminal's width
    plugin = re.search(r"\* Failed to parse \S+ with (\S+) plugin: (.*?)(?= \[WARNING\]| ERROR!| \* |$)", text)
    if plugin:
        return f"{plugin.group(1)} plugin: {plugin.group(2)}"
    error = re.search(r"ERROR! (.*?)(?= \[WARNING\]|$)", text)
    return error.group(1) if error else (_last_line(stderr) or "no reason given")


def inventory_hosts(inventory_cmd: str, ansible_cmd: str, inventory: str, limit: str | None) -> tuple[list[str], dict]:
    """The hosts the run will have, in the inventory's order, and their
    variables, before anything runs: an inventory Ansible cannot parse is a
    usage error (64); no host, or a --limit that matches none, 66."""
    got = _ansible([inventory_cmd, "-i", inventory, "--list"], inventory)
    if got.returncode != 0:
        raise errors.UsageError(f"{inventory}: not an inventory Ansible can parse ({_ansible_error(got.stderr)})")
    try:
        inv = json.loads(got.stdout)
    except ValueError:
        raise errors.UsageError(f"{inventory}: ansible-inventory --list gave no JSON") from None
    hostvars = (inv.get("_meta") or {}).get("hostvars") or {}
    every: list[str] = []

    def walk(group: str, seen: set) -> None:
        if group in seen:
            return
        seen.add(group)
        g = inv.get(group) or {}
        every.extend(h for h in g.get("hosts", []) if h not in every)
        for child in g.get("children", []):
            walk(child, seen)

    walk("all", set())
    every.extend(h for h in hostvars if h not in every)
    if not every:
        raise errors.NoInput(f"{inventory}: holds no host")
    if not limit:
        return every, hostvars
    # ansible's own matching of the pattern (groups, globs, ~regex, :&, :!), not a copy of it
    got = _ansible([ansible_cmd, "all", "-i", inventory, "--list-hosts", "--limit", limit], inventory)
    listed = re.search(r"^\s*hosts \((\d+)\):\n((?:\s+\S.*\n?)*)", got.stdout, re.M)
    matched = [h.strip() for h in listed.group(2).splitlines() if h.strip()] if got.returncode == 0 and listed else []
    if not matched:
        names = ", ".join(every[:8]) + (f" and {len(every) - 8} more" if len(every) > 8 else "")
        raise errors.NoInput(f"--limit {limit!r} matches no host of {inventory} (its hosts: {names})")
    return [h for h in every if h in matched] + [h for h in matched if h not in every], hostvars


def _bound(hosts: list[str], hostvars: dict, forks: int, timeout_s: int | None) -> float:
    """How long ansible-playbook may take in all: each wave of `forks` hosts
    the longest run's bound and its steps; the free strategy only shortens it."""
    def host_timeout(h: str) -> float:
        if timeout_s is not None:
            return timeout_s
        try:
            return float(hostvars.get(h, {}).get("clockbench_timeout_s", DEFAULT_TIMEOUT_S))
        except (TypeError, ValueError):
            return DEFAULT_TIMEOUT_S
    longest = max(host_timeout(h) for h in hosts)
    waves = math.ceil(len(hosts) / forks)
    return waves * (longest + KILL_AFTER_S + STEPS_S) + 60


def run_playbook(argv: list[str], log: Path, bound: float) -> tuple[int | None, bool]:
    """ansible-playbook in a session of its own, its output into log (never
    a pipe: an ssh master it leaves behind could hold one open); (its exit
    status, whether it ended within bound). Past the bound, or on Ctrl-C,
    its whole session is ended."""
    with log.open("w") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **ANSIBLE_ENV}, start_new_session=True)
        try:
            return proc.wait(timeout=bound), True
        except subprocess.TimeoutExpired:
            _end(proc)
            return proc.returncode, False
        except BaseException:
            _end(proc)
            raise


def _end(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _seconds(delta) -> float | None:
    """Ansible's "0:00:03.693450" as seconds."""
    m = re.fullmatch(r"(\d+):(\d+):(\d+(?:\.\d*)?)", str(delta or ""))
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None


def _one_line(text: str, width: int = 200) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= width else line[:width - 3] + "..."


def _last_line(text: str) -> str:
    lines = [line for line in str(text or "").splitlines() if line.strip()]
    return _one_line(lines[-1]) if lines else ""


def runtimes_missing(text: str) -> list[str]:
    """The languages clockbench-os said it could not measure, each with its
    reason: its "== Languages" heading's "  Java: not measured: no JDK (...)"
    lines, and "(Java is not measured)" where a probe failed."""
    said, lines = [], text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("== Languages")), None)
    if start is not None:
        for line in lines[start + 1:]:
            if not line.startswith("  "):
                break
            m = re.match(r"  (\S.*?): not measured: (.*)$", line)
            if m:
                said.append(f"{m.group(1)} not measured: {m.group(2).strip()}")
    for m in re.finditer(r"^\s+\((.+?) is not measured\)$", text, re.M):
        said.append(f"{m.group(1)} not measured: its probe failed")
    return list(dict.fromkeys(said))


def _failed_checks(res: dict) -> list[str]:
    return [f"{c.get('name')}: {c.get('detail')}" if c.get("detail") else str(c.get("name"))
            for c in res.get("checks", []) if isinstance(c, dict) and c.get("result") == "FAIL"]


def _started(recs: list[dict]) -> str | None:
    started = next((r.get("started_utc") for r in recs if r.get("type") == "os" and isinstance(r.get("started_utc"), str)), None)
    if started:
        try:
            return dt.datetime.fromisoformat(started.replace("Z", "+00:00")).isoformat(timespec="seconds")
        except ValueError:
            pass
    return None


def judge(host: str, hostvars: dict, folder: Path, st: store.Store, rc: int | None, finished: bool, bound: float) -> Outcome:
    """What became of one host, from its status file and log; its run stored
    when it was measured."""
    address = str(hostvars.get("ansible_host") or host)
    try:
        status = json.loads((folder / "status.json").read_text())
    except (OSError, ValueError):
        status = None
    log = folder / "os.log"
    if status is None:
        why = (f"no answer within the tool's bound of {bound:.0f} s: ansible-playbook was stopped" if not finished
               else f"no status: ansible-playbook ended (status {rc}) before this host's results")
        return Outcome(host, address, False, f"{why} (see ansible.log)", why_not="no status")
    address = str(status.get("address") or address)
    if status.get("unreachable"):
        said = _one_line(status["unreachable"])
        # "Data could not be sent to remote host ... over ssh: ssh: connect to host ...: Connection refused": ssh's own words
        said = said[said.rfind("ssh: "):] if "ssh: " in said else said
        return Outcome(host, address, False, f"unreachable: {said}", why_not="unreachable")
    if status.get("reach_failed"):
        return Outcome(host, address, False, f"reached, but Ansible could not make its folder there (it needs Python 3 on the host): "
                       f"{_one_line(status['reach_failed'])}", why_not="no Ansible there")
    if status.get("failed_step"):
        return Outcome(host, address, False, f"failed at {status['failed_step']!r}: {_one_line(status.get('failed_msg'))}",
                       why_not=f"failed at {status['failed_step']!r}")
    if status.get("run_unreachable"):
        return Outcome(host, address, False, f"lost during the run: {_one_line(status['run_unreachable'])}",
                       why_not="lost during the run")
    rc_host, limit = status.get("rc"), status.get("timeout_s")
    seconds = _seconds(status.get("delta"))
    took = f" after {seconds:.0f} s" if seconds is not None else ""
    err = _last_line(status.get("stderr"))
    partial = f"; what it wrote: {log}" if log.is_file() and log.stat().st_size else ""
    if not isinstance(rc_host, int):
        return Outcome(host, address, False, "the run gave no exit status (see ansible.log)", why_not="no exit status")
    if rc_host in (124, 128 + 9) and limit and seconds is not None and seconds >= float(limit) - 1:
        return Outcome(host, address, False, f"the run was stopped by its time bound ({limit} s){took}{partial} (not stored)",
                       why_not="stopped by its time bound")
    if rc_host == 64:
        return Outcome(host, address, False, f"clockbench-os refused its arguments ({status.get('args')!r}): {err}",
                       why_not="arguments refused")
    if rc_host in (126, 127):
        return Outcome(host, address, False, f"the run could not start (exit status {rc_host}): {err}", why_not="could not start")
    if rc_host > 128 or rc_host < 0:
        sig = rc_host - 128 if rc_host > 128 else -rc_host
        return Outcome(host, address, False, f"the run was killed by signal {sig} ({SIGNALS.get(sig, 'signal')}){took}"
                       f"{partial} (not stored)", why_not="killed")
    if rc_host not in (0, 1):
        return Outcome(host, address, False, f"the run ended with exit status {rc_host}{took}" + (f": {err}" if err else "")
                       + f"{partial} (not stored)", why_not=f"exit status {rc_host}")
    if not log.is_file():
        return Outcome(host, address, False, f"the run ended (exit status {rc_host}) but no log came back", why_not="no log")
    text = log.read_bytes().decode("utf-8", "replace")
    try:
        res = results.load_any(text, source=str(log))
        recs = records.parse_log(text).records
    except (errors.BadInput, errors.NewerSchema) as e:
        return Outcome(host, address, False, f"its log is garbage, not clockbench-os's (exit status {rc_host}): "
                       f"{_one_line(str(e).removeprefix(str(log) + ': '))}; kept at {log} (not stored)", why_not="log garbage")
    if not any(r.get("type") == "os" for r in recs):
        return Outcome(host, address, False, f"its log is not clockbench-os's (no os record; exit status {rc_host}); kept "
                       f"at {log} (not stored)", why_not="log garbage")
    code, why = results.outcome(res)
    if code == results.NO_VERDICT:
        return Outcome(host, address, False, f"its log ends before its summary (exit status {rc_host}): {why}; kept at {log} "
                       "(not stored)", why_not="log cut short")
    meta = {"log_path": str(log), "host": address, "exit": rc_host, "seconds": seconds, "started": _started(recs)}
    try:
        rid, new = st.add_log(text, host, "hosts", meta=meta)
    except store.WasDeleted as e:
        return Outcome(host, address, True, f"measured; {e}", missing=runtimes_missing(text))
    failed = _failed_checks(res)
    said = f"stored as run {rid}" + ("" if new else " (already in the store)") + f" ({res.get('summary', {}).get('status', '?')}"
    said += (f": {len(failed)} check{'' if len(failed) == 1 else 's'} failed: {'; '.join(failed)[:300]}" if failed else "") + ")"
    missing = runtimes_missing(text)
    return Outcome(host, address, True, said, rid, missing)


def print_recap(outcomes: list[Outcome], out: Path) -> None:
    labels = [o.host + (f" ({o.address})" if o.address != o.host else "") for o in outcomes]
    width = max(map(len, labels))
    print("clockbench hosts: recap")
    for o, label in zip(outcomes, labels):
        print(f"  {label:<{width}}  {o.said}")
        for m in o.missing:
            print(f"  {'':<{width}}  {m}")
    measured = [o for o in outcomes if o.measured]
    line = f"clockbench hosts: {len(measured)} of {len(outcomes)} host{'' if len(outcomes) == 1 else 's'} measured and stored"
    not_measured = [o for o in outcomes if not o.measured]
    if not_measured:
        line += "; not measured: " + ", ".join(f"{o.host} ({o.why_not})" for o in not_measured)
    lacking = [o.host for o in measured if o.missing]
    if lacking:
        line += f"; a runtime missing on {', '.join(lacking)}"
    print(line + f"; ansible-playbook's output: {out / 'ansible.log'}")
    sys.stdout.flush()

"""Kept runs: every `clockbench run` gets a folder of its own under
build/runs/ (its serial log, its report, and metadata.json: when, on which
host, which QEMU with which command line, which image), and `clockbench runs`
lists them. The metadata format is in docs/output.md ("Kept runs")."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import secrets
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from clockbench import errors, paths
from clockbench.records import records

RUNS = paths.BUILD / "runs"
METADATA = "metadata.json"
LOG = "run.log"
FORMAT = "clockbench-run"
FORMAT_VERSION = 1
# A folder's name: its start time (UTC) and a random part, so two runs in
# the same second get two folders.
_NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ-[0-9a-f]{6}$")


def new_run_dir(root: Path, now: dt.datetime | None = None) -> Path:
    """Creates and returns root/<UTC time>-<6 hex digits>/."""
    now = now or dt.datetime.now(dt.timezone.utc)
    try:
        root.mkdir(parents=True, exist_ok=True)
        for _ in range(16):
            d = root / f"{now.strftime('%Y-%m-%dT%H-%M-%SZ')}-{secrets.token_hex(3)}"
            try:
                d.mkdir()
                return d
            except FileExistsError:
                continue
    except OSError as e:
        raise errors.CannotWrite(f"cannot make a run folder under {root}: {e.strerror or e}") from None
    raise errors.CannotWrite(f"no new run folder could be made under {root}")


def qemu_version(binary: str = "qemu-system-x86_64") -> str | None:
    """The first line of `qemu --version`, or None when QEMU does not answer."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def _host_cpu() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_info() -> dict:
    u = platform.uname()
    return {"name": socket.gethostname(), "os": f"{u.system} {u.release}", "arch": u.machine, "cpu": _host_cpu(),
            "cpus": os.cpu_count(), "python": platform.python_version()}


def write_metadata(run_dir: Path, meta: dict) -> None:
    """Writes metadata.json whole (a reader never sees half of it)."""
    tmp = run_dir / (METADATA + ".tmp")
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp, run_dir / METADATA)


def from_log(text: str) -> dict:
    """What the log says of the run: the guest CPU, the profile, the
    summary counts, and whether it ended with a verdict."""
    log = records.parse_log(text)
    got: dict = {}
    for r in log.records:
        t = r["type"]
        if t == "machine":
            got["cpu"] = r.get("brand")
            got["hypervisor"] = r.get("hypervisor")
        elif t == "profile":
            got["profile"] = r.get("name")
        elif t == "schema":
            got["build"] = r.get("build")
        elif t == "summary":
            got["summary"] = {k: r.get(k) for k in ("pass", "fail", "skip", "status")}
    return got


def link_latest(build: Path, run_dir: Path) -> Path | None:
    """build/run.log, a link to the newest run's log (replacing an old link
    or a plain file left by an older tool). None when it cannot be made."""
    link = build / LOG
    target = os.path.relpath(run_dir / LOG, build)
    try:
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            return None
        link.symlink_to(target)
    except OSError:
        return None
    return link


@dataclass
class Kept:
    path: Path
    meta: dict
    problem: str | None = None  # why the metadata could not be read

    @property
    def started(self) -> str:
        return str(self.meta.get("started") or "")


def list_runs(root: Path) -> list[Kept]:
    """Every run folder under root, oldest first; a folder whose metadata is
    missing or unreadable is listed with the reason."""
    kept = []
    for d in sorted(p for p in root.iterdir() if p.is_dir() and _NAME.match(p.name)):
        try:
            meta = json.loads((d / METADATA).read_text())
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} file")
            kept.append(Kept(d, meta))
        except (OSError, ValueError) as e:
            kept.append(Kept(d, {}, f"{METADATA}: {e.strerror if isinstance(e, OSError) else e}"))
    return kept


def _date(meta: dict) -> str:
    try:
        return dt.datetime.fromisoformat(meta["started"]).strftime("%Y-%m-%d %H:%M:%S")
    except (KeyError, TypeError, ValueError):
        return "?"


def _machine(meta: dict) -> str:
    vmm = meta.get("vmm") if isinstance(meta.get("vmm"), dict) else {}
    if vmm.get("name") not in (None, "qemu"):
        return f"{vmm['name']} smp{vmm.get('smp') or 1}"
    q = meta.get("qemu") or {}
    parts = [q.get("machine"), q.get("accel"), q.get("firmware")]
    return " ".join(str(p) for p in parts if p) or "?"


def _verdict(meta: dict) -> str:
    v = meta.get("verdict")
    code = meta.get("exit")
    if v is None:
        return "running or killed"
    return f"{v} ({code})" if code is not None else v


def _duration(meta: dict) -> str:
    s = meta.get("seconds")
    return f"{s:.0f} s" if isinstance(s, (int, float)) else "?"


def shown(p: Path) -> str:
    """p relative to the current folder when it is under it, else whole."""
    try:
        rel = os.path.relpath(p)
    except ValueError:
        return str(p)
    return str(p) if rel.startswith("..") else rel


def table(kept: list[Kept]) -> list[str]:
    rows = [("date (UTC)", "machine", "profile", "verdict (exit)", "took", "folder")]
    for k in kept:
        if k.problem:
            rows.append(("?", "?", "?", k.problem, "?", shown(k.path)))
            continue
        m = k.meta
        rows.append((_date(m), _machine(m), str(m.get("profile") or "?"), _verdict(m), _duration(m), shown(k.path)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]


def main(args) -> int:
    root = Path(args.dir)
    if not root.is_dir():
        raise errors.NoInput(f"no runs kept: {root} is not a folder (`clockbench run` makes it)")
    kept = list_runs(root)
    if args.last:
        kept = kept[-args.last:]
    if args.json:
        print(json.dumps([{"path": str(k.path), **({"problem": k.problem} if k.problem else {}), **k.meta} for k in kept],
                         indent=1))
        return 0
    if not kept:
        print(f"clockbench runs: no runs kept in {root}", file=sys.stderr)
        return 0
    print("\n".join(table(kept)))
    return 0

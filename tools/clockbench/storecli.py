"""The store's commands: `clockbench runs` (the store's runs, or with --dir
the kept run folders as before), `clockbench import` (kept run folders,
a runs folder of them, or logs) and `clockbench export` (CSV, Parquet);
and the name a run's machine gets when nobody gave one."""

from __future__ import annotations

import datetime as dt
import json
import socket
import sys
from pathlib import Path

from . import errors, paths, runs, store

STORE_HELP = "the store of runs (default: %(default)s)"


def store_default() -> str:
    return paths.default(store.DEFAULT) if store.DEFAULT.is_relative_to(paths.ROOT) else str(store.DEFAULT)


def add_store_argument(p) -> None:
    p.add_argument("--store", default=store_default(), help=STORE_HELP)


def qemu_machine(meta: dict) -> str:
    """A QEMU run's machine, named for what makes it one: the host it ran on
    and QEMU's configuration ("host/q35-tcg-bios-smp2"), or the microVM
    monitor's ("host/firecracker-smp2")."""
    q = meta.get("qemu") or {}
    host = (meta.get("host") or {}).get("name") or socket.gethostname()
    vmm = (meta.get("vmm") or {}).get("name")
    if vmm and vmm != "qemu":
        return f"{host}/{vmm}-smp{meta['vmm'].get('smp') or 1}"
    parts = [q.get("machine"), q.get("accel"), q.get("firmware")]
    name = "-".join(str(p) for p in parts if p) or "qemu"
    return f"{host}/{name}-smp{q.get('smp') or 1}"


def meta_of_run(meta: dict, log: Path) -> dict:
    """What a kept run's metadata.json adds to the store's row."""
    q = meta.get("qemu") or meta.get("vmm") or {}
    return {"firmware": q.get("firmware"), "boot": q.get("boot"), "started": meta.get("started"), "ended": meta.get("ended"),
            "seconds": meta.get("seconds"), "exit": meta.get("exit"), "log_path": str(log), "host": (meta.get("host") or {}).get("name"),
            "image_build": (meta.get("image") or {}).get("build"), "cmdline": meta.get("cmdline")}


def _folders(p: Path) -> list[Path]:
    if (p / runs.METADATA).is_file() or (p / runs.LOG).is_file():
        return [p]
    return sorted(d for d in p.iterdir() if d.is_dir() and ((d / runs.METADATA).is_file() or (d / runs.LOG).is_file()))


def cmd_import(args) -> int:
    """Each path: a run folder, a folder of them (build/runs/), or a log.
    A log that is not clockbench's is named and skipped (exit 65 at the end);
    nothing already imported is added twice."""
    added = same = 0
    bad: list[str] = []
    with store.open_store(args.store) as st:
        for arg in args.paths:
            p = Path(arg)
            if not p.exists():
                raise errors.NoInput(f"{p}: no such file or folder")
            items: list[tuple[Path, dict, str]] = []
            if p.is_dir():
                folders = _folders(p)
                if not folders:
                    bad.append(f"{p}: no run folder (metadata.json, run.log) in it")
                for d in folders:
                    try:
                        meta = json.loads((d / runs.METADATA).read_text()) if (d / runs.METADATA).is_file() else {}
                    except (OSError, ValueError) as e:
                        bad.append(f"{d}/{runs.METADATA}: unreadable ({e}); imported from its log alone")
                        meta = {}
                    items.append((d / runs.LOG, meta_of_run(meta, d / runs.LOG) if meta else {"log_path": str(d / runs.LOG)},
                                  args.machine or (qemu_machine(meta) if meta.get("qemu") or meta.get("vmm") else d.name)))
            else:
                # a bare log knows not when it ran: its file's time stands in
                mtime = dt.datetime.fromtimestamp(p.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")
                items.append((p, {"log_path": str(p), "started": mtime}, args.machine or p.stem))
            for log, meta, machine in items:
                try:
                    text = log.read_bytes().decode("utf-8", "replace")
                except OSError as e:
                    bad.append(f"{log}: cannot read it: {e.strerror or e}")
                    continue
                try:
                    rid, new = st.add_log(text, machine, "import", meta=meta)
                except (errors.BadInput, errors.NewerSchema) as e:
                    bad.append(str(e))
                    continue
                added += new
                same += not new
                print(f"clockbench import: {log}: run {rid}" + ("" if new else " (already in the store)"))
        total = st.count()
    for b in bad:
        print(f"clockbench import: skipped: {b}", file=sys.stderr)
    print(f"clockbench import: {added} added, {same} already there, {len(bad)} skipped; {total} runs in {args.store}")
    return errors.BAD_INPUT if bad else 0


def cmd_export(args) -> int:
    with store.open_store(args.store, create=False) as st:
        out = Path(args.out)
        try:
            made = store.export_parquet(st, out) if args.format == "parquet" else store.export_csv(st, out)
        except OSError as e:
            raise errors.CannotWrite(f"cannot write {out}: {e.strerror or e}") from None
    print("clockbench export: " + ", ".join(str(p) for p in made))
    return 0


def _cell(v) -> str:
    return "-" if v is None else str(v)


def cmd_runs(args) -> int:
    if args.dir:
        return runs.main(args)
    with store.open_store(args.store, create=False) as st:
        kept = st.runs(latest=False)
    if args.machine:
        kept = [r for r in kept if r["machine"] == args.machine]
    if args.last:
        kept = kept[-args.last:]
    if args.json:
        print(json.dumps([store.as_json(r) for r in kept], indent=1))
        return 0
    if not kept:
        print(f"clockbench runs: no runs in {args.store}", file=sys.stderr)
        return 0
    rows = [("id", "date (UTC)", "machine", "CPU", "firmware", "boot", "profile", "status (exit)", "checks", "source")]
    for r in kept:
        f = r.figures
        checks = "/".join(str(int(f[k].value)) if k in f else "?" for k in ("checks_pass", "checks_fail", "checks_skip"))
        rows.append((str(r["id"]), (r["started"] or "?")[:19].replace("T", " "), r["machine"], _cell(r["cpu_brand"]),
                     _cell(r["firmware"]), _cell(r["boot"]), _cell(r["profile"]), f"{r['status']} ({_cell(r['exit'])})",
                     checks, r["source"]))
    widths = [max(len(x[i]) for x in rows) for i in range(len(rows[0]))]
    print("\n".join("  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in rows))
    print(f"({len(kept)} runs in {args.store}; checks are passed/failed/skipped)")
    return 0


def add_parsers(sub) -> None:
    rs = sub.add_parser("runs", help="list the runs in the store (or, with --dir, the run folders `clockbench run` kept)")
    add_store_argument(rs)
    rs.add_argument("--dir", help="list the run folders in this folder instead of the store (e.g. build/runs)")
    rs.add_argument("--machine", help="only this machine's runs")
    rs.add_argument("--last", type=int, metavar="N", help="only the newest N")
    rs.add_argument("--json", action="store_true", help="the runs as one JSON array (with their figures and checks)")
    rs.set_defaults(func=cmd_runs)
    im = sub.add_parser("import", help="add kept run folders (build/runs/) and logs to the store")
    im.add_argument("paths", nargs="+", metavar="PATH", help="a run folder, a folder of run folders, or a log")
    im.add_argument("--machine", help="the machine's name for every run imported (default: from the run's metadata, "
                    "else the folder's or log's name)")
    add_store_argument(im)
    im.set_defaults(func=cmd_import)
    ex = sub.add_parser("export", help="write the store's runs, checks and figures as CSV or Parquet files")
    ex.add_argument("--format", choices=("csv", "parquet"), default="csv", help="default: %(default)s")
    ex.add_argument("--out", default="clockbench-export", help="the folder to write runs.*, checks.*, figures.* into "
                    "(default: %(default)s)")
    add_store_argument(ex)
    ex.set_defaults(func=cmd_export)

"""The store's commands: `clockbench runs` (the store's runs, or with --dir
the kept run folders as before; with --acpi the machines' kept ACPI
previews), `clockbench import` (kept run folders, a runs folder of them,
logs, or `clockbench acpi --json` files) and `clockbench export` (CSV,
Parquet); and the name a run's machine gets when nobody gave one."""

from __future__ import annotations

import datetime as dt
import difflib
import json
import socket
import sys
from pathlib import Path

from clockbench import errors
from clockbench.records import records
from clockbench.runs import osruns, runs, store

STORE_HELP = "the store of runs (default: %(default)s)"


def store_default() -> str:
    return store.default_text()


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
    nb = meta.get("netboot") or {}  # `run --boot netboot`: named as capture names a netbooted place's way
    boot = f"netboot-{q.get('firmware')}-{str(nb.get('loader', '')).lower()}" if nb else q.get("boot")
    return {"firmware": q.get("firmware"), "boot": boot, "mac": nb.get("mac"), "started": meta.get("started"), "ended": meta.get("ended"),
            "seconds": meta.get("seconds"), "exit": meta.get("exit"), "log_path": str(log), "host": (meta.get("host") or {}).get("name"),
            "image_build": (meta.get("image") or {}).get("build"), "cmdline": meta.get("cmdline")}


def _is_run_folder(d: Path) -> bool:
    """A run folder `clockbench run` kept (metadata.json, run.log), or a
    clockbench-os run's (os.log: `make os-bench`, `make os-vm`, a bundle's
    `clockbench-os --out DIR`)."""
    return (d / runs.METADATA).is_file() or (d / runs.LOG).is_file() or osruns.is_os_folder(d)


def _folders(p: Path) -> list[Path]:
    if _is_run_folder(p):
        return [p]
    return sorted(d for d in p.iterdir() if d.is_dir() and _is_run_folder(d))


def _read(log: Path) -> str:
    return log.read_bytes().decode("utf-8", "replace")


log_date = store.log_date  # where it was first defined; `import` dates a bare log by it


def cmd_import(args) -> int:
    """Each path: a run folder, a folder of them (build/runs/, build/os-runs/),
    or a log; a clockbench-os run is named by the host its log measured.
    A log that is not clockbench's is named and skipped (exit 65 at the end);
    nothing already imported is added twice."""
    added = same = previews = deleted = 0
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
                    bad.append(f"{p}: no run folder (metadata.json, run.log, or a clockbench-os run's os.log) in it")
                for d in folders:
                    if osruns.is_os_folder(d) and not (d / runs.LOG).is_file():
                        # named by the host its log measured, else by the folder (<host>-<UTC time>)
                        items.append((d / osruns.OS_LOG, {"log_path": str((d / osruns.OS_LOG).absolute())},
                                      args.machine or (lambda text, d=d: osruns.machine_name(text, osruns.folder_host(d)))))
                        continue
                    try:
                        meta = json.loads((d / runs.METADATA).read_text()) if (d / runs.METADATA).is_file() else {}
                    except (OSError, ValueError) as e:
                        bad.append(f"{d}/{runs.METADATA}: unreadable ({e}); imported from its log alone")
                        meta = {}
                    items.append((d / runs.LOG, meta_of_run(meta, (d / runs.LOG).absolute()) if meta else {"log_path": str((d / runs.LOG).absolute())},
                                  args.machine or (qemu_machine(meta) if meta.get("qemu") or meta.get("vmm") else d.name)))
            else:
                preview = _preview_file(p)
                if preview is not None:
                    try:
                        pid, new = st.add_acpi_preview(preview, args.machine or p.stem, "import", taken=_file_date(p))
                    except errors.BadInput as e:
                        bad.append(f"{p}: {e}")
                        continue
                    previews += 1
                    print(f"clockbench import: {p}: ACPI preview {pid} of machine {args.machine or p.stem!r}"
                          + ("" if new else " (already in the store)"))
                    continue
                # a clockbench-os log is named by the host it measured; any other by its file
                items.append((p, {"log_path": str(p.absolute())}, args.machine or (lambda text, p=p: osruns.machine_name(text, p.stem))))
            for log, meta, machine in items:
                try:
                    text = _read(log)
                except OSError as e:
                    bad.append(f"{log}: cannot read it: {e.strerror or e}")
                    continue
                if callable(machine):
                    machine = machine(text)
                if "started" not in meta and log.name != runs.LOG:  # a kept run folder's metadata says when
                    meta["started"] = log_date(log, text)
                try:
                    rid, new = st.add_log(text, machine, "import", meta=meta, again=args.again)
                except store.WasDeleted as e:  # `runs --delete` took it out: it stays out
                    deleted += 1
                    print(f"clockbench import: {e}")
                    continue
                except (errors.BadInput, errors.NewerSchema) as e:
                    bad.append(str(e))
                    continue
                added += new
                same += not new
                print(f"clockbench import: {log}: run {rid}" + ("" if new else " (already in the store)"))
        total = st.count()
    for b in bad:
        print(f"clockbench import: skipped: {b}", file=sys.stderr)
    kept = f", {previews} ACPI preview{'' if previews == 1 else 's'}" if previews else ""
    gone = f", {deleted} deleted before and left out" if deleted else ""
    print(f"clockbench import: {added} added, {same} already there{gone}, {len(bad)} skipped{kept}; "
          f"{total} run{'' if total == 1 else 's'} in {args.store}")
    return errors.BAD_INPUT if bad else 0


def _preview_file(p: Path) -> dict | None:
    """A `clockbench acpi --json` file's object, or None for anything else
    (a log, results: add_log judges those)."""
    try:
        with p.open("rb") as f:
            head = f.read(1 << 16).lstrip()[:1]
        if head != b"{":
            return None
        v = json.loads(p.read_bytes())
    except (OSError, ValueError):
        return None
    return v if store.is_preview(v) else None


def _file_date(p: Path) -> str:
    return dt.datetime.fromtimestamp(p.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")


def cmd_export(args) -> int:
    with store.open_store(args.store, create=False) as st:
        ids = sorted(set(args.ids)) if args.ids else None
        if ids:  # every one, or nothing written
            have = {r[0] for r in st._query("SELECT id FROM runs")}
            missing = [i for i in ids if i not in have]
            if missing:
                raise errors.NoInput(f"no run {', '.join(map(str, missing))} in {args.store} ({store.held(st)}); nothing was written")
        out = Path(args.out)
        try:
            made = (store.export_parquet(st, out, ids) if args.format == "parquet" else store.export_csv(st, out, ids))
        except OSError as e:
            raise errors.CannotWrite(f"cannot write {out}: {e.strerror or e}") from None
    print("clockbench export: " + ", ".join(str(p) for p in made))
    return 0


def _cell(v) -> str:
    return "-" if v is None else str(v)


def _delete(args) -> int:
    """The runs go, with their checks and figures; their logs stay where they
    were kept (a run folder in build/runs/, a capture), and are remembered
    as deleted so that `import` of them leaves them out (--again adds them)."""
    with store.open_store(args.store, create=False) as st:
        kept_at = {r["id"]: r["log_path"] for r in st.runs() if r["id"] in args.delete}
        missing = st.delete(args.delete)
        if missing:
            raise errors.UsageError(f"no run {', '.join(map(str, missing))} in {args.store} ({store.held(st)}); nothing was deleted")
        left = st.count()
    print(f"clockbench runs: deleted run{'s' if len(args.delete) > 1 else ''} {', '.join(map(str, args.delete))}; "
          f"{left} run{'' if left == 1 else 's'} left in {args.store}")
    stays = sorted({str(Path(p).parent if Path(p).name == runs.LOG else p) for p in kept_at.values() if p and Path(p).exists()})
    if stays:
        print(f"clockbench runs: the log{'s stay' if len(stays) > 1 else ' stays'} in {', '.join(stays)}: "
              "`clockbench import` leaves deleted runs out (`import --again` adds them back); delete the files yourself to be rid of them")
    return 0


def _no_machine(args, machines: dict[str, int], kept: int, what: str = "run") -> errors.UsageError:
    """A name the store does not hold: what it does hold, and the nearest names."""
    near = difflib.get_close_matches(args.machine, list(machines), n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
    held = (f"it holds {kept} {what}{'' if kept == 1 else 's'} of {len(machines)} "
            f"machine{'' if len(machines) == 1 else 's'}: {', '.join(list(machines)[:12])}"
            f"{', ...' if len(machines) > 12 else ''}") if machines else "it is empty"
    return errors.UsageError(f"no machine {args.machine!r} in {args.store}; {hint}{held}")


def _acpi_row(p: dict) -> dict:
    return {k: p[k] for k in ("id", "machine", "taken", "source", "source_kind", "host", "origin", "summary", "problems",
                              "added", "preview")}


def _acpi(args) -> int:
    """`clockbench runs --acpi`: the kept ACPI previews (one line each); with
    --machine, that machine's, and its newest shown whole."""
    from clockbench.report import acpi

    with store.open_store(args.store, create=False) as st:
        previews = st.acpi_previews(args.machine)
        held = st.acpi_machines()
        run_machines = st.machines()
    if args.machine and args.machine not in held:
        if args.machine in run_machines:
            n = run_machines[args.machine]
            raise errors.UsageError(f"no ACPI preview of machine {args.machine!r} in {args.store} (it has {n} "
                                    f"run{'' if n == 1 else 's'}; `clockbench acpi --store --machine {args.machine}` "
                                    "on it keeps one)")
        raise _no_machine(args, held, sum(held.values()), "ACPI preview")
    if args.last:
        previews = previews[-args.last:]
    if args.json:
        print(json.dumps([_acpi_row(p) for p in previews], indent=1))
        return 0
    if not previews:
        print(f"clockbench runs: no ACPI preview in {args.store} (`clockbench acpi --store` keeps one)", file=sys.stderr)
        return 0
    rows = [("id", "taken (UTC)", "machine", "source", "counters and CPUs")]
    for p in previews:
        rows.append((str(p["id"]), p["taken"][:19].replace("T", " "), p["machine"], f"{p['source']} ({p['source_kind']})",
                     p["summary"]))
    widths = [max(len(x[i]) for x in rows) for i in range(len(rows[0]))]
    print("\n".join("  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in rows))
    print(f"({len(previews)} ACPI preview{'' if len(previews) == 1 else 's'} in {args.store})")
    if args.machine:
        p = previews[-1]
        print(f"\nACPI preview {p['id']} of {p['machine']}, taken {p['taken']}:")
        print(acpi.render(p["preview"]))
    return 0


def machine_acpi_lines(st: store.Store, machine: str, kept: list[store.Run]) -> list[str]:
    """Beside a machine's runs: its newest kept ACPI preview in one line, and
    what that preview said against what its newest run of the image found."""
    from clockbench.report import acpi

    previews = st.acpi_previews(machine)
    if not previews:
        return []
    p = previews[-1]
    out = [f"ACPI preview {p['id']} (taken {p['taken'][:19].replace('T', ' ')}, {p['source']}): {p['summary']}"]
    image = [r for r in kept if r.get("tool") == "clockbench" and r["status"] != store.DID_NOT_RUN]
    if image:
        run = image[-1]
        text = st.log(run["id"]) or ""
        out.append(f"  against run {run['id']}:")
        out += [f"    {line}" for line in acpi.against_run(p["preview"], records.parse_log(text).records)]
    return out


def cmd_runs(args) -> int:
    if args.dir:
        return runs.main(args)
    if args.delete:
        return _delete(args)
    if args.acpi:
        return _acpi(args)
    with store.open_store(args.store, create=False) as st:
        kept = st.runs(latest=False)
        machines = st.machines()
        previewed = st.acpi_machines() if args.machine else {}
        if args.machine in machines or args.machine in previewed:
            beside = machine_acpi_lines(st, args.machine, kept=[r for r in kept if r["machine"] == args.machine])
        else:
            beside = []
    if args.machine and args.machine not in machines and args.machine not in previewed:
        raise _no_machine(args, machines, len(kept))  # a typo: what the store does hold, and the nearest names
    if args.machine:
        kept = [r for r in kept if r["machine"] == args.machine]
    if args.last:
        kept = kept[-args.last:]
    if args.json:
        print(json.dumps([store.as_json(r) for r in kept], indent=1))
        return 0
    if not kept:
        if beside:  # a machine previewed, never run
            print(f"clockbench runs: no run of {args.machine!r} in {args.store}", file=sys.stderr)
            print("\n".join(beside))
            return 0
        print(f"clockbench runs: {args.store} is empty (`clockbench run`, `capture` or `import` add runs)", file=sys.stderr)
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
    print(f"({len(kept)} run{'' if len(kept) == 1 else 's'} in {args.store}; checks are passed/failed/skipped)")
    if beside:
        print("\n".join(beside))
    return 0


def _newest_count(text: str) -> int:
    """--last N: a count of runs, 1 or more (0 or a negative would list every run, or all but some)."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give 1 or more (or leave --last out for all)")
    return n


def _run_id(text: str) -> int:
    """A run's id, as `clockbench runs` lists it."""
    import argparse

    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run id (a whole number from 1, as `clockbench runs` lists them)")
    return int(text)


def add_parsers(sub) -> None:
    rs = sub.add_parser("runs", help="list the runs in the store (or, with --dir, the run folders `clockbench run` kept)")
    add_store_argument(rs)
    rs.add_argument("--dir", help="list the run folders in this folder instead of the store (e.g. build/runs)")
    rs.add_argument("--machine", help="only this machine's runs")
    rs.add_argument("--last", type=_newest_count, metavar="N", help="only the newest N (1 or more)")
    rs.add_argument("--json", action="store_true", help="the runs as one JSON array (with their figures and checks)")
    rs.add_argument("--acpi", action="store_true", help="the machines' kept ACPI previews (`clockbench acpi --store`) "
                    "instead of their runs; with --machine, its newest shown whole")
    rs.add_argument("--delete", type=_run_id, nargs="+", metavar="ID", help="delete these runs (their checks and figures too): "
                    "all of them, or none when one is not in the store; their logs stay where they were kept, and "
                    "`import` leaves them out")
    rs.set_defaults(func=cmd_runs)
    im = sub.add_parser("import", help="add kept run folders (build/runs/, build/os-runs/) and logs to the store")
    im.add_argument("paths", nargs="+", metavar="PATH", help="a run folder (`clockbench run`'s, or a clockbench-os run's holding os.log), a folder of run folders, a log, or a "
                    "`clockbench acpi --json` file (kept as the machine's ACPI preview)")
    im.add_argument("--machine", help="the machine's name for every run imported (default: from the run's metadata; a "
                    "clockbench-os run: the hostname its log gives; else the folder's or log's name)")
    im.add_argument("--again", action="store_true", help="add back runs that `runs --delete` deleted (by default their "
                    "kept folders and logs are left out)")
    add_store_argument(im)
    im.set_defaults(func=cmd_import)
    ex = sub.add_parser("export", help="write the store's runs, checks and figures as CSV or Parquet files")
    ex.add_argument("ids", nargs="*", type=_run_id, metavar="ID", help="only these runs (their ids in `clockbench runs`; "
                    "default: every run, and the ACPI previews)")
    ex.add_argument("--format", choices=("csv", "parquet"), default="csv", help="default: %(default)s")
    ex.add_argument("--out", default="clockbench-export", help="the folder to write runs.*, checks.*, figures.* into "
                    "(default: %(default)s)")
    add_store_argument(ex)
    ex.set_defaults(func=cmd_export)

"""The command layer of `clockbench report`: the input checked first (a bad
one is a ToolError with its exit status, errors.py), the CI formats, then
report.py's results, plots and page, and the run's status as the exit
status, with a line saying why when it is not a pass."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from clockbench.report import ci_formats
from clockbench.records import results
from clockbench.runs import store
from clockbench.errors import BadInput, CannotWrite, MissingTool


# What a report's folder holds (report.write): a folder with anything else in it is not one.
REPORT_FILES = ("report.html", "results.json")


def default_out(log) -> Path:
    """Where `report LOG` writes when --out is not given: beside the log.
    A link (build/os-vm.log, build/run.log) is followed to the run it names;
    a kept run's log (run.log, os.log) has its report in the run's own
    folder, as `clockbench run` writes it; any other LOG.log in LOG/, unless
    that is a folder of something else (build/os-vm/, os-vm's runtime
    cache, beside a plain build/os-vm.log), then in LOG-report/."""
    from clockbench.runs import osruns, runs

    p = Path(log)
    real = p.resolve() if p.is_symlink() else p
    if real.name in (runs.LOG, osruns.OS_LOG):
        return real.parent
    out = real.with_suffix("")
    if out.is_dir() and any(f.name not in REPORT_FILES and f.suffix != ".png" for f in out.iterdir()):
        out = real.with_name(real.stem + "-report")
    return out


def _out_dir(args) -> Path:
    return Path(args.out or default_out(args.log))


def _os_runs(args, res: dict) -> list[dict]:
    """The runs `--os` names, loaded and checked: clockbench-os runs, beside
    a bare run."""
    from clockbench.report import os_side

    paths = getattr(args, "os", None) or []
    if paths and os_side.is_os(res):
        raise BadInput(f"{args.log}: is itself a clockbench-os run; --os adds OS runs to the report of a bare run (the image's log)")
    loaded = [store.load_run(p, args.store) for p in paths]
    runs = [r for r, _ in loaded]
    args.os = paths = [name for _, name in loaded]
    for p, r in zip(paths, runs):
        if not os_side.is_os(r):
            raise BadInput(f"{p}: not a clockbench-os run (its schema record's tool is {r.get('tool')!r}): --os takes a log of the OS side")
    return runs


def _from_store(args) -> None:
    """`report ID`: the report beside the stored run. Where the run's log is
    still kept (its run folder, or the log it was imported from), the
    report is made from it and written as for that log (default_out);
    else the log as the store keeps it is written as run.log into
    reports/run-ID/ beside the store, and the report made from it there.
    --out names the folder instead, the log written into it."""
    got = store.stored_run(args.log, args.store)
    if got is None:
        return
    rid, text = got
    if not args.out:
        with store.open_store(args.store, create=False) as st:
            kept = st.kept_log(rid)
        if kept is not None:
            args.log, args.out = str(kept), str(default_out(kept))
            return
    out = Path(args.out or Path(args.store).parent / "reports" / f"run-{rid}")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "run.log").write_text(text)
    except OSError as e:
        raise CannotWrite(f"cannot write {out}/run.log: {e.strerror or e}") from None
    args.log, args.out = str(out / "run.log"), str(out)


def cmd_report(args) -> int:
    _from_store(args)
    args.out = str(_out_dir(args))
    res = results.load_path(args.log)
    args.os_runs = _os_runs(args, res)
    to_stdout = any(dest == "-" for _, dest in ci_formats.requested(args))
    ci_formats.write_requested(args, res)
    # TAP or Markdown on standard output: everything else goes to standard error
    quiet = contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext()
    if args.no_html:
        out = _out_dir(args)
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        except OSError as e:
            raise CannotWrite(f"cannot write {out}/results.json: {e.strerror or e}") from None
        for p in res["problems"]:
            print(f"clockbench report: {args.log}: {p}", file=sys.stderr)
        with quiet:
            print(f"clockbench report: {out}/results.json")
    else:
        from clockbench.report import report

        with quiet:
            try:
                made = report.main(args)
            except ImportError as e:  # matplotlib, jinja2, allantools
                raise MissingTool(f"{e.name or e} is not installed (`make deps`); `--no-html` needs none of it") from None
            except OSError as e:  # the output folder or a file in it
                raise CannotWrite(f"cannot write the report: {e.strerror or e}" + (f": {e.filename}" if e.filename else "")) from None
        if isinstance(made, int) and made >= 64:  # report.py's own tool error
            return made
    code, why = results.outcome(res)
    if why:
        print(f"clockbench report: {args.log}: {why} (exit status {code})", file=sys.stderr)
    return code

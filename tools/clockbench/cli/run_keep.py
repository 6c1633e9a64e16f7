"""`clockbench run`'s end: the run's record closed by its machine's result
(runs/record.py), what happened said on the terminal, the report and the CI
formats written from the run's log, the record saved, and the run added to
the store; the exit status, with a stop past the run's end refused."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clockbench import errors, paths
from clockbench.cli.run_machine import VMM_STDERR, say
from clockbench.machines import host_tsc, microvm
from clockbench.report import ci_formats
from clockbench.runs import runs, store
from clockbench.runs.record import RunRecord

def keep(args, rec: RunRecord, result) -> int:
    """The run's record closed by its machine's result, said on the
    terminal, reported and stored from that record; the exit status."""
    log = rec.log
    name = rec.meta["vmm"]["name"]
    what = "QEMU" if name == "qemu" else name
    rec.close(result)
    meta = rec.meta
    link_dir = Path(args.runs_dir).parent
    latest = None if args.log and Path(args.log).absolute() == (link_dir / runs.LOG).absolute() else \
        runs.link_latest(link_dir, rec.run_dir)

    print()
    if result.interrupted:
        rec.save()
        _store(args, rec)
        say(f"interrupted after {result.seconds:.1f} s: {what} stopped. The partial log ({len(result.output)} "
             f"characters) is in {runs.shown(log)}")
        return result.exit_code
    first, *notes = result.describe().split("\n")
    say("\n".join([f"{first} after {result.seconds:.1f} s"] + notes))
    for field, accounts in (("migration", ("resume",)), ("snapshot", ("restore", "resume"))):
        if meta.get(field):
            say(meta[field]["described"])
            for account in accounts:
                if meta[field].get(account):
                    say(meta[field][account]["described"])
    if "host_tsc" in meta:
        say(host_tsc.describe_against(meta["host_tsc"]))

    report_dir = Path(args.log).with_suffix("") if args.log else rec.run_dir
    if not args.no_report and result.output:
        from clockbench.report import report

        try:
            made = report.main(argparse.Namespace(log=str(args.log or log), out=str(report_dir), no_html=False, junit=None,
                                                  tap=None, markdown=None))
            if (report_dir / "report.html").is_file():
                meta["report"] = str(report_dir / "report.html")
            if isinstance(made, int) and made >= 64:
                say(f"the report could not be written (exit status {made})")
        except Exception as e:  # noqa: BLE001 - the run's status stands whatever the report does
            say(f"no report: {e}")
    if ci_formats.requested(args):
        from clockbench.records import results

        try:
            ci_formats.write_requested(args, results.load_path(str(log)), say=lambda s: print(s, flush=True))
        except errors.ToolError as e:
            say(f"no CI formats: {e}")
    rec.save()
    kept = [runs.LOG, runs.METADATA] + (["report.html", "results.json"] if meta["report"] and report_dir == rec.run_dir else [])
    kept += [f for f in (VMM_STDERR, microvm.module(name).CONFIG if name == "firecracker" else None)
             if f and name != "qemu" and (rec.run_dir / f).is_file()]
    say(f"run kept in {runs.shown(rec.run_dir)}/: {', '.join(kept)}")
    if meta["report"] and report_dir != rec.run_dir:
        say(f"report in {runs.shown(report_dir)}/report.html")
    if latest:
        stored = getattr(args, "store", "none") != "none"
        where = "" if not stored or Path(args.store).resolve() == Path(store.DEFAULT).resolve() else f" --store {runs.shown(Path(args.store))}"
        say(f"{runs.shown(latest)} is a link to its log" +
             (f"; `{paths.tool_command()} runs{where}` lists the stored runs" if stored else ""))
    _store(args, rec)
    return result.exit_code


def stop_reached(meta: dict, opt: str, code: int) -> int:
    """A --migrate-at or --snapshot-at past the run's end: the run ended
    before its time came, so nothing was stopped. No run's end is known
    before it runs, so the value is refused here, once the run is over:
    one line, exit 64, so that a script never takes a run that was not
    stopped for one that was. The run itself is whole and kept."""
    field = "migration" if opt == "migrate" else "snapshot"
    stop = meta.get(field) or {}
    if stop and stop.get("stopped_s") is None and str(stop.get("error") or "").startswith("the run ended before"):
        print(f"clockbench: --{opt}-at {stop['at_s']:g}: past the run's end ({stop['error']}); nothing was "
              f"stopped. The run is kept in {runs.shown(Path(meta['log']).parent)}/; give a time within it", file=sys.stderr,
              flush=True)
        return errors.USAGE
    return code


def _store(args, rec: RunRecord) -> None:
    """The store hook (store.py): the run's log and what its record knows."""
    where = getattr(args, "store", None)
    if not where or where == "none":
        return
    from clockbench.cli import storecli

    store.record(where, rec.output, args.name or storecli.qemu_machine(rec.meta), "run", storecli.meta_of_run(rec.meta, rec.log),
                 say=lambda s: say(s))

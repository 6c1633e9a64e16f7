"""A run's record, from its plan to its end: the run's folder, its log
(run.log) and its metadata (metadata.json), written whole at each step so
that a killed tool leaves a readable folder. The machine's result closes
it (its verdict, exit status and how the machine ended); the report and
the store read a run through this record only."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from clockbench import paths
from clockbench.machines import host_tsc, qemu, snapshot, vmrun
from clockbench.records import records
from clockbench.runs import runs


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunRecord:
    run_dir: Path
    meta: dict
    output: str = ""  # the whole log, once the run has ended

    @property
    def log(self) -> Path:
        return self.run_dir / runs.LOG

    def save(self) -> None:
        runs.write_metadata(self.run_dir, self.meta)

    def failed(self, verdict: str, failure, error: str | None = None) -> None:
        """The machine could not run, or ended before the image started
        (failure: an errors.ToolError; error: its cause's words, when they
        are not the failure's own): said in the metadata, and kept."""
        self.meta.update(ended=now(), verdict=verdict, exit=failure.code, error=error or str(failure))
        self.save()

    def close(self, result) -> None:
        """The machine's result (qemu.RunResult or microvm.VmmResult): what
        the log says of the run, the verdict, the exit status, how the
        machine ended. Saved by the caller once the report is known."""
        self.output = result.output
        self.meta.update(runs.from_log(result.output))
        self.known_answers(records.parse_log(result.output).records)
        verdict = ("interrupted" if result.interrupted else "timed out" if result.timed_out else
                   qemu.STATUS_NAMES[result.status] if result.status is not None else "no verdict")
        self.meta.update(ended=now(), seconds=round(result.seconds, 3), exit=result.exit_code, verdict=verdict,
                         stderr=result.stderr[-4000:] or None)
        if self.meta["vmm"]["name"] == "qemu":
            self.meta["qemu_exit"] = result.qemu_exit
        else:
            self.meta.update(vmm_exit=result.vmm_exit, status_source=result.status_source,
                             powered_off=result.powered_off, notes=result.notes)

    def known_answers(self, recs: list[dict]) -> None:
        """What the host knows beside the run, held against the log: the
        guest's TSC against the host's (host_tsc), and a stop's late start
        where the TSC ran on through it (vmrun.late_start_account)."""
        meta = self.meta
        if "host_tsc" in meta:
            meta["host_tsc"]["guest"] = host_tsc.known_answers(recs, meta["host_tsc"])
        if meta.get("snapshot"):
            meta["snapshot"]["restore"] = snapshot.restore_account(meta["snapshot"], recs)
            meta["snapshot"]["resume"] = snapshot.resume_account(meta["snapshot"], recs)
        if meta.get("migration") and meta["migration"].get("stopped_s") is not None:
            meta["migration"]["resume"] = vmrun.late_start_account(
                meta["migration"]["stopped_s"], meta["migration"]["stopped_uncertainty_s"], recs,
                "resumed on the destination", "the destination's vCPU starting")

    def stopped(self, field: str, done) -> None:
        """What a stop did (field "migration" or "snapshot"), with its sentence."""
        self.meta[field] = {**done.to_json(), "described": done.describe()}


def begin(run_dir: Path, cmdline: str, image: Path, timeout: float, vmm: dict) -> RunRecord:
    """A run's record as it starts: nothing has ended yet."""
    return RunRecord(run_dir, {
        "format": runs.FORMAT, "version": runs.FORMAT_VERSION, "started": now(), "ended": None,
        "host": runs.host_info(), "vmm": vmm,
        "image": {"path": str(Path(image).resolve()), "build": paths.image_build() if Path(image).resolve().is_relative_to(
            paths.BUILD.resolve()) else None},
        "cmdline": cmdline, "profile": None, "timeout_s": timeout, "tool": paths.tool_version(),
        "verdict": None, "exit": None, "seconds": None, "log": str(run_dir / runs.LOG), "report": None,
    })

"""Boots of the image shared by the tests that read them, and the run of
the real tool that a boot test reads the same way.

The `boot` and `vmm_boot` fixtures (tests/conftest.py) run each
configuration once (BootCache) and hand the same run to every test that
asks for it again: in this process, and, when CLOCKBENCH_BOOT_CACHE names a
folder (`make test` sets it), in every other pytest process of the same
`make test` too (the xdist workers, and the two lanes below), one boot per
QEMU command line and lane.

`make test` runs the suite in two lanes at once (scripts/test_lanes.sh;
docs/testing.md, "How `make test` runs"):
- the quiet lane (CLOCKBENCH_LANE=quiet): the tests marked `timed`, one at
  a time: they time something, or stop QEMU from outside, and must not
  wait for another QEMU of ours;
- the busy lane (CLOCKBENCH_LANE=busy): everything else on every core
  (pytest-xdist) at the lowest priority, reading the quiet lane's boots
  where they ask for the same configuration.
A quiet-lane test never reads a run the busy lane made: that run may have
waited for the CPU, which is what a timed test must not see.

CliBoot is a microVM run made through `clockbench run --vmm` instead
(tool.kept_run), read back into the same shape as a Boot.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
from pathlib import Path

from helpers.paths import PVH_KERNEL, VMM_DIR
from helpers.tool import kept_run
from clockbench.machines import host_tsc, microvm, qemu
from clockbench.records import records

# "quiet": runs made alone (the timed tests' lane, and any run outside
# `make test`); "busy": runs made at the lowest priority beside them
LANE = os.environ.get("CLOCKBENCH_LANE", "quiet")


class Boot:
    """One QEMU run of the image, with its serial log parsed: the `boot`
    and `vmm_boot` fixtures' runs (a microVM's too: result is then a
    microvm.VmmResult)."""

    def __init__(self, result: qemu.RunResult):
        self.result = result
        self.output = records.clean(result.output)
        # a run that ended normally must print only whole records; one that
        # was cut off (a timeout, a kill) may end inside one: keep what parsed
        self.records = records.parse(result.output) if result.status is not None else records.parse_log(result.output).records
        # the host's TSC measured beside it (BootCache._boot)
        self.host_tsc = getattr(result, "host_tsc", None) or {"measured": False, "reason": "not measured beside this run"}

    def tsc_against_the_host(self) -> list[dict]:
        """The guest's TSC rate against each reference, each held against
        the host's (host_tsc.known_answers); printed, for the figures."""
        got = host_tsc.known_answers(self.records, self.host_tsc)
        print("\n" + host_tsc.describe_against({**self.host_tsc, "guest": got}))
        return got

    @property
    def status(self):
        return self.result.status

    def lines(self, prefix: str) -> list[str]:
        return [l for l in self.output.split("\n") if l.startswith(prefix)]

    def explain(self) -> str:
        return f"{' '.join(self.result.command)}\n{self.result.describe()}\n--- serial ---\n{self.output[-6000:]}\n--- stderr ---\n{self.result.stderr[-2000:]}"


def boot_key(cfg: qemu.QemuConfig | microvm.VmmConfig) -> str:
    """What makes two boots the same run: the QEMU command line, the faults
    applied to it, and the files it boots as they are now; for a microVM,
    its configuration, the monitor's program and the kernel."""
    if isinstance(cfg, microvm.VmmConfig):
        files = [cfg.kernel, cfg.binary]
        command = repr(cfg)
        faults = []
    else:
        accel, _ = qemu.resolve_accel(cfg.accel)
        files = {"direct": [cfg.kernel], "pvh": [cfg.kernel], "iso": [cfg.iso], "disk": [cfg.disk]}.get(cfg.boot, [])
        command = qemu.build_command(cfg, accel)
        faults = cfg.faults
    stamps = []
    for f in files:
        try:
            st = os.stat(f)
            stamps.append([str(f), st.st_size, st.st_mtime_ns])
        except OSError:
            stamps.append([str(f), None, None])
    what = {"command": command, "faults": [repr(f) for f in faults], "files": stamps}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


class BootCache:
    """Runs each configuration once. A run is handed again to a caller whose
    time bound it would have met the same way: one that ended within the
    bound, or one cut short by the same bound; otherwise it runs again."""

    def __init__(self, folder: str | None):
        self.folder = Path(folder) if folder else None
        self.runs: dict[str, qemu.RunResult] = {}
        if self.folder:
            self.folder.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def usable(r, timeout: float, cfg) -> bool:
        bound = timeout + sum(f.duration_s for f in getattr(cfg, "faults", []))
        return r is not None and (r.timeout_s == bound if r.timed_out else r.seconds <= bound)

    @staticmethod
    def _boot(cfg, timeout: float):
        # the host's own TSC rate beside every run, as `clockbench run` keeps
        # it: the known answer of the guest's (machines/host_tsc.py)
        host = host_tsc.Beside()
        host.start()
        r = microvm.run(cfg, timeout) if isinstance(cfg, microvm.VmmConfig) else qemu.run(cfg, timeout=timeout)
        r.host_tsc = host.result()
        return r

    def run(self, cfg, timeout: float):
        """cfg: a qemu.QemuConfig (a qemu.RunResult comes back) or a
        microvm.VmmConfig (a microvm.VmmResult)."""
        key = boot_key(cfg)
        if self.usable(self.runs.get(key), timeout, cfg):
            return self.runs[key]
        if not self.folder:
            self.runs[key] = self._boot(cfg, timeout)
            return self.runs[key]
        quiet = self.folder / f"{key}.pickle"
        r = None
        if LANE == "busy":
            # the quiet lane's run, if it has made it; else one of this lane's own
            r = self._read(quiet)
            if not self.usable(r, timeout, cfg):
                r = self._read_or_boot(self.folder / f"{key}.busy.pickle", cfg, timeout)
        else:
            r = self._read_or_boot(quiet, cfg, timeout)
        self.runs[key] = r
        return r

    @staticmethod
    def _read(path: Path):
        return pickle.loads(path.read_bytes()) if path.exists() else None

    def _read_or_boot(self, path: Path, cfg, timeout: float):
        # one process boots it; any other of the same lane that wants it
        # meanwhile waits for it (the lanes never wait for each other)
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            r = self._read(path)
            if not self.usable(r, timeout, cfg):
                r = self._boot(cfg, timeout)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(pickle.dumps(r))
                tmp.replace(path)
        return r


def vmm_binary(vmm: str, what: str = "the microVM tests") -> Path:
    """The monitor's program from VMM_DIR: missing fails the test, it is
    never skipped."""
    binary = VMM_DIR / microvm.module(vmm).BINARY
    assert binary.is_file() and os.access(binary, os.X_OK), \
        f"{binary} is missing or not executable: {what} need it (CLOCKBENCH_VMM_DIR names its folder)"
    return binary


class CliBoot(Boot):
    """One `clockbench run --vmm` of the real tool, read as the `vmm_boot`
    fixture's runs are (result, records, output, lines, explain), from what
    it kept: run.log, vmm-stderr.log and metadata.json in its run folder;
    and what a user gets besides: its exit status, what it printed, the
    folder, the metadata and the store it was asked to write. Made once per
    configuration in this process."""

    def __init__(self, vmm: str, smp: int, append: str, tmp_root: Path, timeout_s: float):
        self.binary = vmm_binary(vmm)
        self.store = tmp_root / f"store-cli-{vmm}-smp{smp}.db"
        run = kept_run(f"cli-{vmm}-smp{smp}", ["--vmm", vmm, "--vmm-binary", self.binary, "--kernel", PVH_KERNEL,
                                               "--smp", smp, "--append", append, "--store", self.store,
                                               "--timeout", timeout_s], tmp_root, timeout_s + 120)
        self.argv, self.seconds, self.code, self.out = run.argv, run.seconds, run.code, run.out
        self.folder, self.meta = run.folder, run.meta
        m = self.meta
        stderr = (self.folder / "vmm-stderr.log").read_text(errors="replace")
        self.result = microvm.VmmResult(
            vmm=vmm, command=m["vmm"]["command"], vmm_exit=m.get("vmm_exit"), status=microvm.STATUS_CODES.get(m["verdict"]),
            output=run.log, stderr=stderr, seconds=m["seconds"] or 0.0, timed_out=m["verdict"] == "timed out",
            timeout_s=timeout_s, status_source=m.get("status_source"), powered_off=bool(m.get("powered_off")),
            notes=m.get("notes") or [])
        self.output = records.clean(run.log)
        self.records = run.records

    def explain(self) -> str:
        return f"{' '.join(self.argv)}\nexit {self.code}\n--- the tool said ---\n{self.out[-4000:]}\n" \
               f"--- stderr of the monitor ---\n{self.result.stderr[-2000:]}"

"""`make bench`: boots the image repeatedly under KVM (when usable) and TCG
and writes build/bench.json with the figures the project aims at. Goals are
recorded next to the measurements, never enforced: timing on shared machines
varies, and a benchmark is not a test.

Figures per accelerator:
- boot_to_summary_s: from QEMU's start to the SUMMARY line, per run
- p50_read_ns: each counter's median read cost, per run, and the largest
  spread between runs as a percentage of their mean (goal: within 3 %)
- tsc_vs_hpet_stderr_ppm_1s / _10s: the standard error of the TSC frequency
  fitted against the HPET over the first 1 s sub-window and over the whole
  10 s window (goals under KVM: below 1 ppm and below 0.05 ppm)
- languages (issue 36): the wall time of the whole languages' ladder on the
  host's current clocksource (clockbench-os --current-only; goal under 60 s)
  and of os-vm with every runtime under TCG (goal under 3 minutes), with the
  lang_clock records each gave
- known_answers: for figures whose true value under QEMU is known, the error
  of each run against the truth, the uncertainty_ppm the image stated, and
  how often |error| <= 3 x uncertainty_ppm held (goal: every run; for an
  honest standard uncertainty 99.7 % of runs). The truths: QEMU derives the
  HPET and the PM timer from one clock, so acpi_pm against hpet is exactly
  nominal (0 ppm); its PIT runs at exactly 1,193,182 Hz under TCG and, in
  KVM's kernel, at 1,193,181 Hz, against that same clock. An image whose
  records have no uncertainty_ppm (older than the uncertainty work) is
  noted as such and its coverage left out.
- fleet_500_os_hosts_s (issue 43): 500 Linux hosts made from the real
  clockbench-os logs in tests/fixtures with their identities changed (some
  on the HPET or the PM timer, some with the TSC marked unstable:
  fleet/madefleet.py) go through `clockbench import` and `clockbench fleet`
  (terminal, --json and --html), each a process of its own as a user runs
  them; the goal: under 10 s for the four. Also the store's bytes per run,
  and the load average then (these cores are shared).
- harness_agreement (issue 44): each language's headline clock call measured
  by the language's own benchmark harness (Google Benchmark, criterion,
  testing.B, JMH, pyperf, tinybench; BenchmarkDotNet cannot be had here)
  beside clockbench-os's lang_clock p50 for the same API on this host's
  clocksource, and their ratio (goal: within 1.5x either way): bench_harness.py.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

from clockbench.cli import bench_harness
from clockbench.machines import qemu
from clockbench.records import records

GOALS = {"stderr_ppm_1s": 1.0, "stderr_ppm_10s": 0.05, "p50_spread_percent": 3.0, "known_answers_within_3u": 1.0,
         "lang_ladder_host_s": 60.0, "os_vm_every_language_tcg_s": 180.0, "fleet_500_os_hosts_s": 10.0,
         "harness_agreement_ratio": bench_harness.GOAL_RATIO,
         # issue 48: five back-to-back runs of the ladder; of every pair of runs, per API, the share
         # whose p50 intervals overlap; and the ladder's own time on one clocksource, every language
         "ladder_repeat_overlap": 0.9, "ladder_one_clocksource_s": 15.0}
LADDER_REPEAT_LANGS = "go,java,python,node,cpp-libstdc++"
FLEET_HOSTS = 500

PIT_NOMINAL_HZ = Fraction(14_318_180, 12)
PIT_TRUE_HZ = {"tcg": 1_193_182, "kvm": 1_193_181}


def known_answers(accel: str) -> dict[str, float]:
    """The true ppm_vs_nominal of each counter-vs-reference pair, by
    "counter/reference", against the crystal's nominal (an image that does
    not know its VMM's rates); known_answer() takes the nominal a record
    states instead where it states one."""
    pit = (PIT_TRUE_HZ[accel] - PIT_NOMINAL_HZ) / PIT_NOMINAL_HZ * 10**6
    return {"acpi_pm/hpet": 0.0, "pit/hpet": float(pit)}


def true_ppm_vs_stated_nominal(recs: list[dict], counter: str, accel: str, true_ppm: float) -> float:
    """The truth against the nominal the image states for the counter (its
    `counter` record's nominal_hz: under QEMU, the VMM's own PIT_FREQ or
    KVM_PIT_FREQ, docs/output.md "Nominal rates under a VMM"), or true_ppm
    when the record states none."""
    if counter != "pit":
        return true_ppm
    stated = [r.get("nominal_hz") for r in records.of_type(recs, "counter") if r.get("name") == "pit"]
    choice = [r.get("nominal_hz") for r in records.of_type(recs, "nominal_choice") if r.get("counter") == "pit"]
    nominal = next((v for v in choice + stated if isinstance(v, (int, float)) and v > 0), None)
    if nominal is None:
        return true_ppm
    return float((PIT_TRUE_HZ[accel] - Fraction(nominal)) / Fraction(nominal) * 10**6)


def known_answer(recs: list[dict], pair: str, true_ppm: float) -> dict:
    """One run's figure for a known-answer pair: its error against the truth,
    its stated uncertainty, and whether 3 of them cover the error; or why not."""
    counter, reference = pair.split("/")
    found = [r for r in records.of_type(recs, "frequency") if r.get("counter") == counter and r.get("reference") == reference]
    if not found:
        return {"missing": f"no frequency record for {counter} against {reference}"}
    f = found[0]
    if f.get("ppm_vs_nominal") is None:
        return {"missing": f"the {counter} record has no ppm_vs_nominal"}
    out = {"true_ppm": round(true_ppm, 6), "ppm_vs_nominal": f["ppm_vs_nominal"], "error_ppm": round(f["ppm_vs_nominal"] - true_ppm, 6)}
    u = f.get("uncertainty_ppm")
    if not isinstance(u, (int, float)):
        out["missing"] = "the image's frequency records have no uncertainty_ppm (an image older than the uncertainty work)"
        return out
    out["uncertainty_ppm"] = u
    out["within_3u"] = abs(out["error_ppm"]) <= 3 * u
    out["z"] = round(out["error_ppm"] / u, 3) if u > 0 else None
    return out


def one_run(accel: str, kernel: Path, seconds: int, timeout: float) -> dict:
    cfg = qemu.QemuConfig(boot="direct", kernel=kernel, accel=accel, firmware="qboot" if accel == "kvm" else "bios",
                          append=f"duration={seconds}")
    start = time.monotonic()
    summary_at = None
    tail = ""

    def watch(text: str):
        # output can arrive a character at a time (KVM): look at a rolling tail
        nonlocal summary_at, tail
        tail = (tail + text)[-64:]
        if summary_at is None and "SUMMARY:" in tail:
            summary_at = time.monotonic() - start

    result = qemu.run(cfg, timeout=timeout, echo=watch)
    log = records.parse_log(result.output)  # a cut or garbled record costs that record, not the run
    recs = log.records
    out = {"status": result.describe(), "boot_to_summary_s": round(summary_at, 2) if summary_at else None}
    if log.problems:
        out["record_problems"] = [str(p) for p in log.problems[:5]]
    out["p50_read_ns"] = {r["counter"]: r["p50_ns"] for r in records.of_type(recs, "latency")}
    whole = [r for r in records.of_type(recs, "frequency") if r["counter"] == "tsc" and r["reference"] == "hpet"]
    subs = [r for r in records.of_type(recs, "stability") if r["reference"] == "hpet"]
    out["tsc_hz"] = whole[0]["hz"] if whole else None
    out["tsc_vs_hpet_stderr_ppm_10s"] = whole[0]["stderr_ppm"] if whole else None
    out["tsc_vs_hpet_stderr_ppm_1s"] = subs[0]["stderr_ppm"] if subs else None
    out["known_answers"] = {pair: known_answer(recs, pair, true_ppm_vs_stated_nominal(recs, pair.split("/")[0], accel, truth))
                            for pair, truth in known_answers(accel).items()}
    return out


def summarise_known_answers(runs: list[dict]) -> dict:
    """Per pair: in how many runs 3 stated uncertainties covered the error."""
    out = {}
    for pair in sorted({p for r in runs for p in r.get("known_answers", {})}):
        figures = [r["known_answers"][pair] for r in runs if pair in r.get("known_answers", {})]
        judged = [f for f in figures if "within_3u" in f]
        zs = [f["z"] for f in judged if f.get("z") is not None]
        reasons = [f["missing"] for f in figures if "missing" in f]
        missing = [f"{why} ({reasons.count(why)} of {len(figures)} runs)" for why in sorted(set(reasons))]
        out[pair] = {
            "runs": len(figures),
            "judged": len(judged),
            "within_3u": sum(f["within_3u"] for f in judged),
            "fraction_within_3u": round(sum(f["within_3u"] for f in judged) / len(judged), 4) if judged else None,
            "max_abs_z": max(abs(z) for z in zs) if zs else None,
            "rms_z": round(math.sqrt(sum(z * z for z in zs) / len(zs)), 3) if zs else None,  # about 1 when u is honest
        }
        if missing:
            out[pair]["not_judged_because"] = missing
    return out


def summarise(runs: list[dict]) -> dict:
    names = sorted({n for r in runs for n in r["p50_read_ns"]})
    spread = {}
    for n in names:
        values = [r["p50_read_ns"][n] for r in runs if n in r["p50_read_ns"]]
        if len(values) >= 2 and sum(values) > 0:
            mean = sum(values) / len(values)
            spread[n] = round((max(values) - min(values)) / mean * 100, 2)
    s1 = [r["tsc_vs_hpet_stderr_ppm_1s"] for r in runs if r["tsc_vs_hpet_stderr_ppm_1s"] is not None]
    s10 = [r["tsc_vs_hpet_stderr_ppm_10s"] for r in runs if r["tsc_vs_hpet_stderr_ppm_10s"] is not None]
    best1, best10 = (min(s1) if s1 else None), (min(s10) if s10 else None)
    worst_spread = max(spread.values()) if spread else None
    known = summarise_known_answers(runs)
    fractions = [k["fraction_within_3u"] for k in known.values() if k["fraction_within_3u"] is not None]
    return {
        "p50_spread_percent": spread,
        "known_answers": known,
        "goal_met": {
            "stderr_ppm_1s": best1 is not None and max(s1) < GOALS["stderr_ppm_1s"],
            "stderr_ppm_10s": best10 is not None and max(s10) < GOALS["stderr_ppm_10s"],
            "p50_spread_percent": worst_spread is not None and worst_spread <= GOALS["p50_spread_percent"],
            # None: not measured (no pair could be judged)
            "known_answers_within_3u": min(fractions) >= GOALS["known_answers_within_3u"] if fractions else None,
        },
    }


def timed_languages(cmd: list[str], timeout: float, log: Path | None = None) -> dict:
    """One run of the languages' ladder (clockbench-os on this host, or
    os-vm): its wall time, its status, and how many lang_clock records (one
    per API per clocksource) and languages it gave."""
    import subprocess

    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        code, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        code, out = None, (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    seconds = time.monotonic() - start
    text = log.read_text() if log is not None and log.is_file() else out
    recs = records.parse_log(text).records
    lang = [r for r in recs if r.get("type") == "lang_clock"]
    ladder = [r.get("seconds") for r in recs if r.get("type") == "lang_ladder"]
    return {"seconds": round(seconds, 1), "exit": code, "lang_clock_records": len(lang), "ladder_s": ladder[0] if ladder else None,
            "languages": sorted({r["language"] for r in lang}), "clocksources": sorted({r["clocksource"] for r in lang})}


def interval_overlap(runs: list[list[dict]]) -> dict:
    """Of every pair of runs, per (language, API, clocksource): whether the
    two p50 intervals (lang_clock's p50_ci_ns) overlap. runs: each run's
    lang_clock records. Pairs where either run has no interval are counted
    apart, not as agreeing."""
    import itertools

    by_key: dict[tuple, list] = {}
    for i, recs in enumerate(runs):
        for r in recs:
            by_key.setdefault((r.get("language"), r.get("api"), r.get("clocksource")), [None] * len(runs))[i] = r.get("p50_ci_ns")
    pairs = overlapping = no_interval = 0
    apart = []
    for key, cis in sorted(by_key.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        for a, b in itertools.combinations(range(len(runs)), 2):
            ca, cb = cis[a], cis[b]
            if not (isinstance(ca, list) and isinstance(cb, list) and len(ca) == 2 and len(cb) == 2):
                no_interval += 1
                continue
            pairs += 1
            if ca[0] <= cb[1] and cb[0] <= ca[1]:
                overlapping += 1
            else:
                apart.append({"language": key[0], "api": key[1], "clocksource": key[2], "runs": [a + 1, b + 1], "intervals": [ca, cb]})
    return {"pairs": pairs, "overlapping": overlapping, "share": round(overlapping / pairs, 4) if pairs else None,
            "pairs_without_interval": no_interval, "apart": apart}


def ladder_repeatability(program: Path, runs: int = 5, langs: str = LADDER_REPEAT_LANGS) -> dict:
    """Issue 48: the same answer run after run. `runs` back-to-back
    `clockbench-os --current-only --lang LANGS`, their intervals compared
    pair by pair; and each run's wall time and its ladder's own time."""
    import subprocess

    logs, out = [], {"runs": [], "langs": langs}
    for _ in range(runs):
        start = time.monotonic()
        p = subprocess.run([str(program), "--current-only", "--lang", langs], capture_output=True, text=True, timeout=1800)
        recs = records.parse_log(p.stdout).records
        logs.append([r for r in recs if r.get("type") == "lang_clock"])
        ladder = [r for r in recs if r.get("type") == "lang_ladder"]
        out["runs"].append({"exit": p.returncode, "seconds": round(time.monotonic() - start, 1),
                            "ladder_s": ladder[0].get("seconds") if ladder else None})
    out["overlap"] = interval_overlap(logs)
    out["goal_met"] = out["overlap"]["share"] is not None and out["overlap"]["share"] >= GOALS["ladder_repeat_overlap"]
    return out


def languages(build: Path, os_vm: bool) -> dict:
    """Issue 36's speed goals, measured: the whole ladder on the host's
    current clocksource, and os-vm with every runtime under TCG."""
    program = build / "os" / "clockbench-os"
    out = {"host_ladder": timed_languages([str(program), "--current-only"], timeout=1800)}
    print(f"bench: the languages' ladder on this host's clocksource: {out['host_ladder']['seconds']} s "
          f"(goal {GOALS['lang_ladder_host_s']:g} s; the ladder itself {out['host_ladder'].get('ladder_s')} s, "
          f"goal {GOALS['ladder_one_clocksource_s']:g} s)", flush=True)
    out["repeat"] = ladder_repeatability(program)
    o = out["repeat"]["overlap"]
    print(f"bench: {len(out['repeat']['runs'])} back-to-back ladders ({LADDER_REPEAT_LANGS}): p50 intervals overlap in "
          f"{o['overlapping']} of {o['pairs']} pairs (goal {GOALS['ladder_repeat_overlap']:.0%})", flush=True)
    if os_vm:
        log = build / "bench-os-vm.log"
        out["os_vm_tcg"] = timed_languages([sys.executable, "-m", "clockbench", "os-vm", "--accel", "tcg", "--program",
                                            str(program), "--lang-dir", str(build / "lang"), "--log", str(log)],
                                           timeout=3600, log=log)
        print(f"bench: os-vm with every language under TCG: {out['os_vm_tcg']['seconds']} s "
              f"(goal {GOALS['os_vm_every_language_tcg_s']:g} s)", flush=True)
    ladder_s = out["host_ladder"].get("ladder_s")
    out["goal_met"] = {"lang_ladder_host_s": out["host_ladder"]["exit"] == 0 and
                       out["host_ladder"]["seconds"] <= GOALS["lang_ladder_host_s"],
                       "ladder_one_clocksource_s": ladder_s is not None and ladder_s <= GOALS["ladder_one_clocksource_s"],
                       "ladder_repeat_overlap": out["repeat"]["goal_met"]}
    if os_vm:
        out["goal_met"]["os_vm_every_language_tcg_s"] = (out["os_vm_tcg"]["exit"] is not None and out["os_vm_tcg"]["exit"] < 64
                                                         and out["os_vm_tcg"]["seconds"] <= GOALS["os_vm_every_language_tcg_s"])
    return out


def fleet_of_os_hosts(work: Path, n: int = FLEET_HOSTS) -> dict:
    """n Linux hosts made from the real OS logs, through import and fleet's
    three outputs, each timed as its own process (docs/fleet.md, "Sizing")."""
    import os
    import shutil
    import subprocess

    from clockbench import paths
    from clockbench.fleet import madefleet

    fixtures = paths.ROOT / "tests" / "fixtures"
    bases = ["os-lang-host.log", "os-firecracker-host.log"]
    logs = {name: (fixtures / name).read_text() for name in bases + ["os-vm-lang-tcg.log"]}
    shutil.rmtree(work, ignore_errors=True)
    start = time.monotonic()
    hosts = madefleet.plan(n, bases, syscall_every=25, syscall_cs=("hpet", "acpi_pm"), unstable_every=100)
    madefleet.write(work / "fetched", hosts, logs, "os-vm-lang-tcg.log")
    seconds = {"make_logs": round(time.monotonic() - start, 2)}
    db = work / "fleet.db"
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "tools")}
    steps = {"import": ["import", "--store", db, work / "fetched"], "fleet_text": ["fleet", "--store", db],
             "fleet_json": ["fleet", "--store", db, "--json", work / "fleet.json"],
             "fleet_html": ["fleet", "--store", db, "--html", work / "fleet.html"]}
    import resource

    codes, cpu = {}, {}
    for step, args in steps.items():
        t0, used = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([sys.executable, "-m", "clockbench", *map(str, args)], capture_output=True, text=True, env=env,
                           timeout=600)
        seconds[step] = round(time.monotonic() - t0, 2)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU time, user and system: what the step costs whatever else the shared cores are doing
        cpu[step] = round(after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime, 2)
        codes[step] = p.returncode
    seconds["total"] = round(sum(v for k, v in seconds.items() if k != "make_logs"), 2)
    cpu["total"] = round(sum(cpu.values()), 2)
    said = json.loads((work / "fleet.json").read_text())["os_hosts"]["said"] if codes["fleet_json"] == 0 else []
    size = sum(p.stat().st_size for p in work.glob("fleet.db*"))
    return {"hosts": n, "seconds": seconds, "cpu_seconds": cpu, "exit": codes, "store_bytes": size, "store_bytes_per_run": round(size / n),
            "load_average_1min": round(os.getloadavg()[0], 2), "said": said,
            "goal_met": all(c == 0 for c in codes.values()) and seconds["total"] <= GOALS["fleet_500_os_hosts_s"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="clockbench bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="build/clockbench.elf")
    p.add_argument("--out", default="build/bench.json")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=int, default=10, help="drift window per run")
    p.add_argument("--accel", action="append", choices=["kvm", "tcg"], help="default: kvm (if usable) and tcg")
    p.add_argument("--no-lang", action="store_true", help="leave out the languages' timings (clockbench-os and os-vm)")
    p.add_argument("--no-os-vm", action="store_true", help="time the languages on this host only, not in os-vm")
    p.add_argument("--fleet-only", action="store_true", help=f"time only the fleet of {FLEET_HOSTS} Linux hosts (no QEMU)")
    p.add_argument("--no-harness", action="store_true",
                   help="leave out the languages' own harnesses beside clockbench-os (bench_harness.py runs them alone)")
    args = p.parse_args(argv)
    fleet = fleet_of_os_hosts(Path(args.out).resolve().parent / "bench-fleet")
    print(f"bench: {FLEET_HOSTS} Linux hosts through import and fleet (terminal, JSON, HTML): {fleet['seconds']['total']} s "
          f"(goal {GOALS['fleet_500_os_hosts_s']:g} s; {fleet['seconds']}; CPU {fleet['cpu_seconds']['total']} s; "
          f"load average {fleet['load_average_1min']}; "
          f"{fleet['store_bytes_per_run']} bytes a run in the store)", flush=True)
    if args.fleet_only:
        out = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(), "goals": GOALS,
               "fleet_500_os_hosts_s": fleet["seconds"]["total"], "fleet_500_os_hosts": fleet}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
        print(f"bench: wrote {args.out}")
        return 0
    accels = args.accel or (["kvm", "tcg"] if qemu.kvm_usable()[0] else ["tcg"])
    result = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(), "goals": GOALS,
              "drift_window_s": args.seconds, "accelerators": {}}
    if "kvm" not in accels:
        result["kvm_skipped"] = qemu.kvm_usable()[1]
    for accel in accels:
        runs = []
        for i in range(args.runs):
            print(f"bench: {accel} run {i + 1} of {args.runs}", flush=True)
            runs.append(one_run(accel, Path(args.kernel), args.seconds, timeout=args.seconds * 10 + 300))
        result["accelerators"][accel] = {"runs": runs, **summarise(runs)}
        for pair, k in result["accelerators"][accel]["known_answers"].items():
            if k["judged"]:
                print(f"bench: {accel} {pair}: error within 3 x uncertainty_ppm in {k['within_3u']} of {k['judged']} runs"
                      f" (largest |error|/u {k['max_abs_z']})", flush=True)
            for why in k.get("not_judged_because", []):
                print(f"bench: {accel} {pair}: known-answer coverage not measured: {why}", flush=True)
    if not args.no_lang:
        result["languages"] = languages(Path(args.kernel).resolve().parent, os_vm=not args.no_os_vm)
    if not args.no_harness:
        result["harness_agreement"] = bench_harness.measure(Path(args.kernel).resolve().parent)
    result["fleet_500_os_hosts_s"] = fleet["seconds"]["total"]
    result["fleet_500_os_hosts"] = fleet
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({**{a: v["goal_met"] for a, v in result["accelerators"].items()},
                      **({"harness_agreement": result["harness_agreement"]["goal_met"]} if "harness_agreement" in result else {})},
                     indent=2))
    print(f"bench: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where `make test`'s time went: each lane's JUnit XML (scripts/test_lanes.sh
keeps them in build/test/) summed by test file, the dearest in CPU first: the seconds a
test took (what the other lane and its own worker's neighbour left it) and
the CPU seconds it used, its own and its waited-for children's (QEMU, the
builds; tests/conftest.py records them). CPU is the figure to cut: the two
lanes share two cores, so a lane ends when the work of both is done.

Usage: scripts/test_times.py [BUILD] [--by-test]   (default build)"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

SHOWN = 25


def cases(xml: Path) -> list[tuple[str, str, float, float]]:
    """(file, test, seconds, CPU seconds) for each test (pytest's classname is the dotted module path)"""
    out = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        cpu = next((float(p.get("value", 0)) for p in case.iter("property") if p.get("name") == "cpu_s"), 0.0)
        out.append((case.get("classname", "?").replace(".", "/") + ".py", case.get("name", "?"), float(case.get("time", 0)), cpu))
    return out


def by_file(xml: Path) -> dict[str, tuple[float, int, float]]:
    """seconds, tests and CPU seconds per file"""
    out: dict[str, list] = defaultdict(lambda: [0.0, 0, 0.0])
    for name, _, secs, cpu in cases(xml):
        out[name][0] += secs
        out[name][1] += 1
        out[name][2] += cpu
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    per_test = "--by-test" in argv
    build = Path(args[0] if args else "build")
    for lane in ("quiet", "busy"):
        xml = build / "test" / f"{lane}-lane.xml"
        if not xml.is_file():
            print(f"{lane} lane: no {xml}")
            continue
        files = by_file(xml)
        total, cpu = sum(s for s, _, _ in files.values()), sum(c for _, _, c in files.values())
        print(f"== {lane} lane: {total:.0f} s of tests in {len(files)} files, {cpu:.0f} CPU s "
              f"(the busy lane's seconds are its workers' summed, each what the rest left it)")
        print("   seconds  CPU s tests  file")
        if per_test:
            rows = sorted(cases(xml), key=lambda c: -c[3])[:SHOWN]
            for name, test, secs, c in rows:
                print(f"{secs:10.1f} {c:6.1f}     1  {name}::{test}")
        else:
            for name, (secs, n, c) in sorted(files.items(), key=lambda kv: -kv[1][2])[:SHOWN]:
                print(f"{secs:10.1f} {c:6.1f} {n:5d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Where `make test`'s time went: each lane's JUnit XML (scripts/test_lanes.sh
keeps them in build/test/) summed by test file, slowest first.

Usage: scripts/test_times.py [BUILD]   (default build)"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def by_file(xml: Path) -> dict[str, tuple[float, int]]:
    """seconds and tests per file (pytest's classname is the dotted module path)"""
    out: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("classname", "?").replace(".", "/") + ".py"
        out[name][0] += float(case.get("time", 0))
        out[name][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def main(argv: list[str]) -> int:
    build = Path(argv[1] if len(argv) > 1 else "build")
    for lane in ("quiet", "busy"):
        xml = build / "test" / f"{lane}-lane.xml"
        if not xml.is_file():
            print(f"{lane} lane: no {xml}")
            continue
        files = by_file(xml)
        total = sum(s for s, _ in files.values())
        print(f"== {lane} lane: {total:.0f} s of tests in {len(files)} files (a worker's time: with 2 workers the lane takes about half)")
        for name, (secs, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:25]:
            print(f"{secs:8.1f} s {n:4d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

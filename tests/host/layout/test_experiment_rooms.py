"""No circles in experiments/ (docs/architecture.md): read from what the
linker sees, with nm on the built objects, since a symbol can cross between
files without any #include saying so.

A room is one experiment: exp_<name>.c with its exp_<name>_report,
_setup and _state halves. The table is experiments.c, main.c, summary.c and
verdict_report.c. The table knows each experiment only by its row,
`exp_<name>`; an experiment reaches the table only through what
experiment.h declares; and no two rooms need each other's symbols, directly
or round a longer circle: what two experiments share goes through a lower
layer (kernel/results.h, lib/)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from test_layers import BUILD, ROOT, find_circle

TABLE = {"experiments", "main", "summary", "verdict_report"}
ROOM = re.compile(r"^(exp_\w+?)(?:_report|_setup|_state)?$")
EXPERIMENT_H = ROOT / "experiments" / "experiment.h"


def room_of(stem: str) -> str:
    """'table', or the room's name, which is also its row's symbol (exp_rtc)."""
    if stem in TABLE:
        return "table"
    m = ROOM.match(stem)
    assert m, f"experiments/{stem}.c is neither the table's nor an experiment's (exp_<name>[_report|_setup|_state])"
    return m.group(1)


def nm_symbols(obj: Path, which: str) -> set[str]:
    """Global symbols an object defines ('--defined-only') or needs ('--undefined-only')."""
    out = subprocess.run(["nm", which, str(obj)], capture_output=True, text=True, check=True).stdout
    return {f[-1] for f in (line.split() for line in out.splitlines()) if f[-2].isupper()}


def room_needs(defined: dict[str, set[str]], needed: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    """{(room, other room): symbols the first takes from the second}, from
    each object's (by file stem) defined and needed symbols."""
    home: dict[str, set[str]] = {}
    for stem, syms in defined.items():
        for s in syms:
            home.setdefault(s, set()).add(room_of(stem))
    edges: dict[tuple[str, str], set[str]] = {}
    for stem, syms in needed.items():
        for s in syms:
            for other in home.get(s, set()) - {room_of(stem)}:
                edges.setdefault((room_of(stem), other), set()).add(s)
    return edges


def problems(edges: dict[tuple[str, str], set[str]], table_api: set[str]) -> list[str]:
    bad = []
    graph: dict[str, set[str]] = {}
    for (a, b), syms in sorted(edges.items()):
        if a == "table":
            extra = syms - {b}  # the row itself is the one symbol the table may take
            if extra:
                bad.append(f"the table takes {sorted(extra)} from {b}: it may take only the row {b}")
            continue  # the rows point down from the table, as its calls do not: not an edge of a circle
        if b == "table":
            extra = syms - table_api
            if extra:
                bad.append(f"{a} takes {sorted(extra)} from the table, which experiment.h does not declare")
        graph.setdefault(a, set()).add(b)
    circle = find_circle(graph)
    if circle:
        steps = [f"{x} needs {sorted(edges[(x, y)])} of {y}" for x, y in zip(circle, circle[1:])]
        bad.append("rooms in a circle: " + "; ".join(steps))
    return bad


def table_api() -> set[str]:
    """The functions experiment.h declares for experiments to call."""
    code = re.sub(r"/\*.*?\*/", "", EXPERIMENT_H.read_text(), flags=re.S)
    return set(re.findall(r"\b(\w+)\s*\(", code))


def test_no_two_rooms_need_each_other():
    # the objects of the sources there are (a deleted file's may linger in build/)
    objects = sorted(o for o in (BUILD / "experiments").glob("*.o") if (ROOT / "experiments" / f"{o.stem}.c").exists())
    assert objects, f"no objects under {BUILD / 'experiments'}: build the kernel first (make)"
    defined = {o.stem: nm_symbols(o, "--defined-only") for o in objects}
    needed = {o.stem: nm_symbols(o, "--undefined-only") for o in objects}
    bad = problems(room_needs(defined, needed), table_api())
    assert not bad, "\n".join(bad)


def test_rooms_include_only_their_own_headers_and_experiment_h():
    """The same at the #include lines: a room's files include their own
    room's headers, experiment.h and the layers below; the table's include
    no room's header."""
    bad = []
    for f in sorted((ROOT / "experiments").glob("*.[ch]")):
        if f.name == "experiment.h":
            continue
        mine = room_of(f.stem)
        for name in re.findall(r'^\s*#\s*include\s*"([^"/]+)"', f.read_text(), re.M):
            stem = Path(name).stem
            if name != "experiment.h" and room_of(stem) != mine and (mine != "table" or room_of(stem) != "table"):
                bad.append(f"experiments/{f.name} ({mine}) includes {name} ({room_of(stem)})")
    assert not bad, "\n".join(bad)


# The checks on made-up symbol tables: each shape they must refuse, and one they must pass.
ROWS = {"experiments": {"exp_rtc", "exp_drift"}}
API = {"experiment_chosen"}


@pytest.mark.parametrize("defined, needed, expect", [
    # the table reaching past a row into an experiment (rtc_run_mark)
    ({"exp_rtc": {"exp_rtc", "rtc_run_mark"}, "experiments": {"experiment_chosen"}},
     {"experiments": {"exp_rtc", "rtc_run_mark"}, "exp_rtc": {"experiment_chosen"}}, "the table takes"),
    # two experiments calling each other, one through its report half
    ({"exp_rtc": {"exp_rtc", "rtc_window_poll"}, "exp_drift": {"exp_drift", "drift_st"}},
     {"exp_drift": {"rtc_window_poll"}, "exp_rtc_report": {"drift_st"}}, "rooms in a circle"),
    # round three rooms
    ({"exp_a": {"a"}, "exp_b": {"b"}, "exp_c": {"c"}},
     {"exp_a": {"b"}, "exp_b": {"c"}, "exp_c_state": {"a"}}, "rooms in a circle"),
    # an experiment taking from the table what experiment.h does not declare
    ({"summary": {"summary_draw"}, "exp_cpus": {"exp_cpus"}},
     {"exp_cpus": {"summary_draw"}}, "experiment.h does not declare"),
    # the shape the tree keeps: rows down, experiment.h up, one room using another one way
    ({"experiments": {"experiment_chosen"}, "exp_rtc": {"exp_rtc"}, "exp_drift": {"exp_drift", "drift_x"}},
     {"experiments": {"exp_rtc", "exp_drift"}, "exp_rtc": {"experiment_chosen", "drift_x"}}, None),
])
def test_the_room_checks_see_each_fault(defined, needed, expect):
    bad = problems(room_needs(defined, needed), API)
    if expect is None:
        assert bad == []
    else:
        assert any(expect in b for b in bad), bad


def test_a_file_outside_any_room_is_named():
    with pytest.raises(AssertionError, match="neither the table's nor an experiment's"):
        room_of("helpers")

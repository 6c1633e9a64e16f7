"""The layout stays true (docs/architecture.md): each layer uses only the
layers below it, and no two modules use each other, directly or round a
longer circle. Read from the sources themselves: the C `#include` lines of
the image and clockbench-os, and the host tool's Python imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import BUILD, ROOT


# What each C folder may include, besides itself. clockbench-os (os/) is a
# Linux program beside the image: it shares the pure code and the CPU's
# instructions, never the image's runtime.
C_MAY_USE = {
    "lib": set(),
    "drivers": {"lib"},
    "kernel": {"lib", "drivers"},
    "experiments": {"lib", "drivers", "kernel"},
    "os": {"lib", "drivers"},
    "efi": {"lib"},  # the EFI entry: a program of its own that shares bootinfo.h's tag layout
    "tools": {"lib"},  # tools/native/: the host tool's entry points into the host library, on the pure code only
}
# Where each layer's C files are, when not in the folder of its name.
C_DIRS = {"tools": "tools/native"}
# Headers a pure file may take from the compiler (freestanding C, no libc).
PURE_SYSTEM_HEADERS = {"stdint.h", "stdbool.h", "stddef.h", "stdarg.h", "limits.h"}

# Instructions that touch hardware or machine state; arithmetic (xf.c's one
# divq) is pure and may stay.
HARDWARE_INSTRUCTIONS = re.compile(r"\b(in[bwl]?|out[bwl]?|rdtscp?|rdmsr|wrmsr|cpuid|hlt|cli|sti|lidt|lgdt|invlpg|mwait|monitor|"
                                   r"rdpid|wbinvd|mov[lq]?\s+%%?cr\d)\b")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def c_files() -> list[Path]:
    return sorted(p for d in C_MAY_USE for p in (ROOT / C_DIRS.get(d, d)).glob("*.[ch]"))


def c_includes(path: Path) -> list[tuple[str, Path | str]]:
    """(kind, target): kind '"' with the resolved path, or '<' with the name."""
    out = []
    for kind, name in INCLUDE.findall(path.read_text()):
        out.append((kind, (path.parent / name).resolve() if kind == '"' else name))
    return out


def module(path: Path) -> str:
    """foo.c and foo.h are one module: folder/foo."""
    rel = path.resolve().relative_to(ROOT)
    return str(rel.with_suffix(""))


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle in a directed graph, as the list of its nodes, or None."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def c_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for f in c_files():
        for kind, target in c_includes(f):
            if kind == '"' and module(target) != module(f):
                graph.setdefault(module(f), set()).add(module(target))
    return graph


def test_every_quoted_include_exists_inside_the_layers():
    for f in c_files():
        for kind, target in c_includes(f):
            if kind == '"':
                assert target.exists(), f"{f.relative_to(ROOT)} includes {target}, which does not exist"
                top = target.relative_to(ROOT).parts[0]
                assert top in C_MAY_USE or top == "build", f"{f.relative_to(ROOT)} includes {target.relative_to(ROOT)}"


def test_no_c_include_runs_upward():
    bad = []
    for f in c_files():
        layer = f.relative_to(ROOT).parts[0]
        for kind, target in c_includes(f):
            if kind != '"':
                continue
            rel = target.relative_to(ROOT)
            used = rel.parts[0]
            if used != layer and used not in C_MAY_USE[layer] and not str(rel).startswith("build/"):
                bad.append(f"{f.relative_to(ROOT)} includes {rel}: {layer}/ may use only {sorted(C_MAY_USE[layer]) or 'itself'}")
    assert not bad, "\n".join(bad)


def test_pure_code_includes_no_hardware_or_libc_header():
    for f in (ROOT / "lib").glob("*.[ch]"):
        text = f.read_text()
        for kind, target in c_includes(f):
            if kind == "<":
                assert target in PURE_SYSTEM_HEADERS, f"{f.relative_to(ROOT)} includes <{target}>: lib/ is freestanding"
        for asm in re.findall(r"\b(?:__asm__|asm)\b[^(]*\((.*?)\);", text, re.S):
            used = HARDWARE_INSTRUCTIONS.findall(asm)
            assert not used, f"{f.relative_to(ROOT)} executes {used}: hardware access belongs in drivers/"


def test_no_two_c_modules_use_each_other():
    circle = find_circle(c_graph())
    assert circle is None, "include circle: " + " -> ".join(circle)


def test_no_image_symbol_is_taken_from_a_layer_above():
    """What the linker sees, which the #include lines can miss: an extern
    variable or a function defined in a higher layer (kmain's globals, say)
    and used below. Read from the image's objects with nm."""
    objects = {layer: sorted((BUILD / layer).glob("*.o")) for layer in ("lib", "drivers", "kernel", "experiments")}
    assert all(objects.values()), f"no objects under {BUILD}: build the kernel first (make)"
    rank = {"lib": 0, "drivers": 1, "kernel": 2, "experiments": 3}
    defined: dict[str, set[str]] = {}
    extra = [*(BUILD / "boot").glob("*.o"), *(BUILD / "gen").glob("*.o")]  # assembly and the font: below everything
    for layer, objs in [*objects.items(), ("boot", extra)]:
        for o in objs:
            out = subprocess.run(["nm", "--defined-only", str(o)], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                defined.setdefault(line.split()[-1], set()).add(layer)
    bad = []
    for layer, objs in objects.items():
        for o in objs:
            out = subprocess.run(["nm", "--undefined-only", str(o)], capture_output=True, text=True, check=True).stdout
            for sym in (line.split()[-1] for line in out.splitlines()):
                homes = defined.get(sym, set())
                if homes and all(rank.get(h, -1) > rank[layer] for h in homes):
                    bad.append(f"{o.relative_to(BUILD)} uses {sym}, defined only in {sorted(homes)}")
    assert not bad, "\n".join(bad)


def test_the_host_library_compiles_all_of_lib():
    """lib/ is what the host tests compile: every .c in it is in
    LOGIC_SRCS, save the freestanding string functions (libc's on the host)."""
    make = (ROOT / "Makefile").read_text()
    logic = re.search(r"^LOGIC_SRCS := (.*?)(?<!\\)\n", make, re.S | re.M).group(1)
    listed = set(re.findall(r"lib/\w+\.c", logic))
    image_only = set(re.findall(r"lib/\w+\.c", re.search(r"^LIB_IMAGE_SRCS := (.*)$", make, re.M).group(1)))
    present = {str(p.relative_to(ROOT)) for p in (ROOT / "lib").glob("*.c")}
    assert present - image_only == listed, f"lib/ files not in the host library: {sorted(present - image_only - listed)}; " \
                                            f"listed but absent: {sorted(listed - present)}"


# The host tool's packages (tools/clockbench/<package>/, each __init__.py
# says what it owns), and what each may import besides itself: the base
# modules (errors, paths) under everything; reading a run's log (records);
# running machines; keeping runs (a run's record is closed by its machine's
# result); the reports on those;
# making images; many machines; the command line on top, which nothing
# imports. Each package's docstring says the same; this test keeps it so.
BASE = "base"
PY_MAY_USE = {
    BASE: set(),
    "records": {BASE},
    "machines": {BASE, "records"},
    "runs": {BASE, "records", "machines"},
    "report": {BASE, "records", "runs"},
    "release": {BASE, "records", "machines"},
    "fleet": {BASE, "records", "machines", "runs", "report", "release"},
    "cli": {BASE, "records", "machines", "runs", "report", "release", "fleet"},
}
TOOL = ROOT / "tools" / "clockbench"


def py_module_name(path: Path) -> str:
    """clockbench's dotted name of a file, without the package itself:
    errors, machines.qemu, machines (its __init__)."""
    rel = path.relative_to(TOOL).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts) or "__init__"


def py_package(module: str) -> str:
    """The package a module is in: base for the top-level modules."""
    head = module.split(".")[0]
    return head if head in PY_MAY_USE else BASE


def py_imports(path: Path) -> set[str]:
    """The tool's own modules a file imports (dotted, without "clockbench."),
    at the top or in a function, __import__("clockbench.x.y") included."""
    out = set()
    here = py_module_name(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path.relative_to(ROOT)}: a relative import; the tool imports by full name")
            if node.module and node.module.split(".")[0] == "clockbench":
                base = node.module.split(".")[1:]
                for a in node.names:
                    # from clockbench.machines import qemu: the module; from clockbench.runs.plan import X: plan
                    cand = ".".join(base + [a.name])
                    out.add(cand if (TOOL / Path(*cand.split("."))).with_suffix(".py").is_file() else ".".join(base))
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".", 1)[1] for a in node.names if a.name.startswith("clockbench."))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__" and node.args
              and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("clockbench.")):
            out.add(node.args[0].value.split(".", 1)[1])
    return {m for m in out if m} - {here}


def py_graph() -> dict[str, set[str]]:
    return {py_module_name(p): py_imports(p) for p in TOOL.rglob("*.py") if p.name != "__main__.py"}


def test_every_host_module_is_in_a_package_with_a_charter():
    """A module sits in a package of PY_MAY_USE (or is a base module), and
    each package's __init__.py says what it owns and what it may import."""
    for p in TOOL.iterdir():
        if p.is_dir() and (p / "__init__.py").is_file():
            assert p.name in PY_MAY_USE, f"package {p.name} has no row in PY_MAY_USE"
            doc = ast.get_docstring(ast.parse((p / "__init__.py").read_text())) or ""
            assert "May import:" in doc, f"{p.name}/__init__.py does not say what the package may import"
    loose = sorted(p.stem for p in TOOL.glob("*.py"))
    assert set(loose) <= {"__init__", "__main__", "errors", "paths"}, f"modules outside the packages: {loose}"


def test_no_python_import_runs_upward():
    bad = [f"{m} ({py_package(m)}) imports {d} ({py_package(d)})" for m, deps in py_graph().items() for d in deps
           if py_package(d) != py_package(m) and py_package(d) not in PY_MAY_USE[py_package(m)]]
    assert not bad, "\n".join(bad)


def test_no_two_python_modules_import_each_other():
    circle = find_circle(py_graph())
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_import_check_sees_an_upward_import(tmp_path, monkeypatch):
    """records importing the command line would be caught: the check reads
    real files, so give it some."""
    (tmp_path / "records").mkdir()
    (tmp_path / "cli").mkdir()
    (tmp_path / "records" / "records.py").write_text("from clockbench.cli import runner\n")
    (tmp_path / "cli" / "runner.py").write_text("from clockbench.records import records\n")
    monkeypatch.setattr(sys.modules[__name__], "TOOL", tmp_path)
    with pytest.raises(AssertionError, match=r"records.records \(records\) imports cli.runner \(cli\)"):
        test_no_python_import_runs_upward()
    with pytest.raises(AssertionError, match="import circle"):
        test_no_two_python_modules_import_each_other()


@pytest.mark.parametrize("graph, has_circle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
    ({"a": {"b"}, "b": {"a"}}, True),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, False),
])
def test_the_circle_finder_finds_circles(graph, has_circle):
    assert (find_circle(graph) is not None) == has_circle


def test_the_checks_see_an_upward_include(tmp_path, monkeypatch):
    """A lib/ file that included kernel/ would be caught: the check reads
    real files, so give it one."""
    lib = tmp_path / "lib"
    kernel = tmp_path / "kernel"
    lib.mkdir()
    kernel.mkdir()
    (kernel / "console.h").write_text("")
    (lib / "stats.c").write_text('#include "../kernel/console.h"\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    with pytest.raises(AssertionError, match="lib/ may use only itself"):
        test_no_c_include_runs_upward()


def test_every_test_file_name_is_unique():
    """pytest imports each test file by its own name (no __init__.py in the
    test folders, tests/host mirroring the packages): two files of one name
    anywhere under tests/ stop the whole collection."""
    seen: dict[str, list[str]] = {}
    for p in (ROOT / "tests").rglob("*.py"):
        if p.name.startswith("test_") or p.name == "conftest.py":
            seen.setdefault(p.name, []).append(str(p.relative_to(ROOT)))
    twice = {n: ps for n, ps in seen.items() if len(ps) > 1 and n != "conftest.py"}
    assert not twice, twice

"""The layout stays true (docs/architecture.md): each layer uses only the
layers below it, and no two modules use each other, directly or round a
longer circle. Read from the sources themselves: the C `#include` lines of
the image and clockbench-os, and the host tool's Python imports."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

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


BUILD = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build"))


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


# The host tool's modules by layer, lowest first: what every command reads
# (records, results, errors); the reports drawn from them; running QEMU and
# capturing; the command line on top. A module may import from its own
# layer and those below.
PY_LAYERS = [
    {"errors", "paths", "records", "results", "runinfo", "pages", "qrimage", "initramfs", "figures", "reproducible"},
    {"plots", "os_side", "report", "compare", "ci_formats", "decode", "store", "fleet", "acpi"},
    {"qemu", "vmrun", "microvm", "cloud_hypervisor", "firecracker", "snapshot", "progress", "runs", "capture", "runner", "osvm", "flash", "secureboot", "screen", "bench", "storecli", "multicapture",
     "netboot", "netboot_tree", "lab", "usbimage", "netboot_shim", "release", "rebuild"},
    {"__main__", "commands", "__init__"},
]
TOOL = ROOT / "tools" / "clockbench"


def py_imports(path: Path) -> set[str]:
    """The package's own modules a file imports, at the top or in a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                out.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif node.level == 0 and node.module and node.module.split(".")[0] == "clockbench":
                parts = node.module.split(".")
                out.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("clockbench."))
    return out


def py_graph() -> dict[str, set[str]]:
    return {p.stem: py_imports(p) - {p.stem} for p in TOOL.glob("*.py")}


def test_every_host_module_has_a_layer():
    named = set().union(*PY_LAYERS)
    present = {p.stem for p in TOOL.glob("*.py")}
    assert present <= named, f"modules with no layer in this test (add them where they belong): {sorted(present - named)}"


def test_no_python_import_runs_upward():
    rank = {m: i for i, layer in enumerate(PY_LAYERS) for m in layer}
    bad = [f"{m} (layer {rank[m]}) imports {d} (layer {rank[d]})" for m, deps in py_graph().items() for d in deps
           if d in rank and m in rank and rank[d] > rank[m]]
    assert not bad, "\n".join(bad)


def test_no_two_python_modules_import_each_other():
    circle = find_circle(py_graph())
    assert circle is None, "import circle: " + " -> ".join(circle)


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

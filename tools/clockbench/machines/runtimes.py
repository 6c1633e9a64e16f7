"""The languages' probes and runtimes for `clockbench os-vm` (issue 36): the
files each one needs inside the VM's initramfs, so that clockbench-os as
/init measures the languages there as it does on the host.

- C++, Rust and Go: the static probes alone.
- Java: a `jlink` runtime holding java.base only (built once, kept under
  build/os-vm/), with /usr/bin/java a link into it.
- Python, Node.js and Mono: the host's own runtime (Debian's /usr/bin/python3,
  /usr/bin/node, /usr/bin/mono), the shared libraries and loader `ldd` names,
  and the files the runtime opened while it ran the probe here under strace
  (Python's stdlib modules, Mono's assemblies and its config): only what the
  probe loads, so the archive stays small.

A file is placed at its own path; a link on the way (Debian's /lib ->
usr/lib, python3 -> python3.11) is kept as a link, as on the host. What
cannot be collected (no runtime, no probe, no strace) leaves that language
out with one line saying why; the VM measures the rest. The lists are kept
in build/os-vm/ and made again only when a runtime or probe changes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# The language keys clockbench-os takes (os/os_lang_parse.c) and each one's
# probe files in LANG_DIR (docs/output.md, "Language probes").
PROBES = {
    "cpp-libstdc++": ["probe-cpp-libstdcxx"],
    "cpp-libc++": ["probe-cpp-libcxx"],
    "rust": ["probe-rust"],
    "go": ["probe-go"],
    "java": ["java"],  # the folder of Probe*.class
    "python": ["probe.py"],
    "node": ["probe.js"],
    "dotnet": ["Probe.exe"],
}
LANGUAGES = tuple(PROBES)
# The runtime each managed probe runs under, as clockbench-os finds it in PATH
# (as init it has none: /usr/local/bin:/usr/bin:/bin).
RUNTIMES = {"python": "/usr/bin/python3", "node": "/usr/bin/node", "dotnet": "/usr/bin/mono"}
PACKAGES = {"java": "openjdk-17-jdk-headless", "python": "python3", "node": "nodejs", "dotnet": "mono-runtime"}
# The APIs each traced run calls (the contract's exact strings).
APIS = {
    "python": ["perf_counter_ns", "monotonic_ns", "time_ns", "process_time_ns", "perf_counter"],
    "node": ["process.hrtime.bigint", "performance.now", "Date.now"],
    "dotnet": ["Stopwatch.GetTimestamp", "DateTime.UtcNow"],
}
JRE_DIR = "opt/jre"  # where the jlink runtime goes in the VM
JLINK_FLAGS = ["--add-modules", "java.base", "--strip-debug", "--no-header-files", "--no-man-pages"]
# Where a runtime's own files are. Anything else it opened here (/proc, the
# host's /etc/passwd, CA certificates named by this host's environment) is
# the machine's or the user's, not the runtime's; a site's add-on packages
# (dist-packages, site-packages) are not the standard library the probe uses.
RUNTIME_PLACES = ("/usr/lib/", "/lib/", "/lib64/", "/usr/lib64/", "/usr/bin/", "/etc/mono/", "/etc/python3")
NOT_RUNTIME = ("/dist-packages/", "/site-packages/")
# The environment init gives its children (Linux's init/main.c: HOME and
# TERM), so that the trace here sees what the VM will load.
INIT_ENV = {"HOME": "/", "TERM": "linux", "PATH": "/usr/local/bin:/usr/bin:/bin"}
TRACE_TIMEOUT_S = 60
OPEN_CALL = re.compile(r'\b(?:open|openat|execve)\((?:AT_FDCWD, |-?\d+, )?"([^"]+)".*\)\s+=\s+\d+')


@dataclass
class Tree:
    """What goes into the archive besides /init: paths without the leading
    slash. files: archive path -> host file; links: archive path -> target;
    dirs: empty folders wanted as such."""
    files: dict[str, Path] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)

    def add_host(self, path: str | Path) -> None:
        """A host file or folder at its own path, each link on the way kept
        as a link (and what it points to added as well)."""
        parts = Path(os.path.abspath(path)).parts[1:]
        at = Path("/")
        for i, part in enumerate(parts):
            at = at / part
            name = str(at)[1:]
            if at.is_symlink():
                target = os.readlink(at)
                self.links[name] = target
                resolved = (at.parent / target) if not os.path.isabs(target) else Path(target)
                rest = Path(*parts[i + 1:]) if i + 1 < len(parts) else None
                self.add_host(Path(os.path.normpath(resolved)) / rest if rest else os.path.normpath(resolved))
                return
        if at.is_dir():
            self.dirs.add(str(at)[1:])
        elif at.is_file():
            self.files[str(at)[1:]] = at

    def add_as(self, name: str, host: Path) -> None:
        self.files[name] = host

    def merge(self, other: "Tree") -> None:
        self.files.update(other.files)
        self.links.update(other.links)
        self.dirs |= other.dirs

    def to_json(self) -> dict:
        return {"files": {k: str(v) for k, v in sorted(self.files.items())}, "links": dict(sorted(self.links.items())),
                "dirs": sorted(self.dirs)}

    @classmethod
    def from_json(cls, d: dict) -> "Tree":
        return cls({k: Path(v) for k, v in d["files"].items()}, dict(d["links"]), set(d["dirs"]))

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.files.values())


class Missing(Exception):
    """A language that cannot go into the VM; the message says why, in one line."""


def _identity(paths: list[Path]) -> str:
    """What decides whether a kept list still holds: each input's path, size
    and time of change."""
    h = hashlib.sha256()
    for p in paths:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def shared_libraries(binaries: list[Path]) -> list[str]:
    """The libraries and the loader ldd names for each ELF file."""
    out: set[str] = set()
    for b in binaries:
        try:
            r = subprocess.run(["ldd", str(b)], capture_output=True, text=True, timeout=30)
        except FileNotFoundError:
            raise Missing("ldd not found: install the 'libc-bin' package") from None
        for line in r.stdout.split("\n"):
            m = re.search(r"=>\s+(/\S+)\s+\(", line) or re.match(r"\s*(/\S+)\s+\(", line)
            if m:
                out.add(m.group(1))
    return sorted(out)


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def traced_opens(argvs: list[tuple[list[str], str]], cwd: Path) -> set[str]:
    """The files the runtime opened (and successfully) while running each
    argv with its stdin text, seen by strace -f."""
    if not shutil.which("strace"):
        raise Missing("strace not found: it lists the files the runtime loads (install 'strace', or run 'make deps')")
    seen: set[str] = set()
    out = cwd / "strace.out"
    for argv, stdin in argvs:
        out.unlink(missing_ok=True)
        try:
            r = subprocess.run(["strace", "-f", "-qq", "-o", str(out), "-e", "trace=open,openat,execve", *argv], input=stdin,
                               capture_output=True, text=True, timeout=TRACE_TIMEOUT_S, cwd=cwd, env=INIT_ENV)
        except subprocess.TimeoutExpired:
            raise Missing(f"`{' '.join(argv[:3])} ...` did not end within {TRACE_TIMEOUT_S} s under strace") from None
        if r.returncode != 0:
            last = (r.stderr.strip().split("\n") or [""])[-1]
            raise Missing(f"`{' '.join(argv)}` failed under strace (status {r.returncode}): {last[:120]}")
        for line in out.read_text(errors="replace").split("\n"):
            m = OPEN_CALL.search(line)
            if m and m.group(1).startswith("/"):
                seen.add(m.group(1))
    out.unlink(missing_ok=True)
    return seen


def _probe_commands(lang: str, run: list[str]) -> list[tuple[list[str], str]]:
    """Every kind of command the runner gives, small: the runtime loads what
    each needs (threads, pins, stdin) and nothing more."""
    apis = APIS[lang]
    cmds = [(run + ["info"], "")]
    for api in apis:
        cmds += [(run + ["cost", api, "200"], ""), (run + ["steps", api, "200"], ""), (run + ["path", api, "10"], ""),
                 (run + ["stamp", api], "\n\n")]
    # pins answered "no" as the runner answers when it cannot pin
    cmds += [(run + ["cross", apis[0], "0", "0", "4"], "no traced\n" * 8), (run + ["threads", apis[0], "2", "200"], "")]
    return cmds


def _managed(lang: str, lang_dir: Path, cache: Path) -> Tree:
    runtime = Path(RUNTIMES[lang])
    if not runtime.exists():
        raise Missing(f"no {runtime} (apt install {PACKAGES[lang]})")
    probe = lang_dir / PROBES[lang][0]
    real = Path(os.path.realpath(runtime))
    key = _identity([real, probe])
    kept = cache / f"{lang}.json"
    try:
        d = json.loads(kept.read_text())
        if d.get("key") == key:
            return Tree.from_json(d["tree"])
    except (OSError, ValueError, KeyError):
        pass
    tree = Tree()
    tree.add_host(runtime)
    opened = traced_opens(_probe_commands(lang, [str(runtime), str(probe)]), cache)
    wanted = set()
    for f in opened:
        if not f.startswith(RUNTIME_PLACES) or any(n in f for n in NOT_RUNTIME):
            continue
        p = Path(f)
        if p.is_file() or p.is_dir():
            wanted.add(f)
        # a cached module is read only beside its source (importlib checks the source's time)
        m = re.match(r"(.*)/__pycache__/([^/.]+)\.[^/]+\.pyc$", f)
        if m and Path(f"{m.group(1)}/{m.group(2)}.py").is_file():
            wanted.add(f"{m.group(1)}/{m.group(2)}.py")
    if lang == "python":
        # getpath's landmarks: without them Python warns on stderr that it
        # cannot find its libraries (and the path window must stay silent)
        r = subprocess.run([str(runtime), "-S", "-c", "import os, sysconfig; print(os.__file__); "
                            "print(sysconfig.get_path('platstdlib') + '/lib-dynload')"], capture_output=True, text=True, timeout=30)
        wanted |= {l for l in r.stdout.split("\n") if l.strip()}
    for f in sorted(wanted):
        tree.add_host(f)
    elves = [Path(os.path.realpath(f)) for f in [str(runtime), *wanted] if Path(f).is_file() and _is_elf(Path(f))]
    for lib in shared_libraries(elves):
        tree.add_host(lib)
    tmp = kept.with_name(f".{kept.name}.{os.getpid()}")  # renamed into place: an os-vm beside never reads half of it
    tmp.write_text(json.dumps({"key": key, "tree": tree.to_json()}, indent=1))
    os.replace(tmp, kept)
    return tree


def jlink_runtime(cache: Path) -> Path:
    """java.base alone as a runtime of its own, made by the JDK's jlink once
    and kept; made again when the JDK changes."""
    jlink = shutil.which("jlink")
    if not jlink:
        raise Missing("no jlink (apt install openjdk-17-jdk-headless)")
    real = Path(os.path.realpath(jlink))
    modules = real.parent.parent / "jmods" / "java.base.jmod"
    key = _identity([real] + ([modules] if modules.exists() else [])) + " " + " ".join(JLINK_FLAGS)
    jre, stamp = cache / "jre", cache / "jre.key"
    if jre.is_dir() and stamp.is_file() and stamp.read_text() == key:
        return jre
    shutil.rmtree(jre, ignore_errors=True)
    tmp = cache / ".jre-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    r = subprocess.run([str(real), *JLINK_FLAGS, "--output", str(tmp)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        last = (r.stderr.strip() or r.stdout.strip()).split("\n")[-1]
        raise Missing(f"jlink failed (status {r.returncode}): {last[:160]}")
    tmp.rename(jre)
    stamp.write_text(key)
    return jre


def _java(lang_dir: Path, cache: Path) -> Tree:
    jre = jlink_runtime(cache)
    tree = Tree()
    elves = []
    for p in sorted(jre.rglob("*")):
        name = f"{JRE_DIR}/{p.relative_to(jre)}"
        if p.is_symlink():
            tree.links[name] = os.readlink(p)
        elif p.is_dir():
            tree.dirs.add(name)
        elif p.is_file():
            tree.add_as(name, p)
            if _is_elf(p):
                elves.append(p)
    tree.links["usr/bin/java"] = f"/{JRE_DIR}/bin/java"
    for lib in shared_libraries(elves):
        if not lib.startswith(str(jre)):
            tree.add_host(lib)
    return tree


@dataclass
class Collected:
    tree: Tree
    measured: list[str]
    left_out: dict[str, str]  # language -> why


def collect(languages: list[str], lang_dir: Path, cache: Path) -> Collected:
    """The probes (under lang/ beside /init, where clockbench-os looks first)
    and the runtimes of the languages asked for; each one that cannot be
    had is left out with its reason."""
    lang_dir, cache = lang_dir.resolve(), cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    tree, measured, left_out = Tree(), [], {}
    for lang in languages:
        sources = [lang_dir / p for p in PROBES[lang]]
        missing = [s for s in sources if not s.exists()]
        if missing:
            left_out[lang] = f"no probe {missing[0]} (run 'make lang')"
            continue
        try:
            part = Tree()
            if lang == "java":
                part.merge(_java(lang_dir, cache))
            elif lang in RUNTIMES:
                part.merge(_managed(lang, lang_dir, cache))
            for s in sources:
                if s.is_dir():
                    for f in sorted(s.rglob("*")):
                        if f.is_file():
                            part.add_as(f"lang/{f.relative_to(lang_dir)}", f)
                else:
                    part.add_as(f"lang/{s.name}", s)
                    if _is_elf(s):  # a probe linked dynamically after all (libc++ without its static archive)
                        for lib in shared_libraries([s]):
                            part.add_host(lib)
        except Missing as e:
            left_out[lang] = str(e)
            continue
        tree.merge(part)
        measured.append(lang)
    return Collected(tree, measured, left_out)

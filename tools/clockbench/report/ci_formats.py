"""A run's checks for CI (docs/output.md, "CI formats"): JUnit XML and TAP
version 13, one test case per `check` record, failures and skips with their
details, and a Markdown summary to paste into an issue. Made from results
(results.py), so `run` writes them after a run and `report` from a saved
log."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from clockbench.records import figures, results
from clockbench.errors import CannotWrite

# Characters XML 1.0 cannot carry at all, even escaped: a garbled log has them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
RUN_CASE = "run ended"


def _text(v) -> str:
    return _NOT_XML.sub("\ufffd", v if isinstance(v, str) else "" if v is None else str(v))


def cases(res: dict) -> list[dict]:
    """One case per check, in log order: name (made unique: a check that
    runs once per counter gets its subject, the detail's first word, or a
    number), result "PASS"/"FAIL"/"SKIP", detail; and a last "run ended"
    case, an error, when the run crashed, ended with nothing run, or the
    log stops before the run did."""
    checks = [c for c in res.get("checks") or [] if isinstance(c, dict)]
    names = [_text(c.get("name")).strip() or "unnamed check" for c in checks]
    seen = Counter(names)
    details = [_text(c.get("detail")) for c in checks]
    wanted = []
    for name, detail in zip(names, details):
        subject = detail.split(":", 1)[0].strip() if ":" in detail else ""
        wanted.append(f"{name} ({subject})" if seen[name] > 1 and subject and len(subject) <= 24 else name)
    clash, used = Counter(wanted), Counter()
    out = []
    for c, name, detail in zip(checks, wanted, details):
        if clash[name] > 1:
            used[name] += 1
            name = f"{name} #{used[name]}"
        result = c.get("result") if c.get("result") in ("PASS", "FAIL", "SKIP") else "FAIL"
        if result == "FAIL" and c.get("result") != "FAIL":
            detail = f"the check's record is incomplete (result {c.get('result')!r}): {detail}".rstrip(": ")
        out.append({"name": name, "result": result, "detail": detail})
    code, why = results.outcome(res)
    if code not in (0, 1):
        out.append({"name": RUN_CASE, "result": "ERROR", "detail": why, "code": code})
    return out


def _machine(res: dict) -> str:
    m = res.get("machine") if isinstance(res.get("machine"), dict) else {}
    brand = " ".join(_text(m.get(k)).strip() for k in ("vendor", "brand") if m.get(k)).strip()
    return brand or "unknown machine"


def _hypervisor(res: dict) -> str:
    m = res.get("machine")
    if not isinstance(m, dict) or "hypervisor" not in m:
        return "unknown"
    return _text(m["hypervisor"]) if m["hypervisor"] else "none"


def junit(res: dict) -> str:
    cs = cases(res)
    counts = {"tests": len(cs), "failures": sum(c["result"] == "FAIL" for c in cs),
              "errors": sum(c["result"] == "ERROR" for c in cs), "skipped": sum(c["result"] == "SKIP" for c in cs)}
    attrs = {k: str(v) for k, v in counts.items()}
    top = ET.Element("testsuites", name="clockbench", **attrs)
    suite = ET.SubElement(top, "testsuite", name=f"clockbench: {_machine(res)}", **attrs)
    props = ET.SubElement(suite, "properties")
    prof = res.get("profile") if isinstance(res.get("profile"), dict) else {}
    code = results.outcome(res)[0]
    for k, v in (("build", res.get("build")), ("machine", _machine(res)), ("hypervisor", _hypervisor(res)),
                 ("profile", prof.get("name")), ("tsc_hz", prof.get("tsc_hz")), ("tsc_hz_source", prof.get("tsc_hz_source")),
                 ("source", res.get("source")), ("status", code)):
        if v is not None:
            ET.SubElement(props, "property", name=k, value=_text(v))
    for c in cs:
        case = ET.SubElement(suite, "testcase", classname="clockbench", name=c["name"])
        if c["result"] == "FAIL":
            ET.SubElement(case, "failure", message=c["detail"], type="FAIL").text = c["detail"]
        elif c["result"] == "SKIP":
            ET.SubElement(case, "skipped", message=c["detail"])
        elif c["result"] == "ERROR":
            ET.SubElement(case, "error", message=c["detail"], type=f"status {c['code']}").text = c["detail"]
        elif c["detail"]:
            ET.SubElement(case, "system-out").text = c["detail"]
    if hasattr(ET, "indent"):  # Python 3.9
        ET.indent(top)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(top, encoding="unicode") + "\n"


def _tap_words(s: str) -> str:
    """A TAP description: one line, '#' escaped (it starts a directive)."""
    return " ".join(s.split()).replace("\\", "\\\\").replace("#", "\\#")


def tap(res: dict) -> str:
    cs = cases(res)
    lines = ["TAP version 13", f"1..{len(cs)}" + ("" if cs else " # SKIP the log holds no checks")]
    for i, c in enumerate(cs, 1):
        name = _tap_words(c["name"])
        if c["result"] == "PASS":
            lines.append(f"ok {i} - {name}")
        elif c["result"] == "SKIP":
            lines.append(f"ok {i} - {name} # SKIP {_tap_words(c['detail'])}")
        else:
            lines.append(f"not ok {i} - {name}")
            lines += ["  ---", f"  message: {json.dumps(c['detail'])}",
                      f"  severity: {'fail' if c['result'] == 'FAIL' else 'error'}", "  ..."]
    return "\n".join(lines) + "\n"


def _md(s) -> str:
    """One Markdown table cell or list item: one line, '|' escaped, and no
    HTML (a detail holding "<details>" must not reshape the issue)."""
    text = " ".join(_text(s).split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|") or "-"


def markdown(res: dict) -> str:
    code, why = results.outcome(res)
    s = res.get("summary") if isinstance(res.get("summary"), dict) else {}
    cs = cases(res)
    status = _text(s.get("status")) if s else ("crashed" if code == 3 else "incomplete")
    counts = f"{s.get('pass', '?')} passed, {s.get('fail', '?')} failed, {s.get('skip', '?')} skipped" if s else \
        (f"{sum(c['result'] == 'PASS' for c in cs)} passed, {sum(c['result'] == 'FAIL' for c in cs)} failed, "
         f"{sum(c['result'] == 'SKIP' for c in cs)} skipped before it stopped")
    m = res.get("machine") if isinstance(res.get("machine"), dict) else {}
    prof = res.get("profile") if isinstance(res.get("profile"), dict) else {}
    hz = prof.get("tsc_hz")
    out = [f"### clockbench: {_md(_machine(res))}: {_md(status)} ({_md(counts)})", ""]
    if why:
        out += [f"> **{_md(why)}**", ""]
    fms = "/".join(_text(m.get(k)) for k in ("family", "model", "stepping") if m.get(k) is not None)
    out += ["| | |", "| --- | --- |",
            f"| CPU | {_md(_machine(res))}" + (f" (family/model/stepping {fms})" if fms else "") + " |",
            f"| hypervisor | {_md(_hypervisor(res))} |",
            f"| image build | {_md(res.get('build'))} |",
            f"| profile | {_md(prof.get('name'))} |",
            f"| TSC | {f'{hz:.0f} Hz' if isinstance(hz, (int, float)) and not isinstance(hz, bool) else '-'}"
            f" ({_md(prof.get('tsc_hz_source'))}) |",
            f"| exit status | {code} |", ""]
    for result, title in (("FAIL", "Failed checks"), ("ERROR", "Run")):
        bad = [c for c in cs if c["result"] == result]
        if bad:
            out += [f"**{title}:**", ""] + [f"- **{_md(c['name'])}**: {_md(c['detail'])}" for c in bad] + [""]
    skipped = [c for c in cs if c["result"] == "SKIP"]
    if skipped:
        out += ["**Skipped:**", ""] + [f"- {_md(c['name'])}: {_md(c['detail'])}" for c in skipped] + [""]
    lat = res.get("latency") if isinstance(res.get("latency"), dict) else {}
    reso = res.get("resolution") if isinstance(res.get("resolution"), dict) else {}
    if lat:
        out += ["| read | p50 | p99 | resolution |", "| --- | ---: | ---: | ---: |"]
        for name, r in lat.items():
            r = r if isinstance(r, dict) else {}
            step = reso.get(name) if isinstance(reso.get(name), dict) else {}
            # one formatting path for every output (figures.py): the read's cost as the image and the HTML say it,
            # a step in the unit its size asks for (the RTC's second as 1.00 s)
            p50 = _md(figures.target_read_cost(res, name))
            p99 = "-" if r.get("below_step") or not figures._num(r.get("p99_ns")) else figures.ns(r["p99_ns"])
            reso_text = figures.ns(step["min_step_ns"]) if figures._num(step.get("min_step_ns")) is not None else "-"
            out.append(f"| {_md(name)} | {p50} | {p99} | {reso_text} |")
        out.append("")
    if cs:
        out += [f"<details><summary>All {len(cs)} checks</summary>", "", "| result | check | detail |", "| --- | --- | --- |"]
        out += [f"| {c['result']} | {_md(c['name'])} | {_md(c['detail'])} |" for c in cs]
        out += ["", "</details>", ""]
    return "\n".join(out)


FORMATS = {"junit": junit, "tap": tap, "markdown": markdown}


def add_arguments(parser) -> None:
    """--junit FILE, --tap [FILE], --markdown FILE on a subcommand."""
    g = parser.add_argument_group("CI formats (docs/output.md)")
    g.add_argument("--junit", metavar="FILE", help="write the checks as JUnit XML: one test case per check, failures and skips "
                                                    "with their details, an error case when the run crashed or did not end")
    g.add_argument("--tap", metavar="FILE", nargs="?", const="-",
                   help="write the checks as TAP version 13, to FILE or, with no FILE (or '-'), to standard output")
    g.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (machine, verdict, failed and skipped checks) "
                                                       "to paste into an issue ('-': standard output)")


def requested(args) -> list[tuple[str, str]]:
    return [(k, getattr(args, k)) for k in FORMATS if getattr(args, k, None)]


def write_requested(args, res: dict, say=None) -> list[str]:
    """Writes every format asked for on the command line; the files written.
    CannotWrite when one cannot be."""
    say = say or (lambda s: print(s, file=sys.stderr))
    written = []
    for kind, dest in requested(args):
        text = FORMATS[kind](res)
        if dest == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
            continue
        try:
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            Path(dest).write_text(text, encoding="utf-8")
        except OSError as e:
            raise CannotWrite(f"cannot write the {kind} file {dest}: {e.strerror or e}") from None
        written.append(dest)
        say(f"clockbench: {kind} written to {dest}")
    return written

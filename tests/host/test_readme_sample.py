"""README's "Sample output" is one real run: every line of it is a line of
the fixture it names (tests/fixtures/kvm-q35.log), in the fixture's order, a
line of "..." the only stand-in for what was cut; so its figures cannot
contradict each other (the timer verdict and the summary's "Precise events"
line come from the same run)."""

from __future__ import annotations

import re

from buildpaths import ROOT

README = ROOT / "README.md"


def sample() -> tuple[str, list[str]]:
    """The fixture the section names and the sample's lines."""
    text = README.read_text()
    section = text[text.index("## Sample output"):]
    section = section[:section.index("\n## ", 1)]
    named = re.findall(r"`(tests/fixtures/[^`]+\.log)`", section)
    assert len(set(named)) == 1, f"the sample should name one fixture, not {named}"
    blocks = re.findall(r"^```\n(.*?)^```", section, re.M | re.S)
    assert len(blocks) == 1, "one code block of sample output"
    return named[0], blocks[0].splitlines()


def unmatched(lines: list[str], fixture: list[str]) -> list[tuple[int, str]]:
    """The sample lines that are not in the fixture, or not in its order."""
    missing, at = [], 0
    for n, line in enumerate(lines, 1):
        if line.strip() == "...":
            continue
        try:
            at = fixture.index(line.rstrip(), at) + 1
        except ValueError:
            missing.append((n, line))
    return missing


def test_every_sample_line_is_in_the_fixture():
    name, lines = sample()
    fixture = [l.rstrip() for l in (ROOT / name).read_text(errors="replace").splitlines()]
    assert len(lines) > 100
    bad = unmatched(lines, fixture)
    assert not bad, f"README sample lines not in {name} (in order): " + "; ".join(f"{n}: {l!r}" for n, l in bad[:10])


def test_the_two_timer_verdicts_agree():
    _, lines = sample()
    text = " ".join(" ".join(lines).split())  # the console's wraps undone
    tail = r"([\d.]+) us \((p99|the max of \d+)\)"  # the max where too few events came for a p99
    late = re.search(r"handler runs ([\d.]+) us late \(p50\), " + tail, text)
    summary = re.search(r"Precise events: \S+, waiting \w+(?: \(\w+\))?: ([\d.]+) us late \(p50\), " + tail, text)
    assert late and summary and late.groups() == summary.groups(), (late, summary)


def test_the_check_fails_on_a_line_not_there_or_out_of_order():
    fixture = ["a", "b", "c"]
    assert unmatched(["a", "...", "c"], fixture) == []
    assert unmatched(["a", "x"], fixture) == [(2, "x")]
    assert unmatched(["c", "a"], fixture) == [(2, "a")]

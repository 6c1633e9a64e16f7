"""The README's "Sample output" and docs/reading-the-report.md's "A whole
report" are one real run: every line of each is a line of the fixture it
names (tests/fixtures/kvm-q35.log), in the fixture's order, a line of "..."
the only stand-in for what was cut; so their figures cannot contradict each
other (the timer verdict and the summary's "Precise events" line come from
the same run). The front page's sample is short but keeps the verdict and
the run's SUMMARY line; the whole report keeps every section."""

from __future__ import annotations

import re

import pytest

from helpers.paths import ROOT

README = ROOT / "README.md"
WHOLE = ROOT / "docs" / "reading-the-report.md"
# (page, its section with the sample, the fewest lines the sample may have)
SAMPLES = [(README, "## Sample output", 40), (WHOLE, "## A whole report", 200)]


def sample(page=README, heading="## Sample output") -> tuple[str, list[str]]:
    """The fixture the section names and the sample's lines."""
    text = page.read_text()
    section = text[text.index(heading):]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
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


@pytest.mark.parametrize("page, heading, least", SAMPLES, ids=["README", "reading-the-report"])
def test_every_sample_line_is_in_the_fixture(page, heading, least):
    name, lines = sample(page, heading)
    fixture = [l.rstrip() for l in (ROOT / name).read_text(errors="replace").splitlines()]
    assert len(lines) > least
    bad = unmatched(lines, fixture)
    assert not bad, f"{page.name} sample lines not in {name} (in order): " + "; ".join(f"{n}: {l!r}" for n, l in bad[:10])


@pytest.mark.parametrize("page, heading, least", SAMPLES, ids=["README", "reading-the-report"])
def test_the_sample_ends_with_the_verdict_and_the_summary(page, heading, least):
    _, lines = sample(page, heading)
    assert "== Verdict ==" in lines and lines[-1].startswith("SUMMARY: ")
    verdict = lines[lines.index("== Verdict =="):]
    assert "..." not in [l.strip() for l in verdict], "the verdict is shown whole"
    assert any(l.startswith("  counter     read p50") for l in verdict), "the verdict's table"


def test_the_whole_report_holds_every_section_of_the_front_pages():
    _, short = sample(README, "## Sample output")
    _, whole = sample(WHOLE, "## A whole report")
    assert unmatched(short, whole) == [], "the front page's sample is cut from the whole report"
    heads = [l for l in whole if l.startswith("== ")]
    assert len(heads) >= 9 and set(l for l in short if l.startswith("== ")) < set(heads)


@pytest.mark.parametrize("page, heading, least", SAMPLES, ids=["README", "reading-the-report"])
def test_the_two_timer_verdicts_agree(page, heading, least):
    _, lines = sample(page, heading)
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

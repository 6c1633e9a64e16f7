"""The front page and the docs hold together: every relative link in
README.md and docs/*.md names a file that exists and, with a #fragment, a
heading of that file by GitHub's slug; README.md stays a front page, under
400 lines (issue 38: the reference lives in docs/, one file per subject)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.paths import ROOT

PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
FRONT_PAGE_MAX_LINES = 400

FENCE = re.compile(r"^ {0,3}(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")
# [text](target) and ![alt](target), the target up to a space or ')'; an optional "title" after it
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def prose_lines(text: str, blank_code: bool = True) -> list[str]:
    """The lines outside fenced code blocks, their inline code spans blanked
    unless asked to keep them (a heading's code marks count for its slug)."""
    out, fenced = [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if m:
            if fenced is None:
                fenced = m.group(1)
            elif m.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            out.append(INLINE_CODE.sub("", line) if blank_code else line)
    return out


def links(text: str) -> list[str]:
    """Every link target written in the page's prose."""
    prose = "\n".join(prose_lines(text))
    return LINK.findall(prose) + REFERENCE.findall(prose)


def unclosed_fence(text: str) -> bool:
    """Whether a fenced code block runs to the page's end (it would hide the rest)."""
    fenced = None
    for line in text.splitlines():
        m = FENCE.match(line)
        if m and fenced is None:
            fenced = m.group(1)
        elif m and m.group(1) == fenced:
            fenced = None
    return fenced is not None


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as rendered (code marks and
    emphasis dropped, a link's text kept), lower case, punctuation but '-'
    and '_' removed, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text)
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, a repeated one numbered as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(text, blank_code=False):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken(page: Path, text: str) -> list[str]:
    """The page's relative links that lead nowhere, each with the reason."""
    bad = []
    for target in links(text):
        if EXTERNAL.match(target):
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
            continue
        if fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text() if path else text):
            bad.append(f"{target}: no heading '#{fragment}' in {dest.relative_to(ROOT)}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    bad = broken(page, page.read_text())
    assert not bad, f"{page.relative_to(ROOT)}: " + "; ".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_closes(page):
    """An unclosed fence would turn the rest of the page into code, its links unchecked."""
    assert not unclosed_fence(page.read_text())


def test_the_pages_link_to_each_other():
    """The check has something to check: the front page leads into docs/."""
    targets = links((ROOT / "README.md").read_text())
    assert sum(t.startswith("docs/") for t in targets) >= 8, targets


def test_readme_is_a_front_page():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n < FRONT_PAGE_MAX_LINES, f"README.md has {n} lines: the reference belongs in docs/"


def test_the_check_fails_on_a_broken_link_or_anchor():
    page = ROOT / "README.md"
    assert broken(page, "[ok](docs/output.md) and [ok](#top) and [web](https://example.org/x.md)\n# Top\n") == []
    assert broken(page, "see [the page](docs/no-such-page.md)") == ["docs/no-such-page.md: no file docs/no-such-page.md"]
    assert len(broken(page, "see [a part](docs/output.md#no-such-heading)")) == 1
    assert len(broken(page, "[a](#missing)\n# Present\n")) == 1
    assert len(broken(page, "[ref]: docs/gone.md\n")) == 1
    assert unclosed_fence("text\n```\ncode\n") and not unclosed_fence("```\ncode\n```\n")
    # inside code a link is text, not a link
    assert broken(page, "`[x](docs/gone.md)`\n```\n[y](docs/gone.md)\n```\n") == []


def test_slugs_are_githubs():
    assert slug("How `make test` runs") == "how-make-test-runs"
    assert slug("Releases: download, check, or make one") == "releases-download-check-or-make-one"
    assert slug("A machine's tables before booting: `clockbench acpi`") == "a-machines-tables-before-booting-clockbench-acpi"
    assert slug("Bare and through the OS") == "bare-and-through-the-os"
    assert slug("The `tsc_sync` record") == "the-tsc_sync-record"
    assert anchors("# A\n## A\n```\n# B\n```\n") == {"a", "a-1"}

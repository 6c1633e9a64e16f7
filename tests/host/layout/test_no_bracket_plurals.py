"""No plural in brackets in what the image and clockbench-os print (issue
39, point 3: "No '(ies)'"): a string literal in the C sources of
experiments/, kernel/, os/, lib/ and drivers/ never holds "(s)", "(es)" or
"(ies)". A count says "1 window" or "2 windows", the way the sources
already do it: an extra %s argument, `n == 1 ? "" : "s"`.

Comments may say "(s)": only text between double quotes, outside comments,
is read."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.paths import ROOT

DIRS = ("experiments", "kernel", "os", "lib", "drivers")
BRACKETED = re.compile(r"\((?:s|es|ies)\)")


def string_literals(text: str) -> list[tuple[int, str]]:
    """(line, body) of each string literal in C source `text`, comments and
    character constants skipped; a literal's line is the line it starts on."""
    out = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c in "\"'":
            start, j = line, i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                out.append((start, text[i + 1:j]))
            i = j + 1
        else:
            if c == "\n":
                line += 1
            i += 1
    return out


def bracket_plurals(root: Path = ROOT) -> list[str]:
    """'file:line: "literal"' for each literal that holds a plural in brackets."""
    found = []
    for d in DIRS:
        for path in sorted((root / d).rglob("*.[ch]")):
            for line, body in string_literals(path.read_text(errors="replace")):
                if BRACKETED.search(body):
                    found.append(f'{path.relative_to(root)}:{line}: "{body}"')
    return found


def test_the_scanner_reads_literals_and_skips_comments():
    src = ('/* 2 window(s) */\n'
           'x = \'"\'; // a step(s)\n'
           'kprintf("%u read(s) held\\" a stop", n);\n'
           '  "%llu stretch(es)"\n'
           '"no (sic) brackets"\n')
    got = [(line, body) for line, body in string_literals(src) if BRACKETED.search(body)]
    assert got == [(3, '%u read(s) held\\" a stop'), (4, "%llu stretch(es)")]


def test_no_plural_in_brackets():
    found = bracket_plurals()
    assert not found, ("a plural in brackets; print the singular or the plural the number asks for "
                       "(an extra %s argument, n == 1 ? \"\" : \"s\"):\n  " + "\n  ".join(found))

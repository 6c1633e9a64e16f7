"""Kernel command line parsing: key=value words, parsed once."""

import ctypes

from helpers.hostlib import as_json


def parse(lib, text, *keys):
    arr = (ctypes.c_char_p * max(1, len(keys)))(*[k.encode() for k in keys])
    return as_json(lib.shim_cmdline(text.encode() if text is not None else None, arr, len(keys)))


def test_words_and_values(lib):
    r = parse(lib, "build/clockbench.elf profile=quick  duration=30\tserial=com2 safe", "profile", "duration", "serial", "safe", "missing")
    assert r["count"] == 5
    assert r["profile"] == "quick"
    assert r["duration"] == "30"
    assert r["serial"] == "com2"
    assert r["safe"] == ""  # a bare word is present with an empty value
    assert r["missing"] is None
    assert r["truncated"] is False


def test_last_occurrence_wins_and_values_may_hold_equals(lib):
    r = parse(lib, "a=1 a=2 expr=x=y", "a", "expr")
    assert r["a"] == "2"
    assert r["expr"] == "x=y"


def test_empty_and_null(lib):
    assert parse(lib, "")["count"] == 0
    assert parse(lib, None)["count"] == 0
    assert parse(lib, "   ")["count"] == 0


def test_too_many_words_is_reported_not_overrun(lib):
    text = " ".join(f"k{i}={i}" for i in range(40))
    r = parse(lib, text, "k0", "k31", "k32")
    assert r["truncated"] is True
    assert r["count"] == 32
    assert r["k0"] == "0" and r["k31"] == "31" and r["k32"] is None


def test_too_long_is_reported_and_the_cut_word_dropped(lib):
    r = parse(lib, "first=1 long=" + "x" * 600, "first", "long")
    assert r["truncated"] is True
    assert r["first"] == "1"
    assert r["long"] is None


def test_numbers(lib):
    out = ctypes.c_uint64()
    for text, value in [("0", 0), ("115200", 115200), ("0x3f8", 0x3F8), ("0X2F8", 0x2F8), ("18446744073709551615", 2**64 - 1)]:
        assert lib.shim_parse_u64(text.encode(), ctypes.byref(out)) == 1
        assert out.value == value
    for bad in ["", "0x", "12a", "-1", "18446744073709551616", "1 2"]:
        assert lib.shim_parse_u64(bad.encode(), ctypes.byref(out)) == 0, bad
    assert lib.shim_parse_u64(None, ctypes.byref(out)) == 0


def test_split_at_a_separator(lib):
    f = lib.cmdline_split
    f.restype = ctypes.c_void_p
    f.argtypes = [ctypes.c_char_p, ctypes.c_char, ctypes.c_char_p, ctypes.c_uint]
    head = ctypes.create_string_buffer(16)
    src = ctypes.create_string_buffer(b"hpet_halt:300@1")
    rest = f(src, b":", head, 16)
    assert head.value == b"hpet_halt" and ctypes.string_at(rest) == b"300@1"
    assert f(ctypes.create_string_buffer(b"nocolon"), b":", head, 16) is None
    # a head longer than the buffer is refused, not cut and accepted
    assert f(ctypes.create_string_buffer(b"waytoolongforthehead:1"), b":", head, 8) is None
    assert ctypes.string_at(f(ctypes.create_string_buffer(b":x"), b":", head, 16)) == b"x" and head.value == b""

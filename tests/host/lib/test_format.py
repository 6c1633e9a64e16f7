"""The kernel's formatted printing against Python's own % formatting (the C rules)."""

import ctypes

import pytest

C = ctypes.c_int, ctypes.c_uint, ctypes.c_long, ctypes.c_ulonglong, ctypes.c_longlong


def fmt(lib, f, *args, size=256):
    buf = ctypes.create_string_buffer(size)
    n = lib.fmt_format(buf, ctypes.c_size_t(size), f.encode(), *args)
    return buf.value.decode(), n


@pytest.mark.parametrize(
    "f,value,ctype",
    [
        ("%d", 0, ctypes.c_int),
        ("%d", -1, ctypes.c_int),
        ("%d", -2147483648, ctypes.c_int),
        ("%5d", 42, ctypes.c_int),
        ("%-5d|", 42, ctypes.c_int),
        ("%05d", -42, ctypes.c_int),
        ("%+d", 7, ctypes.c_int),
        ("% d", 7, ctypes.c_int),
        ("%.3d", 7, ctypes.c_int),
        ("%8.3d", -7, ctypes.c_int),
        ("%u", 4294967295, ctypes.c_uint),
        ("%x", 3735928559, ctypes.c_uint),
        ("%X", 3735928559, ctypes.c_uint),
        ("%08x", 0xBEEF, ctypes.c_uint),
        ("%lld", -9223372036854775808, ctypes.c_longlong),
        ("%llu", 18446744073709551615, ctypes.c_ulonglong),
        ("%llx", 18446744073709551615, ctypes.c_ulonglong),
        ("%ld", -123456789012, ctypes.c_long),
        ("%20llu", 12345678901234567890, ctypes.c_ulonglong),
    ],
)
def test_integers_match_c(lib, f, value, ctype):
    out, n = fmt(lib, f, ctype(value))
    assert out == f.replace("ll", "").replace("l", "") % value  # Python's % has no length modifiers
    assert n == len(out)


def test_length_modifiers_truncate_like_c(lib):
    assert fmt(lib, "%hhu", ctypes.c_int(0x1FF))[0] == "255"
    assert fmt(lib, "%hd", ctypes.c_int(0x18000))[0] == "-32768"
    assert fmt(lib, "%zu", ctypes.c_size_t(2**40))[0] == str(2**40)


def test_strings_chars_and_precision(lib):
    assert fmt(lib, "[%s]", ctypes.c_char_p(b"abc"))[0] == "[abc]"
    assert fmt(lib, "[%6s]", ctypes.c_char_p(b"abc"))[0] == "[   abc]"
    assert fmt(lib, "[%-6s]", ctypes.c_char_p(b"abc"))[0] == "[abc   ]"
    assert fmt(lib, "[%.2s]", ctypes.c_char_p(b"abc"))[0] == "[ab]"
    assert fmt(lib, "[%*s]", ctypes.c_int(4), ctypes.c_char_p(b"x"))[0] == "[   x]"
    assert fmt(lib, "[%.*s]", ctypes.c_int(1), ctypes.c_char_p(b"xyz"))[0] == "[x]"
    assert fmt(lib, "[%s]", ctypes.c_char_p(None))[0] == "[(null)]"
    assert fmt(lib, "%c%c", ctypes.c_int(ord("o")), ctypes.c_int(ord("k")))[0] == "ok"
    assert fmt(lib, "100%%")[0] == "100%"
    assert fmt(lib, "%p", ctypes.c_void_p(0x1000))[0] == "0x1000"


def test_output_is_cut_but_length_is_whole(lib):
    buf = ctypes.create_string_buffer(8)
    n = lib.fmt_format(buf, ctypes.c_size_t(8), b"%s", ctypes.c_char_p(b"0123456789"))
    assert n == 10
    assert buf.value == b"0123456"
    # size 0 writes nothing at all
    n = lib.fmt_format(None, ctypes.c_size_t(0), b"%d", ctypes.c_int(12345))
    assert n == 5


@pytest.mark.parametrize(
    "value,scale,show,expected",
    [
        (123456, 3, 1, "123.5"),
        (123449, 3, 1, "123.4"),
        (-123456, 3, 2, "-123.46"),
        (-4, 3, 2, "0.00"),  # rounds to zero: no minus sign
        (5, 1, 0, "1"),
        (999999, 3, 2, "1000.00"),
        (7, 0, 0, "7"),
        (1, 9, 9, "0.000000001"),
        (-9223372036854775808, 18, 3, "-9.223"),
        (9223372036854775807, 6, 6, "9223372036854.775807"),
        (100000000_000000, 6, 6, "100000000.000000"),
    ],
)
def test_fixed_point(lib, value, scale, show, expected):
    buf = ctypes.create_string_buffer(32)
    assert lib.fmt_fixed(buf, value, scale, show).decode() == expected

"""The machine-record builder: every record is one line of valid JSON, and
a member that does not fit is left out whole, never cut."""

import ctypes
import json

import pytest


RECORD_MAX_CHARS = 2048
ITEM_MAX = 21  # RECORD_ARRAY_ITEM_MAX


@pytest.fixture
def arrays(lib):
    lib.record_array_begin.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.record_array_u64.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.record_array_i64.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.record_array_end.argtypes = [ctypes.c_void_p]
    lib.record_truncated.argtypes = [ctypes.c_void_p]
    lib.record_truncated.restype = ctypes.c_bool
    lib.record_room.argtypes = [ctypes.c_void_p]
    lib.record_room.restype = ctypes.c_size_t
    return lib


def put_array(lib, r, key, values, signed=False):
    lib.record_array_begin(r, key)
    for v in values:
        (lib.record_array_i64 if signed else lib.record_array_u64)(r, v)
    lib.record_array_end(r)


def end(lib, r):
    line = lib.record_end(r).decode()
    assert line.startswith("@cb ") and line.endswith("}\n") and line.count("\n") == 1
    return json.loads(line[4:])


def test_types(lib):
    r = lib.shim_record_begin(b"demo")
    lib.record_u64(r, b"u", 2**64 - 1)
    lib.record_i64(r, b"i", -(2**63))
    lib.record_hex(r, b"h", 0xFED00000)
    lib.record_fixed(r, b"ppm", -1234567, 6)
    lib.record_fixed(r, b"ns", 250, 1)
    lib.record_bool(r, b"b", True)
    lib.record_str(r, b"s", None)
    d = end(lib, r)
    assert d == {"type": "demo", "u": 2**64 - 1, "i": -(2**63), "h": "0xfed00000", "ppm": -1.234567, "ns": 25.0, "b": True, "s": None}


def test_firmware_strings_are_escaped(lib):
    r = lib.shim_record_begin(b"demo")
    lib.record_strn(r, b"oem", b'BO"CH\\\x01\xff', 8)
    lib.record_strn(r, b"cut", b"ABCDEFGH", 4)
    d = end(lib, r)
    assert d["oem"] == 'BO"CH\\\x01\xff'
    assert d["cut"] == "ABCD"


def test_overflow_is_cut_to_valid_json_and_marked(lib):
    r = lib.shim_record_begin(b"big")
    for i in range(200):
        lib.record_str(r, f"key{i}".encode(), b"v" * 20)
    d = end(lib, r)
    assert d["truncated"] is True
    assert d["type"] == "big" and "key0" in d and "key199" not in d


def test_signed_arrays(arrays):
    lib = arrays
    r = lib.shim_record_begin(b"demo")
    put_array(lib, r, b"v", (-5, 0, 7, -(2**63), 2**63 - 1), signed=True)
    assert end(lib, r)["v"] == [-5, 0, 7, -(2**63), 2**63 - 1]


def test_an_array_that_does_not_fit_is_left_out_whole(arrays):
    """The residuals record's shape: two long arrays. The second does not
    fit; it goes, key and all, and the first keeps every value."""
    lib = arrays
    r = lib.shim_record_begin(b"residuals")
    lib.record_str(r, b"counter", b"tsc")
    put_array(lib, r, b"t_ms", range(10**9, 10**9 + 80))
    assert not lib.record_truncated(r)
    put_array(lib, r, b"resid_ps", [-(10**12) - i for i in range(80)], signed=True)
    assert lib.record_truncated(r) and lib.record_room(r) == 0
    lib.record_u64(r, b"after", 1)  # later members are left out too: the record stays a prefix
    d = end(lib, r)
    assert d == {"type": "residuals", "counter": "tsc", "t_ms": list(range(10**9, 10**9 + 80)), "truncated": True}


@pytest.mark.parametrize("n", range(60, 110))
def test_arrays_are_whole_or_absent_at_every_length(arrays, n):
    """Whatever the length, no array in the line is shorter than written."""
    lib = arrays
    r = lib.shim_record_begin(b"demo")
    put_array(lib, r, b"a", range(10**17, 10**17 + n))
    put_array(lib, r, b"b", [2**64 - 1] * 30)
    d = end(lib, r)
    assert d.get("a", None) in (None, list(range(10**17, 10**17 + n)))
    assert d.get("b", None) in (None, [2**64 - 1] * 30)
    assert d.get("truncated", False) == ("a" not in d or "b" not in d)


def test_a_long_string_is_left_out_whole(arrays):
    lib = arrays
    r = lib.shim_record_begin(b"demo")
    lib.record_str(r, b"short", b"kept")
    lib.record_str(r, b"long", b"x" * 3000)
    d = end(lib, r)
    assert d == {"type": "demo", "short": "kept", "truncated": True}


def test_room_predicts_what_fits(arrays):
    """A caller sizing a part from record_room() never gets a cut record."""
    lib = arrays
    r = lib.shim_record_begin(b"histogram")
    lib.record_str(r, b"counter", b"hpet")
    room = lib.record_room(r)
    assert 0 < room < RECORD_MAX_CHARS
    n = (room - len(b"bins") - 6) // ITEM_MAX
    put_array(lib, r, b"bins", [2**64 - 1] * n)
    assert not lib.record_truncated(r)
    line = lib.record_end(r).decode()
    assert len(line) < RECORD_MAX_CHARS and json.loads(line[4:])["bins"] == [2**64 - 1] * n


def test_room_is_exact(arrays):
    """record_room() bytes fit; one more does not."""
    lib = arrays
    for extra, fits in ((0, True), (1, False)):
        r = lib.shim_record_begin(b"demo")
        room = lib.record_room(r)
        value = b"v" * (room - len(b',"s":""') + extra)
        lib.record_str(r, b"s", value)
        assert lib.record_truncated(r) == (not fits)
        assert ("s" in end(lib, r)) == fits

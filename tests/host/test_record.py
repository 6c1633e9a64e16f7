"""The machine-record builder: every record is one line of valid JSON."""

import json

from lib import as_json


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


def test_signed_arrays(lib):
    import ctypes

    lib.record_array_begin.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.record_array_i64.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.record_array_end.argtypes = [ctypes.c_void_p]
    r = lib.shim_record_begin(b"demo")
    lib.record_array_begin(r, b"v")
    for v in (-5, 0, 7, -(2**63), 2**63 - 1):
        lib.record_array_i64(r, v)
    lib.record_array_end(r)
    assert end(lib, r)["v"] == [-5, 0, 7, -(2**63), 2**63 - 1]

"""ctypes access to the host build of the kernel's pure logic."""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB_PATH = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build")) / "host" / "libclockbench_host.so"


def load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(LIB_PATH))
    lib.fmt_format.restype = ctypes.c_int
    lib.fmt_fixed.restype = ctypes.c_char_p
    lib.fmt_fixed.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_uint, ctypes.c_uint]
    for name in ("shim_cmdline", "shim_bootinfo", "shim_cpuid_decode", "shim_acpi"):
        getattr(lib, name).restype = ctypes.c_char_p
    lib.shim_bootinfo.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32]
    lib.shim_acpi.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p]
    lib.shim_counter_delta.restype = ctypes.c_uint64
    lib.shim_counter_delta.argtypes = [ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint64]
    lib.shim_parse_u64.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
    lib.shim_record_begin.restype = ctypes.c_void_p
    lib.shim_record_begin.argtypes = [ctypes.c_char_p]
    lib.record_end.restype = ctypes.c_char_p
    lib.record_end.argtypes = [ctypes.c_void_p]
    for name, t in (("record_u64", ctypes.c_uint64), ("record_i64", ctypes.c_int64), ("record_hex", ctypes.c_uint64)):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_char_p, t]
    lib.record_str.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.record_strn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.record_fixed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_uint]
    lib.record_bool.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool]
    return lib


def as_json(raw: bytes) -> dict:
    return json.loads(raw.decode())

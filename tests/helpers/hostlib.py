"""ctypes access to the host build of the kernel's pure logic."""

from __future__ import annotations

import ctypes
import json
from fractions import Fraction

from helpers.paths import BUILD

LIB_PATH = BUILD / "host" / "libclockbench_host.so"


class XF(ctypes.Structure):
    _fields_ = [("m", ctypes.c_uint64), ("e", ctypes.c_int32), ("neg", ctypes.c_bool)]


def xf_value(v) -> Fraction:
    """An xf (struct, or [m, e + 2^32, neg] from a shim record) as an exact Fraction."""
    if isinstance(v, list):
        m, e, neg = v[0], v[1] - (1 << 32), v[2]
    else:
        m, e, neg = v.m, v.e, v.neg
    f = Fraction(m) * (Fraction(2) ** e)
    return -f if neg else f


class LangRow(ctypes.Structure):
    """os/os_lang_parse.h's struct lang_row, field for field."""
    _fields_ = [("name", ctypes.c_char * 40), ("heading", ctypes.c_bool), ("cost_known", ctypes.c_bool), ("p50_ns", ctypes.c_double),
                ("method", ctypes.c_char), ("below_step", ctypes.c_bool), ("step_known", ctypes.c_bool), ("least_step_ns", ctypes.c_double),
                ("claim_known", ctypes.c_bool), ("claim_ns", ctypes.c_double), ("path_known", ctypes.c_bool),
                ("syscalls_per_1000", ctypes.c_double), ("via_syscall", ctypes.c_bool), ("clock", ctypes.c_char * 24)]


def load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(LIB_PATH))
    lib.fmt_format.restype = ctypes.c_int
    lib.fmt_fixed.restype = ctypes.c_char_p
    lib.fmt_fixed.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_uint, ctypes.c_uint]
    for name in ("shim_cmdline", "shim_bootinfo", "shim_cpuid_decode", "shim_acpi"):
        getattr(lib, name).restype = ctypes.c_char_p
    lib.shim_bootinfo.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32]
    lib.shim_acpi_record.restype = ctypes.c_char_p
    lib.shim_acpi_record.argtypes = [ctypes.c_bool]
    lib.shim_acpi_message.restype = ctypes.c_char_p
    lib.shim_acpi_message.argtypes = [ctypes.c_int]
    lib.shim_acpi.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p]
    lib.shim_counter_delta.restype = ctypes.c_uint64
    lib.shim_counter_delta.argtypes = [ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint64]
    for name in ("xf_from_u64", "xf_from_i64", "xf_add", "xf_sub", "xf_mul", "xf_div", "xf_sqrt", "xf_neg", "xf_abs", "xf_pow10", "shim_xf_from_parts"):
        getattr(lib, name).restype = XF
    lib.xf_from_u64.argtypes = [ctypes.c_uint64]
    lib.xf_from_i64.argtypes = [ctypes.c_int64]
    lib.shim_xf_from_parts.argtypes = [ctypes.c_int64, ctypes.c_uint64]
    for name in ("xf_add", "xf_sub", "xf_mul", "xf_div"):
        getattr(lib, name).argtypes = [XF, XF]
    for name in ("xf_sqrt", "xf_neg", "xf_abs"):
        getattr(lib, name).argtypes = [XF]
    lib.xf_pow10.argtypes = [ctypes.c_uint]
    lib.xf_cmp.argtypes = [XF, XF]
    lib.xf_to_fixed.restype = ctypes.c_int64
    lib.xf_to_fixed.argtypes = [XF, ctypes.c_uint]
    lib.shim_summary.restype = ctypes.c_char_p
    lib.shim_summary.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.shim_histogram.restype = ctypes.c_size_t
    lib.shim_histogram.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.shim_fit.restype = ctypes.c_char_p
    lib.shim_fit.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), ctypes.c_uint32]
    u64, u32, i64 = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int64
    series = [ctypes.POINTER(i64), ctypes.POINTER(i64), ctypes.POINTER(u32), u32]  # x, y, seg, n
    for name in ("shim_unwrap_step", "shim_segfit", "shim_segfit_find_step", "shim_subwindows_fit", "shim_freq_uncertainty"):
        getattr(lib, name).restype = ctypes.c_char_p
    lib.shim_unwrap_step.argtypes = [u64, u64, u64, u32, u64] + [u64] * 6
    lib.shim_unwrap_limit_tsc.restype = u64
    lib.shim_unwrap_limit_tsc.argtypes = [u64, u64, u64, u32, u64]
    lib.shim_unwrap_expected_ticks.restype = u64
    lib.shim_unwrap_expected_ticks.argtypes = [u64, u64, u64]
    lib.shim_segfit.argtypes = series + [u32]
    lib.shim_segfit_residuals.restype = ctypes.c_bool
    lib.shim_segfit_residuals.argtypes = series + [ctypes.POINTER(XF)]
    lib.shim_segfit_find_step.argtypes = series + [XF, u32]
    lib.shim_subwindows_fit.argtypes = series + [i64, u32, u32]
    lib.shim_freq_uncertainty.argtypes = series + [XF, u32]
    lib.shim_parse_u64.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
    lib.shim_latency.restype = ctypes.c_char_p
    lib.shim_latency.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.c_int64]
    lib.shim_pvclock_ns.restype = u64
    lib.shim_pvclock_ns.argtypes = [u64, u64, u64, u32, ctypes.c_int8]
    lib.shim_hv_ref_time.restype = u64
    lib.shim_hv_ref_time.argtypes = [u64, u64, ctypes.c_int64]
    lib.shim_os_choice.restype = ctypes.c_char_p
    lib.shim_os_choice.argtypes = [u32]
    lib.shim_deadline_erratum.restype = ctypes.c_char_p
    lib.shim_deadline_erratum.argtypes = [u32, u32, u32]
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
    # rtc_fit.c
    u8 = ctypes.c_uint8
    lib.shim_rtc_decode.restype = ctypes.c_char_p
    lib.shim_rtc_decode.argtypes = [u8] * 7
    lib.shim_rtc_fit.restype = ctypes.c_char_p
    lib.shim_rtc_fit.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.POINTER(u32), u32, u64]
    lib.shim_rtc_jump.restype = ctypes.c_char_p
    lib.shim_rtc_jump.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.POINTER(u32), u32, u64, u64, u64, u64, u64]
    lib.shim_stop_judge.restype = ctypes.c_int
    lib.shim_stop_judge.argtypes = [ctypes.c_int64, u64, ctypes.c_int64, u64]
    # os/os_analysis.c
    lib.shim_os_sequence.restype = ctypes.c_char_p
    lib.shim_os_sequence.argtypes = [ctypes.POINTER(u64), ctypes.c_size_t, ctypes.c_uint]
    lib.shim_os_sequence_rle.restype = ctypes.c_char_p
    lib.shim_os_sequence_rle.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.c_size_t]
    lib.shim_os_claim.restype = ctypes.c_char_p
    lib.shim_os_claim.argtypes = [ctypes.c_char_p]
    # os/os_lang_parse.c
    cp = ctypes.c_char_p
    lib.shim_lang_parse.restype = cp
    lib.shim_lang_parse.argtypes = [cp, cp, cp]
    lib.shim_lang_info.restype = cp
    lib.shim_lang_info.argtypes = [ctypes.c_int, cp]
    dp = ctypes.POINTER(ctypes.c_double)
    lib.shim_lang_rounds.restype = cp
    lib.shim_lang_rounds.argtypes = [dp, dp, dp, dp, dp, ctypes.c_int, ctypes.c_double, ctypes.c_double]
    lib.shim_lang_rounds_rank.restype = cp
    lib.shim_lang_rounds_rank.argtypes = [ctypes.c_int]
    lib.shim_lang_trace.restype = cp
    lib.shim_lang_trace.argtypes = [ctypes.POINTER(ctypes.c_long), ctypes.POINTER(u64), ctypes.c_size_t,
                                    ctypes.POINTER(ctypes.c_long), ctypes.POINTER(u64), ctypes.c_size_t,
                                    ctypes.c_bool, u64, ctypes.c_uint, ctypes.c_bool, ctypes.c_bool]
    lib.lang_bracket_round.restype = ctypes.c_uint
    lib.lang_bracket_round.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(u64), u64, u64, u64]
    lib.lang_bracket_alike.restype = ctypes.c_uint
    lib.lang_bracket_alike.argtypes = [ctypes.POINTER(u64), ctypes.c_int, u64]
    lib.lang_pick.restype = ctypes.c_bool
    lib.lang_pick.argtypes = [cp, ctypes.POINTER(ctypes.c_bool), cp, ctypes.c_size_t]
    lib.lang_keys_text.restype = cp
    lib.lang_ladder_format.restype = ctypes.c_size_t
    lib.lang_ladder_format.argtypes = [ctypes.POINTER(LangRow), ctypes.c_int, ctypes.c_double, cp, ctypes.c_size_t]
    lib.lang_claim_finer.restype = ctypes.c_bool
    lib.lang_claim_finer.argtypes = [ctypes.POINTER(LangRow)]
    return lib


def as_json(raw: bytes) -> dict:
    return json.loads(raw.decode())


def series(xs, ys, segs=None):
    """(x, y, seg, n) ctypes arguments for the segmented-fit shims; one segment when segs is None."""
    n = len(xs)
    segs = [0] * n if segs is None else segs
    return ((ctypes.c_int64 * n)(*xs), (ctypes.c_int64 * n)(*ys), (ctypes.c_uint32 * n)(*segs), n)

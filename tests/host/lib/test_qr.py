"""The QR encoder against a real decoder (zbarimg) over many payload
lengths, both error-correction levels and every version the image uses."""

import ctypes
import random

import pytest

from helpers.tool import not_installed
from clockbench.records import qrimage


def encode(lib, payload: bytes, ecc: int):
    out = (ctypes.c_uint8 * (97 * 97))()
    size = ctypes.c_int()
    lib.shim_qr.restype = ctypes.c_int
    lib.shim_qr.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    version = lib.shim_qr(payload, len(payload), ecc, out, ctypes.byref(size))
    n = size.value
    return version, [[out[y * n + x] for x in range(n)] for y in range(n)]


@pytest.fixture(scope="module")
def zbar():
    if not qrimage.zbar_available():
        not_installed("zbarimg is missing under CI=true: `make deps` installs it (Debian package zbar-tools)",
                      "zbarimg not installed (Debian package zbar-tools)")


LENGTHS = [1, 2, 7, 17, 25, 32, 53, 78, 100, 134, 154, 192, 230, 271, 321, 367, 425, 458, 520, 586, 644, 718, 792, 858]


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("ecc", [0, 1], ids=["L", "M"])
def test_round_trip_through_zbar(lib, zbar, tmp_path, length, ecc):
    rng = random.Random(length * 2 + ecc)
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789;=.,:-_ "
    payload = bytes(rng.choice(alphabet) for _ in range(length))
    version, rows = encode(lib, payload, ecc)
    if version == 0:
        # version 20 holds 858 bytes at level L and 666 at M (ISO/IEC 18004, Table 7)
        assert ecc == 1 and length > 666
        return
    assert len(rows) == 4 * version + 17
    png = tmp_path / "qr.png"
    png.write_bytes(qrimage.png_bytes(rows))
    assert qrimage.decode_image(png) == [payload], f"version {version}"


def test_smallest_version_is_chosen(lib):
    # byte-mode capacity at level L: version 1 holds 17 bytes, version 2 holds 32 (ISO/IEC 18004, Table 7)
    assert encode(lib, b"x" * 17, 0)[0] == 1
    assert encode(lib, b"x" * 18, 0)[0] == 2
    assert encode(lib, b"x" * 32, 0)[0] == 2
    assert encode(lib, b"x" * 14, 1)[0] == 1 and encode(lib, b"x" * 15, 1)[0] == 2
    assert encode(lib, b"x" * 2000, 0)[0] == 0  # beyond version 20: refused


def test_the_text_screens_largest_code_holds_154_bytes(lib):
    # experiments/summary.c cuts the payload to QR_TEXT_CAPACITY (154) for an 80x25
    # text screen, where version 7 (45 modules) is the largest that fits
    assert encode(lib, b"x" * 154, 0)[0] == 7
    assert encode(lib, b"x" * 155, 0)[0] == 8
    assert encode(lib, b"x" * 122, 1)[0] == 7 and encode(lib, b"x" * 123, 1)[0] == 8

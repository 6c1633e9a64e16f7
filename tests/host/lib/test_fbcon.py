"""The framebuffer console's drawing over several pixel formats: pixel
packing against the mode's channel positions and sizes, and a glyph drawn
into a buffer, compared bit for bit with the font table."""

import ctypes

import pytest


class FbMode(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("pitch", ctypes.c_uint32), ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("bpp", ctypes.c_uint8), ("red_pos", ctypes.c_uint8), ("red_size", ctypes.c_uint8), ("green_pos", ctypes.c_uint8),
                ("green_size", ctypes.c_uint8), ("blue_pos", ctypes.c_uint8), ("blue_size", ctypes.c_uint8)]


FORMATS = {
    "xrgb8888": (32, 16, 8, 8, 8, 0, 8),
    "xbgr8888": (32, 0, 8, 8, 8, 16, 8),
    "rgb888": (24, 16, 8, 8, 8, 0, 8),
    "rgb565": (16, 11, 5, 5, 6, 0, 5),
    "rgb555": (16, 10, 5, 5, 5, 0, 5),
}


def mode(name, width=64, height=32):
    bpp, rp, rs, gp, gs, bp, bs = FORMATS[name]
    return FbMode(0, width * bpp // 8, width, height, bpp, rp, rs, gp, gs, bp, bs)


def bind(lib):
    lib.fbcon_pixel.restype = ctypes.c_uint32
    lib.fbcon_pixel.argtypes = [ctypes.POINTER(FbMode), ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint8]
    lib.fbcon_draw_glyph.argtypes = [ctypes.POINTER(FbMode), ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p,
                                     ctypes.c_uint32, ctypes.c_uint32]
    return (ctypes.c_uint8 * 16 * 128).in_dll(lib, "fbcon_font")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_pixel_packing(lib, name):
    bind(lib)
    m = mode(name)
    bpp, rp, rs, gp, gs, bp, bs = FORMATS[name]
    for r, g, b in [(255, 0, 0), (0, 255, 0), (0, 0, 255), (0xC0, 0xC0, 0xC0), (0, 0, 0), (0x12, 0x34, 0x56)]:
        want = (r >> (8 - rs)) << rp | (g >> (8 - gs)) << gp | (b >> (8 - bs)) << bp
        assert lib.fbcon_pixel(ctypes.byref(m), r, g, b) == want


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_glyph_drawn_bit_for_bit(lib, name):
    font = bind(lib)
    m = mode(name)
    size = m.pitch * m.height
    buf = (ctypes.c_uint8 * size)(*([0xEE] * size))
    fg, bg = lib.fbcon_pixel(ctypes.byref(m), 255, 255, 255), lib.fbcon_pixel(ctypes.byref(m), 0, 0, 0)
    glyph = font[ord("A")]
    assert any(glyph), "the font has an 'A'"
    lib.fbcon_draw_glyph(ctypes.byref(m), buf, 2, 1, glyph, fg, bg)  # cell (2, 1): pixels x 16..23, y 16..31
    bytes_pp = m.bpp // 8
    for y in range(m.height):
        for x in range(m.width):
            px = int.from_bytes(bytes(buf[y * m.pitch + x * bytes_pp:(y + 1) * m.pitch][:bytes_pp]), "little")
            if 16 <= x < 24 and 16 <= y < 32:
                on = glyph[y - 16] & (0x80 >> (x - 16))
                assert px == (fg if on else bg), (x, y)
            else:
                assert px == int.from_bytes(b"\xee" * bytes_pp, "little"), "drawn outside the cell"


def test_font_covers_printable_ascii(lib):
    font = bind(lib)
    blank = [c for c in range(0x21, 0x7F) if not any(font[c])]
    assert not blank, [chr(c) for c in blank]


class Grid(ctypes.Structure):
    _fields_ = [("cells", ctypes.c_void_p), ("cols", ctypes.c_uint32), ("rows", ctypes.c_uint32), ("col", ctypes.c_uint32),
                ("row", ctypes.c_uint32), ("width", ctypes.c_uint32), ("history", ctypes.c_void_p), ("hist_cap", ctypes.c_uint32),
                ("hist_count", ctypes.c_uint32), ("hist_next", ctypes.c_uint32)]


def test_text_grid_wraps_and_scrolls(lib):
    lib.textgrid_putc.restype = ctypes.c_bool
    lib.textgrid_putc.argtypes = [ctypes.POINTER(Grid), ctypes.c_char]
    cells = (ctypes.c_uint8 * 12)()
    g = Grid()
    lib.textgrid_init(ctypes.byref(g), cells, 4, 3)
    text = lambda: [bytes(cells[r * 4:(r + 1) * 4]).decode() for r in range(3)]
    for ch in b"ab\ncdefg":
        lib.textgrid_putc(ctypes.byref(g), bytes([ch]))
    assert text() == ["ab  ", "cdef", "g   "]  # "cdefg" wrapped at 4 columns
    assert lib.textgrid_putc(ctypes.byref(g), b"\n")  # a completed line: time to consider a flush
    assert text() == ["cdef", "g   ", "    "]  # scrolled up one row
    lib.textgrid_putc(ctypes.byref(g), b"x")
    lib.textgrid_putc(ctypes.byref(g), b"\r")
    lib.textgrid_putc(ctypes.byref(g), b"y")
    assert text()[2] == "y   "


def grid(lib, cols, rows, history_lines=0):
    lib.textgrid_putc.restype = ctypes.c_bool
    lib.textgrid_putc.argtypes = [ctypes.POINTER(Grid), ctypes.c_char]
    lib.textgrid_history_line.restype = ctypes.POINTER(ctypes.c_uint8)
    lib.textgrid_history_count.restype = ctypes.c_uint32
    lib.textgrid_clear.argtypes = [ctypes.POINTER(Grid), ctypes.c_bool]
    cells = (ctypes.c_uint8 * (cols * rows))()
    hist = (ctypes.c_uint8 * (cols * max(history_lines, 1)))()
    g = Grid()
    lib.textgrid_init(ctypes.byref(g), cells, cols, rows)
    if history_lines:
        lib.textgrid_set_history(ctypes.byref(g), hist, history_lines)
    g._keep = (cells, hist)

    def write(text: str):
        for ch in text.encode():
            lib.textgrid_putc(ctypes.byref(g), bytes([ch]))

    def screen():
        return [bytes(cells[r * cols:(r + 1) * cols]).decode("latin-1") for r in range(rows)]

    def history():
        n = lib.textgrid_history_count(ctypes.byref(g))
        return [bytes(lib.textgrid_history_line(ctypes.byref(g), i)[:cols]).decode("latin-1").rstrip() for i in range(n)]

    return g, write, screen, history


def test_text_grid_wraps_at_a_space_in_the_second_half(lib):
    g, write, screen, _ = grid(lib, 10, 3)
    write("one two three")
    assert screen() == ["one two   ", "three     ", " " * 10]  # "three" moved down whole
    g, write, screen, _ = grid(lib, 10, 3)
    write("a verylongword")
    assert screen() == ["a verylong", "word      ", " " * 10]  # the space is in the first half: cut


def test_text_grid_keeps_the_columns_right_of_its_width(lib):
    g, write, screen, _ = grid(lib, 10, 3)
    cells = g._keep[0]
    for r in range(3):
        cells[r * 10 + 9] = ord("#")
    lib.textgrid_set_width(ctypes.byref(g), 6)
    write("abc def ghi\njkl\nmno\n")
    # "abc def ghi" wrapped at 6 columns, scrolled: only the first 6 columns moved, the '#'s stayed
    assert screen() == ["jkl      #", "mno      #", "         #"], screen()


def test_text_grid_history_keeps_scrolled_and_cleared_lines_in_order(lib):
    g, write, screen, history = grid(lib, 8, 3, history_lines=4)
    write("l1\nl2\nl3\nl4\n")  # l1 and l2 scroll off
    assert history() == ["l1", "l2"]
    write("l5")
    lib.textgrid_clear(ctypes.byref(g), True)  # l3, l4, l5 kept; the ring holds the last 4
    assert history() == ["l2", "l3", "l4", "l5"]
    assert screen() == [" " * 8] * 3
    write("x\n")
    lib.textgrid_clear(ctypes.byref(g), False)  # a wipe keeps nothing
    assert history() == ["l2", "l3", "l4", "l5"]

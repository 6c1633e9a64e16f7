/* QR Code encoder (see qr.h). Section numbers: ISO/IEC 18004:2015. */
#include "qr.h"

#include "string.h"

/* Table 9: error correction codewords per block and number of blocks, for
   versions 1..20 (index 0 unused), levels L and M. */
static const uint8_t ECC_PER_BLOCK[2][QR_MAX_VERSION + 1] = {
    {0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28},
    {0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26},
};
static const uint8_t NUM_BLOCKS[2][QR_MAX_VERSION + 1] = {
    {0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8},
    {0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16},
};
/* 7.9.1: the two error-correction level bits of the format information. */
static const uint8_t ECC_FORMAT_BITS[2] = {1, 0};

#define MAX_CODEWORDS 1000 /* version 20 has 1085 raw codewords: bound below */
#define MAX_RAW 1100

/* Modules left for data and error correction after the function patterns
   (7.4: finder, separators, timing, alignment, format and version info). */
static int raw_data_modules(int ver)
{
    int result = (16 * ver + 128) * ver + 64;
    if (ver >= 2) {
        int align = ver / 7 + 2;
        result -= (25 * align - 10) * align - 55;
        if (ver >= 7)
            result -= 36;
    }
    return result;
}

static int data_codewords(int ver, enum qr_ecc e) { return raw_data_modules(ver) / 8 - ECC_PER_BLOCK[e][ver] * NUM_BLOCKS[e][ver]; }

/* GF(256) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (7.5.2), by tables
   of powers of alpha = 2 and their logarithms, made at the first use: a
   product bit by bit was a third of an encode's instructions. */
static uint8_t gf_exp[510], gf_log[256];

static void gf_tables(void)
{
    if (gf_exp[0])
        return;
    int v = 1;
    for (int i = 0; i < 255; i++) {
        gf_exp[i] = gf_exp[i + 255] = (uint8_t)v;
        gf_log[v] = (uint8_t)i;
        v = (v << 1) ^ ((v >> 7) * 0x11D);
    }
}

static uint8_t gf_mul(uint8_t a, uint8_t b) { return a && b ? gf_exp[gf_log[a] + gf_log[b]] : 0; }

/* The generator polynomial of the given degree, roots alpha^0..alpha^(d-1). */
static void rs_generator(int degree, uint8_t *gen)
{
    memset(gen, 0, (size_t)degree);
    gen[degree - 1] = 1;
    uint8_t root = 1;
    for (int i = 0; i < degree; i++) {
        for (int j = 0; j < degree; j++) {
            gen[j] = gf_mul(gen[j], root);
            if (j + 1 < degree)
                gen[j] ^= gen[j + 1];
        }
        root = gf_mul(root, 0x02);
    }
}

static void rs_remainder(const uint8_t *data, int len, const uint8_t *gen, int degree, uint8_t *out)
{
    memset(out, 0, (size_t)degree);
    for (int i = 0; i < len; i++) {
        uint8_t factor = data[i] ^ out[0];
        memmove(out, out + 1, (size_t)degree - 1);
        out[degree - 1] = 0;
        for (int j = 0; j < degree; j++)
            out[j] ^= gf_mul(gen[j], factor);
    }
}

struct builder {
    struct qr_code *qr;
    uint8_t is_function[QR_MAX_SIZE][QR_MAX_SIZE];
};

static void set_function(struct builder *b, int x, int y, bool dark)
{
    b->qr->modules[y][x] = dark;
    b->is_function[y][x] = 1;
}

static void finder(struct builder *b, int cx, int cy)
{
    for (int dy = -4; dy <= 4; dy++)
        for (int dx = -4; dx <= 4; dx++) {
            int x = cx + dx, y = cy + dy;
            if (x < 0 || y < 0 || x >= b->qr->size || y >= b->qr->size)
                continue;
            int d = dx < 0 ? -dx : dx, e = dy < 0 ? -dy : dy;
            int dist = d > e ? d : e;
            set_function(b, x, y, dist != 2 && dist != 4);
        }
}

static void alignment(struct builder *b, int cx, int cy)
{
    for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++) {
            int d = dx < 0 ? -dx : dx, e = dy < 0 ? -dy : dy;
            set_function(b, cx + dx, cy + dy, (d > e ? d : e) != 1);
        }
}

/* 6.3.6 and Annex E: alignment pattern centres. */
static int alignment_positions(int ver, int *pos)
{
    if (ver == 1)
        return 0;
    int n = ver / 7 + 2, size = ver * 4 + 17;
    int step = (ver * 4 + n * 2 + 1) / (n * 2 - 2) * 2;
    pos[0] = 6;
    for (int i = n - 1, p = size - 7; i >= 1; i--, p -= step)
        pos[i] = p;
    return n;
}

static void format_bits(struct builder *b, enum qr_ecc e, int mask)
{
    int data = ECC_FORMAT_BITS[e] << 3 | mask, rem = data;
    for (int i = 0; i < 10; i++)
        rem = (rem << 1) ^ ((rem >> 9) * 0x537);
    int bits = (data << 10 | rem) ^ 0x5412; /* 7.9.1 */
    int size = b->qr->size;
    for (int i = 0; i <= 5; i++)
        set_function(b, 8, i, (bits >> i) & 1);
    set_function(b, 8, 7, (bits >> 6) & 1);
    set_function(b, 8, 8, (bits >> 7) & 1);
    set_function(b, 7, 8, (bits >> 8) & 1);
    for (int i = 9; i < 15; i++)
        set_function(b, 14 - i, 8, (bits >> i) & 1);
    for (int i = 0; i < 8; i++)
        set_function(b, size - 1 - i, 8, (bits >> i) & 1);
    for (int i = 8; i < 15; i++)
        set_function(b, 8, size - 15 + i, (bits >> i) & 1);
    set_function(b, 8, size - 8, true); /* the dark module */
}

static void version_bits(struct builder *b, int ver)
{
    if (ver < 7)
        return;
    int rem = ver;
    for (int i = 0; i < 12; i++)
        rem = (rem << 1) ^ ((rem >> 11) * 0x1F25);
    long bits = (long)ver << 12 | rem; /* 7.10 */
    for (int i = 0; i < 18; i++) {
        bool bit = (bits >> i) & 1;
        int a = b->qr->size - 11 + i % 3, c = i / 3;
        set_function(b, a, c, bit);
        set_function(b, c, a, bit);
    }
}

static void function_patterns(struct builder *b, int ver, enum qr_ecc e)
{
    int size = b->qr->size;
    for (int i = 0; i < size; i++) {
        set_function(b, 6, i, i % 2 == 0); /* timing */
        set_function(b, i, 6, i % 2 == 0);
    }
    finder(b, 3, 3);
    finder(b, size - 4, 3);
    finder(b, 3, size - 4);
    int pos[7];
    int n = alignment_positions(ver, pos);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (!((i == 0 && j == 0) || (i == 0 && j == n - 1) || (i == n - 1 && j == 0)))
                alignment(b, pos[i], pos[j]);
    format_bits(b, e, 0); /* placeholders: the real mask is written later */
    version_bits(b, ver);
}

static bool mask_bit(int mask, int x, int y)
{
    switch (mask) {
    case 0: return (x + y) % 2 == 0;
    case 1: return y % 2 == 0;
    case 2: return x % 3 == 0;
    case 3: return (x + y) % 3 == 0;
    case 4: return (x / 3 + y / 2) % 2 == 0;
    case 5: return x * y % 2 + x * y % 3 == 0;
    case 6: return (x * y % 2 + x * y % 3) % 2 == 0;
    default: return ((x + y) % 2 + x * y % 3) % 2 == 0;
    }
}

static void apply_mask(struct builder *b, int mask)
{
    for (int y = 0; y < b->qr->size; y++)
        for (int x = 0; x < b->qr->size; x++)
            if (!b->is_function[y][x] && mask_bit(mask, x, y))
                b->qr->modules[y][x] ^= 1;
}

/* The mask choice scores every mask on the symbol as rows of bits (bit x of
   row y: module (x, y)), whole rows at a time: where every instruction is
   emulated (a KVM run here, PLATFORM.md) a module at a time cost 2 million
   instructions, over a second, per code. */
typedef unsigned __int128 qr_row;
_Static_assert(QR_MAX_SIZE <= 128, "a row of modules fits a qr_row");

static unsigned popcount64(uint64_t v)
{
    v -= (v >> 1) & 0x5555555555555555ull;
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (unsigned)((v * 0x0101010101010101ull) >> 56);
}

static unsigned popcount_row(qr_row v) { return popcount64((uint64_t)v) + popcount64((uint64_t)(v >> 64)); }

/* 7.8.3 penalty rules 1 (runs of five or more), 2 (2x2 blocks) and 4 (dark
   proportion); rule 3 (finder-like patterns) is left out: any mask decodes,
   the score only picks a clean-looking one. Rule 1: a run of L >= 5 scores
   3 + (L - 5), that is its L - 4 windows of five equal modules, plus 2. */
static long penalty(const qr_row *rows, int size)
{
    qr_row all = ((qr_row)1 << size) - 1, pairs = all >> 1; /* bit x: modules x and x + 1 */
    static qr_row ev[QR_MAX_SIZE];                           /* bit x: (x, y) equals (x, y + 1) */
    long score = 0, dark = 0;
    for (int y = 0; y + 1 < size; y++)
        ev[y] = ~(rows[y] ^ rows[y + 1]) & all;
    qr_row prev_v = 0;
    for (int y = 0; y < size; y++) {
        qr_row r = rows[y];
        dark += popcount_row(r);
        qr_row e = ~(r ^ (r >> 1)) & pairs;
        qr_row w = e & (e >> 1) & (e >> 2) & (e >> 3);
        score += popcount_row(w) + 2 * popcount_row(w & ~(w << 1));
        if (y + 4 < size) {
            qr_row v = ev[y] & ev[y + 1] & ev[y + 2] & ev[y + 3];
            score += popcount_row(v) + 2 * popcount_row(v & ~prev_v);
            prev_v = v;
        }
        if (y + 1 < size)
            score += 3 * popcount_row(ev[y] & (ev[y] >> 1) & e);
    }
    long total = (long)size * size;
    long k = ((dark * 20 - total * 10) < 0 ? total * 10 - dark * 20 : dark * 20 - total * 10);
    score += (k + total - 1) / total * 10 - 10 > 0 ? (k + total - 1) / total * 10 - 10 : 0;
    return score;
}

/* The mask whose symbol, format information included, scores lowest (7.8).
   Every mask repeats every 6 columns, and every 12 rows. */
static int choose_mask(struct builder *b, enum qr_ecc e)
{
    int size = b->qr->size;
    static qr_row data[QR_MAX_SIZE], fixed[QR_MAX_SIZE], rows[QR_MAX_SIZE];
    for (int y = 0; y < size; y++) {
        data[y] = fixed[y] = 0;
        for (int x = 0; x < size; x++) {
            data[y] |= (qr_row)b->qr->modules[y][x] << x;
            fixed[y] |= (qr_row)b->is_function[y][x] << x;
        }
    }
    long best = -1;
    int best_mask = 0;
    for (int m = 0; m < 8; m++) {
        qr_row pattern[12];
        for (int y = 0; y < 12; y++) {
            qr_row p = 0;
            for (int x = 0; x < 6; x++)
                p |= (qr_row)mask_bit(m, x, y) << x;
            for (int span = 6; span < 128; span *= 2)
                p |= p << span;
            pattern[y] = p;
        }
        for (int y = 0; y < size; y++)
            rows[y] = data[y] ^ (pattern[y % 12] & ~fixed[y] & (((qr_row)1 << size) - 1));
        /* the format information for this mask, where format_bits puts it */
        format_bits(b, e, m);
        for (int i = 0; i < 9; i++) {
            rows[i] = (rows[i] & ~((qr_row)1 << 8)) | (qr_row)b->qr->modules[i][8] << 8;
            rows[8] = (rows[8] & ~((qr_row)1 << i)) | (qr_row)b->qr->modules[8][i] << i;
        }
        for (int i = size - 8; i < size; i++) {
            rows[i] = (rows[i] & ~((qr_row)1 << 8)) | (qr_row)b->qr->modules[i][8] << 8;
            rows[8] = (rows[8] & ~((qr_row)1 << i)) | (qr_row)b->qr->modules[8][i] << i;
        }
        long p = penalty(rows, size);
        if (best < 0 || p < best) {
            best = p;
            best_mask = m;
        }
    }
    return best_mask;
}

int qr_version_for(size_t len, enum qr_ecc e)
{
    for (int ver = 1; ver <= QR_MAX_VERSION; ver++) {
        int count_bits = ver <= 9 ? 8 : 16; /* Table 3: byte mode character count */
        if (4 + count_bits + 8 * (long)len <= 8L * data_codewords(ver, e))
            return ver;
    }
    return 0;
}

bool qr_encode(const uint8_t *data, size_t len, enum qr_ecc e, struct qr_code *qr)
{
    int ver = qr_version_for(len, e);
    if (!ver)
        return false;
    memset(qr, 0, sizeof *qr);
    qr->version = ver;
    qr->size = ver * 4 + 17;

    /* 7.4: mode 0100 (byte), count, data, terminator, pad to bytes, pad codewords */
    static uint8_t codewords[MAX_RAW];
    int capacity = data_codewords(ver, e);
    memset(codewords, 0, sizeof codewords);
    long bit = 0;
#define PUT(value, n)                                                        \
    for (int i_ = (n) - 1; i_ >= 0; i_--, bit++)                             \
        if (((value) >> i_) & 1)                                             \
            codewords[bit >> 3] |= (uint8_t)(0x80 >> (bit & 7));
    PUT(4, 4);
    PUT((long)len, ver <= 9 ? 8 : 16);
    for (size_t i = 0; i < len; i++)
        PUT(data[i], 8);
    long term = 8L * capacity - bit;
    PUT(0, term < 4 ? term : 4);
    bit = (bit + 7) / 8 * 8;
#undef PUT
    for (int i = (int)(bit / 8), pad = 0xEC; i < capacity; i++, pad ^= 0xEC ^ 0x11)
        codewords[i] = (uint8_t)pad;

    /* 7.5.2 and 7.6: split into blocks, error correction per block, interleave */
    int blocks = NUM_BLOCKS[e][ver], ecc_len = ECC_PER_BLOCK[e][ver];
    int raw = raw_data_modules(ver) / 8;
    int short_blocks = blocks - raw % blocks, short_len = raw / blocks;
    static uint8_t block_data[32][160], block_ecc[32][32];
    uint8_t gen[32];
    gf_tables();
    rs_generator(ecc_len, gen);
    for (int i = 0, k = 0; i < blocks; i++) {
        int dlen = short_len - ecc_len + (i < short_blocks ? 0 : 1);
        memcpy(block_data[i], codewords + k, (size_t)dlen);
        rs_remainder(block_data[i], dlen, gen, ecc_len, block_ecc[i]);
        k += dlen;
    }
    static uint8_t final[MAX_RAW];
    int n = 0;
    for (int i = 0; i <= short_len - ecc_len; i++)
        for (int j = 0; j < blocks; j++)
            if (i < short_len - ecc_len || j >= short_blocks)
                final[n++] = block_data[j][i];
    for (int i = 0; i < ecc_len; i++)
        for (int j = 0; j < blocks; j++)
            final[n++] = block_ecc[j][i];

    static struct builder b;
    memset(&b, 0, sizeof b);
    b.qr = qr;
    function_patterns(&b, ver, e);
    /* 7.7.3: codeword placement in two-module columns, zigzag from the bottom right */
    long i = 0;
    for (int right = qr->size - 1; right >= 1; right -= 2) {
        if (right == 6)
            right = 5;
        for (int vert = 0; vert < qr->size; vert++)
            for (int j = 0; j < 2; j++) {
                int x = right - j;
                bool upward = ((right + 1) & 2) == 0;
                int y = upward ? qr->size - 1 - vert : vert;
                if (!b.is_function[y][x] && i < n * 8L) {
                    qr->modules[y][x] = (final[i >> 3] >> (7 - (i & 7))) & 1;
                    i++;
                }
            }
    }
    /* 7.8: the mask with the lowest penalty */
    int best_mask = choose_mask(&b, e);
    apply_mask(&b, best_mask);
    format_bits(&b, e, best_mask);
    qr->mask = best_mask;
    return true;
}

/* A QR Code encoder, byte mode, written from ISO/IEC 18004:2015: enough to
   carry a run's summary off a machine with no serial port, to a phone.
   Pure: unit-tested on the host against a decoder (zbarimg). */
#ifndef CLOCKBENCH_QR_H
#define CLOCKBENCH_QR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QR_MAX_VERSION 20
#define QR_MAX_SIZE (QR_MAX_VERSION * 4 + 17)

enum qr_ecc { QR_ECC_L, QR_ECC_M };

struct qr_code {
    int version; /* 1..QR_MAX_VERSION */
    int size;    /* modules per side: 4 * version + 17 */
    int mask;
    uint8_t modules[QR_MAX_SIZE][QR_MAX_SIZE]; /* [y][x], 1 = dark */
};

/* The smallest version that holds len bytes at ecc, 0 when none does:
   what qr_encode would choose, without encoding. */
int qr_version_for(size_t len, enum qr_ecc ecc);
/* Encodes len bytes in the smallest version that holds them at ecc. False
   when they do not fit in QR_MAX_VERSION. */
bool qr_encode(const uint8_t *data, size_t len, enum qr_ecc ecc, struct qr_code *qr);

#endif

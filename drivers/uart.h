/* 16550-compatible UART (National Semiconductor PC16550D datasheet). */
#ifndef CLOCKBENCH_UART_H
#define CLOCKBENCH_UART_H

#include <stdbool.h>
#include <stdint.h>

#define UART_COM1 0x3F8
#define UART_DEFAULT_BAUD 115200

struct uart {
    uint16_t port;
    uint32_t baud;
    bool present;
    bool stuck;        /* the transmitter stopped draining: output is dropped from then on */
    uint32_t timeouts;
    uint32_t fifo_room; /* bytes the transmit FIFO can still take without a status read */
    uint64_t tx_spins;  /* bound on one wait for the transmitter, longer at slow rates */
};

/* The divisor latch value for baud: 115200 / baud when that is a whole
   number from 1 to 65535, 1047 for 110 baud; 0 when the UART cannot make
   the rate. */
uint16_t uart_divisor(uint32_t baud);
/* Detects the UART (scratch register and loopback) and programs 8N1 at baud.
   Returns false, leaving present clear, when nothing answers at port or
   uart_divisor() refuses baud. */
bool uart_init(struct uart *u, uint16_t port, uint32_t baud);
void uart_putc(struct uart *u, char c);
/* n bytes as they are (no newline translation): as many at once as the
   transmit FIFO has room for. */
void uart_write(struct uart *u, const char *s, unsigned long n);
/* Waits, bounded, until every byte has left the shift register. */
void uart_drain(struct uart *u);

#endif

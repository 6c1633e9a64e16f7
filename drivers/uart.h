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
};

/* Detects the UART (scratch register and loopback) and programs 8N1 at baud.
   Returns false, leaving present clear, when nothing answers at port. */
bool uart_init(struct uart *u, uint16_t port, uint32_t baud);
void uart_putc(struct uart *u, char c);
/* Waits, bounded, until every byte has left the shift register. */
void uart_drain(struct uart *u);

#endif

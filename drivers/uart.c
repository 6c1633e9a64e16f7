/* 16550 UART driver: PC16550D datasheet, "Register Description". Every wait
   on the transmitter is bounded, so a missing or wedged UART costs at most a
   few milliseconds and never hangs the run. */
#include "uart.h"

#include "cpu.h"

#define UART_RBR 0 /* receive buffer (read), transmit holding (write) */
#define UART_THR 0
#define UART_DLL 0 /* divisor latch low, with LCR.DLAB */
#define UART_IER 1
#define UART_DLM 1
#define UART_FCR 2
#define   UART_FCR_ENABLE_CLEAR 0xC7 /* FIFO on, both cleared, 14-byte trigger */
#define UART_LCR 3
#define   UART_LCR_8N1 0x03
#define   UART_LCR_DLAB 0x80
#define UART_MCR 4
#define   UART_MCR_DTR_RTS_OUT2 0x0B
#define   UART_MCR_LOOPBACK 0x10
#define UART_LSR 5
#define   UART_LSR_DATA_READY 0x01
#define   UART_LSR_THRE 0x20
#define   UART_LSR_TEMT 0x40
#define UART_SCR 7

#define UART_CLOCK_HZ 1843200u /* 1.8432 MHz crystal: divisor = 115200 / baud */
#define UART_BASE_BAUD (UART_CLOCK_HZ / 16)
#define UART_DIVISOR_MAX 65535u /* DLM:DLL is 16 bits */
#define UART_TX_SPINS 200000   /* about 0.2 s of port reads at ~1 us each, far above one character time */
#define UART_TX_SPINS_BAUD 9600 /* ...and more than ten times a full FIFO's time at this rate or faster */
#define UART_MAX_TIMEOUTS 3
#define UART_FIFO_BYTES 16 /* a 16550's transmit FIFO: room for 16 once THRE is set */

/* 110 baud is a standard rate (teleprinters) that 115200 does not divide;
   1047 is the divisor every PC BIOS and OS uses for it (0.03% fast). */
#define UART_110_DIVISOR 1047

uint16_t uart_divisor(uint32_t baud)
{
    if (baud == 110)
        return UART_110_DIVISOR;
    /* Only exact divisors: a rate the UART can only approximate would
       garble the line while the banner claimed it. */
    if (baud == 0 || UART_BASE_BAUD % baud != 0 || UART_BASE_BAUD / baud > UART_DIVISOR_MAX)
        return 0;
    return (uint16_t)(UART_BASE_BAUD / baud);
}

bool uart_init(struct uart *u, uint16_t port, uint32_t baud)
{
    *u = (struct uart){.port = port, .baud = baud};
    uint32_t divisor = uart_divisor(baud);
    if (divisor == 0)
        return false;
    /* A full FIFO takes 160 bit times to drain: at slow rates the wait for
       it must grow, or the port would be declared stuck at its first line. */
    uint32_t slower = baud < UART_TX_SPINS_BAUD ? (UART_TX_SPINS_BAUD + baud - 1) / baud : 1;
    u->tx_spins = (uint64_t)UART_TX_SPINS * slower;
    outb(port + UART_SCR, 0xA5);
    if (inb(port + UART_SCR) != 0xA5)
        return false;
    outb(port + UART_SCR, 0x5A);
    if (inb(port + UART_SCR) != 0x5A)
        return false;

    outb(port + UART_IER, 0);
    outb(port + UART_LCR, UART_LCR_DLAB);
    outb(port + UART_DLL, (uint8_t)divisor);
    outb(port + UART_DLM, (uint8_t)(divisor >> 8));
    outb(port + UART_LCR, UART_LCR_8N1);
    outb(port + UART_FCR, UART_FCR_ENABLE_CLEAR);

    /* Loopback: a byte sent must come back, or this is not a working UART. */
    outb(port + UART_MCR, UART_MCR_LOOPBACK | UART_MCR_DTR_RTS_OUT2);
    outb(port + UART_THR, 0xAE);
    bool echoed = false;
    for (int i = 0; i < UART_TX_SPINS; i++) {
        if (inb(port + UART_LSR) & UART_LSR_DATA_READY) {
            echoed = inb(port + UART_RBR) == 0xAE;
            break;
        }
    }
    outb(port + UART_MCR, UART_MCR_DTR_RTS_OUT2);
    u->present = echoed;
    return echoed;
}

void uart_write(struct uart *u, const char *s, unsigned long n)
{
    while (n && u->present && !u->stuck) {
        /* THRE set means the FIFO is empty: 16 bytes go without asking again,
           which saves a port read (a trap, under a hypervisor) per byte */
        if (u->fifo_room == 0) {
            uint64_t i = 0;
            while (!(inb(u->port + UART_LSR) & UART_LSR_THRE)) {
                if (++i == u->tx_spins) {
                    if (++u->timeouts >= UART_MAX_TIMEOUTS)
                        u->stuck = true;
                    return;
                }
                cpu_relax();
            }
            u->fifo_room = UART_FIFO_BYTES;
        }
        /* the bytes the FIFO has room for, by one string instruction, not a
           call and a loop per byte: under this PVM KVM, which emulates every
           instruction (PLATFORM.md), a KVM run's report went out at 0.2 ms
           a byte */
        unsigned long k = n < u->fifo_room ? n : u->fifo_room;
        outsb(u->port + UART_THR, s, k);
        u->fifo_room -= (uint32_t)k;
        s += k;
        n -= k;
    }
}

void uart_putc(struct uart *u, char c) { uart_write(u, &c, 1); }

void uart_drain(struct uart *u)
{
    if (!u->present || u->stuck)
        return;
    for (uint64_t i = 0; i < u->tx_spins; i++) {
        if (inb(u->port + UART_LSR) & UART_LSR_TEMT)
            return;
        cpu_relax();
    }
}

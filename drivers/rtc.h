/* The CMOS real-time clock, MC146818-compatible (Motorola MC146818A data
   sheet; Intel PCH datasheets, "Real Time Clock"): index port 0x70, data
   port 0x71; seconds to year in registers 0x00-0x09, status A-D in
   0x0A-0x0D. It counts seconds from its own 32.768 kHz crystal. */
#ifndef CLOCKBENCH_RTC_H
#define CLOCKBENCH_RTC_H

#include <stdbool.h>
#include <stdint.h>

#include "../lib/rtc_fit.h"
#include "cpu.h"

#define RTC_INDEX 0x70          /* bit 7 masks NMI on PCs: always written 0 here */
#define RTC_DATA 0x71

#define RTC_SECONDS 0x00
#define RTC_MINUTES 0x02
#define RTC_HOURS 0x04
#define RTC_DAY_OF_MONTH 0x07
#define RTC_MONTH 0x08
#define RTC_YEAR 0x09
#define RTC_REG_A 0x0A
#define   RTC_A_UIP (1u << 7)   /* update in progress: set 244 us before an update, clear when it ends */
#define   RTC_A_DV_MASK (7u << 4)
#define   RTC_A_DV_32K (2u << 4) /* divider 010: 32.768 kHz time base, running */
#define RTC_REG_B 0x0B
#define   RTC_B_SET (1u << 7)   /* updates halted while software sets the time */
#define   RTC_B_UIE (1u << 4)
#define   RTC_B_DM_BINARY (1u << 2) /* else BCD */
#define   RTC_B_24H (1u << 1)   /* else 12 h, PM in bit 7 of the hours */
#define RTC_REG_C 0x0C
#define   RTC_C_UF (1u << 4)    /* update ended (read clears it) */
#define RTC_REG_D 0x0D
#define   RTC_D_VRT (1u << 7)   /* valid RAM and time: the battery held */

/* The longest update cycle: UIP is set 244 us before it and the update
   takes up to 1984 us at 32.768 kHz (MC146818A, "Update cycle"). */
#define RTC_UIP_MAX_US 2228u

struct rtc {
    bool present;
    uint8_t reg_a, reg_b, reg_d;   /* as the probe read them */
    bool battery_ok;               /* register D's VRT */
};

static inline void rtc_select(uint8_t reg) { outb(RTC_INDEX, reg & 0x7F); }
/* The register last selected: the index stays put, so polling register A
   takes one port read. */
static inline uint8_t rtc_read_selected(void) { return inb(RTC_DATA); }
static inline uint8_t rtc_read_reg(uint8_t reg)
{
    rtc_select(reg);
    return rtc_read_selected();
}

/* The firmware says there is no RTC (discovery reads it): every later
   rtc_probe() answers false with why and touches no port. */
void rtc_firmware_absent(const char *why);

/* Checks that an RTC answers (registers that read 0xFF: nothing on the
   ports), that its divider runs at 32.768 kHz and that updates are not
   halted. False with why otherwise; never waits. */
bool rtc_probe(struct rtc *r, char *why, unsigned why_len);

/* The date and time read safely: UIP waited out (at most bound_tsc ticks),
   every field read, then UIP and the seconds read again; a read that an
   update may have split is taken again (bounded). False with why when UIP
   never cleared or the fields never held still. */
bool rtc_read_time(const struct rtc *r, struct rtc_raw *out, uint64_t bound_tsc, char *why, unsigned why_len);

/* Waits for the end of the next update, UIP seen set and then clear, and
   brackets its fall in TSC time: [*a, *b], from just before the last read
   that saw UIP set to just after the first that saw it clear. Bounded by
   bound_tsc ticks and max_reads reads, whatever the TSC's rate; false when
   no update ended within them. */
bool rtc_catch_update_end(uint64_t bound_tsc, uint32_t max_reads, uint64_t *a, uint64_t *b);

/* Seconds, minutes and hours only: for right after an update ended, when
   nearly a second remains before the next (no waiting). */
static inline void rtc_read_clock(const struct rtc *r, struct rtc_raw *out)
{
    out->sec = rtc_read_reg(RTC_SECONDS);
    out->min = rtc_read_reg(RTC_MINUTES);
    out->hour = rtc_read_reg(RTC_HOURS);
    out->reg_b = r->reg_b;
}

#endif

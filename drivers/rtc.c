/* The CMOS real-time clock (see rtc.h): probe and the safe read. */
#include "rtc.h"

#include "../lib/format.h"

static const char *firmware_absent;

void rtc_firmware_absent(const char *why) { firmware_absent = why; }

bool rtc_probe(struct rtc *r, char *why, unsigned why_len)
{
    *r = (struct rtc){0};
    if (firmware_absent) {
        fmt_format(why, why_len, "%s", firmware_absent);
        return false;
    }
    r->reg_a = rtc_read_reg(RTC_REG_A);
    r->reg_b = rtc_read_reg(RTC_REG_B);
    r->reg_d = rtc_read_reg(RTC_REG_D);
    r->battery_ok = r->reg_d & RTC_D_VRT;
    /* nothing decodes the ports: every read floats to all ones. A real RTC
       never shows 0xFF in register B (its bit 3, square wave, with the
       update-halt and all interrupt bits) together with A's divider 111. */
    if (r->reg_a == 0xFF && r->reg_b == 0xFF && r->reg_d == 0xFF) {
        fmt_format(why, why_len, "CMOS ports 0x70/0x71 read 0xFF: no RTC answers");
        return false;
    }
    if ((r->reg_a & RTC_A_DV_MASK) != RTC_A_DV_32K) {
        fmt_format(why, why_len, "register A = 0x%02x: the divider is not running at 32.768 kHz (DV %u, want 2)", r->reg_a,
                   (r->reg_a & RTC_A_DV_MASK) >> 4);
        return false;
    }
    if (r->reg_b & RTC_B_SET) {
        fmt_format(why, why_len, "register B = 0x%02x: SET is on, updates are halted", r->reg_b);
        return false;
    }
    r->present = true;
    return true;
}

/* Waits until UIP is clear; false when it stays set past the bound. */
static bool wait_uip_clear(uint64_t bound_tsc)
{
    uint64_t start = rdtsc();
    rtc_select(RTC_REG_A);
    for (uint32_t i = 0; i < 10000000u; i++) {
        if (!(rtc_read_selected() & RTC_A_UIP))
            return true;
        if (rdtsc() - start > bound_tsc)
            return false;
    }
    return false;
}

bool rtc_catch_update_end(uint64_t bound_tsc, uint32_t max_reads, uint64_t *a, uint64_t *b)
{
    rtc_select(RTC_REG_A);
    uint64_t before = rdtsc_begin(), start = before, set_from = 0;
    bool seen_set = false;
    for (uint32_t i = 0; i < max_reads; i++) {
        uint8_t v = rtc_read_selected();
        uint64_t after = rdtsc_end();
        if (v & RTC_A_UIP) {
            seen_set = true;
            set_from = before;
        } else if (seen_set) {
            *a = set_from;
            *b = after;
            return true;
        }
        if (after - start > bound_tsc)
            return false;
        before = after;
    }
    return false;
}

bool rtc_read_time(const struct rtc *r, struct rtc_raw *out, uint64_t bound_tsc, char *why, unsigned why_len)
{
    /* Linux's mc146818_get_time: wait out UIP, read, and read again if an
       update may have begun meanwhile (UIP set or the seconds moved). */
    for (int attempt = 0; attempt < 5; attempt++) {
        if (!wait_uip_clear(bound_tsc)) {
            fmt_format(why, why_len, "UIP (register A bit 7) stayed set for longer than %u us: the RTC never finished an update",
                       RTC_UIP_MAX_US);
            return false;
        }
        out->sec = rtc_read_reg(RTC_SECONDS);
        out->min = rtc_read_reg(RTC_MINUTES);
        out->hour = rtc_read_reg(RTC_HOURS);
        out->day = rtc_read_reg(RTC_DAY_OF_MONTH);
        out->month = rtc_read_reg(RTC_MONTH);
        out->year = rtc_read_reg(RTC_YEAR);
        out->reg_b = r->reg_b;
        if (!(rtc_read_reg(RTC_REG_A) & RTC_A_UIP) && rtc_read_reg(RTC_SECONDS) == out->sec)
            return true;
    }
    fmt_format(why, why_len, "the date and time changed under every one of 5 reads");
    return false;
}

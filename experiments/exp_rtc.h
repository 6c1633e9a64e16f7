/* The RTC's second boundaries timed during the drift window: the drift
   loop calls these, outside any bracket (exp_rtc.c). Each returns at once
   when the rtc experiment is not chosen or there is no RTC. */
#ifndef CLOCKBENCH_EXP_RTC_H
#define CLOCKBENCH_EXP_RTC_H

#include <stdbool.h>
#include <stdint.h>

/* Before the window: probes the RTC and reads the date (a few ms at most). */
void rtc_window_begin(void);
/* Once per loop iteration: nothing until the next edge is near, then a
   wait and a poll of at most 5 ms per call to catch it. */
void rtc_window_poll(uint64_t tsc_now);
void rtc_window_end(void);
/* The whole run's account: the RTC's time (read safely, to the second),
   the TSC and a 64-bit HPET, read before the first experiment measures
   (end false) and after the last (end true). A stop anywhere in the run
   shows as the RTC (the host's clock under QEMU) or the HPET advancing
   other than the TSC (exp_rtc_report.c, "Over the whole run"). */
void rtc_run_mark(bool end);

#endif

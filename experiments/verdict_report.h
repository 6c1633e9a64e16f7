/* The monotonicity checks and the verdict table, from what every
   experiment published (results.h), the rows computed by verdict.c. */
#ifndef CLOCKBENCH_VERDICT_REPORT_H
#define CLOCKBENCH_VERDICT_REPORT_H

void verdict_report(void);

#endif

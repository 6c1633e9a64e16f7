/* PASS / FAIL / SKIP lines in the kvm-unit-tests style, one SUMMARY line,
   and the run status that follows from them. A missing feature is a SKIP,
   never a FAIL. */
#ifndef CLOCKBENCH_CHECKS_H
#define CLOCKBENCH_CHECKS_H

#include "finish.h"

void check_pass(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void check_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void check_skip(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void checks_counts(unsigned *passed, unsigned *failed, unsigned *skipped);
/* Prints the SUMMARY line and record; returns the status of the run. */
enum run_status checks_summary(void);

#endif

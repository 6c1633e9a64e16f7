/* PASS / FAIL / SKIP lines in the kvm-unit-tests style, one SUMMARY line,
   and the run status that follows from them. A missing feature is a SKIP,
   never a FAIL. */
#ifndef CLOCKBENCH_CHECKS_H
#define CLOCKBENCH_CHECKS_H

#include <stdbool.h>

#include "../lib/run_status.h"

void check_pass(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void check_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void check_skip(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void checks_counts(unsigned *passed, unsigned *failed, unsigned *skipped);
/* The names of the checks that failed (failures) or were skipped, in the
   order they ran: the first CHECKS_NAMED of them, each cut to
   CHECK_NAME_CHARS - 1 characters. Returns how many. */
#define CHECKS_NAMED 24
#define CHECK_NAME_CHARS 48
unsigned checks_named(bool failures, const char *const **names);
/* Prints the SUMMARY line and record; returns the status of the run. */
enum run_status checks_summary(void);

#endif

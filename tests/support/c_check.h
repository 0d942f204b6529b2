/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File: tests/support/c_check.h
 *
 * What the tests written in C99 share (they have no test framework): CHECK, which prints the
 * line of a condition that does not hold and counts it, a sink that collects what the C APIs
 * hand out as text, and the exit code.
 *
 *   CHECK(molt_testkit_load(kit, plugins, 1) == MOLT_OK);
 *   molt_test_text logs = {{0}, 0};
 *   CHECK(molt_testkit_logs(kit, molt_test_collect, &logs) == MOLT_OK);
 *   return molt_test_exit("uptime_test");
 */
#ifndef MOLT_TESTS_SUPPORT_C_CHECK_H_
#define MOLT_TESTS_SUPPORT_C_CHECK_H_

#include <stdio.h>
#include <string.h>

static int molt_test_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++molt_test_failures;                                                    \
    }                                                                          \
  } while (0)

/* Text handed to a molt_bytes_fn, NUL-terminated; what does not fit is dropped. */
typedef struct molt_test_text {
  char data[8192];
  size_t size;
} molt_test_text;

static void molt_test_collect(void* user_data, const void* data, size_t size) {
  molt_test_text* t = (molt_test_text*)user_data;
  if (t->size + size < sizeof t->data) {
    memcpy(t->data + t->size, data, size);
    t->size += size;
    t->data[t->size] = '\0';
  }
}

/* The program's exit code: 0 when every CHECK held (said on stdout), else 1. */
static int molt_test_exit(const char* name) {
  if (molt_test_failures == 0) {
    printf("%s: every check held\n", name);
    return 0;
  }
  fprintf(stderr, "%s: %d check(s) failed\n", name, molt_test_failures);
  return 1;
}

#endif /* MOLT_TESTS_SUPPORT_C_CHECK_H_ */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin test kit's C API (molt/testkit.h) from plain C99, as a C plugin's author uses it:
 * the example plugin hello_c (examples/hello_c) loaded, a client joined, an intent echoed
 * as an event, a request answered, what is refused named, the struct-size rule, the arguments
 * that may be NULL, a swap under the session, the close.
 * Exits 0 when every check holds; each failure prints its line.
 */
#include <molt/testkit.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/c_check.h"

static int contains(const char* haystack, const char* needle) {
  return strstr(haystack, needle) != NULL;
}

int main(void) {
  molt_testkit_t* kit = NULL;
  molt_testkit_t* second = NULL;
  molt_testkit_options options;
  molt_testkit_hello hello;
  molt_testkit_message m;
  molt_session_t ada = 0;
  uint32_t id = 0;
  molt_test_text report;
  const char* plugins[] = {MOLT_FIXTURE_DIR "/hello_c/fx_hello_c.so"};
  int32_t got;

  memset(&options, 0, sizeof options);
  options.struct_size = 8; /* below the first release's size: refused by name */
  CHECK(molt_testkit_create(&options, &kit) == MOLT_ERR_INVALID_ARGUMENT);
  CHECK(kit == NULL);
  CHECK(contains(molt_testkit_error(NULL), "molt_testkit_options.struct_size is 8"));
  options.struct_size = sizeof options;
  options.echo_level = "error";
  CHECK(molt_testkit_create(&options, &kit) == MOLT_OK);
  if (kit == NULL) {
    fprintf(stderr, "no kit: %s\n", molt_testkit_error(NULL));
    return 1;
  }
  CHECK(molt_testkit_create(NULL, &second) == MOLT_ERR_STATE);
  CHECK(contains(molt_testkit_error(NULL), "another test kit is alive"));
  CHECK(molt_testkit_load(kit, plugins, 1) == MOLT_OK);

  memset(&hello, 0, sizeof hello);
  hello.struct_size = sizeof hello;
  hello.user = "ada";
  CHECK(molt_testkit_join(kit, &hello, &ada) == MOLT_OK);
  CHECK(ada != 0);

  CHECK(molt_testkit_intent(kit, ada, "hello.Say", "good morning", 12) == MOLT_OK);
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  got = molt_testkit_next(kit, ada, &m);
  CHECK(got == 1);
  if (got == 1) {
    CHECK(m.kind == MOLT_TESTKIT_EVENT);
    CHECK(strcmp(m.channel, "hello.Said") == 0);
    CHECK(m.size == 17 && memcmp(m.payload, "ada: good morning", 17) == 0);
  }
  /* A payload the channel's verifier refuses (empty), by name. */
  CHECK(molt_testkit_intent(kit, ada, "hello.Say", "", 0) == MOLT_ERR_REJECTED);
  CHECK(contains(molt_testkit_error(kit), "hello.Say: bad_payload"));
  CHECK(molt_testkit_intent(kit, ada, "hello.Nope", "x", 1) == MOLT_ERR_NOT_FOUND);
  CHECK(molt_testkit_intent(kit, ada, "hello.Say", NULL, 3) == MOLT_ERR_INVALID_ARGUMENT);

  CHECK(molt_testkit_request(kit, ada, "hello.Shout", "hi there", 8, &id) == MOLT_OK);
  CHECK(id != 0);
  got = molt_testkit_next(kit, ada, &m);
  CHECK(got == 1);
  if (got == 1) {
    CHECK(m.kind == MOLT_TESTKIT_RESPONSE);
    CHECK(m.request_id == id);
    CHECK(m.status == MOLT_OK);
    CHECK(m.size == 8 && memcmp(m.payload, "HI THERE", 8) == 0);
  }
  CHECK(molt_testkit_next(kit, ada, &m) == 0);
  m.struct_size = 16; /* too small for the first release's message */
  CHECK(molt_testkit_next(kit, ada, &m) == 0);
  CHECK(contains(molt_testkit_error(kit), "molt_testkit_message.struct_size is 16"));
  CHECK(molt_testkit_next(kit, 999, &m) == 0);
  m.struct_size = sizeof m;

  /* What may be NULL: a request's id, a swap's report, the self-tests' report. */
  CHECK(molt_testkit_request(kit, ada, "hello.Shout", "again", 5, NULL) == MOLT_OK);
  got = molt_testkit_next(kit, ada, &m);
  CHECK(got == 1 && m.kind == MOLT_TESTKIT_RESPONSE && m.size == 5 &&
        memcmp(m.payload, "AGAIN", 5) == 0);
  CHECK(molt_testkit_swap(kit, plugins, 1, NULL, NULL) == MOLT_OK);
  CHECK(molt_testkit_intent(kit, ada, "hello.Say", "still here", 10) == MOLT_OK);
  got = molt_testkit_next(kit, ada, &m);
  CHECK(got == 1 && m.kind == MOLT_TESTKIT_EVENT && m.size == 15 &&
        memcmp(m.payload, "ada: still here", 15) == 0);
  CHECK(molt_testkit_self_test(kit, NULL, NULL) == MOLT_OK); /* hello_c has none */

  CHECK(molt_testkit_advance(kit, 30) == MOLT_OK);
  CHECK(molt_testkit_now(kit) == 30);
  memset(&report, 0, sizeof report);
  CHECK(molt_testkit_logs(kit, molt_test_collect, &report) == MOLT_OK);
  CHECK(contains(report.data, "hello_c is listening on hello.Say and hello.Shout"));

  CHECK(molt_testkit_close(kit) == MOLT_OK);
  m.struct_size = sizeof m;
  got = molt_testkit_next(kit, ada, &m);
  CHECK(got == 1 && m.kind == MOLT_TESTKIT_BYE && strcmp(m.reason, "ServerShutdown") == 0);
  molt_testkit_destroy(kit);
  molt_testkit_destroy(NULL); /* ignored */

  /* The kit is gone: another may be made. */
  CHECK(molt_testkit_create(NULL, &second) == MOLT_OK);
  molt_testkit_destroy(second);
  return molt_test_exit("testkit_c_test");
}

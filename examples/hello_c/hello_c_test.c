/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hello_c's own test, in C99, with the plugin test kit of the installed Molt (Molt::testkit,
 * molt/testkit.h): MOLT_PLUGIN_HELLO_C is the hello_c.so this build made (molt_add_plugin_test).
 * Exits 0 when every check holds.
 */
#include <molt/testkit.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(void) {
  molt_testkit_t* kit = NULL;
  const char* plugins[] = {MOLT_PLUGIN_HELLO_C};
  molt_testkit_hello hello = {.struct_size = sizeof(molt_testkit_hello), .user = "ada"};
  molt_testkit_message m = {.struct_size = sizeof(molt_testkit_message)};
  molt_session_t ada = 0, bob = 0;
  uint32_t id = 0;

  if (molt_testkit_create(NULL, &kit) != MOLT_OK) {
    fprintf(stderr, "no kit: %s\n", molt_testkit_error(NULL));
    return 1;
  }
  CHECK(molt_testkit_load(kit, plugins, 1) == MOLT_OK);
  CHECK(molt_testkit_join(kit, &hello, &ada) == MOLT_OK);
  hello.user = "bob";
  CHECK(molt_testkit_join(kit, &hello, &bob) == MOLT_OK);

  /* hello.Say is heard back by its sender alone, prefixed with the user. */
  CHECK(molt_testkit_intent(kit, ada, "hello.Say", "hi", 2) == MOLT_OK);
  CHECK(molt_testkit_next(kit, ada, &m) == 1);
  CHECK(m.kind == MOLT_TESTKIT_EVENT && m.size == 7 && memcmp(m.payload, "ada: hi", 7) == 0);
  CHECK(molt_testkit_next(kit, bob, &m) == 0);

  /* hello.Shout answers in capitals (a worker job: the kit waits for it before it returns);
   * more than 200 bytes is refused before the plugin's code. */
  CHECK(molt_testkit_request(kit, bob, "hello.Shout", "quiet", 5, &id) == MOLT_OK);
  CHECK(molt_testkit_next(kit, bob, &m) == 1);
  CHECK(m.kind == MOLT_TESTKIT_RESPONSE && m.request_id == id && m.status == MOLT_OK);
  CHECK(m.size == 5 && memcmp(m.payload, "QUIET", 5) == 0);

  /* The live value hello_c.exclaim, set as an operator sets it: checked by the plugin first. */
  CHECK(molt_testkit_set_live(kit, "hello_c.exclaim", "3") == MOLT_OK);
  CHECK(molt_testkit_request(kit, bob, "hello.Shout", "loud", 4, &id) == MOLT_OK);
  CHECK(molt_testkit_next(kit, bob, &m) == 1);
  CHECK(m.kind == MOLT_TESTKIT_RESPONSE && m.request_id == id && m.status == MOLT_OK);
  CHECK(m.size == 7 && memcmp(m.payload, "LOUD!!!", 7) == 0);
  CHECK(molt_testkit_set_live(kit, "hello_c.exclaim", "9") != MOLT_OK);
  CHECK(strstr(molt_testkit_error(kit), "a whole number from 0 to 5") != NULL);

  {
    char big[201];
    memset(big, 'a', sizeof big);
    CHECK(molt_testkit_intent(kit, ada, "hello.Say", big, sizeof big) == MOLT_ERR_REJECTED);
    CHECK(strstr(molt_testkit_error(kit), "bad_payload") != NULL);
  }
  molt_testkit_destroy(kit);
  if (failures == 0) {
    printf("hello_c_test: every check held\n");
  }
  return failures == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bundled uptime plugin, in C, tested in C with the plugin test kit's C API (molt/testkit.h):
 * Uptime.Tick every interval_seconds on the kit's clock, the uptime logged, its own tests (the
 * spec gate), the close reason logged at the close. Exits 0 when every check holds.
 */
#include <molt/testkit.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/c_check.h"

int main(void) {
  molt_testkit_t* kit = NULL;
  molt_testkit_options options;
  molt_testkit_message m;
  const char* plugins[] = {MOLT_PLUGIN_UPTIME};
  double ticks[8];
  int n = 0;
  molt_test_text logs;

  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.config_json = "{\"plugins\": {\"uptime\": {\"interval_seconds\": 10}}}";
  if (molt_testkit_create(&options, &kit) != MOLT_OK) {
    fprintf(stderr, "no kit: %s\n", molt_testkit_error(NULL));
    return 1;
  }
  CHECK(molt_testkit_load(kit, plugins, 1) == MOLT_OK);
  CHECK(molt_testkit_watch(kit, "Uptime.Tick") == MOLT_OK);
  CHECK(molt_testkit_advance(kit, 9.5) == MOLT_OK);
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  CHECK(molt_testkit_next(kit, 0, &m) == 0); /* not yet */
  CHECK(molt_testkit_advance(kit, 25) == MOLT_OK);
  while (n < 8 && molt_testkit_next(kit, 0, &m) == 1) {
    CHECK(strcmp(m.channel, "Uptime.Tick") == 0);
    CHECK(m.arg_count == 1 && m.args[0].type == MOLT_VALUE_DOUBLE);
    ticks[n++] = m.args[0].as.d;
  }
  CHECK(n == 3);
  CHECK(n < 1 || ticks[0] == 10);
  CHECK(n < 3 || ticks[2] == 30);

  memset(&logs, 0, sizeof logs);
  CHECK(molt_testkit_self_test(kit, molt_test_collect, &logs) == MOLT_OK);
  CHECK(strstr(logs.data, "\"passed\":2,\"failed\":0") != NULL);

  CHECK(molt_testkit_close(kit) == MOLT_OK);
  memset(&logs, 0, sizeof logs);
  CHECK(molt_testkit_logs(kit, molt_test_collect, &logs) == MOLT_OK);
  CHECK(strstr(logs.data, "up for 30 s") != NULL);
  CHECK(strstr(logs.data, "test kit close") != NULL);
  molt_testkit_destroy(kit);
  return molt_test_exit("uptime_test");
}

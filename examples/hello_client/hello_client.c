/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hello_client: a client app in C99 on libmolt_client, built out of tree. It joins a server
 * running the hello_c plugin (examples/hello_c), says something on "hello.Say", prints
 * what comes back on "hello.Said", asks "hello.Shout", prints the answer, and says goodbye.
 *
 *   hello_client HOST PORT USER TEXT     exit 0 on success, 1 with the reason otherwise
 */
#include <molt/client.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct app {
  int connected;
  int heard;
  int answered;
  char reason[256];
};

static void on_state(void* user_data, int32_t state, const char* reason) {
  struct app* a = (struct app*)user_data;
  a->connected = state == MOLT_CLIENT_CONNECTED;
  if (state == MOLT_CLIENT_CLOSED) {
    snprintf(a->reason, sizeof a->reason, "%s", reason);
  }
}

static void on_said(void* user_data, uint16_t channel, const void* data, size_t size) {
  struct app* a = (struct app*)user_data;
  (void)channel;
  printf("heard: %.*s\n", (int)size, (const char*)data);
  a->heard = 1;
}

static void on_shout(void* user_data, molt_status_t status, const void* data, size_t size) {
  struct app* a = (struct app*)user_data;
  if (status == MOLT_OK) {
    printf("shouted: %.*s\n", (int)size, (const char*)data);
  } else {
    printf("shout refused: status %d\n", (int)status);
  }
  a->answered = 1;
}

/* The app's loop: it sleeps until the client has something to do (its socket or one of its
 * timers), then steps it, until `*done`, the client closes, or about 10 s pass. A game would call
 * molt_client_step from its frame loop instead. */
static int run_until(molt_client* c, const int* done) {
  const time_t give_up = time(NULL) + 10;
  while (!*done && time(NULL) < give_up) {
    if (molt_client_wait(c, 1.0) != MOLT_OK || molt_client_step(c, 0) != MOLT_OK ||
        molt_client_state(c) == MOLT_CLIENT_CLOSED) {
      return 0;
    }
  }
  return *done;
}

int main(int argc, char** argv) {
  struct app a = {0};
  const molt_client_options options = {
      .struct_size = sizeof(molt_client_options),
      .flags = MOLT_CLIENT_NO_RECONNECT,
  };
  molt_client* c = NULL;
  uint16_t say = 0, said = 0, shout = 0;
  if (argc != 5) {
    fprintf(stderr, "usage: hello_client HOST PORT USER TEXT\n");
    return 2;
  }
  if (molt_client_create(&options, &c) != MOLT_OK) {
    fprintf(stderr, "hello_client: cannot create a client\n");
    return 1;
  }
  molt_client_on_state(c, on_state, &a);
  if (molt_client_connect(c, argv[1], (uint16_t)atoi(argv[2]), argv[3], NULL, 0, NULL, 0) !=
      MOLT_OK) {
    fprintf(stderr, "hello_client: %s\n", molt_client_last_error(c));
    goto fail;
  }
  if (!run_until(c, &a.connected)) {
    fprintf(stderr, "hello_client: not connected: %s\n", a.reason);
    goto fail;
  }
  if (molt_client_channel(c, "hello.Say", &say) != MOLT_OK ||
      molt_client_channel(c, "hello.Said", &said) != MOLT_OK ||
      molt_client_channel(c, "hello.Shout", &shout) != MOLT_OK) {
    fprintf(stderr, "hello_client: %s (is the hello_c plugin loaded?)\n",
            molt_client_last_error(c));
    goto fail;
  }
  molt_client_on_event(c, said, on_said, &a);
  if (molt_client_intent(c, say, argv[4], strlen(argv[4])) != MOLT_OK ||
      molt_client_request(c, shout, argv[4], strlen(argv[4]), 0, on_shout, &a) != MOLT_OK) {
    fprintf(stderr, "hello_client: %s\n", molt_client_last_error(c));
    goto fail;
  }
  if (!run_until(c, &a.heard) || !run_until(c, &a.answered)) {
    fprintf(stderr, "hello_client: no answer from the server %s\n", a.reason);
    goto fail;
  }
  molt_client_disconnect(c);
  molt_client_destroy(c);
  return 0;
fail:
  molt_client_destroy(c);
  return 1;
}

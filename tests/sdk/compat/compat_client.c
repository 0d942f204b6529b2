/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A client app in C99 built against one frozen client.h (tests/sdk/compat/<client>/include) and
 * linked with today's libmolt_client: it talks to a moltd serving the compat plugin through the
 * calls of its release. Run by compat_test.cc.
 *
 *   every release    connect, an intent echoed back as an event, a request answered, disconnect
 *   client API 2     options with MOLT_CLIENT_NO_RECONNECT
 *   client API 3     the compat.board replica
 *   client API 4     waits with molt_client_wait instead of sleeping a frame
 *   client API 7     with WS_PORT: all of it over moltd's WebSocket port (MOLT_CLIENT_WEBSOCKET)
 *   client API 8     a predicted intent on compat.Move, resolved accepted
 *   client API 9     the device quality said (0.3), and -1 refused
 *
 *   compat_client PORT [WS_PORT]   exit 0 after printing what it saw, 1 with the reason otherwise
 */
#define _POSIX_C_SOURCE 199309L /* nanosleep */

#include <molt/client.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct app {
  int echoed;
  int answered;
  molt_status_t status;
  char text[64];
  char last_state[256];
  int resolved;
  int accepted;
};

static void on_state(void* user, int32_t state, const char* reason) {
  struct app* a = (struct app*)user;
  sprintf(a->last_state, "%d %.200s", (int)state, reason);
}

static void copy_text(struct app* a, const void* data, size_t size) {
  if (size >= sizeof a->text) {
    size = sizeof a->text - 1;
  }
  memcpy(a->text, data, size);
  a->text[size] = '\0';
}

static void on_event(void* user, uint16_t channel, const void* data, size_t size) {
  struct app* a = (struct app*)user;
  (void)channel;
  copy_text(a, data, size);
  a->echoed = 1;
}

static void on_response(void* user, molt_status_t status, const void* data, size_t size) {
  struct app* a = (struct app*)user;
  copy_text(a, data, size);
  a->status = status;
  a->answered = 1;
}

#if MOLT_CLIENT_API_VERSION >= 8
static void on_resolved(void* user, uint16_t channel, uint32_t seq, int32_t accepted,
                        molt_status_t status) {
  struct app* a = (struct app*)user;
  (void)channel;
  (void)seq;
  (void)status;
  a->accepted = accepted;
  a->resolved = 1;
}
#endif

static int fail(molt_client* c, const char* what) {
  fprintf(stderr, "compat_client: %s: %s\n", what, molt_client_last_error(c));
  molt_client_destroy(c);
  return 1;
}

/* Steps the client until `*flag`, for at most about 10 s: from client API 4 an app that waits
 * (molt_client_wait between steps), before it a frame loop (1.5 ms of work, 1 ms of sleep). */
static int step_until(molt_client* c, const int* flag) {
  int i;
  for (i = 0; i < 10000 && !*flag; ++i) {
#if MOLT_CLIENT_API_VERSION >= 4
    if (molt_client_wait(c, 0.001) != MOLT_OK || molt_client_step(c, 0) != MOLT_OK) {
      return 0;
    }
#else
    struct timespec ms = {0, 1000000};
    if (molt_client_step(c, 0.0015) != MOLT_OK) {
      return 0;
    }
    nanosleep(&ms, NULL);
#endif
  }
  return *flag;
}

int main(int argc, char** argv) {
  struct app a;
  molt_client_options o;
  molt_client* c = NULL;
  uint16_t echo = 0, twice = 0, said = 0;
  int connected = 0;
  const char* port = argc >= 2 ? argv[1] : "";
  if (argc != 2 && !(argc == 3 && MOLT_CLIENT_API_VERSION >= 7)) {
    fprintf(stderr, "usage: compat_client PORT%s\n",
            MOLT_CLIENT_API_VERSION >= 7 ? " [WS_PORT]" : "");
    return 2;
  }
  memset(&a, 0, sizeof a);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o; /* the size of this release's struct */
#if MOLT_CLIENT_API_VERSION >= 2
  o.flags = MOLT_CLIENT_NO_RECONNECT;
#endif
#if MOLT_CLIENT_API_VERSION >= 7
  if (argc == 3) {
    o.flags |= MOLT_CLIENT_WEBSOCKET;
    port = argv[2];
    printf("over WebSocket\n");
  }
#endif
  if (molt_client_create(&o, &c) != MOLT_OK) {
    fprintf(stderr, "compat_client: molt_client_create refused options of %u bytes\n",
            (unsigned)o.struct_size);
    return 1;
  }
  molt_client_on_state(c, on_state, &a);
  if (molt_client_connect(c, "127.0.0.1", (uint16_t)atoi(port), "ada", NULL, 0, NULL, 0) !=
      MOLT_OK) {
    return fail(c, "connect");
  }
  {
    int i;
    for (i = 0; i < 10000 && molt_client_state(c) == MOLT_CLIENT_CONNECTING; ++i) {
      struct timespec ms = {0, 1000000};
      molt_client_step(c, 0.0015);
      nanosleep(&ms, NULL);
    }
  }
  connected = molt_client_state(c) == MOLT_CLIENT_CONNECTED;
  if (!connected) {
    fprintf(stderr, "compat_client: not connected: %s\n", a.last_state);
    molt_client_destroy(c);
    return 1;
  }
  printf("client API %d: connected, session %llu\n", MOLT_CLIENT_API_VERSION,
         (unsigned long long)molt_client_session(c));
  if (molt_client_channel(c, "compat.Echo", &echo) != MOLT_OK ||
      molt_client_channel(c, "compat.Twice", &twice) != MOLT_OK ||
      molt_client_channel(c, "compat.Said", &said) != MOLT_OK) {
    return fail(c, "channels");
  }
  molt_client_on_event(c, said, on_event, &a);
  if (molt_client_intent(c, echo, "hello", 5) != MOLT_OK) {
    return fail(c, "intent");
  }
  if (!step_until(c, &a.echoed)) {
    return fail(c, "no echo");
  }
  printf("echo: %s\n", a.text);
  if (molt_client_request(c, twice, "ab", 2, 0, on_response, &a) != MOLT_OK) {
    return fail(c, "request");
  }
  if (!step_until(c, &a.answered) || a.status != MOLT_OK) {
    return fail(c, "no answer");
  }
  printf("twice: %s\n", a.text);
#if MOLT_CLIENT_API_VERSION >= 3
  {
    molt_client_replica_t board = 0;
    int32_t index = -1;
    int64_t joins = 0;
    int i;
    for (i = 0; i < 10000 && molt_client_replica_find(c, "compat.board", &board) != MOLT_OK; ++i) {
      struct timespec ms = {0, 1000000};
      molt_client_step(c, 0.0015);
      nanosleep(&ms, NULL);
    }
    if (molt_client_replica_field(c, board, "joins", &index, NULL) != MOLT_OK ||
        molt_client_replica_int(c, board, index, &joins) != MOLT_OK) {
      return fail(c, "the compat.board replica");
    }
    printf("board: joins %lld\n", (long long)joins);
  }
#endif
#if MOLT_CLIENT_API_VERSION >= 8
  {
    uint16_t move = 0;
    uint32_t seq = 0;
    if (molt_client_channel(c, "compat.Move", &move) != MOLT_OK) {
      return fail(c, "the compat.Move channel");
    }
    molt_client_on_resolved(c, on_resolved, &a);
    if (molt_client_predict(c, move, "step", 4, &seq) != MOLT_OK) {
      return fail(c, "predict");
    }
    if (!step_until(c, &a.resolved)) {
      return fail(c, "no resolution");
    }
    printf("predicted %u: %s\n", (unsigned)seq, a.accepted ? "accepted" : "rolled back");
  }
#endif
#if MOLT_CLIENT_API_VERSION >= 9
  if (molt_client_set_device_quality(c, 0.3) != MOLT_OK) {
    return fail(c, "set_device_quality");
  }
  if (molt_client_set_device_quality(c, -1) != MOLT_ERR_INVALID_ARGUMENT) {
    return fail(c, "a device quality of -1 was taken");
  }
  printf("device quality: said\n");
#endif
  molt_client_disconnect(c);
  molt_client_destroy(c);
  printf("done\n");
  return 0;
}

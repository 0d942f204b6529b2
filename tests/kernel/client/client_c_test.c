/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal client in plain C99 against client.h: connects to a running moltd (the bundled
 * plugins), asks scores.Get for its own total, reads the counter plugin's replica, prints both,
 * and says goodbye. Compiled with
 * -std=c99 -pedantic -Werror; run by tests/hosts/moltd_test.cc.
 *
 *   client_c_test PORT      exit 0 on success, 1 with a message otherwise
 */
#define _POSIX_C_SOURCE 199309L /* nanosleep */

#include <molt/client.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A molt.scores.Query asking for "ada" (plugins/scores/scores.fbs), as flatc builds it. */
static const unsigned char kQueryAda[] = {
    0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x08, 0x00, 0x04, 0x00, 0x06, 0x00,
    0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x61, 0x64, 0x61, 0x00};

struct app {
  int answered;
  int counter_seen;
  molt_status_t status;
  size_t size;
  char last_state[256];
};

static void on_state(void* user, int32_t state, const char* reason) {
  struct app* a = (struct app*)user;
  sprintf(a->last_state, "%d %.200s", (int)state, reason);
}

static void on_response(void* user, molt_status_t status, const void* data, size_t size) {
  struct app* a = (struct app*)user;
  (void)data;
  a->answered = 1;
  a->status = status;
  a->size = size;
}

static void on_counter(void* user, molt_client_replica_t replica, int32_t what, int32_t field) {
  struct app* a = (struct app*)user;
  (void)replica;
  (void)field;
  if (what == MOLT_CLIENT_REPLICA_SNAPSHOT) {
    a->counter_seen = 1;
  }
}

static int fail(molt_client* c, const char* what) {
  fprintf(stderr, "client_c_test: %s: %s\n", what, molt_client_last_error(c));
  molt_client_destroy(c);
  return 1;
}

/* Steps the client (a 1.5 ms budget, as a frame loop would) until `*flag` or about 5 s. */
static int step_until(molt_client* c, const int* flag) {
  int i;
  for (i = 0; i < 5000 && !*flag; ++i) {
    struct timespec ms = {0, 1000000};
    if (molt_client_step(c, 0.0015) != MOLT_OK) {
      return 0;
    }
    nanosleep(&ms, NULL);
  }
  return *flag;
}

int main(int argc, char** argv) {
  struct app a;
  molt_client_options o;
  molt_client* c = NULL;
  uint16_t get = 0;
  int connected = 0;
  int i;
  if (argc != 2) {
    fprintf(stderr, "usage: client_c_test PORT\n");
    return 2;
  }
  memset(&a, 0, sizeof a);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  if (molt_client_create(&o, &c) != MOLT_OK) {
    fprintf(stderr, "client_c_test: molt_client_create failed\n");
    return 1;
  }
  molt_client_on_state(c, on_state, &a);
  molt_client_on_replica(c, "counter", on_counter, &a);
  if (molt_client_connect(c, "127.0.0.1", (uint16_t)atoi(argv[1]), "ada", NULL, 0, NULL, 0) !=
      MOLT_OK) {
    return fail(c, "connect");
  }
  for (i = 0; i < 5000 && molt_client_state(c) == MOLT_CLIENT_CONNECTING; ++i) {
    struct timespec ms = {0, 1000000};
    molt_client_step(c, 0.0015);
    nanosleep(&ms, NULL);
  }
  connected = molt_client_state(c) == MOLT_CLIENT_CONNECTED;
  if (!connected) {
    fprintf(stderr, "client_c_test: not connected: %s\n", a.last_state);
    molt_client_destroy(c);
    return 1;
  }
  if (molt_client_channel(c, "scores.Get", &get) != MOLT_OK) {
    return fail(c, "channel scores.Get");
  }
  if (molt_client_request(c, get, kQueryAda, sizeof kQueryAda, 0, on_response, &a) != MOLT_OK) {
    return fail(c, "request");
  }
  if (!step_until(c, &a.answered) || a.status != MOLT_OK || a.size == 0) {
    fprintf(stderr, "client_c_test: no answer (status %d, %u bytes)\n", (int)a.status,
            (unsigned)a.size);
    molt_client_destroy(c);
    return 1;
  }
  printf("session %llu: scores.Get answered %u bytes\n", (unsigned long long)molt_client_session(c),
         (unsigned)a.size);
  {
    molt_client_replica_t counter = 0;
    int32_t index = 0;
    int64_t value = -1;
    if (!step_until(c, &a.counter_seen) ||
        molt_client_replica_find(c, "counter", &counter) != MOLT_OK ||
        molt_client_replica_field(c, counter, "value", &index, NULL) != MOLT_OK ||
        molt_client_replica_int(c, counter, index, &value) != MOLT_OK) {
      return fail(c, "the counter replica");
    }
    printf("counter replica: value %lld\n", (long long)value);
  }
  molt_client_disconnect(c);
  molt_client_destroy(c);
  return 0;
}

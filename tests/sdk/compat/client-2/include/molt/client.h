/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file molt/client.h
 * @brief The Molt client library's C API (libmolt_client): connect an app, a bot or an engine to
 * a Molt server. C99, with the conventions of molt.h: status codes, an error text per client
 * (molt_client_last_error), zero-initialized option structs with struct_size first, and
 * append-only evolution (new functions and fields carry the MOLT_CLIENT_API_VERSION that added
 * them).
 *
 *   molt_client* c;
 *   molt_client_options o = {sizeof(o)};
 *   molt_client_create(&o, &c);
 *   molt_client_on_state(c, on_state, app);            // connecting, connected, closed ...
 *   molt_client_connect(c, "127.0.0.1", 7777, "ada", NULL, 0, NULL, 0);
 *   for (;;) {                                         // the app's own frame loop
 *     molt_client_step(c, 0.0015);                     // I/O and callbacks, within 1.5 ms
 *     ...
 *   }
 *   molt_client_destroy(c);
 *
 * Threads: the library starts none. Everything, I/O included, happens inside molt_client_step,
 * and every callback runs there, on the thread that steps. A client is not thread-safe: use it
 * from one thread at a time.
 *
 * Channels: the server's Welcome lists them; molt_client_channel() finds one by name. Payloads
 * are the channel's FlatBuffers root type, built by the app with the schema's generated code.
 *
 * A lost link (not a refusal or a Bye) is not the end: the client goes RECONNECTING, retries
 * with exponential backoff and jitter, and presents the session's resume token; inside the
 * server's resume window (net.resume_window_seconds) it gets the same session back, bindings
 * intact, with the events and answers sent to it meanwhile. Intents and requests made while
 * reconnecting are queued; frames that were on the wire when the link broke may be lost.
 */
#ifndef MOLT_CLIENT_H_
#define MOLT_CLIENT_H_

#include <molt/molt.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The client API version: grows with every append to this header. */
#define MOLT_CLIENT_API_VERSION 2

#if defined(__GNUC__)
#define MOLT_CLIENT_EXPORT __attribute__((visibility("default")))
#else
#define MOLT_CLIENT_EXPORT
#endif

typedef struct molt_client molt_client; /**< opaque */

/* Connection states (molt_client_state, molt_client_state_fn). */
#define MOLT_CLIENT_IDLE 0       /**< created, or disconnected by the app */
#define MOLT_CLIENT_CONNECTING 1 /**< resolving, connecting, or waiting for the Welcome */
#define MOLT_CLIENT_CONNECTED 2  /**< welcomed: a session exists; channels are known */
#define MOLT_CLIENT_CLOSED 3     /**< refused, or the server ended the session: see the reason */
/* --- client API 2 --- */
/** The link was lost: the client reconnects with exponential backoff (and jitter) and resumes
 *  its session; sends are queued meanwhile (up to max_send_queue_bytes). */
#define MOLT_CLIENT_RECONNECTING 4

/** @brief Options for molt_client_create. Zero-initialize, set struct_size, then what you need. */
typedef struct molt_client_options {
  uint32_t struct_size; /**< sizeof(molt_client_options) */
  uint32_t reserved;
  double connect_timeout_seconds; /**< resolve + connect + Welcome; 0: 10 s */
  size_t max_send_queue_bytes;    /**< queued outbound bytes before sends fail; 0: 1 MiB */
  /* --- client API 2 --- */
  uint32_t flags; /**< MOLT_CLIENT_NO_RECONNECT: a lost link closes the client */
  uint32_t reserved2;
  double reconnect_max_seconds; /**< the longest wait between attempts; 0: 8 s (first: 0.1 s) */
} molt_client_options;

#define MOLT_CLIENT_NO_RECONNECT 1u

/** @brief The connection changed state; `reason` says why (empty when there is none): the
 *  server's Refuse or Bye text prefixed with its reason name, or the transport's error. */
typedef void (*molt_client_state_fn)(void* user_data, int32_t state, const char* reason);
/** @brief An event arrived on `channel`. `data` is valid during the call only. */
typedef void (*molt_client_event_fn)(void* user_data, uint16_t channel, const void* data,
                                     size_t size);
/** @brief A request was answered: MOLT_OK, or MOLT_ERR_REJECTED (with the channel's reject
 *  payload), MOLT_ERR_RATE_LIMITED, MOLT_ERR_TIMEOUT (no answer in time, or the connection
 *  ended), or the handler's error. Called exactly once per accepted molt_client_request. */
typedef void (*molt_client_response_fn)(void* user_data, molt_status_t status, const void* data,
                                        size_t size);

/** @brief Creates a client. `options` may be NULL (defaults). */
MOLT_CLIENT_EXPORT molt_status_t molt_client_create(const molt_client_options* options,
                                                    molt_client** out_client);
/** @brief Disconnects (without callbacks) and frees the client. NULL is ignored. */
MOLT_CLIENT_EXPORT void molt_client_destroy(molt_client* client);
/** @brief The text of the last failed call on this client ("" when none). */
MOLT_CLIENT_EXPORT const char* molt_client_last_error(const molt_client* client);

/** @brief Starts connecting to `host:port` as `user`; the handshake proceeds inside
 *  molt_client_step. `credentials` and `join_data` (may be NULL with size 0) go in the Hello.
 *  MOLT_ERR_STATE while already connecting or connected. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_connect(molt_client* client, const char* host,
                                                     uint16_t port, const char* user,
                                                     const void* credentials,
                                                     size_t credentials_size, const void* join_data,
                                                     size_t join_size);
/** @brief Says goodbye and closes; pending requests complete with MOLT_ERR_TIMEOUT. The state
 *  becomes MOLT_CLIENT_IDLE. Does nothing when idle. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_disconnect(molt_client* client);

/** @brief Runs I/O, timers and callbacks for at most about `budget_seconds` (0: only what is
 *  ready now). Call it from the app's frame loop. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_step(molt_client* client, double budget_seconds);

/** @brief MOLT_CLIENT_*. */
MOLT_CLIENT_EXPORT int32_t molt_client_state(const molt_client* client);
/** @brief The session id the Welcome gave, or 0. */
MOLT_CLIENT_EXPORT uint64_t molt_client_session(const molt_client* client);
/** @brief The smoothed round-trip time to the server in seconds (0 before the first pong). */
MOLT_CLIENT_EXPORT double molt_client_rtt(const molt_client* client);

/** @brief The id of the server's channel `name` (from the Welcome). MOLT_ERR_NOT_FOUND when the
 *  server has none by that name; MOLT_ERR_STATE before the Welcome. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_channel(molt_client* client, const char* name,
                                                     uint16_t* out_channel);

/** @brief Sends an intent. Checked here first, so a well-behaved client is never refused by the
 *  server: the channel must be an intent channel, the frame must fit the server's frame cap, and
 *  the client-side copy of the channel's rate limit must have a token (MOLT_ERR_RATE_LIMITED
 *  otherwise, nothing sent). */
MOLT_CLIENT_EXPORT molt_status_t molt_client_intent(molt_client* client, uint16_t channel,
                                                    const void* data, size_t size);
/** @brief Sends a request; `fn` gets the answer inside a later step (exactly once, also on
 *  timeout or disconnect). `timeout_seconds` 0 uses the channel's timeout from the Welcome. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_request(molt_client* client, uint16_t channel,
                                                     const void* data, size_t size,
                                                     double timeout_seconds,
                                                     molt_client_response_fn fn, void* user_data);

/** @brief Calls `fn` for events on `channel` (MOLT_CLIENT_ALL_CHANNELS: every channel). One
 *  handler per channel; a new one replaces the old. NULL `fn` removes it. */
#define MOLT_CLIENT_ALL_CHANNELS 0xFFFFu
MOLT_CLIENT_EXPORT molt_status_t molt_client_on_event(molt_client* client, uint16_t channel,
                                                      molt_client_event_fn fn, void* user_data);
/** @brief Calls `fn` on every state change (one handler; NULL removes it). */
MOLT_CLIENT_EXPORT molt_status_t molt_client_on_state(molt_client* client, molt_client_state_fn fn,
                                                      void* user_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MOLT_CLIENT_H_ */

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
 * An app that is not a frame loop (a bot, a tool, a server-side client, an engine with its own
 * poller) does not spin: it sleeps in molt_client_wait, or polls molt_client_socket() itself for
 * molt_client_socket_events() within molt_client_timeout(), then steps (client API 4).
 *
 * The server's limits are the contract a client keeps (docs/client.md, "The server's limits"):
 * its Welcome announces a transport budget per connection (bytes_per_tick and messages_per_tick at
 * its tick_rate, with a burst of budget_burst_ticks ticks; 8192 bytes and 64 messages per tick at
 * 60 Hz with 4 ticks by default), a frame cap (max_frame_bytes, 8192 by default) and each
 * channel's rate and burst. Blowing the budget ends the session (Flood); exceeding a channel's
 * rate gets its messages refused. libmolt_client keeps all of them for the app (client API 4): it
 * refuses a payload that cannot fit a frame and an intent or request over its channel's rate
 * (MOLT_ERR_RATE_LIMITED); what it accepts goes into a send queue that leaves in order, paced
 * below the budget and each channel's rate. The queue holds max_send_queue_bytes (also what waits
 * for a reconnect); beyond it sends fail with MOLT_ERR_STATE until it drains. Disconnecting or
 * destroying a client writes what the queue holds first, for at most 50 ms at the server's pace.
 * So a client on this library is never refused by the server for sending too much, however fast
 * the app calls.
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
#define MOLT_CLIENT_API_VERSION 9

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
  /* --- client API 6 --- */
  const char* tls_ca_file;     /**< with MOLT_CLIENT_TLS: the CAs to trust (PEM); NULL: the
                                    system's store */
  const char* tls_server_name; /**< with MOLT_CLIENT_TLS: the name the server's certificate must
                                    carry, also sent as SNI; NULL: the host given to connect */
  /* --- client API 8 --- */
  double predict_timeout_seconds; /**< a predicted intent with no answer by then rolls back;
                                       0: 2 s */
} molt_client_options;

#define MOLT_CLIENT_NO_RECONNECT 1u
/** Client API 6: connect over TLS (1.2 or 1.3) and verify the server's certificate chain and
 *  name. A certificate that is refused closes the client (MOLT_CLIENT_CLOSED) with the reason,
 *  e.g. "TLS: the server's certificate is refused: certificate has expired". */
#define MOLT_CLIENT_TLS 2u
/** Client API 7: connect over WebSocket (RFC 6455) to a server's WebSocket port (moltd --ws),
 *  `ws://host:port/`, or `wss://` with MOLT_CLIENT_TLS: the same frames, handshake, limits and
 *  resume, one frame per binary message. An upgrade the server refuses closes the client with
 *  its status and text, e.g. "WebSocket upgrade refused by the server (403 Forbidden): ...". */
#define MOLT_CLIENT_WEBSOCKET 4u

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
 *  ready now). Call it from the app's frame loop. Controllers (client API 3) get what the I/O
 *  left of the budget, at least a quarter of it; with 0, the client kernel's own frame budget. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_step(molt_client* client, double budget_seconds);

/** @brief MOLT_CLIENT_*. */
MOLT_CLIENT_EXPORT int32_t molt_client_state(const molt_client* client);
/** @brief The session id the Welcome gave, or 0. */
MOLT_CLIENT_EXPORT uint64_t molt_client_session(const molt_client* client);
/** @brief The smoothed round-trip time to the server in seconds (0 before the first pong). */
MOLT_CLIENT_EXPORT double molt_client_rtt(const molt_client* client);

/** @brief The id of the server's channel `name` (from the Welcome; while reconnecting, the last
 *  one's). MOLT_ERR_NOT_FOUND when the server has none by that name; MOLT_ERR_STATE before the
 *  Welcome. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_channel(molt_client* client, const char* name,
                                                     uint16_t* out_channel);

/** @brief Sends an intent. Checked here first, so a well-behaved client is never refused by the
 *  server: the channel must be an intent channel, the frame must fit the server's frame cap, and
 *  the client-side copy of the channel's rate limit must have a token (MOLT_ERR_RATE_LIMITED
 *  otherwise, nothing sent). Since client API 8 it also sends on an unreliable channel, whose
 *  payload must fit its cap (MOLT_UNRELIABLE_MAX_PAYLOAD, MOLT_ERR_INVALID_ARGUMENT beyond). */
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

/* --- Replicas (client API 3) ------------------------------------------------------------------
 * State objects the server replicates to this session (docs/client.md, "Replicas"). The client
 * keeps the latest value of every field of every replica it was sent, whether or not anything
 * listens, so a listener registered late still finds them. After a disconnect or a close they
 * stay readable as last known until the next session's Welcome removes them. */

typedef uint32_t molt_client_replica_t; /**< the server's replica id; valid until REMOVED */

#define MOLT_CLIENT_REPLICA_SNAPSHOT                                                             \
  0                                   /**< arrived, or replaced after a resume: read every field \
                                       */
#define MOLT_CLIENT_REPLICA_CHANGED 1 /**< field `field` has a new value */
#define MOLT_CLIENT_REPLICA_REMOVED 2 /**< gone once the callback returns */

#define MOLT_CLIENT_FIELD_INT 0   /**< molt_client_replica_int */
#define MOLT_CLIENT_FIELD_FLOAT 1 /**< molt_client_replica_float */
#define MOLT_CLIENT_FIELD_BYTES 2 /**< molt_client_replica_bytes */

/** @brief A replica update. `field` is the changed field's index for CHANGED, -1 otherwise. */
typedef void (*molt_client_replica_fn)(void* user_data, molt_client_replica_t replica, int32_t what,
                                       int32_t field);

/** @brief Calls `fn` for updates of replicas named `name` (NULL: every replica). Replicas already
 *  held are announced at once as SNAPSHOT. One handler per name; a new one replaces the old;
 *  NULL `fn` removes it. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_on_replica(molt_client* client, const char* name,
                                                        molt_client_replica_fn fn, void* user_data);
/** @brief The held replica named `name` with the lowest id. MOLT_ERR_NOT_FOUND when none. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_replica_find(molt_client* client, const char* name,
                                                          molt_client_replica_t* out_replica);
/** @brief The replica's name, valid until it is removed or replaced by a new snapshot; NULL for
 *  an unknown replica. */
MOLT_CLIENT_EXPORT const char* molt_client_replica_name(molt_client* client,
                                                        molt_client_replica_t replica);
/** @brief The index and type (MOLT_CLIENT_FIELD_*) of field `field_name` (either out may be
 *  NULL). MOLT_ERR_NOT_FOUND names the replica and field. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_replica_field(molt_client* client,
                                                           molt_client_replica_t replica,
                                                           const char* field_name,
                                                           int32_t* out_index, int32_t* out_type);
/** @brief Field `field`'s value. MOLT_ERR_INVALID_ARGUMENT for a field of another type. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_replica_int(molt_client* client,
                                                         molt_client_replica_t replica,
                                                         int32_t field, int64_t* out_value);
MOLT_CLIENT_EXPORT molt_status_t molt_client_replica_float(molt_client* client,
                                                           molt_client_replica_t replica,
                                                           int32_t field, double* out_value);
/** @brief A bytes field: `*out_data` is valid until the next step or disconnect. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_replica_bytes(molt_client* client,
                                                           molt_client_replica_t replica,
                                                           int32_t field, const void** out_data,
                                                           size_t* out_size);

/* --- Controllers: the client kernel (client API 3) -------------------------------------------
 * Controllers are plugins of kind MOLT_PLUGIN_KIND_CONTROLLER (molt.h): the same descriptor and
 * host API as services, without the server's networking slots, with the client slots of ABI 1.2
 * (client_intent, client_request, client_replica_get) on this client's connection. What the
 * server sends reaches them on the kernel's Bus ("Net.Event.<channel>", "Net.Replica.<name>",
 * "Net.State"). The first load or add boots the process's client kernel (one per process: a
 * second client gets MOLT_ERR_STATE). They run inside molt_client_step, after the I/O, within
 * its budget, and stop (reverse boot order) in molt_client_destroy. docs/client.md. */

/** @brief Loads a controller file, or every .so in a directory (all or nothing: one refused file
 *  refuses the set, with one line per problem). Before molt_client_start. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_load_controllers(molt_client* client,
                                                              const char* path);
/** @brief Registers a controller linked into the app: `entry` returns its descriptor (in C++,
 *  &molt::EntryOf<Type>). Before molt_client_start. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_add_controller(molt_client* client,
                                                            molt_plugin_entry_fn entry);
/** @brief Boots the controllers: every init, then every start, in dependency order; a failure
 *  stops the ones already started and names the culprit. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_start(molt_client* client);

/* --- Event-loop integration (client API 4) ---------------------------------------------------
 * For an app that waits instead of running a frame loop. Either call molt_client_wait(c, limit)
 * then molt_client_step(c, 0), in a loop; or, with a poller of your own (epoll, an engine's),
 * watch molt_client_socket(c) for molt_client_socket_events(c) and wake within
 * molt_client_timeout(c) seconds, then step. All three change as the client works: read them
 * again after every step. An idle connected client wakes about once per ping interval. */

#define MOLT_CLIENT_WAIT_READ 1  /**< poll the socket for reading (POLLIN) */
#define MOLT_CLIENT_WAIT_WRITE 2 /**< poll the socket for writing (POLLOUT) */

/** @brief The descriptor of the client's socket, or -1 while there is none (idle, closed,
 *  resolving a name, or between reconnect attempts). Only poll it; never read, write or close it.
 *  Since client API 4. */
MOLT_CLIENT_EXPORT int32_t molt_client_socket(const molt_client* client);
/** @brief What to poll molt_client_socket() for: MOLT_CLIENT_WAIT_READ and/or
 *  MOLT_CLIENT_WAIT_WRITE; 0 without a socket. Since client API 4. */
MOLT_CLIENT_EXPORT int32_t molt_client_socket_events(const molt_client* client);
/** @brief Seconds until the client needs a step even if the socket stays quiet (a ping, a request's
 *  deadline, a reconnect attempt, paced sends, controllers' tasks): 0 to step now, -1 when nothing
 *  is scheduled (only the socket or the app wakes it). Since client API 4. */
MOLT_CLIENT_EXPORT double molt_client_timeout(molt_client* client);
/** @brief Blocks until the socket is ready, molt_client_timeout() passes, or `max_seconds` pass
 *  (INFINITY: no limit besides the client's own timers), then returns MOLT_OK: step next. Runs no
 *  callback. MOLT_ERR_STATE when `max_seconds` is infinite and nothing could wake the client (no
 *  socket, no timer); MOLT_ERR_INVALID_ARGUMENT for a negative or NaN limit. A signal ends the
 *  wait early (MOLT_OK). Since client API 4. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_wait(molt_client* client, double max_seconds);
/** @brief Bytes waiting in the send queue: paced to the server's limits, or held while
 *  reconnecting. Since client API 4. */
MOLT_CLIENT_EXPORT size_t molt_client_send_queue_bytes(const molt_client* client);

/* --- Hot swap of controllers (client API 5) -------------------------------------------------- */

/** @brief Loads `path` (a controller file, or a directory of them) as a new generation of this
 *  client's controllers and swaps it in for the running ones, after molt_client_start: each
 *  controller's export_state goes to the new controller of the same name, the new ones start,
 *  and the old ones are released (their session-less state goes with them). MOLT_OK when the new
 *  controllers run. On failure the running ones keep running (a load, init or export failure) or
 *  are restored from fresh copies with their state (an import or start failure), and the error
 *  names the stage. Not from inside a controller's callback (a controller asks with
 *  reload_request, ABI 1.3). The connection is not touched. Since client API 5. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_reload_controllers(molt_client* client,
                                                                const char* path);

/* --- Unreliable channels and predicted intents (client API 8) --------------------------------
 * docs/client.md, "Unreliable channels and predicted intents". An unreliable channel's events
 * arrive through molt_client_on_event like any other: "lost > late", and on a latest-wins channel
 * one older than the newest already delivered is dropped, never delivered after it. The client
 * sends on one with molt_client_intent. Whether they travel over a datagram link or this one, the
 * calls are the same.
 *
 * A predicted intent (the spec's Prediction.wrap) is applied by the app at once, then confirmed
 * or undone: every one is resolved exactly once, accepted when the server's handler took it,
 * rejected when any check or the handler refused it, or timed out when no answer came within
 * predict_timeout_seconds (2 s) or the session ended; on a rejection or a timeout the app rolls
 * its prediction back. molt_client_pending lists those not yet resolved, oldest first, so the app
 * can replay them over the authoritative state the server sends (reconciliation). */

/** @brief A predicted intent was decided: `accepted` 1 (status MOLT_OK), or 0 with status
 *  MOLT_ERR_REJECTED or MOLT_ERR_TIMEOUT: roll it back. Since client API 8. */
typedef void (*molt_client_resolved_fn)(void* user_data, uint16_t channel, uint32_t seq,
                                        int32_t accepted, molt_status_t status);
/** @brief One pending predicted intent, oldest first. `data` is valid during the call only. */
typedef void (*molt_client_pending_fn)(void* user_data, uint16_t channel, uint32_t seq,
                                       const void* data, size_t size);

/** @brief Sends a predicted intent on `channel`, checked like molt_client_intent (a
 *  MOLT_CHANNEL_PREDICTED_INTENT channel); `*out_seq` (may be NULL) is its sequence number, which
 *  the resolution names. Nothing is sent (and nothing will resolve) when this fails. Since client
 *  API 8. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_predict(molt_client* client, uint16_t channel,
                                                     const void* data, size_t size,
                                                     uint32_t* out_seq);
/** @brief Calls `fn` as each predicted intent is resolved (one handler; NULL removes it), inside a
 *  step, or in molt_client_disconnect for those still pending. Since client API 8. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_on_resolved(molt_client* client,
                                                         molt_client_resolved_fn fn,
                                                         void* user_data);
/** @brief Calls `fn` for each predicted intent on `channel` (MOLT_CLIENT_ALL_CHANNELS: every
 *  channel) not yet resolved, oldest first: what to replay over authoritative state. Since client
 *  API 8. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_pending(molt_client* client, uint16_t channel,
                                                     molt_client_pending_fn fn, void* user_data);

/* --- The device's quality (client API 9) ----------------------------------------------------
 * docs/client.md, "The device's quality". The server grades each session's link Good, Strained
 * or Poor and sends a weaker one less (replica deltas every 2nd or 4th tick, no Low unreliable
 * events); a device that cannot keep up however good its network is says so here. */

/** @brief The device's quality as the app measures it: 1 when it keeps its frame budget, lower
 *  when it misses it (the spec's DeviceBench ranges 0.25 .. 4); below the server's
 *  net.governor_device_strained (0.5) the session is graded Strained at best. 0 withdraws the
 *  hint. Sent in every Hello from now on, and at once to a connected server of wire schema 2.7
 *  or later (an older one never hears it). MOLT_ERR_INVALID_ARGUMENT unless finite and in
 *  [0, 16]. Since client API 9. */
MOLT_CLIENT_EXPORT molt_status_t molt_client_set_device_quality(molt_client* client,
                                                                double quality);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MOLT_CLIENT_H_ */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File: molt/molt.h
 *
 * The Molt plugin ABI: the one header a plugin must include, and the promise every third-party
 * plugin relies on. C99, usable from C and C++.
 *
 * A plugin is a shared library exporting exactly one symbol, molt_plugin_entry(), which returns a
 * descriptor (molt_plugin_info): its name, version, kind, dependencies and lifecycle callbacks.
 * The host calls init() with a table of host functions (molt_host_api); everything a plugin does
 * to the kernel goes through that table.
 *
 * Conventions
 *
 *  1. Stability. Nothing in this header is ever reordered, retyped or removed once released. New
 *     functions and fields are appended at the end of their struct under a "ABI 1.N" marker, and
 *     MOLT_ABI_VERSION_MINOR grows. A plugin built against 1.N loads into any host 1.M with M >= N;
 *     an older host refuses it naming both versions, and a different major never loads. A plugin
 *     that records an older minor than its headers on purpose (to run on older hosts) checks each
 *     newer slot with MOLT_API_HAS(api, slot). A struct that starts with struct_size is read by
 *     size in both directions: set struct_size = sizeof(the struct) from this header, and a host
 *     of any later release reads the fields you have and takes 0 for the ones you do not.
 *  2. Status and error text. Every fallible call returns a molt_status_t: MOLT_OK (0) or a negative
 *     MOLT_ERR_* code. The text of the last failure is api->last_error(ctx), a host-owned string
 *     valid until the next call with the same context. A plugin callback that fails returns a
 *     negative status after api->set_error(ctx, "...") so the host can log why.
 *  3. Contexts and handles. Each loaded plugin instance has one molt_context_t, passed to init and
 *     then to every host call: it is how the host knows who owns what. Kernel objects are reached
 *     through 64-bit handles (molt_handle_t and its aliases), never pointers. A handle that is no
 *     longer live (unsubscribed, cancelled, closed, or owned by another plugin) gives
 *     MOLT_ERR_STALE, never a crash. 0 is never a valid handle.
 *  4. Ownership. Everything a plugin obtains through the table (subscriptions, hook handlers,
 *     tasks, scopes) belongs to its instance. When the instance stops, the host releases whatever
 *     the plugin did not release itself, in reverse order of creation, and no callback of the
 *     plugin runs after its stop() returned, except the `release` functions the plugin handed over
 *     (each called exactly once, so the plugin can free its user data).
 *  5. Memory. Whoever allocates frees. Strings and arrays passed to a call are read during the call
 *     only (the host copies what it keeps); strings and arrays the host passes to a callback are
 *     valid during that callback only. Strings are UTF-8 and NUL-terminated unless a length is
 *     given.
 *  6. Types. Only fixed-width integers, double, pointers and function pointers cross the ABI: no
 *     bool (uint8_t, 0 or 1) and no enum storage (int32_t with #defined values).
 *  7. Threads. Call the table only from the kernel thread: the one running init, start, stop and
 *     every callback. Plugin code never needs a lock for kernel state. A job's function (ABI 1.6)
 *     runs on a worker thread instead, and calls none of it.
 *  8. Exceptions never cross this boundary in either direction (C++ plugins: molt/molt.hpp catches
 *     them in its trampolines).
 *
 * A plugin in C (see docs/sdk.md for the walkthrough and molt/molt.hpp for C++):
 *
 *   #include <molt/molt.h>
 *
 *   static molt_status_t on_tick(void* user_data) {
 *     const molt_host_api* api = user_data;  (the init arguments, kept in a static)
 *     ...
 *     return MOLT_OK;
 *   }
 *   static molt_status_t init(molt_context_t* ctx, const molt_host_api* api, void** state) {
 *     molt_task_t task;
 *     *state = NULL;
 *     return api->task_every(ctx, 1.0, MOLT_PRIORITY_NORMAL, on_tick, (void*)api, NULL, &task);
 *   }
 *   static const molt_plugin_info info = {   (designated: later appends stay zero)
 *     .struct_size = sizeof(molt_plugin_info), .abi_version = MOLT_ABI_VERSION_CURRENT,
 *     .name = "ticker", .version = "1.0.0", .kind = MOLT_PLUGIN_KIND_SERVICE, .init = init,
 *     .description = "ticks once a second"
 *   };
 *   MOLT_PLUGIN_EXPORT const molt_plugin_info* molt_plugin_entry(void) { return &info; }
 */
#ifndef MOLT_MOLT_H_
#define MOLT_MOLT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- Versions --------------------------------------------------------------------------------- */

/** @brief The ABI major version: a plugin built against another major never loads. */
#define MOLT_ABI_VERSION_MAJOR 1
/** @brief The ABI minor version: grows with every append to this header. */
#define MOLT_ABI_VERSION_MINOR 12
/** @brief Packs a version as (major << 16) | minor. */
#define MOLT_ABI_VERSION(major, minor) ((((uint32_t)(major)) << 16) | ((uint32_t)(minor)))
#define MOLT_ABI_VERSION_CURRENT MOLT_ABI_VERSION(MOLT_ABI_VERSION_MAJOR, MOLT_ABI_VERSION_MINOR)
#define MOLT_ABI_MAJOR_OF(version) ((uint32_t)(version) >> 16)
#define MOLT_ABI_MINOR_OF(version) ((uint32_t)(version)&0xffffu)

/** @brief Marks the plugin's one exported symbol (everything else is hidden). */
#if defined(_WIN32)
#define MOLT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MOLT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* --- Status codes ----------------------------------------------------------------------------- */

typedef int32_t molt_status_t;

#define MOLT_OK 0
#define MOLT_ERR_INVALID_ARGUMENT (-1) /**< a bad value: null, out of range, malformed name */
#define MOLT_ERR_NOT_FOUND (-2)        /**< the named object does not exist */
#define MOLT_ERR_STALE (-3)            /**< the handle is not live (or not yours) */
#define MOLT_ERR_STATE (-4)            /**< wrong moment: e.g. the kernel is shutting down */
#define MOLT_ERR_INTERNAL (-5)         /**< a bug, or an exception caught at the boundary */
#define MOLT_ERR_SCOPE_CLOSED (-6)     /**< added to a closed scope: the cleanup already ran */
#define MOLT_ERR_UNSUPPORTED (-7)      /**< the host or plugin does not offer this */
#define MOLT_ERR_ALREADY_EXISTS (-8)   /**< the name is taken */
#define MOLT_ERR_REJECTED (-9)   /**< a validation refused; a hook handler returns it to veto */
#define MOLT_ERR_IO (-10)        /**< the operating system refused (files, sockets) */
#define MOLT_ERR_CANCELLED (-11) /**< cancelled: a killed process's body must return */
/* --- ABI 1.1 --- */
#define MOLT_ERR_TIMEOUT (-12)      /**< no answer in time (a request past its timeout) */
#define MOLT_ERR_RATE_LIMITED (-13) /**< a rate limit refused; retry later */

/* --- Handles ---------------------------------------------------------------------------------- */

/** @brief One loaded plugin instance, as the host knows it. Opaque; valid from init() until the
 *  instance is unloaded. */
typedef struct molt_context molt_context_t;

/** @brief A kernel object's id. 0 is never valid. */
typedef uint64_t molt_handle_t;
typedef molt_handle_t molt_topic_t;        /**< a pre-resolved Bus topic (never goes stale) */
typedef molt_handle_t molt_subscription_t; /**< a Bus subscription */
typedef molt_handle_t molt_hook_handler_t; /**< a handler on a hook point */
typedef molt_handle_t molt_task_t;         /**< a scheduled task */
typedef molt_handle_t molt_scope_t;        /**< a scope (0 = the instance's root scope) */
typedef molt_handle_t molt_process_t;      /**< a process (live until it ends) */
typedef molt_handle_t molt_completion_t;   /**< an operation a process may wait on */

/* --- Values ----------------------------------------------------------------------------------- */

#define MOLT_VALUE_NIL 0
#define MOLT_VALUE_BOOL 1   /**< as.i is 0 or 1 */
#define MOLT_VALUE_INT 2    /**< as.i */
#define MOLT_VALUE_DOUBLE 3 /**< as.d */
#define MOLT_VALUE_STRING 4 /**< size bytes of UTF-8 at as.ptr, not NUL-terminated */
#define MOLT_VALUE_BYTES 5  /**< size opaque bytes at as.ptr (a FlatBuffer, for instance) */
#define MOLT_VALUE_HANDLE 6 /**< as.handle: a session, task or other kernel id */

/** @brief One argument of a Bus topic or a hook context: 16 bytes, never owning what it points
 *  to (strings and bytes are valid for the call that carries them). */
typedef struct molt_value {
  int32_t type;  /**< MOLT_VALUE_* */
  uint32_t size; /**< bytes at as.ptr for STRING and BYTES, else 0 */
  union {
    int64_t i;
    double d;
    const void* ptr;
    uint64_t handle;
  } as;
} molt_value;

/* --- Constants -------------------------------------------------------------------------------- */

#define MOLT_PLUGIN_KIND_SERVICE 1    /**< server side, loaded by moltd */
#define MOLT_PLUGIN_KIND_CONTROLLER 2 /**< client side, loaded by libmolt_client */

/* Scheduler priorities; lower runs first. KERNEL ignores the step budget (use sparingly);
 * BACKGROUND runs only on budget left over. */
#define MOLT_PRIORITY_KERNEL 1
#define MOLT_PRIORITY_HIGH 2
#define MOLT_PRIORITY_NORMAL 3
#define MOLT_PRIORITY_LOW 4
#define MOLT_PRIORITY_BACKGROUND 5

#define MOLT_LOG_DEBUG 0
#define MOLT_LOG_INFO 1
#define MOLT_LOG_WARN 2
#define MOLT_LOG_ERROR 3

/* Hook point modes: a handler that fails rejects a fail-closed chain; a fail-open chain goes on. */
#define MOLT_HOOK_FAIL_CLOSED 0
#define MOLT_HOOK_FAIL_OPEN 1
#define MOLT_HOOK_DEFAULT_PRIORITY 100

/* Process states. The last three are terminal. */
#define MOLT_PROCESS_CREATED 0
#define MOLT_PROCESS_RUNNING 1
#define MOLT_PROCESS_SUSPENDED 2
#define MOLT_PROCESS_COMPLETED 3 /**< the body returned MOLT_OK */
#define MOLT_PROCESS_CRASHED 4   /**< the body failed; the result is its error text */
#define MOLT_PROCESS_KILLED 5    /**< process_kill; the result is the reason */

/* --- Callbacks -------------------------------------------------------------------------------- */

/** @brief Frees or closes what `user_data` holds; called exactly once. */
typedef void (*molt_cleanup_fn)(void* user_data);

/** @brief Receives a Bus topic: the topic first (NUL-terminated, also `topic_length` bytes), then
 *  the published arguments. Return MOLT_OK, or an error (with set_error) that the host logs. */
typedef molt_status_t (*molt_bus_fn)(void* user_data, const char* topic, size_t topic_length,
                                     const molt_value* args, size_t arg_count);

/** @brief What a hook handler sees and may change. */
typedef struct molt_hook_context {
  uint32_t struct_size; /**< sizeof(molt_hook_context) as the host compiled it */
  uint32_t reserved;
  const char* point; /**< the hook point's name */
  molt_value* args;  /**< mutable: a validator may rewrite values for the handlers after it */
  size_t arg_count;
  uint64_t session; /**< the session the action belongs to, 0 for none */
} molt_hook_context;

/** @brief A hook handler: MOLT_OK passes, MOLT_ERR_REJECTED vetoes (the chain stops), any other
 *  error counts as a failure (with set_error): it vetoes a fail-closed point and is skipped on a
 *  fail-open one. */
typedef molt_status_t (*molt_hook_fn)(void* user_data, molt_hook_context* context);

/** @brief A scheduled task. An error return is logged against the plugin. */
typedef molt_status_t (*molt_task_fn)(void* user_data);

/** @brief Receives bytes the host produces (stats, exported state); called any number of times,
 *  each call appending. */
typedef void (*molt_bytes_fn)(void* user_data, const void* data, size_t size);

/** @brief A process body, run on the process's own stack; `arg` is what process_start passed.
 *  It may call process_yield, process_sleep and process_wait from any depth. Returning MOLT_OK
 *  completes the process; an error (with set_error) crashes it with that text. When one of those
 *  calls returns MOLT_ERR_CANCELLED the process was killed: the body must return at once. */
typedef molt_status_t (*molt_process_fn)(void* user_data, void* arg);

/** @brief Hears a process end, once: its final state (MOLT_PROCESS_COMPLETED, _CRASHED or
 *  _KILLED) and result (`result_length` bytes, also NUL-terminated). */
typedef void (*molt_process_exit_fn)(void* user_data, molt_process_t process, int32_t state,
                                     const char* result, size_t result_length);

/** @brief How to spawn a process. Zero-initialize, then set what you need. */
typedef struct molt_process_options {
  uint32_t struct_size; /**< sizeof(molt_process_options) */
  int32_t priority;     /**< MOLT_PRIORITY_*; 0 means MOLT_PRIORITY_NORMAL */
  const char* name;     /**< for logs and the profiler ("Process <name>"); NULL: "Process_<pid>" */
  uint64_t stack_size;  /**< bytes (rounded up to pages; at least 16 KiB); 0: 128 KiB */
} molt_process_options;

/* --- Interfaces between plugins --------------------------------------------------------------- */

/** @brief An interface a plugin exports: a C struct of function pointers (the vtable), each taking
 *  the exporter's state (`self`) first. Name versions explicitly: "scores.v1". */
typedef struct molt_interface_export {
  const char* name;
  const void* vtable;
  uint32_t vtable_size; /**< sizeof the vtable struct: consumers check it before newer slots */
  uint32_t reserved;
} molt_interface_export;

/** @brief An interface as a consumer receives it: call vtable functions with `self`. Valid while
 *  the exporting plugin runs, which a declared dependency guarantees for the consumer's lifetime.
 */
typedef struct molt_interface_ref {
  const void* vtable;
  void* self;
  uint32_t vtable_size;
  uint32_t reserved;
} molt_interface_ref;

/* --- Networking: channels and sessions (ABI 1.1) ------------------------------------------------
 */

typedef molt_handle_t molt_channel_t; /**< a channel this plugin declared (ABI 1.1) */
typedef uint64_t molt_session_t;      /**< a session id: kernel-owned, 0 is none (ABI 1.1) */
typedef uint64_t molt_request_t;      /**< a request awaiting request_reply (ABI 1.1) */

/* Channel kinds: intents and requests go client -> server, events server -> client. */
#define MOLT_CHANNEL_INTENT 0
#define MOLT_CHANNEL_REQUEST 1
#define MOLT_CHANNEL_EVENT 2
/* --- ABI 1.10 (docs/network.md, "Unreliable channels and predicted intents") --- */
/** Both ways, "lost > late": payloads of at most MOLT_UNRELIABLE_MAX_PAYLOAD bytes. The server
 *  sends with event_send; clients send on it only when it has a verifier (on_intent hears them).
 *  Over a session's reliable link (no datagram link, a browser) it still arrives in order, but is
 *  not queued behind a backlog. */
#define MOLT_CHANNEL_UNRELIABLE 3
/** An intent whose every sequence number the server acknowledges: accepted when on_intent
 *  returns MOLT_OK, rejected by any step of the pipeline or an error return (the client rolls it
 *  back; it also rolls back one unacknowledged after its timeout). on_intent refuses one with
 *  MOLT_ERR_REJECTED (set_error: the reason): a game rule, counted as a rejection ("refused"),
 *  not as a handler error; any other error is a handler error. */
#define MOLT_CHANNEL_PREDICTED_INTENT 4
#define MOLT_UNRELIABLE_MAX_PAYLOAD 900 /**< bytes of payload on an unreliable channel */
#define MOLT_UNRELIABLE_LOW 0  /**< molt_channel_spec.unreliable_priority: shed first (default) */
#define MOLT_UNRELIABLE_HIGH 1 /**< always flows */

/* How a rule reads a field of the payload's root table. */
#define MOLT_FIELD_BOOL 0
#define MOLT_FIELD_INT8 1
#define MOLT_FIELD_UINT8 2
#define MOLT_FIELD_INT16 3
#define MOLT_FIELD_UINT16 4
#define MOLT_FIELD_INT32 5
#define MOLT_FIELD_UINT32 6
#define MOLT_FIELD_INT64 7
#define MOLT_FIELD_UINT64 8
#define MOLT_FIELD_FLOAT 9
#define MOLT_FIELD_DOUBLE 10
#define MOLT_FIELD_STRING 11

#define MOLT_RULE_RANGE 1      /**< min <= value <= max (numbers; NaN fails) */
#define MOLT_RULE_ONE_OF 2     /**< value is one of one_of[] (integers) */
#define MOLT_RULE_MAX_LENGTH 3 /**< at most max_length bytes (strings) */

/* Why a session ended (molt_session_info.exit_reason; the names go to Kernel.SessionEnd). */
#define MOLT_EXIT_NONE (-1) /**< still active */
#define MOLT_EXIT_CLIENT_CLOSED 0
#define MOLT_EXIT_KICKED 1
#define MOLT_EXIT_TIMED_OUT 2
#define MOLT_EXIT_PROTOCOL_ERROR 3
#define MOLT_EXIT_FLOOD 4
#define MOLT_EXIT_SLOW_READER 5
#define MOLT_EXIT_OFFENDER 6
#define MOLT_EXIT_SERVER_SHUTDOWN 7
#define MOLT_EXIT_TRANSPORT_ERROR 8

/** @brief A declarative rule on field `field` (its position in the .fbs table, from 0). */
typedef struct molt_field_rule {
  uint16_t field;
  uint8_t type; /**< MOLT_FIELD_* */
  uint8_t rule; /**< MOLT_RULE_* */
  uint32_t max_length;
  double min;
  double max;
  const int64_t* one_of;
  size_t one_of_count;
  const char* name; /**< for error texts and the audit */
} molt_field_rule;

/** @brief The payload verifier: the schema's generated FlatBuffers verifier. Non-zero: valid. */
typedef int32_t (*molt_verify_fn)(void* user_data, const void* data, size_t size);
/** @brief An accepted intent. args[0] is the payload (MOLT_VALUE_BYTES), as validators left it.
 *  An error return (with set_error) is logged and counted as a handler error. */
typedef molt_status_t (*molt_intent_fn)(void* user_data, molt_session_t session,
                                        const molt_value* args, size_t arg_count);
/** @brief An accepted request: answer it with request_reply, now or later (before the channel's
 *  timeout). An error return answers the request with that status unless it was answered. */
typedef molt_status_t (*molt_request_fn)(void* user_data, molt_session_t session,
                                         const molt_value* args, size_t arg_count,
                                         molt_request_t request);
/** @brief A session started (or was already live when session_on was called). */
typedef void (*molt_session_fn)(void* user_data, molt_session_t session);
/* --- ABI 1.3 --- */
/** @brief A session really ended, with its MOLT_EXIT_* reason (session_bind_end). */
typedef void (*molt_session_end_fn)(void* user_data, molt_session_t session, int32_t exit_reason);

/** @brief A channel declaration. Zero-initialize, then set what you need. */
typedef struct molt_channel_spec {
  uint32_t struct_size;  /**< sizeof(molt_channel_spec) */
  int32_t kind;          /**< MOLT_CHANNEL_* */
  const char* name;      /**< [A-Za-z0-9_.-], 1..120 characters, unique per server */
  const char* schema;    /**< the payload's FlatBuffers root type, e.g. "chat.Say" */
  molt_verify_fn verify; /**< required for intents and requests */
  const molt_field_rule* rules;
  size_t rule_count;
  double rate;  /**< per session per second; 0: the default (30); INFINITY: unlimited */
  double burst; /**< 0: equal to the rate */
  int32_t open; /**< 1: accept payloads without a validator (the audit reports it) */
  uint32_t reserved;
  double timeout_seconds;     /**< requests: 0 is 15 s; clamped to 0.5 .. 120 */
  const void* reject_payload; /**< requests: sent with rejections */
  size_t reject_size;
  molt_intent_fn on_intent;   /**< intents; may be NULL (validators and the topic still run) */
  molt_request_fn on_request; /**< requests */
  void* user_data;            /**< passed to verify and the handler */
  /* --- ABI 1.10: unreliable channels (older plugins pass the smaller size: Low, not latest) --- */
  int32_t unreliable_priority; /**< MOLT_UNRELIABLE_LOW (0) or MOLT_UNRELIABLE_HIGH */
  int32_t latest_wins;         /**< 1: a message older than the newest taken is dropped */
} molt_channel_spec;

/** @brief What session_info reports. Pointers stay valid until the session is destroyed (after
 *  its leave cleanups ran); copy what you keep. */
typedef struct molt_session_info {
  uint32_t struct_size;  /**< set by the caller: sizeof(molt_session_info) */
  int32_t active;        /**< 1 from the handshake until the client leaves */
  const char* user;      /**< the authenticated user id (NUL-terminated) */
  const void* join_data; /**< the hello's join data: untrusted client bytes */
  size_t join_size;
  const char* address; /**< the client's IP address */
  int32_t exit_reason; /**< MOLT_EXIT_*; MOLT_EXIT_NONE while active */
  uint32_t reserved;
  double rtt_seconds; /**< smoothed round-trip time; 0 before the first pong */
  /* --- ABI 1.12: the link's grade (docs/network.md, "Link tiers"; older plugins pass the smaller
   * size: not written) --- */
  int32_t link_tier; /**< MOLT_LINK_GOOD, _STRAINED or _POOR (Good until first graded) */
  uint32_t reserved2;
  double rtt_median_seconds; /**< the median of the last 10 pings' round trips; 0 before a pong */
  double jitter_seconds;     /**< their mean absolute deviation from it */
  double ping_loss;          /**< the share of the last 40 pings not answered in time, 0..1 */
  double device_quality;     /**< the client's device hint (1: keeps its frame budget); 0: none */
} molt_session_info;

/* How the link governor grades a session's link (molt_session_info.link_tier, ABI 1.12): from
 * its pings, and Strained at best when its client's device is weak (device_quality below
 * net.governor_device_strained). A Strained link gets replica deltas every 2nd tick, a Poor one
 * every 4th and no Low unreliable events. Changes are published on the Bus as Net.TierChanged
 * [session, tier, median_ms, jitter_ms, loss]. */
#define MOLT_LINK_GOOD 0
#define MOLT_LINK_STRAINED 1
#define MOLT_LINK_POOR 2

/* --- Replicas: server-owned state replicated to sessions (ABI 1.2) ------------------------------
 * A replica has a fixed list of typed fields. Writes mark fields dirty; delivery coalesces at the
 * replica's next scheduler deadline (1 / tick_rate after the previous one): a session that has
 * not seen it gets a snapshot, the others the changed fields. docs/network.md, "Replicas". */

typedef molt_handle_t molt_replica_t; /**< a replica this plugin created (ABI 1.2) */

#define MOLT_REPLICA_INT 0   /**< int64_t */
#define MOLT_REPLICA_FLOAT 1 /**< double */
#define MOLT_REPLICA_BYTES 2 /**< up to max_bytes bytes (a string, a FlatBuffer, ...) */

#define MOLT_AUDIENCE_ALL 0  /**< every session, joining ones included */
#define MOLT_AUDIENCE_LIST 1 /**< the sessions added with replica_add_session */

/** @brief One field of a replica. Fields are numbered in declaration order, from 0. */
typedef struct molt_replica_field {
  const char* name;   /**< 1..64 characters, unique in the replica */
  int32_t type;       /**< MOLT_REPLICA_* */
  uint32_t max_bytes; /**< MOLT_REPLICA_BYTES: the cap; 0 is 256 */
} molt_replica_field;

/** @brief A replica. Zero-initialize, then set what you need. */
typedef struct molt_replica_spec {
  uint32_t struct_size; /**< sizeof(molt_replica_spec) */
  int32_t audience;     /**< MOLT_AUDIENCE_* */
  const char* name;     /**< what clients find it by, 1..128 characters (need not be unique) */
  const molt_replica_field* fields;
  size_t field_count; /**< 1..64 */
  double tick_rate;   /**< deliveries per second at most; 0 is 10 */
  /* --- ABI 1.11: deadbands (older plugins pass the smaller size: none) --- */
  /** NULL, or `field_count` thresholds, one per field: a change of an int or float field by less
   *  than its threshold from the value a session was last sent is not sent to it (spec:
   *  Quantize; its copy never drifts by the threshold or more); 0: every change. */
  const double* quantize;
} molt_replica_spec;

/* --- Interest: who sees a replica (ABI 1.11; docs/network.md, "Interest") ----------------------
 * A MOLT_AUDIENCE_LIST replica's sessions come from sources: its list (replica_add_session), the
 * zones bound to it that they are in, and the grids it is placed in that see it from where they
 * are. An interest predicate (replica_set_interest) then chooses among them (on a
 * MOLT_AUDIENCE_ALL replica, among everyone). A session gets the replica's snapshot when it
 * comes in and a remove when it goes out, once each however many sources hold it. Zones and
 * grids are the kernel's: in a swap the next generation declares them again by name and finds
 * them as they were (members, bindings, positions). */

typedef molt_handle_t molt_zone_t; /**< an interest group this plugin declared (ABI 1.11) */
typedef molt_handle_t molt_grid_t; /**< a spatial grid this plugin declared (ABI 1.11) */

/** @brief Non-zero when `session` may see the replica. Called on the kernel thread when a session
 *  becomes a candidate and at replica_refresh_interest; it must not change the replica's
 *  audience. */
typedef int32_t (*molt_interest_fn)(void* user_data, molt_session_t session);

/** @brief A spatial grid (ABI 1.11). Zero-initialize, then set what you need. */
typedef struct molt_grid_spec {
  uint32_t struct_size; /**< sizeof(molt_grid_spec) */
  uint32_t reserved;
  const char* name;    /**< 1..128 characters; a swap's next generation finds the grid by it */
  double radius;       /**< a session sees the replicas within it; > 0 */
  double cell_size;    /**< the side of a cell; 0 is the radius */
  double leave_radius; /**< a replica seen stays seen within it; 0 is the radius; >= radius */
  double rate;         /**< interest passes a second, (0, 100]; 0 is 10 */
} molt_grid_spec;

/* --- Profiles: per-player documents the kernel keeps (ABI 1.4; docs/profiles.md) ----------------
 * A profile store is declared by name; from then on every session has a profile in it: a JSON
 * object loaded when the session joins (under a lease, so that one server at a time holds it),
 * written by the plugin, and saved by the kernel (autosave, the session's end, the close). The
 * store belongs to the kernel, not to the plugin: a swap's next generation declares the same name
 * again and adopts it with every loaded profile. Callbacks run on the kernel thread. */

typedef molt_handle_t molt_profile_t; /**< a profile store this plugin declared (ABI 1.4) */

#define MOLT_PROFILE_NONE 0    /**< no such session (or it is not in this store yet) */
#define MOLT_PROFILE_PENDING 1 /**< loading: wait for Kernel.ProfileLoaded(session, name) */
#define MOLT_PROFILE_LOADED 2  /**< readable and writable */
#define MOLT_PROFILE_FAILED 3  /**< the load failed (Kernel.ProfileFailed): it is never written */
#define MOLT_PROFILE_LOST 4    /**< another server took the lease over: the session ends */

/** @brief molt_profile_spec.flags: a failed load does not kick the session (it is kicked by
 *  default: defaults written over a real record is how wipes happen). */
#define MOLT_PROFILE_NO_KICK 1u
/** @brief molt_profile_spec.flags: every save is also copied to the backup slot "live". */
#define MOLT_PROFILE_MIRROR 2u

/** @brief One migration step: writes the document `document` (JSON text at schema version
 *  `from`) at version from + 1 to `sink`. An error (with set_error) fails the load: the session's
 *  profile does not load and the record is left as it is. */
typedef molt_status_t (*molt_profile_migrate_fn)(void* user_data, uint32_t from,
                                                 const char* document, size_t size,
                                                 molt_bytes_fn sink, void* sink_user_data);
/** @brief Gates every save: MOLT_OK writes `document`; an error (with set_error) refuses it, the
 *  stored revision stays and the refusal is logged with the key. */
typedef molt_status_t (*molt_profile_validate_fn)(void* user_data, const char* document,
                                                  size_t size);

/** @brief A transaction's change (profile_transact): reads the two documents (JSON text) and
 *  writes each one's new text to its sink (a document not written stays as it was). MOLT_OK
 *  commits; MOLT_ERR_REJECTED aborts ("Aborted"); any other error fails it ("MutatorError"). */
typedef molt_status_t (*molt_profile_mutate_fn)(void* user_data, const char* document_a,
                                                size_t size_a, const char* document_b,
                                                size_t size_b, molt_bytes_fn sink_a,
                                                void* sink_a_user_data, molt_bytes_fn sink_b,
                                                void* sink_b_user_data);

/** @brief A profile store. Zero-initialize, then set what you need. */
typedef struct molt_profile_spec {
  uint32_t struct_size;      /**< sizeof(molt_profile_spec) */
  uint32_t schema_version;   /**< the documents' format; older records are migrated up to it */
  const char* name;          /**< [A-Za-z0-9_.-], 1..64 characters; keys are "<name>/<user>" */
  const char* defaults_json; /**< a JSON object filling what a document lacks; NULL is {} */
  double autosave_seconds;   /**< dirty profiles are written this often (with jitter); 0 is 60 */
  double lease_seconds;      /**< how long a lease outlives its holder's silence; 0 is 180 */
  const double* backoff_seconds; /**< retry delays of failed saves and busy loads; NULL: 1 2 4 8 */
  size_t backoff_count;
  uint32_t flags; /**< MOLT_PROFILE_* flags */
  uint32_t reserved;
  molt_profile_migrate_fn migrate;   /**< NULL: a record at an older version does not load */
  molt_profile_validate_fn validate; /**< NULL: every document is written */
  void* user_data;                   /**< passed to migrate and validate */
  /** Backups: a save copies the document to one of 3 rotating slots when one is due (the
   *  schedule is kept in the record, so it holds across servers); 0 is daily, below 0 none. A
   *  record that exists but does not decode or migrate loads from the newest readable backup
   *  (Kernel.ProfileRestored(session, name, slot, revision)). */
  double backup_seconds;
} molt_profile_spec;

/* --- Phases: schedulers stepped at fixed points of the tick (ABI 1.5; spec: phase schedulers) ---
 */

/* Where in a tick a task runs. PRE_TICK and POST_TICK are schedulers of their own, built on first
 * use, each with the main scheduler's budget floor as a fixed budget (docs/sdk.md, "Phases"). */
#define MOLT_PHASE_TICK 0      /**< the main scheduler: task_schedule/after/every's */
#define MOLT_PHASE_PRE_TICK 1  /**< just before each tick's main tasks: input before the step */
#define MOLT_PHASE_POST_TICK 2 /**< just after them: replication, work that reads the step */

/* What a task_start task does: the three task slots' behaviours, in any phase. */
#define MOLT_TASK_NEXT_STEP 0 /**< once, on the phase's next step (as task_schedule) */
#define MOLT_TASK_AFTER 1     /**< once, at least `seconds` from now (as task_after) */
#define MOLT_TASK_EVERY 2 /**< every `seconds` (0: every tick) until cancelled (as task_every) */

/** @brief A task for task_start. Zero-initialize, then set what you need. */
typedef struct molt_task_spec {
  uint32_t struct_size; /**< sizeof(molt_task_spec) */
  int32_t phase;        /**< MOLT_PHASE_* */
  int32_t kind;         /**< MOLT_TASK_* */
  int32_t priority;     /**< MOLT_PRIORITY_*; 0 is MOLT_PRIORITY_NORMAL */
  double seconds;       /**< AFTER: the delay; EVERY: the interval (finite, >= 0); else unused */
} molt_task_spec;

/* --- Workers: jobs on the kernel's worker threads (ABI 1.6; docs/workers.md) ------------------ */

typedef molt_handle_t molt_job_t; /**< a job (ABI 1.6): live until its result was handed over */

/** @brief A byte range (ABI 1.6): a fork_join's items and a job's results. */
typedef struct molt_bytes_view {
  const void* data; /**< NULL only when size is 0 */
  size_t size;
} molt_bytes_view;

/** A detached job survives a swap: when the instance that submitted it stopped, its result goes
 *  to the handler of the same name in the next generation's instance of the plugin. */
#define MOLT_JOB_DETACHED 1u

/** @brief A job's work, on a worker thread: reads the `size` bytes at `input` and writes its
 *  result to `sink` (appended, over any number of calls), then returns MOLT_OK; or returns an
 *  error code, and what it wrote is the error's text. Pure: it reads `user_data` as immutable and
 *  never calls the host (from a worker thread every slot but log, log_enabled and last_error
 *  fails with MOLT_ERR_STATE). */
typedef molt_status_t (*molt_job_fn)(void* user_data, const void* input, size_t size,
                                     molt_bytes_fn sink, void* sink_user_data);

/** @brief How a job ended, handed to its done handler on the kernel thread (valid during the
 *  call). */
typedef struct molt_job_result {
  uint32_t struct_size; /**< sizeof(molt_job_result) as the host compiled it */
  /** MOLT_OK; the error an item returned; MOLT_ERR_TIMEOUT (past its timeout: what it still
   *  computes is dropped); MOLT_ERR_CANCELLED (the server closes) */
  molt_status_t status;
  molt_job_t job;
  uint64_t tag;      /**< the spec's tag */
  const char* error; /**< "" when status is MOLT_OK, else why: the job's text or the host's */
  size_t count;      /**< entries in `results`: 1 for job_submit, every item for job_fork_join;
                          0 when status is not MOLT_OK */
  const molt_bytes_view* results; /**< what each item wrote to its sink, in item order */
  size_t failed_item;             /**< job_fork_join: the index of the first item that failed */
  int32_t inherited; /**< 1: an earlier generation's instance submitted it (MOLT_JOB_DETACHED) */
} molt_job_result;

/** @brief A done handler (job_handler): hears each job submitted naming it. */
typedef void (*molt_job_done_fn)(void* user_data, const molt_job_result* result);

/** @brief A job for job_submit and job_fork_join. Zero-initialize, then set what you need. */
typedef struct molt_job_spec {
  uint32_t struct_size; /**< sizeof(molt_job_spec) */
  uint32_t flags;       /**< MOLT_JOB_* */
  const char* handler;  /**< the name of the done handler that hears the result (job_handler) */
  molt_job_fn fn;       /**< the work */
  void* user_data;      /**< fn's, read by workers at once: immutable while the job runs */
  /** gets `user_data` on the kernel thread once no worker runs fn for this job (may be NULL) */
  molt_cleanup_fn release;
  double timeout_seconds; /**< past it the job ends as MOLT_ERR_TIMEOUT; 0: the host's (10 s) */
  uint64_t tag;           /**< handed back in the result: what a later generation knows it by */
  size_t chunk_size;      /**< job_fork_join: items a worker takes at once; 0: count / (4 ×
                               workers), rounded up */
} molt_job_spec;

/* --- Live values: values an operator tunes while the game runs (ABI 1.7; docs/live-values.md) ---
 */

/** @brief A plugin's check of an operator's value for its live value `key` ("<plugin>.<name>"),
 *  `value_json` (already of the default's type), on the kernel thread before the value is stored:
 *  MOLT_OK takes it; any other status refuses it, and set_error's text is the reason the operator
 *  reads. A check that fails to answer (a throw) refuses too (ABI 1.7). */
typedef molt_status_t (*molt_live_check_fn)(void* user_data, const char* key,
                                            const char* value_json, size_t size);

/* --- Self-tests: a plugin's own tests, the spec gate (ABI 1.8; docs/testing-plugins.md) ---- */

/** @brief Hears one of a plugin's own tests (ABI 1.8): its `name` (1..128 bytes, unique in the
 *  plugin), its status (MOLT_OK passes) and `message` (why it failed; NULL or "" when it
 *  passed). The strings are copied before it returns. */
typedef void (*molt_self_test_fn)(void* user_data, const char* name, molt_status_t status,
                                  const char* message);

/* --- Messages between servers (ABI 1.9; docs/fleet.md, "Messages") ---------------------------- */

/** @brief A message heard was published by this server (molt_message_meta.flags). */
#define MOLT_MESSAGE_SELF 1u
/** @brief A message that came while no instance listened to its topic (a swap ran), held and
 *  handed to the next generation's first listener of the topic (molt_message_meta.flags). */
#define MOLT_MESSAGE_REPLAYED 2u

/** @brief Where a message came from. Host-owned, valid during the call. The sender's fields are
 *  for routing, not proof: any server of the fleet may publish. */
typedef struct molt_message_meta {
  uint32_t struct_size; /**< sizeof(molt_message_meta) as the host compiled it */
  uint32_t flags;       /**< MOLT_MESSAGE_* */
  const char* server;   /**< the id of the server that published it */
  const char* branch;   /**< the branch that server runs */
  int64_t sent_ms;      /**< when it was published (ms since the epoch, by the sender's clock) */
} molt_message_meta;

/** @brief Hears a message on a topic this instance subscribed to (message_subscribe), on the
 *  kernel thread: its topic, its bytes (host-owned, valid during the call) and where it came
 *  from. */
typedef void (*molt_message_fn)(void* user_data, const char* topic, const void* data, size_t size,
                                const molt_message_meta* meta);

/* --- A key-value store shared by the fleet (ABI 1.9; docs/fleet.md, "Key-value store") -------- */

/** @brief What a kv_call does (molt_kv_op.kind). Keys are the plugin's own: two plugins never see
 *  each other's; the same plugin on every server of the fleet shares them. */
#define MOLT_KV_GET 1 /**< the value of `key`; MOLT_ERR_NOT_FOUND when absent or expired */
#define MOLT_KV_SET 2 /**< `key` = `value`, for `ttl_seconds` */
#define MOLT_KV_CAS                                                                        \
  3                      /**< `key` = `value` only while it is `expected` (or absent, with \
                              MOLT_KV_ABSENT); else MOLT_ERR_REJECTED with the value now */
#define MOLT_KV_DELETE 4 /**< removes `key` (a value or a sorted set); `number`: 1 if it was */
#define MOLT_KV_INCREMENT                                                                      \
  5                       /**< adds `number` to the whole number at `key` (absent: 0); the sum \
                               in the result's `number` */
#define MOLT_KV_ZADD 6    /**< sets `value`'s score in the sorted set `key` to `number` */
#define MOLT_KV_ZREMOVE 7 /**< removes member `value` from the sorted set `key` */
#define MOLT_KV_ZRANGE                                                 \
  8 /**< the members of `key` scored `number`..`number2`, lowest first \
         (MOLT_KV_DESCENDING: highest), at most `limit` (0: 100) */

/** @brief molt_kv_op.flags. */
#define MOLT_KV_ABSENT 1u     /**< CAS: only while the key is absent */
#define MOLT_KV_DESCENDING 2u /**< ZRANGE: highest score first */

/** @brief One call of the key-value store. Zero-initialize, then set what the kind reads. Keys
 *  are 1..256 bytes; a value or a member at most 65536; `ttl_seconds` 0 is 300, at most 30
 *  days (a sorted set's whole key lives as long as its newest ZADD says). */
typedef struct molt_kv_op {
  uint32_t struct_size; /**< sizeof(molt_kv_op) */
  uint32_t kind;        /**< MOLT_KV_* */
  const char* key;
  const void* value; /**< SET, CAS: the new value; ZADD, ZREMOVE: the member */
  size_t value_size;
  const void* expected; /**< CAS: the value it must have */
  size_t expected_size;
  double number;  /**< INCREMENT: by (a whole number); ZADD: the score; ZRANGE: the lowest score */
  double number2; /**< ZRANGE: the highest score */
  uint32_t limit; /**< ZRANGE: at most this many (0: 100, at most 1000) */
  uint32_t flags; /**< MOLT_KV_ABSENT, MOLT_KV_DESCENDING */
  double ttl_seconds;
} molt_kv_op;

/** @brief A member of a sorted set, as ZRANGE reads it. */
typedef struct molt_kv_entry {
  const void* member;
  size_t member_size;
  double score;
} molt_kv_entry;

/** @brief What a kv_call found, handed to its done function. Host-owned, valid during the call. */
typedef struct molt_kv_result {
  uint32_t struct_size; /**< sizeof(molt_kv_result) as the host compiled it */
  molt_status_t status; /**< MOLT_OK, or why not (its text in `error`) */
  const char* error;    /**< "" when status is MOLT_OK */
  const void* value;    /**< GET, SET, CAS (the value now, also when refused): the value */
  size_t value_size;
  int64_t number;               /**< INCREMENT: the sum; DELETE: 1 if it existed */
  const molt_kv_entry* entries; /**< ZRANGE */
  size_t entry_count;
} molt_kv_result;

/** @brief Hears a kv_call's result, once, on the kernel thread. */
typedef void (*molt_kv_done_fn)(void* user_data, const molt_kv_result* result);

/* --- ABI 1.10 --- */
/** @brief One predicted intent not yet resolved (client_pending), oldest first; `data` is valid
 *  during the call only. */
typedef void (*molt_pending_fn)(void* user_data, uint32_t seq, const void* data, size_t size);

/* --- The host API ----------------------------------------------------------------------------- */

/** @brief The functions a plugin calls, handed to init() and valid until the instance is unloaded.
 *  Every function takes the caller's context first. Unless stated otherwise a function returns
 *  MOLT_OK or a MOLT_ERR_* code with the text in last_error(ctx). */
typedef struct molt_host_api {
  uint32_t struct_size; /**< sizeof(molt_host_api) as the host compiled it */
  uint32_t abi_version; /**< the host's MOLT_ABI_VERSION */

  /* --- ABI 1.0 --- */

  /** @brief The text of the last failed call with `ctx`; "" when none. Host-owned, valid until
   *  the next call with `ctx`. */
  const char* (*last_error)(molt_context_t* ctx);
  /** @brief Records why a plugin callback is about to fail; the host copies `message`. */
  void (*set_error)(molt_context_t* ctx, const char* message);

  /** @brief Logs `message` under the plugin's name at `level` (MOLT_LOG_*). */
  void (*log)(molt_context_t* ctx, int32_t level, const char* message);
  /** @brief 1 when `level` would be logged, else 0: skip formatting what nobody reads. */
  int32_t (*log_enabled)(molt_context_t* ctx, int32_t level);

  /** @brief Resolves `topic` once for fast publishing. Topics live as long as the kernel.
   *  @param[out] out_topic  the topic handle. */
  molt_status_t (*bus_resolve)(molt_context_t* ctx, const char* topic, molt_topic_t* out_topic);
  /** @brief Publishes `topic` with `args` to every matching subscriber, synchronously. A topic
   *  contains no '*'. */
  molt_status_t (*bus_publish)(molt_context_t* ctx, const char* topic, const molt_value* args,
                               size_t arg_count);
  /** @brief bus_publish with a resolved topic: no string hashing. */
  molt_status_t (*bus_publish_topic)(molt_context_t* ctx, molt_topic_t topic,
                                     const molt_value* args, size_t arg_count);
  /** @brief Subscribes `fn` to `pattern`: a topic ("Combat.Kill"), a family ("Combat.*"), or "*".
   *  `release` (may be NULL) is called with `user_data` once the subscription ends.
   *  @param[out] out_subscription  the handle, for bus_unsubscribe or scope_adopt. */
  molt_status_t (*bus_subscribe)(molt_context_t* ctx, const char* pattern, molt_bus_fn fn,
                                 void* user_data, molt_cleanup_fn release,
                                 molt_subscription_t* out_subscription);
  /** @brief Ends a subscription; MOLT_ERR_STALE when it is not live. */
  molt_status_t (*bus_unsubscribe)(molt_context_t* ctx, molt_subscription_t subscription);

  /** @brief Defines `point` as MOLT_HOOK_FAIL_CLOSED (the default) or MOLT_HOOK_FAIL_OPEN. Names
   *  starting with "Kernel." are reserved. */
  molt_status_t (*hook_define)(molt_context_t* ctx, const char* point, int32_t mode);
  /** @brief Adds a handler to `point`; lower `priority` runs first (MOLT_HOOK_DEFAULT_PRIORITY is
   *  100), ties in registration order. Names starting with "Kernel." are refused with the text
   *  hook point "<name>" is kernel-reserved. `release` as for bus_subscribe. */
  molt_status_t (*hook_on)(molt_context_t* ctx, const char* point, int32_t priority,
                           molt_hook_fn fn, void* user_data, molt_cleanup_fn release,
                           molt_hook_handler_t* out_handler);
  /** @brief Removes a handler; MOLT_ERR_STALE when it is not live. */
  molt_status_t (*hook_off)(molt_context_t* ctx, molt_hook_handler_t handler);
  /** @brief Runs the chain of `point` over `args` (which handlers may rewrite).
   *  @param[out] out_passed  1 when every handler passed, else 0.
   *  @param[out] out_error   NULL, or the text of the first handler that failed (valid until the
   *                          next call with `ctx`). May be NULL. */
  molt_status_t (*hook_fire)(molt_context_t* ctx, const char* point, molt_value* args,
                             size_t arg_count, uint64_t session, uint8_t* out_passed,
                             const char** out_error);

  /** @brief Runs `fn` once on the next scheduler step at `priority` (MOLT_PRIORITY_*). `release`
   *  is called with `user_data` after the run or the cancel. */
  molt_status_t (*task_schedule)(molt_context_t* ctx, int32_t priority, molt_task_fn fn,
                                 void* user_data, molt_cleanup_fn release, molt_task_t* out_task);
  /** @brief Runs `fn` once after `seconds` (finite, >= 0). */
  molt_status_t (*task_after)(molt_context_t* ctx, double seconds, int32_t priority,
                              molt_task_fn fn, void* user_data, molt_cleanup_fn release,
                              molt_task_t* out_task);
  /** @brief Runs `fn` every `seconds` (finite, >= 0; 0 = every step) until cancelled. */
  molt_status_t (*task_every)(molt_context_t* ctx, double seconds, int32_t priority,
                              molt_task_fn fn, void* user_data, molt_cleanup_fn release,
                              molt_task_t* out_task);
  /** @brief Cancels a task; MOLT_ERR_STALE when it already finished or was cancelled. */
  molt_status_t (*task_cancel)(molt_context_t* ctx, molt_task_t task);

  /** @brief Creates a scope, child of `parent` (0 = the instance's root scope): it closes with its
   *  parent or earlier. */
  molt_status_t (*scope_create)(molt_context_t* ctx, molt_scope_t parent, molt_scope_t* out_scope);
  /** @brief Registers `fn(user_data)` to run when `scope` closes (cleanups run in reverse order).
   *  On a closed scope `fn` runs at once and MOLT_ERR_SCOPE_CLOSED is returned. */
  molt_status_t (*scope_defer)(molt_context_t* ctx, molt_scope_t scope, molt_cleanup_fn fn,
                               void* user_data);
  /** @brief Hands `handle` (a subscription, hook handler, task or scope of this plugin) to
   *  `scope`, which releases it when it closes. */
  molt_status_t (*scope_adopt)(molt_context_t* ctx, molt_scope_t scope, molt_handle_t handle);
  /** @brief Closes `scope`: its cleanups run in reverse order, once. */
  molt_status_t (*scope_close)(molt_context_t* ctx, molt_scope_t scope);

  /** @brief Fetches interface `interface_name` exported by service `service`, which must be one of
   *  this plugin's declared dependencies. */
  molt_status_t (*service_interface)(molt_context_t* ctx, const char* service,
                                     const char* interface_name, molt_interface_ref* out_ref);

  /** @brief Reads a configuration value: "<key>" in this plugin's own section of the host's
   *  configuration first, then the kernel's ("kernel.version", "kernel.role", "server.tick_rate",
   *  "server.data_dir", ...). Strings stay valid while the kernel runs. MOLT_ERR_NOT_FOUND when
   *  unset. */
  molt_status_t (*config_get)(molt_context_t* ctx, const char* key, molt_value* out_value);
  /** @brief Writes the kernel's stats as one JSON object to `sink` (version, role, scheduler,
   *  service timings, processes). */
  molt_status_t (*stats_json)(molt_context_t* ctx, molt_bytes_fn sink, void* sink_user_data);

  /** @brief Creates a process (state MOLT_PROCESS_CREATED) that will run `body`. `options` may be
   *  NULL. `release` (may be NULL) gets `user_data` once the process handle ends: after the
   *  process ended and its exit functions ran, or when this plugin stops (which kills what still
   *  runs: its body sees MOLT_ERR_CANCELLED in the call it is parked in and must return).
   *  @param[out] out_process  the handle; it goes stale once the process has ended. */
  molt_status_t (*process_spawn)(molt_context_t* ctx, const molt_process_options* options,
                                 molt_process_fn body, void* user_data, molt_cleanup_fn release,
                                 molt_process_t* out_process);
  /** @brief Starts a Created process: its body runs on the next scheduler step with `arg`.
   *  Otherwise MOLT_ERR_STATE: "process <name> already started". */
  molt_status_t (*process_start)(molt_context_t* ctx, molt_process_t process, void* arg);
  /** @brief Inside a process: resumes on a later scheduler step. MOLT_ERR_CANCELLED when the
   *  process was killed (then return from the body); MOLT_ERR_STATE outside a process. */
  molt_status_t (*process_yield)(molt_context_t* ctx);
  /** @brief Inside a process: parks until `seconds` (finite, >= 0) from now. Errors as
   *  process_yield, and MOLT_ERR_INVALID_ARGUMENT for a bad duration. */
  molt_status_t (*process_sleep)(molt_context_t* ctx, double seconds);
  /** @brief Inside a process: parks until `completion` completes, then returns the status it
   *  completed with and writes its payload to `sink` (may be NULL). MOLT_ERR_CANCELLED when
   *  killed. */
  molt_status_t (*process_wait)(molt_context_t* ctx, molt_completion_t completion,
                                molt_bytes_fn sink, void* sink_user_data);
  /** @brief Running -> Suspended: no more steps, everything kept. Does nothing otherwise. */
  molt_status_t (*process_suspend)(molt_context_t* ctx, molt_process_t process);
  /** @brief Suspended -> Running. Does nothing otherwise. */
  molt_status_t (*process_resume)(molt_context_t* ctx, molt_process_t process);
  /** @brief Ends a live process as MOLT_PROCESS_KILLED with `reason` (NULL: "killed"). A parked
   *  body gets MOLT_ERR_CANCELLED from the call it is parked in. */
  molt_status_t (*process_kill)(molt_context_t* ctx, molt_process_t process, const char* reason);
  /** @brief The state and PID of a live process.
   *  @param[out] out_state  MOLT_PROCESS_*. @param[out] out_pid  may be NULL. */
  molt_status_t (*process_state)(molt_context_t* ctx, molt_process_t process, int32_t* out_state,
                                 uint64_t* out_pid);
  /** @brief Calls `fn(user_data, ...)` once when `process` ends. `release` (may be NULL) gets
   *  `user_data` once afterwards, or when this plugin stops first. */
  molt_status_t (*process_on_exit)(molt_context_t* ctx, molt_process_t process,
                                   molt_process_exit_fn fn, void* user_data,
                                   molt_cleanup_fn release);
  /** @brief Inside a process: the result it will complete with (copied). */
  molt_status_t (*process_set_result)(molt_context_t* ctx, const char* result);
  /** @brief Creates an operation that processes may wait on, completed later by
   *  completion_complete. Released with the plugin (a waiting process then gets
   *  MOLT_ERR_CANCELLED). */
  molt_status_t (*completion_create)(molt_context_t* ctx, molt_completion_t* out_completion);
  /** @brief Completes `completion` with `status` and a payload (copied), waking its waiter.
   *  MOLT_ERR_STATE when it was already complete. */
  molt_status_t (*completion_complete)(molt_context_t* ctx, molt_completion_t completion,
                                       molt_status_t status, const void* data, size_t size);

  /* --- ABI 1.1: networking (MOLT_ERR_UNSUPPORTED where the host has no network) --- */

  /** @brief Declares a channel clients can use. Its handlers run on the kernel thread after the
   *  whole inbound pipeline accepted a message. `release` (may be NULL) gets spec->user_data
   *  once the channel is removed (channel_remove, or this plugin stops).
   *  @param[out] out_channel  the handle, for event_send and channel_remove. */
  molt_status_t (*channel_declare)(molt_context_t* ctx, const molt_channel_spec* spec,
                                   molt_cleanup_fn release, molt_channel_t* out_channel);
  /** @brief Removes a channel this plugin declared. */
  molt_status_t (*channel_remove)(molt_context_t* ctx, molt_channel_t channel);
  /** @brief Queues `data` on event channel `channel` to `count` sessions, or to every session
   *  when `sessions` is NULL. Sessions that left are skipped. */
  molt_status_t (*event_send)(molt_context_t* ctx, molt_channel_t channel,
                              const molt_session_t* sessions, size_t count, const void* data,
                              size_t size);
  /** @brief Answers a request (once) with `status` and `data`. MOLT_ERR_STALE when it was already
   *  answered, timed out, or its session left. */
  molt_status_t (*request_reply)(molt_context_t* ctx, molt_request_t request, molt_status_t status,
                                 const void* data, size_t size);
  /** @brief Calls `fn` for every live session now and every future one (spec: onSession), until
   *  bus_unsubscribe(*out_subscription) or this plugin stops; then `release` gets user_data. */
  molt_status_t (*session_on)(molt_context_t* ctx, molt_session_fn fn, void* user_data,
                              molt_cleanup_fn release, molt_subscription_t* out_subscription);
  /** @brief Runs `fn(user_data)` when the session ends: in bind order, or after every ordinary
   *  binding when `last` is 1 (the final save goes there). Also runs when this plugin stops
   *  first. A session that already ended runs it at once. */
  molt_status_t (*session_bind)(molt_context_t* ctx, molt_session_t session, int32_t last,
                                molt_cleanup_fn fn, void* user_data);
  /** @brief Describes a session that is live or ending (MOLT_ERR_NOT_FOUND once it is gone). */
  molt_status_t (*session_info)(molt_context_t* ctx, molt_session_t session,
                                molt_session_info* out_info);
  /** @brief Stores per-visit data under `key` (prefix keys with your plugin's name). `release`
   *  (may be NULL) gets `value` when it is replaced, the session ends, or this plugin stops. */
  molt_status_t (*session_data_set)(molt_context_t* ctx, molt_session_t session, const char* key,
                                    void* value, molt_cleanup_fn release);
  /** @brief The value under `key`, or NULL. */
  molt_status_t (*session_data_get)(molt_context_t* ctx, molt_session_t session, const char* key,
                                    void** out_value);
  /** @brief Ends a session as Kicked; `reason` goes to the client (may be NULL). */
  molt_status_t (*session_kick)(molt_context_t* ctx, molt_session_t session, const char* reason);

  /* --- ABI 1.2: replicas (MOLT_ERR_UNSUPPORTED where the host has no network) --- */

  /** @brief Creates a replica; every field starts at 0, 0.0 or empty. It is destroyed by
   *  replica_destroy or when this plugin stops (its sessions get a remove). */
  molt_status_t (*replica_create)(molt_context_t* ctx, const molt_replica_spec* spec,
                                  molt_replica_t* out_replica);
  /** @brief Destroys a replica: every session that has it gets a remove. */
  molt_status_t (*replica_destroy)(molt_context_t* ctx, molt_replica_t replica);
  /** @brief Writes field `field` (its index); sessions get it at the next deadline. Writing the
   *  value already there marks nothing. MOLT_ERR_INVALID_ARGUMENT names a wrong type. */
  molt_status_t (*replica_set_int)(molt_context_t* ctx, molt_replica_t replica, uint32_t field,
                                   int64_t value);
  molt_status_t (*replica_set_float)(molt_context_t* ctx, molt_replica_t replica, uint32_t field,
                                     double value);
  molt_status_t (*replica_set_bytes)(molt_context_t* ctx, molt_replica_t replica, uint32_t field,
                                     const void* data, size_t size);
  /** @brief MOLT_AUDIENCE_LIST replicas: `session` gets a snapshot at the next deadline, then
   *  deltas. Adding a session twice does nothing. */
  molt_status_t (*replica_add_session)(molt_context_t* ctx, molt_replica_t replica,
                                       molt_session_t session);
  /** @brief MOLT_AUDIENCE_LIST replicas: `session` gets a remove and no more updates. */
  molt_status_t (*replica_remove_session)(molt_context_t* ctx, molt_replica_t replica,
                                          molt_session_t session);

  /* --- ABI 1.2: the client side (controllers in libmolt_client; MOLT_ERR_UNSUPPORTED in server
   * hosts) ---
   * What the server sends reaches controllers on the client kernel's Bus: "Net.Event.<channel>"
   * (the payload, MOLT_VALUE_BYTES), "Net.Replica.<name>" (replica id, MOLT_CLIENT_REPLICA_*
   * and field index, all MOLT_VALUE_INT) and "Net.State" (MOLT_CLIENT_* state, reason); the
   * constants are in <molt/client.h>, which a controller may include. */

  /** @brief Sends an intent on the server's channel named `channel`, checked like
   *  molt_client_intent (kind, frame size, the client-side rate limit). */
  molt_status_t (*client_intent)(molt_context_t* ctx, const char* channel, const void* data,
                                 size_t size);
  /** @brief Sends a request on the server's channel named `channel`. `*out_completion` completes
   *  with the answer (status and payload; MOLT_ERR_TIMEOUT when none came): process_wait on it.
   *  `timeout_seconds` 0 uses the channel's timeout. */
  molt_status_t (*client_request)(molt_context_t* ctx, const char* channel, const void* data,
                                  size_t size, double timeout_seconds,
                                  molt_completion_t* out_completion);
  /** @brief The value of field `field` of the held replica named `replica`: MOLT_VALUE_INT,
   *  _DOUBLE or _BYTES (bytes valid until the next client step). MOLT_ERR_NOT_FOUND names what
   *  is missing. */
  molt_status_t (*client_replica_get)(molt_context_t* ctx, const char* replica, const char* field,
                                      molt_value* out_value);

  /* --- ABI 1.2: completions --- */

  /** @brief Lets go of a completion this plugin holds (created, or returned by client_request):
   *  its handle goes stale and its payload is freed. One still pending completes as cancelled
   *  for a process waiting on it. Without this, completions live until the plugin stops. */
  molt_status_t (*completion_release)(molt_context_t* ctx, molt_completion_t completion);

  /* --- ABI 1.3: generations (hot swap; docs/generations.md) --- */

  /** @brief Like session_bind, but tells a session's end from this instance letting go (a swap
   *  replaces it, or it stops first): `on_end(user_data, session, reason)` runs only when the
   *  session really ends (in bind order, or after every ordinary binding when `last` is 1: the
   *  final save goes there); `release` (may be NULL) gets `user_data` exactly once, after
   *  `on_end` or alone when this instance lets go. Released is not left: a swap never runs
   *  on_end. MOLT_ERR_UNSUPPORTED where the host has no network. */
  molt_status_t (*session_bind_end)(molt_context_t* ctx, molt_session_t session, int32_t last,
                                    molt_session_end_fn on_end, void* user_data,
                                    molt_cleanup_fn release);
  /** @brief In import_state: takes over the replica `predecessor` (the handle the previous
   *  instance of this plugin held and put in its exported state) with its id, its values and its
   *  audience, so clients see no change. A replica nobody claims is destroyed when the swap ends
   *  (its sessions get a remove). MOLT_ERR_NOT_FOUND when no such replica was handed over.
   *  @param[out] out_replica  the handle, this instance's from now on. */
  molt_status_t (*replica_claim)(molt_context_t* ctx, molt_replica_t predecessor,
                                 molt_replica_t* out_replica);
  /** @brief Asks the host to load its plugin directory again as a new generation, on a later
   *  scheduler step (never inside the calling callback). `reason` (may be NULL) goes to the swap
   *  report. MOLT_ERR_UNSUPPORTED where the host cannot reload. */
  molt_status_t (*reload_request)(molt_context_t* ctx, const char* reason);

  /* --- ABI 1.4: profiles (docs/profiles.md; MOLT_ERR_UNSUPPORTED where the host keeps none) --- */

  /** @brief Declares the profile store `spec->name`, or adopts it when a previous instance
   *  declared it (a swap): the loaded profiles stay, documents at an older schema version are
   *  migrated, defaults fill in. MOLT_ERR_ALREADY_EXISTS when another plugin holds the name.
   *  `release` (may be NULL) gets spec->user_data once this instance lets go of the store (it
   *  stops): the store itself lives on, its profiles saved by the kernel. Just before, after
   *  stop() and before destroy(), `validate` runs once more for every changed document, so that
   *  what stop() wrote passes the gate too (the one callback after stop() besides releases).
   *  @param[out] out_profile  the handle, for the calls below. */
  molt_status_t (*profile_declare)(molt_context_t* ctx, const molt_profile_spec* spec,
                                   molt_cleanup_fn release, molt_profile_t* out_profile);
  /** @brief The state of `session`'s profile in `profile`: a MOLT_PROFILE_* value. */
  molt_status_t (*profile_state)(molt_context_t* ctx, molt_profile_t profile,
                                 molt_session_t session, int32_t* out_state);
  /** @brief Writes the session's document, or the value at `path` (a JSON Pointer: "/coins",
   *  "/items/0"; NULL or "" is the whole document), as JSON text to `sink`. MOLT_ERR_STATE while
   *  it is not loaded; MOLT_ERR_NOT_FOUND for a path with nothing there. */
  molt_status_t (*profile_get)(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                               const char* path, molt_bytes_fn sink, void* sink_user_data);
  /** @brief Replaces the document (`path` NULL or "": a JSON object) or the value at `path`
   *  (objects on the way are created; "/items/-" appends) with the JSON text `json`, and marks
   *  the profile to be saved. MOLT_ERR_INVALID_ARGUMENT names text that is not JSON. */
  molt_status_t (*profile_set)(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                               const char* path, const char* json, size_t size);
  /** @brief Saves every changed profile of the store now instead of at the next autosave. */
  molt_status_t (*profile_save)(molt_context_t* ctx, molt_profile_t profile);
  /** @brief Keeps a copy of the session's document in memory (the newest 8 per profile, for
   *  this visit only) under `label` (may be NULL). @param[out] out_id  for profile_rollback. */
  molt_status_t (*profile_snapshot)(molt_context_t* ctx, molt_profile_t profile,
                                    molt_session_t session, const char* label, uint64_t* out_id);
  /** @brief Writes the kept snapshots to `sink` as a JSON array, oldest first:
   *  [{"id":3,"label":"before trade","taken_ms":1796...}]. */
  molt_status_t (*profile_snapshots)(molt_context_t* ctx, molt_profile_t profile,
                                     molt_session_t session, molt_bytes_fn sink,
                                     void* sink_user_data);
  /** @brief Puts snapshot `id` back as the document (saved by the next save; the snapshot stays
   *  kept). MOLT_ERR_NOT_FOUND for an unknown or evicted id. */
  molt_status_t (*profile_rollback)(molt_context_t* ctx, molt_profile_t profile,
                                    molt_session_t session, uint64_t id);
  /** @brief Backs the session's document up at its next save, even when no backup is due. */
  molt_status_t (*profile_backup_now)(molt_context_t* ctx, molt_profile_t profile,
                                      molt_session_t session);
  /** @brief Changes the loaded profiles of `session_a` and `session_b` atomically: `mutate`
   *  runs now with both documents; both results are validated and written in one database
   *  transaction recorded under `id` (NULL or "": a new id; an id committed before refuses the
   *  replay), and replace the documents only once committed. Meanwhile both refuse profile_set.
   *  `*out_completion` completes with MOLT_OK, or with an error (MOLT_ERR_REJECTED: Aborted,
   *  SameProfile, Busy; _NOT_FOUND: ProfileInactive; _INTERNAL: MutatorError; _IO: SaveAFailed,
   *  SaveBFailed; _ALREADY_EXISTS: DuplicateTransaction) whose payload is the reason, ": " and
   *  the text ("SaveBFailed: profile ..."). Wait on it in a process; release it with
   *  completion_release. */
  molt_status_t (*profile_transact)(molt_context_t* ctx, molt_profile_t profile,
                                    molt_session_t session_a, molt_session_t session_b,
                                    const char* id, molt_profile_mutate_fn mutate, void* user_data,
                                    molt_completion_t* out_completion);
  /** @brief Loads the profile "<store name>/<key>", not tied to a session (a guild's bank, a
   *  world's state), under this server's lease; one held elsewhere is waited for.
   *  `*out_completion` completes with MOLT_OK once it is loaded, or an error naming why. Then
   *  profile_key_session gives the id the session calls above take for it (get, set, snapshots,
   *  transactions); autosave and the close save it like the others. */
  molt_status_t (*profile_key_load)(molt_context_t* ctx, molt_profile_t profile, const char* key,
                                    molt_completion_t* out_completion);
  /** @brief The id of a loaded (or loading) key, for the calls that take a session.
   *  MOLT_ERR_NOT_FOUND when it is not loaded here. */
  molt_status_t (*profile_key_session)(molt_context_t* ctx, molt_profile_t profile, const char* key,
                                       molt_session_t* out_session);
  /** @brief Saves and releases the key (NULL: every key of the store), so other servers may
   *  load it. MOLT_ERR_NOT_FOUND when it is not loaded here. */
  molt_status_t (*profile_key_release)(molt_context_t* ctx, molt_profile_t profile,
                                       const char* key);

  /* --- ABI 1.5: phases --- */
  /** @brief Starts a task as `spec` says, in its phase: MOLT_PHASE_TICK is the scheduler of
   *  task_schedule/after/every; PRE_TICK runs just before its tasks in every tick, POST_TICK just
   *  after. `release` is called with `user_data` after the last run or the cancel; task_cancel
   *  cancels it; the instance's stop releases it like every task. MOLT_ERR_INVALID_ARGUMENT names
   *  an unknown phase or kind, a bad priority or `seconds`. */
  molt_status_t (*task_start)(molt_context_t* ctx, const molt_task_spec* spec, molt_task_fn fn,
                              void* user_data, molt_cleanup_fn release, molt_task_t* out_task);

  /* --- ABI 1.5: analytics (docs/operations.md, "Analytics"; MOLT_ERR_UNSUPPORTED where the host
   * keeps none) --- */
  /** @brief Tracks a product-analytics event (spec: Analytics): `name` ([A-Za-z0-9_:-], 1..64
   *  characters), the user of `session` (0: none), `value` (finite), `fields_json` (NULL or ""
   *  for none, else a JSON object of at most 4096 bytes). A queue insert: the host writes events
   *  in batches off the kernel thread. MOLT_OK when queued; MOLT_ERR_REJECTED when sampled out,
   *  over the per-minute cap or the queue is full; MOLT_ERR_INVALID_ARGUMENT names what is wrong.
   *  Every event not queued is counted by its reason, in the stats and /metrics. */
  molt_status_t (*analytics_track)(molt_context_t* ctx, const char* name, molt_session_t session,
                                   double value, const char* fields_json, size_t fields_size);

  /* --- ABI 1.6: workers (docs/workers.md; MOLT_ERR_UNSUPPORTED where the host runs none) --- */
  /** @brief Names a done handler of this instance: `fn(user_data, result)` runs on the kernel
   *  thread for every job submitted with `name` (1..64 of [A-Za-z0-9_.:-]). `release` gets
   *  `user_data` when the instance stops. MOLT_ERR_ALREADY_EXISTS when the name is taken. */
  molt_status_t (*job_handler)(molt_context_t* ctx, const char* name, molt_job_done_fn fn,
                               void* user_data, molt_cleanup_fn release);
  /** @brief Runs spec->fn on a worker thread with a copy of `input`; its handler hears how it
   *  ended. A job of an instance that stops is dropped (counted) unless it is MOLT_JOB_DETACHED;
   *  its library stays mapped while fn runs. MOLT_ERR_NOT_FOUND names a handler not declared;
   *  MOLT_ERR_RATE_LIMITED when the queue (or the detached jobs' cap) is full. */
  molt_status_t (*job_submit)(molt_context_t* ctx, const molt_job_spec* spec, const void* input,
                              size_t size, molt_job_t* out_job);
  /** @brief Runs spec->fn once per item (copied), in chunks idle workers pull; the handler hears
   *  every result in item order, or the first item that failed (no chunk starts after it, and
   *  those running end first). `count` is 1..1,000,000. Otherwise as job_submit. */
  molt_status_t (*job_fork_join)(molt_context_t* ctx, const molt_job_spec* spec,
                                 const molt_bytes_view* items, size_t count, molt_job_t* out_job);
  /** @brief Cancels a job of this instance: no chunk of it starts any more, and its handler never
   *  hears of it. MOLT_ERR_STALE when it already ended. */
  molt_status_t (*job_cancel)(molt_context_t* ctx, molt_job_t job);

  /* --- ABI 1.7: live values (docs/live-values.md; MOLT_ERR_UNSUPPORTED where the host keeps
   * none) --- */
  /** @brief Declares the live value "<plugin>.<name>" (`name`: 1..64 of [A-Za-z0-9_-]) with its
   *  default `default_json` (JSON: a number, true/false, a string, an array or an object, at most
   *  64 KiB): the source-controlled truth, whose type every override must have. An operator
   *  overrides it while the game runs (molt config set); `check` (may be NULL) is asked first.
   *  `release` gets `user_data` when the instance stops. The Bus topic "Config.Changed" (key,
   *  value as JSON) tells of every real change of a value served. MOLT_ERR_ALREADY_EXISTS when
   *  this instance declared `name` already; MOLT_ERR_INVALID_ARGUMENT names a bad name or
   *  default. */
  molt_status_t (*live_declare)(molt_context_t* ctx, const char* name, const char* default_json,
                                size_t default_size, molt_live_check_fn check, void* user_data,
                                molt_cleanup_fn release);
  /** @brief Hands `sink` the value served for this instance's `name`, as JSON: the operator's
   *  override, else the default. MOLT_ERR_NOT_FOUND when this instance did not declare it. */
  molt_status_t (*live_get)(molt_context_t* ctx, const char* name, molt_bytes_fn sink,
                            void* sink_user_data);

  /* --- ABI 1.9: messages between servers (docs/fleet.md, "Messages"; MOLT_ERR_UNSUPPORTED where
   * the host keeps none) --- */
  /** @brief Publishes `size` bytes (at most 1000; `data` may be NULL when `size` is 0) on `topic`
   *  (1..64 of [A-Za-z0-9_.:/-], not starting with "__") to every server of the fleet, this one
   *  included; a server alone hears its own. Never blocks: the message is queued and sent off the
   * kernel thread, in order, at most once to each subscriber. MOLT_ERR_RATE_LIMITED when this
   * server's rate (150 a minute and 60 more per session, bursts of 20) or its queue (100) is spent,
   * or it is closing; MOLT_ERR_INVALID_ARGUMENT names a bad topic or size. */
  molt_status_t (*message_publish)(molt_context_t* ctx, const char* topic, const void* data,
                                   size_t size);
  /** @brief `fn(user_data, ...)` hears every message on `topic` (as message_publish spells it)
   *  from now on, until the instance stops (a swap releases it: the next generation subscribes
   *  again and is handed what came between). `release` gets `user_data` then. */
  molt_status_t (*message_subscribe)(molt_context_t* ctx, const char* topic, molt_message_fn fn,
                                     void* user_data, molt_cleanup_fn release);

  /* --- ABI 1.9: the key-value store (docs/fleet.md, "Key-value store"; MOLT_ERR_UNSUPPORTED
   * where the host keeps none) --- */
  /** @brief Runs `op` on the store shared by the fleet (a server alone keeps one in memory), off
   *  the kernel thread; `done(user_data, result)` hears it once on the kernel thread, then
   *  `release` gets `user_data` (also when the instance stopped first: then `done` is not
   *  called). Expired keys read as absent. MOLT_ERR_INVALID_ARGUMENT names a bad op at once
   *  (`done` is not called); MOLT_ERR_RATE_LIMITED when 1000 calls wait already. */
  molt_status_t (*kv_call)(molt_context_t* ctx, const molt_kv_op* op, molt_kv_done_fn done,
                           void* user_data, molt_cleanup_fn release);

  /* --- ABI 1.10: predicted intents from controllers (docs/client.md, "Unreliable channels and
   * predicted intents"; MOLT_ERR_UNSUPPORTED in server hosts). Unreliable events reach
   * controllers as "Net.Event.<channel>" like any event; client_intent sends on an unreliable
   * channel. Each predicted intent's resolution is published once on the client kernel's Bus as
   * "Net.Resolved.<channel>" (seq; accepted 1 or 0; the status, MOLT_OK, MOLT_ERR_REJECTED or
   * MOLT_ERR_TIMEOUT; all MOLT_VALUE_INT): roll back on 0. --- */

  /** @brief Sends a predicted intent on the server's channel named `channel`, checked like
   *  molt_client_predict; `*out_seq` (may be NULL) is its sequence number. */
  molt_status_t (*client_predict)(molt_context_t* ctx, const char* channel, const void* data,
                                  size_t size, uint32_t* out_seq);
  /** @brief Calls `fn` for each predicted intent on `channel` not yet resolved, oldest first:
   *  replay them over the authoritative state the server sent. */
  molt_status_t (*client_pending)(molt_context_t* ctx, const char* channel, molt_pending_fn fn,
                                  void* user_data);

  /* --- ABI 1.11: interest (docs/network.md, "Interest"; MOLT_ERR_UNSUPPORTED where the host has
   * no network) --- */
  /** @brief Sets the replica's interest predicate (NULL clears it): it is asked now for every
   *  candidate (a session it turns away that had the replica gets a remove), then for each new
   *  one. `release(user_data)` runs when the predicate is replaced, the replica is destroyed,
   *  the call is refused, or this instance stops (a swap: the next generation sets its own;
   *  until then who sees the replica does not change). */
  molt_status_t (*replica_set_interest)(molt_context_t* ctx, molt_replica_t replica,
                                        molt_interest_fn fn, void* user_data,
                                        molt_cleanup_fn release);
  /** @brief Asks the predicate again for `session` (0: every candidate): what it reads changed. */
  molt_status_t (*replica_refresh_interest)(molt_context_t* ctx, molt_replica_t replica,
                                            molt_session_t session);
  /** @brief Declares the zone `name`, or, in a swap, finds the one the previous generation
   *  declared by that name (its members and bindings kept). Destroyed by zone_destroy or when
   *  this plugin stops outside a swap. */
  molt_status_t (*zone_declare)(molt_context_t* ctx, const char* name, molt_zone_t* out_zone);
  /** @brief Its members lose the replicas only it held (removes). */
  molt_status_t (*zone_destroy)(molt_context_t* ctx, molt_zone_t zone);
  /** @brief `session` is in the zone (idempotent): it sees the zone's replicas. */
  molt_status_t (*zone_enter)(molt_context_t* ctx, molt_zone_t zone, molt_session_t session);
  /** @brief `session` leaves the zone (idempotent): removes for what no other source holds. */
  molt_status_t (*zone_leave)(molt_context_t* ctx, molt_zone_t zone, molt_session_t session);
  /** @brief The zone's members see `replica` (MOLT_AUDIENCE_LIST; idempotent). */
  molt_status_t (*zone_bind)(molt_context_t* ctx, molt_zone_t zone, molt_replica_t replica);
  molt_status_t (*zone_unbind)(molt_context_t* ctx, molt_zone_t zone, molt_replica_t replica);
  /** @brief Declares the grid `spec->name`, or, in a swap, finds the previous generation's. */
  molt_status_t (*grid_declare)(molt_context_t* ctx, const molt_grid_spec* spec,
                                molt_grid_t* out_grid);
  /** @brief Everyone who saw a replica through it loses it (removes). */
  molt_status_t (*grid_destroy)(molt_context_t* ctx, molt_grid_t grid);
  /** @brief Places `replica` (MOLT_AUDIENCE_LIST) at its MOLT_REPLICA_FLOAT fields `x_field`,
   *  `y_field`, read at every pass: moving it is writing them. */
  molt_status_t (*grid_bind)(molt_context_t* ctx, molt_grid_t grid, molt_replica_t replica,
                             uint32_t x_field, uint32_t y_field);
  molt_status_t (*grid_unbind)(molt_context_t* ctx, molt_grid_t grid, molt_replica_t replica);
  /** @brief `session` sees from (x, y) from the grid's next pass on. */
  molt_status_t (*grid_place)(molt_context_t* ctx, molt_grid_t grid, molt_session_t session,
                              double x, double y);
  /** @brief `session` leaves the grid: removes for what it saw through it. */
  molt_status_t (*grid_remove)(molt_context_t* ctx, molt_grid_t grid, molt_session_t session);
} molt_host_api;

/** @brief True when `api` offers `slot`: the table is long enough and the slot is set. Use it
 *  before calling any slot added after ABI 1.0. */
#define MOLT_API_HAS(api, slot) \
  ((api)->struct_size >= offsetof(molt_host_api, slot) + sizeof((api)->slot) && (api)->slot != NULL)

/* --- The plugin descriptor -------------------------------------------------------------------- */

/** @brief What molt_plugin_entry() returns: static data, read once at load. */
typedef struct molt_plugin_info {
  uint32_t struct_size; /**< sizeof(molt_plugin_info) as the plugin compiled it */
  uint32_t abi_version; /**< MOLT_ABI_VERSION_CURRENT as the plugin compiled it */
  const char* name;     /**< unique per host: [A-Za-z0-9_.-], 1..64 characters */
  const char* version;  /**< semantic version: "1.4.2" (pre-release and build suffixes allowed) */
  int32_t kind;         /**< MOLT_PLUGIN_KIND_* */
  uint32_t dependency_count;
  const char* const* dependencies; /**< names of plugins this one needs started first */

  /** @brief Builds the plugin's state: store references, create local state, register
   *  subscriptions and hooks. Must not call other services. Required. On failure (any status but
   *  MOLT_OK, with set_error) the plugin frees what it allocated itself; the host releases what it
   *  registered and calls neither stop nor destroy.
   *  @param[out] out_state  passed to every other callback. */
  molt_status_t (*init)(molt_context_t* ctx, const molt_host_api* api, void** out_state);
  /** @brief Starts work; every init (and every dependency's start) has run. May be NULL. */
  molt_status_t (*start)(void* state);
  /** @brief Stops work, in reverse boot order. Also called when start never ran (a failed boot
   *  rolls back), so it must tolerate that. May be NULL. */
  molt_status_t (*stop)(void* state);
  /** @brief Frees the state; the last call the instance receives. May be NULL. */
  void (*destroy)(void* state);

  uint32_t state_version;   /**< the format of export_state's bytes, for import_state */
  uint32_t interface_count; /**< entries in `interfaces` */
  /** @brief A swap: writes the state the next generation's instance of this plugin inherits to
   *  `sink`, before this instance stops. MOLT_ERR_UNSUPPORTED means no state; any other error
   *  aborts the swap with this generation still serving. At most 16 MiB. May be NULL. */
  molt_status_t (*export_state)(void* state, molt_bytes_fn sink, void* sink_user_data);
  /** @brief A swap: reads the state the previous instance exported (in its format
   *  `state_version`), after init and before start. MOLT_ERR_UNSUPPORTED drops the state; any
   *  other error fails the swap, and the previous build is restored with the same bytes (older
   *  code is only handed state its own build exported). May be NULL. */
  molt_status_t (*import_state)(void* state, uint32_t state_version, const void* data, size_t size);
  const molt_interface_export* interfaces; /**< what other plugins may fetch */
  const char* description;                 /**< one line for operators; may be NULL */

  /* --- ABI 1.3 --- */
  /** @brief The oldest state_version import_state reads (0: state_version only). A swap from a
   *  predecessor whose state is older, or newer than state_version, fails before import_state
   *  runs, and the previous build keeps serving. */
  uint32_t oldest_state_version;

  /* --- ABI 1.8 --- */
  /** @brief Runs the plugin's own tests (the spec gate: moltd --self-test and --check, molt
   *  build, the test kit), after every plugin of the build started, on the kernel thread, with
   *  the host API as in any callback. Calls `report` once per test. Returns MOLT_OK once they all
   *  ran, whatever they found (a failing test goes to `report`); another status (with set_error)
   *  fails the gate as a whole. The tests must leave the plugin serving as before: they run on a
   *  scratch server, but the test kit runs them where the test wants. May be NULL: no tests. */
  molt_status_t (*self_test)(void* state, molt_self_test_fn report, void* report_user_data);
} molt_plugin_info;

/** @brief The one symbol a plugin exports. Returns a pointer to static data. */
typedef const molt_plugin_info* (*molt_plugin_entry_fn)(void);
#define MOLT_PLUGIN_ENTRY_SYMBOL "molt_plugin_entry"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MOLT_MOLT_H_ */

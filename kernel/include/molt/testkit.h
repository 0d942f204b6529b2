/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file molt/testkit.h
 * @brief The plugin test kit's C API (Molt::testkit, libmolt_testkit; spec: TestKit).
 *
 * A whole moltd inside a test process: the plugins a test names are loaded by the real loader
 * and served by the real kernel, network pipeline, profile store and plugin layers, wired as
 * moltd wires them (kernel/src/server/assembly.h), with three differences that make a test
 * deterministic:
 *   - time is a manual clock: nothing runs on a timer until molt_testkit_advance() moves it;
 *   - clients are in-process: molt_testkit_join() hands the network a Hello as a socket would,
 *     and every frame the server sends a session is kept for molt_testkit_next();
 *   - profiles are kept in SQLite in memory (or in a file the test names).
 * Work the server hands to its own threads (profile loads and saves, worker jobs, live values)
 * is waited for: when a call returns, what it caused has happened, up to the next timer.
 *
 *   molt_testkit_t* kit;
 *   molt_testkit_create(NULL, &kit);
 *   const char* plugins[] = {"build/counter.so"};
 *   molt_testkit_load(kit, plugins, 1);                       // init and start, as moltd does
 *   molt_testkit_hello hello = {.struct_size = sizeof hello, .user = "ada"};
 *   molt_session_t ada;
 *   molt_testkit_join(kit, &hello, &ada);                     // the Welcome, the profile loaded
 *   molt_testkit_intent(kit, ada, "counter.Add", bytes, n);   // MOLT_OK, or why it was refused
 *   molt_testkit_advance(kit, 1.0);                           // one second of timers and ticks
 *   molt_testkit_message m = {.struct_size = sizeof m};
 *   while (molt_testkit_next(kit, ada, &m)) { ... }           // events, responses, errors, kicks
 *   molt_testkit_destroy(kit);                                // the close: stops, final saves
 *
 * Rules:
 *   - One kit at a time in a process (the kernel is one per process): a second create fails
 *     naming the first. Create, use and destroy it on one thread.
 *   - Every call returns a molt_status_t (MOLT_OK or a negative MOLT_ERR_*); the text of the
 *     last error is molt_testkit_error(kit).
 *   - Strings and bytes the kit hands out are valid until the next call on the kit.
 *   - Size-prefixed structs follow molt.h's rule: a struct from an older kit is accepted.
 *
 * C++ tests use molt/testkit.hpp, a header-only wrapper over this API. Walk-through:
 * docs/testing-plugins.md.
 */
#ifndef MOLT_TESTKIT_H_
#define MOLT_TESTKIT_H_

#include <molt/molt.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The C API's version: calls and fields are appended, never changed or removed. */
#define MOLT_TESTKIT_VERSION 1

#if defined(__GNUC__)
#define MOLT_TESTKIT_API __attribute__((visibility("default")))
#else
#define MOLT_TESTKIT_API
#endif

typedef struct molt_testkit molt_testkit_t;

/** @brief How a kit is made; NULL for every default. Zeroed fields are defaults. */
typedef struct molt_testkit_options {
  uint32_t struct_size; /**< sizeof(molt_testkit_options) */
  uint32_t reserved;    /**< 0 */
  /** moltd's configuration as JSON text, the same keys as moltd's --config file ({"net":
   *  {"auth": "production"}, "profiles": {...}, "workers": {...}}); NULL: the defaults. */
  const char* config_json;
  /** A profile database kept after the kit (a second kit may open it: a restart): an SQLite
   *  file, or a PostgreSQL URL (docs/fleet.md); NULL: SQLite in memory, gone with the kit. */
  const char* profile_db;
  /** The tick rate in Hz; 0: the configuration's (server.tick_rate), else 60. */
  double tick_rate;
  /** Log lines at this level or above are also written to stderr: "debug", "info", "warn",
   *  "error" or "off"; NULL: "warn". Every line the server logs at or above its own level
   *  (server.log_level, default info) is kept for molt_testkit_logs() either way. */
  const char* echo_level;
} molt_testkit_options;

/* --- The kit --------------------------------------------------------------------------------- */

/** @brief Makes a kit: a kernel on a manual clock, nothing loaded. On failure *out is NULL and
 *  molt_testkit_error(NULL) says why (a bad configuration key, another kit alive). */
MOLT_TESTKIT_API molt_status_t molt_testkit_create(const molt_testkit_options* options,
                                                   molt_testkit_t** out);
/** @brief The text of the last error of `kit` ("" after a success); NULL: of the last create. */
MOLT_TESTKIT_API const char* molt_testkit_error(const molt_testkit_t* kit);
/** @brief Closes (molt_testkit_close) when that has not run, unloads every plugin, frees the
 *  kit. NULL is ignored. */
MOLT_TESTKIT_API void molt_testkit_destroy(molt_testkit_t* kit);

/** @brief Loads `paths` (plugin libraries, or directories whose every *.so is loaded, with
 *  their molt-build.json when there is one) as the first generation, and starts it, as moltd
 *  boots: descriptors checked, dependency order, init then start. Then the fuzz gate runs as in
 *  a moltd with dev auth (a validator that throws fails the load). Once per kit. */
MOLT_TESTKIT_API molt_status_t molt_testkit_load(molt_testkit_t* kit, const char* const* paths,
                                                 size_t count);
/** @brief Swaps the serving generation for `paths` (a new build of the plugins) under the
 *  connected sessions, as SIGHUP does in moltd: export_state, stop, import_state, start, the
 *  sessions replayed. `report` (may be NULL) gets the swap report as JSON: "ok", "stage",
 *  "error", "handed" (the state each plugin handed over), "retired", ... MOLT_OK when the new
 *  generation serves; otherwise the error names the stage, and the previous one serves. */
MOLT_TESTKIT_API molt_status_t molt_testkit_swap(molt_testkit_t* kit, const char* const* paths,
                                                 size_t count, molt_bytes_fn report,
                                                 void* user_data);
/** @brief Runs the serving plugins' own tests (plugin ABI 1.8 `self_test`), as moltd
 *  --self-test does. `report` (may be NULL) gets them as JSON: {"passed", "failed", "plugins":
 *  [{"plugin", "error", "tests": [{"name", "ok", "error"}]}]}. MOLT_OK when every test passed;
 *  MOLT_ERR_REJECTED naming each failure otherwise. */
MOLT_TESTKIT_API molt_status_t molt_testkit_self_test(molt_testkit_t* kit, molt_bytes_fn report,
                                                      void* user_data);
/** @brief The close, as SIGTERM in moltd: Kernel.Closing, every service's stop in reverse boot
 *  order, Kernel.Stopped, every loaded profile's final save, then the sessions end (each gets
 *  its Bye). Profiles and stats stay readable afterwards. Idempotent. */
MOLT_TESTKIT_API molt_status_t molt_testkit_close(molt_testkit_t* kit);

/* --- Time ------------------------------------------------------------------------------------ */

/** @brief Moves the manual clock `seconds` ahead (at least 0), running every tick, task, timer,
 *  autosave, request timeout and process wake-up due on the way, in order, and answering the
 *  server's pings for every session. */
MOLT_TESTKIT_API molt_status_t molt_testkit_advance(molt_testkit_t* kit, double seconds);
/** @brief The manual clock: seconds since the kit was made. */
MOLT_TESTKIT_API double molt_testkit_now(const molt_testkit_t* kit);

/* --- Clients --------------------------------------------------------------------------------- */

/** @brief A client's Hello. */
typedef struct molt_testkit_hello {
  uint32_t struct_size; /**< sizeof(molt_testkit_hello) */
  uint32_t reserved;    /**< 0 */
  const char* user;     /**< the user id; required */
  const void* credentials;
  size_t credentials_size;
  const void* join_data;
  size_t join_data_size;
} molt_testkit_hello;

/** @brief Connects a client and sends its Hello. MOLT_OK with *out the session once the Welcome
 *  came and the session's profiles loaded; a refused Hello gives the refusal's status
 *  (MOLT_ERR_REJECTED for AuthFailed, BadHello and the rest, MOLT_ERR_RATE_LIMITED, MOLT_ERR_STATE
 *  while closing) and its reason and text in molt_testkit_error(). */
MOLT_TESTKIT_API molt_status_t molt_testkit_join(molt_testkit_t* kit,
                                                 const molt_testkit_hello* hello,
                                                 molt_session_t* out);
/** @brief The client says goodbye (a Bye frame): the session ends, its leave handlers run and
 *  its profiles get their final saves. MOLT_ERR_STALE when the session already ended. */
MOLT_TESTKIT_API molt_status_t molt_testkit_leave(molt_testkit_t* kit, molt_session_t session);

/** @brief Sends an intent on the channel named `channel` through the whole inbound pipeline
 *  (budgets, verification, session, rate limit, rules, validators, the hook chain, the
 *  handler). MOLT_OK: the handler ran without an error. Otherwise: MOLT_ERR_RATE_LIMITED,
 *  MOLT_ERR_REJECTED with "<reason>: <text>" (reasons as the wire inspector names them:
 *  rule, hook_rejected, unguarded, bad_payload, ...), MOLT_ERR_INTERNAL when the
 *  handler failed, MOLT_ERR_NOT_FOUND when no intent channel has that name, MOLT_ERR_STALE
 *  when the session ended. */
MOLT_TESTKIT_API molt_status_t molt_testkit_intent(molt_testkit_t* kit, molt_session_t session,
                                                   const char* channel, const void* payload,
                                                   size_t size);
/** @brief Sends a request, as molt_testkit_intent() an intent; *out_id (may be NULL) is its id.
 *  The answer, whenever the plugin gives it (or the timeout, or the refusal), arrives as a
 *  MOLT_TESTKIT_RESPONSE message with that id. The status says what the pipeline did, as for
 *  intents: a refused request is also answered, with its reject payload. */
MOLT_TESTKIT_API molt_status_t molt_testkit_request(molt_testkit_t* kit, molt_session_t session,
                                                    const char* channel, const void* payload,
                                                    size_t size, uint32_t* out_id);

/* --- What the server sent ------------------------------------------------------------------- */

#define MOLT_TESTKIT_EVENT 1    /**< an event on a channel: channel, payload */
#define MOLT_TESTKIT_RESPONSE 2 /**< an answer: request_id, status, payload, retry_after */
#define MOLT_TESTKIT_ERROR                                                                     \
  3                        /**< a refused message reported: channel, reason, text, retry_after \
                            */
#define MOLT_TESTKIT_BYE 4 /**< the session ended: reason ("Kicked", ...), text */
#define MOLT_TESTKIT_BUS                                                  \
  5 /**< session 0 only: a Bus message watched: channel (the topic), args \
     */

/** @brief One message, as molt_testkit_next() hands it out. */
typedef struct molt_testkit_message {
  uint32_t struct_size;   /**< set by the caller: sizeof(molt_testkit_message) */
  int32_t kind;           /**< MOLT_TESTKIT_* */
  const char* channel;    /**< EVENT, ERROR: the channel's name ("" when none); BUS: the topic */
  uint32_t request_id;    /**< RESPONSE */
  molt_status_t status;   /**< RESPONSE: the answer's status (MOLT_OK, MOLT_ERR_REJECTED, ...) */
  const void* payload;    /**< EVENT, RESPONSE: the payload */
  size_t size;            /**< its size in bytes */
  const char* reason;     /**< ERROR: the rejection ("rate_limited", ...); BYE: the exit reason */
  const char* text;       /**< ERROR, BYE: the server's text */
  double retry_after;     /**< ERROR, RESPONSE: seconds before a retry is taken; 0: none */
  const molt_value* args; /**< BUS: the message's arguments */
  size_t arg_count;
} molt_testkit_message;

/** @brief Takes the oldest message the server sent `session` (session 0: the Bus messages
 *  watched) into *out. Returns 1 when there was one (valid until the next call on the kit), 0
 *  when none is left (or the arguments are invalid: molt_testkit_error() says). Pings are
 *  answered by the kit and never handed out; replicas are applied to the session's copy
 *  (molt_testkit_replica_*). */
MOLT_TESTKIT_API int32_t molt_testkit_next(molt_testkit_t* kit, molt_session_t session,
                                           molt_testkit_message* out);
/** @brief Watches Bus topics matching `pattern` (a topic, or a prefix ending in ".*"): each
 *  message published on one is kept as a MOLT_TESTKIT_BUS message of session 0. */
MOLT_TESTKIT_API molt_status_t molt_testkit_watch(molt_testkit_t* kit, const char* pattern);

/** @brief Field `field` of the replica named `replica` as the session's client holds it (the
 *  server's snapshots and deltas applied, as libmolt_client applies them). MOLT_ERR_NOT_FOUND
 *  when the client holds no such replica or field; MOLT_ERR_INVALID_ARGUMENT for a field of
 *  another type. */
MOLT_TESTKIT_API molt_status_t molt_testkit_replica_int(molt_testkit_t* kit, molt_session_t session,
                                                        const char* replica, const char* field,
                                                        int64_t* out);
MOLT_TESTKIT_API molt_status_t molt_testkit_replica_float(molt_testkit_t* kit,
                                                          molt_session_t session,
                                                          const char* replica, const char* field,
                                                          double* out);
MOLT_TESTKIT_API molt_status_t molt_testkit_replica_bytes(molt_testkit_t* kit,
                                                          molt_session_t session,
                                                          const char* replica, const char* field,
                                                          molt_bytes_fn sink, void* user_data);

/* --- The server's side ----------------------------------------------------------------------- */

/** @brief The profile of `user` in the store named `store`, as JSON: the document in memory
 *  while the user's session has it loaded (what the next save writes), else the one stored.
 *  MOLT_ERR_NOT_FOUND when neither exists. */
MOLT_TESTKIT_API molt_status_t molt_testkit_profile(molt_testkit_t* kit, const char* store,
                                                    const char* user, molt_bytes_fn sink,
                                                    void* user_data);
/** @brief Publishes on the Bus, as a plugin would. */
MOLT_TESTKIT_API molt_status_t molt_testkit_publish(molt_testkit_t* kit, const char* topic,
                                                    const molt_value* args, size_t count);
/** @brief Sets the live value `key` ("<plugin>.<name>") to the JSON `json` as an operator does
 *  with molt config set (NULL: unset, the default serves again): checked by type and by the
 *  plugin's check, stored, then served, with Config.Changed on the Bus. The refusal's text is in
 *  molt_testkit_error().
 *  @return MOLT_OK once the value is stored and served (or unset);
 *  MOLT_ERR_INVALID_ARGUMENT (-1): `kit` or `key` is NULL, or `json` is not JSON, is null, is
 *  over 64 KiB, or is not of the declared default's type ("... is a string");
 *  MOLT_ERR_NOT_FOUND (-2): no running plugin declares `key` (a set), or `key` is neither
 *  declared nor set (an unset);
 *  MOLT_ERR_REJECTED (-9): the declaring plugin's check refused the value;
 *  MOLT_ERR_FAILED_PRECONDITION (-4): the kit's live values could not be opened;
 *  MOLT_ERR_IO_ERROR (-10): the live values' store failed to write it;
 *  MOLT_ERR_TIMED_OUT (-12): the store did not answer within the kit's 60 s wait;
 *  MOLT_ERR_INTERNAL (-5): the set was never answered, or the kit threw. */
MOLT_TESTKIT_API molt_status_t molt_testkit_set_live(molt_testkit_t* kit, const char* key,
                                                     const char* json);
/** @brief The server's stats as JSON: moltd's GET /api/v1/stats (scheduler, generations, net
 *  with its channels, profiles, workers, live, analytics, ...). */
MOLT_TESTKIT_API molt_status_t molt_testkit_stats(molt_testkit_t* kit, molt_bytes_fn sink,
                                                  void* user_data);
/** @brief The log lines written since the last call (or since the kit was made), each
 *  "<level> [<scope>] <message>\n". */
MOLT_TESTKIT_API molt_status_t molt_testkit_logs(molt_testkit_t* kit, molt_bytes_fn sink,
                                                 void* user_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MOLT_TESTKIT_H_ */

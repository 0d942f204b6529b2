// SPDX-License-Identifier: Apache-2.0
// File: molt/testkit.hpp
//
// The plugin test kit for C++ tests: a header-only wrapper over molt/testkit.h (C++17), with
// the C API's rules (one kit per process, one thread) and its whole behaviour. Any test
// framework; GoogleTest shown:
//
//   molt::testkit::Kit kit({MOLT_PLUGIN_COUNTER});             // loaded and started
//   molt_session_t ada = kit.Join("ada");                        // welcomed, profile loaded
//   ASSERT_TRUE(kit.Intent(ada, "counter.Add", bytes).ok());     // through the whole pipeline
//   molt::testkit::Response r = kit.Request(ada, "scores.Get");  // waits for the answer
//   kit.Advance(60);                                             // a minute of ticks and timers
//   for (const molt::testkit::Message& m : kit.Events(ada, "counter.Changed")) { ... }
//   EXPECT_EQ(kit.Int(ada, "counter", "total"), 3);              // the client's replica copy
//   EXPECT_NE(kit.Profile("scores", "ada").value().find("\"points\":3"), std::string::npos);
//   auto swap = kit.Swap({MOLT_PLUGIN_COUNTER_V2});              // a hot swap under ada
//
// Calls that cannot go on without their result (making the kit, Join) throw molt::testkit::Error
// with the kit's text; the others return a molt::Status or molt::Result (molt/molt.hpp) to
// assert on. Walk-through: docs/testing-plugins.md.
#ifndef MOLT_TESTKIT_HPP_
#define MOLT_TESTKIT_HPP_

#ifndef __cplusplus
#error "molt/testkit.hpp is C++ only; C tests include molt/testkit.h"
#endif

#include <molt/testkit.h>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <molt/molt.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace molt {
namespace testkit {

// A kit that could not be made, a client that could not join.
class Error : public std::runtime_error {
 public:
  Error(molt_status_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  molt_status_t code() const { return code_; }

 private:
  molt_status_t code_;
};

struct Options {
  Options() {}              // not an aggregate: Kit({"counter.so"}) names plugins, never options
  std::string config_json;  // moltd's configuration keys, as JSON ("": the defaults)
  std::string profile_db;   // a file kept after the kit ("": SQLite in memory)
  double tick_rate = 0;     // Hz (0: the configuration's, else 60)
  std::string echo_level = "warn";  // log lines at or above it also go to stderr
};

// One argument of a Bus message, copied.
struct Arg {
  std::int32_t type = MOLT_VALUE_NIL;  // MOLT_VALUE_*
  std::int64_t i = 0;                  // BOOL, INT; HANDLE as its bits
  double d = 0;                        // DOUBLE
  std::string bytes;                   // STRING, BYTES
};

// One message the server sent a session (see molt/testkit.h).
struct Message {
  std::int32_t kind = 0;  // MOLT_TESTKIT_EVENT, _RESPONSE, _ERROR, _BYE, _BUS
  std::string channel;    // EVENT, ERROR: the channel; BUS: the topic
  std::uint32_t request_id = 0;
  molt_status_t status = MOLT_OK;
  std::string payload;  // EVENT, RESPONSE (bytes)
  std::string reason;   // ERROR: "rate_limited", ...; BYE: "Kicked", ...
  std::string text;     // ERROR, BYE
  double retry_after = 0;
  std::vector<Arg> args;  // BUS

  bool event() const { return kind == MOLT_TESTKIT_EVENT; }
  bool bye() const { return kind == MOLT_TESTKIT_BYE; }
  // BUS arguments by index; another type (or past the end) reads as the fallback.
  std::int64_t Int(std::size_t i, std::int64_t fallback = 0) const {
    return i < args.size() && args[i].type == MOLT_VALUE_INT ? args[i].i : fallback;
  }
  double Double(std::size_t i, double fallback = 0) const {
    return i < args.size() && args[i].type == MOLT_VALUE_DOUBLE ? args[i].d : fallback;
  }
  std::string String(std::size_t i, std::string fallback = {}) const {
    return i < args.size() && args[i].type == MOLT_VALUE_STRING ? args[i].bytes : fallback;
  }
};

// A request's answer.
struct Response {
  molt_status_t status = MOLT_ERR_TIMEOUT;  // MOLT_OK, MOLT_ERR_REJECTED, MOLT_ERR_TIMEOUT, ...
  std::string payload;                      // the answer (or the channel's reject payload)
  double retry_after = 0;
  bool ok() const { return status == MOLT_OK; }
};

class Kit {
 public:
  // A kit with nothing loaded; throws Error when it cannot be made.
  explicit Kit(const Options& options = Options()) {
    molt_testkit_options o{};
    o.struct_size = sizeof o;
    o.config_json = options.config_json.empty() ? nullptr : options.config_json.c_str();
    o.profile_db = options.profile_db.empty() ? nullptr : options.profile_db.c_str();
    o.tick_rate = options.tick_rate;
    o.echo_level = options.echo_level.c_str();
    if (molt_status_t s = molt_testkit_create(&o, &kit_); s != MOLT_OK) {
      throw Error(s, std::string("molt::testkit::Kit: ") + molt_testkit_error(nullptr));
    }
  }
  // A kit serving `plugins` (libraries, or one directory); throws Error when they do not load.
  explicit Kit(const std::vector<std::string>& plugins, const Options& options = Options())
      : Kit(options) {
    if (Status s = Load(plugins); !s.ok()) {
      molt_testkit_destroy(std::exchange(kit_, nullptr));
      throw Error(s.code(), "molt::testkit::Kit: " + s.message());
    }
  }
  Kit(const Kit&) = delete;
  Kit& operator=(const Kit&) = delete;
  // The close (every service stops, every profile's final save), then everything unloads.
  ~Kit() { molt_testkit_destroy(kit_); }

  molt_testkit_t* get() const { return kit_; }
  // The text of the last error.
  std::string error() const { return molt_testkit_error(kit_); }

  // --- Generations and the close ---
  Status Load(const std::vector<std::string>& plugins) {
    std::vector<const char*> p = Pointers(plugins);
    return Check(molt_testkit_load(kit_, p.data(), p.size()));
  }
  struct SwapResult {
    Status status;
    std::string report;  // the swap report, JSON ("handed": what crossed the swap)
    bool ok() const { return status.ok(); }
  };
  SwapResult Swap(const std::vector<std::string>& plugins) {
    std::vector<const char*> p = Pointers(plugins);
    SwapResult r;
    r.status = Check(molt_testkit_swap(kit_, p.data(), p.size(), &Append, &r.report));
    return r;
  }
  Status Close() { return Check(molt_testkit_close(kit_)); }
  // The plugins' own tests (molt::Service::SelfTest), as moltd --self-test runs them.
  struct SelfTestResult {
    Status status;       // OK when every one passed, else each failure named
    std::string report;  // JSON: {"passed", "failed", "plugins": [...]}
    bool ok() const { return status.ok(); }
  };
  SelfTestResult SelfTest() {
    SelfTestResult r;
    r.status = Check(molt_testkit_self_test(kit_, &Append, &r.report));
    return r;
  }

  // --- Time ---
  Status Advance(double seconds) { return Check(molt_testkit_advance(kit_, seconds)); }
  double Now() const { return molt_testkit_now(kit_); }

  // --- Clients ---
  Result<molt_session_t> TryJoin(const std::string& user, std::string_view join_data = {},
                                 std::string_view credentials = {}) {
    molt_testkit_hello h{};
    h.struct_size = sizeof h;
    h.user = user.c_str();
    h.credentials = credentials.data();
    h.credentials_size = credentials.size();
    h.join_data = join_data.data();
    h.join_data_size = join_data.size();
    molt_session_t session = 0;
    if (Status s = Check(molt_testkit_join(kit_, &h, &session)); !s.ok()) {
      return s;
    }
    return session;
  }
  // TryJoin(), or Error.
  molt_session_t Join(const std::string& user, std::string_view join_data = {},
                      std::string_view credentials = {}) {
    Result<molt_session_t> s = TryJoin(user, join_data, credentials);
    if (!s.ok()) {
      throw Error(s.status().code(), "molt::testkit::Kit::Join: " + s.status().message());
    }
    return *s;
  }
  Status Leave(molt_session_t session) { return Check(molt_testkit_leave(kit_, session)); }

  Status Intent(molt_session_t session, const std::string& channel, std::string_view payload = {}) {
    return Check(
        molt_testkit_intent(kit_, session, channel.c_str(), payload.data(), payload.size()));
  }
  // Sends a request without waiting: its id, or why the pipeline refused it (then its refusal's
  // answer is queued all the same).
  Result<std::uint32_t> Send(molt_session_t session, const std::string& channel,
                             std::string_view payload = {}) {
    std::uint32_t id = 0;
    Status s = Check(
        molt_testkit_request(kit_, session, channel.c_str(), payload.data(), payload.size(), &id));
    if (!s.ok() && id == 0) {
      return s;
    }
    return id;
  }
  // Sends a request and waits for its answer, advancing the clock a tick at a time when the
  // plugin answers later (at most `max_wait` seconds of the kit's clock; the channel's timeout
  // answers first). Other messages stay queued for Next().
  Response Request(molt_session_t session, const std::string& channel,
                   std::string_view payload = {}, double max_wait = 120) {
    std::uint32_t id = 0;
    const molt_status_t sent =
        molt_testkit_request(kit_, session, channel.c_str(), payload.data(), payload.size(), &id);
    Response r;
    if (id == 0) {  // never sent (no such channel, an ended session): the kit's error
      r.status = sent;
      r.payload = error();
      return r;
    }
    const double until = Now() + max_wait;
    for (;;) {
      Pull(session);
      std::deque<Message>& q = held_[session];
      for (auto it = q.begin(); it != q.end(); ++it) {
        if (it->kind == MOLT_TESTKIT_RESPONSE && it->request_id == id) {
          r.status = it->status;
          r.payload = std::move(it->payload);
          r.retry_after = it->retry_after;
          q.erase(it);
          return r;
        }
      }
      if (Now() >= until || !Advance(1.0 / 60).ok()) {
        r.payload = "no answer within " + std::to_string(max_wait) + " s of the kit's clock";
        return r;
      }
    }
  }

  // --- What the server sent ---
  // The session's oldest message (session 0: the Bus messages watched), or none.
  std::optional<Message> Next(molt_session_t session) {
    Pull(session);
    std::deque<Message>& q = held_[session];
    if (q.empty()) {
      return std::nullopt;
    }
    Message m = std::move(q.front());
    q.pop_front();
    return m;
  }
  // Every message queued for the session, oldest first.
  std::vector<Message> Drain(molt_session_t session) {
    std::vector<Message> out;
    while (std::optional<Message> m = Next(session)) {
      out.push_back(std::move(*m));
    }
    return out;
  }
  // The events on `channel` queued for the session, oldest first; the rest stay queued.
  std::vector<Message> Events(molt_session_t session, const std::string& channel) {
    Pull(session);
    std::deque<Message>& q = held_[session];
    std::vector<Message> out;
    for (auto it = q.begin(); it != q.end();) {
      if (it->kind == MOLT_TESTKIT_EVENT && it->channel == channel) {
        out.push_back(std::move(*it));
        it = q.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }
  // The session's Bye, once it ended (its reason and text), else none.
  std::optional<Message> Bye(molt_session_t session) {
    Pull(session);
    for (const Message& m : held_[session]) {
      if (m.kind == MOLT_TESTKIT_BYE) {
        return m;
      }
    }
    return std::nullopt;
  }
  Status Watch(const std::string& pattern) {
    return Check(molt_testkit_watch(kit_, pattern.c_str()));
  }

  // The client's copy of a replica field.
  Result<std::int64_t> Int(molt_session_t session, const std::string& replica,
                           const std::string& field) {
    std::int64_t v = 0;
    if (Status s =
            Check(molt_testkit_replica_int(kit_, session, replica.c_str(), field.c_str(), &v));
        !s.ok()) {
      return s;
    }
    return v;
  }
  Result<double> Float(molt_session_t session, const std::string& replica,
                       const std::string& field) {
    double v = 0;
    if (Status s =
            Check(molt_testkit_replica_float(kit_, session, replica.c_str(), field.c_str(), &v));
        !s.ok()) {
      return s;
    }
    return v;
  }
  Result<std::string> BytesField(molt_session_t session, const std::string& replica,
                                 const std::string& field) {
    std::string v;
    if (Status s = Check(
            molt_testkit_replica_bytes(kit_, session, replica.c_str(), field.c_str(), &Append, &v));
        !s.ok()) {
      return s;
    }
    return v;
  }

  // --- The server's side ---
  Result<std::string> Profile(const std::string& store, const std::string& user) {
    std::string doc;
    if (Status s = Check(molt_testkit_profile(kit_, store.c_str(), user.c_str(), &Append, &doc));
        !s.ok()) {
      return s;
    }
    return doc;
  }
  // Arguments built with molt::Value (molt/molt.hpp).
  Status Publish(const std::string& topic, std::initializer_list<molt_value> args = {}) {
    return Check(molt_testkit_publish(kit_, topic.c_str(), args.begin(), args.size()));
  }
  Status SetLive(const std::string& key, const std::string& json) {
    return Check(molt_testkit_set_live(kit_, key.c_str(), json.c_str()));
  }
  Status UnsetLive(const std::string& key) {
    return Check(molt_testkit_set_live(kit_, key.c_str(), nullptr));
  }
  std::string Stats() {
    std::string out;
    (void)molt_testkit_stats(kit_, &Append, &out);
    return out;
  }
  // The log lines since the last call.
  std::string Logs() {
    std::string out;
    (void)molt_testkit_logs(kit_, &Append, &out);
    return out;
  }

 private:
  static void Append(void* user_data, const void* data, std::size_t size) {
    static_cast<std::string*>(user_data)->append(static_cast<const char*>(data), size);
  }
  static std::vector<const char*> Pointers(const std::vector<std::string>& paths) {
    std::vector<const char*> p;
    for (const std::string& s : paths) {
      p.push_back(s.c_str());
    }
    return p;
  }
  Status Check(molt_status_t code) const {
    return code == MOLT_OK ? Status::Ok() : Status(code, error());
  }
  // Moves what the kit holds for `session` into held_.
  void Pull(molt_session_t session) {
    molt_testkit_message m{};
    m.struct_size = sizeof m;
    while (molt_testkit_next(kit_, session, &m) == 1) {
      Message out;
      out.kind = m.kind;
      out.channel = m.channel;
      out.request_id = m.request_id;
      out.status = m.status;
      if (m.size > 0) {
        out.payload.assign(static_cast<const char*>(m.payload), m.size);
      }
      out.reason = m.reason;
      out.text = m.text;
      out.retry_after = m.retry_after;
      for (std::size_t i = 0; i < m.arg_count; ++i) {
        const molt_value& v = m.args[i];
        Arg a;
        a.type = v.type;
        if (v.type == MOLT_VALUE_STRING || v.type == MOLT_VALUE_BYTES) {
          a.bytes.assign(static_cast<const char*>(v.as.ptr), v.size);
        } else if (v.type == MOLT_VALUE_DOUBLE) {
          a.d = v.as.d;
        } else {
          a.i = v.as.i;
        }
        out.args.push_back(std::move(a));
      }
      held_[session].push_back(std::move(out));
    }
  }

  molt_testkit_t* kit_ = nullptr;
  std::map<molt_session_t, std::deque<Message>> held_;
};

}  // namespace testkit
}  // namespace molt

#endif  // MOLT_TESTKIT_HPP_

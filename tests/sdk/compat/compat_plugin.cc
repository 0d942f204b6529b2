// SPDX-License-Identifier: Apache-2.0
// The C++ twin of compat_plugin.c: a molt.hpp plugin built against one frozen molt.hpp
// (tests/sdk/compat/<abi>/include), loaded into today's host by compat_test.cc. It does what the
// C plugin does, through the wrapper of its release, and reports on "Compat.Log".
#include <molt/molt.hpp>
#include <string>

#ifndef COMPAT_NAME
#define COMPAT_NAME "compat_cpp"
#endif

namespace compat {

// The wrapper changed its error convention within ABI 1.2 (Molt 0.2): calls that made an empty
// handle on failure return a molt::Result. TAKE stores a handle either way.
#ifdef MOLT_ASSIGN_OR_RETURN
#define TAKE(lhs, ...) MOLT_ASSIGN_OR_RETURN(lhs, __VA_ARGS__)
template <class R>
bool Passed(const R& fired) {
  return fired.ok() && fired->passed;
}
template <class R>
std::string Payload(R waited) {
  return waited.ok() ? waited->payload : "";
}
#else
#define TAKE(lhs, ...)                                           \
  lhs = (__VA_ARGS__);                                           \
  if (!(lhs)) {                                                  \
    return molt::Status::Error(std::string(host().LastError())); \
  }
inline bool Passed(const molt::Host::FireResult& fired) { return fired.passed; }
inline std::string Payload(const molt::Host::WaitResult& waited) { return waited.payload; }
#endif
// molt.hpp revision 2 (abi-1.4-r2, MOLT_HPP_REVISION) moved the calls on a handle to the handle
// (said_.Send, board_.SetInt, visits_.Get): the plugin makes them so where its headers have them.
// COMPAT_REVISION_1 keeps the revision-1 spellings, deprecated there: built so against today's
// header it proves that source written for revision 1 still builds and runs.
#if defined(MOLT_HPP_REVISION) && MOLT_HPP_REVISION >= 2 && !defined(COMPAT_REVISION_1)
#define COMPAT_HANDLE_CALLS 1
#else
#define COMPAT_HANDLE_CALLS 0
#endif
inline bool Ok(molt_status_t code) { return code == MOLT_OK; }
inline bool Ok(const molt::Status& s) { return s.ok(); }

class Plugin : public molt::Service {
 public:
  static constexpr const char* kName = COMPAT_NAME;
  static constexpr const char* kVersion = "1.0.0";

  molt::Status Init() override {
    TAKE(ping_, host().Subscribe("Compat.Ping", [this](std::string_view, molt::Args args) {
      molt_value fired[] = {molt::Value::Int(args.Int(0))};
      Note(Passed(host().FireHook("Compat.Gate", fired, 1)) ? "pong passed" : "pong refused");
    }));
    if (molt::Status s = host().DefineHook("Compat.Gate", /*fail_open=*/false); !s.ok()) {
      return s;
    }
    TAKE(gate_,
         host().OnHook("Compat.Gate", [](molt_hook_context& c) { return !(c.args[0].as.i < 0); }));
    TAKE(ready_, host().CreateCompletion());
    TAKE(complete_, host().After(0.001, [this] { (void)ready_.Complete(MOLT_OK, "ready"); }));
    TAKE(worker_, host().Spawn(
                      [this]() -> std::string {
                        (void)host().Sleep(0.001);
                        Note("process waited: " + Payload(host().Wait(ready_)));
                        return "done";
                      },
                      {"compat worker"}));
    Note("role " + host().ConfigString("kernel.role", "?"));
#if MOLT_ABI_VERSION_MINOR >= 1
    molt::ChannelOptions o;
    o.schema = "compat.Bytes";
    o.open = true;
    auto any = [](std::string_view payload) { return !payload.empty(); };
    TAKE(said_, host().DeclareEvent("compat.Said", "compat.Bytes"));
    TAKE(echo_, host().DeclareIntent("compat.Echo", o, any,
                                     [this](molt::SessionId s, std::string_view payload) {
#if COMPAT_HANDLE_CALLS
                                       return said_.Send(s, payload);
#else
                                       return host().Send(said_, s, payload);
#endif
                                     }));
    TAKE(twice_, host().DeclareRequest(
                     "compat.Twice", o, any,
                     [this](molt::SessionId, std::string_view payload, molt_request_t r) {
                       return host().Reply(r, MOLT_OK, std::string(payload) + std::string(payload));
                     }));
#if MOLT_ABI_VERSION_MINOR >= 2
    molt::ReplicaOptions board;
    board.fields = {{ "joins", MOLT_REPLICA_INT, 0 }};
    TAKE(board_, host().CreateReplica("compat.board", board));
#endif
    TAKE(sessions_, host().OnSession([this](molt::SessionId s) {
      const auto info = host().GetSession(s);
      if (!info) {
        return Note("session_info failed");
      }
      const std::string user = info->user;
      Note("session " + user);
#if MOLT_ABI_VERSION_MINOR >= 12
      Note(std::string("session link ") + (info->link_tier == MOLT_LINK_GOOD ? "good" : "graded") +
           (info->rtt_median_seconds == 0 && info->ping_loss == 0 ? ", not measured" : ""));
#endif
      (void)host().Bind(
          s, [this, user] { Note("left " + user); }, /*last=*/true);
#if MOLT_ABI_VERSION_MINOR >= 2 && COMPAT_HANDLE_CALLS
      (void)board_.SetInt(0, ++joins_);
#elif MOLT_ABI_VERSION_MINOR >= 2
      (void)host().SetInt(board_, 0, ++joins_);
#endif
    }));
#endif
#if MOLT_ABI_VERSION_MINOR >= 4
    molt::ProfileOptions visits;
    visits.defaults = R"({"visits":0})";
    visits.schema_version = 1;
    TAKE(visits_, host().DeclareProfiles("compat", std::move(visits)));
    TAKE(loaded_, host().Subscribe("Kernel.ProfileLoaded", [this](std::string_view, molt::Args a) {
      const molt::SessionId s = a.Handle(0);
#if COMPAT_HANDLE_CALLS
      molt::Result<std::string> n = visits_.Get(s, "/visits");
      const std::string next = std::to_string(n.ok() ? std::stoll(*n) + 1 : -1);
      molt::Status st = visits_.Set(s, "/visits", next);
#else
      molt::Result<std::string> n = host().GetProfile(visits_, s, "/visits");
      const std::string next = std::to_string(n.ok() ? std::stoll(*n) + 1 : -1);
      molt::Status st = host().SetProfile(visits_, s, "/visits", next);
#endif
      Note(st.ok() ? "profile visits " + next : "profile_set failed: " + st.message());
    }));
#endif
#if MOLT_ABI_VERSION_MINOR >= 5
    TAKE(post_tick_, host().Schedule([this] { Note("post_tick ran"); }, MOLT_PRIORITY_NORMAL,
                                     MOLT_PHASE_POST_TICK));
#endif
#if MOLT_ABI_VERSION_MINOR >= 6
    if (molt::Status st = host().OnJobDone("compat",
                                           [this](const molt::JobResult& r) {
                                             Note(r.status.ok()
                                                      ? "job done: " + std::string(r.results[0])
                                                      : "job failed: " + r.status.message());
                                           });
        !st.ok()) {
      return st;
    }
    TAKE(job_,
         host().Submit(
             "compat", [](std::string_view in) { return std::string(in.rbegin(), in.rend()); },
             "work"));
#endif
#if MOLT_ABI_VERSION_MINOR >= 7
    if (molt::Status st =
            host().DeclareLive("level", "3", [](std::string_view v) { return v != "0"; });
        !st.ok()) {
      return st;
    }
    molt::Result<std::string> level = host().Live("level");
    Note(level.ok() ? "live level " + *level : "live failed: " + level.status().message());
#endif
#if MOLT_ABI_VERSION_MINOR >= 10
    // A predicted intent echoed as an event (acked accepted), and an unreliable channel that
    // sends back what a client sends on it.
    TAKE(move_, host().DeclarePredictedIntent("compat.Move", o, any,
                                              [this](molt::SessionId s, std::string_view payload) {
                                                return said_.Send(s, payload);
                                              }));
    molt::ChannelOptions u = o;
    u.unreliable_priority = MOLT_UNRELIABLE_HIGH;
    u.latest_wins = true;
    TAKE(pos_, host().DeclareUnreliable("compat.Pos", u, any,
                                        [this](molt::SessionId s, std::string_view payload) {
                                          return pos_.Send(s, payload);
                                        }));
#endif
#if MOLT_ABI_VERSION_MINOR >= 11
    {
      // A list replica with a deadband, seen by a zone's members and from a grid, through a
      // predicate that lets everyone in.
      molt::ReplicaOptions door;
      door.fields = {{"x", MOLT_REPLICA_FLOAT, 0, 0.5}, { "y", MOLT_REPLICA_FLOAT, 0, 0 }};
      door.list_audience = true;
      TAKE(door_, host().CreateReplica("compat.door", door));
      TAKE(hall_, host().DeclareZone("compat.hall"));
      molt::GridOptions world;
      world.radius = 10;
      TAKE(world_, host().DeclareGrid("compat.world", world));
      for (molt::Status st :
           {hall_.Bind(door_), door_.SetInterest([](molt::SessionId) { return true; }),
            world_.Bind(door_, 0, 1)}) {
        if (!st.ok()) {
          return st;
        }
      }
      Note("interest declared");
    }
#endif
#if MOLT_ABI_VERSION_MINOR >= 9
    if (molt::Status st = host().SubscribeMessages("compat",
                                                   [this](const molt::Message& m) {
                                                     Note("message " + std::string(m.data) +
                                                          (m.self ? " (self)" : ""));
                                                   });
        !st.ok()) {
      return st;
    }
    if (molt::Status st = host().PublishMessage("compat", "cpp hello"); !st.ok()) {
      return st;
    }
    if (molt::Status st = host().KvIncrement("visits", 1,
                                             [this](const molt::KvResult& r) {
                                               Note((r.status.ok() ? "kv visits " : "kv failed ") +
                                                    std::to_string(r.number));
                                             });
        !st.ok()) {
      return st;
    }
#endif
    return molt::Status::Ok();
  }

  molt::Status Start() override {
    Note("started");
    return Ok(worker_.Start()) ? molt::Status::Ok()
                               : molt::Status::Error(std::string(host().LastError()));
  }

#if MOLT_ABI_VERSION_MINOR >= 8
  // Its own tests (the spec gate): one passes, one fails with its reason.
  void SelfTest(molt::SelfTests& tests) override {
    tests.Run("compat passes", []{});
    tests.Check("compat fails", false, "as it should");
  }
#endif

  molt::Status Stop() override {
    Note("stopped");
    return molt::Status::Ok();
  }

 private:
  void Note(const std::string& text) const {
    (void)host().Publish("Compat.Log", {molt::Value::String(text)});
  }

  molt::Subscription ping_;
  molt::HookHandler gate_;
  molt::Completion ready_;
  molt::Task complete_;
  molt::Process worker_;
#if MOLT_ABI_VERSION_MINOR >= 1
  molt::Channel said_, echo_, twice_;
  molt::Subscription sessions_;
#endif
#if MOLT_ABI_VERSION_MINOR >= 10
  molt::Channel move_, pos_;
#endif
#if MOLT_ABI_VERSION_MINOR >= 11
  molt::Replica door_;
  molt::Zone hall_;
  molt::Grid world_;
#endif
#if MOLT_ABI_VERSION_MINOR >= 2
  molt::Replica board_;
  std::int64_t joins_ = 0;
#endif
#if MOLT_ABI_VERSION_MINOR >= 4 && COMPAT_HANDLE_CALLS
  molt::ProfileStore visits_;
#elif MOLT_ABI_VERSION_MINOR >= 4
  molt::ProfileStore visits_ = 0;
#endif
#if MOLT_ABI_VERSION_MINOR >= 4
  molt::Subscription loaded_;
#endif
#if MOLT_ABI_VERSION_MINOR >= 5
  molt::Task post_tick_;
#endif
#if MOLT_ABI_VERSION_MINOR >= 6
  molt_job_t job_ = 0;
#endif
};

}  // namespace compat

MOLT_PLUGIN(compat::Plugin)

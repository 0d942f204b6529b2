// SPDX-License-Identifier: Apache-2.0
// molt.hpp on its own. Its error convention: Result<T> holds a value or the Status saying why
// not, and MOLT_ASSIGN_OR_RETURN unwraps one or returns its Status. Its handles (revision 2):
// ProfileStore, Replica and Channel call their own slots, with the context they were made with,
// and every revision-1 Host spelling they replace makes the same calls with the same outcome;
// against a fake host table that records each call. (The wrapper against a real kernel: the
// plugins in tests/fixtures/plugins/, wrapper.cc, net.cc, profile.cc, controller.cc.)
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <molt/molt.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

molt::Result<std::unique_ptr<int>> Make(bool ok) {
  if (!ok) {
    return molt::Status(MOLT_ERR_NOT_FOUND, "no int today");
  }
  return std::make_unique<int>(7);
}

molt::Status Use(bool ok, int* out) {
  MOLT_ASSIGN_OR_RETURN(std::unique_ptr<int> p, Make(ok));  // move-only values move out
  MOLT_ASSIGN_OR_RETURN(*out, molt::Result<int>(*p * 6));   // an lvalue, and a second use
  return molt::Status::Ok();
}

TEST(MoltHppResultTest, HoldsTheValueOrTheStatusThatSaysWhyNot) {
  molt::Result<std::unique_ptr<int>> good = Make(true);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good.status().ok());
  EXPECT_EQ(**good, 7);
  molt::Result<std::unique_ptr<int>> bad = Make(false);
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.status().code(), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(bad.status().message(), "no int today");
  EXPECT_EQ(*std::move(bad).value_or(std::make_unique<int>(1)), 1);
  // A Result cannot be made of an OK status: there would be no value.
  molt::Result<int> odd{molt::Status::Ok()};
  EXPECT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), MOLT_ERR_INTERNAL);
}

TEST(MoltHppResultTest, AssignOrReturnUnwrapsOrReturnsTheStatus) {
  int out = 0;
  EXPECT_TRUE(Use(true, &out).ok());
  EXPECT_EQ(out, 42);
  out = 0;
  const molt::Status s = Use(false, &out);
  EXPECT_EQ(s.code(), MOLT_ERR_NOT_FOUND);
  EXPECT_EQ(s.message(), "no int today");
  EXPECT_EQ(out, 0);
}

// --- Handles carry their calls (MOLT_HPP_REVISION 2), against a fake host table ------------------
// Every slot the handles use records what it was called with and answers what the test says, so
// each test reads which slot a method calls, with which context and handle, and what it returns.

static_assert(MOLT_HPP_REVISION >= 2, "this test covers the handles' methods");
// A store is a cheap value (the kernel keeps it); replicas and channels own what they name.
static_assert(std::is_trivially_copyable_v<molt::ProfileStore>);
static_assert(sizeof(molt::ProfileStore) <= 3 * sizeof(void*));
static_assert(!std::is_copy_constructible_v<molt::Replica>);
static_assert(std::is_nothrow_move_constructible_v<molt::Replica>);
static_assert(!std::is_copy_constructible_v<molt::Channel>);
static_assert(std::is_nothrow_move_constructible_v<molt::Channel>);

struct Fake {
  std::vector<std::string> calls;
  molt_status_t code = MOLT_OK;       // what every slot answers
  std::string error;                  // its text, when code is an error
  molt_cleanup_fn release = nullptr;  // the last release handed over (profile_declare)
  void* release_data = nullptr;
};
Fake* fake = nullptr;

char ctx_a = 'a';
char ctx_b = 'b';
molt_context_t* CtxA() { return reinterpret_cast<molt_context_t*>(&ctx_a); }
molt_context_t* CtxB() { return reinterpret_cast<molt_context_t*>(&ctx_b); }
std::string Name(molt_context_t* ctx) { return ctx == CtxA() ? "a" : ctx == CtxB() ? "b" : "?"; }
std::string Text(const void* data, std::size_t size) {
  return data == nullptr ? "null" : std::string(static_cast<const char*>(data), size);
}
std::string Text(const char* s) { return s == nullptr ? "null" : std::string(s); }

// Records "<ctx>:<call>" and answers fake->code.
molt_status_t Answer(molt_context_t* ctx, const std::string& call) {
  fake->calls.push_back(Name(ctx) + ":" + call);
  return fake->code;
}

molt_host_api FakeTable() {
  molt_host_api t{};
  t.struct_size = sizeof(t);
  t.abi_version = MOLT_ABI_VERSION_CURRENT;
  t.last_error = [](molt_context_t*) -> const char* { return fake->error.c_str(); };
  t.set_error = [](molt_context_t*, const char* m) { fake->error = m; };
  t.log = [](molt_context_t*, std::int32_t, const char*) {};
  t.log_enabled = [](molt_context_t*, std::int32_t) -> std::int32_t { return 0; };
  t.event_send = [](molt_context_t* ctx, molt_channel_t ch, const molt_session_t* sessions,
                    std::size_t n, const void* data, std::size_t size) -> molt_status_t {
    const std::string to = sessions == nullptr ? "all" : std::to_string(sessions[0]);
    return Answer(ctx, "event_send(" + std::to_string(ch) + ", " + to + " x" + std::to_string(n) +
                           ", " + Text(data, size) + ")");
  };
  t.channel_remove = [](molt_context_t* ctx, molt_channel_t ch) -> molt_status_t {
    return Answer(ctx, "channel_remove(" + std::to_string(ch) + ")");
  };
  t.replica_destroy = [](molt_context_t* ctx, molt_replica_t r) -> molt_status_t {
    return Answer(ctx, "replica_destroy(" + std::to_string(r) + ")");
  };
  t.replica_set_int = [](molt_context_t* ctx, molt_replica_t r, std::uint32_t field,
                         std::int64_t v) -> molt_status_t {
    return Answer(ctx, "replica_set_int(" + std::to_string(r) + ", " + std::to_string(field) +
                           ", " + std::to_string(v) + ")");
  };
  t.replica_set_float = [](molt_context_t* ctx, molt_replica_t r, std::uint32_t field,
                           double v) -> molt_status_t {
    return Answer(ctx, "replica_set_float(" + std::to_string(r) + ", " + std::to_string(field) +
                           ", " + std::to_string(v) + ")");
  };
  t.replica_set_bytes = [](molt_context_t* ctx, molt_replica_t r, std::uint32_t field,
                           const void* data, std::size_t size) -> molt_status_t {
    return Answer(ctx, "replica_set_bytes(" + std::to_string(r) + ", " + std::to_string(field) +
                           ", " + Text(data, size) + ")");
  };
  t.replica_add_session = [](molt_context_t* ctx, molt_replica_t r,
                             molt_session_t s) -> molt_status_t {
    return Answer(ctx, "replica_add_session(" + std::to_string(r) + ", " + std::to_string(s) + ")");
  };
  t.replica_remove_session = [](molt_context_t* ctx, molt_replica_t r,
                                molt_session_t s) -> molt_status_t {
    return Answer(ctx,
                  "replica_remove_session(" + std::to_string(r) + ", " + std::to_string(s) + ")");
  };
  t.profile_declare = [](molt_context_t* ctx, const molt_profile_spec* spec,
                         molt_cleanup_fn release, molt_profile_t* out) -> molt_status_t {
    fake->release = release;
    fake->release_data = spec->user_data;
    *out = 42;
    return Answer(ctx, "profile_declare(" + Text(spec->name) + ")");
  };
  t.profile_state = [](molt_context_t* ctx, molt_profile_t p, molt_session_t s,
                       std::int32_t* out) -> molt_status_t {
    *out = MOLT_PROFILE_LOADED;
    return Answer(ctx, "profile_state(" + std::to_string(p) + ", " + std::to_string(s) + ")");
  };
  t.profile_get = [](molt_context_t* ctx, molt_profile_t p, molt_session_t s, const char* path,
                     molt_bytes_fn sink, void* ud) -> molt_status_t {
    sink(ud, "{\"coins\":", 9);
    sink(ud, "3}", 2);  // a sink may be called more than once
    return Answer(ctx, "profile_get(" + std::to_string(p) + ", " + std::to_string(s) + ", " +
                           Text(path) + ")");
  };
  t.profile_set = [](molt_context_t* ctx, molt_profile_t p, molt_session_t s, const char* path,
                     const char* json, std::size_t size) -> molt_status_t {
    return Answer(ctx, "profile_set(" + std::to_string(p) + ", " + std::to_string(s) + ", " +
                           Text(path) + ", " + Text(json, size) + ")");
  };
  t.profile_save = [](molt_context_t* ctx, molt_profile_t p) -> molt_status_t {
    return Answer(ctx, "profile_save(" + std::to_string(p) + ")");
  };
  t.profile_snapshot = [](molt_context_t* ctx, molt_profile_t p, molt_session_t s,
                          const char* label, std::uint64_t* out) -> molt_status_t {
    *out = 8;
    return Answer(ctx, "profile_snapshot(" + std::to_string(p) + ", " + std::to_string(s) + ", " +
                           Text(label) + ")");
  };
  t.profile_snapshots = [](molt_context_t* ctx, molt_profile_t p, molt_session_t s,
                           molt_bytes_fn sink, void* ud) -> molt_status_t {
    sink(ud, "[{\"id\":8}]", 10);
    return Answer(ctx, "profile_snapshots(" + std::to_string(p) + ", " + std::to_string(s) + ")");
  };
  t.profile_rollback = [](molt_context_t* ctx, molt_profile_t p, molt_session_t s,
                          std::uint64_t id) -> molt_status_t {
    return Answer(ctx, "profile_rollback(" + std::to_string(p) + ", " + std::to_string(s) + ", " +
                           std::to_string(id) + ")");
  };
  t.profile_backup_now = [](molt_context_t* ctx, molt_profile_t p,
                            molt_session_t s) -> molt_status_t {
    return Answer(ctx, "profile_backup_now(" + std::to_string(p) + ", " + std::to_string(s) + ")");
  };
  t.profile_transact = [](molt_context_t* ctx, molt_profile_t p, molt_session_t a, molt_session_t b,
                          const char* id, molt_profile_mutate_fn mutate, void* ud,
                          molt_completion_t* out) -> molt_status_t {
    std::string new_a;
    std::string new_b;
    const molt_status_t mutated =
        mutate(ud, "{\"a\":1}", 7, "{\"b\":2}", 7, &molt::detail::AppendTo, &new_a,
               &molt::detail::AppendTo, &new_b);
    *out = 77;
    return Answer(ctx, "profile_transact(" + std::to_string(p) + ", " + std::to_string(a) + ", " +
                           std::to_string(b) + ", " + Text(id) + ") mutated " +
                           std::to_string(mutated) +
                           (mutated == MOLT_OK ? " " + new_a + " " + new_b : ""));
  };
  t.profile_key_load = [](molt_context_t* ctx, molt_profile_t p, const char* key,
                          molt_completion_t* out) -> molt_status_t {
    *out = 78;
    return Answer(ctx, "profile_key_load(" + std::to_string(p) + ", " + Text(key) + ")");
  };
  t.profile_key_session = [](molt_context_t* ctx, molt_profile_t p, const char* key,
                             molt_session_t* out) -> molt_status_t {
    *out = 9001;
    return Answer(ctx, "profile_key_session(" + std::to_string(p) + ", " + Text(key) + ")");
  };
  t.profile_key_release = [](molt_context_t* ctx, molt_profile_t p,
                             const char* key) -> molt_status_t {
    return Answer(ctx, "profile_key_release(" + std::to_string(p) + ", " + Text(key) + ")");
  };
  return t;
}

// What a call on `what` ("replica 0") answers when no host made it.
std::string NoHost(const std::string& what) {
  return std::to_string(MOLT_ERR_STALE) + " " + what +
         " has no host to call (a default-constructed handle, or a bare id)";
}

// What a call returned, as text: "ok", "ok <value>" or "<code> <message>".
std::string Outcome(const molt::Status& s) {
  return s.ok() ? "ok" : std::to_string(s.code()) + " " + s.message();
}
template <class T>
std::string Outcome(const molt::Result<T>& r) {
  if (!r.ok()) {
    return Outcome(r.status());
  }
  if constexpr (std::is_same_v<T, molt::ProfileStore>) {
    return "ok store " + std::to_string(r->get());
  } else if constexpr (std::is_same_v<T, molt::Completion>) {
    return "ok completion " + std::to_string(r->handle());
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "ok " + *r;
  } else {
    return "ok " + std::to_string(*r);
  }
}

class MoltHppHandleTest : public ::testing::Test {
 protected:
  void SetUp() override { fake = &fake_; }
  void TearDown() override {
    if (fake_.release != nullptr) {
      fake_.release(fake_.release_data);  // what the host does once the store is let go
    }
    fake = nullptr;
  }
  // The calls `fn` made, then what it returned: "a:profile_save(42) -> ok".
  template <class F>
  std::string Run(F&& fn) {
    fake_.calls.clear();
    const std::string outcome = Outcome(fn());
    std::string out;
    for (const std::string& c : fake_.calls) {
      out += c + " ";
    }
    return out + "-> " + outcome;
  }
  void Fail(molt_status_t code, std::string text) {
    fake_.code = code;
    fake_.error = std::move(text);
  }

  Fake fake_;
  molt_host_api api_ = FakeTable();
  molt::Host host_{CtxA(), &api_};
};

TEST_F(MoltHppHandleTest, ProfileStoreMethodsCallTheirSlotWithTheStoreAndItsContext) {
  const molt::ProfileStore store(CtxB(), &api_, 42);  // another context than host_'s
  EXPECT_EQ(store.get(), 42u);
  EXPECT_TRUE(store);
  EXPECT_EQ(Run([&] { return store.State(5); }),
            "b:profile_state(42, 5) -> ok " + std::to_string(MOLT_PROFILE_LOADED));
  EXPECT_EQ(Run([&] { return store.Get(5); }), R"(b:profile_get(42, 5, ) -> ok {"coins":3})");
  EXPECT_EQ(Run([&] { return store.Get(5, "/coins"); }),
            R"(b:profile_get(42, 5, /coins) -> ok {"coins":3})");
  EXPECT_EQ(Run([&] { return store.Set(5, "/coins", "4"); }),
            "b:profile_set(42, 5, /coins, 4) -> ok");
  EXPECT_EQ(Run([&] { return store.Save(); }), "b:profile_save(42) -> ok");
  EXPECT_EQ(Run([&] { return store.Snapshot(5, "before"); }),
            "b:profile_snapshot(42, 5, before) -> ok 8");
  EXPECT_EQ(Run([&] { return store.Snapshots(5); }),
            R"(b:profile_snapshots(42, 5) -> ok [{"id":8}])");
  EXPECT_EQ(Run([&] { return store.Rollback(5, 8); }), "b:profile_rollback(42, 5, 8) -> ok");
  EXPECT_EQ(Run([&] { return store.BackupNow(5); }), "b:profile_backup_now(42, 5) -> ok");
  auto swap = [](std::string& a, std::string& b) {
    std::swap(a, b);
    return molt::Status::Ok();
  };
  EXPECT_EQ(Run([&] { return store.Transact(5, 6, swap, "t1"); }),
            R"(b:profile_transact(42, 5, 6, t1) mutated 0 {"b":2} {"a":1} -> ok completion 77)");
  EXPECT_EQ(Run([&] { return store.KeyLoad("bank"); }),
            "b:profile_key_load(42, bank) -> ok completion 78");
  EXPECT_EQ(Run([&] { return store.KeySession("bank"); }),
            "b:profile_key_session(42, bank) -> ok 9001");
  EXPECT_EQ(Run([&] { return store.KeyRelease("bank"); }), "b:profile_key_release(42, bank) -> ok");
  EXPECT_EQ(Run([&] { return store.KeyReleaseAll(); }), "b:profile_key_release(42, null) -> ok");
}

TEST_F(MoltHppHandleTest, AFailedCallCarriesTheHostsCodeAndText) {
  const molt::ProfileStore store(CtxA(), &api_, 42);
  Fail(MOLT_ERR_STATE, "profile of session 5 is not loaded");
  EXPECT_EQ(Run([&] { return store.Get(5, "/coins"); }),
            R"(a:profile_get(42, 5, /coins) -> -4 profile of session 5 is not loaded)");
  auto abort = [](std::string&, std::string&) { return molt::Status::Rejected("no trade"); };
  fake_.code = MOLT_OK;
  EXPECT_EQ(Run([&] { return store.Transact(5, 6, abort); }),
            "a:profile_transact(42, 5, 6, ) mutated -9 -> ok completion 77");
  EXPECT_EQ(fake_.error, "no trade");  // the mutator's veto, reported through set_error
}

TEST_F(MoltHppHandleTest, DeclareProfilesMakesAStoreThatCallsWithoutTheHost) {
  molt::Result<molt::ProfileStore> made = host_.DeclareProfiles("Wallet", {});
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(fake_.calls, std::vector<std::string>{"a:profile_declare(Wallet)"});
  const molt::ProfileStore copy = *made;  // a copy is the same store
  EXPECT_EQ(copy.get(), 42u);
  EXPECT_EQ(Run([&] { return copy.Save(); }), "a:profile_save(42) -> ok");
}

TEST_F(MoltHppHandleTest, ReplicaAndChannelMethodsCallTheirSlotAndStillOwnTheirHandle) {
  {
    const molt::Replica board(CtxB(), &api_, 9);
    EXPECT_EQ(Run([&] { return board.SetInt(0, -7); }), "b:replica_set_int(9, 0, -7) -> ok");
    EXPECT_EQ(Run([&] { return board.SetFloat(1, 0.5); }),
              "b:replica_set_float(9, 1, 0.500000) -> ok");
    EXPECT_EQ(Run([&] { return board.SetBytes(2, "ann"); }),
              "b:replica_set_bytes(9, 2, ann) -> ok");
    EXPECT_EQ(Run([&] { return board.AddSession(5); }), "b:replica_add_session(9, 5) -> ok");
    EXPECT_EQ(Run([&] { return board.RemoveSession(5); }), "b:replica_remove_session(9, 5) -> ok");
    const molt::Channel said(CtxB(), &api_, 7);
    EXPECT_EQ(Run([&] { return said.Send(5, "hi"); }), "b:event_send(7, 5 x1, hi) -> ok");
    EXPECT_EQ(Run([&] { return said.Broadcast("all"); }), "b:event_send(7, all x0, all) -> ok");
    fake_.calls.clear();
  }
  // Owning handles: leaving the scope removes the channel, then destroys the replica.
  EXPECT_EQ(fake_.calls, (std::vector<std::string>{"b:channel_remove(7)", "b:replica_destroy(9)"}));
  molt::Replica moved(CtxA(), &api_, 10);
  molt::Replica taker = std::move(moved);
  fake_.calls.clear();
  EXPECT_EQ(Run([&] { return taker.SetInt(0, 1); }), "a:replica_set_int(10, 0, 1) -> ok");
  EXPECT_EQ(taker.Release(), 10u);  // handed over: no destroy
}

TEST_F(MoltHppHandleTest, AHandleNeverMadeFailsStaleWithoutAHostToAsk) {
  EXPECT_EQ(Run([] { return molt::ProfileStore().Get(5); }), "-> " + NoHost("profile store 0"));
  EXPECT_EQ(Run([] { return molt::ProfileStore().Transact(5, 6, nullptr); }),
            "-> " + NoHost("profile store 0"));
  EXPECT_EQ(Run([] { return molt::Replica().SetInt(0, 1); }), "-> " + NoHost("replica 0"));
  EXPECT_EQ(Run([] { return molt::Channel().Send(5, "hi"); }), "-> " + NoHost("channel 0"));
}

TEST_F(MoltHppHandleTest, AHostWithoutTheProfileSlotsRefusesTheStoresCalls) {
  api_.struct_size = offsetof(molt_host_api, profile_declare);  // an ABI 1.3 table
  const molt::ProfileStore store(CtxA(), &api_, 42);
  const std::string refused =
      "-> " + std::to_string(MOLT_ERR_UNSUPPORTED) + " this host keeps no profiles (ABI 1.4)";
  EXPECT_EQ(Run([&] { return store.Get(5); }), refused);
  EXPECT_EQ(Run([&] { return store.KeyReleaseAll(); }), refused);
  EXPECT_EQ(Run([&] { return store.Transact(5, 6, nullptr); }), refused);
  EXPECT_EQ(Run([&] { return host_.DeclareProfiles("Wallet", {}); }), refused);
}

// ABI 1.5: a task in another phase goes through task_start with its spec; the main phase keeps
// the ABI 1.0 slots, so it works on every host, and an older host refuses the other phases.
TEST_F(MoltHppHandleTest, ATaskInAPhaseCallsTaskStartAndTheTickKeepsItsSlots) {
  auto arm = [](molt_context_t* ctx, const std::string& call, void* ud, molt_cleanup_fn release,
                molt_task_t* out) {
    *out = 7;
    release(ud);  // as if it ran once and ended: the box goes back
    return Answer(ctx, call);
  };
  static decltype(arm)* armed = &arm;
  api_.task_start = [](molt_context_t* ctx, const molt_task_spec* spec, molt_task_fn, void* ud,
                       molt_cleanup_fn release, molt_task_t* out) -> molt_status_t {
    return (*armed)(ctx,
                    "task_start(size " + std::to_string(spec->struct_size) + ", phase " +
                        std::to_string(spec->phase) + ", kind " + std::to_string(spec->kind) +
                        ", priority " + std::to_string(spec->priority) + ", " +
                        std::to_string(spec->seconds) + ")",
                    ud, release, out);
  };
  api_.task_after = [](molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn,
                       void* ud, molt_cleanup_fn release, molt_task_t* out) -> molt_status_t {
    return (*armed)(ctx,
                    "task_after(" + std::to_string(seconds) + ", " + std::to_string(priority) + ")",
                    ud, release, out);
  };
  api_.task_cancel = [](molt_context_t* ctx, molt_task_t t) -> molt_status_t {
    return Answer(ctx, "task_cancel(" + std::to_string(t) + ")");
  };
  auto status = [](const molt::Result<molt::Task>& t) {
    return t.ok() ? molt::Status::Ok() : t.status();
  };
  EXPECT_EQ(Run([&] {
              return status(host_.Every(
                  0.5, [] {}, MOLT_PRIORITY_LOW, MOLT_PHASE_POST_TICK));
            }),
            "a:task_start(size 24, phase 2, kind 2, priority 4, 0.500000) a:task_cancel(7) -> ok");
  EXPECT_EQ(
      Run([&] { return status(host_.Schedule([] {}, MOLT_PRIORITY_HIGH, MOLT_PHASE_PRE_TICK)); }),
      "a:task_start(size 24, phase 1, kind 0, priority 2, 0.000000) a:task_cancel(7) -> ok");
  EXPECT_EQ(Run([&] { return status(host_.After(2, [] {})); }),
            "a:task_after(2.000000, 3) a:task_cancel(7) -> ok");
  api_.struct_size = offsetof(molt_host_api, task_start);  // an ABI 1.4 table
  EXPECT_EQ(Run([&] {
              return status(host_.After(
                  2, [] {}, MOLT_PRIORITY_NORMAL, MOLT_PHASE_PRE_TICK));
            }),
            "-> " + std::to_string(MOLT_ERR_UNSUPPORTED) +
                " this host has no phase schedulers (ABI 1.5): phase 1 needs task_start");
  EXPECT_EQ(Run([&] { return status(host_.After(2, [] {})); }),
            "a:task_after(2.000000, 3) a:task_cancel(7) -> ok");
}

TEST_F(MoltHppHandleTest, TrackCallsTheAnalyticsSlotAndAnOlderHostSaysItKeepsNone) {
  api_.analytics_track = [](molt_context_t* ctx, const char* name, molt_session_t session,
                            double value, const char* fields, std::size_t size) -> molt_status_t {
    return Answer(ctx, "analytics_track(" + Text(name) + ", " + std::to_string(session) + ", " +
                           std::to_string(value) + ", " + Text(fields, size) + ")");
  };
  EXPECT_EQ(Run([&] { return host_.Track("purchase", 5, 2.5, R"({"item":"gem"})"); }),
            "a:analytics_track(purchase, 5, 2.500000, {\"item\":\"gem\"}) -> ok");
  Fail(MOLT_ERR_REJECTED, "sampled out");
  EXPECT_EQ(Run([&] { return host_.Track("tick"); }),
            "a:analytics_track(tick, 0, 0.000000, null) -> " + std::to_string(MOLT_ERR_REJECTED) +
                " sampled out");
  api_.struct_size = offsetof(molt_host_api, analytics_track);  // before the slot
  EXPECT_EQ(
      Run([&] { return host_.Track("tick"); }),
      "-> " + std::to_string(MOLT_ERR_UNSUPPORTED) + " this host keeps no analytics (ABI 1.5)");
}

// The MOLT_HPP_REVISION 1 spellings: each still builds, and makes the very calls its replacement
// makes, with the same outcome, on success and on failure. (The pragma covers these uses only;
// tests/sdk/deprecations_test.sh compiles them without it, to see every warning.)
#ifndef MOLT_HPP_TEST_SHOW_DEPRECATIONS
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

TEST_F(MoltHppHandleTest, EveryDeprecatedSpellingBehavesAsItsReplacement) {
  const molt::ProfileStore store(CtxA(), &api_, 42);
  const molt::Replica board(CtxA(), &api_, 9);
  const molt::Channel said(CtxA(), &api_, 7);
  auto swap = [](std::string& a, std::string& b) {
    std::swap(a, b);
    return molt::Status::Ok();
  };
  for (const molt_status_t code : {MOLT_OK, MOLT_ERR_NOT_FOUND}) {
    SCOPED_TRACE(code);
    Fail(code, code == MOLT_OK ? "" : "nothing here");
    auto same = [&](const std::string& now, const std::string& before) {
      EXPECT_EQ(now, before);
      EXPECT_NE(now.find(code == MOLT_OK ? "-> ok" : "-> -2 nothing here"), std::string::npos)
          << now;
    };
    same(Run([&] { return store.State(5); }), Run([&] { return host_.GetProfileState(store, 5); }));
    same(Run([&] { return store.Get(5); }), Run([&] { return host_.GetProfile(store, 5); }));
    same(Run([&] { return store.Get(5, "/c"); }),
         Run([&] { return host_.GetProfile(store, 5, "/c"); }));
    same(Run([&] { return store.Set(5, "/c", "1"); }),
         Run([&] { return host_.SetProfile(store, 5, "/c", "1"); }));
    same(Run([&] { return store.Save(); }), Run([&] { return host_.SaveProfiles(store); }));
    same(Run([&] { return store.Snapshot(5, "x"); }),
         Run([&] { return host_.SnapshotProfile(store, 5, "x"); }));
    same(Run([&] { return store.Snapshots(5); }),
         Run([&] { return host_.ProfileSnapshots(store, 5); }));
    same(Run([&] { return store.Rollback(5, 8); }),
         Run([&] { return host_.RollbackProfile(store, 5, 8); }));
    same(Run([&] { return store.BackupNow(5); }),
         Run([&] { return host_.BackupProfileNow(store, 5); }));
    same(Run([&] { return store.Transact(5, 6, swap, "t"); }),
         Run([&] { return host_.TransactProfiles(store, 5, 6, swap, "t"); }));
    same(Run([&] { return store.KeyLoad("k"); }),
         Run([&] { return host_.LoadProfileKey(store, "k"); }));
    same(Run([&] { return store.KeySession("k"); }),
         Run([&] { return host_.ProfileKey(store, "k"); }));
    same(Run([&] { return store.KeyRelease("k"); }),
         Run([&] { return host_.ReleaseProfileKey(store, "k"); }));
    same(Run([&] { return store.KeyReleaseAll(); }),
         Run([&] { return host_.ReleaseAllProfileKeys(store); }));
    same(Run([&] { return board.SetInt(0, 3); }), Run([&] { return host_.SetInt(board, 0, 3); }));
    same(Run([&] { return board.SetFloat(1, 2.5); }),
         Run([&] { return host_.SetFloat(board, 1, 2.5); }));
    same(Run([&] { return board.SetBytes(2, "b"); }),
         Run([&] { return host_.SetBytes(board, 2, "b"); }));
    same(Run([&] { return board.AddSession(5); }),
         Run([&] { return host_.AddToReplica(board, 5); }));
    same(Run([&] { return board.RemoveSession(5); }),
         Run([&] { return host_.RemoveFromReplica(board, 5); }));
    same(Run([&] { return said.Send(5, "p"); }), Run([&] { return host_.Send(said, 5, "p"); }));
    same(Run([&] { return said.Broadcast("p"); }), Run([&] { return host_.Broadcast(said, "p"); }));
  }
}

TEST_F(MoltHppHandleTest, AStoreSpelledAsTheOldIntegerStillBuildsAndWorksWithTheHostSpellings) {
  molt::ProfileStore store = 0;  // revision 1: ProfileStore was molt_profile_t
  EXPECT_FALSE(store);
  store = 42;
  const molt_profile_t raw = store;  // and it converted back
  EXPECT_EQ(raw, 42u);
  EXPECT_TRUE(store == 42u);
  EXPECT_EQ(Run([&] { return host_.GetProfile(store, 5, "/coins"); }),
            R"(a:profile_get(42, 5, /coins) -> ok {"coins":3})");
  EXPECT_EQ(Run([&] { return host_.SaveProfiles(store); }), "a:profile_save(42) -> ok");
  // A bare id knows no host: its own calls have none to ask.
  EXPECT_EQ(Run([&] { return store.Save(); }), "-> " + NoHost("profile store 42"));
}

#ifndef MOLT_HPP_TEST_SHOW_DEPRECATIONS
#pragma GCC diagnostic pop
#endif

}  // namespace

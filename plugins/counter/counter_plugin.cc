// SPDX-License-Identifier: Apache-2.0
// counter (service): one shared counter. Clients change it with the counter.Add intent (checked
// by a declarative range rule and a rate limit before this code runs), read it with the
// counter.Get request (the total, or one user's additions), and see it live through the "counter"
// replica (everyone: a snapshot on join, then coalesced deltas at 10 Hz). The total and the
// replica survive a hot swap: state version 2 is "<total> <replica handle>", and the next
// instance claims the replica (same id, no remove for clients); it still reads version 1
// ("<total>") from builds before ABI 1.3. Every addition is also published as
// Score.Add(user, amount): the scores plugin counts it. Each addition counts `counter.multiplier`
// times, a live value an operator sets while the game runs (molt config set).
#include <flatbuffers/flatbuffers.h>

#include <charconv>
#include <map>
#include <molt/molt.hpp>
#include <string>

#include "counter_generated.h"

namespace molt::plugins::counter {

template <class T>
bool Verify(std::string_view p) {
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(p.data()), p.size());
  return v.VerifyBuffer<T>(nullptr);
}

class Counter : public molt::Service {
 public:
  static constexpr const char* kName = "counter";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription = "a shared counter: intent, request and replica";
  static constexpr std::uint32_t kStateVersion = 2;
  static constexpr std::uint32_t kOldestStateVersion = 1;
  enum Field : std::uint32_t { kValue = 0, kLast = 1 };

  molt::Status Init() override {
    // A live value (ABI 1.7; docs/live-values.md): each addition counts `multiplier` times, so
    // an operator runs a double-points event with `molt config set counter.multiplier 2`.
    if (molt::Status s = host().DeclareLive("multiplier", "1", CheckMultiplier);
        !s.ok() && s.code() != MOLT_ERR_UNSUPPORTED) {
      return s;  // a host without live values (before 1.7, a client) counts each addition once
    }
    molt::ChannelOptions add;
    add.schema = "molt.counter.Add";
    add.rules = {molt::RangeRule(0, "amount", MOLT_FIELD_INT32, -10, 10)};
    add.rate = 5;
    MOLT_ASSIGN_OR_RETURN(
        add_, host().DeclareIntent(
                  "counter.Add", add, Verify<molt::counter::Add>,
                  [this](molt::SessionId s, std::string_view payload) {
                    return Change(
                        s, flatbuffers::GetRoot<molt::counter::Add>(payload.data())->amount());
                  }));
    // The echo: what a client sends comes back to it alone, in order (molt-bot --verify).
    MOLT_ASSIGN_OR_RETURN(echoed_, host().DeclareEvent("counter.Echoed", "molt.counter.Echo"));
    molt::ChannelOptions echo;
    echo.schema = "molt.counter.Echo";
    echo.rules = {molt::RangeRule(0, "seq", MOLT_FIELD_UINT64, 1, 9e15)};
    echo.rate = 200;
    MOLT_ASSIGN_OR_RETURN(echo_,
                          host().DeclareIntent("counter.Echo", echo, Verify<molt::counter::Echo>,
                                               [this](molt::SessionId s, std::string_view payload) {
                                                 return echoed_.Send(s, payload);
                                               }));
    molt::ChannelOptions get;
    get.schema = "molt.counter.Get";
    get.rules = {molt::MaxLengthRule(0, "user", 64)};
    get.rate = 10;
    MOLT_ASSIGN_OR_RETURN(
        get_, host().DeclareRequest(
                  "counter.Get", get, Verify<molt::counter::Get>,
                  [this](molt::SessionId, std::string_view payload, molt_request_t r) {
                    const auto* user =
                        flatbuffers::GetRoot<molt::counter::Get>(payload.data())->user();
                    std::int64_t n = value_;
                    if (user != nullptr && user->size() > 0) {
                      auto it = by_user_.find(user->str());
                      n = it == by_user_.end() ? 0 : it->second;
                    }
                    flatbuffers::FlatBufferBuilder b;
                    b.Finish(molt::counter::CreateValue(b, n));
                    return host().Reply(
                        r, MOLT_OK,
                        std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()),
                                         b.GetSize()));
                  }));
    return molt::Status::Ok();
  }

  // The replica is created here, not in Init: after a swap ImportState has claimed the old one.
  molt::Status Start() override {
    if (!replica_) {
      molt::ReplicaOptions shape;
      shape.fields = {{"value", MOLT_REPLICA_INT}, {"last", MOLT_REPLICA_BYTES, 64}};
      shape.tick_rate = 10;
      MOLT_ASSIGN_OR_RETURN(replica_, host().CreateReplica("counter", shape));
    }
    return replica_.SetInt(kValue, value_);
  }

  molt::Status ExportState(std::string* out) override {
    *out = std::to_string(value_) + " " + std::to_string(replica_.get());
    return molt::Status::Ok();
  }
  molt::Status ImportState(std::uint32_t version, std::string_view data) override {
    std::int64_t v = 0;
    molt_replica_t handle = 0;
    const char* end = data.data() + data.size();
    auto [at, ec] = std::from_chars(data.data(), end, v);
    if (ec == std::errc() && version >= 2 && at != end && *at == ' ') {
      ec = std::from_chars(at + 1, end, handle).ec;
    }
    if (ec != std::errc()) {
      return molt::Status::Error("counter state is not \"<total> <replica>\": \"" +
                                 std::string(data) + "\"");
    }
    value_ = v;
    if (handle != 0) {
      MOLT_ASSIGN_OR_RETURN(replica_, host().ClaimReplica(handle));
    }
    return molt::Status::Ok();
  }

  // Its own tests (ABI 1.8; moltd --self-test, molt build).
  void SelfTest(molt::SelfTests& tests) override {
    tests.Check("the multiplier takes whole numbers from 1 to 100",
                CheckMultiplier("1").ok() && CheckMultiplier("100").ok() &&
                    !CheckMultiplier("0").ok() && !CheckMultiplier("101").ok() &&
                    !CheckMultiplier("2.5").ok() && !CheckMultiplier("\"3\"").ok());
    tests.Run("the state it exports starts with the total", [this]() -> molt::Status {
      std::string out;
      if (molt::Status s = ExportState(&out); !s.ok()) {
        return s;
      }
      return out.rfind(std::to_string(value_) + " ", 0) == 0
                 ? molt::Status::Ok()
                 : molt::Status(MOLT_ERR_INTERNAL, "exported \"" + out + "\"");
    });
  }

 private:
  static molt::Status CheckMultiplier(std::string_view value) {
    std::int64_t m = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), m);
    return ec == std::errc() && end == value.data() + value.size() && m >= 1 && m <= 100
               ? molt::Status::Ok()
               : molt::Status(MOLT_ERR_REJECTED, "the multiplier is a whole number from 1 to 100");
  }

  molt::Status Change(molt::SessionId session, std::int32_t added) {
    const auto amount = static_cast<std::int32_t>(added * host().LiveNumber("multiplier", 1));
    value_ += amount;
    const molt::Result<molt_session_info> who = host().GetSession(session);
    if (who.ok()) {
      by_user_[who->user] += amount;
      // Every addition scores for its player (the scores plugin, when loaded, counts it).
      (void)host().Publish("Score.Add", {molt::Value::String(who->user), molt::Value::Int(amount)});
    }
    last_ = who.ok() ? who->user : "";
    return Replicate();
  }

  // The replica is written once per tick, after the tick's additions however many arrived: in
  // the post_tick phase (ABI 1.5; docs/sdk.md, "Phases"), or at once on a host without phases.
  molt::Status Replicate() {
    if (flush_) {
      return molt::Status::Ok();  // this tick's write is already due
    }
    molt::Result<molt::Task> task = host().Schedule(
        [this] {
          (void)flush_.Release();  // a one-shot: the host lets it go once it ran
          return Flush();
        },
        MOLT_PRIORITY_NORMAL, MOLT_PHASE_POST_TICK);
    if (!task.ok()) {
      return task.status().code() == MOLT_ERR_UNSUPPORTED ? Flush() : task.status();
    }
    flush_ = std::move(task).value();
    return molt::Status::Ok();
  }

  molt::Status Flush() {
    if (molt::Status s = replica_.SetInt(kValue, value_); !s.ok()) {
      return s;
    }
    return replica_.SetBytes(kLast, last_);
  }

  std::int64_t value_ = 0;
  std::string last_;                             // who added last
  std::map<std::string, std::int64_t> by_user_;  // this generation's additions per user
  molt::Replica replica_;
  molt::Task flush_;  // the replica's write after this tick, while one is due
  molt::Channel add_;
  molt::Channel get_;
  molt::Channel echo_;
  molt::Channel echoed_;
};

}  // namespace molt::plugins::counter

MOLT_PLUGIN(molt::plugins::counter::Counter)

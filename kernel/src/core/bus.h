// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/bus.h
//
// Bus: topic publish/subscribe (spec: Bus). Systems announce facts without knowing who listens.
//
//   Connection c = bus.Subscribe("Combat.Kill", [](std::string_view topic, Args args) { ... });
//   bus.Subscribe("Combat.*", OnCombat);    // the whole family: Combat.Kill, Combat.Kill.Head
//   Value args[] = {Value::Handle(killer), Value::Handle(victim)};
//   bus.Publish("Combat.Kill", args);       // handlers get the topic first, then the arguments
//   Bus::Topic* kill = bus.Resolve("Combat.Kill");
//   bus.Publish(kill, args);                // pre-resolved: no hashing on the hot path
//
// Handlers run synchronously in subscription order and cannot cancel anything (hooks ask
// permission; topics announce facts). A handler that throws is logged and the rest still run.
// Subscribing or unsubscribing inside a publish is safe: the publish in progress delivers to the
// subscribers it started with, minus any unsubscribed meanwhile. Topics are created on first use
// and live as long as the Bus; a Topic* stays valid until then.
//
// Thread safety: REQUIRES external synchronization (the kernel thread).
#ifndef MOLT_KERNEL_CORE_BUS_H_
#define MOLT_KERNEL_CORE_BUS_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/core/value.h"

namespace molt::kernel {

namespace internal {
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>()(s);
  }
};
}  // namespace internal

class Bus {
 public:
  using Handler = Callback<void(std::string_view topic, Args args)>;
  class Topic;

  Bus();
  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;
  ~Bus();

  // Subscribes `fn` to `pattern`: an exact topic ("Combat.Kill"), a family ("Combat.*" matches
  // every topic that starts with "Combat."), or "*" (every topic). Throws std::invalid_argument
  // with the text of CheckPattern for a malformed pattern.
  Connection Subscribe(std::string_view pattern, Handler fn);

  // The pre-resolved form of `topic`, created on first use, valid for the Bus's lifetime.
  // Throws std::invalid_argument with the text of CheckTopic for a malformed name.
  Topic* Resolve(std::string_view topic);

  // Delivers (topic, args) to every matching subscriber. `args` is valid during the call only.
  void Publish(std::string_view topic, Args args = {});
  void Publish(Topic* topic, Args args = {});

  // Ends every subscription (kernel shutdown). Safe from inside a publish.
  void Clear();

  // OK, or why `pattern` / `topic` cannot be used, naming it and the fix.
  static Status CheckPattern(std::string_view pattern);
  static Status CheckTopic(std::string_view topic);

  std::string_view name(const Topic* topic) const;
  // Live subscriptions, over every pattern.
  std::size_t subscriber_count() const { return subscriber_count_; }
  std::uint64_t published() const { return published_; }

 private:
  struct Sub;
  struct Family;

  void Remove(Sub* sub) noexcept;
  void Rebuild(Topic* topic);
  // Publish: counts, rebuilds a stale list, and returns at once when nobody listens (a channel's
  // topic on every accepted frame, most of them).
  void Deliver(Topic* topic, Args args);
  // Calls each subscriber of a non-empty list (kept out of Deliver's fast path).
  void Notify(Topic* topic, Args args);

  std::unordered_map<std::string, std::unique_ptr<Topic>, internal::StringHash, std::equal_to<>>
      topics_;
  // Families by prefix: "Combat." for "Combat.*", "" for "*".
  std::unordered_map<std::string, std::vector<std::shared_ptr<Sub>>, internal::StringHash,
                     std::equal_to<>>
      families_;
  std::uint64_t version_ = 1;  // bumped by every subscribe and unsubscribe
  std::uint64_t next_seq_ = 1;
  std::size_t subscriber_count_ = 0;
  std::uint64_t published_ = 0;
  int depth_ = 0;  // publishes in progress (nested publishes included)
  // Kept alive until no publish is in progress: lists and subscribers it may still be reading.
  std::vector<std::vector<Sub*>> retired_lists_;
  std::vector<std::shared_ptr<Sub>> retired_subs_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_BUS_H_

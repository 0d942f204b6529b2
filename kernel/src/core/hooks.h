// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/hooks.h
//
// Hooks: named validation chains (spec: HookRegistry). Where the Bus announces facts, a hook point
// asks permission: each handler gets a mutable context and cancels the chain by returning false.
//
//   hooks.Define("Intent.BuyItem", Hooks::Mode::kFailClosed);  // optional: points default to it
//   Connection off = hooks.On("Intent.BuyItem", [&](HookContext& ctx) {
//     return coins(ctx.session) >= price(ctx.args[0].AsInt());  // false rejects
//   }, 10);                                                     // lower runs first; default 100
//   HookContext ctx{.args = args, .session = session};
//   HookResult r = hooks.Fire("Intent.BuyItem", ctx);          // r.passed, r.error
//
// Handlers run in (priority, registration) order; the first false ends the chain. A handler that
// throws rejects the chain (fail-closed) unless the point was defined kFailOpen, where the chain
// goes on; either way the result carries the error text. Points are created on first use.
// Adding or removing handlers inside a fire is safe: the fire in progress keeps the chain it
// started with, minus removed handlers. Names starting with "Kernel." are reserved for the kernel:
// the plugin-facing API checks CheckUserPointName before On.
//
// Thread safety: REQUIRES external synchronization (the kernel thread).
#ifndef MOLT_KERNEL_CORE_HOOKS_H_
#define MOLT_KERNEL_CORE_HOOKS_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/core/value.h"

namespace molt::kernel {

// What a chain's handlers see and may change.
struct HookContext {
  std::string_view point{};   // set by Fire
  std::span<Value> args{};    // mutable: a validator may rewrite values for the handler
  std::uint64_t session = 0;  // the session the action belongs to, 0 for none
  void* user = nullptr;       // an extension the point's owner documents
};

struct HookResult {
  bool passed = true;
  std::string error;  // the first thrown handler's text, empty when none threw
};

class Hooks {
 public:
  using Handler = Callback<bool(HookContext&)>;
  enum class Mode { kFailClosed, kFailOpen };
  static constexpr int kDefaultPriority = 100;
  class Point;

  struct PointInfo {
    std::string name;
    bool fail_open;
    std::size_t handlers;
    std::uint64_t fired;
    std::uint64_t rejected;
    std::uint64_t errors;
    // While timing is on (SetTiming): the fires it timed, their total and longest chain.
    std::uint64_t timed;
    Duration time_total;
    Duration time_max;
  };

  struct Options {
    bool warn_on_error = true;  // log a warning whenever a handler throws
  };

  Hooks() : Hooks(Options()) {}
  explicit Hooks(Options options);
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;
  ~Hooks();

  // Defines (or redefines) a point's mode and returns it. Stable for the registry's lifetime.
  Point* Define(std::string_view name, Mode mode);
  // The point named `name`, created fail-closed on first use.
  Point* Resolve(std::string_view name);

  // Adds a handler; lower priorities run first, ties in registration order.
  Connection On(std::string_view name, Handler fn, int priority = kDefaultPriority);
  Connection On(Point* point, Handler fn, int priority = kDefaultPriority);

  // Runs the chain on `ctx`. A point without handlers passes.
  HookResult Fire(std::string_view name, HookContext& ctx);
  HookResult Fire(Point* point, HookContext& ctx);

  // Removes every handler (kernel shutdown). Safe from inside a fire.
  void Clear();

  // Times every chain that has handlers (two reads of the TSC a fire) while on: the wire inspector
  // turns it on while an operator watches, so an unwatched server pays one branch a fire.
  void SetTiming(bool on) { timing_ = on; }
  bool timing() const { return timing_; }

  // Every point, sorted by name, for audits and debug tools.
  std::vector<PointInfo> ListPoints() const;
  bool fail_open(const Point* point) const;
  // Handlers on `point` (0 for nullptr).
  std::size_t handler_count(const Point* point) const;

  // OK, or `hook point "<name>" is kernel-reserved` for names starting with "Kernel.".
  static Status CheckUserPointName(std::string_view name);

 private:
  struct Node;
  void Remove(Node* node) noexcept;
  void Modify(Point* point);  // copy-on-write while a fire may be reading the chain
  // Fire's rare paths, out of its hot loop: a handler threw (called from the catch: whether the
  // chain goes on, and the first text into `result`); a fire timed; chains edited during a fire.
  bool HandlerThrew(Point& point, const Node& node, HookResult& result);
  static void RecordTime(Point& point, std::uint64_t started);
  void DropRetired();

  Options options_;
  std::unordered_map<std::string, std::unique_ptr<Point>, internal::StringHash, std::equal_to<>>
      points_;
  std::uint64_t next_seq_ = 1;
  int depth_ = 0;
  bool timing_ = false;
  std::vector<std::vector<std::shared_ptr<Node>>> retired_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_HOOKS_H_

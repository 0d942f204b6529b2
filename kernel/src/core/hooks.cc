// SPDX-License-Identifier: Apache-2.0
// Hooks: sorted handler chains per point, copy-on-write while a fire is in progress.
#include "kernel/src/core/hooks.h"

#include <algorithm>
#include <exception>

#include "kernel/src/core/logger.h"

namespace molt::kernel {

struct Hooks::Node final : internal::ConnectionNode {
  Handler fn;
  Hooks* hooks = nullptr;
  Point* point = nullptr;
  int priority = kDefaultPriority;
  std::uint64_t seq = 0;
  bool connected = true;

  void Disconnect() noexcept override {
    if (connected && hooks != nullptr) {
      hooks->Remove(this);
    }
  }
  bool Connected() const noexcept override { return connected; }
};

class Hooks::Point {
 public:
  std::string name;
  Mode mode = Mode::kFailClosed;
  std::vector<std::shared_ptr<Node>> chain;  // sorted by (priority, seq)
  std::uint64_t fired = 0;
  std::uint64_t rejected = 0;
  std::uint64_t errors = 0;
  std::uint64_t timed = 0;
  Duration time_total{};
  Duration time_max{};
};

Hooks::Hooks(Options options) : options_(options) {}

Hooks::~Hooks() {
  for (auto& [name, point] : points_) {
    for (auto& node : point->chain) {
      node->connected = false;
      node->hooks = nullptr;
      node->fn = nullptr;
    }
  }
}

void Hooks::Clear() {
  std::vector<std::shared_ptr<Node>> all;
  for (auto& [name, point] : points_) {
    all.insert(all.end(), point->chain.begin(), point->chain.end());
  }
  for (auto& node : all) {
    node->Disconnect();
  }
}

Status Hooks::CheckUserPointName(std::string_view name) {
  if (name.substr(0, 7) == "Kernel.") {
    return Status::InvalidArgument("hook point \"" + std::string(name) + "\" is kernel-reserved");
  }
  if (name.empty()) {
    return Status::InvalidArgument("hook point name must not be empty");
  }
  return Status::Ok();
}

Hooks::Point* Hooks::Resolve(std::string_view name) {
  auto it = points_.find(name);
  if (it != points_.end()) {
    return it->second.get();
  }
  auto point = std::make_unique<Point>();
  point->name = std::string(name);
  Point* raw = point.get();
  points_.emplace(point->name, std::move(point));
  return raw;
}

Hooks::Point* Hooks::Define(std::string_view name, Mode mode) {
  Point* point = Resolve(name);
  point->mode = mode;
  return point;
}

std::size_t Hooks::handler_count(const Point* point) const {
  return point == nullptr ? 0 : point->chain.size();
}

bool Hooks::fail_open(const Point* point) const { return point->mode == Mode::kFailOpen; }

void Hooks::Modify(Point* point) {
  if (depth_ > 0) {
    // A fire may hold a pointer into the current chain: it keeps that buffer, we edit a copy.
    retired_.push_back(std::move(point->chain));
    point->chain = retired_.back();
  }
}

Connection Hooks::On(std::string_view name, Handler fn, int priority) {
  return On(Resolve(name), std::move(fn), priority);
}

Connection Hooks::On(Point* point, Handler fn, int priority) {
  auto node = std::make_shared<Node>();
  node->fn = std::move(fn);
  node->hooks = this;
  node->point = point;
  node->priority = priority;
  node->seq = next_seq_++;
  Modify(point);
  auto pos =
      std::upper_bound(point->chain.begin(), point->chain.end(), priority,
                       [](int p, const std::shared_ptr<Node>& n) { return p < n->priority; });
  point->chain.insert(pos, node);
  return Connection(std::move(node));
}

void Hooks::Remove(Node* node) noexcept {
  node->connected = false;
  Point* point = node->point;
  Modify(point);
  auto it = std::find_if(point->chain.begin(), point->chain.end(),
                         [node](const std::shared_ptr<Node>& n) { return n.get() == node; });
  if (it != point->chain.end()) {
    point->chain.erase(it);
  }
  if (depth_ == 0) {
    node->fn = nullptr;  // release captures even if a Connection lingers
  }
}

HookResult Hooks::Fire(std::string_view name, HookContext& ctx) {
  auto it = points_.find(name);
  if (it == points_.end()) {
    ctx.point = name;
    return HookResult();  // no point yet: no handlers, passes
  }
  return Fire(it->second.get(), ctx);
}

HookResult Hooks::Fire(Point* point, HookContext& ctx) {
  ctx.point = point->name;
  ++point->fired;
  HookResult result;
  ++depth_;
  const std::shared_ptr<Node>* chain = point->chain.data();  // survives edits: see Modify
  const std::size_t n = point->chain.size();
  const bool timed = timing_ && n > 0;
  const std::uint64_t started = timed ? RealTicks() : 0;  // the TSC where it is steady
  for (std::size_t i = 0; i < n; ++i) {
    Node* node = chain[i].get();
    if (!node->connected) {
      continue;
    }
    bool pass;
    try {
      pass = node->fn(ctx);
    } catch (...) {
      pass = HandlerThrew(*point, *node, result);
    }
    if (!pass) {
      result.passed = false;
      ++point->rejected;
      break;
    }
  }
  if (timed) {
    RecordTime(*point, started);
  }
  if (--depth_ == 0 && !retired_.empty()) {
    DropRetired();
  }
  return result;
}

[[gnu::cold]] bool Hooks::HandlerThrew(Point& point, const Node& node, HookResult& result) {
  ++point.errors;
  std::string what = "unknown exception";
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (result.error.empty()) {
    result.error = "hook \"" + point.name + "\": handler threw: " + what;
  }
  if (options_.warn_on_error) {
    LogScope("Hooks").Warn("hook \"{}\": handler (priority {}) threw: {}", point.name,
                           node.priority, what);
  }
  return point.mode == Mode::kFailOpen;
}

void Hooks::RecordTime(Point& point, std::uint64_t started) {
  const Duration took(static_cast<Duration::rep>(static_cast<double>(RealTicks() - started) * 1e9 /
                                                 RealTicksPerSecond()));
  ++point.timed;
  point.time_total += took;
  point.time_max = std::max(point.time_max, took);
}

[[gnu::noinline]] void Hooks::DropRetired() {
  for (auto& chain_copy : retired_) {
    for (auto& node : chain_copy) {
      if (!node->connected) {
        node->fn = nullptr;
      }
    }
  }
  retired_.clear();
}

std::vector<Hooks::PointInfo> Hooks::ListPoints() const {
  std::vector<PointInfo> out;
  out.reserve(points_.size());
  for (const auto& [name, p] : points_) {
    out.push_back({p->name, p->mode == Mode::kFailOpen, p->chain.size(), p->fired, p->rejected,
                   p->errors, p->timed, p->time_total, p->time_max});
  }
  std::sort(out.begin(), out.end(),
            [](const PointInfo& a, const PointInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace molt::kernel

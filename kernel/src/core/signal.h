// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/signal.h
//
// Signal<Args...>: a list of handlers fired synchronously in connection order (spec: Signal).
//
//   Signal<int> changed;
//   Connection c = changed.Connect([](int v) { ... });
//   changed.Once([](int v) { ... });  // disconnects itself before its first call
//   changed.Fire(3);
//   c.Disconnect();
//
// Connecting or disconnecting from inside a handler is safe: a handler connected during a fire
// is first called by the next fire, and one disconnected during a fire is not called again, not
// even later in the same fire. A handler that throws is reported to the log and the others still
// run. A Connection may outlive its Signal (Disconnect is then a no-op). There is no wait():
// a process waits on a signal through the process API.
//
// Thread safety: REQUIRES external synchronization (the kernel thread).
#ifndef MOLT_KERNEL_CORE_SIGNAL_H_
#define MOLT_KERNEL_CORE_SIGNAL_H_

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/core/callback.h"

namespace molt::kernel {
namespace internal {

// Logs an exception that escaped a handler; `what` names it ("signal"). Never throws.
void ReportHandlerError(std::string_view what, std::exception_ptr error) noexcept;

// What a Connection points at: a node of some handler list.
struct ConnectionNode {
  virtual ~ConnectionNode() = default;
  virtual void Disconnect() noexcept = 0;
  virtual bool Connected() const noexcept = 0;
};

}  // namespace internal

// A handle to one connected handler. Copyable; disconnecting through any copy disconnects it.
// Dropping a Connection does not disconnect (add it to a Scope for that).
class Connection {
 public:
  Connection() = default;
  explicit Connection(std::shared_ptr<internal::ConnectionNode> node) : node_(std::move(node)) {}

  void Disconnect() noexcept {
    if (node_) {
      node_->Disconnect();
    }
  }
  bool Connected() const noexcept { return node_ && node_->Connected(); }

 private:
  std::shared_ptr<internal::ConnectionNode> node_;
};

template <class... Args>
class Signal {
 public:
  using Handler = Callback<void(Args...)>;

  Signal() = default;
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;
  ~Signal() { DisconnectAll(); }

  Connection Connect(Handler fn) { return Add(std::move(fn), false); }
  // Connects a handler that is disconnected before its first call.
  Connection Once(Handler fn) { return Add(std::move(fn), true); }

  // Calls every connected handler in connection order.
  void Fire(Args... args) {
    ++firing_;
    const std::size_t n = nodes_.size();  // handlers connected from here on wait for the next fire
    for (std::size_t i = 0; i < n; ++i) {
      Node* node = nodes_[i].get();
      if (!node->connected) {
        continue;
      }
      if (node->once) {
        node->Disconnect();
      }
      try {
        node->fn(args...);
      } catch (...) {
        internal::ReportHandlerError("signal handler", std::current_exception());
      }
    }
    if (--firing_ == 0 && dead_ > 0) {
      Compact();
    }
  }

  void DisconnectAll() noexcept {
    for (auto& node : nodes_) {
      if (node->connected) {
        node->connected = false;
        ++dead_;
      }
    }
    if (firing_ == 0) {
      Compact();
    }
  }

  // Connected handlers.
  std::size_t size() const { return nodes_.size() - dead_; }
  bool empty() const { return size() == 0; }

 private:
  struct Node final : internal::ConnectionNode {
    Handler fn;
    Signal* owner = nullptr;
    bool connected = true;
    bool once = false;

    void Disconnect() noexcept override {
      if (connected && owner != nullptr) {
        owner->Remove(this);
      }
    }
    bool Connected() const noexcept override { return connected; }
  };

  Connection Add(Handler fn, bool once) {
    auto node = std::make_shared<Node>();
    node->fn = std::move(fn);
    node->owner = this;
    node->once = once;
    nodes_.push_back(node);
    return Connection(std::move(node));
  }

  void Remove(Node* node) noexcept {
    node->connected = false;
    ++dead_;
    if (firing_ == 0) {
      Compact();
    }
  }

  // Drops disconnected nodes; their handlers are destroyed here, never while running.
  void Compact() noexcept {
    auto it = std::remove_if(nodes_.begin(), nodes_.end(), [](const std::shared_ptr<Node>& n) {
      if (n->connected) {
        return false;
      }
      n->owner = nullptr;
      n->fn = nullptr;
      return true;
    });
    nodes_.erase(it, nodes_.end());
    dead_ = 0;
  }

  std::vector<std::shared_ptr<Node>> nodes_;
  std::size_t dead_ = 0;
  int firing_ = 0;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_SIGNAL_H_

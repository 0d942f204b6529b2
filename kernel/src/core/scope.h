// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/scope.h
//
// Scope: one lifetime for related resources (spec: Scope). Add() takes ownership of a resource
// and returns it; Close() cleans every resource in reverse registration order, exactly once.
//
//   Scope match;
//   match.Add(bus.Subscribe("Combat.Kill", OnKill));           // a Connection: Disconnect()
//   match.Add(scheduler.After(Seconds(180), EndMatch));       // a TaskHandle: Cancel()
//   match.Add([&] { arena.Reset(); });                         // any callable
//   std::shared_ptr<Scope> sudden_death = match.Child();       // closes with `match` or earlier
//   match.Close();                                             // reverse order, once
//
// Accepted resources: callables `void()`, and objects with a Destroy(), Disconnect(), Cancel() or
// Close() member (looked up in that order), or any member named explicitly with
// Add(resource, &T::Method). A cleanup that throws is logged and the rest still run. A resource
// added to a closed (or closing) scope is cleaned at once. Close() is idempotent, and the
// destructor closes. Remove() hands a resource back without cleaning it. A child closed early
// detaches itself from its parent.
//
// Cleanups must not block. Thread safety: REQUIRES external synchronization (the kernel thread).
#ifndef MOLT_KERNEL_CORE_SCOPE_H_
#define MOLT_KERNEL_CORE_SCOPE_H_

#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace molt::kernel {

template <class T>
concept ScopeResource =
    std::invocable<T&> || requires(T& t) { t.Destroy(); } || requires(T& t) { t.Disconnect(); } ||
    requires(T& t) { t.Cancel(); } || requires(T& t) { t.Close(); };

class Scope {
 public:
  Scope() = default;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() { Close(); }

  // Takes ownership of `resource` and returns a reference to the stored object, valid until the
  // scope closes (for an add to a closed scope, which cleans it at once: until destruction).
  template <ScopeResource T>
  T& Add(T resource) {
    auto holder = std::make_unique<Holder<T, DefaultCleanup>>(std::move(resource));
    T& ref = holder->value;
    Push(std::move(holder));
    return ref;
  }

  // Same, with the cleanup named explicitly (spec: scope:add(handle, "close")).
  template <class T, class R>
  T& Add(T resource, R (T::*method)()) {
    auto holder = std::make_unique<Holder<T, MemberCleanup<T, R>>>(std::move(resource),
                                                                   MemberCleanup<T, R>{method});
    T& ref = holder->value;
    Push(std::move(holder));
    return ref;
  }

  // Hands `resource` (a reference Add returned) back without cleaning it; nullopt when it is not
  // in this scope.
  template <class T>
  std::optional<T> Remove(T& resource) {
    std::unique_ptr<Entry> entry = Take(&resource);
    if (!entry) {
      return std::nullopt;
    }
    return std::optional<T>(std::move(static_cast<ValueEntry<T>*>(entry.get())->value));
  }

  // A scope that closes with this one, or earlier (then it detaches itself). The returned pointer
  // may be dropped: the parent keeps the child until one of them closes.
  std::shared_ptr<Scope> Child();

  // Cleans every resource in reverse registration order, once. Later calls do nothing.
  void Close() noexcept;

  bool closed() const { return closed_; }
  // Resources waiting to be cleaned.
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    virtual ~Entry() = default;
    virtual void Cleanup() = 0;
    virtual const void* key() const = 0;
  };
  template <class T>
  struct ValueEntry : Entry {
    explicit ValueEntry(T v) : value(std::move(v)) {}
    const void* key() const override { return &value; }
    T value;
  };
  struct DefaultCleanup {
    template <class T>
    void operator()(T& t) const {
      if constexpr (std::invocable<T&>) {
        t();
      } else if constexpr (requires { t.Destroy(); }) {
        t.Destroy();
      } else if constexpr (requires { t.Disconnect(); }) {
        t.Disconnect();
      } else if constexpr (requires { t.Cancel(); }) {
        t.Cancel();
      } else {
        t.Close();
      }
    }
  };
  template <class T, class R>
  struct MemberCleanup {
    R (T::*method)();
    void operator()(T& t) const { (t.*method)(); }
  };
  template <class T, class C>
  struct Holder final : ValueEntry<T> {
    explicit Holder(T v, C c = C()) : ValueEntry<T>(std::move(v)), cleanup(c) {}
    void Cleanup() override { cleanup(this->value); }
    C cleanup;
  };
  struct ChildEntry;

  void Push(std::unique_ptr<Entry> entry);
  std::unique_ptr<Entry> Take(const void* key);
  static void RunCleanup(Entry& entry) noexcept;

  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::unique_ptr<Entry>> spent_;  // added after close: cleaned, kept for references
  Scope* parent_ = nullptr;
  bool closed_ = false;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_SCOPE_H_

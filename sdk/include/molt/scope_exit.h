// SPDX-License-Identifier: Apache-2.0
// File: molt/scope_exit.h
//
// molt::ScopeExit runs a callable when it leaves scope, unless cancelled: the one scope guard of
// the house (STYLE.md §6), shaped like absl::Cleanup. Header-only C++17; usable by the kernel,
// hosts and plugins alike.
//
// Example:
//
//   int fd = ::open(path, O_RDONLY);
//   molt::ScopeExit close_fd = [fd]() noexcept { ::close(fd); };
//   if (!ReadHeader(fd)) return false;  // closes fd
//   std::move(close_fd).Cancel();       // keeps fd open from here on
//
// The callable must be invocable as `void()` without throwing and nothrow-movable: a guard runs
// in destructors and on error paths, where a second exception would terminate the process.
// Storage is inline: a guard never allocates.
#ifndef MOLT_SCOPE_EXIT_H_
#define MOLT_SCOPE_EXIT_H_

#ifndef __cplusplus
#error "molt/scope_exit.h is C++ only"
#endif

#include <type_traits>
#include <utility>

namespace molt {

template <class F>
class [[nodiscard]] ScopeExit {
  static_assert(std::is_nothrow_invocable_v<F&>, "a ScopeExit callable must be noexcept");
  static_assert(std::is_same_v<std::invoke_result_t<F&>, void>,
                "a ScopeExit callable returns void");
  static_assert(std::is_nothrow_move_constructible_v<F>,
                "a ScopeExit callable must be nothrow-movable");

 public:
  // Arms the guard with `fn`.
  ScopeExit(F fn) noexcept : fn_(std::move(fn)), armed_(true) {}  // NOLINT: implicit by design

  ScopeExit(ScopeExit&& other) noexcept : fn_(std::move(other.fn_)), armed_(other.armed_) {
    other.armed_ = false;
  }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;
  ScopeExit& operator=(ScopeExit&&) = delete;

  ~ScopeExit() {
    if (armed_) {
      fn_();
    }
  }

  // Disarms the guard: the callable never runs.
  void Cancel() && noexcept { armed_ = false; }

  // Runs the callable now (once) and disarms the guard.
  void Invoke() && noexcept {
    if (armed_) {
      armed_ = false;
      fn_();
    }
  }

 private:
  F fn_;
  bool armed_;
};

template <class F>
ScopeExit(F) -> ScopeExit<F>;

}  // namespace molt

#endif  // MOLT_SCOPE_EXIT_H_

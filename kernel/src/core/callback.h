// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/callback.h
//
// Callback<R(A...)>: the kernel's type-erased callable, a move-only std::function for hot paths.
//   - Arguments go to the target by value through one function pointer, so small trivially
//     copyable arguments (string_view, span, handles) travel in registers; std::function passes
//     every argument by reference, which costs a store and reload per call.
//   - Captures up to kInlineSize bytes live inline; trivially copyable ones (pointers, references,
//     ids: most kernel lambdas) move with a memcpy and need no destructor call.
//   - Move-only targets are accepted (a handler may own a unique_ptr).
//
//   Callback<void(int)> cb = [&total](int v) { total += v; };
//   cb(3);
//
// Calling an empty Callback is undefined (check with operator bool). Thread safety: a value type.
#ifndef MOLT_KERNEL_CORE_CALLBACK_H_
#define MOLT_KERNEL_CORE_CALLBACK_H_

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace molt::kernel {

template <class Signature>
class Callback;

template <class R, class... A>
class Callback<R(A...)> {
 public:
  static constexpr std::size_t kInlineSize = 4 * sizeof(void*);

  Callback() noexcept = default;
  Callback(std::nullptr_t) noexcept {}  // NOLINT: implicit like std::function

  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, Callback> &&
             std::is_invocable_r_v<R, std::decay_t<F>&, A...>)
  Callback(F&& f) {  // NOLINT: implicit like std::function
    Init(std::forward<F>(f));
  }

  // Replaces the target with `f`, constructed in place (no temporary Callback to move from).
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, Callback> &&
             std::is_invocable_r_v<R, std::decay_t<F>&, A...>)
  void Emplace(F&& f) {
    Reset();
    Init(std::forward<F>(f));
  }

  Callback(Callback&& other) noexcept { MoveFrom(other); }
  Callback& operator=(Callback&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  Callback& operator=(std::nullptr_t) noexcept {
    Reset();
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { Reset(); }

  explicit operator bool() const noexcept { return invoke_ != nullptr; }

  // REQUIRES: *this is not empty.
  R operator()(A... a) const { return invoke_(&storage_, std::forward<A>(a)...); }

 private:
  union Storage {
    alignas(std::max_align_t) unsigned char local[kInlineSize];
    void* heap;
  };
  // Moves src's target into dst (dst != nullptr) or destroys it; src is left without a target.
  using Manage = void (*)(Storage* dst, Storage* src);
  using Invoke = R (*)(Storage*, A...);

  template <class T>
  static constexpr bool kFitsInline =
      sizeof(T) <= kInlineSize && alignof(T) <= alignof(std::max_align_t) &&
      std::is_nothrow_move_constructible_v<T>;

  template <class F>
  void Init(F&& f) {
    using T = std::decay_t<F>;
    if constexpr (kFitsInline<T>) {
      ::new (static_cast<void*>(storage_.local)) T(std::forward<F>(f));
      invoke_ = [](Storage* s, A... a) -> R {
        return (*std::launder(reinterpret_cast<T*>(s->local)))(std::forward<A>(a)...);
      };
      if constexpr (!std::is_trivially_copyable_v<T>) {
        manage_ = [](Storage* dst, Storage* src) {
          T* from = std::launder(reinterpret_cast<T*>(src->local));
          if (dst != nullptr) {
            ::new (static_cast<void*>(dst->local)) T(std::move(*from));
          }
          from->~T();
        };
      }
    } else {
      storage_.heap = new T(std::forward<F>(f));
      invoke_ = [](Storage* s, A... a) -> R {
        return (*static_cast<T*>(s->heap))(std::forward<A>(a)...);
      };
      manage_ = [](Storage* dst, Storage* src) {
        if (dst != nullptr) {
          dst->heap = src->heap;
        } else {
          delete static_cast<T*>(src->heap);
        }
      };
    }
  }

  void MoveFrom(Callback& other) noexcept {
    invoke_ = other.invoke_;
    manage_ = other.manage_;
    if (manage_ != nullptr) {
      manage_(&storage_, &other.storage_);
    } else if (invoke_ != nullptr) {
      std::memcpy(&storage_, &other.storage_, sizeof(Storage));  // trivially copyable target
    }
    other.invoke_ = nullptr;
    other.manage_ = nullptr;
  }

  void Reset() noexcept {
    if (manage_ != nullptr) {
      Manage manage = manage_;
      manage_ = nullptr;
      invoke_ = nullptr;
      manage(nullptr, &storage_);
    } else {
      invoke_ = nullptr;
    }
  }

  Invoke invoke_ = nullptr;
  Manage manage_ = nullptr;  // nullptr with a target: trivially copyable inline target
  mutable Storage storage_{};
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_CALLBACK_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/value.h
//
// Value: one argument of a Bus topic or a hook context. A 16-byte tagged union of plain data
// (nil, bool, int, double, string, bytes, handle) that never owns what it points to: strings and
// bytes are views valid for the call that carries them. It is the C ABI's molt_value with C++
// helpers and no extra members, so argument arrays cross the ABI without conversion.
//
// Thread safety: a value type.
#ifndef MOLT_KERNEL_CORE_VALUE_H_
#define MOLT_KERNEL_CORE_VALUE_H_

#include <molt/molt.h>

#include <cstdint>
#include <span>
#include <string_view>

namespace molt::kernel {

struct Value : molt_value {
  enum Type : std::int32_t {
    kNil = MOLT_VALUE_NIL,
    kBool = MOLT_VALUE_BOOL,
    kInt = MOLT_VALUE_INT,
    kDouble = MOLT_VALUE_DOUBLE,
    kString = MOLT_VALUE_STRING,  // UTF-8, `size` bytes at `as.ptr`, not NUL-terminated
    kBytes = MOLT_VALUE_BYTES,    // opaque bytes (a FlatBuffer, for instance)
    kHandle = MOLT_VALUE_HANDLE,  // a 64-bit kernel handle (session id, task id, ...)
  };

  Value() : molt_value{kNil, 0, {0}} {}

  static Value Nil() { return Value(); }
  static Value Bool(bool b) {
    return Make(kBool, 0, [&](auto& as) { as.i = b ? 1 : 0; });
  }
  static Value Int(std::int64_t i) {
    return Make(kInt, 0, [&](auto& as) { as.i = i; });
  }
  static Value Double(double d) {
    return Make(kDouble, 0, [&](auto& as) { as.d = d; });
  }
  // REQUIRES: s.size() < 4 GiB; `s` outlives every use of the value.
  static Value String(std::string_view s) {
    return Make(kString, static_cast<std::uint32_t>(s.size()),
                [&](auto& as) { as.ptr = s.data(); });
  }
  static Value Bytes(const void* data, std::uint32_t size) {
    return Make(kBytes, size, [&](auto& as) { as.ptr = data; });
  }
  static Value Handle(std::uint64_t h) {
    return Make(kHandle, 0, [&](auto& as) { as.handle = h; });
  }

  bool is_nil() const { return type == kNil; }
  bool AsBool() const { return type == kBool && as.i != 0; }
  std::int64_t AsInt() const { return type == kInt ? as.i : 0; }
  double AsDouble() const {
    return type == kDouble ? as.d : type == kInt ? static_cast<double>(as.i) : 0.0;
  }
  // The text of a kString value; empty for any other type.
  std::string_view AsString() const {
    return type == kString ? std::string_view(static_cast<const char*>(as.ptr), size)
                           : std::string_view();
  }
  std::uint64_t AsHandle() const { return type == kHandle ? as.handle : 0; }

 private:
  template <class F>
  static Value Make(std::int32_t t, std::uint32_t n, F&& set) {
    Value v;
    v.type = t;
    v.size = n;
    set(v.as);
    return v;
  }
};

static_assert(sizeof(Value) == sizeof(molt_value) && alignof(Value) == alignof(molt_value),
              "Value adds nothing to molt_value: arrays of one are arrays of the other");

// The arguments of one publish or fire.
using Args = std::span<const Value>;

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_VALUE_H_

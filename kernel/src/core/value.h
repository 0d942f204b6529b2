// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/value.h
//
// Value: one argument of a Bus topic or a hook context. A 16-byte tagged union of plain data
// (nil, bool, int, double, string, bytes, handle) that never owns what it points to: strings and
// bytes are views valid for the call that carries them. It has the layout of the C ABI's
// molt_value, so argument arrays cross the ABI without conversion.
//
// Thread safety: a value type.
#ifndef MOLT_KERNEL_CORE_VALUE_H_
#define MOLT_KERNEL_CORE_VALUE_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace molt::kernel {

struct Value {
  // Frozen values: the C ABI's MOLT_VALUE_* constants.
  enum Type : std::int32_t {
    kNil = 0,
    kBool = 1,
    kInt = 2,
    kDouble = 3,
    kString = 4,  // UTF-8, `size` bytes at `as.ptr`, not NUL-terminated
    kBytes = 5,   // opaque bytes (a FlatBuffer, for instance)
    kHandle = 6,  // a 64-bit kernel handle (session id, task id, ...)
  };

  std::int32_t type = kNil;
  std::uint32_t size = 0;
  union {
    std::int64_t i;
    double d;
    const void* ptr;
    std::uint64_t handle;
  } as{};

  static Value Nil() { return Value(); }
  static Value Bool(bool b) {
    Value v;
    v.type = kBool;
    v.as.i = b ? 1 : 0;
    return v;
  }
  static Value Int(std::int64_t i) {
    Value v;
    v.type = kInt;
    v.as.i = i;
    return v;
  }
  static Value Double(double d) {
    Value v;
    v.type = kDouble;
    v.as.d = d;
    return v;
  }
  // REQUIRES: s.size() < 4 GiB; `s` outlives every use of the value.
  static Value String(std::string_view s) {
    Value v;
    v.type = kString;
    v.size = static_cast<std::uint32_t>(s.size());
    v.as.ptr = s.data();
    return v;
  }
  static Value Bytes(const void* data, std::uint32_t size) {
    Value v;
    v.type = kBytes;
    v.size = size;
    v.as.ptr = data;
    return v;
  }
  static Value Handle(std::uint64_t h) {
    Value v;
    v.type = kHandle;
    v.as.handle = h;
    return v;
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
};

static_assert(sizeof(Value) == 16, "Value is frozen at 16 bytes (molt_value)");

// The arguments of one publish or fire.
using Args = std::span<const Value>;

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_VALUE_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/struct_size.h
//
// The one rule for every size-prefixed struct that crosses the ABI, in both directions
// (DESIGN.md §4 rule 3): a caller may pass any `struct_size` at least the size the struct had in
// the release that introduced it. ReadSized() copies what was given into a zeroed current struct,
// so a field the caller's header did not have reads as 0 (its default); WriteSized() fills only
// the bytes the caller's struct has. A smaller size is refused with one line naming the struct,
// the size given and the minimum. A check for `struct_size >= sizeof(current)` is the bug this
// replaces: it turns away every older plugin at the first append.
//
// Every struct that carries `struct_size` has a SizedStruct<T> specialization here (or, for the
// client library's own structs, next to their code), stating its name and introducing size.
// tests/sdk/compat proves each minimum against the frozen header of the release named.
//
//   Result<molt_channel_spec> spec = ReadSized(*given);   // given->struct_size may be older
//   if (!spec.ok()) return spec.status();
//
// Thread safety: pure functions.
#ifndef MOLT_KERNEL_ABI_STRUCT_SIZE_H_
#define MOLT_KERNEL_ABI_STRUCT_SIZE_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace molt::kernel::abi {

// The name of `T` and its size in the release that introduced it. Specialized per struct.
template <class T>
struct SizedStruct;

template <>
struct SizedStruct<molt_plugin_info> {
  static constexpr const char* kName = "molt_plugin_info";
  static constexpr const char* kSince = "ABI 1.0";
  static constexpr std::uint32_t kMinSize = 112;
};
template <>
struct SizedStruct<molt_task_spec> {
  static constexpr const char* kName = "molt_task_spec";
  static constexpr const char* kSince = "ABI 1.5";
  static constexpr std::uint32_t kMinSize = 24;
};
template <>
struct SizedStruct<molt_job_spec> {
  static constexpr const char* kName = "molt_job_spec";
  static constexpr const char* kSince = "ABI 1.6";
  static constexpr std::uint32_t kMinSize = 64;
};
template <>
struct SizedStruct<molt_job_result> {
  static constexpr const char* kName = "molt_job_result";
  static constexpr const char* kSince = "ABI 1.6";
  static constexpr std::uint32_t kMinSize = 64;
};
template <>
struct SizedStruct<molt_process_options> {
  static constexpr const char* kName = "molt_process_options";
  static constexpr const char* kSince = "ABI 1.0";
  static constexpr std::uint32_t kMinSize = 24;
};
template <>
struct SizedStruct<molt_channel_spec> {
  static constexpr const char* kName = "molt_channel_spec";
  static constexpr const char* kSince = "ABI 1.1";
  static constexpr std::uint32_t kMinSize = 120;
};
template <>
struct SizedStruct<molt_session_info> {
  static constexpr const char* kName = "molt_session_info";
  static constexpr const char* kSince = "ABI 1.1";
  static constexpr std::uint32_t kMinSize = 56;
};
template <>
struct SizedStruct<molt_replica_spec> {
  static constexpr const char* kName = "molt_replica_spec";
  static constexpr const char* kSince = "ABI 1.2";
  static constexpr std::uint32_t kMinSize = 40;
};
template <>
struct SizedStruct<molt_profile_spec> {
  static constexpr const char* kName = "molt_profile_spec";
  static constexpr const char* kSince = "ABI 1.4";
  static constexpr std::uint32_t kMinSize = 96;
};

template <>
struct SizedStruct<molt_grid_spec> {
  static constexpr const char* kName = "molt_grid_spec";
  static constexpr const char* kSince = "ABI 1.11";
  static constexpr std::uint32_t kMinSize = 48;
};

// OK when `struct_size` is at least the minimum of `T`; otherwise the refusal naming both.
template <class T>
Status CheckStructSize(std::uint32_t struct_size) {
  using S = SizedStruct<T>;
  static_assert(S::kMinSize <= sizeof(T), "a struct never shrinks");
  if (struct_size >= S::kMinSize) {
    return Status::Ok();
  }
  return Status::InvalidArgument(std::string(S::kName) + ".struct_size is " +
                                 std::to_string(struct_size) + ", below " +
                                 std::to_string(S::kMinSize) + " (its size in " + S::kSince +
                                 ", the smallest accepted): set it to sizeof(" + S::kName + ")");
}

// `given` as a current struct: the bytes the caller has, then zeros. `struct_size` says the size
// the caller passed (kept, so a layer below can tell what the caller knew).
template <class T>
Result<T> ReadSized(const T& given) {
  static_assert(std::is_trivially_copyable_v<T>);
  MOLT_RETURN_IF_ERROR(CheckStructSize<T>(given.struct_size));
  T out{};
  std::memcpy(&out, &given, std::min<std::size_t>(given.struct_size, sizeof(T)));
  return out;
}

// Copies `value` into the caller's `out`, as many bytes as the caller's struct has; the caller's
// struct_size stays as it was.
template <class T>
Status WriteSized(const T& value, T* out) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::uint32_t size = out->struct_size;
  MOLT_RETURN_IF_ERROR(CheckStructSize<T>(size));
  std::memcpy(out, &value, std::min<std::size_t>(size, sizeof(T)));
  out->struct_size = size;
  return Status::Ok();
}

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_STRUCT_SIZE_H_

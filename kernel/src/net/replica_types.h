// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/replica_types.h
//
// The words of replicas (kernel/src/net/replica.h): a replica's id, its fields' types and
// declarations, a field's value, and who its audience is.
//
// Thread safety: values.
#ifndef MOLT_KERNEL_NET_REPLICA_TYPES_H_
#define MOLT_KERNEL_NET_REPLICA_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace molt::kernel::net {

using ReplicaId = std::uint32_t;

enum class ReplicaFieldType : std::uint8_t { kInt = 0, kFloat = 1, kBytes = 2 };
enum class Audience : std::uint8_t { kAll = 0, kList = 1 };

inline constexpr std::size_t kMaxReplicaFields = 64;        // one dirty bit each
inline constexpr std::uint32_t kDefaultReplicaBytes = 256;  // a Bytes field's default cap

struct ReplicaField {
  std::string name;
  ReplicaFieldType type = ReplicaFieldType::kInt;
  std::uint32_t max_bytes = kDefaultReplicaBytes;  // Bytes fields only
  // Int and float fields: a write closer than this to the value last sent to a session is not
  // sent to it (spec: Quantize, a deadband); 0: every change.
  double quantize = 0;
};

// One field's value: `i` for an int field, `f` for a float, `bytes` for bytes.
struct ReplicaValue {
  std::int64_t i = 0;
  double f = 0;
  std::vector<std::uint8_t> bytes;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REPLICA_TYPES_H_

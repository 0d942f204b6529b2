// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/replica_frames.h
//
// ReplicaFrames: the frames of one replica's delivery, each encoded once however many sessions
// it goes to: the Snapshot (every field, with the schema), a Delta per distinct set of fields
// (sessions owed the same fields share one; a session whose deadbands held some fields back, or
// which was skipped at a slower tier, is owed another set), and the Remove.
//
//   ReplicaFrames frames(id, name, fields, values);
//   std::span<const std::uint8_t> all = frames.Snapshot();
//   std::span<const std::uint8_t> some = frames.Delta(0b101);   // fields 0 and 2
//
// A span stays valid as long as the ReplicaFrames: a delivery encodes every frame before its
// first send (a send can end a session, whose handlers may destroy the replica).
//
// Thread safety: one thread.
#ifndef MOLT_KERNEL_NET_REPLICA_FRAMES_H_
#define MOLT_KERNEL_NET_REPLICA_FRAMES_H_

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kernel/src/net/replica_types.h"

namespace molt::kernel::net {

class ReplicaFrames {
 public:
  ReplicaFrames(ReplicaId id, std::string_view name, std::span<const ReplicaField> fields,
                std::span<const ReplicaValue> values);
  ReplicaFrames(const ReplicaFrames&) = delete;
  ReplicaFrames& operator=(const ReplicaFrames&) = delete;

  std::span<const std::uint8_t> Snapshot();
  // The fields of `mask` (bit i: field i) at their current values.
  std::span<const std::uint8_t> Delta(std::uint64_t mask);
  // A Remove of replica `id`, encoded into `b`.
  static std::span<const std::uint8_t> Remove(flatbuffers::FlatBufferBuilder& b, ReplicaId id);

 private:
  std::span<const std::uint8_t> Encode(flatbuffers::FlatBufferBuilder& b, bool full,
                                       std::uint64_t mask);

  const ReplicaId id_;
  const std::string_view name_;
  const std::span<const ReplicaField> fields_;
  const std::span<const ReplicaValue> values_;
  struct Encoded {
    std::uint64_t mask;
    flatbuffers::FlatBufferBuilder builder;
    std::span<const std::uint8_t> frame;
  };
  std::optional<Encoded> snapshot_;
  std::optional<Encoded> delta_;  // the first set of fields (most deliveries have one)
  std::vector<std::unique_ptr<Encoded>> more_;  // the others: encoding one never moves another
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REPLICA_FRAMES_H_

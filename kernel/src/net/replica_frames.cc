// SPDX-License-Identifier: Apache-2.0
// ReplicaFrames: a replica's Snapshot, Deltas and Remove as wire frames (replica_frames.h).
#include "kernel/src/net/replica_frames.h"

#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

namespace fb = flatbuffers;
namespace w = molt::wire;

static_assert(static_cast<int>(ReplicaFieldType::kBytes) ==
              static_cast<int>(w::ReplicaFieldType::Bytes));

ReplicaFrames::ReplicaFrames(ReplicaId id, std::string_view name,
                             std::span<const ReplicaField> fields,
                             std::span<const ReplicaValue> values)
    : id_(id), name_(name), fields_(fields), values_(values) {}

std::span<const std::uint8_t> ReplicaFrames::Snapshot() {
  if (!snapshot_) {
    snapshot_.emplace(Encoded{~std::uint64_t{0}, fb::FlatBufferBuilder(256), {}});
    snapshot_->frame = Encode(snapshot_->builder, true, ~std::uint64_t{0});
  }
  return snapshot_->frame;
}

std::span<const std::uint8_t> ReplicaFrames::Delta(std::uint64_t mask) {
  if (delta_ && delta_->mask == mask) {
    return delta_->frame;
  }
  for (const std::unique_ptr<Encoded>& e : more_) {
    if (e->mask == mask) {
      return e->frame;
    }
  }
  Encoded* e = nullptr;
  if (!delta_) {
    e = &delta_.emplace(Encoded{mask, fb::FlatBufferBuilder(128), {}});
  } else {
    e = more_.emplace_back(new Encoded{mask, fb::FlatBufferBuilder(128), {}}).get();
  }
  e->frame = Encode(e->builder, false, mask);
  return e->frame;
}

std::span<const std::uint8_t> ReplicaFrames::Remove(fb::FlatBufferBuilder& b, ReplicaId id) {
  return w::FinishFrame(b, w::Body::Replica,
                        w::CreateReplicaDirect(b, id, w::ReplicaUpdateKind::Remove).Union());
}

std::span<const std::uint8_t> ReplicaFrames::Encode(fb::FlatBufferBuilder& b, bool full,
                                                    std::uint64_t mask) {
  std::vector<fb::Offset<w::ReplicaFieldInfo>> infos;
  std::vector<fb::Offset<w::ReplicaValue>> values;
  for (std::uint32_t i = 0; i < fields_.size(); ++i) {
    if (full) {
      infos.push_back(w::CreateReplicaFieldInfoDirect(
          b, fields_[i].name.c_str(), static_cast<w::ReplicaFieldType>(fields_[i].type)));
    }
    if ((mask >> i & 1) != 0) {
      const ReplicaValue& v = values_[i];
      fb::Offset<fb::Vector<std::uint8_t>> bytes;
      if (fields_[i].type == ReplicaFieldType::kBytes) {
        bytes = b.CreateVector(v.bytes);
      }
      values.push_back(w::CreateReplicaValue(b, static_cast<std::uint8_t>(i), v.i, v.f, bytes));
    }
  }
  const std::string name(full ? name_ : std::string_view());
  auto body =
      full ? w::CreateReplicaDirect(b, id_, w::ReplicaUpdateKind::Snapshot, name.c_str(), &infos,
                                    &values)
           : w::CreateReplicaDirect(b, id_, w::ReplicaUpdateKind::Delta, nullptr, nullptr, &values);
  return w::FinishFrame(b, w::Body::Replica, body.Union());
}

}  // namespace molt::kernel::net

// SPDX-License-Identifier: Apache-2.0
// ReplicaStore: the client's copy of the server's replicas, fed wire messages built here.
#include "kernel/src/client/replica_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "molt_wire_generated.h"

namespace molt::kernel::client {
namespace {

namespace w = ::molt::wire;

// A Replica message: `values` are (field, int value); `fields` (name, type) for a snapshot.
class Message {
 public:
  Message(std::uint32_t id, w::ReplicaUpdateKind kind, const std::string& name = "",
          const std::vector<std::pair<std::string, w::ReplicaFieldType>>& fields = {},
          const std::vector<std::pair<std::uint8_t, std::int64_t>>& values = {}) {
    std::vector<flatbuffers::Offset<w::ReplicaFieldInfo>> infos;
    for (const auto& [n, t] : fields) {
      infos.push_back(w::CreateReplicaFieldInfoDirect(b_, n.c_str(), t));
    }
    std::vector<flatbuffers::Offset<w::ReplicaValue>> vals;
    for (const auto& [field, value] : values) {
      vals.push_back(w::CreateReplicaValue(b_, field, value, static_cast<double>(value)));
    }
    b_.Finish(w::CreateReplicaDirect(b_, id, kind, name.empty() ? nullptr : name.c_str(),
                                     fields.empty() ? nullptr : &infos, &vals));
  }
  const w::Replica& get() const { return *flatbuffers::GetRoot<w::Replica>(b_.GetBufferPointer()); }

 private:
  flatbuffers::FlatBufferBuilder b_;
};

const std::vector<std::pair<std::string, w::ReplicaFieldType>> kBoard = {
    {"red", w::ReplicaFieldType::Int}, {"speed", w::ReplicaFieldType::Float}};

std::string Text(const std::vector<ReplicaStore::Update>& updates) {
  std::string s;
  for (const ReplicaStore::Update& u : updates) {
    s += std::to_string(u.id) + ":" + std::to_string(u.what) + ":" + std::to_string(u.field) + " ";
  }
  return s;
}

TEST(ReplicaStoreTest, ASnapshotThenDeltasThenARemove) {
  ReplicaStore store;
  std::vector<ReplicaStore::Update> updates;
  ASSERT_TRUE(
      store
          .Apply(Message(5, w::ReplicaUpdateKind::Snapshot, "board", kBoard, {{0, 3}}).get(),
                 &updates)
          .ok());
  ASSERT_TRUE(
      store.Apply(Message(5, w::ReplicaUpdateKind::Delta, "", {}, {{1, 7}, {0, 4}}).get(), &updates)
          .ok());
  EXPECT_EQ(Text(updates), "5:0:-1 5:1:1 5:1:0 ");
  Result<const ReplicaStore::Field*> red = store.FieldAt(5, 0, MOLT_CLIENT_FIELD_INT);
  ASSERT_TRUE(red.ok());
  EXPECT_EQ((*red)->i, 4);
  EXPECT_EQ(store.FieldAt(5, 1, MOLT_CLIENT_FIELD_FLOAT).value()->f, 7.0);
  EXPECT_EQ(store.FindByName("board").value(), 5u);
  molt_value v{};
  ASSERT_TRUE(store.Value("board", "speed", &v).ok());
  EXPECT_EQ(v.type, MOLT_VALUE_DOUBLE);
  EXPECT_EQ(v.as.d, 7.0);
  updates.clear();
  ASSERT_TRUE(store.Apply(Message(5, w::ReplicaUpdateKind::Remove).get(), &updates).ok());
  EXPECT_EQ(Text(updates), "5:2:-1 ");
  EXPECT_TRUE(store.Holds(5));  // readable by the listeners of its removal, until erased
  store.Erase(5);
  EXPECT_TRUE(store.empty());
}

TEST(ReplicaStoreTest, WhatTheServerCannotMeanIsIgnoredAndWhatItMustNotSendIsRefused) {
  ReplicaStore store;
  std::vector<ReplicaStore::Update> updates;
  // A delta or remove for a replica never snapshotted, a value for a field it does not have.
  ASSERT_TRUE(
      store.Apply(Message(1, w::ReplicaUpdateKind::Delta, "", {}, {{0, 1}}).get(), &updates).ok());
  ASSERT_TRUE(store.Apply(Message(1, w::ReplicaUpdateKind::Remove).get(), &updates).ok());
  ASSERT_TRUE(
      store.Apply(Message(2, w::ReplicaUpdateKind::Snapshot, "b", kBoard, {{9, 1}}).get(), &updates)
          .ok());
  EXPECT_EQ(Text(updates), "2:0:-1 ");
  std::vector<std::pair<std::string, w::ReplicaFieldType>> wide(65,
                                                                {"f", w::ReplicaFieldType::Int});
  Status s = store.Apply(Message(3, w::ReplicaUpdateKind::Snapshot, "w", wide).get(), &updates);
  EXPECT_EQ(s.message(),
            "the server sent a replica beyond the client's limits (4096 replicas, 64 fields, "
            "names of 128 bytes)");
  EXPECT_FALSE(store.Holds(3));
}

TEST(ReplicaStoreTest, ReadsNameWhatIsMissing) {
  ReplicaStore store;
  std::vector<ReplicaStore::Update> updates;
  ASSERT_TRUE(
      store.Apply(Message(5, w::ReplicaUpdateKind::Snapshot, "board", kBoard).get(), &updates)
          .ok());
  EXPECT_EQ(store.FieldAt(6, 0, MOLT_CLIENT_FIELD_INT).status().message(), "replica 6 is not held");
  EXPECT_EQ(store.FieldAt(5, 2, MOLT_CLIENT_FIELD_INT).status().message(),
            "replica \"board\" has no field 2 (it has 2)");
  EXPECT_EQ(store.FieldAt(5, 0, MOLT_CLIENT_FIELD_BYTES).status().message(),
            "replica \"board\": field \"red\" is int, not bytes");
  std::int32_t index = -1, type = -1;
  ASSERT_TRUE(store.FieldIndex(5, "speed", &index, &type).ok());
  EXPECT_EQ(index, 1);
  EXPECT_EQ(type, MOLT_CLIENT_FIELD_FLOAT);
  EXPECT_EQ(store.FieldIndex(5, "blue", &index, &type).message(),
            "replica \"board\" has no field \"blue\"");
  molt_value v{};
  EXPECT_EQ(store.Value("score", "red", &v).message(),
            "no replica \"score\" is held (not sent yet, or not to this session)");
}

TEST(ReplicaStoreTest, AReplicasOwnListenerHearsItBeforeTheCatchAll) {
  ReplicaStore store;
  std::vector<ReplicaStore::Update> updates;
  ASSERT_TRUE(
      store.Apply(Message(5, w::ReplicaUpdateKind::Snapshot, "board", kBoard).get(), &updates)
          .ok());
  auto fn_a = [](void*, molt_client_replica_t, std::int32_t, std::int32_t) {};
  auto fn_b = [](void*, molt_client_replica_t, std::int32_t, std::int32_t) {};
  int any = 0, board = 0, other = 0;
  store.Listen("", fn_a, &any);
  store.Listen("board", fn_b, &board);
  store.Listen("other", fn_b, &other);
  std::vector<ReplicaStore::Listener> l = store.ListenersOf(5);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].user_data, &board);
  EXPECT_EQ(l[1].user_data, &any);
  store.Listen("board", fn_a, &other);  // replaces
  store.Listen("", nullptr, nullptr);   // removes
  l = store.ListenersOf(5);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].user_data, &other);
  EXPECT_TRUE(store.ListenersOf(99).empty());
}

}  // namespace
}  // namespace molt::kernel::client

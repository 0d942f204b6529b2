// SPDX-License-Identifier: Apache-2.0
// ChannelTable (kernel/src/client/channel_table.h): the server's channel table as a client keeps
// it, fed tables built here: names to ids, kinds and timeouts, a nameless channel skipped, and a
// channel's bucket kept within a session only while its rate and burst stay.
#include "kernel/src/client/channel_table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "molt_wire_generated.h"

namespace molt::kernel::client {
namespace {

namespace w = ::molt::wire;

// A table of channels (id, name, kind, rate, burst), built and read back as the wire carries it.
class Table {
 public:
  struct Row {
    std::uint16_t id;
    const char* name;
    w::ChannelKind kind;
    float rate;
    float burst;
  };
  explicit Table(const std::vector<Row>& rows) {
    std::vector<flatbuffers::Offset<w::ChannelInfo>> infos;
    for (const Row& r : rows) {
      infos.push_back(
          w::CreateChannelInfoDirect(b_, r.id, r.name, r.kind, nullptr, r.rate, r.burst, 2500));
    }
    b_.Finish(w::CreateChannelsDirect(b_, 0, &infos));
  }
  std::vector<const w::ChannelInfo*> infos() const {
    const auto* v = flatbuffers::GetRoot<w::Channels>(b_.GetBufferPointer())->channels();
    return {v->begin(), v->end()};
  }

 private:
  flatbuffers::FlatBufferBuilder b_;
};

const TimePoint kTableNow = TimePoint() + std::chrono::hours(1);

TEST(ChannelTableTest, ChannelsAreFoundByNameAndIdWithTheirKindAndTimeout) {
  ChannelTable table;
  SendQueue queue;
  const Table t({{3, "chat.Say", w::ChannelKind::Intent, 10, 5},
                 {4, nullptr, w::ChannelKind::Intent, 10, 5},
                 {7, "shop.Buy", w::ChannelKind::Request, 2, 1}});
  table.Set(t.infos(), false, kTableNow, queue);
  EXPECT_EQ(table.Id("chat.Say").value(), 3);
  EXPECT_EQ(table.Id("shop.Buy").value(), 7);
  EXPECT_EQ(table.Id("nope").status().message(), "the server has no channel \"nope\"");
  EXPECT_EQ(table.Find(4), nullptr) << "a channel without a name is skipped";
  const ChannelTable::Channel* buy = table.Find(7);
  ASSERT_NE(buy, nullptr);
  EXPECT_EQ(buy->name, "shop.Buy");
  EXPECT_EQ(buy->kind, static_cast<std::int32_t>(w::ChannelKind::Request));
  EXPECT_DOUBLE_EQ(buy->timeout_seconds, 2.5);
  EXPECT_DOUBLE_EQ(buy->rate, 2);
  EXPECT_DOUBLE_EQ(buy->bucket.rate(), SendQueue::kRateShare * 2);
}

TEST(ChannelTableTest, ABucketIsKeptWithinASessionWhileItsRateStays) {
  ChannelTable table;
  SendQueue queue;
  const Table first({{3, "chat.Say", w::ChannelKind::Intent, 1, 2}});
  table.Set(first.infos(), false, kTableNow, queue);
  EXPECT_TRUE(table.Find(3)->bucket.Take(kTableNow));
  EXPECT_TRUE(table.Find(3)->bucket.Take(kTableNow));
  EXPECT_FALSE(table.Find(3)->bucket.Take(kTableNow)) << "the burst of 2 is spent";
  table.Set(first.infos(), true, kTableNow, queue);  // a Channels frame: the same channel
  EXPECT_FALSE(table.Find(3)->bucket.Take(kTableNow)) << "kept: still spent";
  table.Set(first.infos(), false, kTableNow, queue);  // a new session
  EXPECT_TRUE(table.Find(3)->bucket.Take(kTableNow)) << "a new session starts afresh";
  EXPECT_TRUE(table.Find(3)->bucket.Take(kTableNow));
  const Table faster({{3, "chat.Say", w::ChannelKind::Intent, 5, 2}});
  table.Set(faster.infos(), true, kTableNow, queue);
  EXPECT_TRUE(table.Find(3)->bucket.Take(kTableNow)) << "a new rate: a new bucket";
}

TEST(ChannelTableTest, LatestWinsTakesOnlyNewerSeqsWhichOutliveASwapButNotASession) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<w::ChannelInfo>> infos = {
      w::CreateChannelInfoDirect(b, 5, "pos", w::ChannelKind::Unreliable, nullptr, 60, 60, 0,
                                 w::ChannelPriority::High, true, 900)};
  b.Finish(w::CreateChannelsDirect(b, 0, &infos));
  const auto* v = flatbuffers::GetRoot<w::Channels>(b.GetBufferPointer())->channels();
  const std::vector<const w::ChannelInfo*> list(v->begin(), v->end());
  ChannelTable table;
  SendQueue queue;
  table.Set(list, false, kTableNow, queue);
  ChannelTable::Channel* pos = table.Find(5);
  EXPECT_EQ(pos->max_payload, 900u);
  EXPECT_TRUE(pos->latest_wins);
  EXPECT_TRUE(pos->TakeNewest(4));
  EXPECT_FALSE(pos->TakeNewest(3));
  EXPECT_FALSE(pos->TakeNewest(4));
  EXPECT_TRUE(pos->TakeNewest(0)) << "seq 0: a server without seqs";
  EXPECT_TRUE(pos->TakeNewest(9));
  EXPECT_EQ(pos->NextSeq(), 1u);
  table.Set(list, true, kTableNow, queue);  // a swap's table: the same session
  EXPECT_FALSE(table.Find(5)->TakeNewest(8));
  EXPECT_EQ(table.Find(5)->NextSeq(), 2u);
  table.Set(list, false, kTableNow, queue);  // a new session: its own seqs
  EXPECT_TRUE(table.Find(5)->TakeNewest(1));
  EXPECT_EQ(table.Find(5)->NextSeq(), 1u);
}

}  // namespace
}  // namespace molt::kernel::client

// SPDX-License-Identifier: Apache-2.0
// Channels: declaration errors, stable ids, declarative rules over real FlatBuffers payloads.
#include "kernel/src/net/channel.h"

#include <gtest/gtest.h>

#include <cmath>

#include "net_fixture.h"

namespace molt::kernel::net {
namespace {

class ChannelTest : public ::testing::Test {
 protected:
  ChannelSpec Say(std::string name) {
    ChannelSpec s;
    s.name = std::move(name);
    s.schema = "molt.test.Say";
    s.verify = VerifySay;
    return s;
  }
  Hooks hooks_;
  Bus bus_;
  ChannelRegistry reg_{hooks_, bus_};
};

TEST_F(ChannelTest, DeclarationErrorsNameTheChannelAndTheFix) {
  EXPECT_EQ(reg_.Declare(Say("")).status().message(),
            "channel name \"\" is invalid: use 1..120 characters of [A-Za-z0-9_.-]");
  EXPECT_EQ(reg_.Declare(Say(std::string(121, 'a'))).status().code(),
            Status::Code::kInvalidArgument);
  ChannelSpec no_verify = Say("a.B");
  no_verify.verify = nullptr;
  EXPECT_EQ(reg_.Declare(std::move(no_verify)).status().message(),
            "channel \"a.B\": an inbound channel needs a payload verifier (the schema's "
            "generated Verify...)");
  ChannelSpec bad_rule = Say("a.C");
  bad_rule.rules = {FieldRule::Range(0, "text", FieldType::kString, 0, 1)};
  EXPECT_EQ(reg_.Declare(std::move(bad_rule)).status().message(),
            "channel \"a.C\": rule on field \"text\": strings take MaxLength, numbers take Range "
            "and OneOf");
  ChannelSpec empty_range = Say("a.D");
  empty_range.rules = {FieldRule::Range(1, "room", FieldType::kUInt8, 5, 1)};
  EXPECT_EQ(reg_.Declare(std::move(empty_range)).status().message(),
            "channel \"a.D\": rule on field \"room\": range [5, 1] is empty");
  ChannelSpec handler = Say("a.E");
  handler.kind = ChannelKind::kRequest;
  handler.on_intent = [](Session&, std::span<Value>) {};
  EXPECT_EQ(reg_.Declare(std::move(handler)).status().message(),
            "channel \"a.E\": a request takes a request handler, not an intent handler");
  ASSERT_TRUE(reg_.Declare(Say("a.F")).ok());
  EXPECT_EQ(reg_.Declare(Say("a.F")).status().message(),
            "channel \"a.F\" is already declared; remove it first or pick another name");
  EXPECT_EQ(reg_.size(), 1u);
}

// A swap (loader/plugin_host.h): an orphaned channel is out of service, then adopted by name.
TEST_F(ChannelTest, AnOrphanIsAdoptedWithItsIdCountersAndBucketsUnlessItsRateChanges) {
  ChannelSpec spec = Say("a.F");
  spec.rate = 5;
  const ChannelId id = reg_.Declare(std::move(spec)).value();
  const std::uint32_t epoch = reg_.Find(id)->epoch();
  reg_.Find(id)->counters().accepted = 7;
  ASSERT_TRUE(reg_.Orphan(id).ok());
  EXPECT_EQ(reg_.Find(id), nullptr);  // nothing reaches it meanwhile
  EXPECT_EQ(reg_.Find("a.F"), nullptr);
  EXPECT_EQ(reg_.size(), 0u);
  EXPECT_EQ(reg_.Orphan(id).message(), "channel id 0 is not declared");
  // The same name, the same rate: the same id, counters and epoch (buckets carry on).
  spec = Say("a.F");
  spec.rate = 5;
  ASSERT_EQ(reg_.Declare(std::move(spec)).value(), id);
  EXPECT_EQ(reg_.Find(id)->epoch(), epoch);
  EXPECT_EQ(reg_.Find(id)->counters().accepted, 7u);
  EXPECT_TRUE(reg_.RemoveOrphans().empty());
  // Another rate: the buckets start over.
  ASSERT_TRUE(reg_.Orphan(id).ok());
  spec = Say("a.F");
  spec.rate = 9;
  ASSERT_EQ(reg_.Declare(std::move(spec)).value(), id);
  EXPECT_GT(reg_.Find(id)->epoch(), epoch);
  // Not adopted: removed when the swap ends, and named.
  ASSERT_TRUE(reg_.Orphan(id).ok());
  EXPECT_EQ(reg_.RemoveOrphans(), std::vector<std::string>{"a.F"});
  EXPECT_EQ(reg_.Find("a.F"), nullptr);
  // Reserve gives a name its id before it is declared; Check refuses like Declare.
  const ChannelId b = reg_.Reserve("a.G").value();
  EXPECT_EQ(reg_.Find(b), nullptr);
  EXPECT_EQ(reg_.Declare(Say("a.G")).value(), b);
  EXPECT_EQ(reg_.Check(Say("")).code(), reg_.Declare(Say("")).status().code());
}

TEST_F(ChannelTest, DefaultsAndClamps) {
  ChannelSpec r = Say("shop.Buy");
  r.kind = ChannelKind::kRequest;
  r.timeout_seconds = 1000;
  const ChannelId id = reg_.Declare(std::move(r)).value();
  const Channel* ch = reg_.Find(id);
  EXPECT_DOUBLE_EQ(ch->rate(), 30);  // spec: RateLimit = 30
  EXPECT_DOUBLE_EQ(ch->burst(), 30);
  EXPECT_TRUE(ch->default_rate());
  EXPECT_DOUBLE_EQ(ch->timeout_seconds(), 120);  // spec range 0.5 - 120 s
  EXPECT_EQ(reg_.Find("shop.Buy"), ch);
  EXPECT_FALSE(ch->guarded(hooks_));
  Connection c = hooks_.On("Request.shop.Buy", [](HookContext&) { return true; });
  EXPECT_TRUE(ch->guarded(hooks_));
}

TEST_F(ChannelTest, ANameKeepsItsIdAcrossRedeclarationAndTheEpochMoves) {
  int owner = 0;
  const ChannelId a = reg_.Declare(Say("a.A"), &owner).value();
  const ChannelId b = reg_.Declare(Say("a.B")).value();
  const std::uint64_t hash = reg_.ProtocolHash();
  const std::uint32_t epoch = reg_.Find(a)->epoch();
  reg_.RemoveOwner(&owner);
  EXPECT_EQ(reg_.Find(a), nullptr);
  EXPECT_NE(reg_.ProtocolHash(), hash);
  EXPECT_EQ(reg_.Declare(Say("a.A")).value(), a);
  EXPECT_EQ(reg_.Find(a)->epoch(), epoch + 1);
  EXPECT_EQ(reg_.ProtocolHash(), hash);  // same table, same hash
  EXPECT_TRUE(reg_.Remove(b).ok());
  EXPECT_EQ(reg_.Remove(b).message(), "channel id 1 is not declared");
}

TEST_F(ChannelTest, RulesCheckRangesSetsAndLengths) {
  ChannelSpec s = Say("chat.Say");
  s.rules = {FieldRule::MaxLength(0, "text", 5),
             FieldRule::OneOf(1, "room", FieldType::kUInt8, {0, 2, 4}),
             FieldRule::Range(2, "volume", FieldType::kFloat, 0, 1)};
  const Channel* ch = reg_.Find(reg_.Declare(std::move(s)).value());
  EXPECT_TRUE(ch->CheckRules(SayPayload("hi", 2, 0.5f)).ok());
  EXPECT_EQ(ch->CheckRules(SayPayload("toolong", 2, 0.5f)).message(),
            "field \"text\" (id 0) of molt.test.Say: length 7 exceeds 5");
  EXPECT_EQ(ch->CheckRules(SayPayload("hi", 3, 0.5f)).message(),
            "field \"room\" (id 1) of molt.test.Say: 3 is not one of the allowed values");
  EXPECT_EQ(ch->CheckRules(SayPayload("hi", 2, 1.5f)).message(),
            "field \"volume\" (id 2) of molt.test.Say: 1.5 is outside [0, 1]");
  EXPECT_FALSE(ch->CheckRules(SayPayload("hi", 2, NAN)).ok());
  EXPECT_FALSE(ch->CheckRules(SayPayload("hi", 2, INFINITY)).ok());
  // RulesHold (the per-frame check, no text) agrees with CheckRules on each of them.
  for (const auto& p :
       {SayPayload("hi", 2, 0.5f), SayPayload("toolong", 2, 0.5f), SayPayload("hi", 3, 0.5f),
        SayPayload("hi", 2, 1.5f), SayPayload("hi", 2, NAN), SayPayload("hi", 4, 1.0f)}) {
    EXPECT_EQ(ch->RulesHold(p), ch->CheckRules(p).ok());
  }
  EXPECT_TRUE(ch->RulesHold(SayPayload("hi", 4, 1.0f)));
  EXPECT_FALSE(ch->RulesHold(SayPayload("toolong", 2, 0.5f)));
}

TEST_F(ChannelTest, RulesNeverReadOutsideThePayload) {
  ChannelSpec s = Say("chat.Say");
  // A rule that names the wrong type (text is a string) still cannot read out of bounds.
  s.rules = {FieldRule::Range(0, "text", FieldType::kInt64, 0, 10)};
  const Channel* ch = reg_.Find(reg_.Declare(std::move(s)).value());
  std::vector<std::uint8_t> p = SayPayload("x");
  for (std::size_t n = 0; n <= p.size(); ++n) {
    (void)ch->CheckRules(std::span(p.data(), n));  // ASan watches every read
    // Refused at every length: cut short, the table is malformed; whole, the eight bytes read
    // as an int64 are the string's offset and length (4 + 2^32), far outside [0, 10].
    EXPECT_FALSE(ch->RulesHold(std::span(p.data(), n)));
  }
  const std::vector<std::uint8_t> hostile = {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0};
  EXPECT_EQ(ch->CheckRules(hostile).message(),
            "field \"text\" (id 0) of molt.test.Say: the table is malformed");
}

}  // namespace
}  // namespace molt::kernel::net

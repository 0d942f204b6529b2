// SPDX-License-Identifier: Apache-2.0
// The security audit and the fuzz gate (kernel/src/net/audit.h) over a network's channels and
// the kernel's hook points.
#include "kernel/src/net/audit.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"
#include "net_fixture.h"

namespace molt::kernel::net {
namespace {

class AuditTest : public NetTest {
 protected:
  std::vector<AuditFinding> Audit() { return SecurityAudit(net_->channels(), kernel_->hooks()); }
};

TEST_F(AuditTest, SecurityAuditListsFindingsMostSevereFirst) {
  std::vector<std::string> lines;
  Logger::Registration capture =
      Logger::Get().Capture([&](std::string_view line, LogLevel) { lines.emplace_back(line); });
  EXPECT_TRUE(Audit().empty());
  LogSecurityAudit(Audit());
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("security audit: clean"), std::string::npos);

  DeclareSay("shop.Grant", /*guard=*/false, /*rate=*/5);  // a handler, no validator
  ChannelSpec open;
  open.name = "chat.Emote";
  open.schema = "molt.test.Say";
  open.verify = VerifySay;
  open.open = true;
  open.on_intent = [](Session&, std::span<Value>) {};
  ASSERT_TRUE(net_->channels().Declare(std::move(open)).ok());
  DeclareSay("chat.Say", /*guard=*/true, /*rate=*/5);  // guarded, own rate: clean
  kernel_->hooks().Define("Intent.chat.Say", Hooks::Mode::kFailOpen);
  const std::vector<AuditFinding> f = Audit();
  ASSERT_EQ(f.size(), 4u);
  LogSecurityAudit(f);
  EXPECT_EQ(FormatFinding(f[0]),
            "[High] UnguardedChannel (intent shop.Grant): has no validator and is not Open, so "
            "every payload is rejected; add a validator (a Intent.shop.Grant hook handler, or "
            "rules), or declare it Open");
  EXPECT_EQ(FormatFinding(f[1]),
            "[High] FailOpenGate (Intent.chat.Say): the point is fail-open, so a crashing "
            "validator would pass the payload; define it fail-closed");
  EXPECT_EQ(FormatFinding(f[2]),
            "[Medium] OpenChannel (intent chat.Emote): is Open with no validator: any payload its "
            "verifier accepts (molt.test.Say) reaches the handler, its values checked by no rule "
            "or Intent.chat.Emote hook handler");
  EXPECT_EQ(FormatFinding(f[3]),
            "[Info] DefaultRateLimit (intent chat.Emote): rides the default rate limit (30/s); "
            "declare its own");
  EXPECT_NE(lines.back().find("security audit: 4 finding(s)\n  [High] UnguardedChannel"),
            std::string::npos)
      << lines.back();
}

// Open only lets an unvalidated payload through: an Open channel with rules or a validator is
// validated like any other, and its verifier always checks the payload's shape, so the audit
// never calls it unvalidated.
TEST_F(AuditTest, AnOpenChannelIsReportedAsVerifiedAndNotAtAllOnceItHasAValidator) {
  auto open = [&](const std::string& name, std::vector<FieldRule> rules) {
    ChannelSpec spec;
    spec.name = name;
    spec.schema = "molt.test.Say";
    spec.verify = VerifySay;
    spec.rules = std::move(rules);
    spec.rate = 5;
    spec.open = true;
    spec.on_intent = [](Session&, std::span<Value>) {};
    ASSERT_TRUE(net_->channels().Declare(std::move(spec)).ok());
  };
  open("chat.Emote", {});
  open("chat.Wave", {FieldRule::MaxLength(0, "text", 32)});
  open("chat.Nod", {});
  Connection validator = kernel_->hooks().On("Intent.chat.Nod", [](HookContext&) { return true; });
  const std::vector<AuditFinding> f = Audit();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "OpenChannel");
  EXPECT_EQ(f[0].name, "intent chat.Emote");
  EXPECT_EQ(f[0].detail.find("unvalidated"), std::string::npos) << f[0].detail;
  EXPECT_NE(f[0].detail.find("any payload its verifier accepts (molt.test.Say)"), std::string::npos)
      << f[0].detail;
  validator.Disconnect();
  EXPECT_EQ(Audit().size(), 2u) << "without its validator chat.Nod is Open and unvalidated again";
}

TEST_F(AuditTest, TheFuzzGateRunsValidatorsNeverHandlersAndFailsWhenOneThrows) {
  int handled = 0;
  ChannelSpec spec;
  spec.name = "chat.Say";
  spec.schema = "molt.test.Say";
  spec.verify = VerifySay;
  spec.rules = {FieldRule::MaxLength(0, "text", 20000),
                FieldRule::Range(2, "volume", FieldType::kFloat, -1e30, 1e30)};
  spec.on_intent = [&](Session&, std::span<Value>) { ++handled; };
  ASSERT_TRUE(net_->channels().Declare(std::move(spec)).ok());
  int validated = 0;
  Connection v = kernel_->hooks().On("Intent.chat.Say", [&](HookContext& ctx) {
    ++validated;
    auto* say = flatbuffers::GetRoot<molt::test::Say>(ctx.args[0].as.ptr);
    if (say->text() != nullptr && say->text()->size() > 5000) {
      throw std::runtime_error("text too long for my buffer");
    }
    return true;
  });
  const FuzzReport a = Fuzz(net_->channels(), kernel_->hooks(), 0, 32, 7);
  const FuzzReport b = Fuzz(net_->channels(), kernel_->hooks(), 0, 32, 7);
  EXPECT_EQ(a.channels, 1u);
  EXPECT_EQ(a.cases, 32u);
  EXPECT_EQ(a.passed + a.rejected, a.cases);
  EXPECT_EQ(a.passed, b.passed);  // deterministic per seed
  EXPECT_EQ(a.validator_errors.size(), b.validator_errors.size());
  ASSERT_FALSE(a.validator_errors.empty());
  EXPECT_EQ(a.validator_errors[0].channel, "chat.Say");
  EXPECT_NE(a.validator_errors[0].error.find("text too long for my buffer"), std::string::npos);
  EXPECT_GT(validated, 0);
  EXPECT_EQ(handled, 0);
  Status s = FuzzGate(net_->channels(), kernel_->hooks());
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("the fuzz gate failed: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(validators must reject, not throw)"), std::string::npos);
  v.Disconnect();
  Connection fixed = kernel_->hooks().On("Intent.chat.Say", [](HookContext& ctx) {
    auto* say = flatbuffers::GetRoot<molt::test::Say>(ctx.args[0].as.ptr);
    return say->text() == nullptr || say->text()->size() <= 5000;  // rejects instead
  });
  EXPECT_TRUE(FuzzGate(net_->channels(), kernel_->hooks()).ok());
}

}  // namespace
}  // namespace molt::kernel::net

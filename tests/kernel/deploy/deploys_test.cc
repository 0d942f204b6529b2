// SPDX-License-Identifier: Apache-2.0
// Deploys (deploy/deploys.h): what a deploy, promote or rollback may do, on a real registry with
// real signatures. The kernel's side of a swap is the seam: each test answers it as the kernel
// would (tests/hosts/molt_deploy_test.cc runs the whole path on a real moltd).
#include "kernel/src/deploy/deploys.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <future>
#include <mutex>
#include <thread>

#include "kernel/src/deploy/registry.h"
#include "kernel/src/loader/signing.h"
#include "tests/kernel/deploy/api_answer.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

namespace json = boost::json;
using test::Answer;
using test::CallApi;
using test::TestBuild;
using test::TestDir;
using test::WriteTestBuild;

class DeploysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = loader::GenerateKey().value();
    pub_ = loader::PublicKeyOf(key_).value();
    std::ofstream(dir_ / "keys.json")
        << json::serialize(json::object{{"public_keys", json::array{pub_.c_str()}}});
  }

  void Open(bool prod_rules, std::string branch = "prod", std::string keys = "") {
    DeploysOptions o;
    o.dir = dir_ / "registry";
    o.branch = std::move(branch);
    o.prod_rules = prod_rules;
    o.keys_file = keys.empty() && prod_rules ? dir_ / "keys.json" : keys;
    o.refusal_event_gap = refusal_event_gap_;
    o.on_refusal = [this](const std::string& kind, const std::string& reason) {
      std::lock_guard lock(mu_);
      refusal_events_.push_back(kind + ": " + reason);
    };
    deploys_ = Deploys::Open(o).value();
    deploys_->Start(
        [this](SwapTarget target, std::string reason, std::function<void(SwapOutcome)> done) {
          std::lock_guard lock(mu_);
          EXPECT_EQ(target.file, dir_ / ("registry/builds/" + target.sha256 + ".molt"));
          swaps_.push_back(target.build_id + " " + reason);
          if (hold_swaps_) {
            held_ = std::move(done);
            return;
          }
          done(outcome_);
        });
  }

  // Uploads a build like `b` and returns its BUILD object.
  json::object Upload(const TestBuild& b) {
    const std::string file = deploys_->UploadPath();
    WriteTestBuild(file, b);
    Answer a = CallApi(&admin::UploadAnswer, [&](Done<Uploaded> r) { deploys_->Upload(file, r); });
    EXPECT_TRUE(a.status == 201 || a.status == 200) << json::serialize(a.body);
    return a.body.at("build").as_object();
  }

  DeployRequest Signed(const json::object& build, std::string branch, std::uint64_t seq,
                       std::string kind = "deploy", const std::string& sign_branch = "") {
    DeployRequest r;
    r.kind = std::move(kind);
    r.branch = std::move(branch);
    r.build = std::string(build.at("sha256").as_string());
    r.seq = seq;
    r.sent_ms = 1'700'000'000'000;
    loader::DeployFields f;
    f.branch = sign_branch.empty() ? r.branch : sign_branch;
    f.build = r.build;
    f.build_id = std::string(build.at("id").as_string());
    f.seq = seq;
    f.commit = std::string(build.at("commit").as_string());
    f.channel = std::string(build.at("channel").as_string());
    f.sent_ms = r.sent_ms;
    f.reason = r.kind == "rollback" ? "1" : "";
    r.sig = loader::Sign(key_, loader::CanonicalDeploy(f)).value();
    return r;
  }

  Answer Deploy(DeployRequest r, int wait = 10) {
    return CallApi(&admin::DeployAnswer, [&](Done<DeployOutcome> reply) {
      deploys_->Deploy(std::move(r), std::chrono::seconds(wait), reply);
    });
  }
  static std::string Result(const Answer& a) {
    if (const json::value* d = a.body.if_contains("deployment")) {
      return std::string(d->at("result").as_string());
    }
    return std::string(a.body.at("result").as_string()) + ": " +
           std::string(a.body.at("error").as_string());
  }
  json::object Branches() {
    return CallApi(&admin::BranchesAnswer, [&](Done<BranchesView> r) { deploys_->Branches(r); })
        .body;
  }
  std::vector<std::string> Swaps() {
    std::lock_guard lock(mu_);
    return swaps_;
  }

  TestDir dir_;
  loader::PrivateKey key_;
  std::string pub_;
  std::unique_ptr<Deploys> deploys_;
  std::mutex mu_;
  std::vector<std::string> swaps_;
  SwapOutcome outcome_{"swapped", "", "{}", false};
  bool hold_swaps_ = false;
  std::function<void(SwapOutcome)> held_;
  std::chrono::milliseconds refusal_event_gap_{60'000};
  std::vector<std::string> refusal_events_;  // what on_refusal heard
};

TEST_F(DeploysTest, ADevServerTakesUnsignedDeploysAndSwapsOnlyItsOwnBranch) {
  Open(false, "dev");
  const json::object b = Upload({.channel = "dev"});
  DeployRequest r;
  r.branch = "dev";
  r.build = std::string(b.at("id").as_string());
  r.by = "ana";
  Answer a = Deploy(r);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(Result(a), "swapped");
  EXPECT_EQ(a.body.at("deployment").at("seq").to_number<std::int64_t>(), 1);
  EXPECT_EQ(a.body.at("deployment").at("protocol").as_string(), "first on this branch");
  EXPECT_EQ(Swaps(), std::vector<std::string>{"abc1234-000001 deploy #1"});
  // Another branch's head moves; this server does not swap.
  r.branch = "feature-x";
  a = Deploy(r);
  EXPECT_EQ(Result(a), "recorded");
  EXPECT_EQ(Swaps().size(), 1u);
  const json::object br = Branches();
  EXPECT_EQ(br.at("applied_seq").to_number<std::int64_t>(), 1);
  EXPECT_EQ(br.at("seq").to_number<std::int64_t>(), 2);
  EXPECT_EQ(br.at("rules").as_string(), "dev");
  EXPECT_EQ(br.at("branches").as_array().size(), 2u);
  // The same build again: "unchanged since #1" (the protocol hash is the head's).
  r.branch = "dev";
  a = Deploy(r);
  EXPECT_EQ(a.body.at("deployment").at("protocol").as_string(), "unchanged since #1");
}

TEST_F(DeploysTest, AProdServerTakesOnlySignedProdBuildsWithANewerSeq) {
  Open(true);
  const json::object b = Upload({});
  // Unsigned.
  DeployRequest unsigned_r;
  unsigned_r.branch = "prod";
  unsigned_r.build = std::string(b.at("sha256").as_string());
  EXPECT_EQ(Result(Deploy(unsigned_r)),
            "refused: unsigned: a prod-rules server takes only signed deploys, each naming its "
            "seq (molt deploy --key FILE signs them)");
  DeployRequest named_seq = unsigned_r;
  named_seq.seq = 1;
  EXPECT_NE(
      Result(Deploy(named_seq)).find("unsigned: this server takes deploys signed by a main key"),
      std::string::npos);
  // Signed over another branch's fields.
  EXPECT_NE(Result(Deploy(Signed(b, "prod", 1, "deploy", "dev"))).find("bad signature"),
            std::string::npos);
  // Signed.
  Answer ok = Deploy(Signed(b, "prod", 1));
  EXPECT_EQ(Result(ok), "swapped");
  EXPECT_TRUE(ok.body.at("deployment").at("signed").as_bool());
  // Replayed.
  EXPECT_EQ(Result(Deploy(Signed(b, "prod", 1))),
            "refused: seq 1 is not newer than the applied 1 (replay?)");
  // A tampered manifest is another build: the signature over the first does not cover it.
  TestBuild tampered;
  tampered.protocol = "ffffffffffffffff";
  const json::object t = Upload(tampered);
  DeployRequest swapped_build = Signed(b, "prod", 2);
  swapped_build.build = std::string(t.at("sha256").as_string());
  EXPECT_NE(Result(Deploy(swapped_build)).find("bad signature"), std::string::npos);
  // A dev-channel build, even signed and forced.
  const json::object dev = Upload({.id = "abc1234-000002", .channel = "dev", .bytes = "dev"});
  DeployRequest forced = Signed(dev, "prod", 3);
  forced.force = true;
  EXPECT_EQ(Result(Deploy(forced)),
            "refused: build abc1234-000002 is a dev-channel build: a prod-rules server takes "
            "prod builds only");
  EXPECT_EQ(Swaps().size(), 1u);
  // Every refusal is kept (the newest 10) for the API.
  const json::object branches = Branches();
  const json::array& refusals = branches.at("refusals").as_array();
  EXPECT_EQ(refusals.size(), 6u);
  EXPECT_EQ(refusals.front().at("kind").as_string(), "channel");
}

// A refusal is an event too (moltd publishes it as Kernel.DeployRefused), once per kind per gap
// (60 s; shortened here): a flood of bad deploys is one event per kind, not one each.
TEST_F(DeploysTest, RefusalsAreEventsAtMostOncePerKindPerGap) {
  refusal_event_gap_ = std::chrono::milliseconds(1500);
  Open(true);
  const json::object b = Upload({});
  DeployRequest unsigned_r;
  unsigned_r.branch = "prod";
  unsigned_r.build = std::string(b.at("sha256").as_string());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Result(Deploy(unsigned_r)).rfind("refused: unsigned", 0), 0u);
  }
  ASSERT_EQ(Result(Deploy(Signed(b, "prod", 1))), "swapped");
  EXPECT_EQ(Result(Deploy(Signed(b, "prod", 1))).rfind("refused: seq 1", 0), 0u);  // a replay
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(refusal_events_,
              (std::vector<std::string>{
                  "signature: unsigned: a prod-rules server takes only signed deploys, each "
                  "naming its seq (molt deploy --key FILE signs them)",
                  "seq: seq 1 is not newer than the applied 1 (replay?)"}));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));  // the gap passes
  Deploy(unsigned_r);
  EXPECT_EQ(Branches().at("refusals").as_array().size(), 7u);  // every one is still kept
  std::lock_guard lock(mu_);
  ASSERT_EQ(refusal_events_.size(), 3u);
  EXPECT_EQ(refusal_events_[2].rfind("signature: unsigned", 0), 0u);
}

TEST_F(DeploysTest, ARevokedKeyAndNoKeysAtAllAreRefusedNamingTheFix) {
  std::ofstream(dir_ / "revoked.json") << json::serialize(json::object{
      {"public_keys", json::array{pub_.c_str()}}, {"revoked_keys", json::array{pub_.c_str()}}});
  Open(true, "prod", dir_ / "revoked.json");
  const json::object b = Upload({});
  // Revoked, the main list is empty: only the fallback could count, and there is none.
  EXPECT_NE(Result(Deploy(Signed(b, "prod", 1))).find("this server has no trusted keys"),
            std::string::npos);
}

TEST_F(DeploysTest, ABuildThatFailedHereIsNotTakenAgainWithoutForce) {
  Open(false);
  const json::object b = Upload({});
  outcome_ = {"failed", "start: counter: boom", "{}", true};
  DeployRequest r;
  r.branch = "prod";
  r.build = std::string(b.at("sha256").as_string());
  Answer a = Deploy(r);
  EXPECT_EQ(Result(a), "failed");
  EXPECT_EQ(a.body.at("deployment").at("reason").as_string(), "start: counter: boom");
  EXPECT_EQ(Result(Deploy(r)),
            "refused: build abc1234-000001 failed on this server (start: counter: boom): it is "
            "not taken again without --force");
  outcome_ = {"swapped", "", "{}", false};
  r.force = true;
  EXPECT_EQ(Result(Deploy(r)), "swapped");
  // Success clears the mark: the next deploy needs no force.
  r.force = false;
  EXPECT_EQ(Result(Deploy(r)), "swapped");
  EXPECT_EQ(Branches().at("applied_seq").to_number<std::int64_t>(),
            3);  // only swaps that worked moved it
}

TEST_F(DeploysTest, RollbackTakesThePreviousDifferentHeadAndPromoteNeverADevBuild) {
  Open(false);
  const json::object a = Upload({});
  const json::object b = Upload({.id = "abc1234-000002", .bytes = "two"});
  for (const json::object* build : {&a, &b, &b}) {
    DeployRequest r;
    r.branch = "prod";
    r.build = std::string(build->at("sha256").as_string());
    ASSERT_EQ(Result(Deploy(r)), "swapped");
  }
  DeployRequest back;
  back.kind = "rollback";
  back.branch = "prod";
  Answer rolled = Deploy(back);
  EXPECT_EQ(Result(rolled), "swapped");
  EXPECT_EQ(rolled.body.at("deployment").at("build_id").as_string(), "abc1234-000001");
  EXPECT_EQ(rolled.body.at("deployment").at("kind").as_string(), "rollback");
  EXPECT_EQ(Swaps().back(), "abc1234-000001 rollback #4");
  // Nothing earlier on a new branch.
  back.branch = "empty";
  EXPECT_EQ(Deploy(back).status, 404);
  // A dev build promoted onto prod: refused even with --force.
  const json::object dev = Upload({.id = "abc1234-000003", .channel = "dev", .bytes = "dev"});
  DeployRequest promote;
  promote.kind = "promote";
  promote.branch = "prod";
  promote.build = std::string(dev.at("id").as_string());
  promote.force = true;
  EXPECT_NE(Result(Deploy(promote)).find("rebuild for prod"), std::string::npos);
  // Deployed with --force, a dev build may run on prod rules-off servers.
  promote.kind = "deploy";
  EXPECT_EQ(Result(Deploy(promote)), "swapped");
}

TEST_F(DeploysTest, AHealthWindowRollbackMarksTheDeploymentRolledBackAndTheBuildFailed) {
  Open(false);
  const json::object b = Upload({});
  DeployRequest r;
  r.branch = "prod";
  r.build = std::string(b.at("sha256").as_string());
  ASSERT_EQ(Result(Deploy(r)), "swapped");
  deploys_->RolledBack("another-build", "health: 3 errors");  // not the deployed one: no change
  deploys_->RolledBack("abc1234-000001", "health: 3 errors in abc1234-000001#2 within 30 s");
  Answer list = CallApi(&admin::DeploymentsAnswer, [&](Done<std::vector<Deployment>> reply) {
    deploys_->Deployments("prod", 10, reply);
  });
  const json::value& d = list.body.at("deployments").as_array().at(0);
  EXPECT_EQ(d.at("result").as_string(), "rolled_back");
  EXPECT_EQ(d.at("reason").as_string(), "health: 3 errors in abc1234-000001#2 within 30 s");
  EXPECT_NE(Result(Deploy(r)).find("failed on this server (health: 3 errors"), std::string::npos);
}

TEST_F(DeploysTest, APinHoldsAKnownBuildUntilTheBranchsNextDeployOrAnUnpin) {
  Open(false);
  const json::object a = Upload({});
  const json::object b = Upload({.id = "abc1234-000002", .bytes = "two"});
  DeployRequest r;
  r.branch = "prod";
  r.build = std::string(a.at("sha256").as_string());
  ASSERT_EQ(Result(Deploy(r)), "swapped");
  r.build = std::string(b.at("sha256").as_string());
  ASSERT_EQ(Result(Deploy(r)), "swapped");
  auto pin = [&](PinRequest p) {
    return CallApi(&admin::PinAnswer, [&](Done<PinOutcome> reply) {
      deploys_->Pin(p, std::chrono::seconds(10), reply);
    });
  };
  // Only a known deployment.
  const Answer unknown = pin({.build = "nothing"});
  EXPECT_EQ(unknown.status, 409);
  EXPECT_NE(unknown.body.at("error").as_string().find("is not a known deployment"),
            std::string::npos);
  EXPECT_EQ(pin({.unpin = true}).body.at("error").as_string(), "this server is not pinned");
  // #1's build: swapped in, the head does not move, the pin is reported.
  const Answer pinned = pin({.build = "#1", .by = "ana"});
  EXPECT_EQ(pinned.body.at("result").as_string(), "swapped");
  EXPECT_EQ(Swaps().back(), "abc1234-000001 pin by ana");
  json::object br = Branches();
  EXPECT_EQ(br.at("pin").at("build").as_string(), "abc1234-000001");
  EXPECT_EQ(br.at("branches").at(0).at("head").at("id").as_string(), "abc1234-000002");
  EXPECT_EQ(deploys_->HeadFile(),
            dir_ / ("registry/builds/" + std::string(a.at("sha256").as_string()) + ".molt"));
  // An unpin swaps the head back in.
  EXPECT_EQ(pin({.unpin = true, .by = "ana"}).body.at("result").as_string(), "swapped");
  EXPECT_EQ(Swaps().back(), "abc1234-000002 unpin by ana");
  EXPECT_TRUE(Branches().at("pin").is_null());
  // Pinned again, the branch's next deploy ends it.
  ASSERT_EQ(pin({.build = "#1"}).body.at("result").as_string(), "swapped");
  ASSERT_EQ(Result(Deploy(r)), "swapped");
  EXPECT_TRUE(Branches().at("pin").is_null());
}

TEST_F(DeploysTest, AProdServerTakesOnlyFreshSignedPins) {
  Open(true);
  const json::object a = Upload({});
  ASSERT_EQ(Result(Deploy(Signed(a, "prod", 1))), "swapped");
  auto pin = [&](PinRequest p) {
    return CallApi(&admin::PinAnswer, [&](Done<PinOutcome> reply) {
      deploys_->Pin(p, std::chrono::seconds(10), reply);
    });
  };
  const auto now =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  auto signed_pin = [&](std::uint64_t sent_ms) {
    loader::PinFields f;
    f.branch = "prod";
    f.build = std::string(a.at("sha256").as_string());
    f.by = "ana";
    f.sent_ms = sent_ms;
    return PinRequest{.build = "#1",
                      .sent_ms = sent_ms,
                      .sig = loader::Sign(key_, loader::CanonicalPin(f)).value(),
                      .by = "ana"};
  };
  EXPECT_NE(pin({.build = "#1", .sent_ms = now, .by = "ana"})
                .body.at("error")
                .as_string()
                .find("prod servers take only signed pins: unsigned"),
            std::string::npos);
  EXPECT_NE(pin(signed_pin(now - 200'000)).body.at("error").as_string().find("within 120 s"),
            std::string::npos);
  EXPECT_EQ(pin(signed_pin(now)).body.at("result").as_string(), "swapped");
}

TEST_F(DeploysTest, AWaitThatRunsOutAnswersPendingAndTheResultLandsLater) {
  Open(false);
  const json::object b = Upload({});
  hold_swaps_ = true;
  DeployRequest r;
  r.branch = "prod";
  r.build = std::string(b.at("sha256").as_string());
  Answer a = Deploy(r, 1);
  EXPECT_EQ(a.status, 202);
  EXPECT_EQ(Result(a), "pending");
  std::function<void(SwapOutcome)> done;
  {
    std::lock_guard lock(mu_);
    done = std::move(held_);
  }
  ASSERT_TRUE(done);
  done({"swapped", "", "{}", false});
  Answer list = CallApi(&admin::DeploymentsAnswer, [&](Done<std::vector<Deployment>> reply) {
    deploys_->Deployments("prod", 10, reply);
  });
  EXPECT_EQ(list.body.at("deployments").as_array().at(0).at("result").as_string(), "swapped");
}

TEST_F(DeploysTest, BootTriesTheHeadThenEarlierBuildsNeverOneThatFailedHere) {
  Open(false);
  std::vector<json::object> builds;
  for (int i = 0; i < 8; ++i) {
    builds.push_back(
        Upload({.id = "abc1234-00000" + std::to_string(i), .bytes = std::to_string(i)}));
    DeployRequest r;
    r.branch = "prod";
    r.build = std::string(builds.back().at("sha256").as_string());
    ASSERT_EQ(Result(Deploy(r)), "swapped");
  }
  deploys_.reset();
  // The next server: the head (#8), then #7 back, at most five after the head.
  DeploysOptions o;
  o.dir = dir_ / "registry";
  o.prod_rules = false;
  std::unique_ptr<Deploys> next = Deploys::Open(o).value();
  std::vector<Deploys::Candidate> c = next->BootCandidates();
  ASSERT_EQ(c.size(), 1 + Deploys::kBootTries);
  EXPECT_EQ(c[0].build_id, "abc1234-000007");
  EXPECT_EQ(c[0].what, "the head of prod (#8)");
  EXPECT_EQ(c[1].build_id, "abc1234-000006");
  EXPECT_EQ(c[1].what, "prod's #7 (last known good)");
  // The head fails to boot: marked, never a candidate again; the next one serves.
  next->BootResult(c[0], Status::FailedPrecondition("init failed"));
  next->BootResult(c[1], Status::Ok());
  next.reset();
  next = Deploys::Open(o).value();
  c = next->BootCandidates();
  EXPECT_EQ(c[0].build_id, "abc1234-000006");
}

TEST_F(DeploysTest, OnProdRulesABootCandidateWhoseSignatureNoLongerVerifiesIsSkipped) {
  Open(true);
  const json::object b = Upload({});
  ASSERT_EQ(Result(Deploy(Signed(b, "prod", 1))), "swapped");
  deploys_.reset();
  // The key is replaced: the stored deployment no longer verifies.
  const std::string other = loader::PublicKeyOf(loader::GenerateKey().value()).value();
  std::ofstream(dir_ / "keys.json", std::ios::trunc)
      << json::serialize(json::object{{"public_keys", json::array{other.c_str()}}});
  DeploysOptions o;
  o.dir = dir_ / "registry";
  o.keys_file = dir_ / "keys.json";
  EXPECT_TRUE(Deploys::Open(o).value()->BootCandidates().empty());
}

}  // namespace
}  // namespace molt::kernel::deploy

// SPDX-License-Identifier: Apache-2.0
// Signatures (deploy/signatures.h): a deploy checked against the keys file, and a key added to
// the file since the last read taken after a failed signature, at most once per retry gap (a
// manual clock: the gap is a minute).
#include "kernel/src/deploy/signatures.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>

#include "kernel/src/deploy/registry.h"
#include "kernel/src/loader/signing.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

namespace json = boost::json;
using test::TestDir;

class SignaturesTest : public ::testing::Test {
 protected:
  void Trust(const std::string& public_key) {
    std::ofstream(dir_ / "keys.json", std::ios::trunc)
        << json::serialize(json::object{{"public_keys", json::array{public_key.c_str()}}});
  }
  static Deployment Deploy() {
    Deployment d;
    d.seq = 1;
    d.branch = "prod";
    d.kind = "deploy";
    d.sent_ms = 1'700'000'000'000;
    return d;
  }
  static StoredBuild Build() {
    StoredBuild b;
    b.sha256 = std::string(64, 'a');
    b.id = "abc1234-000001";
    b.manifest = R"({"commit": "abc1234", "channel": "prod"})";
    return b;
  }

  TestDir dir_;
  Signatures::Clock::time_point now_ = Signatures::Clock::now();
  loader::PrivateKey first_ = loader::GenerateKey().value();
  loader::PrivateKey second_ = loader::GenerateKey().value();
};

TEST_F(SignaturesTest, ADeployIsCheckedOverItsCanonicalFields) {
  Trust(loader::PublicKeyOf(first_).value());
  Signatures s(dir_ / "keys.json", /*prod_rules=*/true, [this] { return now_; });
  s.Load("at boot");
  Deployment d = Deploy();
  const std::string message = Signatures::DeployMessage(d, Build());
  d.sig = loader::Sign(first_, message).value();
  EXPECT_TRUE(s.Verify(message, d.sig, "", /*reread=*/false).ok());
  d.seq = 2;  // another seq: another message, the signature no longer covers it
  EXPECT_FALSE(s.Verify(Signatures::DeployMessage(d, Build()), d.sig, "", /*reread=*/false).ok());
  EXPECT_TRUE(s.keys().main_loaded());
}

TEST_F(SignaturesTest, AKeyAddedSinceTheLastReadIsTakenAfterTheRetryGap) {
  Trust(loader::PublicKeyOf(first_).value());
  Signatures s(dir_ / "keys.json", /*prod_rules=*/true, [this] { return now_; });
  s.Load("at boot");
  const std::string message = Signatures::DeployMessage(Deploy(), Build());
  const std::string sig = loader::Sign(second_, message).value();
  Trust(loader::PublicKeyOf(second_).value());                     // the operator rotates the key
  EXPECT_FALSE(s.Verify(message, sig, "", /*reread=*/true).ok());  // read a moment ago
  now_ += Signatures::kRetryGap;
  EXPECT_FALSE(s.Verify(message, sig, "", /*reread=*/false).ok());  // not asked to re-read
  EXPECT_TRUE(s.Verify(message, sig, "", /*reread=*/true).ok());
}

TEST_F(SignaturesTest, ABrokenFileKeepsTheKeysReadBefore) {
  Trust(loader::PublicKeyOf(first_).value());
  Signatures s(dir_ / "keys.json", /*prod_rules=*/true, [this] { return now_; });
  s.Load("at boot");
  std::ofstream(dir_ / "keys.json", std::ios::trunc) << "{ not json";
  s.Refresh();
  const std::string message = Signatures::DeployMessage(Deploy(), Build());
  EXPECT_TRUE(s.Verify(message, loader::Sign(first_, message).value(), "", false).ok());
}

}  // namespace
}  // namespace molt::kernel::deploy

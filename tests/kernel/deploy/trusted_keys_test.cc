// SPDX-License-Identifier: Apache-2.0
// Trusted keys (deploy/trusted_keys.h): the deploy.keys file, read strictly, and the strict rule.
#include "kernel/src/deploy/trusted_keys.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>

#include "kernel/src/loader/signing.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy {
namespace {

using test::TestDir;

struct Pair {
  loader::PrivateKey key;
  std::string pub;
};

Pair NewPair() {
  Pair p{loader::GenerateKey().value(), ""};
  p.pub = loader::PublicKeyOf(p.key).value();
  return p;
}

void WriteKeys(const std::string& path, const boost::json::object& o) {
  std::ofstream(path) << boost::json::serialize(o);
}

TEST(TrustedKeysTest, OnceTheMainListIsReadOnlyTheMainSignatureCounts) {
  TestDir dir;
  const Pair main = NewPair(), fallback = NewPair(), other = NewPair();
  WriteKeys(dir / "keys.json", {{"public_keys", boost::json::array{main.pub.c_str()}},
                                {"fallback_public_key", fallback.pub}});
  TrustedKeys keys;
  ASSERT_TRUE(keys.Load(dir / "keys.json").ok());
  EXPECT_TRUE(keys.main_loaded());
  const std::string msg = "molt1\nprod\nabc";
  const std::string by_main = loader::Sign(main.key, msg).value();
  const std::string by_fallback = loader::Sign(fallback.key, msg).value();
  EXPECT_TRUE(keys.Verify(msg, by_main, "").ok());
  // The fallback's signature does not count once the main list is read: never either one.
  Status s = keys.Verify(msg, "", by_fallback);
  EXPECT_NE(s.message().find("unsigned: this server takes deploys signed by a main key"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(keys.Verify(msg, by_fallback, by_fallback).ok());
  // Another key, another message (another branch, seq or build).
  EXPECT_NE(
      keys.Verify(msg, loader::Sign(other.key, msg).value(), "").message().find("bad signature"),
      std::string::npos);
  EXPECT_FALSE(keys.Verify("molt1\ndev\nabc", by_main, "").ok());
  // A signature field over 100 characters is not even decoded.
  EXPECT_FALSE(keys.Verify(msg, by_main + std::string(60, 'A'), "").ok());
}

TEST(TrustedKeysTest, BeforeAnyMainKeyOnlyTheFallbackSignatureCounts) {
  TestDir dir;
  const Pair fallback = NewPair(), main = NewPair();
  WriteKeys(dir / "keys.json", {{"fallback_public_key", fallback.pub}});
  TrustedKeys keys;
  ASSERT_TRUE(keys.Load(dir / "keys.json").ok());
  EXPECT_FALSE(keys.main_loaded());
  EXPECT_TRUE(keys.any());
  const std::string msg = "molt1\nprod";
  EXPECT_TRUE(keys.Verify(msg, "", loader::Sign(fallback.key, msg).value()).ok());
  EXPECT_FALSE(keys.Verify(msg, loader::Sign(fallback.key, msg).value(), "").ok());
  EXPECT_FALSE(keys.Verify(msg, "", loader::Sign(main.key, msg).value()).ok());
}

// The file as docs/deploys.md shows it, with no fallback key: "" means none, as a missing field.
TEST(TrustedKeysTest, AnEmptyFallbackKeyMeansNone) {
  TestDir dir;
  const Pair main = NewPair();
  WriteKeys(dir / "keys.json", {{"public_keys", boost::json::array{main.pub.c_str()}},
                                {"revoked_keys", boost::json::array{}},
                                {"fallback_public_key", ""}});
  TrustedKeys keys;
  const Status loaded = keys.Load(dir / "keys.json");
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_TRUE(keys.main_loaded());
  EXPECT_TRUE(keys.ToJson().at("fallback").is_null());
  const std::string msg = "molt1\nprod";
  EXPECT_TRUE(keys.Verify(msg, loader::Sign(main.key, msg).value(), "").ok());
  // With no main key either, the server has no key at all: it refuses, naming the fix.
  WriteKeys(dir / "none.json",
            {{"public_keys", boost::json::array{}}, {"fallback_public_key", ""}});
  ASSERT_TRUE(keys.Load(dir / "none.json").ok());
  EXPECT_FALSE(keys.any());
  EXPECT_NE(keys.Verify(msg, "", "").message().find("list the public key `molt keys init` printed"),
            std::string::npos);
}

TEST(TrustedKeysTest, ARevokedKeyIsRefusedByName) {
  TestDir dir;
  const Pair old_key = NewPair(), current = NewPair();
  WriteKeys(dir / "keys.json",
            {{"public_keys", boost::json::array{old_key.pub.c_str(), current.pub.c_str()}},
             {"revoked_keys", boost::json::array{old_key.pub.c_str()}}});
  TrustedKeys keys;
  ASSERT_TRUE(keys.Load(dir / "keys.json").ok());
  const std::string msg = "molt1\nprod";
  const Status s = keys.Verify(msg, loader::Sign(old_key.key, msg).value(), "");
  EXPECT_EQ(s.message(), "signed by a revoked key (" + loader::Fingerprint(old_key.pub) +
                             "): sign with the current main key");
  EXPECT_TRUE(keys.Verify(msg, loader::Sign(current.key, msg).value(), "").ok());
  EXPECT_EQ(keys.ToJson().at("revoked").as_array().size(), 1u);
  EXPECT_EQ(keys.ToJson().at("main").as_array().size(), 1u);
}

TEST(TrustedKeysTest, NoKeysRefusesEveryDeployNamingTheFix) {
  TrustedKeys keys;
  ASSERT_TRUE(keys.Load("").ok());
  EXPECT_FALSE(keys.any());
  EXPECT_NE(keys.Verify("x", "", "").message().find("list the public key `molt keys init` printed"),
            std::string::npos);
}

TEST(TrustedKeysTest, ABrokenFileIsRefusedNamingTheProblemAndTheOldKeysStay) {
  TestDir dir;
  const Pair main = NewPair();
  WriteKeys(dir / "keys.json", {{"public_keys", boost::json::array{main.pub.c_str()}}});
  TrustedKeys keys;
  ASSERT_TRUE(keys.Load(dir / "keys.json").ok());
  auto refusal = [&](const std::string& text) {
    std::ofstream(dir / "bad.json") << text;
    const Status s = keys.Load(dir / "bad.json");
    EXPECT_FALSE(s.ok()) << text;
    return s.message();
  };
  EXPECT_NE(refusal("{").find("is not a JSON object"), std::string::npos);
  EXPECT_NE(refusal("{\"public_key\": []}").find("unknown key \"public_key\""), std::string::npos);
  EXPECT_NE(refusal("{\"public_keys\": [\"abc\"]}").find("not a base64 Ed25519 public key"),
            std::string::npos);
  EXPECT_NE(refusal("{\"fallback_public_key\": 7}").find("fallback_public_key"), std::string::npos);
  EXPECT_NE(keys.Load(dir / "missing.json").message().find("cannot be read"), std::string::npos);
  EXPECT_NE(keys.Load(dir.path()).message().find("cannot be read"), std::string::npos);
  // The keys read before are still the ones in force.
  const std::string msg = "m";
  EXPECT_TRUE(keys.Verify(msg, loader::Sign(main.key, msg).value(), "").ok());
  EXPECT_EQ(keys.file(), dir / "keys.json");
}

}  // namespace
}  // namespace molt::kernel::deploy

// SPDX-License-Identifier: Apache-2.0
// SigningKeys (hosts/molt/signing_keys.h): the key files from the flags or the environment, and
// signatures the servers' keys verify.
#include "hosts/molt/signing_keys.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace loader = kernel::loader;

class SigningKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "signing_keys_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::unsetenv("MOLT_KEY_FILE");
    ::unsetenv("MOLT_FALLBACK_KEY_FILE");
  }
  void TearDown() override {
    ::unsetenv("MOLT_KEY_FILE");
    ::unsetenv("MOLT_FALLBACK_KEY_FILE");
    fs::remove_all(dir_);
  }
  // A new key written to `name`; its public key.
  std::string NewKey(const std::string& name) {
    loader::PrivateKey key = loader::GenerateKey().value();
    EXPECT_TRUE(loader::WritePrivateKey(dir_ + "/" + name, key).ok());
    return loader::PublicKeyOf(key).value();
  }
  // The flags a signing verb declares, parsed from `args`.
  static cxxopts::ParseResult Flags(std::vector<std::string> args) {
    cxxopts::Options o("molt deploy", "");
    o.add_options()("key", "", cxxopts::value<std::string>())("fallback-key", "",
                                                              cxxopts::value<std::string>());
    args.insert(args.begin(), "deploy");
    std::vector<char*> argv;
    for (std::string& a : args) {
      argv.push_back(a.data());
    }
    return o.parse(static_cast<int>(argv.size()), argv.data());
  }

  std::string dir_;
};

TEST_F(SigningKeysTest, WithoutKeysNothingIsSigned) {
  kernel::Result<SigningKeys> keys = SigningKeys::Read(Flags({}));
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  EXPECT_FALSE(keys->any());
  json::object body{{"branch", "dev"}};
  keys->SignInto("message", body);
  EXPECT_EQ(body, (json::object{{"branch", "dev"}}));
}

TEST_F(SigningKeysTest, BothKeysSignAndTheirPublicKeysVerify) {
  const std::string main = NewKey("main.key");
  const std::string fallback = NewKey("fallback.key");
  kernel::Result<SigningKeys> keys = SigningKeys::Read(
      Flags({"--key", dir_ + "/main.key", "--fallback-key", dir_ + "/fallback.key"}));
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  EXPECT_TRUE(keys->any());
  json::object body;
  keys->SignInto("deploy|dev|...", body);
  ASSERT_TRUE(body.contains("sig") && body.contains("sig_fallback")) << json::serialize(body);
  EXPECT_TRUE(loader::Verify(main, "deploy|dev|...", body.at("sig").as_string()));
  EXPECT_TRUE(loader::Verify(fallback, "deploy|dev|...", body.at("sig_fallback").as_string()));
  EXPECT_FALSE(loader::Verify(main, "another message", body.at("sig").as_string()));
}

TEST_F(SigningKeysTest, TheEnvironmentNamesTheKeyWhenNoFlagDoes) {
  const std::string main = NewKey("main.key");
  ::setenv("MOLT_KEY_FILE", (dir_ + "/main.key").c_str(), 1);
  kernel::Result<SigningKeys> keys = SigningKeys::Read(Flags({}));
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  json::object body;
  keys->SignInto("m", body);
  EXPECT_TRUE(loader::Verify(main, "m", body.at("sig").as_string()));
  EXPECT_FALSE(body.contains("sig_fallback"));
}

TEST_F(SigningKeysTest, AKeyFileThatCannotBeReadIsTheError) {
  NewKey("main.key");
  kernel::Result<SigningKeys> keys =
      SigningKeys::Read(Flags({"--key", dir_ + "/main.key", "--fallback-key", dir_ + "/none"}));
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find(dir_ + "/none"), std::string::npos)
      << keys.status().message();
}

}  // namespace
}  // namespace molt::cli

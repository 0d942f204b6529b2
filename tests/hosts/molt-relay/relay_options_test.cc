// SPDX-License-Identifier: Apache-2.0
// RelayOptions (hosts/molt-relay/relay_options.h): molt-relay's flags read and checked; --help
// explains each with its unit and default; every mistake names its flag and exits 2.
#include "hosts/molt-relay/relay_options.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace molt::relay {
namespace {

using std::chrono::milliseconds;

// ParseRelayOptions over `args` (molt-relay's own name first); what it printed in `out` and
// `err`.
std::variant<int, RelayOptions> ParseRelay(std::vector<std::string> args,
                                           std::string* out = nullptr, std::string* err = nullptr) {
  args.insert(args.begin(), "molt-relay");
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::variant<int, RelayOptions> r = ParseRelayOptions(static_cast<int>(argv.size()), argv.data());
  const std::string o = ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  if (out != nullptr) {
    *out = o;
  }
  if (err != nullptr) {
    *err = e;
  }
  return r;
}

TEST(RelayOptionsTest, OnlyToGivesTheDefaults) {
  auto r = ParseRelay({"--to", "127.0.0.1:7777"});
  ASSERT_TRUE(std::holds_alternative<RelayOptions>(r));
  const RelayOptions& o = std::get<RelayOptions>(r);
  EXPECT_EQ(o.listen.host, "127.0.0.1");
  EXPECT_EQ(o.listen.port, 0);
  EXPECT_EQ(o.to.host, "127.0.0.1");
  EXPECT_EQ(o.to.port, 7777);
  EXPECT_EQ(o.impairment.drop, 0);
  EXPECT_EQ(o.impairment.duplicate, 0);
  EXPECT_EQ(o.impairment.reorder, 0);
  EXPECT_EQ(o.impairment.delay, milliseconds(0));
  EXPECT_EQ(o.impairment.jitter, milliseconds(0));
  EXPECT_EQ(o.seed, 1u);
  EXPECT_EQ(o.rebind_after, 0u);
  EXPECT_EQ(o.duration, milliseconds(0));
}

TEST(RelayOptionsTest, EveryFlagIsRead) {
  auto r = ParseRelay({"--listen",       "[::1]:7000", "--to",       "localhost:7777",
                       "--drop",         "0.05",       "--delay-ms", "40",
                       "--jitter-ms",    "10",         "--reorder",  "0.25",
                       "--duplicate",    "1",          "--seed",     "18446744073709551615",
                       "--rebind-after", "100",        "--duration", "2.5"});
  ASSERT_TRUE(std::holds_alternative<RelayOptions>(r));
  const RelayOptions& o = std::get<RelayOptions>(r);
  EXPECT_EQ(o.listen.host, "::1");
  EXPECT_EQ(o.listen.port, 7000);
  EXPECT_EQ(o.to.host, "localhost");
  EXPECT_EQ(o.impairment.drop, 0.05);
  EXPECT_EQ(o.impairment.delay, milliseconds(40));
  EXPECT_EQ(o.impairment.jitter, milliseconds(10));
  EXPECT_EQ(o.impairment.reorder, 0.25);
  EXPECT_EQ(o.impairment.duplicate, 1);
  EXPECT_EQ(o.seed, 18446744073709551615u);
  EXPECT_EQ(o.rebind_after, 100u);
  EXPECT_EQ(o.duration, milliseconds(2500));
}

TEST(RelayOptionsTest, HelpExplainsEveryFlagWithItsDefaultAndExitsZero) {
  std::string out;
  auto r = ParseRelay({"--help"}, &out);
  ASSERT_TRUE(std::holds_alternative<int>(r));
  EXPECT_EQ(std::get<int>(r), 0);
  for (const char* flag : {"--listen HOST:PORT", "--to HOST:PORT", "--drop P", "--delay-ms D",
                           "--jitter-ms J", "--reorder P", "--duplicate P", "--seed N",
                           "--rebind-after N", "--duration SECONDS", "--help"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag << "\n" << out;
  }
  for (const char* said : {"probability (0..1)", "milliseconds", "(default: 127.0.0.1:0)",
                           "(default: 0)", "(default: 1)", "listening on", "Examples:"}) {
    EXPECT_NE(out.find(said), std::string::npos) << said << "\n" << out;
  }
}

TEST(RelayOptionsTest, ToIsRequired) {
  std::string err;
  auto r = ParseRelay({"--drop", "0.1"}, nullptr, &err);
  ASSERT_TRUE(std::holds_alternative<int>(r));
  EXPECT_EQ(std::get<int>(r), 2);
  EXPECT_EQ(err,
            "molt-relay: --to is required: the server's HOST:PORT\nTry 'molt-relay --help'.\n");
}

TEST(RelayOptionsTest, EachBadValueNamesItsFlagAndExitsTwo) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--drop", "1.5"},
      {"--drop", "-0.1"},
      {"--drop", "a lot"},
      {"--reorder", "2"},
      {"--duplicate", "nan"},
      {"--delay-ms", "-1"},
      {"--delay-ms", "1.5"},
      {"--delay-ms", "600001"},
      {"--jitter-ms", "x"},
      {"--seed", "-1"},
      {"--seed", "18446744073709551616"},
      {"--rebind-after", "-3"},
      {"--duration", "-1"},
      {"--duration", "soon"},
      {"--listen", "127.0.0.1"},
      {"--listen", "::1:7000"},
      {"--to", "127.0.0.1:0"},
      {"--to", "127.0.0.1:99999"},
  };
  for (const auto& [flag, value] : bad) {
    SCOPED_TRACE(flag + " " + value);
    std::vector<std::string> args = {"--to", "127.0.0.1:7777", flag, value};
    if (flag == "--to") {
      args = {flag, value};
    }
    std::string err;
    auto r = ParseRelay(args, nullptr, &err);
    ASSERT_TRUE(std::holds_alternative<int>(r));
    EXPECT_EQ(std::get<int>(r), 2);
    EXPECT_EQ(err.rfind("molt-relay: " + flag + ": \"" + value + "\" is not ", 0), 0u) << err;
  }
}

TEST(RelayOptionsTest, AnUnknownFlagOrAMissingValueIsNamed) {
  std::string err;
  auto r = ParseRelay({"--to", "127.0.0.1:7777", "--loss", "0.1"}, nullptr, &err);
  ASSERT_TRUE(std::holds_alternative<int>(r));
  EXPECT_EQ(std::get<int>(r), 2);
  EXPECT_NE(err.find("loss"), std::string::npos) << err;
  r = ParseRelay({"--to", "127.0.0.1:7777", "--drop"}, nullptr, &err);
  ASSERT_TRUE(std::holds_alternative<int>(r));
  EXPECT_EQ(std::get<int>(r), 2);
  EXPECT_NE(err.find("drop"), std::string::npos) << err;
}

TEST(RelayOptionsTest, AStrayArgumentIsRefused) {
  std::string err;
  auto r = ParseRelay({"--to", "127.0.0.1:7777", "0.1"}, nullptr, &err);
  ASSERT_TRUE(std::holds_alternative<int>(r));
  EXPECT_EQ(std::get<int>(r), 2);
  EXPECT_NE(err.find("unexpected argument \"0.1\""), std::string::npos) << err;
}

}  // namespace
}  // namespace molt::relay

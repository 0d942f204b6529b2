// SPDX-License-Identifier: Apache-2.0
// BotOptions (hosts/molt-bot/bot_options.h): molt-bot's flags parsed and checked, each mistake
// told as molt-bot always told it, and turned into a client's options.
#include "hosts/molt-bot/bot_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace molt::bot {
namespace {

// ParseBotOptions over `args` (molt-bot's own name first); what it printed in `out` and `err`.
std::variant<int, BotOptions> Parse(std::vector<std::string> args, std::string* out = nullptr,
                                    std::string* err = nullptr) {
  args.insert(args.begin(), "molt-bot");
  std::vector<char*> argv;
  for (std::string& a : args) {
    argv.push_back(a.data());
  }
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::variant<int, BotOptions> r = ParseBotOptions(static_cast<int>(argv.size()), argv.data());
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

TEST(BotOptionsTest, NoFlagsAreTenClientsSendingTenASecondForTenSeconds) {
  auto r = Parse({});
  ASSERT_TRUE(std::holds_alternative<BotOptions>(r));
  const BotOptions& o = std::get<BotOptions>(r);
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 7777);
  EXPECT_EQ(o.clients, 10);
  EXPECT_EQ(o.rate, 10);
  EXPECT_EQ(o.duration, 10);
  EXPECT_EQ(o.join_rate, 20);
  EXPECT_EQ(o.user_prefix, "bot");
  EXPECT_EQ(o.payload, kEmptyTable);
  EXPECT_FALSE(o.controllers.has_value());
  EXPECT_FALSE(o.sends()) << "no channel and no --verify: nothing to send";
  EXPECT_EQ(o.Scheme(), "");
}

TEST(BotOptionsTest, HelpPrintsTheFlagsAndExamplesAndExitsZero) {
  std::string out;
  auto r = Parse({"--help"}, &out);
  ASSERT_TRUE(std::holds_alternative<int>(r));
  EXPECT_EQ(std::get<int>(r), 0);
  EXPECT_NE(out.find("molt-bot: simulated clients for a Molt server"), std::string::npos) << out;
  EXPECT_NE(out.find("--join-rate"), std::string::npos) << out;
  EXPECT_NE(out.find("\nExample:\n  molt-bot --port 7777 --clients 50"), std::string::npos) << out;
  EXPECT_NE(out.find("--udp   (moltd --udp 127.0.0.1:7779)"), std::string::npos) << out;
}

TEST(BotOptionsTest, UdpWalksAtUpToTheWalkPluginsRateOverTcpOrTls) {
  auto r = Parse({"--udp", "--rate", "60", "--tls"});
  ASSERT_TRUE(std::holds_alternative<BotOptions>(r));
  const BotOptions& o = std::get<BotOptions>(r);
  EXPECT_TRUE(o.udp);
  EXPECT_EQ(o.rate, kWalkMaxRate);
  EXPECT_TRUE(o.sends()) << "a walk sends with no channel named";
  EXPECT_EQ(o.ClientOptions().flags, MOLT_CLIENT_TLS) << "a TLS session is offered a link too";
  EXPECT_FALSE(std::get<BotOptions>(Parse({})).udp);
}

TEST(BotOptionsTest, EachMistakeExitsTwoSayingWhy) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--clients", "0"},
       "molt-bot: --clients must be 1..100000, --rate >= 0, --duration > 0, --port 1..65535\n"},
      {{"--port", "70000"},
       "molt-bot: --clients must be 1..100000, --rate >= 0, --duration > 0, --port 1..65535\n"},
      {{"--duration", "0"},
       "molt-bot: --clients must be 1..100000, --rate >= 0, --duration > 0, --port 1..65535\n"},
      {{"--verify", "--intent", "counter.Add"},
       "molt-bot: --verify sends on counter.Echo only: drop --intent and --request\n"},
      {{"--join-rate", "0"}, "molt-bot: --join-rate must be above 0\n"},
      {{"--tls-ca", "ca.pem"}, "molt-bot: --tls-ca and --tls-name go with --tls\n"},
      {{"--payload", "/nonexistent/payload"},
       "molt-bot: cannot read --payload /nonexistent/payload\n"},
      {{"--udp", "--verify"},
       "molt-bot: --udp sends on walk.Move only: drop --verify, --intent and --request\n"},
      {{"--udp", "--request", "scores.Get"},
       "molt-bot: --udp sends on walk.Move only: drop --verify, --intent and --request\n"},
      {{"--udp", "--rate", "61"},
       "molt-bot: --udp: the walk plugin takes at most 60 steps a second per client "
       "(walk.Move's rate limit): --rate must be 60 or less\n"},
      {{"--udp", "--ws"},
       "molt-bot: --udp needs a datagram link, and a WebSocket client is offered none (it keeps "
       "everything on its reliable link): drop --ws\n"},
  };
  for (const auto& [args, told] : cases) {
    std::string err;
    auto r = Parse(args, nullptr, &err);
    ASSERT_TRUE(std::holds_alternative<int>(r)) << args[0];
    EXPECT_EQ(std::get<int>(r), 2) << args[0];
    EXPECT_EQ(err, told);
  }
  std::string err;
  auto r = Parse({"--no-such-flag"}, nullptr, &err);
  EXPECT_EQ(std::get<int>(r), 2);
  EXPECT_NE(err.find("\nTry 'molt-bot --help'.\n"), std::string::npos) << err;
}

TEST(BotOptionsTest, TlsAndWebSocketBecomeTheClientsFlags) {
  auto r = Parse({"--tls", "--tls-ca", "ca.pem", "--ws", "--host", "game.example.com"});
  ASSERT_TRUE(std::holds_alternative<BotOptions>(r));
  const BotOptions& o = std::get<BotOptions>(r);
  const molt_client_options c = o.ClientOptions();
  EXPECT_EQ(c.struct_size, sizeof(molt_client_options));
  EXPECT_EQ(c.flags, MOLT_CLIENT_TLS | MOLT_CLIENT_WEBSOCKET);
  ASSERT_NE(c.tls_ca_file, nullptr);
  EXPECT_STREQ(c.tls_ca_file, "ca.pem");
  EXPECT_EQ(c.tls_server_name, nullptr) << "the host is the name by default";
  EXPECT_EQ(o.Scheme(), "wss://");
  auto plain = Parse({"--ws"});
  EXPECT_EQ(std::get<BotOptions>(plain).Scheme(), "ws://");
  EXPECT_EQ(std::get<BotOptions>(plain).ClientOptions().flags, MOLT_CLIENT_WEBSOCKET);
}

TEST(BotOptionsTest, ChannelsPayloadAndControllersAreKept) {
  const std::string payload =
      ::testing::TempDir() + "bot_options_payload_" + std::to_string(::getpid());
  std::ofstream(payload, std::ios::binary) << std::string("\x01\x00\x02", 3);
  auto r = Parse({"--intent", "counter.Add", "--intent", "counter.Add", "--request", "scores.Get",
                  "--payload", payload, "--controllers", "", "-c", "3", "-r", "0.5"});
  ::unlink(payload.c_str());
  ASSERT_TRUE(std::holds_alternative<BotOptions>(r));
  const BotOptions& o = std::get<BotOptions>(r);
  EXPECT_EQ(o.intents, (std::vector<std::string>{"counter.Add", "counter.Add"}));
  EXPECT_EQ(o.requests, (std::vector<std::string>{"scores.Get"}));
  EXPECT_EQ(o.payload, (std::vector<std::uint8_t>{1, 0, 2}));
  ASSERT_TRUE(o.controllers.has_value()) << "given, even empty: the first client tries it";
  EXPECT_EQ(*o.controllers, "");
  EXPECT_EQ(o.clients, 3);
  EXPECT_EQ(o.rate, 0.5);
  EXPECT_TRUE(o.sends());
}

}  // namespace
}  // namespace molt::bot

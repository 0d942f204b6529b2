// SPDX-License-Identifier: Apache-2.0
// A real moltd process: started, signalled, killed, its output and exit code checked. No timing
// assertions: waits are generous upper bounds that only stop a broken run from hanging.
#include <gtest/gtest.h>
#include <molt/molt.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "scores_generated.h"
#include "test_client.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_pki.h"

namespace {

namespace fs = std::filesystem;
using molt::test::kFixtures;
using molt::test::kMoltd;
using molt::test::kPlugins;
using molt::test::Process;

class MoltdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "moltd_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(data_);
  }
  // Waits until moltd serves (the bundled plugins) and returns the port it logged, or "".
  static std::string ServingPort(Process& p) {
    return molt::test::ServingPort(p, molt::test::kBundledPlugins);
  }
  // Positions of each needle in the output, in order; -1 when missing.
  std::vector<std::size_t> Positions(const Process& p, const std::vector<std::string>& needles) {
    std::vector<std::size_t> at;
    for (const auto& n : needles) {
      at.push_back(p.output().find(n));
    }
    return at;
  }
  // "[plugin@<generation>]" as the process logged it: the generation's name is derived from the
  // build's content ("local-<hash>#1").
  static std::string Label(const std::string& output, const std::string& plugin) {
    const std::size_t at = output.find("[" + plugin + "@local-");
    return at == std::string::npos ? "[" + plugin + "@?]"
                                   : output.substr(at, output.find(']', at) - at + 1);
  }
  std::string data_;

 public:
  const std::string& data() const { return data_; }
  std::string Config(const std::string& json) {
    const std::string path = data_ + ".json";
    std::ofstream(path) << json;
    return path;
  }
};

TEST_F(MoltdTest, ServesTheBundledPluginsAndClosesInReverseBootOrderOnSigterm) {
  Process p(
      {kMoltd, "--admin", "127.0.0.1:0", "--plugins", kPlugins, "--data", data_, "--port", "0"});
  ASSERT_TRUE(
      p.WaitFor("Server booted " + std::to_string(molt::test::kBundledPlugins) + " services"))
      << p.output();
  ASSERT_TRUE(p.WaitFor("SIGTERM or SIGINT closes")) << p.output();
  EXPECT_FALSE(fs::is_empty(data_ + "/run"));  // this server's private plugin copies
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  const std::vector<std::string> order = {
      "[molt] closing (SIGTERM): stopping " + std::to_string(molt::test::kBundledPlugins) +
          " services",
      Label(p.output(), "uptime") + " closing after",  // a Kernel.Closing subscriber
      "[molt] stopped service \"uptime\"",
      Label(p.output(), "rounds") + " stopped after",
      "[molt] stopped service \"rounds\"",
      Label(p.output(), "scores") + " stopped with",
      "[molt] stopped service \"scores\"",
      "[molt] stopped (SIGTERM): every service stopped in",
      "[molt] exited cleanly"};
  std::vector<std::size_t> at = Positions(p, order);
  for (std::size_t i = 0; i < at.size(); ++i) {
    ASSERT_NE(at[i], std::string::npos) << order[i] << "\n" << p.output();
    if (i > 0) {
      EXPECT_LT(at[i - 1], at[i]) << order[i - 1] << " / " << order[i];
    }
  }
  EXPECT_TRUE(fs::is_empty(data_ + "/run")) << "plugin copies left behind";
}

TEST_F(MoltdTest, SigintClosesToo) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--log-format", "json",
             "--port", "0"});
  ASSERT_TRUE(p.WaitFor("Server booted")) << p.output();
  p.Signal(SIGINT);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  EXPECT_NE(p.output().find("\"scope\":\"molt\",\"msg\":\"closing (SIGINT): stopping " +
                            std::to_string(molt::test::kBundledPlugins) + " services\""),
            std::string::npos)
      << p.output();
}

TEST_F(MoltdTest, ASecondSignalDuringTheCloseIsIgnored) {
  const std::string config = Config(R"({"plugins": {"fx_sleepy": {"stop_sleep_seconds": 2}}})");
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kFixtures + "/close", "-d", data_, "-c",
             config, "--port", "0"});
  ASSERT_TRUE(p.WaitFor("Server booted 1 services")) << p.output();
  p.Signal(SIGTERM);
  ASSERT_TRUE(p.WaitFor("closing (SIGTERM)")) << p.output();
  p.Signal(SIGINT);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  EXPECT_NE(
      p.output().find(
          "[molt] close (SIGINT) ignored: a close is already running (SIGKILL forces an exit)"),
      std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("stopped service \"fx_sleepy\""), std::string::npos);
}

// A stop() past the close budget is cut at the budget (it gives each stop what is left of it),
// named, and moltd says the close was not clean with its exit code.
TEST_F(MoltdTest, AStopPastTheCloseBudgetIsCutNamedAndExitsFour) {
  const std::string config = Config(R"({"plugins": {"fx_sleepy": {"stop_sleep_seconds": 60}}})");
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kFixtures + "/close", "-d", data_, "-c",
             config, "--close-budget", "0.5", "--port", "0"});
  ASSERT_TRUE(p.WaitFor("Server booted 1 services")) << p.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 4) << p.output();  // kExitStopOverran
  // Named with its generation and how long it had.
  const std::size_t named =
      p.output().find("service \"fx_sleepy\": stop failed: plugin \"fx_sleepy@");
  ASSERT_NE(named, std::string::npos) << p.output();
  EXPECT_NE(p.output().find("\": stop() did not return within 0.5 s: abandoned", named),
            std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find(", 1 stop(s) cut at their deadline: fx_sleepy (0.5 s)"),
            std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("[molt] exited with 4: the close was not clean"), std::string::npos)
      << p.output();
  EXPECT_EQ(p.output().find("stopped service \"fx_sleepy\""), std::string::npos);
}

TEST_F(MoltdTest, RefusedPluginsStopTheBootWithEveryReason) {
  Process p(
      {kMoltd, "--admin", "127.0.0.1:0", "-p", kFixtures + "/bad", "-d", data_, "--port", "0"});
  EXPECT_EQ(p.Wait(), 1);
  EXPECT_NE(p.output().find("[molt] cannot start: 10 of 10 plugin files refused:"),
            std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("fx_abi_major.so\": built for ABI 2.0"), std::string::npos);
}

TEST_F(MoltdTest, ConfigurationTyposAreNamed) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0", "-c",
             Config(R"({"server": {"tickrate": 5}})")});
  EXPECT_EQ(p.Wait(), 1);
  EXPECT_NE(p.output().find("cannot start: config file \"" + data_ +
                            ".json\": unknown key \"server.tickrate\" (known: "),
            std::string::npos)
      << p.output();
  Process q({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0",
             "--log-level", "loud"});
  EXPECT_EQ(q.Wait(), 1);
  EXPECT_NE(q.output().find("log level \"loud\" is unknown: use debug, info, warn, error or off"),
            std::string::npos)
      << q.output();
}

TEST_F(MoltdTest, HelpExplainsItselfAndBadFlagsExitTwo) {
  Process help({kMoltd, "--admin", "127.0.0.1:0", "--help"});
  EXPECT_EQ(help.Wait(), 0);
  for (const char* s :
       {"Usage:", "--plugins", "--data", "--config", "--tick-rate", "--close-budget", "close phase",
        "--admin", "--self-test", "--check", "DATA/admin.token", "Examples:"}) {
    EXPECT_NE(help.output().find(s), std::string::npos) << s;
  }
  Process version({kMoltd, "--admin", "127.0.0.1:0", "--version"});
  EXPECT_EQ(version.Wait(), 0);
  EXPECT_EQ(version.output(), "moltd " MOLT_VERSION " (plugin ABI 1." +
                                  std::to_string(MOLT_ABI_VERSION_MINOR) + ")\n");
  Process bad({kMoltd, "--admin", "127.0.0.1:0", "--frobnicate"});
  EXPECT_EQ(bad.Wait(), 2);
  EXPECT_NE(bad.output().find("Try 'moltd --help'."), std::string::npos) << bad.output();
}

TEST_F(MoltdTest, AKilledServerLeavesNothingThatBlocksTheNextStart) {
  {
    Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
    ASSERT_TRUE(p.WaitFor("Server booted")) << p.output();
    p.Signal(SIGKILL);
    EXPECT_EQ(p.Wait(), 128 + SIGKILL);
  }
  ASSERT_FALSE(fs::is_empty(data_ + "/run"));  // the dead server's plugin copies
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  ASSERT_TRUE(p.WaitFor("Server booted")) << p.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  EXPECT_TRUE(fs::is_empty(data_ + "/run"));  // the stale directory was removed at start
}

TEST_F(MoltdTest, ServesClientsThroughThePluginsChannelsAndSaysGoodbyeOnClose) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string serving = ServingPort(p);
  ASSERT_FALSE(serving.empty()) << p.output();
  EXPECT_NE(p.output().find("security audit: clean"), std::string::npos) << p.output();
  const auto port = static_cast<std::uint16_t>(std::stoi(serving));

  molt::test::TestClient c(port);
  molt::test::Frame welcome = c.Hello("ada");
  ASSERT_EQ(welcome.type(), molt::wire::Body::Welcome);
  std::uint16_t get = 0xffff;
  for (const auto* ch : *welcome.envelope()->body_as_Welcome()->channels()) {
    if (ch->name()->str() == "scores.Get") {
      get = ch->id();
    }
  }
  ASSERT_NE(get, 0xffff) << "the scores plugin declares scores.Get";
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::scores::CreateQuery(b, b.CreateString("")));  // empty: my own total
  c.Request(get, 1, std::span(b.GetBufferPointer(), b.GetSize()));
  molt::test::Frame r = c.NextOf(molt::wire::Body::Response);
  ASSERT_EQ(r.type(), molt::wire::Body::Response);
  EXPECT_EQ(r.envelope()->body_as_Response()->status(), 0);  // MOLT_OK
  const auto* payload = r.envelope()->body_as_Response()->payload();
  const auto* total = flatbuffers::GetRoot<molt::scores::Total>(payload->data());
  EXPECT_EQ(total->user()->str(), "ada");
  EXPECT_EQ(total->total(), 0);

  p.Signal(SIGTERM);
  molt::test::Frame bye = c.NextOf(molt::wire::Body::Bye);
  ASSERT_EQ(bye.type(), molt::wire::Body::Bye);
  EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "ServerShutdown");
  EXPECT_EQ(p.Wait(), 0) << p.output();
  // The close order: the intake stops, every service stops (a stop() still reaches the
  // players), and only then do the sessions end.
  const auto at_close = Positions(p, {"closing (SIGTERM)", "stopped service \"scores\"",
                                      "ending 1 connection(s) (1 sessions)"});
  EXPECT_LT(at_close[0], at_close[1]) << p.output();
  EXPECT_LT(at_close[1], at_close[2]) << p.output();
  EXPECT_NE(at_close[2], std::string::npos) << p.output();
}

// CPU seconds (user and system) the process has used, from /proc.
double CpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) {  // utime, stime
      ticks += std::stod(field);
    }
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// moltd with few descriptors: connections past them are refused at once with a reason, the
// players already in keep playing, the server does not spin on the connections it cannot take,
// and once descriptors are free a newcomer joins. `config` and `limit` pick the path: the reserve
// kept for the server's own files (the default), or accept itself failing (no reserve).
void ExpectDescriptorsRunOutGracefully(MoltdTest& t, int limit, const std::string& config,
                                       const std::string& why) {
  namespace w = molt::wire;
  const std::string data = t.data();
  std::vector<std::string> args = {kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins,
                                   "-d",   data,      "--port",      "0"};
  if (!config.empty()) {
    args.insert(args.end(), {"--config", t.Config(config)});
  }
  std::string command = "ulimit -n " + std::to_string(limit) + " && exec";
  for (const std::string& a : args) {
    command += " " + a;
  }
  Process p({"/bin/sh", "-c", command});
  const std::string serving = molt::test::ServingPort(p, molt::test::kBundledPlugins);
  ASSERT_FALSE(serving.empty()) << p.output();
  EXPECT_NE(p.output().find("file descriptors: " + std::to_string(limit)), std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("cannot hold net.max_sessions (10000)"), std::string::npos);
  const auto port = static_cast<std::uint16_t>(std::stoi(serving));
  std::vector<std::unique_ptr<molt::test::TestClient>> in;
  molt::test::Frame refused;
  for (int i = 0; i < 80 && refused.type() != w::Body::Refuse; ++i) {
    auto c = std::make_unique<molt::test::TestClient>(port);
    molt::test::Frame f = c->Hello("player" + std::to_string(i));
    if (f.type() == w::Body::Welcome) {
      in.push_back(std::move(c));
    } else {
      refused = f;
    }
  }
  ASSERT_EQ(refused.type(), w::Body::Refuse) << p.output();
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->reason(), w::RefuseReason::ServerFull);
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->text()->str(),
            "the server is at capacity; retry");
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->retry_after_ms(), 5000u);
  EXPECT_GE(in.size(), 10u);
  for (int i = 0; i < 20; ++i) {  // more newcomers, each refused the same way
    molt::test::TestClient late(port);
    EXPECT_EQ(late.Hello("late").type(), w::Body::Refuse);
  }
  // Nothing spins: a second of (generous) CPU while nothing is asked of it.
  const double cpu = CpuSeconds(p.pid());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_LT(CpuSeconds(p.pid()) - cpu, 0.5);
  for (auto& c : in) {  // the players in are served throughout
    c->Ping(9, 1);
    EXPECT_EQ(c->NextOf(w::Body::Pong).type(), w::Body::Pong);
  }
  // The operator is told why, once: the other refusals are counted into a later line.
  ASSERT_TRUE(p.WaitFor(why)) << p.output();
  const std::size_t first = p.output().find(why);
  EXPECT_EQ(p.output().find(why, first + 1), std::string::npos) << p.output();
  for (int i = 0; i < 3; ++i) {  // three leave: their descriptors are free again
    in.back()->Bye();
    in.pop_back();
  }
  bool joined = false;
  for (int i = 0; i < 50 && !joined; ++i) {
    molt::test::TestClient newcomer(port);
    joined = newcomer.Hello("newcomer").type() == w::Body::Welcome;
    if (!joined) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_TRUE(joined) << p.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  EXPECT_NE(p.output().find("more connection(s) (OutOfDescriptors)"), std::string::npos)
      << p.output();
}

// The reserve (net.descriptor_reserve, 32): refused while descriptors remain for the server's
// own files, so the database, a swap's plugins and the logs never find none.
TEST_F(MoltdTest, ConnectionsPastTheDescriptorReserveAreRefusedAndThePlayersInServed) {
  ExpectDescriptorsRunOutGracefully(
      *this, 64, "",
      " connections hold every descriptor but the 32 kept for the server's own files "
      "(RLIMIT_NOFILE 64, net.descriptor_reserve)");
}

// Without a reserve, accept itself fails (EMFILE): the spare descriptor refuses what waits.
TEST_F(MoltdTest, AcceptFailingForLackOfDescriptorsRefusesNewcomersAndServesThePlayersIn) {
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizers' own checks need descriptors (UBSan's vptr check probes memory with a pipe()
  // and reports a valid object as corrupt when it cannot make one), so a process starved of them
  // cannot run under the sanitizers; the reserve test above covers that build.
  GTEST_SKIP() << "a process with no descriptor left cannot run its sanitizer checks";
#endif
  ExpectDescriptorsRunOutGracefully(
      *this, 40, R"({"net": {"descriptor_reserve": 0}})",
      "(OutOfDescriptors): accept failed: Too many open files; the server may hold 40 "
      "descriptors (RLIMIT_NOFILE)");
}

TEST_F(MoltdTest, APlainCClientTalksToIt) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  Process client({MOLT_C_CLIENT_PATH, port});
  EXPECT_EQ(client.Wait(), 0) << client.output();
  EXPECT_NE(client.output().find("scores.Get answered"), std::string::npos) << client.output();
  EXPECT_NE(client.output().find("counter replica: value 0"), std::string::npos) << client.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

TEST_F(MoltdTest, MoltBotLoadsItAndReports) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  Process bot({MOLT_BOT_PATH, "--port", port, "--clients", "4", "--duration", "1.2", "--rate", "5",
               "--request", "scores.Get"});
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  EXPECT_NE(bot.output().find("4/4 clients joined"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find("[1s] 4/4 connected"), std::string::npos) << bot.output();
  // 4 clients x 5/s x 1.2 s: about 24 requests, every one answered (scores.Get allows 10/s).
  const std::size_t done = bot.output().find("molt-bot: done: 4/4 connected  intents 0 sent 0");
  ASSERT_NE(done, std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find(" 0 rejected 0 limited 0 timed out", done), std::string::npos)
      << bot.output();
  EXPECT_NE(bot.output().find("disconnects 0", done), std::string::npos) << bot.output();
  Process help({MOLT_BOT_PATH, "--help"});
  EXPECT_EQ(help.Wait(), 0);
  EXPECT_NE(help.output().find("--request"), std::string::npos);
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

// An idle connected client costs nothing: molt-bot sleeps on its clients' sockets and timers
// (client API 4) and wakes for pings only, about a few times a second, where a frame loop would
// wake a thousand times.
// moltd serving TLS from the command line, molt-bot verifying it; the flags' mistakes and a
// server open to the network without TLS are named.
// --ws: browsers' transport, wired from the flag and the configuration file to the bundled
// plugins: plain HTTP is answered, an origin outside the list is refused, and a client that
// upgrades joins with the same Hello as over TCP, one frame per binary message.
TEST_F(MoltdTest, ServesWebSocketClientsOnTheWsPort) {
  const std::string config =
      Config(R"({"net": {"websocket_origins": "https://a.example, https://b.example"}})");
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0", "--ws",
             "127.0.0.1:0", "-c", config});
  ASSERT_FALSE(ServingPort(p).empty()) << p.output();
  const std::string banner = "WebSocket clients on ws://127.0.0.1:";
  const std::size_t at = p.output().find(banner);
  ASSERT_NE(at, std::string::npos) << p.output();
  EXPECT_NE(p.output().find("(origins: https://a.example, https://b.example)"), std::string::npos)
      << p.output();
  const auto port = static_cast<std::uint16_t>(std::stoi(p.output().substr(at + banner.size())));
  // Everything the server sends until it closes or `limit` passes.
  auto read_all = [](molt::test::TestClient& c, std::size_t want = SIZE_MAX) {
    std::string got;
    char buf[4096];
    while (got.size() < want) {
      pollfd pfd{c.fd(), POLLIN, 0};
      if (::poll(&pfd, 1, 3000) <= 0) {
        break;
      }
      const ssize_t n = ::recv(c.fd(), buf, sizeof(buf), 0);
      if (n <= 0) {
        break;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  };
  {
    molt::test::TestClient c(port);
    ASSERT_TRUE(c.SendRaw("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    EXPECT_EQ(read_all(c).substr(0, 31), "HTTP/1.1 426 Upgrade Required\r\n") << p.output();
  }
  const std::string upgrade =
      "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: ";
  {
    molt::test::TestClient c(port);
    ASSERT_TRUE(c.SendRaw(upgrade + "https://evil.example\r\n\r\n"));
    const std::string answer = read_all(c);
    EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 403") << answer;
    EXPECT_NE(answer.find("origin \"https://evil.example\" is not allowed here"), std::string::npos)
        << answer;
  }
  molt::test::TestClient c(port);
  ASSERT_TRUE(c.SendRaw(upgrade + "https://b.example\r\n\r\n"));
  const std::string switched = read_all(c, 129);  // the 101 answer is 129 bytes
  ASSERT_EQ(switched.substr(0, 12), "HTTP/1.1 101") << switched;
  // The Hello as one masked binary message (a zero mask leaves the bytes as they are).
  const std::vector<std::uint8_t> hello = molt::test::TestClient::HelloFrame("ada");
  ASSERT_LT(hello.size(), 126u);  // the 7-bit length form
  std::vector<std::uint8_t> message = {
      0x82, static_cast<std::uint8_t>(0x80 | hello.size()), 0, 0, 0, 0};
  message.insert(message.end(), hello.begin(), hello.end());
  ASSERT_TRUE(c.SendRaw(message));
  std::string reply = read_all(c, 4);
  ASSERT_GE(reply.size(), 4u);
  EXPECT_EQ(static_cast<std::uint8_t>(reply[0]), 0x82);  // a binary message, unmasked
  const std::size_t len7 = static_cast<std::uint8_t>(reply[1]) & 0x7F;
  ASSERT_LT(len7, 127u);
  const std::size_t head = len7 == 126 ? 4 : 2;
  const std::size_t len =
      len7 == 126 ? static_cast<std::uint8_t>(reply[2]) << 8 | static_cast<std::uint8_t>(reply[3])
                  : len7;
  if (reply.size() < head + len) {  // a Ping may follow it in the same read
    reply += read_all(c, head + len - reply.size());
  }
  ASSERT_GE(reply.size(), head + len);
  molt::test::Frame welcome;
  welcome.bytes.assign(reply.begin() + static_cast<std::ptrdiff_t>(head),
                       reply.begin() + static_cast<std::ptrdiff_t>(head + len));
  EXPECT_EQ(welcome.type(), molt::wire::Body::Welcome);
  // The admin API says how the session is linked.
  const std::string admin = "admin endpoint on http://127.0.0.1:";
  const auto admin_port = static_cast<std::uint16_t>(
      std::stoi(p.output().substr(p.output().find(admin) + admin.size())));
  std::string token;
  std::ifstream(data_ + "/admin.token") >> token;
  const molt::test::HttpResult sessions =
      molt::test::HttpCall(admin_port, "GET", "/api/v1/sessions", token);
  EXPECT_NE(sessions.body.find("\"transport\":\"websocket\""), std::string::npos) << sessions.body;
  // Its link's tier (the NetGovernor): good until its pings say otherwise.
  EXPECT_NE(sessions.body.find("\"tier\":\"good\""), std::string::npos) << sessions.body;
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

// The link governor's limits out of order stop the start, naming both settings and why; one out
// of its range is refused by name as any setting.
TEST_F(MoltdTest, LinkGovernorLimitsThatContradictEachOtherStopTheStart) {
  Process swapped({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0",
                   "--config", Config(R"({"net": {"governor_good_rtt_ms": 300}})")});
  EXPECT_EQ(swapped.Wait(), 1) << swapped.output();
  EXPECT_NE(swapped.output().find("cannot start: net.governor_good_rtt_ms (300) must be at least 0 "
                                  "and at most net.governor_poor_rtt_ms (250)"),
            std::string::npos)
      << swapped.output();
  Process range({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0",
                 "--config", Config(R"({"net": {"governor_poor_loss": 2}})")});
  EXPECT_NE(range.Wait(), 0) << range.output();
  EXPECT_NE(range.output().find("net.governor_poor_loss"), std::string::npos) << range.output();
}

TEST_F(MoltdTest, ServesOverTlsToAVerifyingMoltBotAndNamesTlsMistakes) {
  fs::create_directories(data_ + "-pki");
  const molt::test::TestPki pki(data_ + "-pki");
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0",
             "--tls-cert", pki.path("server.pem"), "--tls-key", pki.path("server.key")});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  EXPECT_NE(p.output().find(" (TLS 1.2 and 1.3)"), std::string::npos) << p.output();
  Process bot({MOLT_BOT_PATH, "--port", port, "--clients", "3", "--duration", "1.2", "--rate", "5",
               "--request", "scores.Get", "--tls", "--tls-ca", pki.path("ca.pem")});
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  EXPECT_NE(bot.output().find("3/3 clients joined"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find(" 0 rejected 0 limited 0 timed out"), std::string::npos)
      << bot.output();
  Process untrusted({MOLT_BOT_PATH, "--port", port, "--clients", "1", "--duration", "0.5",
                     "--tls"});  // the system's CAs do not know the test CA
  EXPECT_EQ(untrusted.Wait(), 1) << untrusted.output();
  EXPECT_NE(untrusted.output().find("TLS: the server's certificate is refused: unable to get "
                                    "local issuer certificate"),
            std::string::npos)
      << untrusted.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();

  Process half({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0",
                "--tls-cert", pki.path("server.pem")});
  EXPECT_EQ(half.Wait(), 1) << half.output();
  EXPECT_NE(half.output().find("cannot start: TLS needs both a certificate and its private key"),
            std::string::npos)
      << half.output();
  Process open({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0",
                "--bind", "0.0.0.0"});
  ASSERT_TRUE(open.WaitFor(molt::test::kServingBundled)) << open.output();
  EXPECT_NE(open.output().find("0.0.0.0 is not a loopback address and TLS is off"),
            std::string::npos)
      << open.output();
  open.Signal(SIGTERM);
  EXPECT_EQ(open.Wait(), 0) << open.output();
  fs::remove_all(data_ + "-pki");
}

// molt-bot --ws over wss:// (the WebSocket port under TLS, verifying the test CA): every client
// numbers its echoes while moltd swaps its plugins, and every echo comes back once and in order.
TEST_F(MoltdTest, MoltBotOverWssVerifiesEveryEchoThroughASwap) {
  fs::create_directories(data_ + "-pki");
  const molt::test::TestPki pki(data_ + "-pki");
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0", "--ws",
             "127.0.0.1:0", "--tls-cert", pki.path("server.pem"), "--tls-key",
             pki.path("server.key")});
  ASSERT_FALSE(ServingPort(p).empty()) << p.output();
  const std::string banner = "WebSocket clients on wss://127.0.0.1:";
  const std::size_t at = p.output().find(banner);
  ASSERT_NE(at, std::string::npos) << p.output();
  const std::string port = std::to_string(std::stoi(p.output().substr(at + banner.size())));
  Process bot({MOLT_BOT_PATH, "--ws", "--tls", "--tls-ca", pki.path("ca.pem"), "--port", port,
               "--clients", "10", "--rate", "10", "--duration", "3", "--verify"});
  ASSERT_TRUE(bot.WaitFor("10/10 clients joined wss://127.0.0.1:" + port + "/")) << bot.output();
  p.Signal(SIGHUP);
  ASSERT_TRUE(p.WaitFor("\"swap\":\"ok\",\"reason\":\"SIGHUP\"")) << p.output();
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  EXPECT_NE(bot.output().find("done: 10/10 connected"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find("disconnects 0"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find(" echoed 0 lost 0 duplicated 0 out of order"), std::string::npos)
      << bot.output();
  // Without --tls the same port is refused with a reason naming the transport.
  Process plain({MOLT_BOT_PATH, "--ws", "--port", port, "--clients", "1", "--duration", "0.5"});
  EXPECT_EQ(plain.Wait(), 1) << plain.output();
  EXPECT_NE(plain.output().find("a WebSocket port (moltd --ws)? One under TLS (wss://) needs "
                                "MOLT_CLIENT_TLS."),
            std::string::npos)
      << plain.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  fs::remove_all(data_ + "-pki");
}

TEST_F(MoltdTest, AnIdleMoltBotSleepsBetweenPings) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  Process bot({MOLT_BOT_PATH, "--port", port, "--clients", "1", "--rate", "0", "--duration", "2"});
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  const std::string marker = " s of running (";
  const std::size_t at = bot.output().find(marker);
  ASSERT_NE(at, std::string::npos) << bot.output();
  const std::size_t wakeups_at = bot.output().find("), ", at);
  ASSERT_NE(wakeups_at, std::string::npos) << bot.output();
  const int wakeups = std::stoi(bot.output().substr(wakeups_at + 3));
  EXPECT_GT(wakeups, 0) << bot.output();
  EXPECT_LT(wakeups, 40) << bot.output();  // 2 s of pings; a 1 kHz frame loop: ~2000
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

// SIGHUP reloads the plugin directory as a new generation while clients keep talking to it: the
// swap is logged as one JSON line, and no client is disconnected or left without an answer.
TEST_F(MoltdTest, SighupSwapsThePluginsUnderLiveClients) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  const std::string first = Label(p.output(), "rounds");
  Process bot({MOLT_BOT_PATH, "--port", port, "--clients", "5", "--rate", "8", "--duration", "3",
               "--request", "counter.Get", "--intent", "counter.Add"});
  ASSERT_TRUE(bot.WaitFor("5/5 clients joined")) << bot.output();
  p.Signal(SIGHUP);
  ASSERT_TRUE(p.WaitFor("\"swap\":\"ok\",\"reason\":\"SIGHUP\"")) << p.output();
  p.Signal(SIGHUP);
  ASSERT_TRUE(p.WaitFor("#3\",\"ok\":true")) << p.output();
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  EXPECT_NE(bot.output().find("done: 5/5 connected"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find("0 rejected 0 limited 0 timed out"), std::string::npos)
      << bot.output();
  EXPECT_NE(bot.output().find("disconnects 0"), std::string::npos) << bot.output();
  // The third generation of the same build serves; its plugins log under their new identity.
  EXPECT_NE(first.find("#1]"), std::string::npos) << first;
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  const std::string third = first.substr(0, first.size() - 3) + "#3]";
  EXPECT_NE(p.output().find(third), std::string::npos) << p.output();
}

// What a process holds, from /proc: mappings of our private plugin copies (distinct files),
// open descriptors, resident kilobytes.
struct Footprint {
  std::size_t copies = 0;
  std::size_t fds = 0;
  long rss_kb = 0;
};
Footprint FootprintOf(pid_t pid) {
  Footprint f;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream maps(proc + "/maps");
  std::set<std::string> files;
  for (std::string line; std::getline(maps, line);) {
    const std::size_t at = line.find("/run/moltd-");
    if (at != std::string::npos) {
      files.insert(line.substr(at));
    }
  }
  f.copies = files.size();
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(proc + "/fd")) {
    ++f.fds;
  }
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      f.rss_kb = std::stol(line.substr(6));
    }
  }
  return f;
}

// The product's promise, end to end: 100 swaps of a real moltd (SIGHUP) while 50 clients number
// their messages on the counter plugin's echo channel. No client is disconnected, and every echo
// comes back once and in order. The old library copies leave the process: 100 swaps leave no
// growth in mapped copies, descriptors or (outside the sanitizers, whose allocator keeps freed
// memory) resident memory.
TEST_F(MoltdTest, HundredSwapsUnderFiftyVerifyingClientsLoseNothing) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  Process bot({MOLT_BOT_PATH, "--port", port, "--clients", "50", "--rate", "10", "--duration",
               "600", "--verify"});
  ASSERT_TRUE(bot.WaitFor("50/50 clients joined")) << bot.output();
  Footprint early;
  for (int i = 1; i <= 100; ++i) {
    p.Signal(SIGHUP);
    // The report of swap i names generation #i+1.
    ASSERT_TRUE(p.WaitFor("#" + std::to_string(i + 1) + "\",\"previous\"")) << p.output();
    if (i == 20) {
      early = FootprintOf(p.pid());
    }
  }
  const Footprint late = FootprintOf(p.pid());
  EXPECT_EQ(p.output().find("\"swap\":\"failed\""), std::string::npos) << p.output();
  bot.Signal(SIGINT);
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  EXPECT_NE(bot.output().find("done: 50/50 connected"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find("disconnects 0"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find(" echoed 0 lost 0 duplicated 0 out of order"), std::string::npos)
      << bot.output();
  // At most two generations are mapped (the serving one and the one its window keeps).
  EXPECT_GE(early.copies, static_cast<std::size_t>(
                              molt::test::kBundledPlugins));  // the measure sees the copies at all
  EXPECT_LE(late.copies, 2 * static_cast<std::size_t>(molt::test::kBundledPlugins));
  EXPECT_LE(late.copies, early.copies);
  EXPECT_LE(late.fds, early.fds + 2);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LE(late.rss_kb, early.rss_kb + 16 * 1024) << early.rss_kb << " kB then " << late.rss_kb;
#endif
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

// moltd --watch: a plugin author rebuilds a library and the new code is swapped in live.
TEST_F(MoltdTest, WatchSwapsInARebuiltLibrary) {
  const std::string dir = data_ + "-watched";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string v1 = kFixtures + "/gen/v1/fx_gen_v1.so";
  fs::copy_file(v1, dir + "/fx_gen.so");
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", dir, "-d", data_, "--port", "0", "--watch"});
  ASSERT_FALSE(molt::test::ServingPort(p, 1).empty()) << p.output();
  ASSERT_TRUE(p.WaitFor("watching " + dir)) << p.output();
  // "The build": write the new library beside, then move it into place, as a linker would.
  fs::copy_file(kFixtures + "/gen/v2/fx_gen_v2.so", dir + "/fx_gen.so.tmp");
  fs::rename(dir + "/fx_gen.so.tmp", dir + "/fx_gen.so");
  ASSERT_TRUE(p.WaitFor("\"reason\":\"watch: fx_gen.so changed\"")) << p.output();
  EXPECT_NE(p.output().find("\"swap\":\"ok\",\"reason\":\"watch: fx_gen.so changed\""),
            std::string::npos)
      << p.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  fs::remove_all(dir);
}

// A build that passes its health window is kept under the data directory; when the plugin
// directory later fails to boot, moltd boots that build instead and says so.
TEST_F(MoltdTest, BootsTheLastKnownGoodBuildWhenThePluginDirectoryFails) {
  const std::string dir = data_ + "-plugins";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const fs::directory_entry& e : fs::directory_iterator(kPlugins)) {
    if (e.path().extension() == ".so") {
      fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
    }
  }
  // The shortest health window there is (5 s, as for a manifest).
  const std::string config = Config(R"({"server": {"health_window_seconds": 5}})");
  {
    Process p(
        {kMoltd, "--admin", "127.0.0.1:0", "-p", dir, "-d", data_, "--port", "0", "-c", config});
    ASSERT_TRUE(p.WaitFor("is the last known good (kept in")) << p.output();
    p.Signal(SIGTERM);
    EXPECT_EQ(p.Wait(), 0) << p.output();
  }
  EXPECT_TRUE(fs::exists(data_ + "/builds/last-known-good/molt-build.json"));
  fs::copy_file(kFixtures + "/bad/fx_no_entry.so", dir + "/fx_no_entry.so");
  Process p(
      {kMoltd, "--admin", "127.0.0.1:0", "-p", dir, "-d", data_, "--port", "0", "-c", config});
  EXPECT_FALSE(ServingPort(p).empty()) << p.output();
  EXPECT_NE(
      p.output().find("does not boot: 1 of " + std::to_string(molt::test::kBundledPlugins + 1) +
                      " plugin files refused"),
      std::string::npos)
      << p.output();
  EXPECT_NE(p.output().find("booting the last known good build from"), std::string::npos);
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
  // A directory that loads but does not start: the last known good is swapped in for it.
  fs::remove(dir + "/fx_no_entry.so");
  fs::copy_file(kFixtures + "/gen/fail_start/fx_gen_fail_start.so", dir + "/fx_gen.so");
  Process q(
      {kMoltd, "--admin", "127.0.0.1:0", "-p", dir, "-d", data_, "--port", "0", "-c", config});
  EXPECT_FALSE(ServingPort(q).empty()) << q.output();
  EXPECT_NE(q.output().find("does not boot: service \"fx_gen\": start failed: start refused"),
            std::string::npos)
      << q.output();
  EXPECT_TRUE(q.WaitFor("\"swap\":\"ok\",\"reason\":\"boot: last known good\"")) << q.output();
  q.Signal(SIGTERM);
  EXPECT_EQ(q.Wait(), 0) << q.output();
  fs::remove_all(dir);
}

// The counter pair end to end: moltd serves the counter service; molt-bot's first client runs
// the counter_hud controller, which asks for the count (a request waited on in a process), adds
// its visit (an intent), and logs what the replica then says.
TEST_F(MoltdTest, TheCounterPairWorksEndToEnd) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0"});
  const std::string port = ServingPort(p);
  ASSERT_FALSE(port.empty()) << p.output();
  for (const char* visitor : {"#1", "#2"}) {
    Process bot({MOLT_BOT_PATH, "--port", port, "--clients", "1", "--rate", "0", "--duration",
                 "0.5", "--controllers", MOLT_CONTROLLER_DIR});
    EXPECT_EQ(bot.Wait(), 0) << bot.output();
    EXPECT_NE(bot.output().find("Client booted 1 controllers"), std::string::npos) << bot.output();
    const std::string hud = Label(bot.output(), "counter_hud");
    EXPECT_NE(bot.output().find(hud + " welcome, visitor " + std::string(visitor)),
              std::string::npos)
        << bot.output();
    const std::string count = std::string(visitor).substr(1);
    EXPECT_NE(bot.output().find(hud + " counter: " + count + " (last: bot0)"), std::string::npos)
        << bot.output();
  }
  // moltd refuses a controller in its plugin directory, naming the fix.
  Process wrong(
      {kMoltd, "--admin", "127.0.0.1:0", "-p", MOLT_CONTROLLER_DIR, "-d", data_, "--port", "0"});
  EXPECT_NE(wrong.Wait(), 0);
  EXPECT_NE(wrong.output().find("is a controller, but this host loads services only"),
            std::string::npos)
      << wrong.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// molt-relay (hosts/molt-relay/main.cc) as a test starts it: a child process in front of an echo
// server. It says where it listens on its first line; SIGTERM, SIGINT or the end of --duration
// prints the counts as one line of JSON and exits 0; a bad flag exits 2 naming it; a port in use
// exits 1 saying so.
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"
#include "tests/support/udp_echo_server.h"
#include "tests/support/udp_peer.h"

namespace molt::relay {
namespace {

const std::string kListening = "molt-relay: listening on 127.0.0.1:";

// The port a molt-relay child printed on its first line, or 0.
int ListeningPort(test::Process& relay) {
  if (!relay.WaitFor("\n")) {
    return 0;
  }
  const std::string& out = relay.output();
  return out.rfind(kListening, 0) == 0 ? std::stoi(out.substr(kListening.size())) : 0;
}

// The last line of `output` that is a JSON object, or "".
std::string StatsLine(const std::string& output) {
  const std::size_t at = output.rfind("\n{");
  if (at == std::string::npos) {
    return "";
  }
  const std::size_t end = output.find('\n', at + 1);
  return output.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

void ExpectStatsAfterEchoes(int signo) {
  test::UdpEchoServer echo;
  ASSERT_TRUE(echo.is_open());
  test::Process relay(
      {test::kMoltRelay, "--to", "127.0.0.1:" + std::to_string(echo.port()), "--seed", "3"});
  const int port = ListeningPort(relay);
  ASSERT_NE(port, 0) << relay.output();
  test::UdpPeer client;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(client.SendTo("0123456789", static_cast<std::uint16_t>(port)));
    const std::optional<test::UdpDatagram> back = client.Receive();
    ASSERT_TRUE(back.has_value()) << relay.output();
    EXPECT_EQ(back->payload, "0123456789");
  }
  relay.Signal(signo);
  EXPECT_EQ(relay.Wait(), 0) << relay.output();
  const std::string direction =
      "{\"in\":10,\"out\":10,\"dropped\":0,\"duplicated\":0,\"reordered\":0,\"send_errors\":0,"
      "\"pending\":0,\"bytes_in\":100,\"bytes_out\":100}";
  EXPECT_EQ(StatsLine(relay.output()), "{\"to_server\":" + direction + ",\"to_client\":" +
                                           direction + ",\"clients\":1,\"rebinds\":0}")
      << relay.output();
}

TEST(MoltRelayTest, SigtermPrintsTheCountsOfWhatWasSentAndExitsZero) {
  ExpectStatsAfterEchoes(SIGTERM);
}

TEST(MoltRelayTest, SigintEndsTheRunTheSameWay) { ExpectStatsAfterEchoes(SIGINT); }

TEST(MoltRelayTest, DurationEndsTheRunAndExitsZero) {
  test::Process relay({test::kMoltRelay, "--to", "127.0.0.1:9", "--duration", "0.2"});
  EXPECT_EQ(relay.Wait(), 0) << relay.output();
  EXPECT_EQ(relay.output().rfind(kListening, 0), 0u) << relay.output();
  EXPECT_NE(StatsLine(relay.output()).find("\"clients\":0"), std::string::npos) << relay.output();
}

TEST(MoltRelayTest, ABadFlagExitsTwoNamingIt) {
  test::Process relay({test::kMoltRelay, "--to", "127.0.0.1:9", "--jitter-ms", "-5"});
  EXPECT_EQ(relay.Wait(), 2);
  EXPECT_NE(relay.output().find("--jitter-ms"), std::string::npos) << relay.output();
}

TEST(MoltRelayTest, AListenPortInUseExitsOneSayingSo) {
  test::UdpPeer taken;
  const std::string at = "127.0.0.1:" + std::to_string(taken.port());
  test::Process relay({test::kMoltRelay, "--listen", at, "--to", "127.0.0.1:9"});
  EXPECT_EQ(relay.Wait(), 1);
  EXPECT_EQ(relay.output(),
            "molt-relay: --listen: cannot bind " + at + ": Address already in use\n");
}

}  // namespace
}  // namespace molt::relay

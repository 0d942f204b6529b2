// SPDX-License-Identifier: Apache-2.0
// File: tests/hosts/moltd_datagram_test.cc
//
// The datagram link on a real moltd (--udp) with the bundled plugins, a player on libmolt_client
// as an app links it, walking by the walk plugin's predicted walk.Move and hearing its unreliable
// walk.Pos by UDP. A hot swap (SIGHUP) in the middle of the stream keeps the session and its
// datagram link (the same address, no move, no reconnect): every move is acknowledged, positions
// keep coming, and they still come by the datagram link. No timing assertions: waits are upper
// bounds.
#include <gtest/gtest.h>
#include <molt/client.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/test_paths.h"
#include "walk_generated.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using molt::test::kMoltd;
using molt::test::kPlugins;
using molt::test::Process;
using Clock = std::chrono::steady_clock;

// What the player saw.
struct Walker {
  std::uint16_t pos = 0;
  std::vector<std::string> states;
  int positions = 0;
  std::map<std::uint32_t, int> resolved;  // seq -> times
  int rolled_back = 0;
};

std::vector<std::uint8_t> WalkMove(int dx) {
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::walk::CreateMove(b, static_cast<std::int8_t>(dx), 0));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

class MoltdDatagramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "moltd_datagram_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(data_);
  }
  void TearDown() override {
    if (client_ != nullptr) {
      molt_client_destroy(client_);
    }
  }
  // The admin API's sessions, as JSON.
  json::value Sessions() {
    std::string token;
    std::ifstream(data_ + "/admin.token") >> token;
    return json::parse(molt::test::HttpCall(admin_port_, "GET", "/api/v1/sessions", token).body);
  }
  // A number from /metrics: the sample `line` starts with, or -1.
  double Metric(const std::string& line) {
    const std::string body = molt::test::HttpCall(admin_port_, "GET", "/metrics", "").body;
    const std::size_t at = body.find("\n" + line + " ");
    return at == std::string::npos ? -1 : std::stod(body.substr(at + line.size() + 2));
  }
  void Step() { ASSERT_EQ(molt_client_step(client_, 0.002), MOLT_OK); }

  std::string data_;
  std::uint16_t admin_port_ = 0;
  molt_client* client_ = nullptr;
  Walker walker_;
};

TEST_F(MoltdDatagramTest, ASwapInTheMiddleOfADatagramStreamKeepsTheSessionAndItsLink) {
  Process p({kMoltd, "--admin", "127.0.0.1:0", "-p", kPlugins, "-d", data_, "--port", "0", "--udp",
             "127.0.0.1:0"});
  const std::string port = molt::test::ServingPort(p, molt::test::kBundledPlugins);
  ASSERT_FALSE(port.empty()) << p.output();
  ASSERT_NE(p.output().find("datagram links on udp://127.0.0.1:"), std::string::npos) << p.output();
  const std::string admin = "admin endpoint on http://127.0.0.1:";
  admin_port_ = static_cast<std::uint16_t>(
      std::stoi(p.output().substr(p.output().find(admin) + admin.size())));

  molt_client_options o{};
  o.struct_size = sizeof(o);
  ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
  molt_client_on_state(
      client_,
      [](void* ud, std::int32_t state, const char*) {
        static_cast<Walker*>(ud)->states.push_back(std::to_string(state));
      },
      &walker_);
  ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", static_cast<std::uint16_t>(std::stoi(port)),
                                "ada", "pw", 2, nullptr, 0),
            MOLT_OK);
  const Clock::time_point joined_by = Clock::now() + std::chrono::seconds(10);
  while (molt_client_state(client_) != MOLT_CLIENT_CONNECTED && Clock::now() < joined_by) {
    Step();
  }
  ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << molt_client_last_error(client_);
  std::uint16_t move = 0;
  ASSERT_EQ(molt_client_channel(client_, "walk.Move", &move), MOLT_OK);
  ASSERT_EQ(molt_client_channel(client_, "walk.Pos", &walker_.pos), MOLT_OK);
  molt_client_on_event(
      client_, walker_.pos,
      [](void* ud, std::uint16_t, const void*, std::size_t) {
        ++static_cast<Walker*>(ud)->positions;
      },
      &walker_);
  molt_client_on_resolved(
      client_,
      [](void* ud, std::uint16_t, std::uint32_t seq, std::int32_t accepted, molt_status_t) {
        Walker& w = *static_cast<Walker*>(ud);
        ++w.resolved[seq];
        w.rolled_back += accepted != 0 ? 0 : 1;
      },
      &walker_);
  // The datagram link binds (its first sealed datagram), and the admin API shows where.
  std::string link;
  const Clock::time_point bound_by = Clock::now() + std::chrono::seconds(10);
  while (link.empty() && Clock::now() < bound_by) {
    Step();
    const json::value sessions = Sessions();
    const json::array& list = sessions.at("sessions").as_array();
    if (!list.empty()) {
      link = std::string(list[0].at("datagram").as_string());
    }
  }
  ASSERT_FALSE(link.empty()) << p.output();

  // Three seconds of walking (a step every 30 ms, back and forth), the swap after one.
  std::uint32_t moves = 0;
  int positions_at_swap = -1;
  const Clock::time_point start = Clock::now();
  Clock::time_point next = start;
  while (Clock::now() - start < std::chrono::seconds(3)) {
    if (Clock::now() >= next) {
      const std::vector<std::uint8_t> m = WalkMove(moves % 2 == 0 ? 1 : -1);
      ASSERT_EQ(molt_client_predict(client_, move, m.data(), m.size(), nullptr), MOLT_OK)
          << molt_client_last_error(client_);
      ++moves;
      next += std::chrono::milliseconds(30);
    }
    if (positions_at_swap < 0 && Clock::now() - start >= std::chrono::seconds(1)) {
      positions_at_swap = walker_.positions;
      p.Signal(SIGHUP);
    }
    Step();
  }
  ASSERT_TRUE(p.WaitFor("\"swap\":\"ok\",\"reason\":\"SIGHUP\"")) << p.output();
  const Clock::time_point settle = Clock::now() + std::chrono::seconds(10);
  while (walker_.resolved.size() < moves && Clock::now() < settle) {
    Step();
  }

  // The session never noticed: connected throughout, every move acknowledged once.
  EXPECT_EQ(walker_.states, (std::vector<std::string>{std::to_string(MOLT_CLIENT_CONNECTING),
                                                      std::to_string(MOLT_CLIENT_CONNECTED)}));
  ASSERT_EQ(walker_.resolved.size(), moves);
  for (const auto& [seq, times] : walker_.resolved) {
    EXPECT_EQ(times, 1) << "seq " << seq;
  }
  EXPECT_EQ(walker_.rolled_back, 0);
  EXPECT_GT(walker_.positions, positions_at_swap);  // positions after the swap too
  // The same datagram link, never moved, carrying the moves.
  const json::value sessions = Sessions();
  const json::array& list = sessions.at("sessions").as_array();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(std::string(list[0].at("datagram").as_string()), link);
  EXPECT_EQ(Metric("molt_net_datagram_moves_total"), 0);
  EXPECT_GE(Metric("molt_net_datagrams_opened_total"), static_cast<double>(moves));
  EXPECT_GE(Metric("molt_sessions_datagram_linked"), 1);

  molt_client_disconnect(client_);
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

}  // namespace

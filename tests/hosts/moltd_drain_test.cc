// SPDX-License-Identifier: Apache-2.0
// Draining a server (docs/fleet.md, "Draining a server"): real moltd processes on a real
// PostgreSQL, players on libmolt_client as an app links it, `molt drain` through another server
// and SIGUSR1. The players move to the live server of the branch with the fewest sessions, with
// their profiles (the bundled scores plugin keeps each player's lifetime points); an older client
// that does not know the Redirect frame is told in the Bye. No timing assertions: waits are upper
// bounds.
#include <gtest/gtest.h>
#include <molt/client.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "counter_generated.h"
#include "scores_generated.h"
#include "test_client.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/postgres.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace w = ::molt::wire;
using molt::test::kMoltCli;
using molt::test::kMoltd;
using molt::test::kPlugins;
using molt::test::Process;
using Clock = std::chrono::steady_clock;

// A player on libmolt_client: adds to the counter (which scores) and asks scores.Get; keeps the
// reasons of its state changes.
class AppPlayer {
 public:
  // `flags`: MOLT_CLIENT_WEBSOCKET to join a server's --ws port.
  AppPlayer(const std::string& port, const std::string& user, std::uint32_t flags = 0) {
    molt_client_options o{};
    o.struct_size = sizeof o;
    o.flags = flags;
    EXPECT_EQ(molt_client_create(&o, &client_), MOLT_OK);
    molt_client_on_state(
        client_,
        [](void* self, std::int32_t, const char* reason) {
          static_cast<AppPlayer*>(self)->reasons_.emplace_back(reason);
        },
        this);
    EXPECT_EQ(molt_client_connect(client_, "127.0.0.1", static_cast<std::uint16_t>(std::stoi(port)),
                                  user.c_str(), nullptr, 0, nullptr, 0),
              MOLT_OK);
  }
  AppPlayer(const AppPlayer&) = delete;
  AppPlayer& operator=(const AppPlayer&) = delete;
  ~AppPlayer() { molt_client_destroy(client_); }

  // Steps the client until `done`, for at most `limit`.
  bool StepUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() > deadline) {
        return false;
      }
      molt_client_step(client_, 0.02);
    }
    return true;
  }
  bool Connected() {
    return StepUntil([this] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; });
  }
  std::uint64_t session() const { return molt_client_session(client_); }
  std::int32_t state() const { return molt_client_state(client_); }
  const std::vector<std::string>& reasons() const { return reasons_; }
  bool Saw(const std::string& text) const {
    for (const std::string& r : reasons_) {
      if (r.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  void Add(std::int32_t amount) {
    flatbuffers::FlatBufferBuilder b;
    b.Finish(molt::counter::CreateAdd(b, amount));
    EXPECT_EQ(
        molt_client_intent(client_, Channel("counter.Add"), b.GetBufferPointer(), b.GetSize()),
        MOLT_OK)
        << molt_client_last_error(client_);
  }
  // Asks scores.Get until the lifetime is `want` (a profile loads off the kernel thread).
  std::int64_t AwaitLifetime(std::int64_t want) {
    std::int64_t got = -1;
    StepUntil([&] {
      got = Lifetime();
      if (got != want) {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));  // scores.Get: 10/s
      }
      return got == want;
    });
    return got;
  }

 private:
  std::uint16_t Channel(const char* name) {
    std::uint16_t id = 0;
    EXPECT_EQ(molt_client_channel(client_, name, &id), MOLT_OK) << name;
    return id;
  }
  std::int64_t Lifetime() {
    flatbuffers::FlatBufferBuilder b;
    b.Finish(molt::scores::CreateQuery(b, b.CreateString("")));
    struct Answer {
      bool done = false;
      std::int64_t lifetime = -1;
    } answer;
    const molt_status_t sent = molt_client_request(
        client_, Channel("scores.Get"), b.GetBufferPointer(), b.GetSize(), 5,
        [](void* p, molt_status_t status, const void* data, std::size_t size) {
          auto* a = static_cast<Answer*>(p);
          a->done = true;
          if (status == MOLT_OK && size > 0) {
            a->lifetime = flatbuffers::GetRoot<molt::scores::Total>(data)->lifetime();
          }
        },
        &answer);
    if (sent != MOLT_OK) {
      return -1;
    }
    StepUntil([&] { return answer.done; }, std::chrono::seconds(6));
    return answer.lifetime;
  }

  molt_client* client_ = nullptr;
  std::vector<std::string> reasons_;
};

class MoltdDrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "moltd_drain_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  struct Server {
    std::unique_ptr<Process> process;
    std::string port;
    std::string admin;  // http://127.0.0.1:PORT
    std::string token_file;
    std::string ws_port;  // with `websocket`
  };
  // moltd `id` on the fleet's `url` ("": alone, SQLite), the bundled plugins, scores saved often.
  Server Start(const std::string& id, const std::string& url, bool websocket = false) {
    const std::string data = dir_ + "/" + id;
    std::ofstream(data + ".json") << R"({"plugins": {"scores": {"autosave_seconds": 0.2}}})";
    std::vector<std::string> args = {
        kMoltd,    "-p",          kPlugins,   "-d",           data,          "--port", "0",
        "--admin", "127.0.0.1:0", "--config", data + ".json", "--server-id", id};
    if (!url.empty()) {
      args.insert(args.end(), {"--database", url});
    }
    if (websocket) {
      args.insert(args.end(), {"--ws", "127.0.0.1:0"});
    }
    Server s;
    s.process = std::make_unique<Process>(args);
    s.port = molt::test::ServingPort(*s.process, molt::test::kBundledPlugins);
    const std::string& out = s.process->output();
    const std::string admin = "admin endpoint on http://127.0.0.1:";
    const std::size_t at = out.find(admin);
    if (at != std::string::npos) {
      s.admin = "http://127.0.0.1:" + std::to_string(std::stoi(out.substr(at + admin.size())));
    }
    s.token_file = data + "/admin.token";
    const std::string ws = "WebSocket clients on ws://127.0.0.1:";
    if (const std::size_t w = out.find(ws); w != std::string::npos) {
      s.ws_port = std::to_string(std::stoi(out.substr(w + ws.size())));
    }
    return s;
  }
  // `molt ARGS --server S --token-file T`: its exit code; its output in `out`.
  int Molt(std::vector<std::string> args, const Server& through, std::string* out) {
    args.insert(args.begin(), kMoltCli);
    args.insert(args.end(), {"--server", through.admin, "--token-file", through.token_file});
    Process p(std::move(args));
    const int code = p.Wait();
    *out = p.output();
    return code;
  }
  // Server `id`'s `key` in a fleet Servers() read ("" when not listed): a string, or a number's
  // text.
  static std::string Of(const json::object& fleet, const std::string& id, const std::string& key) {
    const json::value* row = fleet.if_contains(id);
    const json::value* v =
        row != nullptr && row->is_object() ? row->as_object().if_contains(key) : nullptr;
    return v == nullptr ? "" : v->is_string() ? std::string(v->as_string()) : json::serialize(*v);
  }
  // The fleet as `through` lists it, by id.
  json::object Servers(const Server& through) {
    std::string out;
    EXPECT_EQ(Molt({"servers", "--json"}, through, &out), 0) << out;
    std::error_code ec;
    const json::value v = json::parse(out.substr(std::min(out.find('['), out.size())), ec);
    json::object by_id;
    if (!ec && v.is_array()) {
      for (const json::value& s : v.as_array()) {
        by_id[s.at("id").as_string()] = s;
      }
    }
    return by_id;
  }

  std::string dir_;
};

TEST_F(MoltdDrainTest, PlayersOfADrainedServerMoveWithTheirProfiles) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  Server a = Start("a", url);
  Server b = Start("b", url);
  Server c = Start("c", url);
  ASSERT_FALSE(a.port.empty() || b.port.empty() || c.port.empty()) << a.process->output();

  AppPlayer bob(a.port, "bob");
  AppPlayer ann(a.port, "ann");
  AppPlayer cy(c.port, "cy");  // c has a session, b none: a's players go to b
  ASSERT_TRUE(bob.Connected() && ann.Connected() && cy.Connected()) << a.process->output();
  bob.Add(4);
  ann.Add(2);
  ASSERT_EQ(bob.AwaitLifetime(4), 4) << a.process->output();
  ASSERT_EQ(ann.AwaitLifetime(2), 2);
  // The target comes from the heartbeats: wait until they carry these sessions.
  const auto seen = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < seen &&
         (Of(Servers(b), "a", "sessions") != "2" || Of(Servers(b), "c", "sessions") != "1")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const json::object fleet = Servers(b);
  EXPECT_EQ(Of(fleet, "b", "address"), "127.0.0.1:" + b.port) << fleet;

  // molt drain through another server: a hears it from the fleet's database.
  std::string out;
  EXPECT_EQ(Molt({"drain", "a"}, b, &out), 0) << out << a.process->output();
  EXPECT_NE(out.find("server a is draining"), std::string::npos) << out;
  EXPECT_NE(out.find("server a drained: no session left"), std::string::npos) << out;
  EXPECT_EQ(a.process->Wait(), 0) << a.process->output();
  EXPECT_NE(a.process->output().find("draining (molt drain): 2 sessions move to another server"),
            std::string::npos)
      << a.process->output();
  EXPECT_NE(
      a.process->output().find("2 sessions told where to go: 2 to server b at 127.0.0.1:" + b.port),
      std::string::npos)
      << a.process->output();
  // The bundled rounds plugin heard Kernel.SoftShutdown and crowned its round before the move.
  EXPECT_NE(a.process->output().find("the server drains (2 players move): round 1 ends now"),
            std::string::npos)
      << a.process->output();

  // Both players followed by themselves, as themselves, and found their profiles on b.
  const std::string to_b = "redirected to server b at 127.0.0.1:" + b.port;
  for (AppPlayer* p : {&bob, &ann}) {
    EXPECT_TRUE(p->StepUntil([&] { return p->Saw(to_b) && p->state() == MOLT_CLIENT_CONNECTED; }))
        << ::testing::PrintToString(p->reasons()) << b.process->output();
  }
  EXPECT_EQ(bob.AwaitLifetime(4), 4) << b.process->output();
  EXPECT_EQ(ann.AwaitLifetime(2), 2) << b.process->output();
  EXPECT_EQ(b.process->output().find("is leased by"), std::string::npos)
      << "a released every lease before it told its clients to go: " << b.process->output();
  bob.Add(3);
  EXPECT_EQ(bob.AwaitLifetime(7), 7);

  // A drained server cannot be drained again, nor can one the fleet does not know.
  EXPECT_EQ(Molt({"drain", "a"}, c, &out), 1) << out;
  EXPECT_NE(out.find("server a is draining: only a live server drains"), std::string::npos) << out;
  EXPECT_EQ(Molt({"drain", "zz"}, c, &out), 1) << out;
  EXPECT_NE(out.find("no server \"zz\" in the fleet (molt servers lists them)"), std::string::npos)
      << out;
  EXPECT_EQ(Molt({"drain"}, c, &out), 2) << out;
  EXPECT_NE(out.find("which server? molt drain ID"), std::string::npos) << out;

  // SIGUSR1 drains b: the only live server left is c. A client that does not know the Redirect
  // frame (it ignores bodies it does not know) still reads where to go in the Bye.
  molt::test::TestClient old(static_cast<std::uint16_t>(std::stoi(b.port)));
  ASSERT_EQ(old.Hello("old").type(), w::Body::Welcome);
  b.process->Signal(SIGUSR1);
  const molt::test::Frame redirect = old.NextOf(w::Body::Redirect, std::chrono::seconds(15));
  ASSERT_EQ(redirect.type(), w::Body::Redirect) << b.process->output();
  EXPECT_EQ(redirect.envelope()->body_as_Redirect()->address()->str(), "127.0.0.1:" + c.port);
  EXPECT_EQ(redirect.envelope()->body_as_Redirect()->server()->str(), "c");
  EXPECT_EQ(redirect.envelope()->body_as_Redirect()->reason()->str(), "the server is draining");
  const molt::test::Frame bye = old.NextOf(w::Body::Bye, std::chrono::seconds(15));
  ASSERT_EQ(bye.type(), w::Body::Bye) << b.process->output();
  EXPECT_EQ(bye.envelope()->body_as_Bye()->text()->str(),
            "the server is draining: go to server c at 127.0.0.1:" + c.port);
  EXPECT_EQ(b.process->Wait(), 0) << b.process->output();
  const std::string to_c = "redirected to server c at 127.0.0.1:" + c.port;
  for (AppPlayer* p : {&bob, &ann}) {
    EXPECT_TRUE(p->StepUntil([&] { return p->Saw(to_c) && p->state() == MOLT_CLIENT_CONNECTED; }))
        << ::testing::PrintToString(p->reasons()) << c.process->output();
  }
  EXPECT_EQ(bob.AwaitLifetime(7), 7) << c.process->output();
  EXPECT_EQ(ann.AwaitLifetime(2), 2) << c.process->output();
  const json::object after = Servers(c);
  EXPECT_NE(Of(after, "a", "state"), "live") << after;
  EXPECT_NE(Of(after, "b", "state"), "live") << after;
  EXPECT_EQ(Of(after, "c", "sessions"), "3") << after;
  c.process->Signal(SIGTERM);
  EXPECT_EQ(c.process->Wait(), 0) << c.process->output();
}

TEST_F(MoltdDrainTest, AWebSocketClientGoesToTheOtherServersWebSocketPort) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  Server a = Start("a", url, /*websocket=*/true);
  Server b = Start("b", url, /*websocket=*/true);
  ASSERT_FALSE(a.ws_port.empty() || b.ws_port.empty()) << a.process->output();
  AppPlayer ada(a.ws_port, "ada", MOLT_CLIENT_WEBSOCKET);
  ASSERT_TRUE(ada.Connected()) << ::testing::PrintToString(ada.reasons());
  ada.Add(5);
  ASSERT_EQ(ada.AwaitLifetime(5), 5) << a.process->output();
  // Each heartbeat carries the WebSocket endpoint beside the TCP one.
  const std::string b_ws = "127.0.0.1:" + b.ws_port;
  const auto seen = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < seen && Of(Servers(a), "b", "websocket_address") != b_ws) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(Of(Servers(a), "b", "websocket_address"), b_ws);
  a.process->Signal(SIGUSR1);
  EXPECT_EQ(a.process->Wait(), 0) << a.process->output();
  EXPECT_NE(a.process->output().find("draining (SIGUSR1): 1 sessions told where to go"),
            std::string::npos)
      << a.process->output();
  EXPECT_TRUE(ada.StepUntil([&] {
    return ada.Saw("redirected to server b at " + b_ws) && ada.state() == MOLT_CLIENT_CONNECTED;
  })) << ::testing::PrintToString(ada.reasons());
  EXPECT_EQ(ada.AwaitLifetime(5), 5) << b.process->output();
  b.process->Signal(SIGTERM);
  EXPECT_EQ(b.process->Wait(), 0) << b.process->output();
}

TEST_F(MoltdDrainTest, AServerAloneDrainsAsItCloses) {
  Server a = Start("a", "");
  ASSERT_FALSE(a.port.empty()) << a.process->output();
  AppPlayer bob(a.port, "bob");
  ASSERT_TRUE(bob.Connected());
  // Bad requests are refused with what the body must be; a GET is not a drain.
  std::string token;
  std::getline(std::ifstream(a.token_file), token);
  const auto admin_port =
      static_cast<std::uint16_t>(std::stoi(a.admin.substr(a.admin.rfind(':') + 1)));
  for (const std::string body :
       {"[1]", R"({"deadline_seconds": -1})", R"({"server": 7})", R"({"deadline_seconds": 1e9})"}) {
    const molt::test::HttpResult r =
        molt::test::HttpCall(admin_port, "POST", "/api/v1/drain", token, body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_NE(r.body.find("deadline_seconds\\\": <0 to 86400: how long its players may stay"),
              std::string::npos)
        << r.body;
  }
  EXPECT_EQ(molt::test::HttpCall(admin_port, "GET", "/api/v1/drain", token).status, 405);
  EXPECT_EQ(molt::test::HttpCall(admin_port, "POST", "/api/v1/drain", "", "{}").status, 401);
  EXPECT_EQ(bob.state(), MOLT_CLIENT_CONNECTED) << "nothing drained";
  // Through its own admin endpoint, with a deadline: bob may stay until it passes.
  std::string out;
  EXPECT_EQ(Molt({"drain", "a", "--deadline", "0.5"}, a, &out), 0) << out;
  EXPECT_NE(out.find("server a drained"), std::string::npos) << out;
  EXPECT_EQ(a.process->Wait(), 0) << a.process->output();
  EXPECT_NE(a.process->output().find("or stay for at most 0.5 s"), std::string::npos)
      << a.process->output();
  EXPECT_NE(a.process->output().find("no other live server of branch"), std::string::npos)
      << a.process->output();
  // Nowhere to go: the client ends as at a close.
  EXPECT_TRUE(bob.StepUntil([&] { return bob.state() != MOLT_CLIENT_CONNECTED; }));
  EXPECT_FALSE(bob.Saw("redirected")) << ::testing::PrintToString(bob.reasons());
  EXPECT_TRUE(bob.Saw("the server is shutting down")) << ::testing::PrintToString(bob.reasons());
}

TEST_F(MoltdDrainTest, ADrainWaitsForItsDeadlineUnlessASignalSaysCloseNow) {
  Server a = Start("a", "");
  ASSERT_FALSE(a.port.empty()) << a.process->output();
  AppPlayer bob(a.port, "bob");
  ASSERT_TRUE(bob.Connected());
  std::string out;
  EXPECT_EQ(Molt({"drain", "a", "--deadline", "600", "--no-wait"}, a, &out), 0) << out;
  EXPECT_TRUE(a.process->WaitFor("or stay for at most 600 s")) << a.process->output();
  // The game goes on for bob meanwhile; a second drain is refused.
  EXPECT_FALSE(bob.StepUntil([&] { return bob.state() != MOLT_CLIENT_CONNECTED; },
                             std::chrono::milliseconds(300)));
  EXPECT_EQ(Molt({"drain", "a"}, a, &out), 1) << out;
  EXPECT_NE(out.find("moltd answered 409: server a is already closing"), std::string::npos) << out;
  AppPlayer ann(a.port, "ann");  // a new player is refused
  EXPECT_TRUE(ann.StepUntil([&] { return ann.state() == MOLT_CLIENT_CLOSED; }));
  EXPECT_TRUE(ann.Saw("ShuttingDown: the server is draining"))
      << ::testing::PrintToString(ann.reasons());
  a.process->Signal(SIGTERM);
  EXPECT_EQ(a.process->Wait(), 0) << a.process->output();
  EXPECT_NE(a.process->output().find("SIGTERM during the drain: the server closes now"),
            std::string::npos)
      << a.process->output();
  EXPECT_TRUE(bob.StepUntil([&] { return bob.state() == MOLT_CLIENT_CLOSED; }));
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The admin endpoint of a real moltd (docs/operations.md): health, readiness and metrics without
// credentials (checked by promtool), the token for everything else, and the API an operator uses
// against live clients: sessions and kicks, logs, reload.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "counter_generated.h"
#include "scores_generated.h"
#include "test_client.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using molt::test::HttpCall;
using molt::test::HttpResult;
using molt::test::kFixtures;
using molt::test::kMoltd;
using molt::test::kPlugins;
using molt::test::Process;

class MoltdAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "moltd_admin_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(data_);
  }
  // Starts moltd on free ports; waits until it serves. Returns false (with the output) if not.
  bool Start(std::vector<std::string> extra = {}, const std::string& plugins = "") {
    std::vector<std::string> args = {kMoltd, "-p",      plugins.empty() ? kPlugins : plugins,
                                     "-d",   data_,     "--port",
                                     "0",    "--admin", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    moltd_ = std::make_unique<Process>(args);
    if (!moltd_->WaitFor("SIGTERM or SIGINT closes")) {
      return false;
    }
    const std::string& out = moltd_->output();
    const std::string admin = "admin endpoint on http://127.0.0.1:";
    const std::string game = "listening on 127.0.0.1:";
    admin_port_ = static_cast<std::uint16_t>(std::stoi(out.substr(out.find(admin) + admin.size())));
    game_port_ = static_cast<std::uint16_t>(std::stoi(out.substr(out.find(game) + game.size())));
    return true;
  }
  std::string Token() const {
    std::ifstream in(data_ + "/admin.token");
    std::string token;
    std::getline(in, token);
    return token;
  }
  HttpResult Get(const std::string& path) { return HttpCall(admin_port_, "GET", path, Token()); }
  HttpResult Post(const std::string& path) { return HttpCall(admin_port_, "POST", path, Token()); }
  json::value GetJson(const std::string& path) {
    HttpResult r = Get(path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return r.status == 200 ? json::parse(r.body) : json::value();
  }
  // Joins as `user` and returns the client (asserting the Welcome); `get` receives the id of the
  // scores.Get channel when given.
  std::unique_ptr<molt::test::TestClient> Join(const std::string& user,
                                               std::uint16_t* get = nullptr,
                                               std::uint16_t* add = nullptr) {
    auto c = std::make_unique<molt::test::TestClient>(game_port_);
    molt::test::Frame welcome = c->Hello(user);
    EXPECT_EQ(welcome.type(), molt::wire::Body::Welcome);
    if (welcome.type() == molt::wire::Body::Welcome) {
      for (const auto* ch : *welcome.envelope()->body_as_Welcome()->channels()) {
        if (get != nullptr && ch->name()->str() == "scores.Get") {
          *get = ch->id();
        } else if (add != nullptr && ch->name()->str() == "counter.Add") {
          *add = ch->id();
        }
      }
    }
    return c;
  }

  std::string data_;
  std::unique_ptr<Process> moltd_;
  std::uint16_t admin_port_ = 0;
  std::uint16_t game_port_ = 0;
};

TEST_F(MoltdAdminTest, HealthReadinessAndMetricsAnswerWithoutCredentialsAndPassPromtool) {
  ASSERT_TRUE(Start()) << moltd_->output();
  std::uint16_t get = 0xffff;
  std::uint16_t add = 0xffff;
  auto ada = Join("ada", &get, &add);
  ASSERT_NE(get, 0xffff);
  ASSERT_NE(add, 0xffff);
  flatbuffers::FlatBufferBuilder a;
  a.Finish(molt::counter::CreateAdd(a, 1));  // the counter writes its replica in post_tick
  ada->Intent(add, std::span(a.GetBufferPointer(), a.GetSize()));
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::scores::CreateQuery(b, b.CreateString("")));
  ada->Request(get, 1, std::span(b.GetBufferPointer(), b.GetSize()));
  ASSERT_EQ(ada->NextOf(molt::wire::Body::Response).type(), molt::wire::Body::Response);

  HttpResult health = HttpCall(admin_port_, "GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  HttpResult ready = HttpCall(admin_port_, "GET", "/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ready\n");
  HttpResult metrics = HttpCall(admin_port_, "GET", "/metrics");
  for (int i = 0;
       i < 50 && metrics.body.find("molt_scheduler_phase_tasks_total") == std::string::npos;
       ++i) {  // the post_tick task runs at the end of the tick that took the addition
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    metrics = HttpCall(admin_port_, "GET", "/metrics");
  }
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const std::string& text = metrics.body;
  EXPECT_NE(text.find("\nmolt_sessions 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmolt_net_messages_accepted_total{channel=\"scores.Get\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("molt_scheduler_step_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  // The counter writes its replica from a post_tick task, after the additions of a tick.
  EXPECT_NE(text.find("\nmolt_scheduler_phase_tasks_total{phase=\"post_tick\"} "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("molt_build_info{version=\"" MOLT_VERSION "\",abi="), std::string::npos);
  EXPECT_NE(text.find("molt_plugin_errors_total{plugin=\"scores\",generation=\"local-"),
            std::string::npos);
  EXPECT_NE(text.find("\nmolt_process_open_fds "), std::string::npos);
  EXPECT_NE(text.find("\nmolt_analytics_retries_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmolt_workers_threads "), std::string::npos) << text;
  EXPECT_NE(text.find("\nmolt_workers_jobs_total{outcome=\"timed_out\"} 0\n"), std::string::npos)
      << text;
  // The bundled counter declares counter.multiplier; nobody overrode it.
  EXPECT_NE(text.find("\nmolt_live_values{kind=\"declared\"} 1\n"), std::string::npos) << text;
  // A server alone: messages loop back, the key-value store is in memory; both are counted.
  EXPECT_NE(text.find("\nmolt_messages_total{outcome=\"published\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nmolt_kv_calls_total{outcome=\"made\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nmolt_live_changes_total{outcome=\"stored\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nmolt_profile_store_queue_depth "), std::string::npos);
  EXPECT_NE(text.find("\nmolt_profile_store_latency_seconds_bucket{op=\"load\",le=\"+Inf\"} "),
            std::string::npos)
      << text;
  // Prometheus' own linter: names, suffixes, units, HELP and TYPE.
  const std::string file = data_ + "/metrics.txt";
  std::ofstream(file) << text;
  const std::string lint = molt::test::Shell(std::string(MOLT_PROMTOOL) + " check metrics < " +
                                             file + " 2>&1; echo \"exit $?\"");
  EXPECT_EQ(lint, "exit 0\n") << text;
}

TEST_F(MoltdAdminTest, TheApiNeedsTheTokenMadeOwnerOnlyInTheDataDirectory) {
  ASSERT_TRUE(Start()) << moltd_->output();
  struct stat st {};
  ASSERT_EQ(::stat((data_ + "/admin.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Token().size(), 64u);
  HttpResult none = HttpCall(admin_port_, "GET", "/api/v1/status");
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.headers.find("WWW-Authenticate: Bearer"), std::string::npos);
  EXPECT_NE(none.body.find("this needs the admin token"), std::string::npos);
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/api/v1/status", Token() + "x").status, 401);
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/api/v1/status", "").status, 401);
  json::value status = GetJson("/api/v1/status");
  EXPECT_EQ(status.at("version").as_string(), MOLT_VERSION);
  EXPECT_EQ(status.at("role").as_string(), "Server");
  EXPECT_EQ(status.at("closing").as_bool(), false);
  EXPECT_NE(status.at("generation").as_string().find("local-"), std::string::npos);
  EXPECT_GT(status.at("process").at("resident_bytes").as_int64(), 0);
  EXPECT_TRUE(status.at("stats").at("net").is_object());
  json::value errors = GetJson("/api/v1/errors");
  EXPECT_EQ(errors.at("window_seconds").as_double(), 30) << errors;
  EXPECT_TRUE(errors.at("recent").is_array()) << errors;
  EXPECT_TRUE(errors.at("merged").is_number()) << errors;
  EXPECT_EQ(Get("/nowhere").status, 404);
  EXPECT_EQ(Get("/api/v1/nowhere").status, 404);
  EXPECT_EQ(Post("/api/v1/status").status, 405);
  // The token the configuration gives replaces the file's.
  moltd_->Signal(SIGTERM);
  ASSERT_EQ(moltd_->Wait(), 0) << moltd_->output();
  const std::string config = data_ + ".json";
  std::ofstream(config) << R"({"admin": {"token": "a-configured-token-0123"}})";
  ASSERT_TRUE(Start({"-c", config})) << moltd_->output();
  EXPECT_NE(moltd_->output().find("the API's token is in the configuration's admin.token"),
            std::string::npos);
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/api/v1/status", Token()).status, 401);
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/api/v1/status", "a-configured-token-0123").status, 200);
}

TEST_F(MoltdAdminTest, SessionsAreListedAndAKickFromTheApiEndsOne) {
  ASSERT_TRUE(Start()) << moltd_->output();
  auto ada = Join("ada");
  auto bob = Join("bob");
  json::value list = GetJson("/api/v1/sessions");
  ASSERT_EQ(list.at("total").as_int64(), 2);
  const json::array& sessions = list.at("sessions").as_array();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].at("user").as_string(), "ada");
  EXPECT_EQ(sessions[1].at("user").as_string(), "bob");
  EXPECT_EQ(sessions[1].at("address").as_string(), "127.0.0.1");
  json::value page = GetJson("/api/v1/sessions?offset=1&limit=1");
  ASSERT_EQ(page.at("sessions").as_array().size(), 1u);
  EXPECT_EQ(page.at("sessions").as_array()[0].at("user").as_string(), "bob");
  EXPECT_EQ(Get("/api/v1/sessions?limit=0").status, 400);
  const std::string bob_id = std::to_string(sessions[1].at("id").as_int64());
  EXPECT_EQ(GetJson("/api/v1/sessions/" + bob_id).at("user").as_string(), "bob");
  EXPECT_EQ(Get("/api/v1/sessions/99999").status, 404);
  EXPECT_EQ(Get("/api/v1/sessions/" + bob_id + "/kick").status, 405);

  HttpResult kick = Post("/api/v1/sessions/" + bob_id + "/kick?reason=cheating+detected");
  EXPECT_EQ(kick.status, 200) << kick.body;
  molt::test::Frame bye = bob->NextOf(molt::wire::Body::Bye);
  ASSERT_EQ(bye.type(), molt::wire::Body::Bye);
  EXPECT_EQ(bye.envelope()->body_as_Bye()->reason()->str(), "Kicked");
  EXPECT_EQ(bye.envelope()->body_as_Bye()->text()->str(), "cheating detected");
  EXPECT_EQ(GetJson("/api/v1/sessions").at("total").as_int64(), 1);
  EXPECT_EQ(Post("/api/v1/sessions/" + bob_id + "/kick").status, 404);
  EXPECT_TRUE(moltd_->WaitFor("[Admin] session " + bob_id + " kicked by an operator"));
}

TEST_F(MoltdAdminTest, LogsPageBySinceAndReloadSwapsInANewGeneration) {
  ASSERT_TRUE(Start()) << moltd_->output();
  json::value logs = GetJson("/api/v1/logs");
  const json::array& lines = logs.at("lines").as_array();
  ASSERT_FALSE(lines.empty());
  bool serving = false;
  for (const json::value& l : lines) {
    serving |= l.at("message").as_string().find(molt::test::kServingBundled) != std::string::npos;
  }
  EXPECT_TRUE(serving) << logs;
  const std::int64_t next = logs.at("next").as_int64();
  EXPECT_EQ(lines.back().at("seq").as_int64(), next);
  EXPECT_TRUE(GetJson("/api/v1/logs?since=" + std::to_string(next)).at("lines").as_array().empty());

  HttpResult reload = Post("/api/v1/reload");
  EXPECT_EQ(reload.status, 202) << reload.body;
  ASSERT_TRUE(moltd_->WaitFor("\"swap\":\"ok\",\"reason\":\"admin API\"")) << moltd_->output();
  const json::value plugins = GetJson("/api/v1/plugins");
  EXPECT_NE(plugins.at("serving").as_string().find("#2"), std::string::npos);
  // The swap history the dashboard shows: this one swap, with its report.
  ASSERT_EQ(plugins.at("history").as_array().size(), 1u) << plugins;
  const json::value& report = plugins.at("history").as_array()[0].at("report");
  EXPECT_EQ(report.at("reason").as_string(), "admin API");
  EXPECT_TRUE(report.at("ok").as_bool());
  json::value after = GetJson("/api/v1/logs?since=" + std::to_string(next));
  bool swap = false;
  for (const json::value& l : after.at("lines").as_array()) {
    EXPECT_GT(l.at("seq").as_int64(), next);
    swap |= l.at("message").as_string().find("admin API") != std::string::npos;
  }
  EXPECT_TRUE(swap) << after;
  EXPECT_EQ(Get("/api/v1/reload").status, 405);
  // ?wait=S answers with the report, once the swap is over.
  HttpResult waited = Post("/api/v1/reload?wait=30");
  ASSERT_EQ(waited.status, 200) << waited.body;
  const json::value done = json::parse(waited.body);
  EXPECT_TRUE(done.at("report").at("ok").as_bool()) << done;
  EXPECT_NE(done.at("report").at("serving").as_string().find("#3"), std::string::npos) << done;
  EXPECT_GT(done.at("report").at("hold_ms").as_double(), 0) << done;
  EXPECT_EQ(Post("/api/v1/reload?wait=601").status, 400);
  EXPECT_EQ(Post("/api/v1/reload?wait=soon").status, 400);
  json::value channels = GetJson("/api/v1/channels");
  bool scores = false;
  for (const json::value& c : channels.at("channels").as_array()) {
    scores |= c.at("name").as_string() == "scores.Get";
  }
  EXPECT_TRUE(scores) << channels;
  EXPECT_FALSE(GetJson("/api/v1/hooks").at("hooks").as_array().empty());
}

TEST_F(MoltdAdminTest, DiagnosticsCloseAWindowEveryIntervalWithTheNetworksFigures) {
  fs::create_directories(data_);
  const std::string config = data_ + ".json";
  std::ofstream(config) << R"({"server": {"diagnostics_seconds": 0.2}})";
  ASSERT_TRUE(Start({"-c", config})) << moltd_->output();
  auto ada = Join("ada");
  json::value d;
  for (int i = 0; i < 100; ++i) {  // a window closes every 0.2 s
    d = GetJson("/api/v1/diagnostics");
    if (d.is_object() && d.at("window").as_int64() >= 2) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(d.is_object());
  EXPECT_GE(d.at("window").as_int64(), 2) << d;
  EXPECT_GT(d.at("seconds").as_double(), 0) << d;
  EXPECT_EQ(d.at("sessions").as_double(), 1) << d;
  EXPECT_GT(d.at("resident_bytes").as_int64(), 0) << d;
  EXPECT_EQ(d.at("overload").as_bool(), false) << d;
  EXPECT_TRUE(d.at("net_in_bytes_per_second").is_double()) << d;
  json::value tasks = GetJson("/api/v1/tasks");
  EXPECT_TRUE(tasks.at("profiling").as_bool()) << tasks;
  EXPECT_TRUE(tasks.at("tasks").is_array()) << tasks;
  json::value status = GetJson("/api/v1/status");
  EXPECT_TRUE(status.at("tps").is_number());
  // The task profile covers the window open now: it began when the last closed window (`d`, the
  // second or a later one) ended, and that one began after the server did.
  EXPECT_LE(tasks.at("since_seconds").as_double() + d.at("seconds").as_double(),
            status.at("uptime_seconds").as_double())
      << tasks << d << status;
  // net_rejected is the window's, not the total since the start: three requests with a payload
  // that is no Query are rejected, and a later window counts none (a total never falls back).
  std::uint16_t get = 0;
  auto bob = Join("bob", &get);
  ASSERT_NE(get, 0);
  const std::uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7};
  for (std::uint32_t id = 1; id <= 3; ++id) {
    bob->Request(get, id, std::span(junk));
  }
  bool counted = false;
  bool then_none = false;
  json::value series;
  for (int i = 0; i < 100 && !then_none; ++i) {  // windows of 0.2 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    series = GetJson("/api/v1/series");
    counted = then_none = false;
    for (const json::value& v : series.at("series").at("net_rejected").as_array()) {
      counted = counted || v.to_number<double>() > 0;
      then_none = then_none || (counted && v.to_number<double>() == 0);
    }
  }
  EXPECT_TRUE(counted && then_none) << series;
}

TEST_F(MoltdAdminTest, ADebugBundleOnDemandHasTheLogsAndStatsAndNoSecrets) {
  fs::create_directories(data_);
  const std::string config = data_ + ".json";
  std::ofstream(config) << R"({"admin": {"token": "do-not-leak-this-token-42"},
                              "plugins": {"scores": {"api_secret": "hunter2", "top": 5}}})";
  ASSERT_TRUE(Start({"-c", config})) << moltd_->output();
  HttpResult r = HttpCall(admin_port_, "POST", "/api/v1/bundle?reason=support+ticket",
                          "do-not-leak-this-token-42");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string path = json::parse(r.body).at("path").as_string().c_str();
  EXPECT_EQ(path.find(data_ + "/bundles/bundle-"), 0u) << path;
  EXPECT_NE(path.find("-support-ticket.json"), std::string::npos) << path;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("do-not-leak-this-token-42"), std::string::npos);
  EXPECT_EQ(text.find("hunter2"), std::string::npos);
  json::value bundle = json::parse(text);
  EXPECT_EQ(bundle.at("reason").as_string(), "support ticket");
  EXPECT_EQ(bundle.at("configuration").at("admin.token").as_string(), "<redacted>");
  EXPECT_EQ(bundle.at("configuration").at("plugins.scores.api_secret").as_string(), "<redacted>");
  EXPECT_EQ(bundle.at("configuration").at("plugins.scores.top").as_int64(), 5);
  EXPECT_EQ(bundle.at("status").at("version").as_string(), MOLT_VERSION);
  EXPECT_TRUE(bundle.at("generations").at("plugins").is_array());
  bool serving = false;
  for (const json::value& l : bundle.at("logs").at("lines").as_array()) {
    serving |= l.at("message").as_string().find(molt::test::kServingBundled) != std::string::npos;
  }
  EXPECT_TRUE(serving) << text;
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/api/v1/bundle", "do-not-leak-this-token-42").status,
            405);
}

TEST_F(MoltdAdminTest, AFatalSignalLeavesACrashBundle) {
  ASSERT_TRUE(Start()) << moltd_->output();
  auto ada = Join("ada");
  moltd_->Signal(SIGSEGV);
  EXPECT_EQ(moltd_->Wait(), 128 + SIGSEGV) << "the signal stays the exit status";
  const std::string path = data_ + "/bundles/crash-" + std::to_string(moltd_->pid()) + ".json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << "\n" << moltd_->output();
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json::value crash = json::parse(text);
  EXPECT_EQ(crash.at("reason").as_string(), "fatal signal 11 (SIGSEGV)");
  const json::value& snapshot = crash.at("snapshot");
  EXPECT_EQ(snapshot.at("status").at("version").as_string(), MOLT_VERSION);
  bool serving = false;
  for (const json::value& l : snapshot.at("logs").at("lines").as_array()) {
    serving |= l.at("message").as_string().find(molt::test::kServingBundled) != std::string::npos;
  }
  EXPECT_TRUE(serving) << text;
}

// The dashboard page needs no token (it has no secret and asks for one) and loads nothing from
// elsewhere; the wire inspector's API needs the token and records while it is read.
TEST_F(MoltdAdminTest, TheDashboardIsSelfContainedAndTheWireInspectorRecordsWhileRead) {
  ASSERT_TRUE(Start()) << moltd_->output();
  HttpResult page = HttpCall(admin_port_, "GET", "/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.headers.find("Content-Type: text/html; charset=utf-8"), std::string::npos);
  EXPECT_NE(page.headers.find("Content-Security-Policy: default-src 'none'"), std::string::npos)
      << page.headers;
  EXPECT_NE(page.body.find("<title>moltd</title>"), std::string::npos);
  EXPECT_EQ(page.body.find("://"), std::string::npos) << "the page names no other site";
  EXPECT_EQ(HttpCall(admin_port_, "POST", "/").status, 405);
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/api/v1/wire").status, 401);

  std::uint16_t get = 0;
  auto ada = Join("ada", &get);
  ASSERT_NE(get, 0);
  json::value wire = GetJson("/api/v1/wire");
  EXPECT_TRUE(wire.at("capturing").as_bool());
  EXPECT_TRUE(GetJson("/api/v1/hooks").at("timing").as_bool());
  const std::int64_t next = wire.at("next").as_int64();
  flatbuffers::FlatBufferBuilder b;
  b.Finish(molt::scores::CreateQuery(b, b.CreateString("")));
  ada->Request(get, 1, std::span(b.GetBufferPointer(), b.GetSize()));
  ASSERT_EQ(ada->NextOf(molt::wire::Body::Response).type(), molt::wire::Body::Response);
  json::value after = GetJson("/api/v1/wire?since=" + std::to_string(next));
  const json::array& frames = after.at("frames").as_array();
  ASSERT_EQ(frames.size(), 2u) << after;
  EXPECT_EQ(frames[0].at("direction").as_string(), "in");
  EXPECT_EQ(frames[0].at("kind").as_string(), "request");
  EXPECT_EQ(frames[0].at("channel_name").as_string(), "scores.Get");
  EXPECT_EQ(frames[0].at("verdict").as_string(), "accepted");
  EXPECT_EQ(frames[1].at("direction").as_string(), "out");
  EXPECT_EQ(frames[1].at("kind").as_string(), "response");
  EXPECT_EQ(frames[1].at("verdict").as_string(), "OK");
  EXPECT_TRUE(moltd_->WaitFor("wire inspector on: recording messages and timing hook chains"));
}

TEST_F(MoltdAdminTest, AProfileIsReadWithoutItsLeaseAndTheStoreFiguresShown) {
  ASSERT_TRUE(Start()) << moltd_->output();
  auto ada = Join("ada");  // the scores plugin loads ada's profile on join
  json::value profile;
  for (int i = 0; i < 100 && !profile.is_object(); ++i) {
    HttpResult r = Get("/api/v1/profiles/scores/ada");
    if (r.status == 200) {
      profile = json::parse(r.body);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ASSERT_TRUE(profile.is_object());
  EXPECT_EQ(profile.at("key").as_string(), "scores/ada");
  EXPECT_FALSE(profile.at("lease").at("owner").as_string().empty()) << profile;
  EXPECT_TRUE(profile.at("backups").is_array()) << profile;
  EXPECT_GE(GetJson("/api/v1/profiles").at("loads").as_int64(), 1);
  HttpResult none = Get("/api/v1/profiles/scores/nobody");
  EXPECT_EQ(none.status, 404) << none.body;
  EXPECT_NE(none.body.find("no profile scores/nobody is stored"), std::string::npos);
  EXPECT_EQ(Get("/api/v1/profiles/ada").status, 400);
  // Reading it took no lease: ada is still served, and her profile is still hers.
  EXPECT_EQ(GetJson("/api/v1/sessions").at("total").as_int64(), 1);
}

TEST_F(MoltdAdminTest, HealthzIsTheKernelThreadsWatchdog) {
  // fx_sleepy's stop() blocks the kernel thread for 4 s in the close.
  const std::string config = data_ + ".json";
  fs::create_directories(data_);
  std::ofstream(config) << R"({"plugins": {"fx_sleepy": {"stop_sleep_seconds": 4}}})";
  ASSERT_TRUE(Start({"-c", config}, kFixtures + "/close")) << moltd_->output();
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/healthz").status, 200);
  moltd_->Signal(SIGTERM);
  ASSERT_TRUE(moltd_->WaitFor("closing (SIGTERM)")) << moltd_->output();
  // Both at once: each waits its 2 s for the blocked kernel thread.
  std::future<HttpResult> ready =
      std::async(std::launch::async, [&] { return HttpCall(admin_port_, "GET", "/readyz"); });
  HttpResult stuck = HttpCall(admin_port_, "GET", "/healthz");
  EXPECT_EQ(stuck.status, 503);
  EXPECT_EQ(stuck.body, "the kernel thread did not answer within 2000 ms\n");
  EXPECT_EQ(ready.get().status, 503);
  EXPECT_EQ(moltd_->Wait(), 0) << moltd_->output();
}

// A swap whose old stop() blocks (30 s) does not hold the server: past its deadline the stop is
// abandoned, the new build serves, and /healthz says the server is degraded, naming the plugin.
TEST_F(MoltdAdminTest, AStopBlockingPastItsDeadlineLeavesTheServerServingDegraded) {
  const std::string dir = data_ + "-plugins";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kFixtures + "/gen/sleep_stop/fx_gen_sleep_stop.so", dir + "/fx_gen.so");
  const std::string config = data_ + ".json";
  fs::create_directories(data_);
  std::ofstream(config) << R"({"server": {"callback_deadline_seconds": 0.5}})";
  ASSERT_TRUE(Start({"-c", config}, dir)) << moltd_->output();
  EXPECT_EQ(HttpCall(admin_port_, "GET", "/healthz").body, "ok\n");
  fs::copy_file(kFixtures + "/gen/v2/fx_gen_v2.so", dir + "/fx_gen.so.tmp");
  fs::rename(dir + "/fx_gen.so.tmp", dir + "/fx_gen.so");
  moltd_->Signal(SIGHUP);
  ASSERT_TRUE(moltd_->WaitFor("\"swap\":\"ok\",\"reason\":\"SIGHUP\"")) << moltd_->output();
  EXPECT_NE(moltd_->output().find("\"hard_stopped\":[\"fx_gen\"]"), std::string::npos);
  EXPECT_NE(moltd_->output().find("stop() did not return within 0.5 s: abandoned"),
            std::string::npos)
      << moltd_->output();
  HttpResult health = HttpCall(admin_port_, "GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body.rfind("degraded: 1 plugin callback(s) abandoned at their deadline", 0), 0u)
      << health.body;
  EXPECT_NE(health.body.find("  fx_gen@"), std::string::npos) << health.body;
  // It serves: a new client is welcome, and the API names the new generation's stuck callback.
  auto c = std::make_unique<molt::test::TestClient>(game_port_);
  EXPECT_EQ(c->Hello("ada").type(), molt::wire::Body::Welcome);
  const json::value plugins = GetJson("/api/v1/plugins");
  EXPECT_EQ(plugins.at("stuck_callbacks").as_array().size(), 1u) << plugins;
  EXPECT_EQ(plugins.at("swaps").as_int64(), 1) << plugins;
  moltd_->Signal(SIGTERM);
  EXPECT_EQ(moltd_->Wait(), 0) << moltd_->output();
  fs::remove_all(dir);
}

TEST_F(MoltdAdminTest, OffMeansNoEndpointAndATakenPortStopsTheBoot) {
  ASSERT_TRUE(Start()) << moltd_->output();
  Process off({kMoltd, "-p", kPlugins, "-d", data_ + "-off", "--port", "0", "--admin", "off"});
  ASSERT_TRUE(off.WaitFor("SIGTERM or SIGINT closes")) << off.output();
  EXPECT_NE(off.output().find("[molt] admin endpoint off"), std::string::npos);
  EXPECT_FALSE(fs::exists(data_ + "-off/admin.token"));
  Process taken({kMoltd, "-p", kPlugins, "-d", data_ + "-taken", "--port", "0", "--admin",
                 "127.0.0.1:" + std::to_string(admin_port_)});
  EXPECT_EQ(taken.Wait(), 1);
  EXPECT_NE(taken.output().find("cannot start: admin endpoint: cannot listen on 127.0.0.1:" +
                                std::to_string(admin_port_) + ": Address already in use"),
            std::string::npos)
      << taken.output();
  Process remote(
      {kMoltd, "-p", kPlugins, "-d", data_ + "-remote", "--admin", "0.0.0.0:0", "--port", "0"});
  EXPECT_EQ(remote.Wait(), 1);
  EXPECT_NE(remote.output().find("cannot start: admin endpoint 0.0.0.0:0 is beyond loopback and "
                                 "speaks plain HTTP"),
            std::string::npos)
      << remote.output();
  off.Signal(SIGTERM);
  EXPECT_EQ(off.Wait(), 0);
  fs::remove_all(data_ + "-off");
  fs::remove_all(data_ + "-taken");
}

}  // namespace

namespace {

// moltd --check: the gate an operator runs before deploying a build.
TEST_F(MoltdAdminTest, CheckPassesTheBundledPluginsWithoutTouchingTheLiveData) {
  Process p(
      {kMoltd, "--check", "-p", kPlugins, "-d", data_, "--port", "0", "--admin", "127.0.0.1:0"});
  EXPECT_EQ(p.Wait(), 0) << p.output();
  const std::string& out = p.output();
  EXPECT_NE(out.find("moltd --check " + kPlugins + "\n  plugins: " +
                     std::to_string(molt::test::kBundledPlugins) + " loaded and started ("),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\n  security audit: clean\n"), std::string::npos) << out;
  // The channel table's hash, as a client's Welcome carries it (molt build records it).
  EXPECT_NE(out.find("\n  protocol: "), std::string::npos) << out;
  EXPECT_NE(out.find(" 0 validator error(s)\ncheck passed\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n  self-tests: "), std::string::npos) << out;
  EXPECT_NE(out.find(" passed, 0 failed ("), std::string::npos) << out;
  EXPECT_EQ(out.find("listening on"), std::string::npos) << "nothing listens in a check";
  EXPECT_FALSE(fs::exists(data_ + "/admin.token"));
  EXPECT_FALSE(fs::exists(data_ + "/profiles.db")) << "the live database is not opened";
  // The scratch database is removed, and so are the directories the check made for it.
  EXPECT_FALSE(fs::exists(data_)) << "a check leaves no directory of its own behind";
}

// Without -d a check's data directory is ./data: it leaves none behind (it left an empty
// ./data/run/), and a data directory that was there keeps what it held, and nothing more.
TEST_F(MoltdAdminTest, ACheckLeavesTheDataDirectoryAsItFoundIt) {
  fs::create_directories(data_);
  Process bare({"/bin/sh", "-c",
                "cd '" + data_ + "' && exec " + kMoltd + " --self-test -p " + kFixtures +
                    "/gen/v1 --port 0 --admin 127.0.0.1:0"});
  EXPECT_EQ(bare.Wait(), 0) << bare.output();
  EXPECT_TRUE(fs::is_empty(data_)) << "left behind: " << fs::directory_iterator(data_)->path();
  std::ofstream(data_ + "/live.db") << "the live server's";
  Process live({kMoltd, "--self-test", "-p", kFixtures + "/gen/v1", "-d", data_, "--port", "0",
                "--admin", "127.0.0.1:0"});
  EXPECT_EQ(live.Wait(), 0) << live.output();
  std::vector<std::string> left;
  for (const fs::directory_entry& e : fs::directory_iterator(data_)) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"live.db"});
}

// --self-test: the same gate by its spec name; a plugin's failing own tests fail it, each named.
TEST_F(MoltdAdminTest, SelfTestRunsThePluginsOwnTestsAndFailsOnAFailingOne) {
  Process good({kMoltd, "--self-test", "-p", kFixtures + "/gen/v1", "-d", data_, "--port", "0",
                "--admin", "127.0.0.1:0"});
  EXPECT_EQ(good.Wait(), 0) << good.output();
  EXPECT_NE(good.output().find("moltd --self-test " + kFixtures + "/gen/v1\n"), std::string::npos)
      << good.output();
  EXPECT_NE(good.output().find("\n  self-tests: 2 passed, 0 failed (1 of 1 plugins have tests)\n"),
            std::string::npos)
      << good.output();
  Process bad({kMoltd, "--self-test", "-p", kFixtures + "/gen/fail_self_test", "-d", data_,
               "--port", "0", "--admin", "127.0.0.1:0"});
  EXPECT_EQ(bad.Wait(), 3) << bad.output();
  const std::string& out = bad.output();
  EXPECT_NE(out.find("\n  self-tests: 2 passed, 2 failed (1 of 1 plugins have tests)\n    fx_gen@"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(": \"totals are never negative\": the total went below zero\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(": \"it parses its state\": threw: no digits\n"), std::string::npos) << out;
  EXPECT_NE(out.find("check failed: 2 self-test(s) failed, 0 High finding(s), validators threw on "
                     "0 channel(s)\n"),
            std::string::npos)
      << out;
}

TEST_F(MoltdAdminTest, CheckFailsOnAnUnguardedChannelAndAValidatorThatThrows) {
  Process p({kMoltd, "--check", "-p", kFixtures + "/unsafe", "-d", data_, "--port", "0", "--admin",
             "127.0.0.1:0"});
  EXPECT_EQ(p.Wait(), 3) << p.output();
  const std::string& out = p.output();
  EXPECT_NE(out.find("  security audit: 1 finding(s)\n    [High] UnguardedChannel (intent "
                     "fx.Grant): "),
            std::string::npos)
      << out;
  // Each distinct error once, with its count.
  const std::size_t error = out.find(
      "    channel \"fx.Say\": hook \"Intent.fx.Say\": handler threw: plugin \"fx_unsafe@local-");
  ASSERT_NE(error, std::string::npos) << out;
  EXPECT_NE(out.find("my buffer is too small (x", error), std::string::npos) << out;
  EXPECT_EQ(out.find("    channel \"fx.Say\"", error + 1), std::string::npos) << out;
  // The validator's warnings, merged by ErrorWatch: the first, then one line with the count.
  const std::string warning = "[Hooks] hook \"Intent.fx.Say\": handler (priority 100) threw:";
  const std::size_t first = out.find(warning);
  ASSERT_NE(first, std::string::npos) << out;
  const std::size_t summary = out.find(warning, first + 1);
  ASSERT_NE(summary, std::string::npos) << out;
  EXPECT_EQ(out.find(warning, summary + 1), std::string::npos) << out;
  EXPECT_NE(out.find("my buffer is too small (x", summary), std::string::npos) << out;
  EXPECT_NE(out.find(" in 30 s)", summary), std::string::npos) << out;
  EXPECT_NE(out.find("check failed: 0 self-test(s) failed, 1 High finding(s), validators threw "
                     "on 1 channel(s)\n"),
            std::string::npos)
      << out;
  // The same plugin with both fixed passes: each failure was its own.
  const std::string config = data_ + ".json";
  std::ofstream(config) << R"({"plugins": {"fx_unsafe": {"unguarded": false, "throwing": false}}})";
  Process fixed({kMoltd, "--check", "-p", kFixtures + "/unsafe", "-d", data_, "-c", config,
                 "--port", "0", "--admin", "127.0.0.1:0"});
  EXPECT_EQ(fixed.Wait(), 0) << fixed.output();
  EXPECT_NE(fixed.output().find("check passed\n"), std::string::npos) << fixed.output();
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The admin endpoint's parts in one process: the Prometheus writer, the logs ring, the token,
// and the HTTP server's bounds over real loopback sockets.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kernel/src/admin/admin_api.h"
#include "kernel/src/admin/debug_bundle.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/http_server.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/metrics.h"
#include "kernel/src/core/kernel.h"
#include "tests/support/http_client.h"

namespace molt::kernel::admin {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using test::HttpCall;
using test::HttpRaw;

TEST(MetricsWriterTest, WritesFamiliesWithHelpTypeAndEscapedLabels) {
  MetricsWriter w;
  w.Family("molt_x_total", "counter", "Things, with a \\ and\na newline.");
  w.Add(3);
  w.Add(0.5, {{"channel", "chat\"Say\\\n"}, {"reason", "flood"}});
  EXPECT_EQ(w.Take(),
            "# HELP molt_x_total Things, with a \\\\ and\\na newline.\n"
            "# TYPE molt_x_total counter\n"
            "molt_x_total 3\n"
            "molt_x_total{channel=\"chat\\\"Say\\\\\\n\",reason=\"flood\"} 0.5\n");
}

TEST(MetricsWriterTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsWriter w;
  w.Family("molt_step_seconds", "histogram", "Steps.");
  const double bounds[] = {0.001, 0.01};
  const std::uint64_t counts[] = {2, 3, 1};
  w.AddHistogram(bounds, counts, 0.125);
  EXPECT_EQ(w.Take(),
            "# HELP molt_step_seconds Steps.\n"
            "# TYPE molt_step_seconds histogram\n"
            "molt_step_seconds_bucket{le=\"0.001\"} 2\n"
            "molt_step_seconds_bucket{le=\"0.01\"} 5\n"
            "molt_step_seconds_bucket{le=\"+Inf\"} 6\n"
            "molt_step_seconds_sum 0.125\n"
            "molt_step_seconds_count 6\n");
}

TEST(ProcessFiguresTest, ReadsThisProcess) {
  const ProcessFigures f = ReadProcessFigures();
  EXPECT_GT(f.resident_bytes, 1u << 20);
  EXPECT_GE(f.virtual_bytes, f.resident_bytes);
  EXPECT_GT(f.cpu_seconds, 0);
  EXPECT_GE(f.open_fds, 3u);  // stdin, stdout, stderr
  EXPECT_GT(f.max_fds, f.open_fds);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(f.start_time_seconds, now);
  EXPECT_GT(f.start_time_seconds, now - 3600);
}

TEST(LogRingTest, KeepsTheNewestLinesNumberedAndPagesBySince) {
  LogRing ring(3);
  LogScope log("ring");
  for (int i = 1; i <= 5; ++i) {
    log.Info("line {}", i);
  }
  LogRing::Page all = ring.Since(0);
  ASSERT_EQ(all.items.size(), 3u);
  EXPECT_EQ(all.items[0].message, "line 3");
  EXPECT_EQ(all.items[0].seq, 3u);
  EXPECT_EQ(all.items[2].message, "line 5");
  EXPECT_EQ(all.items[2].scope, "ring");
  EXPECT_EQ(all.lost, 2u);  // lines 1 and 2 were pushed out
  EXPECT_EQ(all.next, 5u);
  LogRing::Page after = ring.Since(4);
  ASSERT_EQ(after.items.size(), 1u);
  EXPECT_EQ(after.items[0].message, "line 5");
  EXPECT_EQ(after.lost, 0u);
  EXPECT_TRUE(ring.Since(5).items.empty());
  EXPECT_EQ(ring.Since(5).next, 5u);
  log.Debug("below the level: not kept");
  EXPECT_TRUE(ring.Since(5).items.empty());
}

TEST(AdminTokenTest, IsMadeOnceWithOwnerOnlyPermissionsAndKept) {
  const std::string path = ::testing::TempDir() + "molt_admin_token_" + std::to_string(::getpid());
  fs::remove(path);
  Result<std::string> made = LoadAdminToken(path, "");
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(made->size(), 64u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result<std::string> again = LoadAdminToken(path, "");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *made);
  Result<std::string> configured = LoadAdminToken(path, "from-the-configuration");
  EXPECT_EQ(*configured, "from-the-configuration");

  ::chmod(path.c_str(), 0644);
  Result<std::string> open = LoadAdminToken(path, "");
  EXPECT_EQ(
      open.status().message(),
      "admin token file " + path + " can be read by other users (mode 0644): chmod 600 " + path);
  ::chmod(path.c_str(), 0600);
  std::ofstream(path) << "short\n";
  EXPECT_NE(LoadAdminToken(path, "").status().message().find("holds no token"), std::string::npos);
  fs::remove(path);
}

TEST(AdminTokenTest, ComparisonIsExact) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

TEST(QueryValueTest, FindsAndDecodes) {
  EXPECT_EQ(QueryValue("a=1&reason=too+many%21&b=", "reason"), "too many!");
  EXPECT_EQ(QueryValue("a=1&b=", "b"), "");
  EXPECT_EQ(QueryValue("a=1", "c"), "");
  EXPECT_EQ(QueryValue("x=%zz%4", "x"), "%zz%4");
}

// Diagnostics on a kernel with a manual clock: each heavy task takes 1 ms of a 1.5 ms budget.
class DiagnosticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KernelOptions o;
    o.clock = &clock_;
    o.scheduler.budget = std::chrono::microseconds(1500);
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
    overloads_ = kernel_->bus().Subscribe("Kernel.Overload", [this](std::string_view, Args a) {
      snapshots_.emplace_back(a[0].AsString());
    });
  }
  void TearDown() override {
    overloads_.Disconnect();
    (void)kernel_->Shutdown();
  }
  // One window: `heavy` tasks of 1 ms queued at its start (a step runs two, the rest wait), then
  // the clock moves to the window's end and the step that closes it runs.
  void Window(int heavy) {
    for (int i = 0; i < heavy; ++i) {
      kernel_->scheduler().Schedule([this] { clock_.Advance(std::chrono::milliseconds(1)); },
                                    Priority::kNormal);
    }
    while (kernel_->scheduler().pending() > 1) {  // the diagnostics task stays queued
      kernel_->scheduler().Step();
      clock_.Advance(std::chrono::milliseconds(20));
    }
    clock_.Set(next_);
    next_ += std::chrono::seconds(1);
    kernel_->scheduler().Step();
  }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  Connection overloads_;
  std::vector<std::string> snapshots_;
  TimePoint next_ = clock_.Now() + std::chrono::seconds(1);
};

TEST_F(DiagnosticsTest, WindowsSumDeferralAndTheThirdDeferringWindowPublishesOverload) {
  Diagnostics diag(
      *kernel_, {std::chrono::seconds(1), [](auto& extra) { extra.emplace_back("sessions", 7); }});
  Window(5);
  ASSERT_EQ(diag.last().number, 1u);
  EXPECT_EQ(diag.last().deferred, 3u + 1u);  // 3 after the first step, 1 after the second
  EXPECT_EQ(diag.last().deferring_windows, 1u);
  EXPECT_FALSE(diag.last().overload);
  EXPECT_EQ(diag.last().tasks_run, 5u);
  EXPECT_NEAR(diag.last().step_max_ms, 2.0, 1e-9);  // two tasks of 1 ms
  EXPECT_NEAR(diag.last().budget_ms, 1.5, 1e-9);
  EXPECT_GT(diag.last().tps, 0);
  EXPECT_EQ(diag.last().extra, (std::vector<std::pair<std::string, double>>{{"sessions", 7}}));
  ASSERT_FALSE(diag.last().hot_tasks.empty());
  EXPECT_GT(diag.last().resident_bytes, 0u);
  Window(5);
  EXPECT_TRUE(snapshots_.empty());
  Window(5);  // the third in a row
  ASSERT_EQ(snapshots_.size(), 1u);
  EXPECT_TRUE(diag.last().overload);
  EXPECT_EQ(diag.last().deferring_windows, 3u);
  EXPECT_NE(snapshots_[0].find("\"overload\":true"), std::string::npos) << snapshots_[0];
  EXPECT_NE(snapshots_[0].find("\"sessions\":7"), std::string::npos) << snapshots_[0];
  EXPECT_EQ(snapshots_[0], diag.Json());
  Window(5);  // every window while it lasts
  EXPECT_EQ(snapshots_.size(), 2u);
  Window(1);  // one task fits the budget: no deferral, the overload ends
  EXPECT_FALSE(diag.last().overload);
  EXPECT_EQ(diag.last().deferring_windows, 0u);
  EXPECT_EQ(diag.last().deferred, 0u);
  Window(5);
  Window(5);
  EXPECT_EQ(snapshots_.size(), 2u) << "the count starts over";
  Window(5);
  EXPECT_EQ(snapshots_.size(), 3u);
}

// The series behind the dashboard's charts: one point per closed window, oldest first, as columns,
// and no more than the history holds (here 3 windows of 1 s).
TEST_F(DiagnosticsTest, TheSeriesKeepsTheWindowsOfItsHistoryAsColumnsOldestFirst) {
  int sessions = 0;
  Diagnostics diag(*kernel_, {std::chrono::seconds(1),
                              [&](auto& extra) { extra.emplace_back("sessions", ++sessions); },
                              std::chrono::seconds(3)});
  auto series = [&] { return diag.SeriesJson().at("series").as_object(); };
  EXPECT_EQ(diag.SeriesJson().at("series").at("time_ms").as_array().size(), 0u);
  Window(5);
  Window(1);
  json::object s = series();
  ASSERT_EQ(s.at("time_ms").as_array().size(), 2u);
  EXPECT_EQ(s.at("deferred").as_array()[0].to_number<double>(), 4);  // the deferring window
  EXPECT_EQ(s.at("deferred").as_array()[1].to_number<double>(), 0);
  EXPECT_NEAR(s.at("step_max_ms").as_array()[0].to_number<double>(), 2.0, 1e-9);
  EXPECT_GT(s.at("tps").as_array()[1].to_number<double>(), 0);
  EXPECT_EQ(s.at("sessions").as_array(), (json::array{1.0, 2.0}));
  Window(1);
  Window(1);
  s = series();
  EXPECT_EQ(diag.series_size(), 3u);
  EXPECT_EQ(s.at("sessions").as_array(), (json::array{2.0, 3.0, 4.0}));  // the oldest went
  EXPECT_EQ(s.at("step_ms").as_array().size(), 3u);
  const json::array& t = s.at("time_ms").as_array();
  EXPECT_LE(t[0].as_int64(), t[2].as_int64());
  EXPECT_EQ(diag.SeriesJson().at("interval_seconds").to_number<double>(), 1);
  EXPECT_EQ(diag.SeriesJson().at("history_seconds").to_number<double>(), 3);
}

TEST(DebugBundlesTest, WritesOwnerOnlyFilesAndKeepsTheNewestTen) {
  const std::string dir = ::testing::TempDir() + "molt_bundles_" + std::to_string(::getpid());
  fs::remove_all(dir);
  DebugBundles bundles(
      dir, [](std::string_view reason) { return "{\"reason\":\"" + std::string(reason) + "\"}"; });
  std::vector<std::string> paths;
  for (int i = 0; i < 12; ++i) {
    Result<std::string> p = bundles.Write("take " + std::to_string(i));
    ASSERT_TRUE(p.ok()) << p.status().message();
    paths.push_back(*p);
  }
  EXPECT_NE(paths[0].find("-take-0.json"), std::string::npos) << paths[0];
  std::size_t left = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++left;
  }
  EXPECT_EQ(left, DebugBundles::kKept);
  EXPECT_FALSE(fs::exists(paths[0]));
  EXPECT_FALSE(fs::exists(paths[1]));
  std::ifstream in(paths[11]);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "{\"reason\":\"take 11\"}");
  struct stat st {};
  ASSERT_EQ(::stat(paths[11].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  fs::remove_all(dir);
}

TEST(DebugBundlesTest, SecretsOfTheConfigurationAreRedacted) {
  Config c;
  c.Set("admin.token", std::string("abc"));
  c.Set("plugins.shop.PaymentPassword", std::string("x"));
  c.Set("plugins.shop.private_key_file", std::string("/k.pem"));
  c.Set("net.port", std::int64_t{7777});
  c.Set("net.tls_cert", std::string("/c.pem"));
  EXPECT_EQ(boost::json::serialize(RedactedConfigJson(c)),
            "{\"admin.token\":\"<redacted>\",\"net.port\":7777,\"net.tls_cert\":\"/c.pem\","
            "\"plugins.shop.PaymentPassword\":\"<redacted>\","
            "\"plugins.shop.private_key_file\":\"<redacted>\"}");
}

// A server whose handler echoes the request, or never answers for /stall.
class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits = {}, HttpPlanner planner = nullptr) {
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(
        "127.0.0.1", 0, limits,
        [this](HttpRequest req, HttpReply reply) {
          ++handled_;
          if (req.path == "/stall") {
            stalled_ = std::move(reply);  // answered never, or after the server is gone
            return;
          }
          if (!req.body_file.empty()) {  // an upload: its file's bytes
            std::ifstream in(req.body_file, std::ios::binary);
            req.body = "file:" + std::string(std::istreambuf_iterator<char>(in), {});
          }
          reply({200,
                 "text/plain",
                 req.method + " " + req.path + "?" + req.query + " [" + req.authorization + "] " +
                     req.body,
                 {}});
        },
        std::move(planner));
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  std::uint16_t port() const { return server_->port(); }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> handled_{0};
  HttpReply stalled_;
};

TEST_F(HttpServerTest, AnswersAndKeepsTheConnectionAliveBetweenRequests) {
  Start();
  test::HttpResult r = HttpCall(port(), "POST", "/x?y=1", "tok", "hello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /x?y=1 [Bearer tok] hello");
  EXPECT_NE(r.headers.find("Cache-Control: no-store"), std::string::npos);
  // Two requests on one connection, the second after the first's answer.
  const int fd = test::HttpConnect(port());
  const std::string req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  ::send(fd, req.data(), req.size(), 0);
  std::string first;
  char buf[512];
  while (first.find("GET /a?") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    first.append(buf, static_cast<std::size_t>(n));
  }
  const std::string last = "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ::send(fd, last.data(), last.size(), 0);
  EXPECT_EQ(test::HttpParse(test::HttpReadAll(fd)).body, "GET /b? [] ");
  ::close(fd);
}

TEST_F(HttpServerTest, OversizedHeadersTooManyFieldsAndBigBodiesAreRefused) {
  HttpLimits limits;
  limits.max_header_bytes = 1024;
  limits.max_headers = 8;
  limits.max_body_bytes = 100;
  Start(limits);
  test::HttpResult big =
      HttpRaw(port(), "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
  EXPECT_EQ(big.status, 431);
  EXPECT_EQ(big.body, "the request's header is over 1024 bytes\n");
  std::string many = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 10; ++i) {
    many += "X-" + std::to_string(i) + ": 1\r\n";
  }
  test::HttpResult fields = HttpRaw(port(), many + "\r\n");
  EXPECT_EQ(fields.status, 431);
  EXPECT_EQ(fields.body, "the request has more than 8 header fields\n");
  test::HttpResult body = HttpCall(port(), "POST", "/", "", std::string(500, 'b'));
  EXPECT_EQ(body.status, 413);
  EXPECT_EQ(body.body, "the request's body is over 100 bytes\n");
  test::HttpResult bad = HttpRaw(port(), "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(handled_, 0) << "no bad request reaches the handler";
  EXPECT_EQ(HttpCall(port(), "GET", "/fine").status, 200);
}

TEST_F(HttpServerTest, ASlowClientIsCutAndOthersAreServedMeanwhile) {
  HttpLimits limits;
  limits.read_timeout = std::chrono::milliseconds(300);
  Start(limits);
  const int slow = test::HttpConnect(port());
  ::send(slow, "GET / HT", 8, 0);  // and nothing more
  EXPECT_EQ(HttpCall(port(), "GET", "/other").status, 200);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(test::HttpReadAll(slow, 10000), "");  // closed without an answer
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(9));
  ::close(slow);
}

TEST_F(HttpServerTest, ConnectionsPastTheLimitAreClosedAndTheHeldOnesServed) {
  HttpLimits limits;
  limits.max_connections = 2;
  Start(limits);
  const int a = test::HttpConnect(port());
  const int b = test::HttpConnect(port());
  // Give the server the two first (accepted in order); the third is closed at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int c = test::HttpConnect(port());
  EXPECT_EQ(test::HttpReadAll(c, 10000), "");
  const std::string req = "GET /held HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ::send(a, req.data(), req.size(), 0);
  EXPECT_EQ(test::HttpParse(test::HttpReadAll(a)).status, 200);
  ::close(a);
  ::close(b);
  ::close(c);
}

TEST_F(HttpServerTest, AHandlerThatDoesNotAnswerIsAnswered503AndALateReplyIsDropped) {
  HttpLimits limits;
  limits.handler_timeout = std::chrono::milliseconds(200);
  Start(limits);
  test::HttpResult r = HttpCall(port(), "GET", "/stall");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "the kernel thread did not answer within 200 ms\n");
  EXPECT_NE(r.headers.find("Retry-After: 1"), std::string::npos);
  ASSERT_TRUE(stalled_);
  stalled_({200, "text/plain", "late", {}});  // the connection is gone: nothing happens
  HttpCall(port(), "GET", "/stall");
  server_.reset();
  stalled_({200, "text/plain", "after the server", {}});  // safe: dropped
}

// Uploads (HttpPlan): the body streams to the file the plan names, within the plan's own limit;
// a refused head is answered before its body is read; a waiting call gets the plan's timeout.
TEST_F(HttpServerTest, APlanStreamsAnUploadToAFileRefusesAHeadOrWaitsLonger) {
  const std::string file = ::testing::TempDir() + "molt_upload_" + std::to_string(::getpid());
  std::filesystem::remove(file);
  HttpLimits limits;
  limits.max_body_bytes = 100;
  limits.handler_timeout = std::chrono::milliseconds(200);
  Start(limits, [&](const HttpRequest& head) {
    HttpPlan plan;
    if (head.path == "/upload") {
      plan.body_file = file;
      plan.max_body_bytes = 10000;
    } else if (head.path == "/refused") {
      plan.refuse = HttpResponse{401, "text/plain", "no\n", {}};
    } else if (head.path == "/stall") {
      plan.handler_timeout = std::chrono::milliseconds(1500);
    }
    return plan;
  });
  const std::string body(5000, 'u');  // over the limits' 100, under the plan's
  test::HttpResult r = HttpCall(port(), "POST", "/upload", "", body);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /upload? [] file:" + body);
  std::filesystem::remove(file);
  // Over the plan's limit, by its Content-Length or as chunks: 413, and no file left behind.
  r = HttpCall(port(), "POST", "/upload", "", std::string(20000, 'u'));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body, "the request's body is over 10000 bytes\n");
  std::string chunked = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 30; ++i) {
    chunked += "3e8\r\n" + std::string(1000, 'c') + "\r\n";
  }
  r = HttpRaw(port(), chunked + "0\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_FALSE(std::filesystem::exists(file));
  // A client that asks to continue first gets "100 Continue", then its answer.
  r = HttpRaw(port(),
              "POST /upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
              "Content-Length: 3\r\nConnection: close\r\n\r\nabc");
  EXPECT_EQ(r.status, 100);
  EXPECT_NE(r.body.find("HTTP/1.1 200 OK"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("file:abc"), std::string::npos) << r.body;
  std::filesystem::remove(file);
  const int before = handled_;
  r = HttpCall(port(), "POST", "/refused", "", std::string(5000, 'x'));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(handled_, before) << "a refused head never reaches the handler";
  // The plan's timeout: a reply after the limits' 200 ms still lands.
  std::thread late([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    stalled_({200, "text/plain", "late but waited for", {}});
  });
  r = HttpCall(port(), "GET", "/stall");
  late.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "late but waited for");
}

TEST(HttpServerStartTest, ATakenPortOrABadAddressIsNamed) {
  Result<std::unique_ptr<HttpServer>> first =
      HttpServer::Start("127.0.0.1", 0, {}, [](HttpRequest, HttpReply) {});
  ASSERT_TRUE(first.ok());
  const std::uint16_t port = (*first)->port();
  Result<std::unique_ptr<HttpServer>> second =
      HttpServer::Start("127.0.0.1", port, {}, [](HttpRequest, HttpReply) {});
  EXPECT_EQ(second.status().message(),
            "admin endpoint: cannot listen on 127.0.0.1:" + std::to_string(port) +
                ": Address already in use (another moltd runs there? pass --admin "
                "ADDRESS:PORT, or --admin off)");
  EXPECT_EQ(HttpServer::Start("nowhere", 0, {}, [](HttpRequest, HttpReply) {}).status().message(),
            "admin endpoint: \"nowhere\" is not an IP address (use e.g. 127.0.0.1)");
}

}  // namespace
}  // namespace molt::kernel::admin

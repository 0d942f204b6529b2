// SPDX-License-Identifier: Apache-2.0
// Analytics on a real kernel with a ManualClock and real files: the flush after the first event,
// sampling (seeded), the per-minute cap, invalid events, the queue's bound, rotation, a failed
// write, and the drain. Every drop is counted by its reason. Then the HTTP sink against a real
// endpoint on loopback: batches arrive as JSON Lines; a failed try is sent again with backoff and
// counted; a 4xx, a closed port and a silent server are counted as failed with the reason; the
// URL is checked before moltd starts.
#include "kernel/src/analytics/analytics.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernel/src/analytics/http_sink.h"
#include "kernel/src/core/kernel.h"
#include "tests/support/http_endpoint.h"

namespace molt::kernel::analytics {
namespace {

namespace fs = std::filesystem;
using molt::test::Endpoint;
using molt::test::Request;

class AnalyticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "analytics_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    KernelOptions o;
    o.clock = &clock_;
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
  }
  void TearDown() override {
    kernel_.reset();
    fs::remove_all(dir_);
  }
  AnalyticsOptions Options() {
    AnalyticsOptions o;
    o.dir = dir_;
    o.seed = 42;
    return o;
  }
  // The lines of events.jsonl, parsed.
  std::vector<boost::json::object> Lines() {
    std::vector<boost::json::object> out;
    std::ifstream in(dir_ + "/events.jsonl");
    for (std::string line; std::getline(in, line);) {
      out.push_back(boost::json::parse(line).as_object());
    }
    return out;
  }
  // The HTTP sink to `url`: two retries, 5 ms backoff.
  AnalyticsOptions HttpOptions(const std::string& url) {
    AnalyticsOptions o = Options();
    o.http = ParseHttpUrl(url).value();
    o.http_retries = 2;
    o.http_backoff = std::chrono::milliseconds(5);
    o.http_timeout = std::chrono::milliseconds(2000);
    return o;
  }
  // Queues `n` events and waits until the writer is done with them.
  void Send(Analytics& a, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(a.Track("shop", "purchase", "", 0, i, "").ok());
    }
    a.Drain();
  }
  std::uint64_t Dropped(const Analytics& a, DropReason r) {
    return a.stats().dropped[static_cast<int>(r)];
  }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::string dir_;
};

TEST_F(AnalyticsTest, EventsAreWrittenAsJsonLinesTenSecondsAfterTheFirstOne) {
  Analytics a(*kernel_, Options());
  ASSERT_TRUE(a.Track("shop", "purchase", "ada", 7, 2.5, R"({"item":"gem"})").ok());
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(a.Track("shop", "visit", "", 0, 0, "").ok());
  kernel_->scheduler().Step();
  EXPECT_EQ(a.stats().batches, 0u);  // not due: 10 s after the first event
  clock_.Advance(std::chrono::seconds(5));
  kernel_->scheduler().Step();
  EXPECT_EQ(a.stats().batches, 1u);
  a.Drain();  // waits for the writer
  const std::vector<boost::json::object> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("name").as_string(), "purchase");
  EXPECT_EQ(lines[0].at("plugin").as_string(), "shop");
  EXPECT_EQ(lines[0].at("user").as_string(), "ada");
  EXPECT_EQ(lines[0].at("session").to_number<std::uint64_t>(), 7u);
  EXPECT_EQ(lines[0].at("value").as_double(), 2.5);
  EXPECT_EQ(lines[0].at("fields").at("item").as_string(), "gem");
  EXPECT_GT(lines[0].at("ts_ms").as_int64(), 1'600'000'000'000);
  EXPECT_FALSE(lines[1].contains("user"));  // no session: no user
  EXPECT_FALSE(lines[1].contains("fields"));
  const AnalyticsStats s = a.stats();
  EXPECT_EQ(s.tracked, 2u);
  EXPECT_EQ(s.written, 2u);
  EXPECT_EQ(s.queued, 0u);
  // The next event starts the next 10 s.
  ASSERT_TRUE(a.Track("shop", "visit", "", 0, 1, "").ok());
  clock_.Advance(std::chrono::seconds(9));
  kernel_->scheduler().Step();
  EXPECT_EQ(a.stats().batches, 1u);
}

TEST_F(AnalyticsTest, SamplingKeepsItsShareSeededAndCountsTheRest) {
  AnalyticsOptions o = Options();
  o.sample["tick"] = 0.25;
  o.max_per_minute = 0;  // no cap
  auto run = [&] {
    Analytics a(*kernel_, o);
    int kept = 0;
    for (int i = 0; i < 2000; ++i) {
      const Status s = a.Track("p", "tick", "", 0, i, "");
      kept += s.ok();
      if (!s.ok()) {
        EXPECT_EQ(s.code(), Status::Code::kRejected);
        EXPECT_EQ(s.message(),
                  "analytics event \"tick\" sampled out (analytics.sample keeps "
                  "0.250000)");
      }
    }
    EXPECT_TRUE(a.Track("p", "other", "", 0, 0, "").ok());  // not sampled
    EXPECT_EQ(Dropped(a, DropReason::kSampledOut), static_cast<std::uint64_t>(2000 - kept));
    return kept;
  };
  const int kept = run();
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_EQ(run(), kept);  // the same seed keeps the same events
}

TEST_F(AnalyticsTest, ThePerMinuteCapRefusesTheRestOfTheMinute) {
  AnalyticsOptions o = Options();
  o.max_per_minute = 3;
  Analytics a(*kernel_, o);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(a.Track("p", "e", "", 0, i, "").ok());
  }
  const Status over = a.Track("p", "e", "", 0, 3, "");
  EXPECT_EQ(over.code(), Status::Code::kRejected);
  EXPECT_EQ(over.message(),
            "analytics event \"e\" over the cap of 3 a minute (analytics.max_per_minute)");
  EXPECT_EQ(Dropped(a, DropReason::kOverCap), 1u);
  clock_.Advance(std::chrono::minutes(1));
  EXPECT_TRUE(a.Track("p", "e", "", 0, 4, "").ok());
}

TEST_F(AnalyticsTest, AnInvalidEventIsRefusedNamingWhatIsWrong) {
  Analytics a(*kernel_, Options());
  Status s = a.Track("p", "has space", "", 0, 0, "");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "analytics event name \"has space\" is not 1 to 64 of [A-Za-z0-9_:-] (no '.': the "
            "configuration's analytics.sample.<name> names it)");
  EXPECT_FALSE(a.Track("p", "shop.buy", "", 0, 0, "").ok());
  EXPECT_FALSE(a.Track("p", std::string(65, 'a'), "", 0, 0, "").ok());
  s = a.Track("p", "e", "", 0, std::nan(""), "");
  EXPECT_EQ(s.message(), "analytics event \"e\": its value is not a finite number");
  s = a.Track("p", "e", "", 0, 0, "[1,2]");
  EXPECT_EQ(s.message(),
            "analytics event \"e\": its fields are not a JSON object of at most 4096 bytes (5 "
            "bytes)");
  s = a.Track("p", "e", "", 0, 0, "{\"a\":");
  EXPECT_NE(s.message().find("(5 bytes: "), std::string::npos) << s.message();
  s = a.Track("p", "e", "", 0, 0, "{\"a\":\"" + std::string(4100, 'x') + "\"}");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Dropped(a, DropReason::kInvalid), 7u);
  EXPECT_EQ(a.stats().tracked, 0u);
}

TEST_F(AnalyticsTest, BeyondTheQueuesBoundEventsAreRefusedAndCounted) {
  AnalyticsOptions o = Options();
  o.max_queue = 2;
  Analytics a(*kernel_, o);
  EXPECT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
  EXPECT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
  const Status s = a.Track("p", "e", "", 0, 0, "");
  EXPECT_EQ(s.message(), "analytics event \"e\": 2 events wait to be written already");
  EXPECT_EQ(Dropped(a, DropReason::kQueueFull), 1u);
  a.Drain();
  EXPECT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());  // written: room again
}

TEST_F(AnalyticsTest, TheFileRotatesBySizeAndKeepsTheNewestRotatedFiles) {
  AnalyticsOptions o = Options();
  o.rotate_bytes = 4096;
  o.keep_files = 2;
  o.max_per_minute = 0;
  Analytics a(*kernel_, o);
  const std::string fields = "{\"pad\":\"" + std::string(1000, 'x') + "\"}";
  for (int batch = 0; batch < 6; ++batch) {
    for (int i = 0; i < 5; ++i) {  // about 5 KiB a batch: one rotation before each next write
      ASSERT_TRUE(a.Track("p", "e", "", 0, batch, fields).ok());
    }
    a.Drain();
  }
  EXPECT_EQ(a.stats().written, 30u);
  EXPECT_EQ(a.stats().rotations, 5u);
  int rotated = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
    rotated += e.path().filename().string().rfind("events-", 0) == 0;
  }
  EXPECT_EQ(rotated, 2);
  EXPECT_EQ(Lines().size(), 5u);  // the newest batch, in events.jsonl
}

TEST_F(AnalyticsTest, AWriteThatFailsCountsItsEventsAsDroppedAndSaysWhy) {
  std::ofstream(dir_) << "a file where the directory should be";
  {
    Analytics a(*kernel_, Options());
    ASSERT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
    ASSERT_TRUE(a.Track("p", "e", "", 0, 0, "").ok());
    a.Drain();
    const AnalyticsStats s = a.stats();
    EXPECT_EQ(s.written, 0u);
    EXPECT_EQ(s.dropped[static_cast<int>(DropReason::kFailed)], 2u);
    EXPECT_EQ(s.queued, 0u);
    EXPECT_NE(s.last_error.find("2 analytics events not written to " + dir_ + "/events.jsonl: "),
              std::string::npos)
        << s.last_error;
  }
  fs::remove(dir_);
}

TEST_F(AnalyticsTest, TheDestructorWritesWhatIsQueued) {
  {
    Analytics a(*kernel_, Options());
    ASSERT_TRUE(a.Track("p", "last", "", 0, 1, "").ok());
  }  // the close: no flush was due yet
  const std::vector<boost::json::object> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("name").as_string(), "last");
}

// The HTTP sink, against a real endpoint on loopback (tests/support/http_endpoint.h).

TEST_F(AnalyticsTest, ABatchIsPostedAsJsonLinesAndNothingGoesToTheFile) {
  Endpoint endpoint({});
  Analytics a(*kernel_, HttpOptions(endpoint.url()));
  ASSERT_TRUE(a.Track("shop", "purchase", "", 0, 2.5, R"({"item":"gem"})").ok());
  ASSERT_TRUE(a.Track("shop", "visit", "", 0, 0, "").ok());
  a.Drain();
  const std::vector<Request> got = endpoint.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].head.substr(0, got[0].head.find("\r\n")), "POST /ingest HTTP/1.1");
  EXPECT_NE(got[0].head.find("Content-Type: application/x-ndjson"), std::string::npos)
      << got[0].head;
  const std::string& body = got[0].body;
  ASSERT_EQ(std::count(body.begin(), body.end(), '\n'), 2) << body;
  const boost::json::object first = boost::json::parse(body.substr(0, body.find('\n'))).as_object();
  EXPECT_EQ(first.at("name").as_string(), "purchase");
  EXPECT_EQ(first.at("fields").at("item").as_string(), "gem");
  EXPECT_EQ(a.stats().written, 2u);
  EXPECT_EQ(a.stats().retries, 0u);
  EXPECT_FALSE(fs::exists(dir_ + "/events.jsonl"));
}

TEST_F(AnalyticsTest, AFailedTryIsSentAgainWithBackoffAndCounted) {
  Endpoint endpoint({503, 500});
  Analytics a(*kernel_, HttpOptions(endpoint.url()));
  Send(a, 3);
  const std::vector<Request> got = endpoint.requests();
  ASSERT_EQ(got.size(), 3u);            // 503, 500, then 200
  EXPECT_EQ(got[2].body, got[0].body);  // the same batch each time
  EXPECT_EQ(a.stats().written, 3u);
  EXPECT_EQ(a.stats().retries, 2u);
  EXPECT_EQ(Dropped(a, DropReason::kFailed), 0u);
}

TEST_F(AnalyticsTest, OutOfRetriesTheBatchIsCountedAsFailedAndTheNextTriesOnce) {
  Endpoint endpoint({503, 503, 503, 502});
  Analytics a(*kernel_, HttpOptions(endpoint.url()));
  Send(a, 2);
  EXPECT_EQ(endpoint.requests().size(), 3u);  // the try and 2 retries
  EXPECT_EQ(Dropped(a, DropReason::kFailed), 2u);
  EXPECT_EQ(a.stats().written, 0u);
  EXPECT_EQ(a.stats().queued, 0u);
  EXPECT_EQ(a.stats().last_error,
            "2 analytics events not written: " + endpoint.url() +
                " answered 503: nope (after 3 tries) (counted as dropped: failed)");
  // The endpoint is down: the next batch is tried once, not three times.
  Send(a, 1);
  EXPECT_EQ(endpoint.requests().size(), 4u);
  EXPECT_EQ(Dropped(a, DropReason::kFailed), 3u);
  EXPECT_NE(a.stats().last_error.find("answered 502: nope (after 1 try)"), std::string::npos)
      << a.stats().last_error;
  // Back up: a batch gets through, and the retries are back for the one after.
  Send(a, 1);
  EXPECT_EQ(a.stats().written, 1u);
  EXPECT_EQ(a.stats().retries, 2u);
}

TEST_F(AnalyticsTest, AFourHundredIsNotSentAgain) {
  Endpoint endpoint({400});
  Analytics a(*kernel_, HttpOptions(endpoint.url()));
  Send(a, 1);
  EXPECT_EQ(endpoint.requests().size(), 1u);
  EXPECT_EQ(Dropped(a, DropReason::kFailed), 1u);
  EXPECT_EQ(a.stats().retries, 0u);
  EXPECT_NE(a.stats().last_error.find(
                "answered 400: nope (not retried: the endpoint refuses the batch itself)"),
            std::string::npos)
      << a.stats().last_error;
}

TEST_F(AnalyticsTest, ATooManyRequestsIsSentAgain) {
  Endpoint endpoint({429});
  Analytics a(*kernel_, HttpOptions(endpoint.url()));
  Send(a, 1);
  EXPECT_EQ(a.stats().written, 1u);
  EXPECT_EQ(a.stats().retries, 1u);
}

TEST_F(AnalyticsTest, NothingListeningIsCountedWithTheSocketsReason) {
  std::string url;
  {
    Endpoint gone({});
    url = gone.url();
  }  // the port is closed again
  AnalyticsOptions o = HttpOptions(url);
  o.http_retries = 1;
  Analytics a(*kernel_, o);
  Send(a, 1);
  EXPECT_EQ(Dropped(a, DropReason::kFailed), 1u);
  EXPECT_EQ(a.stats().retries, 1u);
  EXPECT_NE(a.stats().last_error.find(url + ": cannot connect: Connection refused (after 2 tries)"),
            std::string::npos)
      << a.stats().last_error;
}

TEST_F(AnalyticsTest, AServerThatNeverAnswersTimesOut) {
  Endpoint silent({}, /*silent=*/true);
  AnalyticsOptions o = HttpOptions(silent.url());
  o.http_retries = 0;
  o.http_timeout = std::chrono::milliseconds(200);
  Analytics a(*kernel_, o);
  Send(a, 1);
  EXPECT_EQ(Dropped(a, DropReason::kFailed), 1u);
  EXPECT_NE(a.stats().last_error.find(silent.url() +
                                      ": no answer within 200 ms (at read the answer) (after 1 "
                                      "try)"),
            std::string::npos)
      << a.stats().last_error;
}

TEST(HttpUrlTest, AnHttpUrlIsSplitAndEverythingElseIsRefusedWithTheFix) {
  const HttpEndpoint e = ParseHttpUrl("http://collector.local:9000/v1/events?src=molt").value();
  EXPECT_EQ(e.host, "collector.local");
  EXPECT_EQ(e.port, "9000");
  EXPECT_EQ(e.target, "/v1/events?src=molt");
  const HttpEndpoint plain = ParseHttpUrl("http://[::1]").value();
  EXPECT_EQ(plain.host, "::1");
  EXPECT_EQ(plain.port, "80");
  EXPECT_EQ(plain.target, "/");
  EXPECT_EQ(ParseHttpUrl("https://x/").status().message(),
            "analytics.http_url \"https://x/\": moltd posts plain http only; run a TLS proxy "
            "beside it (nginx, Vector) and name its http:// address");
  EXPECT_EQ(ParseHttpUrl("ftp://x/").status().message(),
            "analytics.http_url \"ftp://x/\" is not an http:// URL: write "
            "http://HOST[:PORT][/PATH]");
  EXPECT_EQ(ParseHttpUrl("http://x:70000/").status().message(),
            "analytics.http_url \"http://x:70000/\" has a port outside 1 to 65535: write "
            "http://HOST[:PORT][/PATH]");
  EXPECT_EQ(ParseHttpUrl("http://x:ab/").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ParseHttpUrl("http:///path").status().message(),
            "analytics.http_url \"http:///path\" names no host: write http://HOST[:PORT][/PATH]");
  EXPECT_EQ(ParseHttpUrl("http://u:p@x/").status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace molt::kernel::analytics

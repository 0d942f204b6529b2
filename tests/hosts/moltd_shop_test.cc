// SPDX-License-Identifier: Apache-2.0
// The bundled shop plugin in a real moltd (plugins/shop): a purchase is granted into the player's
// profile exactly once, by its receipt, whatever crashes — a real SIGKILL at random points during
// 1,000 purchases, real SQLite files read back with sqlite3. No timing assertions.
#include <gtest/gtest.h>
#include <molt/molt.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shop_generated.h"
#include "test_client.h"
#include "tests/support/child_process.h"
#include "tests/support/http_endpoint.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;
namespace w = ::molt::wire;
using molt::test::kMoltd;
using molt::test::kPlugins;
using molt::test::Process;
using molt::test::Shell;
using molt::test::TestClient;

// What a shop.Buy came back with.
struct Answer {
  std::uint32_t id = 0;
  std::int32_t status = 0;
  std::string text;  // an error's reason
  std::int64_t owned = -1;
  bool replay = false;
};

// A player in the shop: sends purchases and reads their answers.
class Buyer {
 public:
  Buyer(const std::string& port, const std::string& user)
      : client_(static_cast<std::uint16_t>(std::stoi(port))) {
    molt::test::Frame welcome = client_.Hello(user);
    if (welcome.type() != w::Body::Welcome) {
      return;
    }
    for (const auto* ch : *welcome.envelope()->body_as_Welcome()->channels()) {
      if (ch->name()->str() == "shop.Buy") {
        buy_ = ch->id();
      }
    }
  }
  bool joined() const { return buy_ != kNone; }
  bool Send(std::uint32_t id, const std::string& receipt, const std::string& item) {
    flatbuffers::FlatBufferBuilder b;
    b.Finish(molt::shop::CreatePurchase(b, b.CreateString(receipt), b.CreateString(item)));
    return client_.Request(buy_, id, std::span(b.GetBufferPointer(), b.GetSize()));
  }
  // The next answer; nullopt once the link closed or nothing came in `timeout`.
  std::optional<Answer> Next(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    molt::test::Frame f = client_.NextOf(w::Body::Response, timeout);
    if (f.type() != w::Body::Response) {
      return std::nullopt;
    }
    const w::Response* r = f.envelope()->body_as_Response();
    Answer a;
    a.id = r->id();
    a.status = r->status();
    if (r->payload() != nullptr && r->status() == 0) {
      const auto* g = flatbuffers::GetRoot<molt::shop::Granted>(r->payload()->data());
      a.owned = g->owned();
      a.replay = g->replay();
    } else if (r->payload() != nullptr) {
      a.text.assign(reinterpret_cast<const char*>(r->payload()->data()), r->payload()->size());
    }
    return a;
  }
  Answer Buy(const std::string& receipt, const std::string& item) {
    Send(++request_, receipt, item);
    Answer none;
    none.status = -999;
    none.text = "no answer";
    return Next().value_or(none);
  }
  void Leave() {
    client_.Bye();
    client_.Close();
  }

 private:
  static constexpr std::uint16_t kNone = 0xffff;
  TestClient client_;
  std::uint16_t buy_ = kNone;
  std::uint32_t request_ = 0;
};

class MoltdShopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ::testing::TempDir() + "moltd_shop_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(data_);
  }
  void TearDown() override { fs::remove_all(data_); }
  std::unique_ptr<Process> Start(const std::string& config) {
    const std::string path = data_ + ".json";
    std::ofstream(path) << config;
    auto p = std::make_unique<Process>(std::vector<std::string>{kMoltd, "--admin", "127.0.0.1:0",
                                                                "-p", kPlugins, "-d", data_,
                                                                "--port", "0", "--config", path});
    port_ = molt::test::ServingPort(*p, molt::test::kBundledPlugins);
    return p;
  }
  // The "items" object of the shop profile `key` ("shop/ada", "shop/#sales") in the database.
  std::string Items(const std::string& key) {
    return Shell("sqlite3 " + data_ + "/profiles.db \"SELECT json_extract(data, '$.items') FROM " +
                 "profiles WHERE key = '" + key + "'\" 2>&1");
  }
  std::string Sql(const std::string& query) {
    return Shell("sqlite3 " + data_ + "/profiles.db \"" + query + "\" 2>&1");
  }
  std::string data_;
  std::string port_;
};

TEST_F(MoltdShopTest, APurchaseIsGrantedOnceAndItsReceiptSentAgainIsAReplay) {
  auto server = Start(R"({"plugins": {"shop": {"crown_stock": 2}}})");
  ASSERT_FALSE(port_.empty()) << server->output();
  {
    Buyer ada(port_, "ada");
    ASSERT_TRUE(ada.joined()) << server->output();
    Answer a = ada.Buy("r1", "gem");  // sent before the profile loaded: the shop waits for it
    EXPECT_EQ(a.status, 0) << a.text;
    EXPECT_EQ(a.owned, 1);
    EXPECT_FALSE(a.replay);
    a = ada.Buy("r1", "gem");  // the same receipt again: granted before, nothing added
    EXPECT_EQ(a.status, 0) << a.text;
    EXPECT_EQ(a.owned, 1);
    EXPECT_TRUE(a.replay);
    a = ada.Buy("r1", "sword");  // a receipt names one purchase, whatever it claims now
    EXPECT_TRUE(a.replay);
    EXPECT_EQ(ada.Buy("r2", "gem").owned, 2);
    EXPECT_EQ(ada.Buy("r3", "crown").owned, 1);
    EXPECT_EQ(ada.Buy("r4", "crown").owned, 2);
    a = ada.Buy("r5", "crown");
    EXPECT_EQ(a.status, MOLT_ERR_REJECTED);
    EXPECT_EQ(a.text, "sold out: every crown is sold (2)");
    a = ada.Buy("r6", "axe");
    EXPECT_EQ(a.status, MOLT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(a.text, "the shop sells no \"axe\" (gem, sword, crown)");
    a = ada.Buy("", "gem");
    EXPECT_EQ(a.status, MOLT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(a.text, "a purchase needs its receipt id");
    ada.Leave();
  }
  {
    Buyer bob(port_, "bob");  // receipts are each player's: bob's "r1" is his own purchase
    ASSERT_TRUE(bob.joined());
    const Answer a = bob.Buy("r1", "sword");
    EXPECT_EQ(a.status, 0) << a.text;
    EXPECT_FALSE(a.replay);
    EXPECT_EQ(a.owned, 1);
    bob.Leave();
  }
  server->Signal(SIGTERM);
  EXPECT_EQ(server->Wait(), 0) << server->output();
  EXPECT_EQ(Items("shop/ada"), "{\"crown\":2,\"gem\":2}\n");
  EXPECT_EQ(Items("shop/bob"), "{\"sword\":1}\n");
  EXPECT_EQ(Items("shop/#sales"), "{\"crown\":2,\"gem\":2,\"sword\":1}\n");
  EXPECT_EQ(Sql("SELECT id FROM profile_transactions ORDER BY id"),
            "shop/ada/r1\nshop/ada/r2\nshop/ada/r3\nshop/ada/r4\nshop/bob/r1\n");
  EXPECT_NE(server->output().find("granted r1 to ada: gem (1 owned)"), std::string::npos)
      << server->output();
  EXPECT_NE(server->output().find("receipt r1 granted before, to ada: gem (1 owned)"),
            std::string::npos);
  // Each grant (not the replays) is a product event, written at the latest by the close.
  std::ifstream events(data_ + "/analytics/events.jsonl");
  std::vector<std::string> purchases;
  for (std::string line; std::getline(events, line);) {
    const boost::json::object e = boost::json::parse(line).as_object();
    EXPECT_EQ(e.at("name").as_string(), "purchase");
    EXPECT_EQ(e.at("plugin").as_string(), "shop");
    purchases.push_back(std::string(e.at("user").as_string()) + " " +
                        std::string(e.at("fields").at("receipt").as_string()) + " " +
                        std::string(e.at("fields").at("item").as_string()));
  }
  EXPECT_EQ(purchases, (std::vector<std::string>{"ada r1 gem", "ada r2 gem", "ada r3 crown",
                                                 "ada r4 crown", "bob r1 sword"}));
}

// With analytics.http_url the grants go to the endpoint instead of the file: a batch refused
// with a 503 is sent again, and the close waits for it.
TEST_F(MoltdShopTest, PurchaseEventsArePostedToTheAnalyticsEndpointAndRetried) {
  molt::test::Endpoint endpoint({503});
  auto server = Start(R"({"analytics": {"http_url": ")" + endpoint.url("/molt/events") +
                      R"(", "http_backoff_seconds": 0.05}})");
  ASSERT_FALSE(port_.empty()) << server->output();
  {
    Buyer ada(port_, "ada");
    ASSERT_TRUE(ada.joined()) << server->output();
    EXPECT_EQ(ada.Buy("r1", "gem").status, 0);
    EXPECT_EQ(ada.Buy("r2", "sword").status, 0);
    ada.Leave();
  }
  server->Signal(SIGTERM);  // the close: the batch is flushed, refused once, sent again
  EXPECT_EQ(server->Wait(), 0) << server->output();
  const std::vector<molt::test::Request> got = endpoint.requests();
  ASSERT_EQ(got.size(), 2u) << server->output();
  EXPECT_EQ(got[0].head.substr(0, got[0].head.find("\r\n")), "POST /molt/events HTTP/1.1");
  EXPECT_EQ(got[1].body, got[0].body);
  std::vector<std::string> purchases;
  std::size_t at = 0;
  for (std::size_t nl; (nl = got[1].body.find('\n', at)) != std::string::npos; at = nl + 1) {
    const boost::json::object e = boost::json::parse(got[1].body.substr(at, nl - at)).as_object();
    purchases.push_back(std::string(e.at("fields").at("receipt").as_string()) + " " +
                        std::string(e.at("fields").at("item").as_string()));
  }
  EXPECT_EQ(purchases, (std::vector<std::string>{"r1 gem", "r2 sword"}));
  EXPECT_FALSE(fs::exists(data_ + "/analytics/events.jsonl"));
  EXPECT_NE(server->output().find("[analytics] " + endpoint.url("/molt/events") +
                                  " answered 503: nope; sending again in 50 ms (retry 1 of 5)"),
            std::string::npos)
      << server->output();
}

// 1,000 purchases, eight in flight at a time, while moltd is killed with SIGKILL every 40 to 160
// acknowledgements, 0 to 30 ms after a batch went out (so some die queued, some mid-commit, some
// answered). After each kill the client sends every unacknowledged receipt again, and a few
// acknowledged ones, which must come back as replays. At the end every purchase was acknowledged
// and granted exactly once: the profile holds 1,000 gems, the ledger 1,000 sales.
TEST_F(MoltdShopTest, EveryAcknowledgedPurchaseIsGrantedOnceThroughKill9s) {
  constexpr int kPurchases = 1000;
  constexpr int kInFlight = 8;
  const std::string config = R"({"plugins": {"shop": {"rate": 2000}}})";
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  std::vector<bool> acked(kPurchases, false);
  int acks = 0;
  int kills = 0;
  int replays_after_ack = 0;
  int granted_unanswered = 0;
  std::int64_t last_owned = 0;
  int next = 0;  // the lowest receipt not acknowledged yet: every one below it was
  while (acks < kPurchases) {
    auto server = Start(config);
    ASSERT_FALSE(port_.empty()) << server->output();
    EXPECT_EQ(Sql("PRAGMA integrity_check"), "ok\n");
    Buyer ada(port_, "ada");
    ASSERT_TRUE(ada.joined()) << server->output();
    // Receipts acknowledged before the last kill (all below `next`), sent again: replays.
    for (int k = 0; k < 3 && next > 0; ++k) {
      const int i = pick(0, next - 1);
      const Answer a = ada.Buy("r" + std::to_string(i), "gem");
      ASSERT_EQ(a.status, 0) << a.text << "\n" << server->output();
      EXPECT_TRUE(a.replay) << "r" << i << " granted twice";
      ++replays_after_ack;
    }
    const int kill_after = acks + pick(40, 160);
    bool killed = false;
    while (acks < kPurchases && !killed) {
      std::vector<int> batch;
      for (int i = next; i < kPurchases && static_cast<int>(batch.size()) < kInFlight; ++i) {
        if (!acked[static_cast<std::size_t>(i)]) {
          batch.push_back(i);
        }
      }
      for (int i : batch) {
        ada.Send(static_cast<std::uint32_t>(i + 1), "r" + std::to_string(i), "gem");
      }
      if (acks >= kill_after) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pick(0, 30)));
        server->Signal(SIGKILL);
        server->Wait();
        killed = true;
        ++kills;
      }
      // Every answer that reached the client is an acknowledgement, even after the kill.
      for (std::size_t got = 0; got < batch.size(); ++got) {
        std::optional<Answer> a = ada.Next();
        if (!a) {
          ASSERT_TRUE(killed) << "no answer from a live server:\n" << server->output();
          break;
        }
        ASSERT_EQ(a->status, 0) << a->text << "\n" << server->output();
        const std::size_t i = a->id - 1;
        ASSERT_LT(i, acked.size());
        ASSERT_FALSE(acked[i]) << "r" << i << " answered twice";
        acked[i] = true;
        ++acks;
        EXPECT_GT(a->owned, 0);
        granted_unanswered += a->replay ? 1 : 0;  // committed before a kill, its answer lost
        last_owned = std::max(last_owned, a->owned);
      }
      while (next < kPurchases && acked[static_cast<std::size_t>(next)]) {
        ++next;
      }
    }
    if (!killed) {
      ada.Leave();
      server->Signal(SIGTERM);
      EXPECT_EQ(server->Wait(), 0) << server->output();
    }
  }
  EXPECT_GE(kills, 3);
  EXPECT_EQ(last_owned, kPurchases);
  EXPECT_EQ(Items("shop/ada"), "{\"gem\":" + std::to_string(kPurchases) + "}\n");
  EXPECT_EQ(Items("shop/#sales"), "{\"gem\":" + std::to_string(kPurchases) + "}\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM profile_transactions WHERE id LIKE 'shop/ada/r%'"),
            std::to_string(kPurchases) + "\n");
  RecordProperty("kills", kills);
  RecordProperty("replays_after_ack", replays_after_ack);
  RecordProperty("granted_unanswered", granted_unanswered);
}

// A hot swap (SIGHUP) in the middle of 200 pipelined purchases: the session stays, purchases
// the old generation had not granted are answered "send the receipt again" at its stop (not left
// to their timeout), and sent again each is granted once by the next generation.
TEST_F(MoltdShopTest, PurchasesInFlightThroughASwapAreGrantedOnce) {
  constexpr int kPurchases = 200;
  auto server = Start(R"({"plugins": {"shop": {"rate": 2000}}})");
  ASSERT_FALSE(port_.empty()) << server->output();
  Buyer ada(port_, "ada");
  ASSERT_TRUE(ada.joined()) << server->output();
  std::vector<bool> acked(kPurchases, false);
  int acks = 0;
  int sent_again = 0;
  bool swapped = false;
  while (acks < kPurchases) {
    std::vector<int> batch;
    for (int i = 0; i < kPurchases && batch.size() < 8; ++i) {
      if (!acked[static_cast<std::size_t>(i)]) {
        batch.push_back(i);
      }
    }
    for (int i : batch) {
      ada.Send(static_cast<std::uint32_t>(i + 1), "r" + std::to_string(i), "gem");
    }
    if (!swapped && acks >= 50) {
      server->Signal(SIGHUP);
      ASSERT_TRUE(server->WaitFor("\"swap\":\"ok\",\"reason\":\"SIGHUP\"")) << server->output();
      swapped = true;
    }
    for (std::size_t got = 0; got < batch.size(); ++got) {
      std::optional<Answer> a = ada.Next();
      ASSERT_TRUE(a.has_value()) << "a purchase left unanswered:\n" << server->output();
      const std::size_t i = a->id - 1;
      ASSERT_LT(i, acked.size());
      if (a->status == MOLT_ERR_STATE) {
        EXPECT_EQ(a->text, "the shop stopped (a swap or the close): send the receipt again");
        ++sent_again;
        continue;
      }
      ASSERT_EQ(a->status, 0) << a->text;
      ASSERT_FALSE(acked[i]) << "r" << i << " answered twice";
      acked[i] = true;
      ++acks;
    }
  }
  ada.Leave();
  server->Signal(SIGTERM);
  EXPECT_EQ(server->Wait(), 0) << server->output();
  EXPECT_EQ(Items("shop/ada"), "{\"gem\":" + std::to_string(kPurchases) + "}\n");
  EXPECT_EQ(Items("shop/#sales"), "{\"gem\":" + std::to_string(kPurchases) + "}\n");
  RecordProperty("sent_again", sent_again);
}

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Messages between servers (fleet/messages.h, ABI 1.9): a real plugin (tests/fixtures/plugins/
// messages.cc, builds messages/v1 and v2) loaded by the real loader publishes and hears its
// own alone, is refused by name, rate-limited, and handed across a swap what came while nobody
// listened; on a real PostgreSQL two servers hear each other, in order, once each. Its key-value
// calls are kv_layer_test.cc's.
#include "kernel/src/fleet/messages.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/fleet/kv_api.h"
#include "kernel/src/fleet/kv_store.h"
#include "kernel/src/fleet/messages_api.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/store/pg_connection.h"
#include "tests/support/postgres.h"

namespace molt::kernel::fleet {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string Build(const std::string& name) {
  return std::string(MOLT_FIXTURE_DIR) + "/messages/" + name;
}

// A kernel with the messages layer and the real loader; what the plugin tells on the Bus is kept.
class MessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_messages_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    kernel_ = std::move(Kernel::Boot({}).value());
    MessagesOptions o;
    o.server_id = "eu-1";
    o.branch = "prod";
    messages_ = std::make_unique<Messages>(
        o, [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); },
        [] { return std::size_t{0}; }, [] { return WallMs(); });
    ASSERT_TRUE(messages_->Open().ok());
    kv_ = std::make_unique<KvStore>(
        "", [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); },
        [] { return WallMs(); });
    ASSERT_TRUE(kv_->Open().ok());
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, dir_ + "/copies");
    plugins_->set_health(3, milliseconds(20));
    sub_ = kernel_->bus().Subscribe("*", [this](std::string_view topic, Args a) {
      if (!(topic.starts_with("Msg.") || topic == "Kv.Result") || topic == "Msg.Publish" ||
          topic == "Msg.Errors") {
        return;  // the tests' own
      }
      std::string line(topic);
      for (const Value& v : a) {
        line += " " +
                (v.type == Value::kString ? std::string(v.AsString()) : std::to_string(v.AsInt()));
      }
      events_.push_back(line);
    });
  }
  void TearDown() override {
    sub_.Disconnect();
    (void)kernel_->Shutdown();
    plugins_.reset();
    kv_.reset();
    messages_.reset();
    kernel_.reset();
    fs::remove_all(dir_);
  }
  void BootWith(const std::string& build) {
    AttachMessages(plugins_->shared(), *messages_);
    AttachKv(plugins_->shared(), *kv_);
    ASSERT_TRUE(plugins_->LoadDirectory(Build(build)).ok());
    ASSERT_TRUE(kernel_->Start().ok());
  }
  bool RunUntil(const std::function<bool()>& done, milliseconds timeout = milliseconds(20000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(milliseconds(5));
    }
    return done();
  }
  bool Saw(const std::string& line) {
    return RunUntil(
        [&] { return std::find(events_.begin(), events_.end(), line) != events_.end(); });
  }
  // The plugin publishes `data` on `topic`: "<code> <text>".
  std::string PluginPublishes(const std::string& topic, const std::string& data) {
    events_.clear();
    const Value args[] = {Value::String(topic), Value::String(data)};
    kernel_->bus().Publish("Msg.Publish", args);
    RunUntil([&] { return !events_.empty(); });
    return events_.empty() ? "" : events_.front().substr(std::string("Msg.Published ").size());
  }

  std::string dir_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Messages> messages_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<loader::PluginHost> plugins_;
  Connection sub_;
  std::vector<std::string> events_;
};

TEST_F(MessagesTest, AServerAloneHearsItsOwnMessages) {
  BootWith("v1");
  // Its start published "hello": heard back, from this server.
  EXPECT_TRUE(Saw("Msg.Heard v1 chat hello eu-1 1 0"));
  EXPECT_EQ(PluginPublishes("chat", "gg"), "0 ");
  EXPECT_TRUE(Saw("Msg.Heard v1 chat gg eu-1 1 0"));
  const MessageStats s = messages_->stats();
  EXPECT_EQ(s.published, 2u);
  EXPECT_EQ(s.delivered, 2u);
  EXPECT_FALSE(s.shared);
}

TEST_F(MessagesTest, BadTopicsAndSizesAreRefusedByName) {
  BootWith("v1");
  events_.clear();
  kernel_->bus().Publish("Msg.Errors", {});
  ASSERT_TRUE(RunUntil([&] { return events_.size() >= 5; }));
  const std::string invalid = std::to_string(MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(events_[0], "Msg.Error kernel topic " + invalid +
                            " topic \"__deploy\": topics starting with \"__\" are the kernel's");
  EXPECT_EQ(events_[1], "Msg.Error bad topic " + invalid +
                            " topic \"chat room\": a topic is letters, digits and _ . : / -");
  EXPECT_EQ(events_[2], "Msg.Error too big " + invalid +
                            " a message is at most 1000 bytes; this one on \"chat\" is 1001");
  EXPECT_EQ(events_[3],
            "Msg.Error subscribe " + invalid + " topic \"\": a topic is 1 to 64 characters");
  EXPECT_EQ(events_[4], "Msg.Error empty 0 ");  // data NULL with size 0 is a message
  EXPECT_TRUE(Saw("Msg.Heard v1 chat  eu-1 1 0"));
}

TEST_F(MessagesTest, BurstsPastTheBucketAreRefusedNotQueued) {
  BootWith("v1");  // its start took one token
  int ok = 0;
  std::string refused;
  for (int i = 0; i < 25; ++i) {
    const std::string r = PluginPublishes("chat", std::to_string(i));
    if (r == "0 ") {
      ++ok;
    } else if (refused.empty()) {
      refused = r;
    }
  }
  EXPECT_EQ(ok, 19);
  EXPECT_EQ(refused, std::to_string(MOLT_ERR_RATE_LIMITED) +
                         " this server publishes at most 150 messages a minute now (150 and 60 "
                         "per session, bursts of 20): try again later");
  EXPECT_EQ(messages_->stats().refused_rate, 6u);
}

TEST_F(MessagesTest, AMessageNobodyListensToIsHandedToTheNextGenerationsFirstListener) {
  BootWith("v1");  // v1 listens to "chat" only
  EXPECT_EQ(PluginPublishes("party/invite", "join me"), "0 ");
  ASSERT_TRUE(RunUntil([&] { return messages_->stats().sent == 2; }));
  RunUntil([] { return false; }, milliseconds(50));  // delivered: held, nobody listens
  const loader::SwapReport report = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(report.ok) << report.error;
  EXPECT_TRUE(Saw("Msg.Heard v2 party/invite join me eu-1 1 1"));
  EXPECT_EQ(messages_->stats().replayed, 1u);
  // The old generation's subscriptions went with it: "chat" is heard once, by v2.
  events_.clear();
  EXPECT_EQ(PluginPublishes("chat", "again"), "0 ");
  EXPECT_TRUE(Saw("Msg.Heard v2 chat again eu-1 1 0"));
  EXPECT_EQ(std::count(events_.begin(), events_.end(), "Msg.Heard v2 chat again eu-1 1 0"), 1);
  EXPECT_EQ(std::count_if(events_.begin(), events_.end(),
                          [](const std::string& e) { return e.starts_with("Msg.Heard v1"); }),
            0);
}

// The key-value slot (ABI 1.9) through the same plugin: its keys under its own name, the answer
// on the kernel thread; a bad key refused at once.
TEST_F(MessagesTest, WithoutTheLayerTheSlotsAreRefused) {
  // The plugin's init subscribes, and fails with the host's reason.
  const Status s = plugins_->LoadDirectory(Build("v1"));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const Status started = kernel_->Start();
  EXPECT_FALSE(started.ok());
  EXPECT_NE(started.message().find("this host sends no messages between servers (moltd does)"),
            std::string::npos)
      << started.message();
}

// Two servers' Messages on one PostgreSQL, each with a test thread for its kernel thread.
class PgMessagesTest : public ::testing::Test {
 protected:
  struct Server {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> heard;  // "<topic> <data> <server> <self>"
    std::unique_ptr<Messages> messages;

    void Open(const std::string& url, const std::string& id) {
      MessagesOptions o;
      o.url = url;
      o.server_id = id;
      o.branch = "prod";
      messages = std::make_unique<Messages>(
          o,
          [this](std::function<void()> fn) {
            std::lock_guard lock(mu);
            fn();
            cv.notify_all();
          },
          [] { return std::size_t{0}; }, [] { return WallMs(); });
      Status s = messages->Open();
      ASSERT_TRUE(s.ok()) << s.ToString();
      std::lock_guard lock(mu);
      ASSERT_TRUE(messages
                      ->Subscribe(this, "chat",
                                  [this](const Message& m, bool) {
                                    heard.push_back(m.topic + " " + m.data + " " + m.server + " " +
                                                    (m.self ? "1" : "0"));
                                  })
                      .ok());
    }
    Status Publish(const std::string& data) {
      std::lock_guard lock(mu);
      return messages->Publish("chat", data);
    }
    // Whether `n` messages were heard within 30 s (a send tried again after 1 and 3 s, a
    // listener back after a loaded machine's slow restart).
    bool AwaitHeard(std::size_t n) {
      std::unique_lock lock(mu);
      return cv.wait_for(lock, std::chrono::seconds(30), [&] { return heard.size() >= n; });
    }
    // What a failed assertion prints: what was heard and the counts.
    std::string Said() {
      const MessageStats st = messages->stats();
      std::lock_guard lock(mu);
      std::string out = fmt::format(
          "published {} sent {} delivered {} queued {} send_failures {} dropped_old {}; heard:",
          st.published, st.sent, st.delivered, st.queued, st.send_failures, st.dropped_old);
      for (const std::string& h : heard) {
        out += " [" + h + "]";
      }
      return out;
    }
  };
};

TEST_F(PgMessagesTest, ServersHearEachOtherInOrderOnceEach) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  Server a, b;
  a.Open(url, "a");
  b.Open(url, "b");
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(a.Publish("a" + std::to_string(i)).ok());
    ASSERT_TRUE(b.Publish("b" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(a.AwaitHeard(20));
  ASSERT_TRUE(b.AwaitHeard(20));
  std::this_thread::sleep_for(milliseconds(200));  // nothing more comes
  for (Server* s : {&a, &b}) {
    std::lock_guard lock(s->mu);
    ASSERT_EQ(s->heard.size(), 20u);
    // In order per publisher, each once; a's own marked self on a.
    std::vector<std::string> from_a, from_b;
    for (const std::string& h : s->heard) {
      (h.find(" a ") != std::string::npos ? from_a : from_b).push_back(h);
    }
    ASSERT_EQ(from_a.size(), 10u);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(from_a[i], "chat a" + std::to_string(i) + " a " + (s == &a ? "1" : "0"));
      EXPECT_EQ(from_b[i], "chat b" + std::to_string(i) + " b " + (s == &b ? "1" : "0"));
    }
  }
  // A server started now hears only what is published from now on.
  Server c;
  c.Open(url, "c");
  ASSERT_TRUE(a.Publish("late").ok());
  ASSERT_TRUE(c.AwaitHeard(1));
  std::this_thread::sleep_for(milliseconds(200));
  std::lock_guard lock(c.mu);
  EXPECT_EQ(c.heard, std::vector<std::string>{"chat late a 0"});
}

TEST_F(PgMessagesTest, MessagesPublishedWhileTheDatabaseIsAwayGoOutWhenItIsBack) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  Server a, b;
  a.Open(url, "a");
  b.Open(url, "b");
  pg.Stop();
  ASSERT_TRUE(a.Publish("while away").ok());  // queued: the send fails and is tried again
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_TRUE(pg.Start()) << pg.error();
  ASSERT_TRUE(b.AwaitHeard(1)) << "sent at a retry (1, 3, 9 s), read at b's reconnect";
  std::lock_guard lock(b.mu);
  EXPECT_EQ(b.heard, std::vector<std::string>{"chat while away a 0"});
}

// A restart breaks each server's connections (pg_ctl -m fast, or -m immediate, which tells no
// client): the next publish finds it on first use, and the message still goes out once.
TEST_F(PgMessagesTest, AMessagePublishedAfterARestartGoesOutOnce) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  Server a, b;
  a.Open(url, "a");
  b.Open(url, "b");
  ASSERT_TRUE(a.Publish("before").ok());
  ASSERT_TRUE(b.AwaitHeard(1)) << "a: " << a.Said() << "\nb: " << b.Said();
  ASSERT_TRUE(pg.Restart(molt::test::PostgresServer::Stopping::kFast)) << pg.error();
  ASSERT_TRUE(a.Publish("after a fast restart").ok());
  ASSERT_TRUE(b.AwaitHeard(2)) << "a: " << a.Said() << "\nb: " << b.Said() << "\n" << pg.Log();
  ASSERT_TRUE(pg.Restart(molt::test::PostgresServer::Stopping::kImmediate)) << pg.error();
  ASSERT_TRUE(a.Publish("after an immediate restart").ok());
  ASSERT_TRUE(b.AwaitHeard(3)) << "sent at a retry, read at b's reconnect\na: " << a.Said()
                               << "\nb: " << b.Said() << "\n"
                               << pg.Log();
  std::this_thread::sleep_for(milliseconds(300));  // nothing heard twice
  EXPECT_EQ(b.Said(),
            "published 0 sent 0 delivered 3 queued 0 send_failures 0 dropped_old 0; heard: [chat "
            "before a 0] [chat after a fast restart a 0] [chat after an immediate restart a 0]")
      << "a: " << a.Said();
}

// A send whose commit's answer was lost (the database restarted after the commit, before the
// answer left: seen once under load) is tried again with the same key, and inserts nothing.
TEST_F(PgMessagesTest, ASendTriedAgainWithItsKeyInsertsNothing) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  Server b;
  b.Open(url, "b");  // the tables, and a listener
  store::PgConnection db(url, "the test's connection");
  db.set_statements(Messages::Statements());
  ASSERT_TRUE(db.Connect(/*prepare=*/true).ok());
  auto send = [&](const std::string& data, const std::string& key) {
    Result<store::PgRows> r = db.Run(
        "send", store::PgParams().Text("chat").Bytes(data).Text("a").Text("prod").Int(1).Text(key),
        "sending");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->size() : -1;  // one row: the notification sent
  };
  EXPECT_EQ(send("once", "a:1:1"), 1);
  EXPECT_EQ(send("once", "a:1:1"), 0);           // the retry
  EXPECT_EQ(send("again", "a:1:2"), 1);          // the next message
  EXPECT_EQ(send("other process", "a:2:1"), 1);  // the same server restarted: another nonce
  ASSERT_TRUE(b.AwaitHeard(3)) << b.Said();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(b.Said(),
            "published 0 sent 0 delivered 3 queued 0 send_failures 0 dropped_old 0; heard: [chat "
            "once a 0] [chat again a 0] [chat other process a 0]");
  Result<store::PgRows> rows =
      db.Query("SELECT count(*), count(DISTINCT id) FROM molt_messages", "counting");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(rows->Int(0, 0), 3);
}

}  // namespace
}  // namespace molt::kernel::fleet

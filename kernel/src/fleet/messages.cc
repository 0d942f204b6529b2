// SPDX-License-Identifier: Apache-2.0
// Messages: a rate-limited queue on the kernel thread, molt_messages on the fleet's PostgreSQL
// (or a loopback alone), and delivery by topic with a hold for a swap (messages.h).
#include "kernel/src/fleet/messages.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/store/pg_connection.h"
#include "kernel/src/store/pg_listener.h"

namespace molt::kernel::fleet {
namespace {

using SteadyClock = std::chrono::steady_clock;

const LogScope kMessagesLog("Messages");

// The layout this build writes (molt_schema, name 'messages').
constexpr int kMessagesLayout = 1;
constexpr const char* kMessageTables = R"sql(
CREATE TABLE IF NOT EXISTS molt_message_seq (
  one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), last_id BIGINT NOT NULL);
INSERT INTO molt_message_seq (one, last_id) VALUES (TRUE, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS molt_messages (
  id BIGINT PRIMARY KEY, topic TEXT NOT NULL, data BYTEA NOT NULL, server_id TEXT NOT NULL,
  branch TEXT NOT NULL, sent_ms BIGINT NOT NULL);
-- Added within layout 1 (a nullable column: a build without it still reads and writes the table):
-- a send's own key, so a send tried again after its commit's answer was lost inserts nothing.
ALTER TABLE molt_messages ADD COLUMN IF NOT EXISTS send_key TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS molt_messages_send_key ON molt_messages (send_key);
)sql";

}  // namespace

std::vector<std::pair<std::string, std::string>> Messages::Statements() {
  return {
      // One message in one statement: its id claimed under the counter's row lock (held to the
      // commit, so ids become visible in order), the row, the notification. A send whose key is
      // in already (a retry after a lost answer) inserts and announces nothing; its claimed id is
      // a gap readers step over.
      {"send", fmt::format("WITH claimed AS (UPDATE molt_message_seq SET last_id = last_id + 1 "
                           "RETURNING last_id), sent AS (INSERT INTO molt_messages (id, topic, "
                           "data, server_id, branch, sent_ms, send_key) SELECT last_id, $1, $2, "
                           "$3, $4, $5::bigint, $6 FROM claimed ON CONFLICT (send_key) DO "
                           "NOTHING RETURNING id) SELECT pg_notify('{}', id::text) FROM sent",
                           kChannel)},
      {"newest", "SELECT last_id FROM molt_message_seq"},
      {"read",
       "SELECT id, topic, data, server_id, branch, sent_ms FROM molt_messages WHERE id > "
       "$1::bigint ORDER BY id LIMIT 500"},
      {"sweep", "DELETE FROM molt_messages WHERE sent_ms < $1::bigint"},
  };
}

namespace {

// The waits before a failed send is tried again.
constexpr std::chrono::seconds kRetries[] = {std::chrono::seconds(1), std::chrono::seconds(3),
                                             std::chrono::seconds(9)};

}  // namespace

std::string Messages::TopicProblem(std::string_view topic) {
  if (topic.empty() || topic.size() > 64) {
    return "a topic is 1 to 64 characters";
  }
  if (topic.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/-") !=
      std::string_view::npos) {
    return "a topic is letters, digits and _ . : / -";
  }
  if (topic.starts_with("__")) {
    return "topics starting with \"__\" are the kernel's";
  }
  return "";
}

Messages::Messages(MessagesOptions options, Post post, std::function<std::size_t()> sessions,
                   std::function<std::int64_t()> wall_ms)
    : options_(std::move(options)),
      post_(std::move(post)),
      sessions_(std::move(sessions)),
      wall_ms_(std::move(wall_ms)),
      tokens_(options_.burst),
      nonce_(std::uint64_t{std::random_device()()} << 32 | std::random_device()()) {
  stats_.shared = !options_.url.empty();
}

Messages::~Messages() {
  listener_.reset();  // no read is asked for past here
  thread_.Stop();
  if (db_ != nullptr) {  // what is still queued goes out (the close): nobody here hears it
    std::vector<Outgoing> last;
    {
      std::lock_guard lock(mu_);
      last.swap(outbox_);
    }
    if (!last.empty()) {
      if (Status s = Send(last); !s.ok()) {
        kMessagesLog.Warn("{} message(s) published at the close are lost: {}", last.size(),
                          s.message());
      }
    }
  }
}

Status Messages::Open() {
  if (!options_.url.empty()) {
    db_ = std::make_unique<store::PgConnection>(options_.url, "the fleet's messages", 2);
    db_->set_statements(Statements());
    MOLT_RETURN_IF_ERROR(db_->Connect(/*prepare=*/false));
    MOLT_RETURN_IF_ERROR(
        db_->CreateTables("messages", kMessagesLayout, kMessageTables, "the messages' tables"));
    MOLT_RETURN_IF_ERROR(db_->Prepare());
    MOLT_ASSIGN_OR_RETURN(store::PgRows newest,
                          db_->Run("newest", store::PgParams(), "reading the newest message"));
    cursor_ = newest.size() > 0 ? newest.Int(0, 0) : 0;
  }
  thread_.Start();
  if (db_ != nullptr) {
    listener_ = std::make_unique<store::PgListener>(options_.url, "the fleet's messages", kChannel,
                                                    options_.poll,
                                                    [this] { thread_.Post([this] { Read(); }); });
  }
  return Status::Ok();
}

void Messages::StopPublishing() {
  std::lock_guard lock(mu_);
  publishing_ = false;
}

void Messages::Refill() {
  const SteadyClock::time_point now = SteadyClock::now();
  const double per_second =
      (options_.per_minute + options_.per_session_per_minute * static_cast<double>(sessions_())) /
      60.0;
  tokens_ = std::min(options_.burst,
                     tokens_ + std::chrono::duration<double>(now - refilled_).count() * per_second);
  refilled_ = now;
}

Status Messages::Publish(std::string_view topic, std::string_view data) {
  if (std::string why = TopicProblem(topic); !why.empty()) {
    return Status::InvalidArgument(fmt::format("topic \"{}\": {}", topic, why));
  }
  if (data.size() > kMaxBytes) {
    return Status::InvalidArgument(fmt::format(
        "a message is at most {} bytes; this one on \"{}\" is {}", kMaxBytes, topic, data.size()));
  }
  Refill();
  if (tokens_ < 1) {
    ++stats_.refused_rate;
    return Status::RateLimited(fmt::format(
        "this server publishes at most {:.0f} messages a minute now ({} and {} per session, "
        "bursts of {}): try again later",
        options_.per_minute + options_.per_session_per_minute * static_cast<double>(sessions_()),
        options_.per_minute, options_.per_session_per_minute, options_.burst));
  }
  {
    std::lock_guard lock(mu_);
    if (!publishing_) {
      ++stats_.refused_queue;
      return Status::RateLimited("this server is closing: it publishes no more messages");
    }
    if (outbox_.size() >= options_.queue_max) {
      ++stats_.refused_queue;
      return Status::RateLimited(
          fmt::format("{} messages wait to be sent already (the fleet's database is slow or away)",
                      options_.queue_max));
    }
    outbox_.push_back({Message{std::string(topic), std::string(data), options_.server_id,
                               options_.branch, wall_ms_(), true},
                       SteadyClock::now(),
                       fmt::format("{}:{:016x}:{}", options_.server_id, nonce_, ++keys_)});
  }
  tokens_ -= 1;
  ++stats_.published;
  thread_.Post([this] { Flush(); });
  return Status::Ok();
}

Status Messages::Subscribe(const void* owner, std::string_view topic, MessageFn fn) {
  if (std::string why = TopicProblem(topic); !why.empty()) {
    return Status::InvalidArgument(fmt::format("topic \"{}\": {}", topic, why));
  }
  std::vector<Subscriber>& list = subscribers_[std::string(topic)];
  list.push_back({owner, fn});
  if (list.size() > 1) {
    return Status::Ok();
  }
  // The topic's first listener: what came while nobody listened (a swap) is its.
  std::vector<Message> mine;
  std::erase_if(held_, [&](Held& h) {
    if (h.message.topic != topic) {
      return false;
    }
    mine.push_back(std::move(h.message));
    return true;
  });
  for (const Message& m : mine) {
    ++stats_.delivered;
    ++stats_.replayed;
    fn(m, true);
  }
  return Status::Ok();
}

void Messages::Forget(const void* owner) {
  for (auto it = subscribers_.begin(); it != subscribers_.end();) {
    std::erase_if(it->second, [owner](const Subscriber& s) { return s.owner == owner; });
    it = it->second.empty() ? subscribers_.erase(it) : std::next(it);
  }
}

MessageStats Messages::stats() const {
  MessageStats s = stats_;
  std::lock_guard lock(mu_);
  s.queued = outbox_.size();
  s.sent = sent_;
  s.send_failures = failures_;
  s.dropped_old = dropped_old_;
  s.topics = subscribers_.size();
  return s;
}

void Messages::Deliver(std::vector<Message> batch) {
  const SteadyClock::time_point now = SteadyClock::now();
  while (!held_.empty() && held_.front().until <= now) {
    held_.pop_front();
    ++stats_.dropped_held;
  }
  for (Message& m : batch) {
    m.self = m.server == options_.server_id;
    auto it = subscribers_.find(m.topic);
    if (it == subscribers_.end()) {  // nobody listens here now: held for the next listener
      if (held_.size() >= kHeldMax) {
        held_.pop_front();
        ++stats_.dropped_held;
      }
      held_.push_back({std::move(m), now + kHoldFor});
      continue;
    }
    const std::vector<Subscriber> listeners = it->second;  // a listener may subscribe or forget
    for (const Subscriber& s : listeners) {
      ++stats_.delivered;
      s.fn(m, false);
    }
  }
}

// --- the store's thread ------------------------------------------------------------------------

Status Messages::Send(std::vector<Outgoing>& batch) {
  if (db_ == nullptr) {  // alone: this server hears its own
    std::vector<Message> loop;
    for (Outgoing& o : batch) {
      loop.push_back(std::move(o.message));
    }
    std::weak_ptr<Messages*> alive = alive_;
    post_([alive, loop = std::move(loop)]() mutable {
      if (std::shared_ptr<Messages*> self = alive.lock()) {
        (*self)->Deliver(std::move(loop));
      }
    });
    return Status::Ok();
  }
  const std::string what = fmt::format("sending {} message(s) to the fleet", batch.size());
  MOLT_RETURN_IF_ERROR(db_->Connected());
  // One message is one statement (one round trip); more go in one transaction, all or none.
  const bool one = batch.size() == 1;
  if (!one) {
    MOLT_RETURN_IF_ERROR(db_->Begin(what));
  }
  for (const Outgoing& o : batch) {
    const Message& m = o.message;
    Result<store::PgRows> r = db_->Run("send",
                                       store::PgParams()
                                           .Text(m.topic)
                                           .Bytes(m.data)
                                           .Text(m.server)
                                           .Text(m.branch)
                                           .Int(m.sent_ms)
                                           .Text(o.key),
                                       what);
    if (!r.ok()) {
      return one ? r.status() : db_->Rollback(r.status());
    }
  }
  if (!one) {
    MOLT_RETURN_IF_ERROR(db_->Commit(what));
  }
  if (SteadyClock::now() - last_sweep_ >= std::chrono::seconds(10)) {  // rows nobody needs now
    last_sweep_ = SteadyClock::now();
    const std::int64_t before =
        wall_ms_() - std::chrono::duration_cast<std::chrono::milliseconds>(kKeptInDatabase).count();
    (void)db_->Run("sweep", store::PgParams().Int(before), "sweeping old messages");
  }
  return Status::Ok();
}

void Messages::Flush() {
  std::vector<Outgoing> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(outbox_);
  }
  const SteadyClock::time_point now = SteadyClock::now();
  const std::size_t before = batch.size();
  std::erase_if(batch, [&](const Outgoing& o) { return now - o.queued >= kMaxAge; });
  const std::size_t old = before - batch.size();
  if (old > 0 && now - last_warning_ >= std::chrono::seconds(60)) {
    last_warning_ = now;
    kMessagesLog.Warn(
        "{} message(s) waited {} s unsent and were dropped (the fleet's database "
        "is away?)",
        old, kMaxAge.count());
  }
  if (batch.empty()) {
    std::lock_guard lock(mu_);
    dropped_old_ += old;
    return;
  }
  Status s = Send(batch);
  std::lock_guard lock(mu_);
  dropped_old_ += old;
  if (s.ok()) {
    sent_ += batch.size();
    tries_ = 0;
    return;
  }
  ++failures_;
  // Back at the front, in order: the next try sends them before anything published since.
  outbox_.insert(outbox_.begin(), std::make_move_iterator(batch.begin()),
                 std::make_move_iterator(batch.end()));
  if (!retry_planned_) {
    retry_planned_ = true;
    const std::chrono::seconds wait = kRetries[std::min<std::size_t>(tries_, 2)];
    ++tries_;
    if (now - last_warning_ >= std::chrono::seconds(60)) {
      last_warning_ = now;
      kMessagesLog.Warn("{}; tried again in {} s", s.message(), wait.count());
    }
    thread_.At(now + wait, [this] {
      {
        std::lock_guard lock(mu_);
        retry_planned_ = false;
      }
      Flush();
    });
  }
}

void Messages::Read() {
  for (;;) {
    const Status connected = db_->Connected();
    Result<store::PgRows> rows = connected.ok() ? db_->Run("read", store::PgParams().Int(cursor_),
                                                           "reading the fleet's messages")
                                                : Result<store::PgRows>(connected);
    if (!rows.ok()) {
      // Read again soon, not at the next poll: a notification sent while the listener was away
      // (a database restart) is not sent again.
      const std::chrono::seconds wait = kRetries[std::min<std::size_t>(read_tries_++, 2)];
      kMessagesLog.Warn("{} (read again in {} s)", rows.status().message(), wait.count());
      if (!std::exchange(read_planned_, true)) {
        thread_.At(SteadyClock::now() + wait, [this] {
          read_planned_ = false;
          Read();
        });
      }
      return;
    }
    read_tries_ = 0;
    if (rows->size() == 0) {
      return;
    }
    std::vector<Message> batch;
    for (int i = 0; i < rows->size(); ++i) {
      batch.push_back({rows->Text(i, 1), rows->Bytes(i, 2), rows->Text(i, 3), rows->Text(i, 4),
                       rows->Int(i, 5), false});
    }
    cursor_ = rows->Int(rows->size() - 1, 0);
    std::weak_ptr<Messages*> alive = alive_;
    post_([alive, batch = std::move(batch)]() mutable {
      if (std::shared_ptr<Messages*> self = alive.lock()) {
        (*self)->Deliver(std::move(batch));
      }
    });
  }
}

}  // namespace molt::kernel::fleet

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/messages.h
//
// Messages: publish/subscribe by topic between the servers of a fleet (spec §34; docs/fleet.md,
// "Messages"). A plugin publishes a few bytes on a topic; every server's subscribers of that
// topic hear it, this server's too, in the order each server published, at most once each.
//
// On the fleet's PostgreSQL a message is a row of molt_messages: a publisher takes the next id
// under a row lock (so ids commit in order), inserts its queued messages in one transaction and
// announces them with NOTIFY molt_messages; every server listens (store::PgListener) and reads
// the rows past the last id it read, so nothing is lost while it reconnects. Rows older than a
// minute are swept. A server alone hears its own messages, through the same queue.
//
//   Messages messages(options, post_to_kernel, sessions, wall_ms);
//   messages.Open();
//   messages.Subscribe(owner, "party.invite", [](const Message& m, bool replayed) { ... });
//   messages.Publish("party.invite", bytes);      // the kernel thread; never blocks
//   messages.Forget(owner);                       // its instance stopped
//
// Publishing never blocks the kernel thread: it takes a token of this server's bucket (150 a
// minute and 60 more per session, bursts of 20: MessagesOptions) and a place in the queue (100),
// and the store's thread sends it; a failed send is tried again after 1, 3
// and 9 s, and a message that waited kMaxAge is dropped (counted, warned at most once a minute).
// Each message carries a key of its own (a unique index): a send tried again after its commit's
// answer was lost (the database restarted between the two) inserts nothing the second time.
// A message on a topic nobody here listens to (a swap between two generations) is held kHoldFor
// (at most kHeldMax) and handed to the topic's next first listener as replayed.
//
// Thread safety: the kernel thread, but for the store's thread and the listener inside.
#ifndef MOLT_KERNEL_FLEET_MESSAGES_H_
#define MOLT_KERNEL_FLEET_MESSAGES_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernel/src/core/serial_thread.h"

namespace molt::kernel::store {
class PgConnection;
class PgListener;
}  // namespace molt::kernel::store

namespace molt::kernel::fleet {

struct Message {
  std::string topic;
  std::string data;
  std::string server;  // the publisher's server id
  std::string branch;  // the branch it runs
  std::int64_t sent_ms = 0;
  bool self = false;  // published by this server
};

struct MessagesOptions {
  std::string url;  // the fleet's database; "": this server alone
  std::string server_id;
  std::string branch;
  std::chrono::milliseconds poll{60'000};  // read without a notification this often
  // The bucket and the queue (spec §34); a benchmark raises them to measure the transport.
  double per_minute = 150;
  double per_session_per_minute = 60;
  double burst = 20;
  std::size_t queue_max = 100;
};

struct MessageStats {
  std::uint64_t published = 0;  // taken into the queue
  std::uint64_t sent = 0;       // stored for the fleet (or looped back alone)
  std::uint64_t delivered = 0;  // calls of subscribers
  std::uint64_t replayed = 0;   // of those, held across a swap
  std::uint64_t refused_rate = 0;
  std::uint64_t refused_queue = 0;
  std::uint64_t dropped_old = 0;   // waited kMaxAge unsent
  std::uint64_t dropped_held = 0;  // nobody listened within kHoldFor
  std::uint64_t send_failures = 0;
  std::size_t queued = 0;
  std::size_t topics = 0;  // topics subscribed here
  bool shared = false;
};

// Hears one message; `replayed` when it was held for this listener.
using MessageFn = std::function<void(const Message& message, bool replayed)>;

class Messages {
 public:
  static constexpr std::size_t kMaxBytes = 1000;
  static constexpr std::chrono::seconds kMaxAge{30};
  static constexpr std::chrono::seconds kHoldFor{10};
  static constexpr std::size_t kHeldMax = 50;
  static constexpr std::chrono::seconds kKeptInDatabase{60};
  static constexpr const char* kChannel = "molt_messages";

  using Post = std::function<void(std::function<void()>)>;

  // `post` runs a task on the kernel thread; `sessions` (the kernel thread) counts the sessions
  // the rate grows with; `wall_ms` stamps messages.
  Messages(MessagesOptions options, Post post, std::function<std::size_t()> sessions,
           std::function<std::int64_t()> wall_ms);
  ~Messages();
  Messages(const Messages&) = delete;
  Messages& operator=(const Messages&) = delete;

  // On a fleet database: connects, creates molt_messages, starts reading from the newest row
  // (what was published before this server started is not its). An error names the database.
  Status Open();
  // Publishing ends (the close): a publish is refused, what is queued is still sent.
  void StopPublishing();

  // --- the kernel thread ---
  // Queues `data` on `topic`: Ok, RateLimited (the bucket, the queue, the close) or
  // InvalidArgument naming the topic or the size.
  Status Publish(std::string_view topic, std::string_view data);
  // `fn` hears every message on `topic` until Forget(owner); the first listener of a topic is
  // handed what was held for it.
  Status Subscribe(const void* owner, std::string_view topic, MessageFn fn);
  void Forget(const void* owner);
  MessageStats stats() const;

  // A topic: 1..64 of [A-Za-z0-9_.:/-], not starting with "__". "" when it is one, else why not.
  static std::string TopicProblem(std::string_view topic);
  // The prepared statements on the fleet's database, by name: "send" ($1 topic, $2 data,
  // $3 server, $4 branch, $5 sent_ms, $6 the send's key; nothing when the key is in already),
  // "newest", "read" ($1 the cursor), "sweep" ($1 the oldest sent_ms kept).
  static std::vector<std::pair<std::string, std::string>> Statements();

 private:
  struct Outgoing {
    Message message;
    std::chrono::steady_clock::time_point queued;
    std::string key;  // the same at every try: "<server id>:<this process' nonce>:<n>"
  };
  struct Held {
    Message message;
    std::chrono::steady_clock::time_point until;
  };
  struct Subscriber {
    const void* owner;
    MessageFn fn;
  };

  void Flush();                               // the store's thread: sends what is queued
  void Read();                                // the store's thread: the rows past the cursor
  Status Send(std::vector<Outgoing>& batch);  // the store's thread
  void Deliver(std::vector<Message> batch);   // the kernel thread
  void Refill();                              // the kernel thread: the bucket's tokens, by time

  const MessagesOptions options_;
  const Post post_;
  const std::function<std::size_t()> sessions_;
  const std::function<std::int64_t()> wall_ms_;

  // The kernel thread.
  std::map<std::string, std::vector<Subscriber>, std::less<>> subscribers_;
  std::deque<Held> held_;
  double tokens_;
  std::chrono::steady_clock::time_point refilled_ = std::chrono::steady_clock::now();
  MessageStats stats_;
  const std::uint64_t nonce_;  // this process' part of its sends' keys
  std::uint64_t keys_ = 0;     // the sends' keys numbered

  // Shared with the store's thread.
  mutable std::mutex mu_;
  std::vector<Outgoing> outbox_;                             // guarded by mu_
  bool publishing_ = true;                                   // guarded by mu_
  std::uint64_t sent_ = 0, failures_ = 0, dropped_old_ = 0;  // guarded by mu_

  // The store's thread.
  std::unique_ptr<store::PgConnection> db_;
  std::int64_t cursor_ = 0;  // the newest row read
  int tries_ = 0;            // failed sends in a row
  // The store's thread only: failed reads in a row, and whether the next read is planned.
  int read_tries_ = 0;
  bool read_planned_ = false;
  std::chrono::steady_clock::time_point last_sweep_{};
  std::chrono::steady_clock::time_point last_warning_{};
  bool retry_planned_ = false;

  SerialThread thread_;
  std::unique_ptr<store::PgListener> listener_;
  std::shared_ptr<Messages*> alive_ = std::make_shared<Messages*>(this);
};

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_MESSAGES_H_

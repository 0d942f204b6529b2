// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/testkit/test_kit.h
//
// TestKit: the plugin test kit behind molt/testkit.h (its C entry points are testkit_api.cc). A
// server's parts as moltd wires them (server/assembly.h) on a ManualClock, with in-process
// clients: each a KitPeer (kit_peer.h), a net::Peer that decodes the frames the network writes
// to it into the messages a test reads (events, responses, errors, the Bye), applies its
// replicas as libmolt_client does, and owes the server's pings their pongs, which the kit sends.
//
// Time moves only in Advance(): the scheduler is stepped at each wake up to the target. The
// loop's own timer is armed for the manual clock's times, which lie a century ahead of the real
// one, so it never fires: every step is the kit's. Work on other threads (the profile store,
// worker jobs, live values) is waited for after every call (Settle), so a call returns once
// what it caused has happened, up to the next timer.
//
//   MOLT_ASSIGN_OR_RETURN(auto kit, TestKit::Create({}));
//   kit->Load({"counter.so"});
//   MOLT_ASSIGN_OR_RETURN(net::SessionId ada, kit->Join("ada", {}, {}));
//   kit->Intent(ada, "counter.Add", payload);
//   kit->Advance(Seconds(1));
//   while (const TestKit::Message* m = kit->Next(ada)) { ... }
//
// Thread safety: one thread, the one that made it (it is the kernel thread). One kit per
// process, as the kernel is one per process.
#ifndef MOLT_KERNEL_TESTKIT_TEST_KIT_H_
#define MOLT_KERNEL_TESTKIT_TEST_KIT_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>
#include <molt/testkit.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/value.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/testkit/kit_peer.h"

namespace molt::kernel {
class Assembly;
}  // namespace molt::kernel

namespace molt::kernel::testkit {

struct KitOptions {
  std::string config_json;          // moltd's configuration keys, as JSON text ("": the defaults)
  std::string profile_db;           // "": SQLite in memory
  double tick_rate = 0;             // 0: the configuration's
  LogLevel echo = LogLevel::kWarn;  // lines at or above it also go to stderr
};

class TestKit {
 public:
  // One message the server sent a session (or, for session 0, a Bus message watched).
  using Message = KitMessage;

  // Fails naming the configuration key, or the kit that is still alive.
  static Result<std::unique_ptr<TestKit>> Create(KitOptions options);
  TestKit(const TestKit&) = delete;
  TestKit& operator=(const TestKit&) = delete;
  ~TestKit();

  // The first generation, from plugin files or directories; init, start, the fuzz gate.
  Status Load(const std::vector<std::string>& paths);
  // A new generation under the sessions; `report` gets the swap report's JSON.
  Status Swap(const std::vector<std::string>& paths, std::string* report);
  // The close, as moltd's SIGTERM; idempotent.
  Status Close();
  // The serving plugins' own tests (ABI 1.8), as moltd --self-test runs them; `report` gets
  // their JSON (loader::PluginHost::SelfTestsJson). An error names every failure.
  Status SelfTest(std::string* report);

  Status Advance(Duration d);
  // Seconds of manual time since the kit was made.
  double now_seconds();

  Result<molt_session_t> Join(std::string_view user, std::span<const std::uint8_t> credentials,
                              std::span<const std::uint8_t> join_data);
  Status Leave(molt_session_t session);
  Status Intent(molt_session_t session, std::string_view channel,
                std::span<const std::uint8_t> payload);
  // `*id` is the request's id once it is sent (a refused request is answered all the same).
  Status Request(molt_session_t session, std::string_view channel,
                 std::span<const std::uint8_t> payload, std::uint32_t* id);
  // The session's oldest message, kept until the next call; nullptr when none is left (or the
  // session is unknown: `error` says so).
  const Message* Next(molt_session_t session, Status* error);
  Status Watch(std::string_view pattern);

  // A replica field of the session's client copy: MOLT_VALUE_INT, _DOUBLE or _BYTES (pointing
  // into the copy, valid until the next call).
  Result<molt_value> ReplicaField(molt_session_t session, std::string_view replica,
                                  std::string_view field);

  Result<std::string> Profile(std::string_view store, std::string_view user);
  Status Publish(std::string_view topic, std::span<const molt_value> args);
  Status SetLive(std::string_view key, std::optional<std::string_view> json);
  std::string StatsJson();
  std::string TakeLogs();

 private:
  explicit TestKit(KitOptions options);
  Status Init();

  // Runs what other threads handed back, the pongs owed, until nothing is in hand elsewhere (a
  // real-time cap names what never finished).
  Status Settle();
  bool Busy() const;
  // `paths` copied into a build directory of their own (a single directory is used as it is).
  Result<std::string> Stage(const std::vector<std::string>& paths);
  // The peer of a session joined in this kit (ended or not), or kNotFound.
  Result<KitPeer*> Find(molt_session_t session);
  // The peer of a session joined and not ended, or why not (kNotFound, kStale).
  Result<KitPeer*> Joined(molt_session_t session);
  // The live channel `name` of `kind`, or kNotFound naming it.
  Result<net::ChannelId> ChannelNamed(std::string_view name, net::ChannelKind kind);
  // Feeds `frame` to `peer`'s connection, then settles; the wire inspector's verdict of the
  // inbound message, as a status.
  Status Send(KitPeer& peer, std::span<const std::uint8_t> frame, std::string_view channel);
  // The name of the server's channel `id` ("" when there is none): what KitPeer shows.
  std::string ChannelName(std::uint16_t id);

  const KitOptions options_;
  std::string dir_;  // the kit's own files: plugin copies, staged builds, live values, analytics
  int builds_ = 0;
  ManualClock clock_;
  TimePoint started_;
  // The peers outlive the network, which closes them.
  std::vector<std::unique_ptr<KitPeer>> peers_;
  std::map<molt_session_t, KitPeer*> sessions_;
  std::unique_ptr<Assembly> parts_;
  bool loaded_ = false;
  bool closed_ = false;
  std::size_t live_pending_ = 0;  // live value sets in the store's hands
  std::deque<Message> bus_;       // session 0: the Bus messages watched
  std::vector<Connection> watches_;
  Message current_;  // what Next() handed out
  std::mutex logs_mu_;
  std::string logs_;  // since the last TakeLogs()
  Logger::Registration capture_;
};

}  // namespace molt::kernel::testkit

#endif  // MOLT_KERNEL_TESTKIT_TEST_KIT_H_

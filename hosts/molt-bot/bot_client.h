// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-bot/bot_client.h
//
// BotClient: one of molt-bot's simulated clients: its libmolt_client (the C API, as any app
// would use it), the channels it sends on, the messages its rate owes, and with --verify the
// numbers it sent on the counter plugin's echo channel and which came back (once and in order,
// or counted as neither); with --udp, its Walker (walker.h) instead. What it sees goes into the
// bot's Totals. Included by swarm.h.
//
// Thread safety: none; molt-bot runs every client on its one thread. A BotClient never moves
// (libmolt_client's callbacks hold its address).
#ifndef MOLT_HOSTS_MOLT_BOT_BOT_CLIENT_H_
#define MOLT_HOSTS_MOLT_BOT_BOT_CLIENT_H_

#include <molt/client.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hosts/molt-bot/bot_report.h"
#include "hosts/molt-bot/walker.h"

namespace molt::bot {

class BotClient {
 public:
  // `totals` outlives the client.
  explicit BotClient(Totals& totals) : totals_(totals) {}
  ~BotClient();  // destroys the libmolt_client
  BotClient(const BotClient&) = delete;
  BotClient& operator=(const BotClient&) = delete;

  // Creates the libmolt_client and hears its state (a close counts as a disconnect, told on
  // stderr); false when libmolt_client refused.
  bool Create(const molt_client_options& options);
  // Loads the controllers at `path` (a .so or a directory) and starts them; false when either
  // failed (last_error() says why).
  bool RunControllers(const std::string& path);
  // Starts connecting as `user`; false when it cannot (last_error() says why).
  bool Connect(const std::string& host, std::uint16_t port, const std::string& user);

  // Once connected: resolves the channels it sends on (with `verify`, counter.Echo, and listens
  // on counter.Echoed; else `intents` and `requests`) and marks it joined. The error line
  // (without "molt-bot: ") when a channel is missing.
  std::optional<std::string> Join(const std::vector<std::string>& intents,
                                  const std::vector<std::string>& requests, bool verify);
  // Once connected, with --udp: joins to walk instead (Walker::Join), and each message owed is
  // then a step. The error line (without "molt-bot: ") when the server lacks the walk plugin.
  std::optional<std::string> JoinWalk();

  // Adds what `rate` messages a second owe over `dt` seconds (nothing without a channel, an echo
  // or a walk).
  void Owe(double rate, double dt, bool verify);
  // Sends every whole message owed: a step when walking, a numbered echo with `verify`, else the
  // next channel in turn with `payload` (a request's answer is counted when it comes).
  void SendOwed(bool verify, const std::vector<std::uint8_t>& payload);

  void Step() { molt_client_step(client_, 0); }
  void Disconnect() { molt_client_disconnect(client_); }

  std::int32_t state() const { return molt_client_state(client_); }
  bool connected() const { return state() == MOLT_CLIENT_CONNECTED; }
  bool joined() const { return joined_; }
  double owed() const { return owed_; }
  molt_client* handle() const { return client_; }
  const char* last_error() const { return molt_client_last_error(client_); }
  // Whether its datagram link is open, as the client sees it: the Welcome offered one and the
  // client opened it (connecting or up; the C API does not tell them apart). It reads the one
  // documented sign (docs/client.md, "The datagram link"): while the link is open the client's
  // socket is an epoll descriptor holding both sockets. Linux (/proc/self/fd).
  bool DatagramLinkOpen() const;
  // The walk (--udp), or null.
  const Walker* walker() const { return walker_.get(); }

 private:
  static void OnState(void* ud, std::int32_t state, const char* reason);
  static void OnEcho(void* ud, std::uint16_t channel, const void* data, std::size_t size);
  static void OnResponse(void* ud, molt_status_t status, const void* data, std::size_t size);
  void SendEcho();
  void SendNext(const std::vector<std::uint8_t>& payload);

  Totals& totals_;
  molt_client* client_ = nullptr;
  std::vector<std::uint16_t> intents_;
  std::vector<std::uint16_t> requests_;
  bool joined_ = false;
  double owed_ = 0;  // messages this client should have sent by now, not yet sent
  std::size_t next_ = 0;
  // --verify: the echo channel, the next number to send, and what came back.
  std::uint16_t echo_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t highest_ = 0;       // the highest number echoed so far
  std::vector<bool> echoed_;        // index: number
  std::unique_ptr<Walker> walker_;  // --udp
};

}  // namespace molt::bot

#endif  // MOLT_HOSTS_MOLT_BOT_BOT_CLIENT_H_

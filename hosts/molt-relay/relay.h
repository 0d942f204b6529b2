// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/relay.h
//
// Relay: molt-relay's sockets, its table of clients and the datagrams it holds. On one thread,
// poll() waits for the listen socket, every client's upstream socket and a wake-up pipe, with a
// timeout to the next datagram due. A datagram from a new client address gets that client an
// upstream socket of its own (as a NAT gives it a port), so the server sees one address per
// client; what the server sends to that socket goes back to the client from the listen socket.
// Every datagram, each way, goes through that direction's Impairment and waits in the
// DelayQueue (with no delay, until the loop's next turn), then leaves. Included by main.cc.
//
// With --rebind-after N, a client's upstream socket is replaced after every N datagrams from it:
// the new socket is opened before the old one closes, so its port differs; copies still held
// leave from the new one, and whatever the server sends to the old port is lost, as behind a NAT
// that rebinds.
//
// Thread safety: Run on one thread; Stop and Snapshot from any thread (Stop from a signal
// handler too).
#ifndef MOLT_HOSTS_MOLT_RELAY_RELAY_H_
#define MOLT_HOSTS_MOLT_RELAY_RELAY_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "hosts/molt-relay/delay_queue.h"
#include "hosts/molt-relay/impairment.h"
#include "hosts/molt-relay/relay_options.h"
#include "hosts/molt-relay/relay_stats.h"
#include "hosts/molt-relay/socket_address.h"
#include "hosts/molt-relay/udp_socket.h"

namespace molt::relay {

class Relay {
 public:
  using Clock = std::chrono::steady_clock;

  // What the server-to-client model's seed is made from the client-to-server one's (--seed), so
  // the two directions do not make the same decisions.
  static constexpr std::uint64_t kToClientSeedMix = 0x9e3779b97f4a7c15;

  // Resolves --to, binds --listen. Returns the relay, ready to Run, or the reason ("cannot bind
  // 127.0.0.1:7000: Address already in use").
  static std::variant<std::unique_ptr<Relay>, std::string> Open(const RelayOptions& options);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // The address clients send to (with its port when --listen asked for port 0).
  SocketAddress listen_address() const { return listen_.LocalAddress(); }

  // Relays until Stop(), or for --duration when it is set. Copies still held are not sent.
  // Returns the counts, `pending` being the copies still held. Called once.
  RelayStats Run();

  // Ends Run at its next turn. One write() to a pipe: safe from any thread and from a signal
  // handler.
  void Stop() const noexcept;

  // The counts as of the end of Run's last turn. Safe from any thread.
  RelayStats Snapshot() const;

 private:
  // A client's mapping: its address (the table's key) to its upstream socket.
  struct Client {
    UdpSocket upstream;
    std::uint64_t received = 0;  // datagrams from the client, for --rebind-after
  };

  Relay(const RelayOptions& options, SocketAddress to, UdpSocket listen, int wake_read,
        int wake_write);

  // Reads what waits on the listen socket (a burst at most): each datagram counted, its client
  // found or made (a new upstream socket), rebound when due, and impaired on its way to the
  // server.
  void ReadClients(Clock::time_point now);
  // Reads what waits on `client`'s upstream socket (a burst at most), each impaired on its way
  // back to the client at `address`.
  void ReadServer(const SocketAddress& address, Client& client, Clock::time_point now);
  // The table's entry for `address`, made with a new upstream socket when new; nullptr when no
  // socket can be opened (told on stderr).
  Client* FindOrAddClient(const SocketAddress& address);
  // Replaces `client`'s upstream socket by a new one (a new port); keeps the old one when no new
  // socket can be opened (told on stderr).
  void Rebind(Client& client);
  // Asks `direction`'s model about one datagram and queues its copies.
  void Impair(Direction direction, const SocketAddress& client, const std::uint8_t* data,
              std::size_t size, Clock::time_point now);
  // Sends every copy due at `now`.
  void SendDue(Clock::time_point now);
  // Copies the counts, with what is held, to what Snapshot reads.
  void Publish();

  DirectionStats& stats(Direction d) {
    return d == Direction::kToServer ? stats_.to_server : stats_.to_client;
  }

  const RelayOptions options_;
  const SocketAddress to_;
  UdpSocket listen_;
  const int wake_read_;  // Stop() writes to wake_write_; Run polls wake_read_
  const int wake_write_;
  Impairment to_server_model_;
  Impairment to_client_model_;
  std::map<SocketAddress, Client> clients_;  // by client address; entries never move
  DelayQueue queue_;
  std::vector<std::uint8_t> buffer_;  // one datagram read
  RelayStats stats_;                  // the Run thread's own

  mutable std::mutex published_mutex_;
  RelayStats published_;  // GUARDED_BY(published_mutex_)
};

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_RELAY_H_

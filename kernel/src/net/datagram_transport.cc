// SPDX-License-Identifier: Apache-2.0
// DatagramTransport: ENet on the kernel's io_context (datagram_transport.h).
#include "kernel/src/net/datagram_transport.h"

#include <enet/enet.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernel/src/net/net_log.h"

namespace molt::kernel::net {
namespace asio = boost::asio;

namespace {

// ENet keeps process-wide state (its time base); initialized once, never torn down (a server
// process may make several transports, the tests many).
bool EnetReady() {
  static const bool ok = enet_initialize() == 0;
  return ok;
}

// ENet's clock while peers exist: 10 ms while a peer has commands in flight or to acknowledge
// (its retransmits), else 100 ms (its pings, every 500 ms, and the unbound peers' deadline).
constexpr std::chrono::milliseconds kServiceEvery{10};
constexpr std::chrono::milliseconds kIdleServiceEvery{100};
constexpr std::chrono::seconds kBindWithin{5};  // an ENet peer no datagram bound

// Whether ENet will ignore the datagram it just read into `host` before looking at its commands
// (the checks of enet_protocol_handle_incoming_commands, ENet 1.3.17): too short for a header, or
// naming a peer slot that is not connected from the datagram's address and session. A handshake
// names no peer (ENET_PROTOCOL_MAXIMUM_PEER_ID) and is not stray.
bool Stray(const ENetHost& host) {
  if (host.receivedDataLength < sizeof(enet_uint16)) {
    return true;
  }
  enet_uint16 word = 0;
  std::memcpy(&word, host.receivedData, sizeof word);
  const enet_uint16 header = ENET_NET_TO_HOST_16(word);
  const enet_uint16 session =
      (header & ENET_PROTOCOL_HEADER_SESSION_MASK) >> ENET_PROTOCOL_HEADER_SESSION_SHIFT;
  const enet_uint16 id =
      header & ~(ENET_PROTOCOL_HEADER_FLAG_MASK | ENET_PROTOCOL_HEADER_SESSION_MASK);
  if (id == ENET_PROTOCOL_MAXIMUM_PEER_ID) {
    return false;
  }
  if (id >= host.peerCount) {
    return true;
  }
  const ENetPeer& peer = host.peers[id];
  return peer.state == ENET_PEER_STATE_DISCONNECTED || peer.state == ENET_PEER_STATE_ZOMBIE ||
         ((host.receivedAddress.host != peer.address.host ||
           host.receivedAddress.port != peer.address.port) &&
          peer.address.host != ENET_HOST_BROADCAST) ||
         (peer.outgoingPeerID < ENET_PROTOCOL_MAXIMUM_PEER_ID && session != peer.incomingSessionID);
}

std::string AddressOf(const ENetAddress& a) {
  char ip[64] = "?";
  enet_address_get_host_ip(&a, ip, sizeof ip);
  return fmt::format("{}:{}", ip, a.port);
}

}  // namespace

struct DatagramTransport::Impl : std::enable_shared_from_this<Impl> {
  struct PeerState {
    ENetPeer* peer = nullptr;
    std::string address;
    bool bound = false;
    std::chrono::steady_clock::time_point since;
  };

  Impl(DatagramSink& s, asio::io_context& io) : sink(s), readable(io), timer(io) {}
  ~Impl() {
    if (readable.is_open()) {
      (void)readable.release();  // ENet's socket: enet_host_destroy closes it
    }
    if (host != nullptr) {
      for (auto& [id, p] : peers) {
        enet_peer_reset(p.peer);
      }
      enet_host_destroy(host);
    }
  }

  void WaitReadable() {
    readable.async_wait(asio::posix::descriptor_base::wait_read,
                        [weak = weak_from_this()](const boost::system::error_code& ec) {
                          if (auto self = weak.lock(); self && !ec) {
                            self->Service();
                            self->WaitReadable();
                          }
                        });
  }
  void ArmTimer() {
    if (timer_armed || peers.empty()) {
      return;  // an idle transport sleeps: nothing wakes it but a datagram
    }
    timer_armed = true;
    const bool busy = std::any_of(peers.begin(), peers.end(), [](const auto& p) {
      const ENetPeer& e = *p.second.peer;
      return !enet_list_empty(&e.sentReliableCommands) || !enet_list_empty(&e.outgoingCommands) ||
             !enet_list_empty(&e.acknowledgements);
    });
    timer.expires_after(busy ? kServiceEvery : kIdleServiceEvery);
    timer.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); self && !ec) {
        self->timer_armed = false;
        self->Service();
        self->DropUnbound();
        self->ArmTimer();
      }
    });
  }

  // Everything ENet has: received datagrams, connects, disconnects; then what is queued goes.
  // ENet walks every slot of its peer table, used or not, at each send pass (two in a service
  // call, one in a flush): one service call reads every datagram waiting and sends ENet's own
  // replies, the events it queued are taken without another pass, and one flush sends what
  // the handlers queued meanwhile (Send posts none while this runs).
  void Service() {
    if (host == nullptr) {
      return;
    }
    ENetEvent event;
    servicing = this;  // for Intercept and Send
    for (int got = enet_host_service(host, &event, 0); got > 0 && host != nullptr;
         got = enet_host_check_events(host, &event)) {
      Handle(event);
    }
    if (host != nullptr) {
      sink.OnDatagramsRead();
    }
    servicing = nullptr;
    if (host != nullptr) {
      enet_host_flush(host);
    }
    ArmTimer();
  }

  void Handle(ENetEvent& event) {
    switch (event.type) {
      case ENET_EVENT_TYPE_CONNECT: {
        const DatagramPeerId id = ++next_id;
        event.peer->data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
        peers[id] = PeerState{event.peer, AddressOf(event.peer->address), false,
                              std::chrono::steady_clock::now()};
        break;
      }
      case ENET_EVENT_TYPE_RECEIVE: {
        const auto id =
            static_cast<DatagramPeerId>(reinterpret_cast<std::uintptr_t>(event.peer->data));
        if (auto it = peers.find(id); it != peers.end()) {
          sink.OnDatagram(
              id, it->second.address,
              std::span<const std::uint8_t>(event.packet->data, event.packet->dataLength));
        }
        enet_packet_destroy(event.packet);
        break;
      }
      case ENET_EVENT_TYPE_DISCONNECT: {
        const auto id =
            static_cast<DatagramPeerId>(reinterpret_cast<std::uintptr_t>(event.peer->data));
        if (peers.erase(id) > 0) {
          sink.OnDatagramPeerGone(id);
        }
        break;
      }
      case ENET_EVENT_TYPE_NONE:
        break;
    }
  }

  // ENet's intercept: every datagram it reads, before it parses it; counts, never intercepts.
  static int ENET_CALLBACK Intercept(ENetHost* h, ENetEvent*) {
    if (Impl* self = servicing; self != nullptr && self->host == h) {
      ++self->counts.received;
      if (Stray(*h)) {
        ++self->counts.stray;
      }
    }
    return 0;
  }
  static thread_local Impl* servicing;

  void DropUnbound() {
    const auto now = std::chrono::steady_clock::now();
    std::vector<DatagramPeerId> late;
    for (const auto& [id, p] : peers) {
      if (!p.bound && now - p.since > kBindWithin) {
        late.push_back(id);
      }
    }
    for (DatagramPeerId id : late) {
      kNetLog.Debug("datagram peer {} at {}: no datagram bound it to a session in {} s, dropped",
                    id, peers[id].address, kBindWithin.count());
      ++counts.unbound_dropped;
      Drop(id);
    }
  }

  void Drop(DatagramPeerId id) {
    auto it = peers.find(id);
    if (it == peers.end()) {
      return;
    }
    enet_peer_reset(it->second.peer);
    peers.erase(it);
    sink.OnDatagramPeerGone(id);
  }

  DatagramSink& sink;
  asio::posix::stream_descriptor readable;
  asio::steady_timer timer;
  bool timer_armed = false;
  bool flush_posted = false;
  ENetHost* host = nullptr;
  std::uint16_t port = 0;
  DatagramPeerId next_id = 0;
  std::unordered_map<DatagramPeerId, PeerState> peers;
  Counts counts;
};

thread_local DatagramTransport::Impl* DatagramTransport::Impl::servicing = nullptr;

DatagramTransport::DatagramTransport(DatagramSink& sink, asio::io_context& io)
    : impl_(std::make_shared<Impl>(sink, io)) {}

DatagramTransport::~DatagramTransport() = default;

Status DatagramTransport::Listen(const std::string& address, std::uint16_t port,
                                 std::size_t max_peers) {
  if (!EnetReady()) {
    return Status::Internal("ENet could not be initialized");
  }
  ENetAddress at{};
  if (enet_address_set_host(&at, address.c_str()) != 0) {
    return Status::InvalidArgument(fmt::format(
        "--udp {}:{}: \"{}\" is not an IPv4 address or host name", address, port, address));
  }
  at.port = port;
  // ENet numbers a host's peers in 12 bits: at most 4095 datagram links per port.
  const std::size_t peers = std::clamp<std::size_t>(max_peers, 1, ENET_PROTOCOL_MAXIMUM_PEER_ID);
  ENetHost* host = enet_host_create(&at, peers, 2, 0, 0);
  if (host == nullptr) {
    return Status::FailedPrecondition(fmt::format(
        "cannot bind UDP {}:{} (in use, or not an address of this machine): pick another "
        "--udp port",
        address, port));
  }
  impl_->host = host;
  host->intercept = &Impl::Intercept;
  ENetAddress bound{};
  if (enet_socket_get_address(host->socket, &bound) == 0) {
    impl_->port = bound.port;
  }
  impl_->readable.assign(host->socket);
  impl_->WaitReadable();
  kNetLog.Info(
      "datagram links on udp://{}:{} (at most {} at once, net.udp_max_links; the sessions "
      "past it keep everything on their reliable link)",
      address, impl_->port, peers);
  return Status::Ok();
}

std::uint16_t DatagramTransport::port() const { return impl_->port; }

std::size_t DatagramTransport::max_peers() const {
  return impl_->host != nullptr ? impl_->host->peerCount : 0;
}

bool DatagramTransport::Send(DatagramPeerId peer, std::span<const std::uint8_t> bytes,
                             Channel channel) {
  auto it = impl_->peers.find(peer);
  if (it == impl_->peers.end()) {
    return false;
  }
  ENetPacket* packet = enet_packet_create(
      bytes.data(), bytes.size(),
      channel == Channel::kReliable ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED);
  if (packet == nullptr ||
      enet_peer_send(it->second.peer, static_cast<enet_uint8>(channel), packet) != 0) {
    if (packet != nullptr && packet->referenceCount == 0) {
      enet_packet_destroy(packet);
    }
    return false;
  }
  // Out at the end of this loop turn, with whatever else was queued meanwhile: one flush (the
  // one at the end of Service() when a handler sends from inside it).
  if (Impl::servicing != impl_.get() && !impl_->flush_posted) {
    impl_->flush_posted = true;
    asio::post(impl_->readable.get_executor(), [weak = std::weak_ptr<Impl>(impl_)] {
      if (auto self = weak.lock(); self && self->host != nullptr) {
        self->flush_posted = false;
        enet_host_flush(self->host);
        self->ArmTimer();
      }
    });
  }
  return true;
}

void DatagramTransport::Bound(DatagramPeerId peer) {
  if (auto it = impl_->peers.find(peer); it != impl_->peers.end()) {
    it->second.bound = true;
  }
}

void DatagramTransport::Drop(DatagramPeerId peer) { impl_->Drop(peer); }

std::size_t DatagramTransport::peers() const { return impl_->peers.size(); }

DatagramTransport::Counts DatagramTransport::counts() const { return impl_->counts; }

}  // namespace molt::kernel::net

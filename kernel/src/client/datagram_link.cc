// SPDX-License-Identifier: Apache-2.0
// DatagramLink: the client's datagram link on ENet (datagram_link.h).
#include "kernel/src/client/datagram_link.h"

#include <enet/enet.h>

#include <chrono>
#include <utility>

#include "kernel/src/wire/envelope.h"
#include "molt_wire_generated.h"

namespace molt::kernel::client {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

DatagramLink::DatagramLink(Deliver deliver) : deliver_(std::move(deliver)) {}

DatagramLink::~DatagramLink() { Close(); }

Status DatagramLink::Open(const std::string& host, std::uint16_t port,
                          std::span<const std::uint8_t> key, std::uint64_t session) {
  Close();
  static const bool ready = enet_initialize() == 0;
  if (!ready) {
    return Status::Internal("ENet could not be initialized");
  }
  Result<w::DatagramSeal> seal =
      w::DatagramSeal::Create(key, session, w::DatagramSeal::End::kClient);
  if (!seal.ok()) {
    return seal.status();
  }
  ENetAddress to{};
  if (enet_address_set_host(&to, host.c_str()) != 0) {
    return Status::InvalidArgument("the datagram link cannot reach \"" + host + "\"");
  }
  to.port = port;
  host_ = enet_host_create(nullptr, 1, 2, 0, 0);
  if (host_ == nullptr) {
    return Status::Internal("no UDP socket for the datagram link");
  }
  to_host_ = to.host;
  to_port_ = to.port;
  if (!Connect()) {
    Close();
    return Status::Internal("ENet could not start the datagram link");
  }
  seal_ = std::move(seal).value();
  return Status::Ok();
}

bool DatagramLink::Connect() {
  ENetAddress to{};
  to.host = to_host_;
  to.port = to_port_;
  peer_ = enet_host_connect(host_, &to, 2, 0);
  if (peer_ == nullptr) {
    return false;
  }
  // A link that stops answering is dropped after kGiveUp rather than ENet's 5 to 30 s: after a
  // NAT rebinding the server's ENet ignores this peer's new address, and the sooner it connects
  // again from there, the sooner datagrams flow.
  enet_peer_timeout(
      peer_, kGiveUpRetransmits,
      static_cast<enet_uint32>(
          std::chrono::duration_cast<std::chrono::milliseconds>(kGiveUpAfter).count()),
      static_cast<enet_uint32>(
          std::chrono::duration_cast<std::chrono::milliseconds>(kGiveUpBy).count()));
  return true;
}

void DatagramLink::Close() {
  if (host_ != nullptr) {
    enet_host_destroy(host_);  // resets its peer
  }
  host_ = nullptr;
  peer_ = nullptr;
  seal_.reset();
  up_ = false;
}

bool DatagramLink::Send(std::span<const std::uint8_t> frame, bool reliable) {
  if (!up_) {
    return false;
  }
  const std::vector<std::uint8_t> sealed = seal_->Seal(frame);
  ENetPacket* packet =
      enet_packet_create(sealed.data(), sealed.size(),
                         reliable ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED);
  if (packet == nullptr || enet_peer_send(peer_, reliable ? 1 : 0, packet) != 0) {
    if (packet != nullptr) {
      enet_packet_destroy(packet);
    }
    return false;
  }
  enet_host_flush(host_);
  return true;
}

void DatagramLink::Service() {
  if (host_ == nullptr) {
    return;
  }
  last_service_ = RealNow();
  ENetEvent e;
  while (host_ != nullptr && enet_host_service(host_, &e, 0) > 0) {
    switch (e.type) {
      case ENET_EVENT_TYPE_CONNECT: {
        up_ = true;
        // A sealed Ping first: the server binds this peer to the session at once.
        fb::FlatBufferBuilder b(64);
        (void)Send(w::FinishFrame(b, w::Body::Ping, w::CreatePing(b, 0, 0).Union()), true);
        break;
      }
      case ENET_EVENT_TYPE_RECEIVE: {
        Result<std::span<const std::uint8_t>> frame = seal_->Open(
            std::span<const std::uint8_t>(e.packet->data, e.packet->dataLength), &scratch_);
        enet_packet_destroy(e.packet);
        if (!frame.ok()) {
          ++refused_;
          break;
        }
        deliver_(*frame);
        break;
      }
      case ENET_EVENT_TYPE_DISCONNECT: {
        // Lost (ENet gave up after 5 to 30 s without an answer) or refused: the reliable link
        // carries everything while ENet tries again, one handshake at a time, under the same
        // key and counter (the server's replay window only ever sees newer counters).
        up_ = false;
        ++drops_;
        if (!Connect()) {
          Close();
        }
        break;
      }
      case ENET_EVENT_TYPE_NONE:
        break;
    }
  }
}

std::optional<TimePoint> DatagramLink::next_service() const {
  if (host_ == nullptr) {
    return std::nullopt;
  }
  // What arrives wakes the app by the socket (connection.h polls it); a timer is needed only for
  // what ENet sends by itself: retransmits and acks while commands are in flight or it
  // connects, else its keep-alive ping.
  const bool busy = !up_ || !enet_list_empty(&peer_->sentReliableCommands) ||
                    !enet_list_empty(&peer_->outgoingCommands) ||
                    !enet_list_empty(&peer_->acknowledgements);
  return last_service_ + (busy ? kServiceEvery : kIdleServiceEvery);
}

int DatagramLink::socket() const { return host_ != nullptr ? static_cast<int>(host_->socket) : -1; }

}  // namespace molt::kernel::client

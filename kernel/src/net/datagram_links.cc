// SPDX-License-Identifier: Apache-2.0
// DatagramLinks: sessions and their datagram links (datagram_links.h).
#include "kernel/src/net/datagram_links.h"

#include <openssl/rand.h>

#include <algorithm>
#include <utility>

#include "kernel/src/net/net_log.h"
#include "kernel/src/net/session.h"

namespace molt::kernel::net {

using molt::wire::DatagramSeal;

const char* DatagramRefusalName(DatagramRefusal r) {
  switch (r) {
    case DatagramRefusal::kNotSealed:
      return "not_sealed";
    case DatagramRefusal::kUnknownSession:
      return "unknown_session";
    case DatagramRefusal::kReplayed:
      return "replayed";
    case DatagramRefusal::kUnauthenticated:
      return "unauthenticated";
  }
  return "?";
}

DatagramLinks::DatagramLinks(Sessions& sessions) : sessions_(sessions) {}

std::vector<std::uint8_t> DatagramLinks::Offer(std::uint64_t session,
                                               std::vector<std::uint8_t> exported) {
  if (transport_ == nullptr) {
    return {};
  }
  if (!bindings_.contains(session) && bindings_.size() >= transport_->max_peers()) {
    ++counts_.full;
    if (!full_said_) {
      full_said_ = true;
      kNetLog.Warn(
          "all {} datagram links are taken: session {} and the next ones keep everything on "
          "their reliable link (raise net.udp_max_links, at most 4095)",
          transport_->max_peers(), session);
    }
    return {};
  }
  full_said_ = false;
  std::vector<std::uint8_t> key = std::move(exported);
  if (key.empty()) {
    key.resize(DatagramSeal::kKeyBytes);
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
      kNetLog.Error("no random bytes for session {}'s datagram key: it gets no datagram link",
                    session);
      return {};
    }
  }
  Result<DatagramSeal> seal = DatagramSeal::Create(key, session, DatagramSeal::End::kServer);
  if (!seal.ok()) {
    kNetLog.Error("session {} gets no datagram link: {}", session, seal.status().message());
    return {};
  }
  auto it = bindings_.find(session);
  if (it == bindings_.end()) {
    bindings_.emplace(session, Binding{std::move(seal).value(), 0, ""});
    if (Session* s = sessions_.Get(session)) {
      s->Bind([this, session] { Forget(session); });  // its key and link end with it
    }
  } else {
    it->second.seal = std::move(seal).value();  // a resume: a new key; the peer moves on its use
  }
  return key;
}

void DatagramLinks::Forget(std::uint64_t session) {
  auto it = bindings_.find(session);
  if (it == bindings_.end()) {
    return;
  }
  const DatagramPeerId peer = it->second.peer;
  bindings_.erase(it);
  if (peer != 0) {
    sessions_of_.erase(peer);
    if (transport_ != nullptr) {
      transport_->Drop(peer);
    }
  }
}

bool DatagramLinks::Send(std::uint64_t session, std::span<const std::uint8_t> frame,
                         DatagramTransport::Channel channel) {
  auto it = bindings_.find(session);
  if (transport_ == nullptr || it == bindings_.end() || it->second.peer == 0) {
    return false;
  }
  if (!transport_->Send(it->second.peer, it->second.seal.Seal(frame), channel)) {
    return false;
  }
  ++counts_.sent;
  return true;
}

std::size_t DatagramLinks::bound() const {
  return static_cast<std::size_t>(std::count_if(bindings_.begin(), bindings_.end(),
                                                [](const auto& b) { return b.second.peer != 0; }));
}

std::string DatagramLinks::address(std::uint64_t session) const {
  auto it = bindings_.find(session);
  return it != bindings_.end() && it->second.peer != 0 ? it->second.address : std::string();
}

void DatagramLinks::OnDatagram(DatagramPeerId peer, const std::string& address,
                               std::span<const std::uint8_t> bytes) {
  const std::optional<std::uint64_t> session = DatagramSeal::SessionOf(bytes);
  if (!session) {
    Refuse(DatagramRefusal::kNotSealed);
    return;
  }
  auto it = bindings_.find(*session);
  if (it == bindings_.end()) {
    Refuse(DatagramRefusal::kUnknownSession);
    return;
  }
  Binding& b = it->second;
  Result<std::span<const std::uint8_t>> frame = b.seal.Open(bytes, &scratch_);
  if (!frame.ok()) {
    // Changes nothing: no binding moves, no window moves.
    Refuse(frame.status().code() == Status::Code::kAlreadyExists
               ? DatagramRefusal::kReplayed
               : DatagramRefusal::kUnauthenticated);
    return;
  }
  ++counts_.opened;
  if (b.peer != peer) {
    if (b.peer != 0) {
      ++counts_.moves;
      kNetLog.Info("session {}'s datagram link moved from {} to {}", *session, b.address, address);
      sessions_of_.erase(b.peer);
      if (transport_ != nullptr) {
        transport_->Drop(b.peer);
      }
    }
    if (auto other = sessions_of_.find(peer); other != sessions_of_.end()) {
      // The ENet peer served another session (a client that re-joined as a new session over the
      // same ENet connection): that session's link is now elsewhere.
      if (auto old = bindings_.find(other->second); old != bindings_.end()) {
        old->second.peer = 0;
        old->second.address.clear();
      }
    }
    b.peer = peer;
    b.address = address;
    sessions_of_[peer] = *session;
    if (transport_ != nullptr) {
      transport_->Bound(peer);
    }
  }
  Session* s = sessions_.Get(*session);
  if (s == nullptr || s->peer() == nullptr || !deliver_) {
    ++counts_.no_link;
    return;
  }
  deliver_(*s->peer(), *frame);
}

void DatagramLinks::OnDatagramPeerGone(DatagramPeerId peer) {
  auto it = sessions_of_.find(peer);
  if (it == sessions_of_.end()) {
    return;
  }
  if (auto b = bindings_.find(it->second); b != bindings_.end() && b->second.peer == peer) {
    b->second.peer = 0;
    b->second.address.clear();
  }
  sessions_of_.erase(it);
}

}  // namespace molt::kernel::net

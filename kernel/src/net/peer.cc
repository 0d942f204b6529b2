// SPDX-License-Identifier: Apache-2.0
// Peer (peer.h): a connection and the Link the network keeps in it.
#include "kernel/src/net/peer.h"

#include <utility>

#include "kernel/src/net/link.h"

namespace molt::kernel::net {

Peer::Peer(std::string address) : address_(std::move(address)), link_(std::make_unique<Link>()) {}

Peer::~Peer() = default;

std::uint64_t Peer::session() const { return link_->session; }

bool Peer::closed() const { return link_->closed; }

}  // namespace molt::kernel::net

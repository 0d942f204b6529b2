// SPDX-License-Identifier: Apache-2.0
// KitPeer: the test kit's in-process client, decoding what the network writes to it
// (kit_peer.h).
#include "kernel/src/testkit/kit_peer.h"

#include <fmt/format.h>

#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::testkit {
namespace {

namespace w = ::molt::wire;

const LogScope kPeerLog("testkit");

// A Refuse's reason as the status a join reports.
Status RefusalCode(w::RefuseReason reason, std::string text) {
  switch (reason) {
    case w::RefuseReason::RateLimited:
      return Status::RateLimited(std::move(text));
    case w::RefuseReason::ShuttingDown:
    case w::RefuseReason::Starting:
      return Status::FailedPrecondition(std::move(text));
    default:
      return Status::Rejected(std::move(text));
  }
}

std::string TextOf(const flatbuffers::String* s) { return s != nullptr ? s->str() : ""; }

}  // namespace

KitPeer::KitPeer(std::string address, std::string user, ChannelName channel_name)
    : net::Peer(std::move(address)),
      user_(std::move(user)),
      channel_name_(std::move(channel_name)) {}

void KitPeer::Close(bool /*flush*/) {
  if (state_ != State::kRefused) {
    state_ = State::kEnded;
  }
}

std::optional<KitMessage> KitPeer::Next() {
  if (inbox_.empty()) {
    return std::nullopt;
  }
  KitMessage m = std::move(inbox_.front());
  inbox_.pop_front();
  return m;
}

std::vector<std::vector<std::uint8_t>> KitPeer::TakeOwed() { return std::exchange(owed_, {}); }

Status KitPeer::ReplicaValue(std::string_view replica, std::string_view field,
                             molt_value* out) const {
  return replicas_.Value(replica, field, out);
}

void KitPeer::Write(std::span<const std::uint8_t> frame) {
  // Aligned: the generated accessors read fields in place.
  std::vector<std::uint64_t> scratch;
  const std::uint8_t* data = w::Aligned(frame, scratch).data();
  flatbuffers::Verifier verifier(data, frame.size(), w::ServerEnvelopeVerifierOptions());
  if (!w::VerifySizePrefixedEnvelopeBuffer(verifier)) {
    kPeerLog.Error("the server wrote a frame that does not verify ({} bytes) to {}", frame.size(),
                   user_);
    return;
  }
  const w::Envelope* e = w::GetSizePrefixedEnvelope(data);
  KitMessage m;
  switch (e->body_type()) {
    case w::Body::Welcome:
      id_ = e->body_as_Welcome()->session_id();
      state_ = State::kWelcomed;
      return;
    case w::Body::Refuse: {
      const w::Refuse* r = e->body_as_Refuse();
      state_ = State::kRefused;
      refusal_ = RefusalCode(r->reason(),
                             fmt::format("the server refused {}'s Hello: {}: {}", user_,
                                         w::EnumNameRefuseReason(r->reason()), TextOf(r->text())));
      return;
    }
    case w::Body::Ping: {
      const w::Ping* ping = e->body_as_Ping();
      flatbuffers::FlatBufferBuilder b;
      const auto pong =
          w::FinishFrame(b, w::Body::Pong, w::CreatePong(b, ping->seq(), ping->time_ns()).Union());
      owed_.emplace_back(pong.begin(), pong.end());
      return;
    }
    case w::Body::Replica: {
      std::vector<client::ReplicaStore::Update> updates;
      if (Status s = replicas_.Apply(*e->body_as_Replica(), &updates); !s.ok()) {
        kPeerLog.Error("{}'s client refused a replica message: {}", user_, s.message());
      }
      for (const client::ReplicaStore::Update& u : updates) {
        if (u.what == MOLT_CLIENT_REPLICA_REMOVED) {
          replicas_.Erase(u.id);
        }
      }
      return;
    }
    case w::Body::Event: {
      const w::Event* ev = e->body_as_Event();
      m.kind = MOLT_TESTKIT_EVENT;
      m.channel = channel_name_(ev->channel());
      const auto p = w::BytesOf(ev->payload());
      m.payload.assign(p.begin(), p.end());
      break;
    }
    case w::Body::Response: {
      const w::Response* r = e->body_as_Response();
      m.kind = MOLT_TESTKIT_RESPONSE;
      m.request_id = r->id();
      m.status = r->status();
      const auto p = w::BytesOf(r->payload());
      m.payload.assign(p.begin(), p.end());
      m.retry_after = r->retry_after_ms() / 1000.0;
      break;
    }
    case w::Body::Error: {
      const w::Error* x = e->body_as_Error();
      m.kind = MOLT_TESTKIT_ERROR;
      m.channel = channel_name_(x->channel());
      m.reason = std::string(net::RejectName(static_cast<net::Reject>(x->reason())));
      m.text = TextOf(x->text());
      m.retry_after = x->retry_after_ms() / 1000.0;
      break;
    }
    case w::Body::Bye: {
      const w::Bye* bye = e->body_as_Bye();
      m.kind = MOLT_TESTKIT_BYE;
      m.reason = TextOf(bye->reason());
      m.text = TextOf(bye->text());
      state_ = State::kEnded;
      break;
    }
    default:  // Pong, Channels: the kit resolves channel names on the server's side
      return;
  }
  inbox_.push_back(std::move(m));
}

}  // namespace molt::kernel::testkit

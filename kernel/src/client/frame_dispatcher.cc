// SPDX-License-Identifier: Apache-2.0
// FrameDispatcher: a server's frames verified and handed to their handler (frame_dispatcher.h).
#include "kernel/src/client/frame_dispatcher.h"

#include "kernel/src/wire/envelope.h"

namespace molt::kernel::client {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

void FrameDispatcher::Dispatch(std::span<const std::uint8_t> frame) {
  frame = w::Aligned(frame, frame_scratch_);
  fb::Verifier v(frame.data(), frame.size(), w::ServerEnvelopeVerifierOptions());
  const w::Envelope* env =
      w::VerifySizePrefixedEnvelopeBuffer(v) ? w::GetSizePrefixedEnvelope(frame.data()) : nullptr;
  if (env == nullptr || env->body() == nullptr) {
    return handler_.OnBadFrame("the server sent a malformed frame");
  }
  auto bytes = [this](const fb::Vector<std::uint8_t>* p) {
    return p == nullptr ? std::span<const std::uint8_t>()
                        : w::Aligned(std::span(p->data(), p->size()), payload_scratch_);
  };
  switch (env->body_type()) {
    case w::Body::Welcome:
      return handler_.OnWelcome(*env->body_as_Welcome());
    case w::Body::Refuse:
      return handler_.OnRefuse(*env->body_as_Refuse());
    case w::Body::Bye:
      return handler_.OnBye(*env->body_as_Bye());
    case w::Body::Redirect:
      return handler_.OnRedirect(*env->body_as_Redirect());
    case w::Body::Event: {
      const w::Event* e = env->body_as_Event();
      return handler_.OnServerEvent(e->channel(), e->seq(), bytes(e->payload()));
    }
    case w::Body::Response: {
      const w::Response* r = env->body_as_Response();
      // Statuses are 0 or negative; a newer server's new error codes pass, a positive number
      // (found by the fuzzer: an app testing `status < 0` took it for success) does not.
      return handler_.OnResponse(r->id(), r->status() > 0 ? MOLT_ERR_INTERNAL : r->status(),
                                 bytes(r->payload()));
    }
    case w::Body::Ping:
      return handler_.OnPing(*env->body_as_Ping());
    case w::Body::Pong:
      return handler_.OnPong(*env->body_as_Pong());
    case w::Body::Replica:
      return handler_.OnReplicaMessage(*env->body_as_Replica());
    case w::Body::Channels:
      return handler_.OnChannels(*env->body_as_Channels());
    case w::Body::Acks: {
      const w::Acks* a = env->body_as_Acks();
      auto seqs = [](const fb::Vector<std::uint32_t>* v) {
        return v == nullptr ? std::span<const std::uint32_t>() : std::span(v->data(), v->size());
      };
      return handler_.OnAcks(seqs(a->accepted()), seqs(a->rejected()));
    }
    case w::Body::Error:
      return;  // the server dropped something we sent (counted there); nothing to do here
    case w::Body::Hello:
    case w::Body::Intent:
    case w::Body::Request:
      return handler_.OnBadFrame("the server sent a client-to-server message");
    default:
      return;  // a body from a newer server: ignored, so appending one never breaks clients
  }
}

}  // namespace molt::kernel::client

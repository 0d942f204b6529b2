// SPDX-License-Identifier: Apache-2.0
// The server's shared frames (frames.h).
#include "kernel/src/net/frames.h"

#include <string>

namespace molt::kernel::net {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

std::span<const std::uint8_t> RefuseFrame(fb::FlatBufferBuilder& b, w::RefuseReason reason,
                                          std::string_view text, double retry_after) {
  auto refuse = w::CreateRefuseDirect(b, reason, std::string(text).c_str(), w::Millis(retry_after));
  return w::FinishFrame(b, w::Body::Refuse, refuse.Union());
}

std::vector<fb::Offset<w::ChannelInfo>> ChannelInfos(fb::FlatBufferBuilder& b,
                                                     const ChannelRegistry& channels) {
  std::vector<fb::Offset<w::ChannelInfo>> infos;
  for (const Channel* ch : channels.List()) {
    const bool unreliable = ch->kind() == ChannelKind::kUnreliable;
    infos.push_back(w::CreateChannelInfoDirect(
        b, ch->id(), ch->name().c_str(), static_cast<w::ChannelKind>(ch->kind()),
        ch->spec().schema.c_str(), static_cast<float>(ch->rate()), static_cast<float>(ch->burst()),
        ch->kind() == ChannelKind::kRequest ? w::Millis(ch->timeout_seconds()) : 0,
        static_cast<w::ChannelPriority>(ch->spec().priority), unreliable && ch->spec().latest_wins,
        unreliable ? static_cast<std::uint32_t>(kMaxUnreliablePayload) : 0));
  }
  return infos;
}

}  // namespace molt::kernel::net

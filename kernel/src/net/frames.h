// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/frames.h
//
// The server's frames that more than one of the network's files builds: the Refuse of a
// connection turned away, and the channel table a Welcome or a Channels frame carries.
// (wire/envelope.h has what both ends of the wire share.)
#ifndef MOLT_KERNEL_NET_FRAMES_H_
#define MOLT_KERNEL_NET_FRAMES_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernel/src/net/channel.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {

// A Refuse frame in `b`: the reason, its text, and a retry-after where waiting helps.
std::span<const std::uint8_t> RefuseFrame(flatbuffers::FlatBufferBuilder& b,
                                          wire::RefuseReason reason, std::string_view text,
                                          double retry_after);

// The channel table, in `b`, as a Welcome or a Channels frame lists it.
std::vector<flatbuffers::Offset<wire::ChannelInfo>> ChannelInfos(flatbuffers::FlatBufferBuilder& b,
                                                                 const ChannelRegistry& channels);

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_FRAMES_H_

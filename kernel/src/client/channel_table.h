// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/channel_table.h
//
// ChannelTable: the server's channels as a client sees them (Connection, connection.h): each
// channel's id, name, kind and timeout, and a token bucket that admits the app's sends at a share
// of the channel's rate (the send queue then paces them: send_queue.h). The table comes whole
// with the Welcome, and again in a Channels frame when a swap changed it; a channel that keeps
// its id, name, rate and burst keeps its bucket within one session, as the server keeps its own.
// While reconnecting, the last Welcome's table stays readable.
//
//   table.Set(welcome_infos, /*same_session=*/false, RealNow(), queue);
//   Result<std::uint16_t> id = table.Id("chat.Say");
//   ChannelTable::Channel* ch = table.Find(*id);
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_CHANNEL_TABLE_H_
#define MOLT_KERNEL_CLIENT_CHANNEL_TABLE_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/src/client/send_queue.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/token_bucket.h"

namespace molt::wire {
struct ChannelInfo;
}  // namespace molt::wire

namespace molt::kernel::client {

class ChannelTable {
 public:
  struct Channel {
    std::string name;
    std::int32_t kind = 0;  // molt::wire::ChannelKind
    double timeout_seconds = 15;
    double rate = 0;  // the server's, per second (the bucket admits a share of it)
    TokenBucket bucket{0, 1, TimePoint()};
    // Unreliable channels (wire 2.5): the payload cap, latest-wins, the seq of the last message
    // sent and of the newest one taken. Kept across a swap's table within one session, as the
    // server keeps its own.
    std::uint32_t max_payload = 0;  // 0: the frame cap alone
    bool latest_wins = false;
    std::uint32_t sent_seq = 0;
    std::uint32_t newest_seq = 0;

    // Latest-wins: true when `seq` is newer (serial-number order) than the newest taken, which
    // it then becomes. Always true without latest-wins, or for seq 0 (an older server).
    bool TakeNewest(std::uint32_t seq) {
      if (!latest_wins || seq == 0) {
        return true;
      }
      if (newest_seq != 0 && static_cast<std::int32_t>(seq - newest_seq) <= 0) {
        return false;
      }
      newest_seq = seq;
      return true;
    }
    // The next outbound seq (from 1; 0 is skipped when it wraps).
    std::uint32_t NextSeq() { return ++sent_seq != 0 ? sent_seq : ++sent_seq; }
  };

  // Replaces the table with `infos` (one without a name is skipped) and sets `queue`'s pacing
  // of each channel. A channel that keeps its id, name, rate and burst keeps its bucket (and its
  // pacing) when `same_session`; otherwise every channel's pacing starts afresh.
  void Set(const std::vector<const molt::wire::ChannelInfo*>& infos, bool same_session,
           TimePoint now, SendQueue& queue);
  // The id of the channel named `name`; kNotFound naming it.
  Result<std::uint16_t> Id(std::string_view name) const;
  // The channel `id`, or nullptr.
  Channel* Find(std::uint16_t id);
  const Channel* Find(std::uint16_t id) const;

 private:
  std::unordered_map<std::uint16_t, Channel> channels_;
  std::unordered_map<std::string, std::uint16_t> ids_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_CHANNEL_TABLE_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/requests.h
//
// PendingRequests: the requests the server took and has not answered. A request the inbound
// pipeline accepted is opened here (a token, a timeout, the handler called with it) and answered
// once: by its handler (Reply), by the timeout (TIMEOUT), or with every other request of its
// channel when the handlers go away (RefusePending, a swap's hard stop). Until then its wire id is
// in flight on its session: a second request with the same id is refused, never handled twice.
// Rejected requests are answered here too (Answer), so every Response frame is built in one place.
//
//   requests.Open(session, channel, wire_id, args);     // the handler gets a token
//   requests.Reply(token, Status::Code::kOk, payload);  // STALE once answered
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_REQUESTS_H_
#define MOLT_KERNEL_NET_REQUESTS_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/value.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/net_options.h"
#include "kernel/src/net/session.h"

namespace molt::kernel::net {

class LinkTable;
class WireTap;

class PendingRequests {
 public:
  // Answers go out through `links`; the wire inspector (`tap`) sees each.
  PendingRequests(Scheduler& scheduler, const NetOptions& options, ChannelRegistry& channels,
                  Sessions& sessions, LinkTable& links, WireTap& tap);
  PendingRequests(const PendingRequests&) = delete;
  PendingRequests& operator=(const PendingRequests&) = delete;
  ~PendingRequests();

  // Whether `session` has a request with `wire_id` pending.
  bool InFlight(SessionId session, std::uint32_t wire_id) const {
    return in_flight_.count({session, wire_id}) != 0;
  }
  // Opens the request `session` sent as `wire_id` on `channel` (with its timeout, the channel's)
  // and hands it to the channel's handler with `args`; a channel without one answers
  // UNSUPPORTED, a handler that throws INTERNAL.
  void Open(Session& session, Channel& channel, std::uint32_t wire_id, std::span<Value> args);
  // Answers the request `token` names. STALE when it was already answered, timed out, or its
  // session left; INVALID_ARGUMENT (the request stays open) when `payload` cannot fit a frame.
  Status Reply(RequestToken token, Status::Code status, std::span<const std::uint8_t> payload);
  // Answers every request still pending on `channel` at once, with `status` and a retry-after.
  // Returns how many.
  std::size_t RefusePending(ChannelId channel, Status::Code status, double retry_after);
  // Sends `session` a Response to its `wire_id` (`channel`: the request's, 0 when it named none;
  // for the wire inspector): how rejected requests are answered.
  void Answer(Session& session, ChannelId channel, std::uint32_t wire_id, Status::Code status,
              std::span<const std::uint8_t> payload, double retry_after);
  std::size_t size() const { return pending_.size(); }

 private:
  struct Pending {
    SessionId session = 0;
    std::uint32_t wire_id = 0;  // the id the client gave it
    ChannelId channel = 0;
    TaskHandle timeout;  // answers it with TIMEOUT
  };
  struct WireKey {
    SessionId session;
    std::uint32_t id;
    bool operator==(const WireKey&) const = default;
  };
  struct WireKeyHash {
    std::size_t operator()(const WireKey& k) const {
      return std::hash<std::uint64_t>()(k.session * 0x9e3779b97f4a7c15ull ^ k.id);
    }
  };

  // Removes the request, its timeout cancelled; nullopt when it is not pending.
  std::optional<Pending> Take(RequestToken token);
  void TimedOut(RequestToken token);

  Scheduler& scheduler_;
  const NetOptions& options_;
  ChannelRegistry& channels_;
  Sessions& sessions_;
  LinkTable& links_;
  WireTap& tap_;
  std::unordered_map<RequestToken, Pending> pending_;
  std::unordered_set<WireKey, WireKeyHash> in_flight_;  // (session, wire id) of pending_
  RequestToken next_token_ = 1;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REQUESTS_H_

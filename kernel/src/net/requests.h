// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/requests.h
//
// PendingRequests: the requests the server took and has not answered, by the token a handler
// answers with (Network::Reply), each with its timeout task and the (session, wire id) it came
// as. A wire id is in flight until its request is answered, times out or is refused: a second
// request with the same id on the session is refused, never handled twice. The Network opens
// and answers them (requests.cc); the table is all this class keeps.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_REQUESTS_H_
#define MOLT_KERNEL_NET_REQUESTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernel/src/core/scheduler.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/session.h"

namespace molt::kernel::net {

struct PendingRequest {
  SessionId session = 0;
  std::uint32_t wire_id = 0;  // the id the client gave it
  ChannelId channel = 0;
  TaskHandle timeout;  // answers it with MOLT_ERR_TIMEOUT
};

class PendingRequests {
 public:
  PendingRequests() = default;
  PendingRequests(const PendingRequests&) = delete;
  PendingRequests& operator=(const PendingRequests&) = delete;
  ~PendingRequests() { CancelAll(); }

  // Records a request taken from `session` as `wire_id` on `channel`; returns its token.
  RequestToken Open(SessionId session, std::uint32_t wire_id, ChannelId channel);
  // The request `token` names, while it is pending (to set its timeout); else nullptr.
  PendingRequest* Find(RequestToken token);
  // Whether `session` has a request with `wire_id` pending.
  bool InFlight(SessionId session, std::uint32_t wire_id) const {
    return in_flight_.count({session, wire_id}) != 0;
  }
  // Removes the request, its timeout cancelled; nullopt when it is not pending.
  std::optional<PendingRequest> Take(RequestToken token);
  // Removes every request pending on `channel`, in the order they came.
  std::vector<PendingRequest> TakeChannel(ChannelId channel);
  // Cancels every timeout (the network goes away).
  void CancelAll();
  std::size_t size() const { return pending_.size(); }

 private:
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

  std::unordered_map<RequestToken, PendingRequest> pending_;
  std::unordered_set<WireKey, WireKeyHash> in_flight_;  // (session, wire id) of pending_
  RequestToken next_token_ = 1;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_REQUESTS_H_

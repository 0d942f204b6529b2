// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/request_table.h
//
// RequestTable: the requests a client has in flight (Connection, connection.h), by the id its
// Request frame carries: each answered exactly once, by the server's Response, by its own
// deadline (MOLT_ERR_TIMEOUT: the server answers at the channel's timeout, so a deadline that
// passes means a server that does not answer at all), or when the session ends (TIMEOUT too).
// An answer that comes after the deadline finds nothing and is dropped.
//
//   const std::uint32_t id = requests.Open(std::move(done), RealNow() + Seconds(16));
//   requests.Answer(id, MOLT_OK, payload);        // the Response
//   requests.ExpireDue(RealNow(), [] { return true; });
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_REQUEST_TABLE_H_
#define MOLT_KERNEL_CLIENT_REQUEST_TABLE_H_

#include <molt/molt.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel::client {

class RequestTable {
 public:
  // Runs once with the status (0 or a molt error) and the answer's payload.
  using Done = Callback<void(molt_status_t, std::span<const std::uint8_t>)>;

  // A new request answered by `deadline` at the latest; its id (1, 2, ...).
  std::uint32_t Open(Done done, TimePoint deadline);
  // The server's answer to `id`: runs its callback; false when it is not open (answered, or past
  // its deadline).
  bool Answer(std::uint32_t id, molt_status_t status, std::span<const std::uint8_t> payload);
  // Answers MOLT_ERR_TIMEOUT every request whose deadline passed at `now`, in id order, while
  // `go_on()` says so after each (a callback may end the session).
  void ExpireDue(TimePoint now, const std::function<bool()>& go_on);
  // Answers MOLT_ERR_TIMEOUT every open request (the session ended).
  void FailAll();
  // Replaces every callback with one that does nothing: a client being destroyed calls no one.
  void Silence();
  // The earliest deadline; nullopt when none is open.
  std::optional<TimePoint> NextDeadline() const;
  std::size_t size() const { return open_.size(); }

 private:
  struct Pending {
    Done done;
    TimePoint deadline;
  };
  std::uint32_t next_id_ = 1;
  std::map<std::uint32_t, Pending> open_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_REQUEST_TABLE_H_

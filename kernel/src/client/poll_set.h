// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/poll_set.h
//
// PollSet: one descriptor an app can poll for both of a connection's sockets. While a session has
// only its reliable link, the app polls that socket itself (Use returns it unchanged); while the
// datagram link is open too, it gets an epoll descriptor holding both, readable when either is
// ready for what it is watched for, so an app's own poller (molt_client_socket, client.h) and
// molt_client_wait wake for a datagram as soon as for a frame, without a timer.
//
//   PollSet set;
//   int fd = set.Use(link.socket(), link.socket_events(), datagram.socket());
//   std::int32_t events = set.events(link.socket_events());   // READ for the epoll descriptor
//   set.Invalidate();                                          // after anything that may close
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_POLL_SET_H_
#define MOLT_KERNEL_CLIENT_POLL_SET_H_

#include <cstdint>

namespace molt::kernel::client {

class PollSet {
 public:
  PollSet() = default;
  PollSet(const PollSet&) = delete;
  PollSet& operator=(const PollSet&) = delete;
  ~PollSet();

  // The descriptor to poll for `stream` (the reliable link's socket, or -1) watched for
  // `stream_events` (MOLT_CLIENT_WAIT_*) and `datagram` (the datagram link's socket, or -1)
  // watched for reading: `stream` itself without a datagram socket, else the epoll descriptor
  // (brought up to date when it is not current or a socket or its events changed).
  // Without an epoll descriptor to be had (EMFILE), `stream`: the datagram link then waits for
  // the next timer, as before it existed.
  int Use(int stream, std::int32_t stream_events, int datagram);
  // Sockets may have been closed and others opened since the last Use (a step ran, a connect or
  // a disconnect): the next Use registers both again, whatever their numbers.
  void Invalidate() { current_ = false; }
  // What to poll Use()'s descriptor for: `stream_events` for the socket itself, READ for epoll.
  std::int32_t events(std::int32_t stream_events) const;

 private:
  // Registers `fd` (when >= 0) for `events` (epoll's), or changes what it is watched for.
  void Watch(int fd, std::uint32_t events);

  int epoll_ = -1;
  bool combined_ = false;  // the last Use returned epoll_
  bool current_ = false;   // the set holds stream_ and datagram_, no socket changed since
  int stream_ = -1;
  int datagram_ = -1;
  std::uint32_t stream_events_ = 0;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_POLL_SET_H_

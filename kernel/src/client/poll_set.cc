// SPDX-License-Identifier: Apache-2.0
// PollSet: both sockets behind one descriptor (poll_set.h).
#include "kernel/src/client/poll_set.h"

#include <molt/client.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <initializer_list>

namespace molt::kernel::client {

PollSet::~PollSet() {
  if (epoll_ >= 0) {
    ::close(epoll_);
  }
}

int PollSet::Use(int stream, std::int32_t stream_events, int datagram) {
  combined_ = false;
  if (datagram < 0) {
    return stream;
  }
  if (epoll_ < 0) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) {
      return stream;
    }
  }
  const std::uint32_t wanted = ((stream_events & MOLT_CLIENT_WAIT_READ) != 0 ? EPOLLIN : 0u) |
                               ((stream_events & MOLT_CLIENT_WAIT_WRITE) != 0 ? EPOLLOUT : 0u);
  combined_ = true;
  if (current_ && stream == stream_ && datagram == datagram_ && wanted == stream_events_) {
    return epoll_;
  }
  // Sockets no longer in use leave the set first (a closed one left by itself; its number may
  // since belong to the other socket, which is registered again below).
  for (int old : {stream_, datagram_}) {
    if (old >= 0 && old != stream && old != datagram) {
      (void)::epoll_ctl(epoll_, EPOLL_CTL_DEL, old, nullptr);
    }
  }
  // Both registered again, not only a number that changed: a socket closed and a new one given
  // the same number has left the set by itself.
  Watch(stream, wanted);
  Watch(datagram, EPOLLIN);
  stream_ = stream;
  datagram_ = datagram;
  stream_events_ = wanted;
  current_ = true;
  return epoll_;
}

std::int32_t PollSet::events(std::int32_t stream_events) const {
  return combined_ ? MOLT_CLIENT_WAIT_READ : stream_events;
}

void PollSet::Watch(int fd, std::uint32_t events) {
  if (fd < 0) {
    return;
  }
  epoll_event e{};
  e.events = events;
  e.data.fd = fd;
  if (::epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &e) != 0) {
    (void)::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &e);
  }
}

}  // namespace molt::kernel::client

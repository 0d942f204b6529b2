// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/client/poll_set_test.cc
//
// PollSet on real sockets: the reliable link's socket alone while there is no datagram socket,
// one epoll descriptor that wakes for either once there is, what the stream is watched for
// followed as it changes, and a socket closed and reopened under the same number still watched.
#include "kernel/src/client/poll_set.h"

#include <gtest/gtest.h>
#include <molt/client.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace molt::kernel::client {
namespace {

// A bound loopback UDP socket and its port.
int UdpSocket(std::uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

void SendTo(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  ASSERT_EQ(::sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 1);
  ::close(fd);
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

void Drain(int fd) {
  char b[64];
  while (::recv(fd, b, sizeof b, MSG_DONTWAIT) > 0) {
  }
}

class PollSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream_), 0);
    datagram_ = UdpSocket(&port_);
  }
  void TearDown() override {
    ::close(stream_[0]);
    ::close(stream_[1]);
    ::close(datagram_);
  }
  int stream_[2] = {-1, -1};  // [0] the "reliable link", [1] the server's end
  int datagram_ = -1;
  std::uint16_t port_ = 0;
};

TEST_F(PollSetTest, WithoutADatagramSocketTheStreamIsPolledAsItIs) {
  PollSet set;
  EXPECT_EQ(set.Use(stream_[0], MOLT_CLIENT_WAIT_WRITE, -1), stream_[0]);
  EXPECT_EQ(set.events(MOLT_CLIENT_WAIT_WRITE), MOLT_CLIENT_WAIT_WRITE);
  EXPECT_EQ(set.Use(-1, 0, -1), -1);
}

TEST_F(PollSetTest, OneDescriptorWakesForADatagramAndForTheStream) {
  PollSet set;
  const int fd = set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_);
  ASSERT_GE(fd, 0);
  EXPECT_NE(fd, stream_[0]);
  EXPECT_NE(fd, datagram_);
  EXPECT_EQ(set.events(MOLT_CLIENT_WAIT_READ | MOLT_CLIENT_WAIT_WRITE), MOLT_CLIENT_WAIT_READ);
  EXPECT_FALSE(Readable(fd));

  SendTo(port_);
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);  // the datagram wakes the one descriptor
  Drain(datagram_);
  EXPECT_FALSE(Readable(fd));

  ASSERT_EQ(::write(stream_[1], "y", 1), 1);
  EXPECT_TRUE(Readable(fd));  // and so does the stream
  Drain(stream_[0]);
  EXPECT_FALSE(Readable(fd));
  EXPECT_EQ(set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_), fd);  // the same one
}

TEST_F(PollSetTest, TheStreamIsWatchedForWhatItWaitsFor) {
  PollSet set;
  const int fd = set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_);
  EXPECT_FALSE(Readable(fd));  // the stream is writable, but not watched for it
  EXPECT_EQ(set.Use(stream_[0], MOLT_CLIENT_WAIT_READ | MOLT_CLIENT_WAIT_WRITE, datagram_), fd);
  EXPECT_TRUE(Readable(fd));  // now it is
  set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_);
  EXPECT_FALSE(Readable(fd));
}

TEST_F(PollSetTest, ASocketReopenedUnderTheSameNumberIsWatchedAfterInvalidate) {
  PollSet set;
  const int fd = set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_);
  // The datagram socket closes and a new one gets its number (the lowest free): epoll forgot
  // the old one by itself, and the numbers alone have not changed.
  const int number = datagram_;
  ::close(datagram_);
  std::uint16_t port = 0;
  datagram_ = UdpSocket(&port);
  ASSERT_EQ(datagram_, number);
  set.Invalidate();
  EXPECT_EQ(set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_), fd);
  SendTo(port);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 5000), 1);
}

TEST_F(PollSetTest, ASocketThatLeftIsNoLongerWatched) {
  PollSet set;
  const int fd = set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, datagram_);
  EXPECT_EQ(set.Use(stream_[0], MOLT_CLIENT_WAIT_READ, -1), stream_[0]);  // the link closed
  int other[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, other), 0);
  EXPECT_EQ(set.Use(other[0], MOLT_CLIENT_WAIT_READ, datagram_), fd);  // a new reliable link
  ASSERT_EQ(::write(stream_[1], "y", 1), 1);
  EXPECT_FALSE(Readable(fd));  // the old stream left the set
  ASSERT_EQ(::write(other[1], "z", 1), 1);
  EXPECT_TRUE(Readable(fd));
  ::close(other[0]);
  ::close(other[1]);
}

}  // namespace
}  // namespace molt::kernel::client

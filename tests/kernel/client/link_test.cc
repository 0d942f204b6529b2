// SPDX-License-Identifier: Apache-2.0
// Link (kernel/src/client/link.h) on a loopback socket the test serves with plain POSIX calls:
// the Hello first, frames read whole however the bytes are cut, the send queue's frames only once
// the server welcomed the link, a frame over the cap refused, and a refused or closed connection
// reported lost.
#include "kernel/src/client/link.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace molt::kernel::client {
namespace {

// What the link told, and a Hello it says when linked.
class RecordingSink final : public LinkSink {
 public:
  void OnLinked() override {
    ++linked;
    if (link != nullptr) {
      link->Send(hello);
    }
  }
  void OnReceived() override { ++received; }
  void OnFrame(std::span<const std::uint8_t> frame) override {
    frames.emplace_back(frame.begin() + 4, frame.end());
  }
  void OnLinkLost(const std::string& reason) override { lost.push_back(reason); }
  void OnLinkRefused(const std::string& reason) override { refused.push_back(reason); }
  bool Welcomed() const override { return welcomed; }

  Link* link = nullptr;
  std::vector<std::uint8_t> hello = {5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'};
  int linked = 0;
  int received = 0;
  bool welcomed = false;
  std::vector<std::string> frames;
  std::vector<std::string> lost;
  std::vector<std::string> refused;
};

std::vector<std::uint8_t> LinkFrame(const std::string& payload) {
  std::vector<std::uint8_t> f(4);
  const auto size = static_cast<std::uint32_t>(payload.size());
  std::memcpy(f.data(), &size, 4);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listener_, 4), 0);
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    queue_.SetBudget({1e9, 1e9, 1e9, 1e9}, RealNow());
    sink_.link = &link_;
  }
  void TearDown() override {
    if (peer_ >= 0) {
      ::close(peer_);
    }
    ::close(listener_);
  }
  // Steps the link until `done`, for at most 10 s.
  bool StepUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      link_.Restart();
      while (link_.PollOne() != 0) {
      }
      std::this_thread::yield();
    }
    return done();
  }
  // Connects the link and accepts it here.
  void Connected() {
    link_.Begin();
    link_.Connect("127.0.0.1", port_);
    ASSERT_TRUE(StepUntil([&] { return sink_.linked == 1; }));
    peer_ = ::accept(listener_, nullptr, nullptr);
    ASSERT_GE(peer_, 0);
  }
  // `n` bytes from the link, read by the test's end (within 10 s).
  std::string Read(std::size_t n) {
    std::string got;
    while (got.size() < n) {
      pollfd p{peer_, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) {
        break;
      }
      char buf[256];
      const ssize_t r = ::read(peer_, buf, std::min(sizeof buf, n - got.size()));
      if (r <= 0) {
        break;
      }
      got.append(buf, static_cast<std::size_t>(r));
    }
    return got;
  }
  void Write(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::write(peer_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

  int listener_ = -1;
  int peer_ = -1;
  std::uint16_t port_ = 0;
  SendQueue queue_;
  RecordingSink sink_;
  Link link_{LinkOptions{}, queue_, sink_};
};

TEST_F(LinkTest, TheHelloGoesFirstAndFramesAreReadWholeHoweverTheyAreCut) {
  Connected();
  EXPECT_TRUE(link_.linked());
  EXPECT_EQ(link_.target(), "127.0.0.1:" + std::to_string(port_));
  EXPECT_EQ(Read(9), std::string("\x05\0\0\0hello", 9));
  std::vector<std::uint8_t> bytes = LinkFrame("abc");
  const std::vector<std::uint8_t> second = LinkFrame("de");
  bytes.insert(bytes.end(), second.begin(), second.begin() + 3);  // cut inside the prefix
  Write(bytes);
  ASSERT_TRUE(StepUntil([&] { return sink_.frames.size() == 1; }));
  Write({second.begin() + 3, second.end()});
  ASSERT_TRUE(StepUntil([&] { return sink_.frames.size() == 2; }));
  EXPECT_EQ(sink_.frames, (std::vector<std::string>{"abc", "de"}));
  EXPECT_GE(sink_.received, 2);
}

TEST_F(LinkTest, TheQueuesFramesGoOnlyOnceTheServerWelcomedTheLink) {
  Connected();
  const std::vector<std::uint8_t> queued = LinkFrame("queued");
  queue_.Push(queued, 1);
  link_.Flush();  // not welcomed: held
  link_.Send(LinkFrame("direct"));
  link_.Flush();
  sink_.welcomed = true;
  link_.Flush();
  EXPECT_EQ(Read(9 + 10 + 10), std::string("\x05\0\0\0hello", 9) +
                                   std::string("\x06\0\0\0direct", 10) +
                                   std::string("\x06\0\0\0queued", 10));
  EXPECT_EQ(link_.unwritten(), 0u);
  EXPECT_TRUE(queue_.empty());
}

TEST_F(LinkTest, AFrameOverTheCapIsRefused) {
  Connected();
  const std::uint32_t huge = Link::kMaxInboundFrame + 1;
  std::vector<std::uint8_t> prefix(4);
  std::memcpy(prefix.data(), &huge, 4);
  Write(prefix);
  ASSERT_TRUE(StepUntil([&] { return !sink_.refused.empty(); }));
  EXPECT_EQ(sink_.refused[0], "the server sent a frame of " + std::to_string(huge) + " bytes");
}

TEST_F(LinkTest, AClosedOrRefusedConnectionIsLostAndADroppedLinkIsSilent) {
  Connected();
  ASSERT_EQ(Read(9).size(), 9u);  // unread bytes would make the close a reset
  ::close(peer_);
  peer_ = -1;
  ASSERT_TRUE(StepUntil([&] { return !sink_.lost.empty(); }));
  EXPECT_EQ(sink_.lost[0], "the server closed the connection");
  link_.Drop();
  EXPECT_FALSE(link_.linked());
  EXPECT_EQ(link_.socket(), -1);
  EXPECT_EQ(link_.socket_events(), 0);

  ::close(listener_);  // nobody listens on the port any more
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  link_.Begin();
  link_.Connect("127.0.0.1", port_);
  ASSERT_TRUE(StepUntil([&] { return sink_.lost.size() == 2; }));
  EXPECT_EQ(sink_.lost[1].rfind("cannot connect to 127.0.0.1:" + std::to_string(port_) + ": ", 0),
            0u)
      << sink_.lost[1];
}

}  // namespace
}  // namespace molt::kernel::client

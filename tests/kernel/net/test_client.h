// SPDX-License-Identifier: Apache-2.0
// File: tests/net/test_client.h
//
// TestClient: a small blocking client for the network tests, on plain POSIX sockets so it shares
// nothing with the server's transport. It speaks the real wire (molt_wire.fbs) and can also send
// raw bytes, half a frame, or nothing at all.
//
//   TestClient c(port);
//   auto welcome = c.Hello("ada");                  // the Welcome envelope bytes, or empty
//   c.Intent(channel, payload);
//   Frame f = c.Next();                             // the next frame that is not a ping
//
// Runs on its own thread while the test thread runs the kernel loop.
#ifndef MOLT_TESTS_NET_TEST_CLIENT_H_
#define MOLT_TESTS_NET_TEST_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "molt_wire_generated.h"

namespace molt::test {

namespace w = ::molt::wire;

// One received frame: the length prefix and the envelope, as FlatBuffers lays out a
// size-prefixed buffer (the vector's storage keeps it 8-byte aligned).
struct Frame {
  std::vector<std::uint8_t> bytes;
  bool closed = false;   // the server closed the connection instead
  bool timeout = false;  // nothing arrived in time

  const w::Envelope* envelope() const { return w::GetSizePrefixedEnvelope(bytes.data()); }
  w::Body type() const { return bytes.empty() ? w::Body::NONE : envelope()->body_type(); }
};

class TestClient {
 public:
  // `from`: a loopback source address other than 127.0.0.1 (another "host").
  explicit TestClient(std::uint16_t port, int recv_buffer = 0, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (recv_buffer > 0) {  // a small window makes a slow reader
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &recv_buffer, sizeof(recv_buffer));
    }
    if (from != nullptr) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &src.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof(src));
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;
  ~TestClient() { Close(); }

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  // --- Sending ---
  bool SendRaw(std::span<const std::uint8_t> bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  bool SendRaw(std::string_view bytes) {
    return SendRaw(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }
  // A length prefix and `body`.
  bool SendFramed(std::span<const std::uint8_t> body) {
    std::vector<std::uint8_t> f(4 + body.size());
    const auto n = static_cast<std::uint32_t>(body.size());
    std::memcpy(f.data(), &n, 4);
    std::memcpy(f.data() + 4, body.data(), body.size());
    return SendRaw(f);
  }
  static std::vector<std::uint8_t> Finish(flatbuffers::FlatBufferBuilder& b, w::Body type,
                                          flatbuffers::Offset<void> body) {
    b.FinishSizePrefixed(w::CreateEnvelope(b, type, body));
    return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
  }
  // Payloads are aligned to 8 bytes in the frame, as the protocol asks of senders.
  static flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> Payload(
      flatbuffers::FlatBufferBuilder& b, std::span<const std::uint8_t> payload) {
    b.ForceVectorAlignment(payload.size(), 1, 8);
    return b.CreateVector(payload.data(), payload.size());
  }
  static std::vector<std::uint8_t> HelloFrame(const std::string& user, std::uint32_t version = 2,
                                              std::uint64_t hash = 0,
                                              std::vector<std::uint8_t> credentials = {},
                                              std::vector<std::uint8_t> join = {},
                                              std::vector<std::uint8_t> resume = {},
                                              float device_quality = 0) {
    flatbuffers::FlatBufferBuilder b;
    auto hello = w::CreateHelloDirect(b, version, hash, user.c_str(), &credentials, &join, &resume,
                                      device_quality);
    return Finish(b, w::Body::Hello, hello.Union());
  }
  static std::vector<std::uint8_t> IntentFrame(std::uint16_t channel,
                                               std::span<const std::uint8_t> payload) {
    flatbuffers::FlatBufferBuilder b;
    return Finish(b, w::Body::Intent, w::CreateIntent(b, channel, Payload(b, payload)).Union());
  }
  static std::vector<std::uint8_t> RequestFrame(std::uint16_t channel, std::uint32_t id,
                                                std::span<const std::uint8_t> payload) {
    flatbuffers::FlatBufferBuilder b;
    return Finish(b, w::Body::Request,
                  w::CreateRequest(b, channel, id, Payload(b, payload)).Union());
  }
  bool Intent(std::uint16_t channel, std::span<const std::uint8_t> payload) {
    return SendRaw(IntentFrame(channel, payload));
  }
  bool Request(std::uint16_t channel, std::uint32_t id, std::span<const std::uint8_t> payload) {
    return SendRaw(RequestFrame(channel, id, payload));
  }
  bool Ping(std::uint32_t seq, std::uint64_t time_ns) {
    flatbuffers::FlatBufferBuilder b;
    return SendRaw(Finish(b, w::Body::Ping, w::CreatePing(b, seq, time_ns).Union()));
  }
  bool Bye() {
    flatbuffers::FlatBufferBuilder b;
    return SendRaw(Finish(b, w::Body::Bye, w::CreateByeDirect(b, "ClientClosed", "").Union()));
  }

  // Sends a hello carrying a resume token and returns the answer.
  Frame Resume(const std::string& user, std::vector<std::uint8_t> token) {
    SendRaw(HelloFrame(user, 2, 0, {}, {}, std::move(token)));
    return Next();
  }
  // Sends a hello and returns the answer (Welcome or Refuse).
  Frame Hello(const std::string& user, std::uint32_t version = 2, std::uint64_t hash = 0,
              std::vector<std::uint8_t> credentials = {}) {
    SendRaw(HelloFrame(user, version, hash, std::move(credentials)));
    return Next();
  }

  // --- Receiving ---
  // The next frame; pings are answered (when `answer_pings`) and skipped.
  Frame Next(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
             bool answer_pings = true) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      Frame f = ReadFrame(deadline);
      if (f.type() == w::Body::Ping) {
        ++pings_;
        if (answer_pings) {
          const w::Ping* p = f.envelope()->body_as_Ping();
          flatbuffers::FlatBufferBuilder b;
          SendRaw(Finish(b, w::Body::Pong, w::CreatePong(b, p->seq(), p->time_ns()).Union()));
        }
        continue;
      }
      return f;
    }
  }
  // The next frame, a ping included (not answered: the caller answers it, or not).
  Frame NextAny(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    return ReadFrame(std::chrono::steady_clock::now() + timeout);
  }
  // Skips frames until one of `type` (or a close or timeout).
  Frame NextOf(w::Body type, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      Frame f = Next(std::max(left, std::chrono::milliseconds(0)));
      if (f.closed || f.timeout || f.type() == type) {
        return f;
      }
    }
  }
  // Reads until the server closes; the Bye frame's reason if one came first (and its text in
  // `*text`, when given).
  std::string WaitClosed(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
                         std::string* text = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string reason;
    for (;;) {
      Frame f = ReadFrame(deadline);
      if (f.closed) {
        return reason.empty() ? "closed" : reason;
      }
      if (f.timeout) {
        return "timeout";
      }
      if (f.type() == w::Body::Bye) {
        reason = f.envelope()->body_as_Bye()->reason()->str();
        if (text != nullptr && f.envelope()->body_as_Bye()->text() != nullptr) {
          *text = f.envelope()->body_as_Bye()->text()->str();
        }
      }
    }
  }
  int pings() const { return pings_; }

 private:
  bool Fill(std::size_t need, std::chrono::steady_clock::time_point deadline, bool* timed_out) {
    while (buf_.size() < need) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        *timed_out = true;
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        continue;
      }
      std::uint8_t tmp[65536];
      const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) {
        return false;
      }
      buf_.insert(buf_.end(), tmp, tmp + n);
    }
    return true;
  }
  Frame ReadFrame(std::chrono::steady_clock::time_point deadline) {
    Frame f;
    bool timed_out = false;
    if (!Fill(4, deadline, &timed_out)) {
      (timed_out ? f.timeout : f.closed) = true;
      return f;
    }
    std::uint32_t n = 0;
    std::memcpy(&n, buf_.data(), 4);
    if (!Fill(4 + n, deadline, &timed_out)) {
      (timed_out ? f.timeout : f.closed) = true;
      return f;
    }
    f.bytes.assign(buf_.begin(), buf_.begin() + 4 + n);
    buf_.erase(buf_.begin(), buf_.begin() + 4 + n);
    return f;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::vector<std::uint8_t> buf_;
  int pings_ = 0;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_NET_TEST_CLIENT_H_

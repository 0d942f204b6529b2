// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/wire/websocket.h
//
// WebSocketFilter: RFC 6455 for both ends of the wire, as a filter over the bytes a connection
// already moves, as TlsFilter is for TLS (and under it: socket -> TLS -> WebSocket -> frames).
// Every binary message carries one wire frame (a size-prefixed Envelope), and Receive() hands the
// frames on as the byte stream a TCP connection would carry, so everything after it (on the
// server the frame and byte budgets, the handshake slots, sessions, resume; in libmolt_client
// the frame parser) does not know which transport a frame came on. Payload bytes are passed on
// as they arrive: nothing is buffered but a control frame (at most 125 bytes) and the HTTP head.
//
// A server's filter reads the client's upgrade request and answers it; a client's writes the
// request at once (GET / with a random key), checks the server's 101 and its
// Sec-WebSocket-Accept, masks what it sends and refuses masked frames from the server.
//
//   WebSocketFilter ws(options);       // a server's; options.role = kClient for a client's
//   ws.Receive(bytes_read, &frames);   // then ws.TakeOutput(&out); Network::Receive(frames)
//   ws.Send(frame);                    // one binary message; waits until the upgrade is done
//
// A server refuses, each with the status and text a client can act on: a request that is not a
// WebSocket upgrade (426, a short plain answer naming the endpoint), an Origin not in
// net.websocket_origins (403), a version other than 13 (426 with Sec-WebSocket-Version), a
// request head over 8 KiB (431). Once open: an unmasked, reserved-bit or unknown-opcode frame
// (close 1002), a text message (1003), a binary message that is not exactly one wire frame
// (1007), a control frame over 125 bytes or fragmented (1002). Pings are answered, a close frame
// is answered and ends the connection cleanly. A client's filter fails on an answer that is not
// 101 (naming its status and the server's text), an accept key that does not match, and a
// masked frame (close 1002).
//
// Thread safety: a WebSocketFilter is used by one thread at a time.
#ifndef MOLT_KERNEL_WIRE_WEBSOCKET_H_
#define MOLT_KERNEL_WIRE_WEBSOCKET_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace molt::kernel::wire {

struct WebSocketOptions {
  enum Role { kServer, kClient };
  // A server's: the Origin headers accepted (exact, e.g. "https://game.example.com"); empty:
  // any, and a request without one (a native client) too. A list refuses a request without one.
  std::vector<std::string> origins;
  Role role = kServer;
  // A client's: the Host header of its request ("HOST:PORT").
  std::string host{};
  static constexpr std::size_t kMaxHeadBytes = 8192;
};

class WebSocketFilter {
 public:
  explicit WebSocketFilter(WebSocketOptions options);

  // Bytes from the peer (after TLS). The wire frames carried so far are appended to `frames`.
  // An error ends the connection: its message says what was wrong, and the output holds what to
  // tell the peer first (a server's HTTP answer before the upgrade, a close frame after it).
  Status Receive(std::span<const std::uint8_t> bytes, std::vector<std::uint8_t>* frames);
  // One wire frame, sent as one binary message; queued until the upgrade is done.
  void Send(std::span<const std::uint8_t> frame);
  // The last message: a close frame with `code` (1000 normal, 1001 going away). Nothing is sent
  // after it. Before the upgrade is done it waits, as Send() does.
  void Close(std::uint16_t code);
  // Appends the bytes ready to be written to `out` (and forgets them).
  void TakeOutput(std::vector<std::uint8_t>* out);
  bool has_output() const { return !out_.empty(); }

  // The upgrade was answered (101, or refused): what waited for it has gone to the output.
  bool answered() const { return state_ != State::kHead; }
  // The upgrade was answered 101: messages flow.
  bool open() const { return state_ == State::kOpen || state_ == State::kClosing; }
  // The peer sent its close frame (answered): the connection ends, as the peer's EOF would.
  bool peer_closed() const { return peer_closed_; }
  // The peer's close frame, as "code 1001" or "code 1001: its reason" (empty before one came).
  const std::string& peer_close() const { return peer_close_; }
  // The request's path ("/" when open), for the log.
  const std::string& path() const { return path_; }

 private:
  enum class State { kHead, kOpen, kClosing, kFailed };
  Status ReceiveHead(std::span<const std::uint8_t> bytes, std::size_t* used);
  Status Upgrade();   // a server's: the request head in head_
  Status Upgraded();  // a client's: the answer's head in head_
  void Opened();
  Status Answer(int status, const std::string& reason, const std::string& text,
                const std::string& extra_headers = "");
  Status ReceiveFrames(std::span<const std::uint8_t> bytes, std::vector<std::uint8_t>* frames);
  Status Control();
  Status Violation(std::uint16_t code, const std::string& text);
  void Message(std::uint8_t opcode, std::span<const std::uint8_t> payload);

  WebSocketOptions options_;
  State state_ = State::kHead;
  std::string head_;  // the request head so far
  std::string path_;
  std::string key_;               // a client's Sec-WebSocket-Key
  std::uint64_t mask_state_ = 0;  // a client's masks: splitmix64 seeded from OpenSSL's RAND_bytes
  std::vector<std::vector<std::uint8_t>> waiting_;  // frames sent before the upgrade was done
  bool close_waiting_ = false;
  std::uint16_t close_code_ = 1000;
  bool close_sent_ = false;
  bool peer_closed_ = false;
  std::string peer_close_;
  std::vector<std::uint8_t> out_;

  // The frame being read.
  std::uint8_t header_[14] = {};
  std::size_t header_size_ = 0;  // bytes of header_ read
  bool in_payload_ = false;
  std::uint8_t opcode_ = 0;
  bool fin_ = false;
  std::uint8_t mask_[4] = {};
  std::uint64_t left_ = 0;             // payload bytes of this frame still to come
  std::uint64_t offset_ = 0;           // payload bytes of this frame read (the mask's phase)
  std::vector<std::uint8_t> control_;  // a control frame's payload
  bool masked_ = false;
  // The message being read (binary, maybe fragmented): one wire frame of 4 + size bytes.
  bool in_message_ = false;
  std::uint8_t prefix_[4] = {};
  std::uint64_t message_bytes_ = 0;
};

}  // namespace molt::kernel::wire

#endif  // MOLT_KERNEL_WIRE_WEBSOCKET_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/websocket.h
//
// WebSocketFilter: the server's side of RFC 6455 as a filter over the bytes a connection already
// moves, as TlsFilter is for TLS (and under it: socket -> TLS -> WebSocket -> Network::Receive).
// The client's upgrade request goes in through Receive() and the answer comes out of
// TakeOutput(); from then on every binary message carries one wire frame (a size-prefixed
// Envelope), and Receive() hands the frames on as the byte stream a TCP connection would carry,
// so everything after it (the frame and byte budgets, the handshake slots, sessions, resume)
// does not know which transport a frame came on. Payload bytes are unmasked and passed on as
// they arrive: nothing is buffered but a control frame (at most 125 bytes) and the request head.
//
//   WebSocketFilter ws(options);
//   ws.Receive(bytes_read, &frames);   // then ws.TakeOutput(&out); Network::Receive(frames)
//   ws.Send(frame);                    // one binary message; waits until the upgrade is done
//
// Refused, each with the status and text a client can act on: a request that is not a
// WebSocket upgrade (426, a short plain answer naming the endpoint), an Origin not in
// net.websocket_origins (403), a version other than 13 (426 with Sec-WebSocket-Version), a
// request head over 8 KiB (431). Once open: an unmasked, reserved-bit or unknown-opcode frame
// (close 1002), a text message (1003), a binary message that is not exactly one wire frame
// (1007), a control frame over 125 bytes or fragmented (1002). Pings are answered, a close frame
// is answered and ends the connection cleanly.
//
// Thread safety: a WebSocketFilter is used by one thread at a time.
#ifndef MOLT_KERNEL_NET_WEBSOCKET_H_
#define MOLT_KERNEL_NET_WEBSOCKET_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace molt::kernel::net {

struct WebSocketOptions {
  // The Origin headers accepted (exact, e.g. "https://game.example.com"); empty: any, and a
  // request without one (a native client) too. A list refuses a request without an Origin.
  std::vector<std::string> origins;
  static constexpr std::size_t kMaxHeadBytes = 8192;
};

class WebSocketFilter {
 public:
  explicit WebSocketFilter(WebSocketOptions options);

  // Bytes from the client (after TLS). The wire frames carried so far are appended to `frames`.
  // An error ends the connection: its message says what was wrong, and the output holds what to
  // tell the client first (an HTTP answer before the upgrade, a close frame after it).
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
  // The client sent its close frame (answered): the connection ends, as a client's EOF would.
  bool peer_closed() const { return peer_closed_; }
  // The request's path ("/" when open), for the log.
  const std::string& path() const { return path_; }

 private:
  enum class State { kHead, kOpen, kClosing, kFailed };
  Status ReceiveHead(std::span<const std::uint8_t> bytes, std::size_t* used);
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
  std::vector<std::vector<std::uint8_t>> waiting_;  // frames sent before the upgrade was done
  bool close_waiting_ = false;
  std::uint16_t close_code_ = 1000;
  bool close_sent_ = false;
  bool peer_closed_ = false;
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
  // The message being read (binary, maybe fragmented): one wire frame of 4 + size bytes.
  bool in_message_ = false;
  std::uint8_t prefix_[4] = {};
  std::uint64_t message_bytes_ = 0;
};

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_WEBSOCKET_H_

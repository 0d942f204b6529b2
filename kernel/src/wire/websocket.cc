// SPDX-License-Identifier: Apache-2.0
// WebSocketFilter (websocket.h): the upgrade, parsed with Beast's HTTP parser once the head is
// whole, and RFC 6455's framing by hand, unmasking as bytes arrive. Beast stays in this file.
#include "kernel/src/wire/websocket.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

namespace molt::kernel::wire {
namespace {

namespace http = boost::beast::http;

constexpr std::string_view kAcceptGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
constexpr std::uint8_t kContinuation = 0x0;
constexpr std::uint8_t kText = 0x1;
constexpr std::uint8_t kBinary = 0x2;
constexpr std::uint8_t kClose = 0x8;
constexpr std::uint8_t kPing = 0x9;
constexpr std::uint8_t kPong = 0xA;

// Sec-WebSocket-Accept for `key` (RFC 6455 §4.2.2): base64(SHA-1(key + GUID)).
std::string Base64(const unsigned char* bytes, std::size_t size) {
  unsigned char encoded[64];  // for at most 45 bytes
  const int n = EVP_EncodeBlock(encoded, bytes, static_cast<int>(size));
  return std::string(reinterpret_cast<const char*>(encoded), static_cast<std::size_t>(n));
}

std::string AcceptKey(std::string_view key) {
  const std::string text = std::string(key) + std::string(kAcceptGuid);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha1(), nullptr);
  return Base64(digest, size);
}

std::uint64_t SplitMix64(std::uint64_t* state) {
  std::uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A key is the base64 of 16 bytes: 22 characters and "==".
bool ValidKey(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") {
    return false;
  }
  return std::all_of(key.begin(), key.begin() + 22, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
  });
}

std::uint32_t Le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace

WebSocketFilter::WebSocketFilter(WebSocketOptions options) : options_(std::move(options)) {
  if (options_.role != WebSocketOptions::kClient) {
    return;
  }
  unsigned char random[16 + 8];
  if (RAND_bytes(random, sizeof random) != 1) {  // never on Linux: then the clock's bits
    const auto now =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (std::size_t i = 0; i < sizeof random; ++i) {
      random[i] = static_cast<unsigned char>(now >> (8 * (i % 8)) ^ i * 37);
    }
  }
  key_ = Base64(random, 16);
  std::memcpy(&mask_state_, random + 16, 8);
  const std::string request = "GET / HTTP/1.1\r\nHost: " + options_.host +
                              "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: " +
                              key_ + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
  out_.insert(out_.end(), request.begin(), request.end());
}

Status WebSocketFilter::Receive(std::span<const std::uint8_t> bytes,
                                std::vector<std::uint8_t>* frames) {
  if (state_ == State::kFailed) {
    return Status::FailedPrecondition("the WebSocket connection has failed");
  }
  if (state_ == State::kHead) {
    std::size_t used = 0;
    MOLT_RETURN_IF_ERROR(ReceiveHead(bytes, &used));
    bytes = bytes.subspan(used);
    if (state_ == State::kHead) {
      return Status::Ok();  // the head is not whole yet
    }
  }
  if (peer_closed_) {
    return Status::Ok();  // nothing counts after the client's close frame
  }
  return ReceiveFrames(bytes, frames);
}

Status WebSocketFilter::ReceiveHead(std::span<const std::uint8_t> bytes, std::size_t* used) {
  const bool client = options_.role == WebSocketOptions::kClient;
  const std::size_t before = head_.size();
  head_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::size_t end = head_.find("\r\n\r\n");
  const std::size_t head_size = end == std::string::npos ? head_.size() : end + 4;
  if (head_size > WebSocketOptions::kMaxHeadBytes) {
    const std::string text =
        fmt::format("the {} head is over {} bytes", client ? "server's answer" : "request",
                    WebSocketOptions::kMaxHeadBytes);
    if (client) {
      state_ = State::kFailed;
      return Status::InvalidArgument("WebSocket: " + text);
    }
    return Answer(431, "Request Header Fields Too Large", text);
  }
  if (end == std::string::npos) {
    *used = bytes.size();
    return Status::Ok();
  }
  *used = head_size - before;  // what follows the head is the first frames
  if (client) {
    return Upgraded();  // keeps what follows the head: a refusal's text
  }
  head_.resize(head_size);
  return Upgrade();
}

Status WebSocketFilter::Upgrade() {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(WebSocketOptions::kMaxHeadBytes));
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head_), ec);
  if (ec || !parser.is_header_done()) {
    return Answer(400, "Bad Request",
                  "the request is not HTTP (" + (ec ? ec.message() : std::string("incomplete")) +
                      "): this is a Molt WebSocket endpoint");
  }
  const http::request<http::empty_body>& req = parser.get();
  path_ = std::string(req.target());
  if (!boost::beast::websocket::is_upgrade(req)) {
    return Answer(426, "Upgrade Required",
                  "this is a Molt WebSocket endpoint: connect with a WebSocket client (for "
                  "example new WebSocket(\"ws://HOST:PORT/\") in a browser, binaryType "
                  "\"arraybuffer\"); plain HTTP gets nothing here",
                  "Upgrade: websocket\r\nConnection: Upgrade\r\n");
  }
  if (req[http::field::sec_websocket_version] != "13") {
    return Answer(426, "Upgrade Required",
                  "WebSocket version \"" + std::string(req[http::field::sec_websocket_version]) +
                      "\" is not spoken here: use version 13 (RFC 6455)",
                  "Sec-WebSocket-Version: 13\r\n");
  }
  const std::string_view key = req[http::field::sec_websocket_key];
  if (!ValidKey(key)) {
    return Answer(400, "Bad Request",
                  "Sec-WebSocket-Key is missing or is not the base64 of 16 bytes");
  }
  if (!options_.origins.empty()) {
    const std::string_view origin = req[http::field::origin];
    if (std::find(options_.origins.begin(), options_.origins.end(), origin) ==
        options_.origins.end()) {
      return Answer(403, "Forbidden",
                    origin.empty()
                        ? std::string("a request without an Origin is refused: this endpoint "
                                      "takes only the origins in net.websocket_origins")
                        : "origin \"" + std::string(origin) +
                              "\" is not allowed here: add it to net.websocket_origins");
    }
  }
  const std::string answer =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
      "Connection: Upgrade\r\nSec-WebSocket-Accept: " +
      AcceptKey(key) + "\r\n\r\n";
  out_.insert(out_.end(), answer.begin(), answer.end());
  Opened();
  return Status::Ok();
}

Status WebSocketFilter::Upgraded() {
  const std::size_t head_size = head_.find("\r\n\r\n") + 4;
  http::response_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(WebSocketOptions::kMaxHeadBytes));
  parser.skip(true);  // a refusal's body is read below, as far as it came
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head_.data(), head_size), ec);
  state_ = State::kFailed;
  if (ec || !parser.is_header_done()) {
    return Status::InvalidArgument("WebSocket: the server did not answer the upgrade in HTTP (" +
                                   (ec ? ec.message() : std::string("incomplete")) +
                                   "): is this a WebSocket port?");
  }
  const http::response<http::empty_body>& res = parser.get();
  if (res.result() != http::status::switching_protocols) {
    std::string text = head_.substr(head_size, 300);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
      text.pop_back();
    }
    return Status::InvalidArgument(
        fmt::format("WebSocket upgrade refused by the server ({} {}){}{}", res.result_int(),
                    std::string(res.reason()), text.empty() ? "" : ": ", text));
  }
  if (!boost::beast::iequals(res[http::field::upgrade], "websocket")) {
    return Status::InvalidArgument("WebSocket: the server's 101 does not upgrade to websocket");
  }
  if (res[http::field::sec_websocket_accept] != AcceptKey(key_)) {
    return Status::InvalidArgument(
        "WebSocket: the server's Sec-WebSocket-Accept does not match the key sent (a proxy "
        "that does not speak WebSocket?)");
  }
  Opened();
  return Status::Ok();
}

void WebSocketFilter::Opened() {
  head_.clear();
  head_.shrink_to_fit();
  state_ = State::kOpen;
  for (const std::vector<std::uint8_t>& frame : std::exchange(waiting_, {})) {
    Send(frame);
  }
  if (close_waiting_) {
    Close(close_code_);
  }
}

Status WebSocketFilter::Answer(int status, const std::string& reason, const std::string& text,
                               const std::string& extra_headers) {
  const std::string body = text + "\n";
  const std::string answer = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\n{}"
      "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
      status, reason, extra_headers, body.size(), body);
  out_.insert(out_.end(), answer.begin(), answer.end());
  state_ = State::kFailed;
  waiting_.clear();
  return Status::InvalidArgument(fmt::format("WebSocket upgrade refused ({}): {}", status, text));
}

Status WebSocketFilter::ReceiveFrames(std::span<const std::uint8_t> bytes,
                                      std::vector<std::uint8_t>* frames) {
  while (!bytes.empty() && !peer_closed_) {
    if (!in_payload_) {
      // The header: 2 bytes, then 0, 2 or 8 of length, then the 4-byte mask.
      header_[header_size_++] = bytes[0];
      bytes = bytes.subspan(1);
      if (header_size_ < 2) {
        continue;
      }
      const std::uint8_t len7 = header_[1] & 0x7F;
      const std::size_t ext = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
      masked_ = (header_[1] & 0x80) != 0;
      if (header_size_ == 2) {
        if ((header_[0] & 0x70) != 0) {
          return Violation(1002, "a frame with reserved bits set (no extension was agreed)");
        }
        if (options_.role == WebSocketOptions::kServer && !masked_) {
          return Violation(1002, "an unmasked frame (a client masks every frame it sends)");
        }
        if (options_.role == WebSocketOptions::kClient && masked_) {
          return Violation(1002, "a masked frame (a server masks none)");
        }
      }
      if (header_size_ < 2 + ext + (masked_ ? 4 : 0)) {
        continue;
      }
      fin_ = (header_[0] & 0x80) != 0;
      opcode_ = header_[0] & 0x0F;
      std::uint64_t len = len7;
      if (ext > 0) {
        len = 0;
        for (std::size_t i = 0; i < ext; ++i) {
          len = len << 8 | header_[2 + i];
        }
        if (len >> 63 != 0) {
          return Violation(1002, "a frame length with its top bit set");
        }
      }
      if (masked_) {
        std::copy_n(header_ + 2 + ext, 4, mask_);
      }
      header_size_ = 0;
      const bool control = (opcode_ & 0x8) != 0;
      if (control) {
        if (opcode_ != kClose && opcode_ != kPing && opcode_ != kPong) {
          return Violation(1002, fmt::format("unknown opcode {:#x}", opcode_));
        }
        if (!fin_ || len > 125) {
          return Violation(1002, "a control frame that is fragmented or over 125 bytes");
        }
      } else if (opcode_ == kText) {
        return Violation(1003, "a text message: Molt takes binary messages, one wire frame each");
      } else if (opcode_ == kBinary) {
        if (in_message_) {
          return Violation(1002, "a new message before the last one's final fragment");
        }
        in_message_ = true;
        message_bytes_ = 0;
      } else if (opcode_ == kContinuation) {
        if (!in_message_) {
          return Violation(1002, "a continuation frame with no message to continue");
        }
      } else {
        return Violation(1002, fmt::format("unknown opcode {:#x}", opcode_));
      }
      in_payload_ = true;
      left_ = len;
      offset_ = 0;
      control_.clear();
    }
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left_, bytes.size()));
    std::vector<std::uint8_t>& into = (opcode_ & 0x8) != 0 ? control_ : *frames;
    const std::size_t at = into.size();
    into.insert(into.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t i = 0; masked_ && i < n; ++i) {
      into[at + i] ^= mask_[(offset_ + i) % 4];
    }
    if ((opcode_ & 0x8) == 0) {
      // One wire frame per message: its 4-byte size prefix, then exactly that many bytes.
      for (std::size_t i = 0; i < n && message_bytes_ + i < 4; ++i) {
        prefix_[message_bytes_ + i] = into[at + i];
      }
      message_bytes_ += n;
      if (message_bytes_ >= 4 && message_bytes_ > 4 + std::uint64_t{Le32(prefix_)}) {
        return Violation(1007, fmt::format("a binary message longer than the wire frame it starts "
                                           "({} bytes and more, the frame's size says {}): send "
                                           "each frame as a message of its own",
                                           message_bytes_, 4 + std::uint64_t{Le32(prefix_)}));
      }
    }
    bytes = bytes.subspan(n);
    left_ -= n;
    offset_ += n;
    if (left_ > 0) {
      continue;
    }
    in_payload_ = false;
    if ((opcode_ & 0x8) != 0) {
      MOLT_RETURN_IF_ERROR(Control());
    } else if (fin_) {
      in_message_ = false;
      if (message_bytes_ < 4 || message_bytes_ != 4 + std::uint64_t{Le32(prefix_)}) {
        return Violation(1007, fmt::format("a binary message of {} bytes is not one wire frame "
                                           "(a 4-byte size prefix, then that many bytes)",
                                           message_bytes_));
      }
    }
  }
  return Status::Ok();
}

Status WebSocketFilter::Control() {
  if (opcode_ == kPing) {
    if (!close_sent_) {
      Message(kPong, control_);
    }
  } else if (opcode_ == kClose) {
    peer_closed_ = true;
    if (control_.size() == 1) {
      return Violation(1002, "a close frame with a 1-byte payload");
    }
    peer_close_ =
        control_.size() < 2
            ? std::string("no code")
            : fmt::format("code {}", control_[0] << 8 | control_[1]) +
                  (control_.size() > 2 ? ": " + std::string(control_.begin() + 2, control_.end())
                                       : std::string());
    if (!close_sent_) {  // answered with the client's own code, as RFC 6455 §5.5.1 says
      const std::uint16_t code =
          control_.size() >= 2 ? static_cast<std::uint16_t>(control_[0] << 8 | control_[1]) : 1000;
      const std::uint8_t echo[2] = {static_cast<std::uint8_t>(code >> 8),
                                    static_cast<std::uint8_t>(code & 0xFF)};
      Message(kClose, echo);
      close_sent_ = true;
    }
    state_ = State::kClosing;
  }
  return Status::Ok();  // a pong needs nothing
}

Status WebSocketFilter::Violation(std::uint16_t code, const std::string& text) {
  if (!close_sent_) {
    std::vector<std::uint8_t> payload = {static_cast<std::uint8_t>(code >> 8),
                                         static_cast<std::uint8_t>(code & 0xFF)};
    const std::string_view reason = std::string_view(text).substr(0, 123);
    payload.insert(payload.end(), reason.begin(), reason.end());
    Message(kClose, payload);
    close_sent_ = true;
  }
  state_ = State::kFailed;
  return Status::InvalidArgument(fmt::format("WebSocket: {} (close {})", text, code));
}

void WebSocketFilter::Send(std::span<const std::uint8_t> frame) {
  if (state_ == State::kHead) {
    waiting_.emplace_back(frame.begin(), frame.end());
    return;
  }
  if (!close_sent_ && state_ != State::kFailed) {
    Message(kBinary, frame);
  }
}

void WebSocketFilter::Close(std::uint16_t code) {
  if (state_ == State::kHead) {
    close_waiting_ = true;
    close_code_ = code;
    return;
  }
  if (close_sent_ || state_ == State::kFailed) {
    return;
  }
  const std::uint8_t payload[2] = {static_cast<std::uint8_t>(code >> 8),
                                   static_cast<std::uint8_t>(code & 0xFF)};
  Message(kClose, payload);
  close_sent_ = true;
  state_ = State::kClosing;
}

void WebSocketFilter::Message(std::uint8_t opcode, std::span<const std::uint8_t> payload) {
  const bool mask = options_.role == WebSocketOptions::kClient;  // a client masks every frame
  const std::uint8_t mask_bit = mask ? 0x80 : 0;
  out_.push_back(static_cast<std::uint8_t>(0x80 | opcode));  // FIN: never fragmented
  const std::uint64_t n = payload.size();
  if (n < 126) {
    out_.push_back(static_cast<std::uint8_t>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    out_.push_back(mask_bit | 126);
    out_.push_back(static_cast<std::uint8_t>(n >> 8));
    out_.push_back(static_cast<std::uint8_t>(n & 0xFF));
  } else {
    out_.push_back(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      out_.push_back(static_cast<std::uint8_t>(n >> shift & 0xFF));
    }
  }
  std::uint8_t key[4] = {};
  if (mask) {
    const auto bits = static_cast<std::uint32_t>(SplitMix64(&mask_state_));
    std::memcpy(key, &bits, 4);
    out_.insert(out_.end(), key, key + 4);
  }
  const std::size_t at = out_.size();
  out_.insert(out_.end(), payload.begin(), payload.end());
  for (std::size_t i = 0; mask && i < n; ++i) {
    out_[at + i] ^= key[i % 4];
  }
}

void WebSocketFilter::TakeOutput(std::vector<std::uint8_t>* out) {
  out->insert(out->end(), out_.begin(), out_.end());
  out_.clear();
}

}  // namespace molt::kernel::wire

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/link.h
//
// Link: the client's one connection to a server at a time (Connection, connection.h), on an Asio
// io_context that only the owner's step runs. It connects (resolving names only), speaks TLS and
// the WebSocket upgrade when asked to (the filters of wire/tls.h and wire/websocket.h, TLS
// outside), reads the server's bytes into whole frames (the size prefix, the client's own cap on a
// frame), and writes without blocking: what the owner sends directly (the Hello, the Bye), then
// what the send queue releases once the owner says the server welcomed this link, waiting for
// writability when the socket is full. It tells its owner what happens through a LinkSink; it knows
// nothing of sessions, channels or requests.
//
// Each link has a generation: Begin() starts a new one and Drop() ends it, and a completion of an
// older generation is ignored, so the owner compares generation() before and after a call that
// may end the link (a callback that disconnected).
//
//   Link link(options, queue, sink);
//   MOLT_RETURN_IF_ERROR(link.Prepare());             // the TLS context, once
//   const std::uint64_t g = link.Begin();
//   link.Connect("game.example.com", 7777);           // then sink.OnLinked(): link.Send(hello)
//   link.Restart(); while (link.PollOne() != 0) {}    // the owner's step
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the owner's).
#ifndef MOLT_KERNEL_CLIENT_LINK_H_
#define MOLT_KERNEL_CLIENT_LINK_H_

#include <molt/kernel/status.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernel/src/client/send_queue.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel::wire {
class TlsContext;
class TlsFilter;
class WebSocketFilter;
}  // namespace molt::kernel::wire

namespace molt::kernel::client {

// What a Link tells its owner; every call comes from inside the owner's step (an Asio handler).
class LinkSink {
 public:
  virtual ~LinkSink() = default;
  // TCP connected and the filters set up: the owner says Hello (Link::Send).
  virtual void OnLinked() = 0;
  // Bytes arrived from the server.
  virtual void OnReceived() = 0;
  // One whole frame, its size prefix included. The owner may end the link inside it.
  virtual void OnFrame(std::span<const std::uint8_t> frame) = 0;
  // The link failed (refused, reset, closed by the server, silent, a write that failed): a retry
  // may follow.
  virtual void OnLinkLost(const std::string& reason) = 0;
  // The link cannot be used (a refused certificate or upgrade, a frame over the cap): retrying
  // does not make it better.
  virtual void OnLinkRefused(const std::string& reason) = 0;
  // The server welcomed this link: the send queue's frames may go.
  virtual bool Welcomed() const = 0;
};

struct LinkOptions {
  bool tls = false;             // MOLT_CLIENT_TLS
  std::string tls_ca_file;      // "": the system's CAs
  std::string tls_server_name;  // "": the host connected to
  bool websocket = false;       // MOLT_CLIENT_WEBSOCKET
};

class Link {
 public:
  // The client's own cap on a frame from the server.
  static constexpr std::uint32_t kMaxInboundFrame = 16u << 20;
  enum class WriteState { kDone, kBlocked, kFailed };

  // `queue` and `sink` outlive the link.
  Link(LinkOptions options, SendQueue& queue, LinkSink& sink);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Makes the TLS context at the first call when TLS is asked for; InvalidArgument when its CA
  // file cannot be used.
  Status Prepare();
  // A new generation (the previous one's completions are ignored from here on); returns it.
  std::uint64_t Begin();
  // Connects this generation to `host:port` (a name is resolved first); sink.OnLinked() or
  // sink.OnLinkLost() follows inside a step.
  void Connect(const std::string& host, std::uint16_t port);
  // Closes the socket and ends the generation; what was being written (on the wire when the link
  // broke) is dropped. The send queue stays for the next link.
  void Drop();

  // `frames` (whole, size-prefixed) after what is being written, through the filters (each a
  // WebSocket message, then TLS records), ahead of the queue: the Hello. Flush() writes them.
  void Send(std::span<const std::uint8_t> frames);
  // Writes what is pending, then what the queue releases while the server welcomed the link,
  // without blocking; waits for writability when the socket is full.
  void Flush();
  // Writes until the socket is full (kBlocked), nothing more may go yet (kDone), or a write fails
  // (kFailed: reported by TakeWriteError, never by a callback).
  WriteState WriteReady();
  // Writes the queue with plain non-blocking writes and polls (no Asio handler, so no callback of
  // the app runs), at the server's pace, for at most `budget`.
  void FinishWrites(Duration budget);
  // Best effort, when nothing is being written: `bye` written now, then the WebSocket close and
  // TLS close_notify, the last bytes of the link.
  void SayBye(std::span<const std::uint8_t> bye);

  // The io_context: Restart() before a step, then PollOne() until it returns 0.
  void Restart();
  std::size_t PollOne();

  std::uint64_t generation() const { return generation_; }
  // TCP connected (frames may be written: the Hello first).
  bool linked() const { return linked_; }
  // A name is being resolved (the resolver's thread cannot wake a poll).
  bool resolving() const { return resolving_; }
  // Waiting for the socket to take more.
  bool write_waiting() const { return write_waiting_; }
  // "host:port" of the last Connect.
  const std::string& target() const { return target_; }
  // `size` bytes exported from this link's TLS session under `label` (wire/tls.h); empty over
  // plain TCP or before the handshake is done.
  std::vector<std::uint8_t> ExportKey(const std::string& label, std::size_t size) const;
  // Bytes being written, not yet taken by the socket.
  std::size_t unwritten() const { return writing_.size() - written_; }
  // A write failed outside a step; TakeWriteError() gives its reason once.
  bool write_failed() const { return !write_error_.empty(); }
  std::string TakeWriteError();
  // The socket's descriptor while there is one, else -1.
  int socket() const;
  // MOLT_CLIENT_WAIT_READ / _WRITE: what to poll socket() for; 0 without a socket.
  std::int32_t socket_events() const;

 private:
  friend struct ConnectionFuzzer;  // tests/fuzz/client_fuzz.cc: bytes in without a socket
  struct Io;                       // the Asio objects (link.cc)

  void OnConnected();
  void Read();
  // `n` bytes read by generation `link`: through the filters, then the frames.
  void OnRead(std::uint64_t link, std::size_t n);
  // The whole frames in rx_, to the sink, while generation `link` lasts.
  void Parse(std::uint64_t link);
  // What the filters hold for the socket (the upgrade request, a pong, TLS handshake messages),
  // after what is being written.
  void TakeFilterOutput();

  const LinkOptions options_;
  SendQueue& queue_;
  LinkSink& sink_;
  std::unique_ptr<Io> io_;
  std::shared_ptr<wire::TlsContext> tls_context_;  // made at the first Prepare
  std::unique_ptr<wire::TlsFilter> tls_;           // this link's, once TCP connected
  std::unique_ptr<wire::WebSocketFilter> ws_;      // this link's, once TCP connected
  std::uint64_t generation_ = 0;
  std::string host_;
  std::string target_;
  bool resolving_ = false;
  bool linked_ = false;
  bool write_waiting_ = false;
  std::string write_error_;  // a write failed outside a step
  std::vector<std::uint8_t> in_ = std::vector<std::uint8_t>(16 * 1024);
  std::vector<std::uint8_t> rx_;       // read, through the filters: frames
  std::vector<std::uint8_t> plain_;    // released by the queue, or read, for the filters
  std::vector<std::uint8_t> ws_out_;   // the WebSocket filter's bytes, for TLS
  std::vector<std::uint8_t> writing_;  // being written
  std::size_t written_ = 0;            // of writing_
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_LINK_H_

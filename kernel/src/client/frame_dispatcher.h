// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/frame_dispatcher.h
//
// FrameDispatcher: the frames a server sends a client (Connection, connection.h), each verified
// before it is read (the server is not trusted) and handed to the handler for its kind through
// the ServerFrameHandler interface. The wire's reading rules live here: the fields are read in
// place from an aligned copy, byte payloads come aligned, a response's status that is positive
// (no molt status is) reads as MOLT_ERR_INTERNAL, a body this client does not know (from a newer
// server) is ignored so that appending one never breaks clients, and a frame that does not
// verify or carries a client-to-server message is refused with the reason.
//
//   FrameDispatcher frames(handler);
//   frames.Dispatch(frame);   // the size prefix included; handler.OnWelcome(...), ...
//
// Thread safety: not thread-safe; REQUIRES one thread at a time (the connection's).
#ifndef MOLT_KERNEL_CLIENT_FRAME_DISPATCHER_H_
#define MOLT_KERNEL_CLIENT_FRAME_DISPATCHER_H_

#include <molt/molt.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace molt::wire {
struct Welcome;
struct Refuse;
struct Bye;
struct Redirect;
struct Ping;
struct Pong;
struct Replica;
struct Channels;
}  // namespace molt::wire

namespace molt::kernel::client {

// What a client does with each frame a server sends. Payload spans are valid during the call.
class ServerFrameHandler {
 public:
  virtual ~ServerFrameHandler() = default;
  virtual void OnWelcome(const molt::wire::Welcome& welcome) = 0;
  virtual void OnRefuse(const molt::wire::Refuse& refuse) = 0;
  virtual void OnBye(const molt::wire::Bye& bye) = 0;
  virtual void OnRedirect(const molt::wire::Redirect& redirect) = 0;
  // `seq`: the channel's sequence number (unreliable channels; 0 on others).
  virtual void OnServerEvent(std::uint16_t channel, std::uint32_t seq,
                             std::span<const std::uint8_t> payload) = 0;
  // Predicted intents the server decided (wire 2.5).
  virtual void OnAcks(std::span<const std::uint32_t> accepted,
                      std::span<const std::uint32_t> rejected) = 0;
  // `status` is 0 or a molt error code.
  virtual void OnResponse(std::uint32_t id, molt_status_t status,
                          std::span<const std::uint8_t> payload) = 0;
  virtual void OnPing(const molt::wire::Ping& ping) = 0;
  virtual void OnPong(const molt::wire::Pong& pong) = 0;
  virtual void OnReplicaMessage(const molt::wire::Replica& replica) = 0;
  // A swap changed the server's channel table (wire 2.2).
  virtual void OnChannels(const molt::wire::Channels& channels) = 0;
  // A frame that does not verify, or a message only a client sends: the server is broken.
  virtual void OnBadFrame(const std::string& reason) = 0;
};

class FrameDispatcher {
 public:
  // `handler` outlives the dispatcher.
  explicit FrameDispatcher(ServerFrameHandler& handler) : handler_(handler) {}
  FrameDispatcher(const FrameDispatcher&) = delete;
  FrameDispatcher& operator=(const FrameDispatcher&) = delete;

  // Verifies `frame` (size prefix included) and hands it to the handler for its kind (an Error
  // frame, the server counting something it dropped, needs nothing).
  void Dispatch(std::span<const std::uint8_t> frame);

 private:
  ServerFrameHandler& handler_;
  std::vector<std::uint64_t> frame_scratch_;    // the frame, aligned
  std::vector<std::uint64_t> payload_scratch_;  // a payload, aligned
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_FRAME_DISPATCHER_H_

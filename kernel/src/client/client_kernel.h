// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/client_kernel.h
//
// ClientKernel: the client role of the kernel inside libmolt_client (DESIGN.md §3). It boots the
// shared core (scheduler, Bus, hooks, scopes, processes) as the process's kernel with role
// Client, and runs controllers: plugins of kind MOLT_PLUGIN_KIND_CONTROLLER, loaded from files or
// linked into the app, booted in dependency order with the same two phases as services (every
// init, then every start). Their host API is the core's plus the client slots of ABI 1.2
// (client_intent, client_request, client_replica_get), which reach the connection through a
// ClientPort; the server's networking slots answer MOLT_ERR_UNSUPPORTED. What the server sends is
// published on the
// kernel's Bus ("Net.Event.<channel>", "Net.Replica.<name>", "Net.State").
//
//   auto k = ClientKernel::Boot(port);            // once per process
//   (*k)->Load("controllers/");                   // or Add(&molt::EntryOf<Hud>)
//   (*k)->Start();
//   (*k)->Step(budget);                           // from molt_client_step, after the I/O
//
// Thread safety: REQUIRES the thread that steps the client.
#ifndef MOLT_KERNEL_CLIENT_CLIENT_KERNEL_H_
#define MOLT_KERNEL_CLIENT_CLIENT_KERNEL_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"

namespace molt::kernel {
class Kernel;
namespace loader {
class PluginHost;
}  // namespace loader
}  // namespace molt::kernel

namespace molt::kernel::client {

// What controllers may ask of the connection (implemented by molt_client).
class ClientPort {
 public:
  virtual ~ClientPort() = default;
  // Sends an intent on the server's channel named `channel`.
  virtual Status Intent(std::string_view channel, std::span<const std::uint8_t> payload) = 0;
  // Sends a request; `done(status, payload)` runs exactly once: inside a later step, or at once
  // when the connection ends (MOLT_ERR_TIMEOUT); never after the client is destroyed.
  virtual Status Request(std::string_view channel, std::span<const std::uint8_t> payload,
                         double timeout_seconds,
                         Callback<void(molt_status_t, std::string_view)> done) = 0;
  // Field `field` of the held replica named `replica` (bytes point into the client's copy).
  virtual Status ReplicaValue(std::string_view replica, std::string_view field,
                              molt_value* out) = 0;
  // A predicted intent on the server's channel named `channel`: its seq (ABI 1.10).
  virtual Result<std::uint32_t> Predict(std::string_view channel,
                                        std::span<const std::uint8_t> payload) = 0;
  // The predicted intents on `channel` not yet resolved, oldest first: fn(seq, payload).
  virtual Status Pending(
      std::string_view channel,
      const Callback<void(std::uint32_t, std::span<const std::uint8_t>)>& fn) = 0;
};

class ClientKernel {
 public:
  // Boots the process's kernel in the client role. Fails when a kernel is already booted in
  // this process (another client loaded controllers first).
  static Result<std::unique_ptr<ClientKernel>> Boot(ClientPort& port);
  ClientKernel(const ClientKernel&) = delete;
  ClientKernel& operator=(const ClientKernel&) = delete;
  // Stops the controllers (reverse boot order), unloads them, shuts the kernel down.
  ~ClientKernel();

  // Loads a controller file, or every .so in a directory (all or nothing).
  Status Load(const std::string& path);
  // Registers a controller linked into the app.
  Status Add(molt_plugin_entry_fn entry);
  // Boots every controller: every init, then every start, dependency order.
  Status Start();
  // Swaps in `path` (a file or a directory) as a new generation of controllers (client API 5).
  Status Reload(const std::string& path);
  bool started() const;
  // Runs the scheduler for at most `budget`; nullopt: the kernel's own frame budget.
  void Step(std::optional<Duration> budget);
  // When the controllers next need a step (a time in the past: now); nullopt when nothing is
  // scheduled.
  std::optional<TimePoint> NextWake() const;

  // --- What the server sent, for the controllers' Bus ---
  // Topics are resolved once per channel id and replica id (and again if the name changed).
  void Event(std::uint16_t id, std::string_view channel, std::span<const std::uint8_t> payload);
  void ReplicaUpdate(std::string_view name, std::uint32_t replica, std::int32_t what,
                     std::int32_t field);
  void State(std::int32_t state, std::string_view reason);
  // A predicted intent on `channel` was resolved: "Net.Resolved.<channel>" (seq, accepted, status).
  void Resolved(std::string_view channel, std::uint32_t seq, molt_status_t status);

  Kernel& kernel() { return *kernel_; }

 private:
  struct Topics;  // resolved Net.Event.* / Net.Replica.* topics
  ClientKernel();

  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<loader::PluginHost> controllers_;
  std::string copy_dir_;
  std::unique_ptr<Topics> topics_;
};

}  // namespace molt::kernel::client

#endif  // MOLT_KERNEL_CLIENT_CLIENT_KERNEL_H_

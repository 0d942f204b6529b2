// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/client/client_kernel.h"

#include <molt/client.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <unordered_map>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/process.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::client {
namespace {

namespace fs = std::filesystem;
using abi::BytesArg;
using abi::Guard;
using abi::PluginInstance;
using abi::Required;
using abi::SecondsArg;

// The client's layer: the connection the controllers' slots reach. Controllers hold nothing in
// it that needs releasing (their completions are ordinary resources).
class ClientLayer final : public abi::HostLayer {
 public:
  explicit ClientLayer(ClientPort& port) : port_(port) {}
  ClientPort& port() { return port_; }
  void ReleaseOwner(const void*) override {}
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}

 private:
  ClientPort& port_;
};

ClientPort& PortOf(PluginInstance& p) {
  // The client slots are only in tables whose layer ClientKernel::Boot installed.
  return p.shared().Layer<ClientLayer>()->port();
}

// --- The client slots (ABI 1.2) ---

molt_status_t ClientIntent(molt_context_t* ctx, const char* channel, const void* data,
                           std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(channel, "channel"));
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    return PortOf(p).Intent(channel, payload);
  });
}

molt_status_t ClientRequest(molt_context_t* ctx, const char* channel, const void* data,
                            std::size_t size, double timeout_seconds,
                            molt_completion_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{channel, "channel"}, {out, "out_completion"}}));
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    MOLT_RETURN_IF_ERROR(SecondsArg(timeout_seconds, "timeout_seconds").status());
    std::shared_ptr<Completion> completion = Completion::Create();
    Status sent = PortOf(p).Request(
        channel, payload, timeout_seconds,
        [completion](molt_status_t status, std::string_view payload) {
          Status st = status == MOLT_OK
                          ? Status::Ok()
                          : Status(abi::AbiCode(status), status == MOLT_ERR_TIMEOUT
                                                             ? "no answer in time"
                                                             : "the server answered with an error");
          (void)completion->Complete(std::move(st), std::string(payload));
        });
    if (!sent.ok()) {
      return sent;
    }
    PluginInstance::Resource r{abi::Kind::kCompletion, {}, 0, false, nullptr, nullptr, nullptr};
    r.completion = std::move(completion);
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t ClientReplicaGet(molt_context_t* ctx, const char* replica, const char* field,
                               molt_value* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{replica, "replica"}, {field, "field"}, {out, "out_value"}});
        !s.ok()) {
      return s;
    }
    return PortOf(p).ReplicaValue(replica, field, out);
  });
}

// --- The client slots (ABI 1.10) ---

molt_status_t ClientPredict(molt_context_t* ctx, const char* channel, const void* data,
                            std::size_t size, std::uint32_t* out_seq) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(channel, "channel"));
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    MOLT_ASSIGN_OR_RETURN(const std::uint32_t seq, PortOf(p).Predict(channel, payload));
    if (out_seq != nullptr) {
      *out_seq = seq;
    }
    return Status::Ok();
  });
}

molt_status_t ClientPending(molt_context_t* ctx, const char* channel, molt_pending_fn fn,
                            void* user_data) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(
        Required({{channel, "channel"}, {reinterpret_cast<const void*>(fn), "fn"}}));
    return PortOf(p).Pending(channel, [&](std::uint32_t seq, std::span<const std::uint8_t> bytes) {
      CallPlugin(p, [&] {
        fn(user_data, seq, bytes.data(), bytes.size());
        return MOLT_OK;
      });
    });
  });
}

}  // namespace

struct ClientKernel::Topics {
  struct Entry {
    std::string name;  // what it was resolved for
    Bus::Topic* topic = nullptr;
  };
  // The topic "<prefix><name>" for `key`, resolved on first use or when the name changed.
  static Bus::Topic* Get(Bus& bus, std::unordered_map<std::uint32_t, Entry>& cache,
                         std::uint32_t key, std::string_view prefix, std::string_view name) {
    Entry& e = cache[key];
    if (e.topic == nullptr || e.name != name) {
      e.name = std::string(name);
      e.topic = bus.Resolve(std::string(prefix) + e.name);
    }
    return e.topic;
  }
  std::unordered_map<std::uint32_t, Entry> events;    // by channel id
  std::unordered_map<std::uint32_t, Entry> replicas;  // by replica id
};

ClientKernel::ClientKernel() : topics_(std::make_unique<Topics>()) {}

Result<std::unique_ptr<ClientKernel>> ClientKernel::Boot(ClientPort& port) {
  KernelOptions options;
  options.role = Role::kClient;
  Result<std::unique_ptr<Kernel>> kernel = Kernel::Boot(std::move(options));
  if (!kernel.ok()) {
    return kernel.status().Prefixed("cannot boot the client kernel");
  }
  std::unique_ptr<ClientKernel> k(new ClientKernel());
  k->kernel_ = std::move(kernel).value();
  std::error_code ec;
  k->copy_dir_ =
      (fs::temp_directory_path(ec) / ("molt-controllers-" + std::to_string(::getpid()))).string();
  k->controllers_ =
      std::make_unique<loader::PluginHost>(*k->kernel_, k->copy_dir_, MOLT_PLUGIN_KIND_CONTROLLER);
  abi::AbiShared& shared = k->controllers_->shared();
  shared.AddLayer(std::make_unique<ClientLayer>(port));
  molt_host_api& api = shared.mutable_api();
  api.client_intent = ClientIntent;
  api.client_request = ClientRequest;
  api.client_replica_get = ClientReplicaGet;
  api.client_predict = ClientPredict;
  api.client_pending = ClientPending;
  return k;
}

ClientKernel::~ClientKernel() {
  if (Status s = kernel_->Shutdown(); !s.ok()) {
    LogScope("Client").Warn("{}", s.message());
  }
  controllers_->UnloadAll();
  controllers_.reset();
  kernel_.reset();
  std::error_code ec;
  fs::remove_all(copy_dir_, ec);
}

Status ClientKernel::Load(const std::string& path) {
  if (kernel_->started()) {
    return Status::FailedPrecondition(
        "the controllers already started: load them all before molt_client_start");
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return controllers_->LoadDirectory(path);
  }
  return controllers_->LoadFiles({path});
}

Status ClientKernel::Add(molt_plugin_entry_fn entry) {
  if (kernel_->started()) {
    return Status::FailedPrecondition(
        "the controllers already started: add them all before molt_client_start");
  }
  return controllers_->AddStatic(entry, "(linked into the app)");
}

Status ClientKernel::Start() { return kernel_->Start(); }

Status ClientKernel::Reload(const std::string& path) {
  const loader::SwapReport r = controllers_->Reload(path, "app");
  if (r.ok) {
    return Status::Ok();
  }
  return Status::FailedPrecondition("reloading controllers from \"" + path + "\" failed at " +
                                    r.stage + ": " + r.error +
                                    (r.restored ? " (the previous controllers were restored)"
                                                : " (the running controllers keep running)"));
}

bool ClientKernel::started() const { return kernel_->started(); }

void ClientKernel::Step(std::optional<Duration> budget) {
  if (budget) {
    kernel_->scheduler().Step(*budget);
  } else {
    kernel_->scheduler().Step();
  }
}

std::optional<TimePoint> ClientKernel::NextWake() const { return kernel_->scheduler().NextWake(); }

void ClientKernel::Event(std::uint16_t id, std::string_view channel,
                         std::span<const std::uint8_t> payload) {
  const Value args[] = {Value::Bytes(payload.data(), static_cast<std::uint32_t>(payload.size()))};
  Bus& bus = kernel_->bus();
  bus.Publish(Topics::Get(bus, topics_->events, id, "Net.Event.", channel), args);
}

void ClientKernel::ReplicaUpdate(std::string_view name, std::uint32_t replica, std::int32_t what,
                                 std::int32_t field) {
  const Value args[] = {Value::Int(replica), Value::Int(what), Value::Int(field)};
  Bus& bus = kernel_->bus();
  bus.Publish(Topics::Get(bus, topics_->replicas, replica, "Net.Replica.", name), args);
  if (what == MOLT_CLIENT_REPLICA_REMOVED) {
    topics_->replicas.erase(replica);  // ids of removed replicas do not pile up
  }
}

void ClientKernel::Resolved(std::string_view channel, std::uint32_t seq, molt_status_t status) {
  const Value args[] = {Value::Int(seq), Value::Int(status == MOLT_OK ? 1 : 0), Value::Int(status)};
  kernel_->bus().Publish("Net.Resolved." + std::string(channel), args);
}

void ClientKernel::State(std::int32_t state, std::string_view reason) {
  const Value args[] = {Value::Int(state), Value::String(reason)};
  kernel_->bus().Publish("Net.State", args);
}

}  // namespace molt::kernel::client

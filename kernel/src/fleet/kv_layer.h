// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/kv_layer.h
//
// KvLayer: the host layer behind the key-value slot (kv_api.h): the plugins' calls still running
// in the kernel's KvStore, each with its instance's done function and release. An answer goes to
// its instance (bracketed as every call into plugin code), then its release runs; a call whose
// instance stopped first is that instance's: its release runs at the stop, and its done function
// never does (it points into the plugin's library). An answer that comes after the layer is gone
// (the plugin host went first) is dropped.
//
//   KvLayer& layer = *shared.Layer<KvLayer>();
//   MOLT_RETURN_IF_ERROR(layer.Call(instance, std::move(op), done, user_data, release));
//
// Only kv_api.cc and its test include it. Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_FLEET_KV_LAYER_H_
#define MOLT_KERNEL_FLEET_KV_LAYER_H_

#include <molt/molt.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/fleet/kv_store.h"

namespace molt::kernel::fleet {

class KvLayer final : public abi::HostLayer {
 public:
  explicit KvLayer(KvStore& kv) : kv_(kv) {}
  KvLayer(const KvLayer&) = delete;
  KvLayer& operator=(const KvLayer&) = delete;

  // Runs `op` for `owner`: `done(user_data, result)`, then `release(user_data)`, once the store
  // answers, on the kernel thread. The store's refusal (the op is wrong, too many wait) is
  // returned and nothing runs.
  Status Call(abi::PluginInstance& owner, KvOp op, molt_kv_done_fn done, void* user_data,
              molt_cleanup_fn release);
  // An instance stops: its calls' answers are no one's; their releases run now.
  void ReleaseOwner(const void* owner) override;
  void Release(const void*, molt_handle_t, std::uint8_t, std::uint32_t) override {}
  // Calls waiting for their answer.
  std::size_t running() const { return running_.size(); }

 private:
  struct Running {
    std::uint64_t id;
    abi::PluginInstance* owner;
    molt_kv_done_fn done;
    void* user_data;
    molt_cleanup_fn release;
  };
  // The answer of call `id`, handed to its instance (when it still runs).
  void Answer(std::uint64_t id, const KvResult& result);

  KvStore& kv_;
  std::vector<Running> running_;
  std::uint64_t next_id_ = 1;
  // Held while the layer lives: an answer that comes after it (the plugin host went first) is
  // dropped.
  std::shared_ptr<KvLayer*> alive_ = std::make_shared<KvLayer*>(this);
};

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_KV_LAYER_H_

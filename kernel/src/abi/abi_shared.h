// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/abi_shared.h
//
// AbiShared: the state every plugin instance of one kernel shares: the host API table the plugins
// get (the core's slots, handed over at construction, plus those the host's layers install), the
// host layers (host_layer.h), the resolved-topic table (topic handles are indexes into it, so a
// bogus handle is a bounds check, never a crash), the callback runner of callbacks with a deadline
// (callback_runner.h), and whether host calls may come from another thread than the kernel's,
// which every instance's gate follows. It knows its instances only as Members: PluginInstance
// (plugin_instance.h) implements that interface and enrolls itself. Built once per host by the
// loader (loader/plugin_host.h), with the table abi/host_api.h makes; included by
// plugin_instance.h and each layer's slots.
//
// Thread safety: REQUIRES the kernel thread (on_kernel_thread() and the runner's calls excepted).
#ifndef MOLT_KERNEL_ABI_ABI_SHARED_H_
#define MOLT_KERNEL_ABI_ABI_SHARED_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernel/src/abi/callback_runner.h"
#include "kernel/src/abi/host_layer.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/kernel.h"

namespace molt::kernel::abi {

class AbiShared {
 public:
  // An instance enrolled here (PluginInstance): told when the off-thread state changes, and when
  // this object goes first.
  class Member {
   public:
    // Off-thread calls or worker jobs began or ended: the instance's gate follows.
    virtual void UpdateGate() = 0;
    // This AbiShared is going away first (an instance may outlive its host: a kernel still
    // holding it).
    virtual void Unenroll() = 0;

   protected:
    ~Member() = default;
  };

  // `table` is the one handed to every plugin's init (the core's slots: CoreHostApi(),
  // host_api.h); the host's layers replace their slots in it before any plugin is initialized.
  AbiShared(Kernel& kernel, molt_host_api table);
  // Keeps the API table when a callback was abandoned (its plugin may still read it).
  ~AbiShared();
  AbiShared(const AbiShared&) = delete;
  AbiShared& operator=(const AbiShared&) = delete;
  Kernel& kernel() { return kernel_; }
  // The table handed to every plugin's init; valid as long as this object (for good once a
  // callback was abandoned).
  const molt_host_api& api() const { return *api_; }
  // For the host layer, before any plugin is initialized.
  molt_host_api& mutable_api() { return *api_; }

  // --- Callbacks with a deadline (PluginInstance::set_callback_limit) ---
  CallbackRunner& runner() { return runner_; }
  // While a plugin callback runs on the runner's thread, and for good once one was abandoned,
  // every instance's host calls check which thread they come from (PluginInstance::gate, Guard).
  void BeginOffThread();
  void EndOffThread();
  // While worker jobs are out (workers/workers_api.h) every instance's host calls check, off the
  // kernel thread, whether they come from a worker's (Guard).
  void BeginWorkerJobs();
  void EndWorkerJobs();
  bool worker_jobs() const { return worker_jobs_ > 0; }
  void MarkAbandoned() { abandoned_ = true; }
  bool off_thread() const { return off_thread_calls_ > 0 || abandoned_; }
  // The caller runs on the thread that built this object (the kernel thread, for the hosts): its
  // thread pointer, one register read, names the thread.
  bool on_kernel_thread() const { return __builtin_thread_pointer() == kernel_thread_; }
  // Every instance of this host (PluginInstance enrolls itself, and withdraws as it goes).
  void Enroll(Member* p) { instances_.push_back(p); }
  void Withdraw(Member* p);
  // The callbacks abandoned at their deadline, one line each ("<plugin>: <what> did not return
  // within <n> s ..."), for the stats and /healthz.
  void AddStuck(std::string line) { stuck_.push_back(std::move(line)); }
  const std::vector<std::string>& stuck() const { return stuck_; }
  // The host's layers (the server's network and profile stores, the client's connection), one
  // of each type, before any plugin is initialized. Every layer hears each release and handoff,
  // in the order they were added (the server adds its network first). Returns the layer.
  template <class L>
  L& AddLayer(std::unique_ptr<L> layer) {
    static_assert(std::is_base_of_v<HostLayer, L>);
    L& added = *layer;
    layers_.push_back({TypeKey<L>(), std::move(layer)});
    return added;
  }
  // The layer of type L, or nullptr when the host added none: how a layer's slots find it.
  template <class L>
  L* Layer() const {
    for (const LayerEntry& e : layers_) {
      if (e.type == TypeKey<L>()) {
        return static_cast<L*>(e.layer.get());  // added as an L (AddLayer)
      }
    }
    return nullptr;
  }
  // Calls `f(HostLayer&)` for each layer, in the order they were added.
  template <class F>
  void ForEachLayer(F&& f) const {
    for (const LayerEntry& e : layers_) {
      f(*e.layer);
    }
  }
  // The reload_request slot's way to the host's generations (loader/plugin_host.h).
  void set_reload(Callback<Status(std::string reason)> reload) { reload_ = std::move(reload); }
  bool can_reload() const { return static_cast<bool>(reload_); }
  Status RequestReload(std::string reason) { return reload_(std::move(reason)); }
  molt_topic_t TopicHandle(Bus::Topic* topic);
  // nullptr for a handle that was never issued.
  Bus::Topic* TopicAt(molt_topic_t handle) const {
    const std::uint64_t index = (handle >> kKindBits) - 1;
    return KindOf(handle) == kTopicTag && index < topics_.size() ? topics_[index] : nullptr;
  }

  // Handles are (sequence << kKindBits) | kind: the kind is readable from any handle.
  static constexpr int kKindBits = 4;
  static constexpr std::uint64_t KindOf(molt_handle_t handle) {
    return handle & ((1u << kKindBits) - 1);
  }
  static constexpr std::uint64_t kTopicTag = 5;

 private:
  // Adds `delta` to `counter`; every instance's gate follows when it crosses zero.
  void Count(int& counter, int delta);
  // A distinct address per layer type, with no RTTI.
  template <class L>
  static const void* TypeKey() {
    static const char key = 0;
    return &key;
  }
  struct LayerEntry {
    const void* type;
    std::unique_ptr<HostLayer> layer;
  };

  Kernel& kernel_;
  void* const kernel_thread_ = __builtin_thread_pointer();
  std::unique_ptr<molt_host_api> api_;
  std::vector<LayerEntry> layers_;
  CallbackRunner runner_;
  std::vector<Member*> instances_;
  int off_thread_calls_ = 0;
  int worker_jobs_ = 0;
  bool abandoned_ = false;
  std::vector<std::string> stuck_;
  Callback<Status(std::string)> reload_;
  std::vector<Bus::Topic*> topics_;
  std::unordered_map<Bus::Topic*, molt_topic_t> handles_;
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_ABI_SHARED_H_

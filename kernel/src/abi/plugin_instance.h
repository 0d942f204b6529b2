// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/abi/plugin_instance.h
//
// PluginInstance: the kernel's side of one loaded plugin. It is three things at once:
//   - the molt_context a plugin passes to every host call (its identity);
//   - the Service the manager boots (init, start, stop in dependency order);
//   - the owner of every resource the plugin obtains (DESIGN.md §5): subscriptions, hook
//     handlers, tasks and scopes are recorded against it under handles, and Stop() releases what
//     the plugin forgot, in reverse order of creation. No callback of the plugin runs after its
//     stop() returned, except the `release` functions it handed over (each exactly once).
// A `release` requested while one of the plugin's callbacks runs waits until that callback
// returned, so a plugin may unsubscribe or cancel itself from inside its own callback.
// What every instance of a host shares (the table, the layers, the off-thread state) is
// AbiShared's (abi_shared.h), where each instance enrolls as a Member; the holds that keep its
// code mapped while worker jobs run it are CodeHolds' (code_holds.h). Included by the kit every
// host API slot is built from (bridge.h), the loader and the layers.
//
// Thread safety: REQUIRES the kernel thread, or the thread a lifecycle callback with a deadline
// runs on while the kernel thread waits for it (set_callback_limit, callback_runner.h): host
// calls from there go through Guard, which takes the call's baton.
#ifndef MOLT_KERNEL_ABI_PLUGIN_INSTANCE_H_
#define MOLT_KERNEL_ABI_PLUGIN_INSTANCE_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernel/src/abi/abi_shared.h"
#include "kernel/src/abi/callback_runner.h"
#include "kernel/src/abi/code_holds.h"
#include "kernel/src/abi/host_layer.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/process.h"

// The ABI's opaque context. PluginInstance is its only kind.
struct molt_context {};

namespace molt::kernel::abi {

class PluginInstance;

// A status a plugin passed as a kernel code; codes the ABI does not define are internal errors.
inline Status::Code AbiCode(molt_status_t status) {
  const bool known = status >= MOLT_ERR_RATE_LIMITED && status <= MOLT_OK;
  return static_cast<Status::Code>(known ? status : MOLT_ERR_INTERNAL);
}

class PluginInstance final : public molt_context,
                             public Service,
                             public AbiShared::Member,
                             public std::enable_shared_from_this<PluginInstance> {
 public:
  // 5 is the topic tag (AbiShared); kinds fit the handle's low AbiShared::kKindBits bits.
  enum class Kind : std::uint8_t {
    kChannel = 0,
    kSubscription = 1,
    kHookHandler = 2,
    kTask = 3,
    kScope = 4,
    kProcess = 6,
    kCompletion = 7,
    kReplica = 8,  // ABI 1.2
    kProfile = 9,  // ABI 1.4: a profile store (the kernel's; the handle is the declaration)
    kJob = 10,     // ABI 1.6: a worker job (its layer's; workers/workers_api.h)
    kZone = 11,    // ABI 1.11: an interest group (the network's; net/zones.h)
    kGrid = 12,    // ABI 1.11: a spatial grid (the network's; net/grids.h)
  };

  // What the ABI keeps beside a plugin's process.
  struct ProcessRecord {
    void* arg = nullptr;
    std::string result;  // process_set_result
    struct ExitCallback {
      molt_process_exit_fn fn;
      void* user_data;
      molt_cleanup_fn release;
    };
    std::vector<ExitCallback> on_exit;
  };

  // One owned resource. `release(user_data)` is the plugin's cleanup, called once at the end.
  struct Resource {
    Kind kind;
    Connection connection;         // kSubscription, kHookHandler
    std::uint64_t task = 0;        // kTask: the scheduler id
    bool one_shot = false;         // kTask
    std::shared_ptr<Scope> scope;  // kScope
    molt_cleanup_fn release = nullptr;
    void* user_data = nullptr;
    std::shared_ptr<Process> process{};        // kProcess
    std::shared_ptr<ProcessRecord> record{};   // kProcess
    std::shared_ptr<Completion> completion{};  // kCompletion
    std::uint32_t layer_id = 0;      // kChannel, kReplica, kProfile, kZone, kGrid: the layer's id
    Scheduler* scheduler = nullptr;  // kTask: its phase's (nullptr: the kernel's)
  };

  // `info` is copied (the loader's current-size copy of the descriptor); the code and data it
  // points to must stay loaded for the instance's lifetime. `generation` names the generation it
  // belongs to ("<build id>#<n>"; empty outside generations).
  PluginInstance(AbiShared& shared, const molt_plugin_info& info, std::string file,
                 std::string generation = "");
  ~PluginInstance() override;

  static PluginInstance& From(molt_context_t* ctx) { return *static_cast<PluginInstance*>(ctx); }
  molt_context_t* context() { return this; }

  // Service.
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& dependencies() const override { return dependencies_; }
  // Calls the plugin's init. A failed init is undone by the plugin itself (molt.h); the host then
  // releases whatever it registered.
  Status Init() override;
  Status Start() override;
  // Calls stop() (when init succeeded), releases every remaining resource in reverse order,
  // then destroy(). Idempotent. No deadline: Stop() waits for stop() (the close phase has its
  // own watchdog).
  Status Stop() override;
  // Stop() with stop() given at most `limit` (run as set_callback_limit says); past it the
  // instance is abandoned and hard-stopped, and the status is kTimedOut.
  Status StopWithin(Duration limit) override;
  // Stop() without the plugin's stop(): the swap's soft stop ran out of time.
  void Halt() override;

  // Deadlines (DESIGN.md §6). With a limit set (the host's; Duration::max(), the default, is
  // none), init, start, export_state and import_state (and stop, through StopWithin) run on the
  // shared CallbackRunner while the calling thread waits at most that long. One that does not
  // return in time is *abandoned*: the call fails with kTimedOut naming it, the instance is
  // marked stuck (its library stays mapped for good, the instance is kept alive, AbiShared lists
  // it), every host call the callback still makes is refused, and no more of its plugin's code
  // runs: no stop(), release function or destroy(). An abandoned export_state leaves the
  // instance serving (the swap is abandoned instead); its next stop is a hard stop.
  void set_callback_limit(Duration limit) { callback_limit_ = limit; }
  Duration callback_limit() const { return callback_limit_; }
  // A callback of it was abandoned and may still run.
  bool stuck() const { return stuck_; }
  // No code of its plugin runs any more (a lifecycle callback was abandoned, or it stopped
  // while stuck).
  bool abandoned() const { return abandoned_; }
  // Nonzero when a host call of this instance needs the slow path: it is not live, or a
  // callback runs off the kernel thread or was abandoned (AbiShared::off_thread). One load on
  // every host call's fast path (an atomic byte: an abandoned callback may read it meanwhile).
  std::uint8_t gate() const { return gate_.load(std::memory_order_relaxed); }
  // A host call may come from another thread than the kernel's: a callback off it, or a job.
  bool off_thread() const { return (gate() & (kGateOffThread | kGateWorkers)) != 0; }
  static constexpr std::uint8_t kGateNotLive = 1;
  static constexpr std::uint8_t kGateOffThread = 2;
  static constexpr std::uint8_t kGateWorkers = 4;  // worker jobs are out (AbiShared)
  // AbiShared's off-thread state changed: the gate follows.
  void UpdateGate() override;
  // Its AbiShared is going away first.
  // A job's function may still run on a worker (workers/): its calls keep taking the slow path.
  void Unenroll() override {
    jobs_outlived_host_ = (gate() & kGateWorkers) != 0;
    enrolled_ = false;
    UpdateGate();
  }

  // True between the start of Init() and the end of Stop(): host calls are accepted (a plugin's
  // own stop may still release things while the kernel shuts down).
  bool live() const { return live_; }
  Kernel& kernel() { return shared_.kernel(); }
  Bus& bus() { return *bus_; }
  AbiShared& shared() { return shared_; }
  const AbiShared& shared() const { return shared_; }
  const molt_plugin_info& info() const { return info_; }
  const std::string& file() const { return file_; }
  // Identity is (name, generation): "counter@3f2a9c1e#2" in logs, task origins and errors.
  const std::string& generation() const { return generation_; }
  const std::string& label() const { return label_; }

  // The service set its interface lookups search: its own generation's (the kernel's serving
  // set when unset), so references are always between instances of one generation.
  ServiceManager* peers() const { return peers_; }
  void set_peers(ServiceManager* peers) { peers_ = peers; }

  // A dormant instance is initialized in a mounted generation that does not serve yet: nothing of
  // it dispatches. Its bus subscribers and hook handlers are skipped (a handler passes), one-shot
  // tasks that come due wait, and its session handlers first see the live sessions at Replay().
  // Set before Init(); Serve() ends it (before Start), Replay() then runs what waited, in order.
  bool dormant() const { return dormant_; }
  void set_dormant() { dormant_ = true; }
  void Serve() { dormant_ = false; }
  void WhenServing(Callback<void()> fn) { waiting_.push_back(std::move(fn)); }
  void Replay();

  // State handoff (molt.h): the bytes export_state wrote, nullopt for "no state" (no
  // export_state, or MOLT_ERR_UNSUPPORTED); any other failure is an error. At most `max_bytes`.
  Result<std::optional<std::string>> ExportState(std::size_t max_bytes);
  // Whether import_state reads state format `version`: oldest_state_version (0: state_version)
  // to state_version for an ABI 1.3 descriptor; any for older ones (they check it themselves).
  bool Reads(std::uint32_t version) const;
  // Hands `state` (format `version`) to import_state. A plugin without import_state ignores it.
  Status ImportState(std::uint32_t version, const std::string& state);
  // The plugin's own tests (ABI 1.8 self_test), run on this thread within the callback
  // deadline; each reported test lands in `out`. An error when the callback itself failed
  // (an error status, a throw, its deadline); OK with none for a plugin without tests.
  struct SelfTestResult {
    std::string name;
    Status status;
  };
  Status SelfTest(std::vector<SelfTestResult>* out);
  void* state() const { return state_; }
  const LogScope& log() const { return log_; }
  TaskOrigin origin() const { return origin_; }
  Scope& root_scope() { return *root_scope_; }

  // Records `resource` and returns its handle (never 0, never reused).
  molt_handle_t Own(Resource resource);
  Resource* Find(molt_handle_t handle);
  // Releases one resource: disconnects, cancels or closes it, then calls its release function.
  Status Release(molt_handle_t handle);
  // The handle of this plugin's process `p`, or 0.
  molt_handle_t HandleOf(const Process* p) const {
    auto it = process_handles_.find(p);
    return it == process_handles_.end() ? 0 : it->second;
  }
  void IndexProcess(const Process* p, molt_handle_t h) { process_handles_[p] = h; }
  // Drops the record of `handle` without releasing it (it is ending by another route).
  void Forget(molt_handle_t handle) { resources_.erase(handle); }
  // Kind of `handle` as text, for error messages ("subscription", "task", ...).
  static std::string_view KindName(molt_handle_t handle);

  // Brackets every call into the plugin's callbacks (releases wait until the outermost returns).
  void EnterCallback() { ++callback_depth_; }
  void LeaveCallback();
  // One of its callbacks is running (on the stack).
  bool in_callback() const { return callback_depth_ > 0; }

  // Error text: last_error() returns it; Fail() records a host-side failure and returns its code.
  const char* last_error() const { return error_.c_str(); }
  void SetError(std::string_view text) { error_.assign(text.data(), text.size()); }
  molt_status_t Fail(const Status& status);
  // The text a failed plugin callback left (set_error), or a description of `code`.
  std::string CallbackError(molt_status_t code) const;
  // Logs and counts a failed callback: `what` names it ("bus subscriber of \"T\"").
  void ReportCallbackError(std::string_view what, molt_status_t code);
  // Counts a failure the caller reports itself (a hook handler's, through the chain's result).
  void CountCallbackError() {
    ++callback_errors_;
    if (on_error_) {
      on_error_();
    }
  }
  // Hears every counted error (a generation's health window, loader/health_window.h).
  void set_error_listener(Callback<void()> on_error) { on_error_ = std::move(on_error); }

  // Interface references (service_interface) are tracked: the consumer records each one, the
  // exporter counts its holders. A consumer lets go of its references when it stops; an exporter
  // that stops while references remain (which dependency order rules out) logs an error naming
  // the holders rather than leaving it silent.
  void UseInterface(PluginInstance& exporter, std::string_view name);
  // (service, interface) of each reference it holds, in first-use order.
  std::vector<std::pair<std::string, std::string>> interfaces_used() const;

  // Keeps the library holding `code` in the process for good (RTLD_NODELETE): something still
  // has frames in it, such as a process body that ignored its cancellation. Logs `why` as an
  // error, counts it, and records it as pinned_by(): the loader reports the library retired.
  void Pin(const void* code, std::string why);
  const std::string& pinned_by() const { return pinned_by_; }

  // Code of it runs off the kernel thread (a worker job, workers/workers_api.h): each hold keeps
  // the instance alive and its library mapped. The loader unloads the library after the last
  // hold is dropped (AfterCodeHolds); the instance goes first. Take and drop holds on the kernel
  // thread.
  class CodeHold;
  std::shared_ptr<CodeHold> HoldCode();
  std::size_t code_holds() const { return code_holds_.count(); }
  // Runs `fn` once no hold is left: now, or when the last one is dropped.
  void AfterCodeHolds(Callback<void()> fn) { code_holds_.After(std::move(fn)); }

  // Calls the plugin's release function (after its callback returns, when inside one).
  void RunRelease(molt_cleanup_fn fn, void* user_data);

  std::uint64_t callback_errors() const { return callback_errors_; }
  std::size_t resource_count() const { return resources_.size(); }

 private:
  // Calls init, start, stop, export_state or import_state (within `limit`, see
  // set_callback_limit): exceptions are contained, failures become a Status. `call` must own
  // what it uses (it may outlive this call when abandoned).
  template <class F>
  Status CallLifecycle(const char* what, Duration limit, F call);
  // The callback `what` did not return within `limit`: see set_callback_limit.
  Status Abandon(const char* what, Duration limit);
  // Stop() and Halt(): `soft` runs the plugin's stop() first, within `limit`.
  Status Shutdown(bool soft, Duration limit = Duration::max());
  void ReleaseResource(molt_handle_t handle, Resource& r);

  AbiShared& shared_;
  Bus* bus_;  // the kernel's, cached for the publish hot path
  std::atomic<std::uint8_t> gate_{kGateNotLive};
  bool enrolled_ = true;             // in shared_'s list of instances
  bool jobs_outlived_host_ = false;  // Unenroll() came while worker jobs were out
  const molt_plugin_info info_;
  std::string name_;
  std::string generation_;
  std::string label_;
  ServiceManager* peers_ = nullptr;
  bool dormant_ = false;
  std::vector<Callback<void()>> waiting_;
  std::vector<std::string> dependencies_;
  std::string file_;
  LogScope log_;
  TaskOrigin origin_;
  void* state_ = nullptr;
  std::string error_;
  std::map<molt_handle_t, Resource> resources_;  // handle order == creation order
  std::unordered_map<const Process*, molt_handle_t> process_handles_;
  std::unique_ptr<Scope> root_scope_;
  std::vector<std::pair<molt_cleanup_fn, void*>> deferred_releases_;
  int callback_depth_ = 0;
  std::uint64_t callback_errors_ = 0;
  Callback<void()> on_error_;
  std::string pinned_by_;
  CodeHolds code_holds_;  // HoldCode(), AfterCodeHolds()
  struct InterfaceUse {
    std::weak_ptr<PluginInstance> exporter;
    std::string service;
    std::string name;
  };
  std::vector<InterfaceUse> uses_;
  std::vector<std::string> holders_;  // a consumer's label per reference held on this one
  bool initialized_ = false;
  bool live_ = false;
  bool stopped_ = false;
  Duration callback_limit_ = Duration::max();
  bool stuck_ = false;
  bool abandoned_ = false;
};

// What PluginInstance::HoldCode() returns. The instance is let go before the anchor, whose end
// may unload the instance's library.
class PluginInstance::CodeHold {
 public:
  CodeHold(std::shared_ptr<CodeHolds::Anchor> anchor, std::shared_ptr<PluginInstance> instance)
      : anchor_(std::move(anchor)), instance_(std::move(instance)) {}
  PluginInstance& instance() const { return *instance_; }

 private:
  std::shared_ptr<CodeHolds::Anchor> anchor_;
  std::shared_ptr<PluginInstance> instance_;  // destroyed first (reverse order)
};

// The status code of a kernel Status (the same values by construction).
inline molt_status_t ToCode(const Status& s) { return static_cast<molt_status_t>(s.code()); }

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_ABI_PLUGIN_INSTANCE_H_

// SPDX-License-Identifier: Apache-2.0
// PluginInstance: lifecycle calls into the plugin and resource ownership.
#include "kernel/src/abi/plugin_instance.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

namespace molt::kernel::abi {
namespace {

// Handles are (sequence << AbiShared::kKindBits) | kind, from one process-wide sequence: never 0,
// never reused.
std::atomic<std::uint64_t> g_next_handle{1};

static_assert(static_cast<int>(Status::Code::kInvalidArgument) == MOLT_ERR_INVALID_ARGUMENT &&
                  static_cast<int>(Status::Code::kNotFound) == MOLT_ERR_NOT_FOUND &&
                  static_cast<int>(Status::Code::kStale) == MOLT_ERR_STALE &&
                  static_cast<int>(Status::Code::kFailedPrecondition) == MOLT_ERR_STATE &&
                  static_cast<int>(Status::Code::kInternal) == MOLT_ERR_INTERNAL &&
                  static_cast<int>(Status::Code::kScopeClosed) == MOLT_ERR_SCOPE_CLOSED &&
                  static_cast<int>(Status::Code::kUnsupported) == MOLT_ERR_UNSUPPORTED &&
                  static_cast<int>(Status::Code::kAlreadyExists) == MOLT_ERR_ALREADY_EXISTS &&
                  static_cast<int>(Status::Code::kRejected) == MOLT_ERR_REJECTED &&
                  static_cast<int>(Status::Code::kIoError) == MOLT_ERR_IO &&
                  static_cast<int>(Status::Code::kCancelled) == MOLT_ERR_CANCELLED &&
                  static_cast<int>(Status::Code::kTimedOut) == MOLT_ERR_TIMEOUT &&
                  static_cast<int>(Status::Code::kRateLimited) == MOLT_ERR_RATE_LIMITED,
              "kernel status codes are the ABI's codes");

// A plugin's failure code as a Status; codes outside the ABI's range count as internal errors.
Status FromPluginCode(molt_status_t code, std::string text) {
  return Status(AbiCode(code == MOLT_OK ? MOLT_ERR_INTERNAL : code), std::move(text));
}

std::vector<std::string> Dependencies(const molt_plugin_info& info) {
  std::vector<std::string> out;
  for (std::uint32_t i = 0; i < info.dependency_count; ++i) {
    out.emplace_back(info.dependencies[i]);
  }
  return out;
}

}  // namespace

PluginInstance::PluginInstance(AbiShared& shared, const molt_plugin_info& info, std::string file,
                               std::string generation)
    : shared_(shared),
      bus_(&shared.kernel().bus()),
      info_(info),
      name_(info.name),
      generation_(std::move(generation)),
      label_(generation_.empty() ? name_ : name_ + "@" + generation_),
      dependencies_(Dependencies(info)),
      file_(std::move(file)),
      log_(label_),
      origin_(TaskOrigin::Named("plugin " + label_)),
      root_scope_(std::make_unique<Scope>()) {
  shared_.Enroll(this);
  UpdateGate();
}

PluginInstance::~PluginInstance() {
  Status s = Stop();
  if (!s.ok()) {
    log_.Warn("{}", s.message());
  }
  if (enrolled_) {
    shared_.Withdraw(this);
  }
}

void PluginInstance::UpdateGate() {
  // A stuck instance's abandoned callback may call at any time; its host may even be gone.
  const bool off = stuck_ || jobs_outlived_host_ || (enrolled_ && shared_.off_thread());
  const bool jobs = enrolled_ && shared_.worker_jobs();
  gate_.store(static_cast<std::uint8_t>((live_ ? 0 : kGateNotLive) | (off ? kGateOffThread : 0) |
                                        (jobs ? kGateWorkers : 0)),
              std::memory_order_relaxed);
}

std::string_view PluginInstance::KindName(molt_handle_t handle) {
  switch (AbiShared::KindOf(handle)) {
    case static_cast<int>(Kind::kSubscription):
      return "subscription";
    case static_cast<int>(Kind::kHookHandler):
      return "hook handler";
    case static_cast<int>(Kind::kTask):
      return "task";
    case static_cast<int>(Kind::kScope):
      return "scope";
    case static_cast<int>(Kind::kProcess):
      return "process";
    case static_cast<int>(Kind::kCompletion):
      return "completion";
    case AbiShared::kTopicTag:
      return "topic";
    case static_cast<int>(Kind::kChannel):
      return "channel";
    case static_cast<int>(Kind::kReplica):
      return "replica";
    case static_cast<int>(Kind::kProfile):
      return "profile store";
    case static_cast<int>(Kind::kJob):
      return "job";
    case static_cast<int>(Kind::kZone):
      return "zone";
    case static_cast<int>(Kind::kGrid):
      return "grid";
  }
  return "handle";
}

molt_status_t PluginInstance::Fail(const Status& status) {
  SetError(status.message());
  return ToCode(status);
}

std::string PluginInstance::CallbackError(molt_status_t code) const {
  if (!error_.empty()) {
    return error_;
  }
  return "returned " + std::string(Status::CodeName(static_cast<Status::Code>(code))) + " (" +
         std::to_string(code) + ") without set_error";
}

void PluginInstance::ReportCallbackError(std::string_view what, molt_status_t code) {
  CountCallbackError();
  log_.Warn("{} failed: {}", what, CallbackError(code));
}

molt_handle_t PluginInstance::Own(Resource resource) {
  const molt_handle_t handle =
      (g_next_handle.fetch_add(1, std::memory_order_relaxed) << AbiShared::kKindBits) |
      static_cast<std::uint64_t>(resource.kind);
  resources_.emplace(handle, std::move(resource));
  return handle;
}

PluginInstance::Resource* PluginInstance::Find(molt_handle_t handle) {
  auto it = resources_.find(handle);
  return it == resources_.end() ? nullptr : &it->second;
}

Status PluginInstance::Release(molt_handle_t handle) {
  auto it = resources_.find(handle);
  if (it == resources_.end()) {
    return Status::Stale(std::string(KindName(handle)) + " " + std::to_string(handle) +
                         " is not live (already released, or not plugin \"" + label_ + "\"'s)");
  }
  if (it->second.kind == Kind::kScope) {
    // The handle stays live while the scope closes (a cleanup may still name it: it gets
    // MOLT_ERR_SCOPE_CLOSED); the scope's last cleanup forgets it.
    std::shared_ptr<Scope> scope = it->second.scope;
    scope->Close();
    resources_.erase(handle);
    return Status::Ok();
  }
  Resource r = std::move(it->second);
  resources_.erase(it);  // first: the release below may call back into Release
  ReleaseResource(handle, r);
  return Status::Ok();
}

void PluginInstance::ReleaseResource(molt_handle_t handle, Resource& r) {
  switch (r.kind) {
    case Kind::kSubscription:
    case Kind::kHookHandler:
      r.connection.Disconnect();
      break;
    case Kind::kTask:
      (r.scheduler != nullptr ? *r.scheduler : kernel().scheduler()).Cancel(r.task);
      break;
    case Kind::kScope:
      r.scope->Close();
      break;
    case Kind::kProcess:
      // No exit callback reaches a plugin that is letting go; their user data is released.
      for (auto& cb : std::exchange(r.record->on_exit, {})) {
        if (cb.release != nullptr) {
          RunRelease(cb.release, cb.user_data);
        }
      }
      // Killed while still indexed: a body that calls the host again instead of returning
      // reaches the process's own check (it is abandoned), not an endless MOLT_ERR_STATE.
      r.process->Kill("plugin \"" + label_ + "\" stopped");
      process_handles_.erase(r.process.get());
      break;
    case Kind::kChannel:
    case Kind::kReplica:
    case Kind::kProfile:
    case Kind::kJob:
    case Kind::kZone:
    case Kind::kGrid:
      shared_.ForEachLayer([&](HostLayer& layer) {
        layer.Release(this, handle, static_cast<std::uint8_t>(r.kind), r.layer_id);
      });
      break;
    case Kind::kCompletion:
      if (!r.completion->done()) {
        r.completion->Complete(
            Status::Cancelled("completion released: plugin \"" + label_ + "\" let go of it"));
      }
      break;
  }
  if (r.release != nullptr) {
    RunRelease(r.release, r.user_data);
  }
}

std::shared_ptr<PluginInstance::CodeHold> PluginInstance::HoldCode() {
  return std::make_shared<CodeHold>(code_holds_.Take(), shared_from_this());
}

void PluginInstance::RunRelease(molt_cleanup_fn fn, void* user_data) {
  if (abandoned_) {
    // None of its plugin's code runs any more (set_callback_limit): what it would free stays,
    // kept here, since the abandoned callback may still use it.
    deferred_releases_.emplace_back(fn, user_data);
    return;
  }
  if (callback_depth_ > 0) {
    deferred_releases_.emplace_back(fn, user_data);  // the plugin's callback may still use it
    return;
  }
  try {
    fn(user_data);
  } catch (...) {
    log_.Error("a release function threw across the C ABI; it must not");
  }
}

void PluginInstance::LeaveCallback() {
  if (--callback_depth_ == 0 && !deferred_releases_.empty()) {
    std::vector<std::pair<molt_cleanup_fn, void*>> pending;
    pending.swap(deferred_releases_);
    for (auto& [fn, ud] : pending) {
      RunRelease(fn, ud);
    }
  }
}

template <class F>
Status PluginInstance::CallLifecycle(const char* what, Duration limit, F call) {
  if (abandoned_) {
    return Status::FailedPrecondition("plugin \"" + label_ + "\" was abandoned: its " + what +
                                      " is not called");
  }
  error_.clear();
  molt_status_t code = MOLT_OK;
  bool threw = false;
  EnterCallback();
  if (limit == Duration::max()) {
    try {
      code = call();
    } catch (...) {
      threw = true;
    }
  } else {
    // On the runner's thread, this one waiting: what the call touches must be its own.
    auto escaped = std::make_shared<std::atomic<bool>>(false);
    shared_.BeginOffThread();
    const CallbackRunner::Outcome out =
        shared_.runner().Run(limit, [call, escaped]() mutable noexcept -> molt_status_t {
          try {
            return call();
          } catch (...) {
            escaped->store(true, std::memory_order_relaxed);
            return MOLT_ERR_INTERNAL;
          }
        });
    if (!out.returned) {  // the gates stay raised: the callback may still call the host
      shared_.MarkAbandoned();
      shared_.EndOffThread();
      LeaveCallback();
      return Abandon(what, limit);
    }
    shared_.EndOffThread();
    code = out.code;
    threw = escaped->load(std::memory_order_relaxed);
  }
  if (threw) {
    code = MOLT_ERR_INTERNAL;
    SetError(std::string(what) + " threw across the C ABI");
  }
  LeaveCallback();
  return code == MOLT_OK ? Status::Ok() : FromPluginCode(code, CallbackError(code));
}

namespace {

// Instances with an abandoned callback: kept for good, since that callback may still run and
// call the host with their context.
std::mutex g_stuck_mu;
std::vector<std::shared_ptr<PluginInstance>>* g_stuck = nullptr;

}  // namespace

Status PluginInstance::Abandon(const char* what, Duration limit) {
  const bool export_only = std::string_view(what) == "export_state";
  stuck_ = true;
  UpdateGate();
  abandoned_ = abandoned_ || !export_only;
  const std::string why = fmt::format(
      "{}() did not return within {:.3g} s: abandoned (it may still be running; its host calls are "
      "refused{})",
      what, ToSeconds(limit), export_only ? "" : ", and no more of its code runs");
  shared_.AddStuck(label_ + ": " + why);
  {
    std::lock_guard lock(g_stuck_mu);
    if (g_stuck == nullptr) {
      g_stuck = new std::vector<std::shared_ptr<PluginInstance>>();  // never freed, on purpose
    }
    g_stuck->push_back(shared_from_this());
  }
  Pin(reinterpret_cast<const void*>(info_.init), why);
  return Status::TimedOut("plugin \"" + label_ + "\": " + why);
}

void PluginInstance::Replay() {
  // What runs may queue more (a replayed session handler scheduling a task): take turns.
  while (!waiting_.empty()) {
    std::vector<Callback<void()>> now = std::move(waiting_);
    waiting_.clear();
    for (auto& fn : now) {
      fn();
    }
  }
}

Result<std::optional<std::string>> PluginInstance::ExportState(std::size_t max_bytes) {
  if (!initialized_ || stopped_ || info_.export_state == nullptr) {  // nothing left to export
    return std::optional<std::string>();
  }
  struct Sink {
    std::string bytes;
    std::size_t max;
    bool over = false;
  } sink{{}, max_bytes};
  auto owned = std::make_shared<Sink>(std::move(sink));  // outlives an abandoned call
  Status s = CallLifecycle("export_state", callback_limit_, [this, owned] {
    return info_.export_state(
        state_,
        [](void* ud, const void* data, std::size_t size) {
          auto* k = static_cast<Sink*>(ud);
          if (k->over || size > k->max - k->bytes.size()) {
            k->over = true;
            return;
          }
          k->bytes.append(static_cast<const char*>(data), size);
        },
        owned.get());
  });
  if (s.code() == Status::Code::kUnsupported) {
    return std::optional<std::string>();
  }
  if (!s.ok()) {
    // An abandoned call names the plugin and the callback already.
    return s.code() == Status::Code::kTimedOut
               ? s
               : s.Prefixed("plugin \"" + label_ + "\": export_state failed");
  }
  if (owned->over) {
    return Status::InvalidArgument("plugin \"" + label_ + "\": export_state wrote more than " +
                                   std::to_string(max_bytes) + " bytes (the state size cap)");
  }
  return std::optional<std::string>(std::move(owned->bytes));
}

bool PluginInstance::Reads(std::uint32_t version) const {
  if (MOLT_ABI_MINOR_OF(info_.abi_version) < 3) {
    return true;  // a descriptor before ABI 1.3 decides in import_state
  }
  const std::uint32_t oldest =
      info_.oldest_state_version != 0 ? info_.oldest_state_version : info_.state_version;
  return version >= oldest && version <= info_.state_version;
}

Status PluginInstance::ImportState(std::uint32_t version, const std::string& state) {
  if (!initialized_ || info_.import_state == nullptr) {
    return Status::Ok();
  }
  if (!Reads(version)) {
    const std::uint32_t oldest =
        info_.oldest_state_version != 0 ? info_.oldest_state_version : info_.state_version;
    return Status::FailedPrecondition(
        "plugin \"" + label_ + "\" reads state versions " + std::to_string(oldest) + " to " +
        std::to_string(info_.state_version) + ", but its predecessor exported version " +
        std::to_string(version) +
        ": read that format in import_state and lower oldest_state_version");
  }
  auto copy = std::make_shared<const std::string>(state);  // outlives an abandoned call
  Status s = CallLifecycle("import_state", callback_limit_, [this, version, copy] {
    return info_.import_state(state_, version, copy->data(), copy->size());
  });
  if (s.code() == Status::Code::kUnsupported) {  // this version takes no state: not a failure
    log_.Info("import_state takes no state: the {} bytes its predecessor exported are dropped",
              state.size());
    return Status::Ok();
  }
  return s.ok() || s.code() == Status::Code::kTimedOut
             ? s
             : s.Prefixed("plugin \"" + label_ + "\": import_state failed");
}

Status PluginInstance::Init() {
  live_ = true;
  UpdateGate();
  Status s = CallLifecycle("init", callback_limit_,
                           [this] { return info_.init(context(), &shared_.api(), &state_); });
  initialized_ = s.ok();
  return s;
}

Status PluginInstance::Start() {
  if (info_.start == nullptr) {
    return Status::Ok();
  }
  return CallLifecycle("start", callback_limit_, [this] { return info_.start(state_); });
}

Status PluginInstance::SelfTest(std::vector<SelfTestResult>* out) {
  if (!initialized_ || stopped_ || info_.self_test == nullptr) {
    return Status::Ok();
  }
  // What the plugin reports, copied as it reports it (on the callback runner's thread when the
  // call has a deadline: this thread waits meanwhile).
  struct Sink {
    std::vector<SelfTestResult>* out;
    static void Report(void* ud, const char* name, molt_status_t code,
                       const char* message) noexcept {
      try {
        std::string text = message != nullptr ? message : "";
        if (code != MOLT_OK && text.empty()) {
          text = "failed";
        }
        static_cast<Sink*>(ud)->out->push_back(
            {name != nullptr && *name != '\0' ? std::string(name).substr(0, 128) : "(unnamed)",
             code == MOLT_OK ? Status::Ok() : FromPluginCode(code, std::move(text))});
      } catch (...) {  // out of memory: the test is not recorded; nothing crosses the ABI
      }
    }
  } sink{out};
  return CallLifecycle("self_test", callback_limit_,
                       [this, &sink] { return info_.self_test(state_, &Sink::Report, &sink); });
}

void PluginInstance::Pin(const void* code, std::string why) {
  Dl_info where{};
  if (::dladdr(code, &where) != 0 && where.dli_fname != nullptr) {
    // Promotes the loaded library to NODELETE: a later dlclose leaves it mapped.
    if (void* h = ::dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)) {
      ::dlclose(h);
    }
  }
  log_.Error("{}: its library stays mapped for good (retired)", why);
  if (pinned_by_.empty()) {
    pinned_by_ = std::move(why);
  }
  CountCallbackError();
}

void PluginInstance::UseInterface(PluginInstance& exporter, std::string_view name) {
  for (const InterfaceUse& u : uses_) {
    if (u.exporter.lock().get() == &exporter && u.name == name) {
      return;  // fetched again: one reference
    }
  }
  uses_.push_back({exporter.weak_from_this(), exporter.name(), std::string(name)});
  exporter.holders_.push_back(label_ + " (" + std::string(name) + ")");
}

std::vector<std::pair<std::string, std::string>> PluginInstance::interfaces_used() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const InterfaceUse& u : uses_) {
    out.emplace_back(u.service, u.name);
  }
  return out;
}

Status PluginInstance::Stop() { return Shutdown(/*soft=*/true); }

Status PluginInstance::StopWithin(Duration limit) {
  // Without deadlines (the host's choice) stop() runs on this thread, the budget checked between
  // stops (ServiceManager::StopAll).
  return Shutdown(/*soft=*/true, callback_limit_ == Duration::max()
                                     ? callback_limit_
                                     : std::min(limit, callback_limit_));
}

void PluginInstance::Halt() {
  if (!stopped_ && initialized_ && info_.stop != nullptr) {
    log_.Warn("hard stop: its stop() does not run (the soft stop ran out of time)");
  }
  (void)Shutdown(/*soft=*/false);
}

Status PluginInstance::Shutdown(bool soft, Duration limit) {
  if (stopped_) {
    return Status::Ok();
  }
  stopped_ = true;
  if (stuck_ && !abandoned_) {
    // Its export_state still runs: none of its code is called again, it is released as is.
    log_.Warn("hard stop: a callback it was abandoned in may still run, so its stop() does not");
    abandoned_ = true;
  }
  if (!holders_.empty()) {
    std::string who;
    for (const std::string& h : holders_) {
      who += (who.empty() ? "" : ", ") + h;
    }
    log_.Error("stops while plugins still hold references to its interfaces: {}", who);
  }
  Status result;
  if (soft && initialized_ && info_.stop != nullptr && !abandoned_) {
    result = CallLifecycle("stop", limit, [this] { return info_.stop(state_); });
  }
  // What it bound to sessions runs first (bindings, data, onSession handlers): those cleanups
  // may still use its channels and tasks. An instance that never ran init bound nothing.
  if (live_) {
    shared_.ForEachLayer([this](HostLayer& layer) { layer.ReleaseOwner(this); });
  }
  // Release what the plugin left, newest first; then its root scope; then whatever the scope's
  // cleanups created meanwhile.
  const std::size_t leftovers = resources_.size();
  auto drain = [this] {
    while (!resources_.empty()) {
      auto it = std::prev(resources_.end());
      const molt_handle_t handle = it->first;
      Resource r = std::move(it->second);
      resources_.erase(it);
      ReleaseResource(handle, r);
    }
  };
  drain();
  root_scope_->Close();
  drain();
  live_ = false;
  UpdateGate();
  if (leftovers > 0) {
    log_.Debug("released {} resources the plugin left at stop", leftovers);
  }
  if (initialized_ && info_.destroy != nullptr && !abandoned_) {
    try {
      info_.destroy(state_);
    } catch (...) {
      log_.Error("destroy threw across the C ABI; it must not");
    }
  }
  if (!abandoned_) {
    state_ = nullptr;  // an abandoned callback may still use it: it stays (and stays reachable)
  }
  // Its interface references go with it.
  for (const InterfaceUse& u : std::exchange(uses_, {})) {
    if (std::shared_ptr<PluginInstance> e = u.exporter.lock()) {
      auto& h = e->holders_;
      if (auto it = std::find(h.begin(), h.end(), label_ + " (" + u.name + ")"); it != h.end()) {
        h.erase(it);
      }
    }
  }
  return result;
}

}  // namespace molt::kernel::abi

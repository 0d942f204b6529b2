// SPDX-License-Identifier: Apache-2.0
// job_handler, job_submit, job_fork_join, job_cancel: plugins' jobs on the kernel's worker pool,
// their results back on the kernel thread to the handler of the right generation.
#include "kernel/src/workers/workers_api.h"

#include <molt/molt.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/struct_size.h"
#include "kernel/src/abi/worker_thread.h"
#include "kernel/src/core/logger.h"

namespace molt::kernel::workers {

using abi::PluginInstance;
using Kind = PluginInstance::Kind;

namespace {

constexpr std::size_t kMaxItems = 1000000;
constexpr std::size_t kMaxInputBytes = 64u << 20;
constexpr double kMaxTimeoutSeconds = 86400;

// One job, from its submit until no worker runs its function and its result was handed over.
struct JobRecord {
  molt_job_t handle = 0;
  std::uint64_t pool_id = 0;
  std::shared_ptr<PluginInstance::CodeHold> hold;  // the submitter, its library mapped
  std::string plugin;                              // the submitter's plugin name
  std::string handler;
  bool detached = false;
  bool fork_join = false;
  bool ended = false;      // its result was handed over (or dropped)
  bool cancelled = false;  // job_cancel: nobody hears of it
  bool orphaned = false;   // its instance stopped, and it is not detached
  double timeout_seconds = 0;
  molt_job_fn fn = nullptr;
  void* user_data = nullptr;
  molt_cleanup_fn release = nullptr;
  std::uint64_t tag = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;  // written by the workers, one item each
  std::vector<molt_status_t> codes;
  std::atomic<int> running{0};  // functions running now (the close's test for a hung one)
  PluginInstance& owner() const { return hold->instance(); }
};

struct JobHandlerEntry {
  PluginInstance* owner;
  std::string plugin;
  molt_job_done_fn fn;
  void* user_data;
  molt_cleanup_fn release;
};

void AppendOutput(void* out, const void* data, std::size_t size) {
  if (data != nullptr) {
    static_cast<std::string*>(out)->append(static_cast<const char*>(data), size);
  }
}

bool HandlerNameOk(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == ':' ||
           c == '-';
  });
}

}  // namespace

struct Workers::Impl {
  Impl(abi::AbiShared& shared, WorkersOptions options)
      : shared(shared),
        options(options),
        pool(std::make_unique<WorkerPool>(
            PoolOptions{WorkerThreads(options.threads), options.queue_max},
            [&loop = shared.kernel().loop()](std::function<void()> fn) {
              loop.Post(std::move(fn));
            })) {}

  abi::AbiShared& shared;
  WorkersOptions options;
  std::unique_ptr<WorkerPool> pool;
  std::multimap<std::string, JobHandlerEntry> handlers;  // by name
  std::map<molt_job_t, std::shared_ptr<JobRecord>> jobs;
  std::uint64_t next_handle = 1;
  std::size_t detached_live = 0;
  std::uint64_t delivered = 0;
  std::uint64_t inherited = 0;
  std::uint64_t dropped = 0;
  bool closed = false;

  const JobHandlerEntry* FindHandler(const PluginInstance* owner, std::string_view name) const {
    auto [b, e] = handlers.equal_range(std::string(name));
    for (auto it = b; it != e; ++it) {
      if (it->second.owner == owner) {
        return &it->second;
      }
    }
    return nullptr;
  }
  // Who hears `rec`: its own instance's handler while it runs; for a detached job whose instance
  // stopped, the newest live instance of its plugin with a handler of that name.
  const JobHandlerEntry* Recipient(const JobRecord& rec) const {
    if (rec.owner().live()) {
      return FindHandler(&rec.owner(), rec.handler);
    }
    if (!rec.detached) {
      return nullptr;
    }
    const JobHandlerEntry* found = nullptr;
    auto [b, e] = handlers.equal_range(rec.handler);
    for (auto it = b; it != e; ++it) {
      if (it->second.plugin == rec.plugin && it->second.owner->live()) {
        found = &it->second;  // in declaration order: the last is the newest generation's
      }
    }
    return found;
  }

  Result<molt_job_t> Submit(PluginInstance& p, const molt_job_spec& spec,
                            std::vector<std::string> inputs, bool fork_join);
  void Done(const std::shared_ptr<JobRecord>& rec, JobOutcome o);
  void Hand(const std::shared_ptr<JobRecord>& rec, const JobHandlerEntry& h, molt_status_t status,
            const std::string& error, std::size_t failed_item);
  void Finished(const std::shared_ptr<JobRecord>& rec);
};

std::size_t WorkerThreads(std::size_t requested) {
  if (requested > 0) {
    return requested;
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 1 ? cores - 1 : 1;
}

Result<molt_job_t> Workers::Impl::Submit(PluginInstance& p, const molt_job_spec& spec,
                                         std::vector<std::string> inputs, bool fork_join) {
  if (closed) {
    return Status::FailedPrecondition("the server is closing: it takes no more worker jobs");
  }
  const std::string handler = spec.handler;
  if (FindHandler(&p, handler) == nullptr) {
    return Status::NotFound("job handler \"" + handler + "\" is not declared by plugin \"" +
                            p.label() + "\": declare it with job_handler first");
  }
  const double timeout = spec.timeout_seconds;
  if (!std::isfinite(timeout) || timeout < 0 || timeout > kMaxTimeoutSeconds) {
    return Status::InvalidArgument("timeout_seconds must be a finite number from 0 to 86400, not " +
                                   std::to_string(timeout));
  }
  const bool detached = (spec.flags & MOLT_JOB_DETACHED) != 0;
  if ((spec.flags & ~MOLT_JOB_DETACHED) != 0) {
    return Status::InvalidArgument("flags " + std::to_string(spec.flags) +
                                   " has bits that are not MOLT_JOB_* flags");
  }
  if (detached && detached_live >= options.detached_max) {
    return Status::RateLimited(std::to_string(detached_live) +
                               " detached jobs already run (workers.detached_max): submit again "
                               "when one ended");
  }
  auto rec = std::make_shared<JobRecord>();
  rec->handle = (next_handle++ << abi::AbiShared::kKindBits) | static_cast<molt_job_t>(Kind::kJob);
  rec->hold = p.HoldCode();
  rec->plugin = p.name();
  rec->handler = handler;
  rec->detached = detached;
  rec->fork_join = fork_join;
  rec->fn = spec.fn;
  rec->user_data = spec.user_data;
  rec->release = spec.release;
  rec->tag = spec.tag;
  rec->inputs = std::move(inputs);
  rec->outputs.resize(rec->inputs.size());
  rec->codes.assign(rec->inputs.size(), MOLT_OK);
  const Duration limit = timeout > 0 ? Seconds(timeout) : options.timeout;
  rec->timeout_seconds = ToSeconds(limit);
  std::size_t chunk = spec.chunk_size;
  if (chunk == 0) {
    const std::size_t waves = 4 * pool->size();
    chunk = (rec->inputs.size() + waves - 1) / waves;
  }
  Job job;
  job.items = rec->inputs.size();
  job.chunk = std::max<std::size_t>(chunk, 1);
  job.timeout = limit;
  // The record outlives every function running (finished comes after the last returned).
  JobRecord* r = rec.get();
  job.run = [r](std::size_t i) {
    r->running.fetch_add(1, std::memory_order_relaxed);
    molt_status_t st;
    {
      abi::WorkerThread mark;
      try {
        st = r->fn(r->user_data, r->inputs[i].data(), r->inputs[i].size(), AppendOutput,
                   &r->outputs[i]);
      } catch (...) {
        st = MOLT_ERR_INTERNAL;
        r->outputs[i] = "the job's function threw across the C ABI";
      }
    }
    r->codes[i] = st;
    r->running.fetch_sub(1, std::memory_order_release);
    return st == MOLT_OK;
  };
  job.done = [this, rec](JobOutcome o) { Done(rec, o); };
  job.finished = [this, rec] { Finished(rec); };
  // Before any worker may run it: from now on host calls ask which thread they come from.
  if (jobs.empty()) {
    shared.BeginWorkerJobs();
  }
  Result<std::uint64_t> id = pool->Submit(std::move(job));
  if (!id.ok()) {
    if (jobs.empty()) {
      shared.EndWorkerJobs();
    }
    return id.status();
  }
  rec->pool_id = *id;
  jobs.emplace(rec->handle, rec);
  detached_live += detached ? 1 : 0;
  return rec->handle;
}

void Workers::Impl::Done(const std::shared_ptr<JobRecord>& rec, JobOutcome o) {
  if (rec->ended) {
    return;
  }
  rec->ended = true;
  if (rec->cancelled) {
    return;  // the plugin cancelled it: nobody hears of it (counted as cancelled by the pool)
  }
  const JobHandlerEntry* h = rec->orphaned ? nullptr : Recipient(*rec);
  if (h == nullptr) {
    ++dropped;
    rec->owner().log().Warn(
        "job {} for handler \"{}\" ended, but its instance stopped{}: the result is dropped",
        rec->handle, rec->handler,
        rec->detached ? " and no serving instance declares that handler" : "");
    return;
  }
  molt_status_t status = MOLT_OK;
  std::string error;
  std::size_t failed_item = 0;
  switch (o.end) {
    case JobEnd::kCompleted:
      break;
    case JobEnd::kFailed:
      failed_item = o.failed_item;
      status = rec->codes[failed_item];
      error = rec->outputs[failed_item];
      if (error.empty()) {
        error = "the job's function returned " + std::to_string(status);
      }
      if (rec->fork_join) {
        error = "item " + std::to_string(failed_item) + ": " + error;
      }
      break;
    case JobEnd::kTimedOut:
      status = MOLT_ERR_TIMEOUT;
      error = "job " + std::to_string(rec->handle) + " for handler \"" + rec->handler +
              "\" timed out after " + fmt::format("{:g}", rec->timeout_seconds) +
              " s: a worker cannot be stopped, so whatever it still computes is dropped and its "
              "worker replaced (raise the spec's timeout_seconds or workers.timeout_seconds)";
      rec->owner().log().Warn("{}", error);
      break;
    case JobEnd::kCancelled:
      status = MOLT_ERR_CANCELLED;
      error = "the server is closing: job " + std::to_string(rec->handle) + " was cancelled";
      break;
  }
  PluginInstance* target = h->owner;
  if (target->dormant()) {
    // A mounted generation that does not serve yet hears it once it does.
    target->WhenServing([this, rec, target, status, error, failed_item] {
      if (const JobHandlerEntry* again = FindHandler(target, rec->handler); again != nullptr) {
        Hand(rec, *again, status, error, failed_item);
      } else {
        ++dropped;
      }
    });
    return;
  }
  Hand(rec, *h, status, error, failed_item);
}

void Workers::Impl::Hand(const std::shared_ptr<JobRecord>& rec, const JobHandlerEntry& h,
                         molt_status_t status, const std::string& error, std::size_t failed_item) {
  std::vector<molt_bytes_view> results;
  if (status == MOLT_OK) {
    results.reserve(rec->outputs.size());
    for (const std::string& out : rec->outputs) {
      results.push_back({out.data(), out.size()});
    }
  }
  molt_job_result result{};
  result.struct_size = sizeof(result);
  result.status = status;
  result.job = rec->handle;
  result.tag = rec->tag;
  result.error = error.c_str();
  result.count = results.size();
  result.results = results.empty() ? nullptr : results.data();
  result.failed_item = failed_item;
  result.inherited = h.owner != &rec->owner() ? 1 : 0;
  ++delivered;
  inherited += result.inherited;
  const JobHandlerEntry copy = h;  // the handler may declare another one (the map may move)
  abi::CallPlugin(*copy.owner, [&] {
    copy.fn(copy.user_data, &result);
    return MOLT_OK;
  });
}

void Workers::Impl::Finished(const std::shared_ptr<JobRecord>& rec) {
  if (rec->release != nullptr) {
    rec->owner().RunRelease(rec->release, rec->user_data);  // its library is still mapped
  }
  detached_live -= rec->detached ? 1 : 0;
  jobs.erase(rec->handle);
  if (jobs.empty()) {
    shared.EndWorkerJobs();
  }
  // The record's hold goes with the last copy of `rec` (the pool's closures): its instance, then
  // perhaps its library.
}

namespace {

// The layer a slot's instance reaches (installed with the slots).
Workers::Impl& WorkersOf(PluginInstance& p) { return p.shared().Layer<Workers>()->impl(); }

Result<molt_job_spec> ReadSpec(const molt_job_spec* given) {
  MOLT_RETURN_IF_ERROR(abi::Required(given, "spec"));
  MOLT_ASSIGN_OR_RETURN(molt_job_spec spec, abi::ReadSized(*given));
  MOLT_RETURN_IF_ERROR(abi::Required(
      {{spec.handler, "spec->handler"}, {reinterpret_cast<void*>(spec.fn), "spec->fn"}}));
  return spec;
}

molt_status_t JobHandler(molt_context_t* ctx, const char* name, molt_job_done_fn fn,
                         void* user_data, molt_cleanup_fn release) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(abi::Required({{name, "name"}, {reinterpret_cast<void*>(fn), "fn"}}));
    if (!HandlerNameOk(name)) {
      return Status::InvalidArgument("job handler name \"" + std::string(name) +
                                     "\" must be 1..64 of [A-Za-z0-9_.:-]");
    }
    Workers::Impl& w = WorkersOf(p);
    if (w.FindHandler(&p, name) != nullptr) {
      return Status::AlreadyExists("job handler \"" + std::string(name) +
                                   "\" is already declared by plugin \"" + p.label() + "\"");
    }
    w.handlers.emplace(name, JobHandlerEntry{&p, p.name(), fn, user_data, release});
    return Status::Ok();
  });
}

molt_status_t JobSubmit(molt_context_t* ctx, const molt_job_spec* spec, const void* input,
                        std::size_t size, molt_job_t* out) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(const molt_job_spec s, ReadSpec(spec));
    MOLT_RETURN_IF_ERROR(abi::Required(out, "out_job"));
    MOLT_RETURN_IF_ERROR(abi::RequiredIfAny(input, size, "input", "size"));
    if (size > kMaxInputBytes) {
      return Status::InvalidArgument("the job's input is " + std::to_string(size) +
                                     " bytes: at most 64 MiB");
    }
    std::vector<std::string> inputs;
    inputs.emplace_back(input != nullptr ? static_cast<const char*>(input) : "", size);
    MOLT_ASSIGN_OR_RETURN(*out, WorkersOf(p).Submit(p, s, std::move(inputs), false));
    return Status::Ok();
  });
}

molt_status_t JobForkJoin(molt_context_t* ctx, const molt_job_spec* spec,
                          const molt_bytes_view* items, std::size_t count,
                          molt_job_t* out) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(const molt_job_spec s, ReadSpec(spec));
    MOLT_RETURN_IF_ERROR(abi::Required(out, "out_job"));
    if (count == 0 || count > kMaxItems) {
      return Status::InvalidArgument("count is " + std::to_string(count) +
                                     ": a fork_join takes 1 to 1000000 items");
    }
    MOLT_RETURN_IF_ERROR(abi::Required(items, "items"));
    std::vector<std::string> inputs;
    inputs.reserve(count);
    std::size_t total = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (items[i].data == nullptr && items[i].size > 0) {
        return Status::InvalidArgument("items[" + std::to_string(i) +
                                       "].data is NULL with size > 0");
      }
      total += items[i].size;
      if (total > kMaxInputBytes) {
        return Status::InvalidArgument("the items add up to more than 64 MiB (at item " +
                                       std::to_string(i) + ")");
      }
      inputs.emplace_back(items[i].data != nullptr ? static_cast<const char*>(items[i].data) : "",
                          items[i].size);
    }
    MOLT_ASSIGN_OR_RETURN(*out, WorkersOf(p).Submit(p, s, std::move(inputs), true));
    return Status::Ok();
  });
}

molt_status_t JobCancel(molt_context_t* ctx, molt_job_t job) noexcept {
  return abi::Guard(ctx, [&](PluginInstance& p) -> Status {
    if (abi::AbiShared::KindOf(job) != static_cast<std::uint64_t>(Kind::kJob)) {
      return Status::InvalidArgument(std::string(PluginInstance::KindName(job)) + " " +
                                     std::to_string(job) + " is not a job");
    }
    Workers::Impl& w = WorkersOf(p);
    auto it = w.jobs.find(job);
    if (it == w.jobs.end() || it->second->ended || it->second->cancelled ||
        &it->second->owner() != &p) {
      return Status::Stale("job " + std::to_string(job) +
                           " is not live (it ended, or is not plugin \"" + p.label() + "\"'s)");
    }
    it->second->cancelled = true;
    w.pool->Cancel(it->second->pool_id);
    return Status::Ok();
  });
}

}  // namespace

Workers::Workers(abi::AbiShared& shared, WorkersOptions options)
    : impl_(std::make_unique<Impl>(shared, options)) {}

Workers::~Workers() {
  Impl& w = *impl_;
  std::map<molt_job_t, std::shared_ptr<JobRecord>> left = std::move(w.jobs);
  w.pool.reset();  // waits for the functions running, each within its job's timeout
  for (auto& [handle, rec] : left) {
    if (rec->running.load(std::memory_order_acquire) > 0) {
      // Its function still runs past its timeout: the record it writes to, its instance and its
      // library stay for good.
      static auto* kept = new std::vector<std::shared_ptr<JobRecord>>();  // never freed
      kept->push_back(rec);
      rec->owner().log().Error(
          "job {} for handler \"{}\" still runs at shutdown: its library "
          "stays mapped",
          handle, rec->handler);
    } else if (rec->release != nullptr) {
      rec->owner().RunRelease(rec->release, rec->user_data);
    }
  }
}

void Workers::ReleaseOwner(const void* owner) {
  Impl& w = *impl_;
  for (auto it = w.handlers.begin(); it != w.handlers.end();) {
    if (it->second.owner == owner) {
      JobHandlerEntry h = it->second;
      it = w.handlers.erase(it);
      if (h.release != nullptr) {
        h.owner->RunRelease(h.release, h.user_data);
      }
    } else {
      ++it;
    }
  }
  for (auto& [handle, rec] : w.jobs) {
    if (&rec->owner() == owner && !rec->ended && !rec->detached) {
      rec->orphaned = true;  // dropped when it ends, and no chunk of it starts any more
      w.pool->Cancel(rec->pool_id);
    }
  }
}

WorkersStats Workers::stats() const {
  const Impl& w = *impl_;
  WorkersStats s;
  s.pool = w.pool->stats();
  s.handlers = w.handlers.size();
  s.jobs = w.jobs.size();
  s.detached = w.detached_live;
  s.delivered = w.delivered;
  s.inherited = w.inherited;
  s.dropped = w.dropped;
  return s;
}

void Workers::Close() {
  Impl& w = *impl_;
  w.closed = true;
  w.pool->Close();  // no chunk starts any more
  // Handlers hear it now, while their instances still run (the pool's endings come later).
  const std::map<molt_job_t, std::shared_ptr<JobRecord>> open = w.jobs;
  for (const auto& [handle, rec] : open) {
    w.Done(rec, {JobEnd::kCancelled, 0});
  }
}

Workers& AttachWorkers(abi::AbiShared& shared, WorkersOptions options) {
  Workers& w = shared.AddLayer(std::make_unique<Workers>(shared, options));
  molt_host_api& api = shared.mutable_api();
  api.job_handler = JobHandler;
  api.job_submit = JobSubmit;
  api.job_fork_join = JobForkJoin;
  api.job_cancel = JobCancel;
  return w;
}

}  // namespace molt::kernel::workers

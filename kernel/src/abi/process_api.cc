// SPDX-License-Identifier: Apache-2.0
// The process slots of the host API (ABI 1.0): processes (stackful fibers running a plugin's
// body) and the completions they wait on. Installed by CoreHostApi(), in every host.
#include "kernel/src/abi/process_api.h"

#include <exception>
#include <stdexcept>
#include <string>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/struct_size.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/process.h"

namespace molt::kernel::abi {
namespace {

// --- Processes ---

std::int32_t ToAbiState(Process::State s) { return static_cast<std::int32_t>(s); }
static_assert(static_cast<int>(Process::State::kKilled) == MOLT_PROCESS_KILLED &&
                  static_cast<int>(Process::State::kCreated) == MOLT_PROCESS_CREATED,
              "process states are the ABI's");

// The process running now, when it is one of `p`'s.
Result<Process*> CurrentProcessOf(PluginInstance& p, const char* call) {
  Process* current = Process::Current();
  if (current == nullptr) {
    return Status::FailedPrecondition(std::string(call) + " must be called inside a process");
  }
  if (p.HandleOf(current) == 0) {
    return Status::FailedPrecondition(std::string(call) + ": the running process " +
                                      current->name() + " is not plugin \"" + p.label() + "\"'s");
  }
  return current;
}

Status Killed(const Process& process) {
  return Status::Cancelled("process " + process.name() + " was killed: return from its body");
}

molt_status_t ProcessSpawn(molt_context_t* ctx, const molt_process_options* options,
                           molt_process_fn body, void* user_data, molt_cleanup_fn release,
                           molt_process_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{reinterpret_cast<const void*>(body), "body"}, {out, "out_process"}});
        !s.ok()) {
      return s;
    }
    ProcessOptions po;
    if (options != nullptr) {
      MOLT_ASSIGN_OR_RETURN(molt_process_options given, ReadSized(*options));
      options = &given;
      if (options->priority != 0) {
        MOLT_ASSIGN_OR_RETURN(Priority prio, PriorityArg(options->priority));
        po.priority = prio;
      }
      if (options->name != nullptr) {
        po.name = options->name;
      }
      if (options->stack_size != 0) {
        po.stack_size = static_cast<std::size_t>(options->stack_size);
      }
    }
    auto record = std::make_shared<PluginInstance::ProcessRecord>();
    PluginInstance* inst = &p;
    // The body runs on the process's stack for as long as the process lives: it is not one of
    // the bracketed callbacks (those defer releases until they return).
    Result<std::shared_ptr<Process>> proc = p.kernel().SpawnProcess(
        [inst, body, user_data, record]() -> std::string {
          inst->SetError("");
          molt_status_t st;
          try {
            st = body(user_data, record->arg);
          } catch (...) {
            st = MOLT_ERR_INTERNAL;
            inst->SetError("process body threw across the C ABI");
          }
          if (st != MOLT_OK) {
            throw std::runtime_error(inst->CallbackError(st));
          }
          return record->result;
        },
        po);
    if (!proc.ok()) {
      return proc.status();
    }
    PluginInstance::Resource r{Kind::kProcess, {}, 0, false, nullptr, release, user_data};
    r.process = *proc;
    r.record = record;
    const molt_process_t handle = p.Own(std::move(r));
    p.IndexProcess(proc->get(), handle);
    Scheduler* scheduler = &p.kernel().scheduler();
    const Process* raw = proc->get();  // alive while its exit fires
    (*proc)->OnExit().Connect(
        [inst, handle, record, scheduler, raw, body](Process::State s, const std::string& result) {
          if (s == Process::State::kCrashed) {
            inst->CountCallbackError();  // a crashed process is the plugin's error
          }
          if (raw->abandoned()) {
            // Its body still has frames in the library, parked for good: never unload it.
            inst->Pin(reinterpret_cast<const void*>(body),
                      "process " + raw->name() +
                          " ignored its cancellation (it called the host again after "
                          "MOLT_ERR_CANCELLED instead of returning) and was abandoned");
          }
          for (auto& cb : std::exchange(record->on_exit, {})) {
            CallPlugin(*inst, [&] {
              cb.fn(cb.user_data, handle, ToAbiState(s), result.c_str(), result.size());
              return MOLT_OK;
            });
            if (cb.release != nullptr) {
              CallPlugin(*inst, [&] {
                cb.release(cb.user_data);
                return MOLT_OK;
              });
            }
          }
          // The handle goes stale on the next step, once a body that killed itself has unwound.
          // (A swap may destroy the instance before then: the task holds it weakly.)
          scheduler->Schedule(
              [weak = inst->weak_from_this(), handle] {
                if (std::shared_ptr<PluginInstance> i = weak.lock()) {
                  (void)i->Release(handle);
                }
              },
              Priority::kKernel, TaskOrigin::Named("process handle release"));
        });
    *out = handle;
    return Status::Ok();
  });
}

molt_status_t ProcessStart(molt_context_t* ctx, molt_process_t process, void* arg) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, process, Kind::kProcess, "process"));
    if (r->process->state() == Process::State::kCreated) {
      r->record->arg = arg;
    }
    if (p.dormant() && r->process->state() == Process::State::kCreated) {
      // Its generation does not serve yet: the body starts running once it does.
      p.WhenServing([inst = &p, process] {
        if (PluginInstance::Resource* res = inst->Find(process)) {
          (void)res->process->Start();
        }
      });
      return Status::Ok();
    }
    return r->process->Start();
  });
}

template <class Park>
molt_status_t Parked(molt_context_t* ctx, const char* call, Park&& park) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(Process * current, CurrentProcessOf(p, call));
    try {
      return park(p, *current);
    } catch (const ProcessKilled&) {
      return Killed(*current);
    }
  });
}

molt_status_t ProcessYield(molt_context_t* ctx) noexcept {
  return Parked(ctx, "process_yield", [](PluginInstance&, Process&) {
    Process::Yield();
    return Status::Ok();
  });
}

molt_status_t ProcessSleep(molt_context_t* ctx, double seconds) noexcept {
  return Parked(ctx, "process_sleep", [seconds](PluginInstance&, Process&) -> Status {
    MOLT_ASSIGN_OR_RETURN(const Duration delay, SecondsArg(seconds, "process_sleep seconds"));
    Process::Sleep(delay);
    return Status::Ok();
  });
}

molt_status_t ProcessWait(molt_context_t* ctx, molt_completion_t completion, molt_bytes_fn sink,
                          void* sink_user_data) noexcept {
  return Parked(ctx, "process_wait", [&](PluginInstance& p, Process&) -> Status {
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, completion, Kind::kCompletion, "completion"));
    std::shared_ptr<Completion> c = r->completion;  // alive while waiting
    const Completion& done = Process::Wait(c);
    if (sink != nullptr && !done.payload().empty()) {
      sink(sink_user_data, done.payload().data(), done.payload().size());
    }
    return done.status();
  });
}

template <class F>
molt_status_t OnProcess(molt_context_t* ctx, molt_process_t process, F&& f) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, process, Kind::kProcess, "process"));
    return f(*r);
  });
}

molt_status_t ProcessSuspend(molt_context_t* ctx, molt_process_t process) noexcept {
  return OnProcess(ctx, process, [](PluginInstance::Resource& r) {
    r.process->Suspend();
    return Status::Ok();
  });
}

molt_status_t ProcessResume(molt_context_t* ctx, molt_process_t process) noexcept {
  return OnProcess(ctx, process, [](PluginInstance::Resource& r) {
    r.process->Resume();
    return Status::Ok();
  });
}

molt_status_t ProcessKill(molt_context_t* ctx, molt_process_t process,
                          const char* reason) noexcept {
  return OnProcess(ctx, process, [reason](PluginInstance::Resource& r) {
    r.process->Kill(reason != nullptr ? reason : "killed");
    return Status::Ok();
  });
}

molt_status_t ProcessState(molt_context_t* ctx, molt_process_t process, std::int32_t* out_state,
                           std::uint64_t* out_pid) noexcept {
  return OnProcess(ctx, process, [&](PluginInstance::Resource& r) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out_state, "out_state"));
    *out_state = ToAbiState(r.process->state());
    if (out_pid != nullptr) {
      *out_pid = r.process->pid();
    }
    return Status::Ok();
  });
}

molt_status_t ProcessOnExit(molt_context_t* ctx, molt_process_t process, molt_process_exit_fn fn,
                            void* user_data, molt_cleanup_fn release) noexcept {
  return OnProcess(ctx, process, [&](PluginInstance::Resource& r) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(fn), "fn"));
    if (r.process->terminal()) {
      return Status::FailedPrecondition("process " + r.process->name() + " already ended (" +
                                        std::string(Process::StateName(r.process->state())) + ")");
    }
    r.record->on_exit.push_back({fn, user_data, release});
    return Status::Ok();
  });
}

molt_status_t ProcessSetResult(molt_context_t* ctx, const char* result) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(Process * current, CurrentProcessOf(p, "process_set_result"));
    p.Find(p.HandleOf(current))->record->result = result != nullptr ? result : "";
    return Status::Ok();
  });
}

molt_status_t CompletionCreate(molt_context_t* ctx, molt_completion_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out, "out_completion"));
    (void)OwnCompletion(p, out);
    return Status::Ok();
  });
}

molt_status_t CompletionComplete(molt_context_t* ctx, molt_completion_t completion,
                                 molt_status_t status, const void* data,
                                 std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, completion, Kind::kCompletion, "completion"));
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    Status st = status == MOLT_OK ? Status::Ok() : Status(AbiCode(status), p.last_error());
    if (!r->completion->Complete(std::move(st), std::string(payload.begin(), payload.end()))) {
      return Status::FailedPrecondition("completion " + std::to_string(completion) +
                                        " is already complete");
    }
    return Status::Ok();
  });
}

molt_status_t CompletionRelease(molt_context_t* ctx, molt_completion_t completion) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return ReleaseOwned(p, completion, Kind::kCompletion, "completion");
  });
}

}  // namespace

void InstallProcessSlots(molt_host_api& api) {
  api.process_spawn = ProcessSpawn;
  api.process_start = ProcessStart;
  api.process_yield = ProcessYield;
  api.process_sleep = ProcessSleep;
  api.process_wait = ProcessWait;
  api.process_suspend = ProcessSuspend;
  api.process_resume = ProcessResume;
  api.process_kill = ProcessKill;
  api.process_state = ProcessState;
  api.process_on_exit = ProcessOnExit;
  api.process_set_result = ProcessSetResult;
  api.completion_create = CompletionCreate;
  api.completion_complete = CompletionComplete;
  api.completion_release = CompletionRelease;
}

}  // namespace molt::kernel::abi

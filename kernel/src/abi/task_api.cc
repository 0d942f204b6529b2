// SPDX-License-Identifier: Apache-2.0
// The task slots of the host API: a plugin's tasks (next step, after a delay, every period; on
// the tick or one of its phases), each a resource of its instance, held back while the instance
// is dormant.
#include "kernel/src/abi/task_api.h"

#include <string>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/struct_size.h"

namespace molt::kernel::abi {
namespace {

// Arms a task of `p` on `scheduler` (the kernel's, or one of its phases): `arm(priority, task)`
// schedules it there and returns its handle.
template <class Arm>
Status AddTask(PluginInstance& p, Scheduler& scheduler, std::int32_t priority, molt_task_fn fn,
               void* user_data, molt_cleanup_fn release, molt_task_t* out, bool one_shot,
               Arm&& arm) {
  if (Status s = Required({{reinterpret_cast<const void*>(fn), "fn"}, {out, "out_task"}});
      !s.ok()) {
    return s;
  }
  MOLT_ASSIGN_OR_RETURN(Priority prio, PriorityArg(priority));
  PluginInstance* inst = &p;
  PluginInstance::Resource r{Kind::kTask, {}, 0, one_shot, nullptr, release, user_data};
  r.scheduler = &scheduler;
  const molt_handle_t h = p.Own(std::move(r));
  try {
    auto run = [inst, fn, user_data, h] {
      if (inst->Find(h) == nullptr) {
        return;  // cancelled while it waited for its generation to serve
      }
      const molt_status_t st = CallPlugin(*inst, [&] { return fn(user_data); });
      if (st != MOLT_OK) {
        inst->ReportCallbackError("task", st);
      }
      if (PluginInstance::Resource* res = inst->Find(h); res != nullptr && res->one_shot) {
        (void)inst->Release(h);  // ran once: the task is over
      }
    };
    TaskHandle task = arm(prio, [inst, run, one_shot] {
      if (!inst->dormant()) {
        run();
      } else if (one_shot) {
        inst->WhenServing(run);  // due while dormant: runs once the generation serves
      }
    });
    p.Find(h)->task = task.id();
  } catch (...) {
    (void)p.Release(h);
    throw;
  }
  *out = h;
  return Status::Ok();
}

// The three ways a task runs (MOLT_TASK_*), on `scheduler`.
Status StartTask(PluginInstance& p, Scheduler& scheduler, std::int32_t kind, double seconds,
                 std::int32_t priority, molt_task_fn fn, void* user_data, molt_cleanup_fn release,
                 molt_task_t* out) {
  switch (kind) {
    case MOLT_TASK_NEXT_STEP:
      return AddTask(p, scheduler, priority, fn, user_data, release, out, true,
                     [&](Priority pr, auto&& task) {
                       return scheduler.Schedule(std::move(task), pr, p.origin());
                     });
    case MOLT_TASK_AFTER: {
      MOLT_ASSIGN_OR_RETURN(Duration delay, SecondsArg(seconds, "seconds"));
      return AddTask(p, scheduler, priority, fn, user_data, release, out, true,
                     [&](Priority pr, auto&& task) {
                       return scheduler.After(delay, std::move(task), pr, p.origin());
                     });
    }
    case MOLT_TASK_EVERY: {
      MOLT_ASSIGN_OR_RETURN(Duration interval, SecondsArg(seconds, "seconds"));
      return AddTask(p, scheduler, priority, fn, user_data, release, out, false,
                     [&](Priority pr, auto&& task) {
                       return scheduler.Every(interval, std::move(task), pr, p.origin());
                     });
    }
    default:
      return Status::InvalidArgument("task kind " + std::to_string(kind) +
                                     " is not MOLT_TASK_NEXT_STEP (0), MOLT_TASK_AFTER (1) or "
                                     "MOLT_TASK_EVERY (2)");
  }
}

molt_status_t TaskSchedule(molt_context_t* ctx, std::int32_t priority, molt_task_fn fn,
                           void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return StartTask(p, p.kernel().scheduler(), MOLT_TASK_NEXT_STEP, 0, priority, fn, user_data,
                     release, out);
  });
}

molt_status_t TaskAfter(molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return StartTask(p, p.kernel().scheduler(), MOLT_TASK_AFTER, seconds, priority, fn, user_data,
                     release, out);
  });
}

molt_status_t TaskEvery(molt_context_t* ctx, double seconds, std::int32_t priority, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) {
    return StartTask(p, p.kernel().scheduler(), MOLT_TASK_EVERY, seconds, priority, fn, user_data,
                     release, out);
  });
}

molt_status_t TaskStart(molt_context_t* ctx, const molt_task_spec* spec, molt_task_fn fn,
                        void* user_data, molt_cleanup_fn release, molt_task_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(spec, "spec"));
    MOLT_ASSIGN_OR_RETURN(molt_task_spec s, ReadSized(*spec));
    if (s.phase < MOLT_PHASE_TICK || s.phase > MOLT_PHASE_POST_TICK) {
      return Status::InvalidArgument("phase " + std::to_string(s.phase) +
                                     " is not MOLT_PHASE_TICK (0), MOLT_PHASE_PRE_TICK (1) or "
                                     "MOLT_PHASE_POST_TICK (2)");
    }
    Scheduler& scheduler = p.kernel().scheduler().ForPhase(static_cast<Phase>(s.phase));
    return StartTask(p, scheduler, s.kind, s.seconds,
                     s.priority == 0 ? MOLT_PRIORITY_NORMAL : s.priority, fn, user_data, release,
                     out);
  });
}

molt_status_t TaskCancel(molt_context_t* ctx, molt_task_t task) noexcept {
  return Guard(ctx, [&](PluginInstance& p) { return ReleaseOwned(p, task, Kind::kTask, "task"); });
}

}  // namespace

void InstallTaskSlots(molt_host_api& api) {
  api.task_schedule = TaskSchedule;
  api.task_after = TaskAfter;
  api.task_every = TaskEvery;
  api.task_start = TaskStart;
  api.task_cancel = TaskCancel;
}

}  // namespace molt::kernel::abi

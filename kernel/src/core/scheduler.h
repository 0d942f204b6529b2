// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/scheduler.h
//
// Scheduler: every piece of deferred work in the kernel (spec: Scheduler).
//
//   TaskHandle h = scheduler.After(Seconds(5), [&] { bus.Publish("Shrine.Recharged"); });
//   scheduler.Every(Seconds(1), Burn, Priority::kLow);
//   scheduler.Schedule([&] { Rebuild(); });   // next step
//   h.Cancel();
//
// Five FIFO queues, one per priority, drained in order (Kernel, High, Normal, Low, Background)
// under a per-step budget checked between tasks (steps are not preemptive). Kernel tasks always
// run; Background tasks run only on budget left once the other queues are drained. Work scheduled
// during a step runs on the next one. Timers live in a deadline heap: an idle scheduler has
// nothing to wake for, and nothing rescans recurring jobs. A task that throws never escapes: the
// error goes to OnError(). The hot-task profiler (on unless profile_tasks is false) attributes
// each task's time to its origin, for TopTasks().
//
// Budgets: fixed (a slice per step), or frame-aware (the server default): the budget is the
// slack under the frame target after the loop's other work since the last step (ChargeExternal)
// and the scheduler's own recent overhead, never below the floor; a frame already late gets the
// floor. ResolveBudget() turns the spec's boot options into a policy.
//
// Phases (spec: phase schedulers): ForPhase(kPreTick) and ForPhase(kPostTick) are schedulers of
// their own, built on first use, that this one's Step() runs just before and just after its own
// tasks (input before the step, replication after it), each only when it has work due. Their budget
// is fixed at this one's floor (a frame-aware one would claim the same slack twice); they copy
// profile_tasks, stagger_recurring, the clock and the tick period; their errors reach OnError()
// with the phase's name; an idle phase adds no wake. Their time counts as external work in this
// one's frame-aware budget.
//
// The scheduler does not own a thread or a timer: the Loop (loop.h) steps it on the kernel's
// io_context, arming one timer for NextWake() only while work exists. Tests call Step().
//
// Thread safety: REQUIRES external synchronization (the kernel thread). TaskHandles must not
// outlive their scheduler.
#ifndef MOLT_KERNEL_CORE_SCHEDULER_H_
#define MOLT_KERNEL_CORE_SCHEDULER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/signal.h"

namespace molt::kernel {

// Lower runs first. The spec numbers them 1..5 (Kernel = 1).
enum class Priority : std::uint8_t {
  kKernel = 0,
  kHigh = 1,
  kNormal = 2,
  kLow = 3,
  kBackground = 4
};
inline constexpr int kPriorityCount = 5;
std::string_view PriorityName(Priority p);

// Where in a step a task runs (MOLT_PHASE_* in the ABI).
enum class Phase : std::uint8_t { kTick = 0, kPreTick = 1, kPostTick = 2 };
inline constexpr int kPhaseCount = 3;
// "tick", "pre_tick", "post_tick".
std::string_view PhaseName(Phase phase);

inline constexpr Duration kDefaultBudget = std::chrono::microseconds(1500);        // BudgetSeconds
inline constexpr Duration kDefaultTargetFrame = std::chrono::microseconds(16500);  // TargetFrame
inline constexpr Duration kDefaultTickPeriod = std::chrono::nanoseconds(1'000'000'000 / 60);

// The spec's boot options (KernelConfig); every field optional.
struct SchedulerConfig {
  std::optional<Duration> budget;        // BudgetSeconds: the fixed slice, or the floor
  std::optional<Duration> target_frame;  // TargetFrameSeconds: turns on frame-aware budgets
  bool profile_tasks = true;             // ProfileTasks
  bool stagger_recurring = false;        // StaggerRecurring
};

// A fixed slice (`target` empty) or a frame-aware budget never below `floor`.
struct BudgetPolicy {
  Duration floor = kDefaultBudget;
  std::optional<Duration> target;
};

// A label the profiler attributes task time to. Interned process-wide; cheap to copy.
class TaskOrigin {
 public:
  // The "(unknown)" origin.
  TaskOrigin() = default;
  // The origin named `label` (e.g. "Process Siege").
  static TaskOrigin Named(std::string_view label);
  // The origin of callables of type F: its demangled type name, which for a lambda names the
  // function that wrote it. Computed once per type.
  template <class F>
  static TaskOrigin Of() {
    static const TaskOrigin origin = Named(DemangledName(typeid(F).name()));
    return origin;
  }

  std::uint32_t id() const { return id_; }
  // REQUIRES: a TaskOrigin made by Named or Of.
  std::string label() const;

 private:
  static std::string DemangledName(const char* mangled);
  explicit TaskOrigin(std::uint32_t id) : id_(id) {}
  std::uint32_t id_ = 0;
};

class Scheduler;

// A scheduled task. Copyable; Cancel through any copy.
class TaskHandle {
 public:
  TaskHandle() = default;
  TaskHandle(Scheduler* scheduler, std::uint64_t id) : scheduler_(scheduler), id_(id) {}

  // Cancels the task: it will not run (again). Returns false when it had already finished or was
  // cancelled. Cancelling a task from inside its own run stops a recurring one.
  bool Cancel();
  // True until the task finished (one-shot) or was cancelled.
  bool Pending() const;
  std::uint64_t id() const { return id_; }

 private:
  Scheduler* scheduler_ = nullptr;
  std::uint64_t id_ = 0;
};

// A task that threw; views valid during the OnError call.
struct TaskError {
  std::string_view origin;
  std::string_view message;
  Phase phase = Phase::kTick;  // the phase scheduler it ran in
};

// The upper bounds of the step-time histogram's buckets (SchedulerStats::step_times), in
// nanoseconds: 100 µs to 100 ms; the last bucket holds the steps above them all.
inline constexpr std::array<std::int64_t, 10> kStepTimeBounds = {
    100'000,   250'000,    500'000,    1'000'000,  2'500'000,
    5'000'000, 10'000'000, 25'000'000, 50'000'000, 100'000'000};

struct SchedulerStats {
  Duration last_step{};              // LastStepSeconds
  Duration last_budget{};            // the budget the last step had
  std::uint64_t tasks_run = 0;       // since creation
  std::uint64_t tasks_deferred = 0;  // ready tasks the last step's budget left waiting
  std::uint64_t steps = 0;
  std::uint64_t errors = 0;
  // Every step's time: counts per bucket of kStepTimeBounds (non-cumulative), and their sum.
  std::array<std::uint64_t, kStepTimeBounds.size() + 1> step_times{};
  Duration step_time_total{};
  Duration step_time_max{};                // the longest step since ResetStepMax()
  std::uint64_t steps_deferring = 0;       // steps whose budget left ready tasks waiting
  std::uint64_t tasks_deferred_total = 0;  // tasks_deferred summed over every step
};

struct TaskProfile {
  std::string key;  // the origin label
  Duration time{};  // total
  std::uint64_t calls = 0;
  Duration max{};
};

struct DeferredCount {
  std::string key;
  std::uint64_t count = 0;
};

struct SchedulerOptions {
  BudgetPolicy budget{};
  bool profile_tasks = true;
  bool stagger_recurring = false;
  Duration tick_period = kDefaultTickPeriod;  // steps are at least this far apart
  Clock* clock = nullptr;                     // nullptr: the real clock
};

class Scheduler {
 public:
  using Task = Callback<void()>;

  explicit Scheduler(SchedulerOptions options = {});
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler();

  // One-shot on the next step. `fn` is any callable `void()`; the origin defaults to its type.
  template <class F>
  TaskHandle Schedule(F&& fn, Priority priority = Priority::kNormal) {
    return Schedule(std::forward<F>(fn), priority, TaskOrigin::Of<std::decay_t<F>>());
  }
  template <class F>
  TaskHandle Schedule(F&& fn, Priority priority, TaskOrigin origin) {
    return TaskHandle(this, QueueNew(Emplace(std::forward<F>(fn), priority, origin, kOneShot)));
  }

  // One-shot on the first step at or after now + delay (a negative delay counts as 0).
  template <class F>
  TaskHandle After(Duration delay, F&& fn, Priority priority = Priority::kNormal) {
    return After(delay, std::forward<F>(fn), priority, TaskOrigin::Of<std::decay_t<F>>());
  }
  template <class F>
  TaskHandle After(Duration delay, F&& fn, Priority priority, TaskOrigin origin) {
    return TaskHandle(this,
                      ArmNew(Emplace(std::forward<F>(fn), priority, origin, kOneShot), delay));
  }

  // Recurring every `interval`; 0 means every step. With stagger_recurring, the first deadline
  // of a positive interval falls at a fraction of it in (0, interval), spreading jobs apart.
  template <class F>
  TaskHandle Every(Duration interval, F&& fn, Priority priority = Priority::kNormal) {
    return Every(interval, std::forward<F>(fn), priority, TaskOrigin::Of<std::decay_t<F>>());
  }
  template <class F>
  TaskHandle Every(Duration interval, F&& fn, Priority priority, TaskOrigin origin) {
    return TaskHandle(
        this, EveryNew(Emplace(std::forward<F>(fn), priority, origin, kRecurring), interval));
  }

  // Reusable entries (spec: scheduleEntry), for processes: created once, queued any number of
  // times without allocating, run once per queueing, released explicitly.
  template <class F>
  std::uint64_t CreateEntry(F&& fn, Priority priority, TaskOrigin origin) {
    return Emplace(std::forward<F>(fn), priority, origin, kEntry);
  }
  // Queues the entry for the next step. Returns false when it is already queued (it runs once)
  // or the id is stale. Queueing from inside the entry's own run queues it for the next step.
  bool QueueEntry(std::uint64_t id);
  // Frees the entry; a queued run is dropped. Safe from inside the entry's own run.
  bool ReleaseEntry(std::uint64_t id) { return Cancel(id); }
  // Moves an entry to another priority (takes effect at its next queueing).
  void SetEntryPriority(std::uint64_t id, Priority priority);

  bool Cancel(std::uint64_t id);
  bool Pending(std::uint64_t id) const;
  // Cancels every task and entry, the phases' too (kernel shutdown). Safe from inside a task.
  void CancelAll();

  // The scheduler of `phase` (kTick: this one), built on first use. Call it on the main
  // scheduler only: a phase has no phases of its own.
  Scheduler& ForPhase(Phase phase);
  // The phase's scheduler when it was built, else nullptr.
  const Scheduler* FindPhase(Phase phase) const;

  // Runs one step under the policy's budget (or `budget`, a fixed slice for this step only).
  void Step();
  void Step(Duration budget);

  // The budget the next Step() would get.
  Duration NextBudget() const;
  // Time the event loop spent outside the scheduler (network I/O, ...) since the last step;
  // frame-aware budgets subtract it.
  void ChargeExternal(Duration d) { external_ += d; }

  // When the next step should run: nullopt when idle (nothing queued, no deadline). Steps are
  // paced at least tick_period apart; a time in the past means "now".
  std::optional<TimePoint> NextWake() const;
  // Called (outside steps) when work arrives that may need an earlier wake than the last
  // NextWake(). The Loop uses it to arm its timer only when needed.
  void SetWakeListener(Callback<void()> listener) { wake_listener_ = std::move(listener); }

  // Task errors; the kernel connects a log warning.
  Signal<const TaskError&>& OnError() { return on_error_; }

  const SchedulerStats& stats() const { return stats_; }
  // Starts a new window for stats().step_time_max (diagnostics, once per window).
  void ResetStepMax() { stats_.step_time_max = Duration::zero(); }
  // Queued and timed tasks (entries that are idle excluded).
  std::size_t pending() const { return live_queued_ + heap_.size(); }

  void SetProfileTasks(bool on) { profile_tasks_ = on; }
  bool profile_tasks() const { return profile_tasks_; }
  // The `n` origins with the most total time, most first.
  std::vector<TaskProfile> TopTasks(std::size_t n) const;
  void ResetProfile();
  // Queued tasks by origin, most first (a scan: for diagnostics, not per step).
  std::vector<DeferredCount> TopDeferred(std::size_t n) const;

  const SchedulerOptions& options() const { return options_; }
  TimePoint Now() const { return clock_ ? clock_->Now() : RealNow(); }

 private:
  struct Slot;
  class Ring;

  std::uint64_t Ticks() const { return clock_ ? clock_->Ticks() : RealTicks(); }
  Slot& At(std::uint32_t index) const;
  Slot* Lookup(std::uint64_t id) const;
  enum Kind : std::uint8_t { kOneShot, kRecurring, kEntry };

  // Builds the task's callable in place in a fresh slot (no temporary to move from).
  template <class F>
  std::uint64_t Emplace(F&& fn, Priority priority, TaskOrigin origin, Kind kind) {
    Task* target;
    const std::uint64_t id = Allocate(priority, origin, kind, &target);
    if constexpr (std::is_same_v<std::decay_t<F>, Task>) {
      *target = std::move(fn);
    } else {
      try {
        target->Emplace(std::forward<F>(fn));
      } catch (...) {
        Cancel(id);
        throw;
      }
    }
    return id;
  }
  std::uint64_t Allocate(Priority priority, TaskOrigin origin, Kind kind, Task** target);
  std::uint64_t QueueNew(std::uint64_t id);
  std::uint64_t ArmNew(std::uint64_t id, Duration delay);
  std::uint64_t EveryNew(std::uint64_t id, Duration interval);
  void Free(std::uint32_t index);
  void Enqueue(std::uint64_t id, Slot& slot);
  void Arm(std::uint32_t index, TimePoint deadline);
  void HeapPush(std::uint32_t index);
  void HeapRemove(std::uint32_t index);
  void HeapUp(std::size_t pos);
  void HeapDown(std::size_t pos);
  bool HeapLess(std::uint32_t a, std::uint32_t b) const;
  void PromoteDue(TimePoint now);
  void Run(Duration budget);
  void Finish(std::uint64_t id, Slot& slot);
  Duration TicksToDuration(std::uint64_t ticks) const;
  void ReportError(Slot& slot, std::exception_ptr error);
  void Notify();
  // Steps the phase's scheduler when it has work due, and charges its time as external work.
  void StepPhase(Phase phase);

  SchedulerOptions options_;
  Clock* clock_;
  double ticks_per_second_;
  double ns_per_tick_;
  bool profile_tasks_;
  bool in_step_ = false;

  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::uint32_t slot_count_ = 0;
  std::uint32_t free_head_;
  std::array<std::unique_ptr<Ring>, kPriorityCount> queues_;
  std::size_t live_queued_ = 0;
  std::vector<std::uint32_t> heap_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t stagger_count_ = 0;

  TimePoint last_step_start_ = TimePoint::min();
  Duration external_{};
  Duration overhead_{};  // recent non-task cost per step (moving average)
  Callback<void()> wake_listener_;
  Signal<const TaskError&> on_error_;
  SchedulerStats stats_;
  Phase phase_ = Phase::kTick;                        // which phase this scheduler is
  std::array<std::unique_ptr<Scheduler>, 2> phases_;  // pre_tick, post_tick: built on first use

  struct OriginStats {
    std::uint64_t ticks = 0;
    std::uint64_t calls = 0;
    std::uint64_t max_ticks = 0;
  };
  std::vector<OriginStats> profile_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_SCHEDULER_H_

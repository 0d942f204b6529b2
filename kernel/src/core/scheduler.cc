// SPDX-License-Identifier: Apache-2.0
// Scheduler: a chunked slab of task slots addressed by (generation, index) ids, one ring of ids
// per priority, an indexed min-heap of deadlines, and per-origin profile counters indexed by
// origin id. Scheduling allocates nothing once the slab and rings have grown to the working set
// (a std::function holding a small callable stores it inline).
#include "kernel/src/core/scheduler.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <unordered_map>

namespace molt::kernel {
namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
constexpr std::uint32_t kChunkBits = 8;
constexpr std::uint32_t kChunkSize = 1u << kChunkBits;

enum State : std::uint8_t { kFree, kIdle, kQueued, kTimed, kRunning };

std::uint64_t MakeId(std::uint32_t generation, std::uint32_t index) {
  return (static_cast<std::uint64_t>(generation) << 32) | index;
}
std::uint32_t IndexOf(std::uint64_t id) { return static_cast<std::uint32_t>(id); }
std::uint32_t GenerationOf(std::uint64_t id) { return static_cast<std::uint32_t>(id >> 32); }

// Process-wide origin labels. Id 0 is "(unknown)".
struct OriginRegistry {
  std::mutex mu;
  std::deque<std::string> labels{"(unknown)"};
  std::unordered_map<std::string, std::uint32_t> ids{{"(unknown)", 0}};

  static OriginRegistry& Get() {
    static OriginRegistry* registry = new OriginRegistry();  // never destroyed
    return *registry;
  }
};

std::string OriginLabel(std::uint32_t id) {
  OriginRegistry& r = OriginRegistry::Get();
  std::lock_guard lock(r.mu);
  return id < r.labels.size() ? r.labels[id] : r.labels[0];
}

std::string ExceptionText(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

std::string_view PriorityName(Priority p) {
  switch (p) {
    case Priority::kKernel:
      return "Kernel";
    case Priority::kHigh:
      return "High";
    case Priority::kNormal:
      return "Normal";
    case Priority::kLow:
      return "Low";
    case Priority::kBackground:
      return "Background";
  }
  return "?";
}

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kTick:
      return "tick";
    case Phase::kPreTick:
      return "pre_tick";
    case Phase::kPostTick:
      return "post_tick";
  }
  return "?";
}

TaskOrigin TaskOrigin::Named(std::string_view label) {
  OriginRegistry& r = OriginRegistry::Get();
  std::lock_guard lock(r.mu);
  std::string key(label);
  auto it = r.ids.find(key);
  if (it != r.ids.end()) {
    return TaskOrigin(it->second);
  }
  const auto id = static_cast<std::uint32_t>(r.labels.size());
  r.labels.push_back(key);
  r.ids.emplace(std::move(key), id);
  return TaskOrigin(id);
}

std::string TaskOrigin::label() const { return OriginLabel(id_); }

std::string TaskOrigin::DemangledName(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  return name;
}

bool TaskHandle::Cancel() { return scheduler_ != nullptr && scheduler_->Cancel(id_); }
bool TaskHandle::Pending() const { return scheduler_ != nullptr && scheduler_->Pending(id_); }

struct Scheduler::Slot {
  Task fn;
  TimePoint deadline{};
  Duration interval{};
  std::uint64_t seq = 0;
  std::uint32_t generation = 1;
  std::uint32_t heap_pos = kNone;
  std::uint32_t origin = 0;
  std::uint32_t next_free = kNone;
  std::uint8_t priority = static_cast<std::uint8_t>(Priority::kNormal);
  std::uint8_t kind = kOneShot;
  std::uint8_t state = kFree;
  bool cancelled_in_run = false;
  bool requeue_after_run = false;
};

// A growable FIFO of task ids (power-of-two capacity).
class Scheduler::Ring {
 public:
  Ring() : buf_(64) {}
  std::size_t size() const { return size_; }
  void Push(std::uint64_t id) {
    if (size_ == buf_.size()) {
      Grow();
    }
    buf_[(head_ + size_) & (buf_.size() - 1)] = id;
    ++size_;
  }
  std::uint64_t Pop() {
    const std::uint64_t id = buf_[head_];
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
    return id;
  }
  std::uint64_t At(std::size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }

 private:
  [[gnu::noinline, gnu::cold]] void Grow() {
    std::vector<std::uint64_t> bigger(buf_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) {
      bigger[i] = At(i);
    }
    buf_.swap(bigger);
    head_ = 0;
  }
  std::vector<std::uint64_t> buf_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

Scheduler::Scheduler(SchedulerOptions options)
    : options_(options),
      clock_(options.clock),
      ticks_per_second_(clock_ ? clock_->TicksPerSecond() : RealTicksPerSecond()),
      ns_per_tick_(1e9 / ticks_per_second_),
      profile_tasks_(options.profile_tasks),
      free_head_(kNone) {
  for (auto& q : queues_) {
    q = std::make_unique<Ring>();
  }
}

Scheduler::~Scheduler() {
  // Destroy every callable after the slab is marked free, so a capture whose destructor calls
  // back (a TaskHandle cancelled from a destructor) finds a stale id instead of a half-dead slot.
  std::vector<Task> dead;
  for (std::uint32_t i = 0; i < slot_count_; ++i) {
    Slot& s = At(i);
    if (s.state != kFree) {
      s.state = kFree;
      ++s.generation;
      dead.push_back(std::move(s.fn));
    }
  }
  heap_.clear();
  live_queued_ = 0;
}

inline Scheduler::Slot& Scheduler::At(std::uint32_t index) const {
  return chunks_[index >> kChunkBits][index & (kChunkSize - 1)];
}

inline Scheduler::Slot* Scheduler::Lookup(std::uint64_t id) const {
  const std::uint32_t index = IndexOf(id);
  if (index >= slot_count_) {
    return nullptr;
  }
  Slot& s = At(index);
  return s.generation == GenerationOf(id) && s.state != kFree ? &s : nullptr;
}

std::uint64_t Scheduler::Allocate(Priority priority, TaskOrigin origin, Kind kind, Task** target) {
  std::uint32_t index;
  if (free_head_ != kNone) {
    index = free_head_;
    free_head_ = At(index).next_free;
  } else {
    if ((slot_count_ & (kChunkSize - 1)) == 0) {
      chunks_.push_back(std::make_unique<Slot[]>(kChunkSize));
    }
    index = slot_count_++;
  }
  Slot& s = At(index);
  s.priority = static_cast<std::uint8_t>(priority);
  s.origin = origin.id();
  s.kind = kind;
  s.state = kIdle;
  s.cancelled_in_run = false;
  s.requeue_after_run = false;
  s.interval = Duration::zero();
  *target = &s.fn;
  return MakeId(s.generation, index);
}

inline void Scheduler::Free(std::uint32_t index) {
  Slot& s = At(index);
  s.state = kFree;
  if (++s.generation == 0) {
    s.generation = 1;
  }
  // The callable's destructor may call back into the scheduler: the slot is already stale (its
  // id no longer matches) and not yet reusable (not on the free list), so nothing can reach it.
  s.fn = nullptr;
  s.next_free = free_head_;
  free_head_ = index;
}

inline void Scheduler::Enqueue(std::uint64_t id, Slot& slot) {
  slot.state = kQueued;
  queues_[slot.priority]->Push(id);
  ++live_queued_;
}

void Scheduler::Notify() {
  if (!in_step_ && wake_listener_) {
    wake_listener_();
  }
}

std::uint64_t Scheduler::QueueNew(std::uint64_t id) {
  Enqueue(id, At(IndexOf(id)));
  if (live_queued_ == 1) [[unlikely]] {
    Notify();
  }
  return id;
}

std::uint64_t Scheduler::ArmNew(std::uint64_t id, Duration delay) {
  const TimePoint deadline = Now() + std::max(delay, Duration::zero());
  Arm(IndexOf(id), deadline);
  if (live_queued_ == 0 && heap_[0] == IndexOf(id)) {
    Notify();
  }
  return id;
}

std::uint64_t Scheduler::EveryNew(std::uint64_t id, Duration interval) {
  Slot& s = At(IndexOf(id));
  s.interval = std::max(interval, Duration::zero());
  if (s.interval == Duration::zero()) {
    return QueueNew(id);
  }
  Duration first = s.interval;
  if (options_.stagger_recurring) {
    // A low-discrepancy sequence (golden ratio) spreads successive jobs over (0, interval).
    double fraction = std::fmod(static_cast<double>(++stagger_count_) * 0.6180339887498949, 1.0);
    if (fraction <= 0.0) {
      fraction = 0.5;
    }
    first = std::max(
        Duration(1),
        Duration(static_cast<std::int64_t>(static_cast<double>(s.interval.count()) * fraction)));
  }
  Arm(IndexOf(id), Now() + first);
  if (live_queued_ == 0 && heap_[0] == IndexOf(id)) {
    Notify();
  }
  return id;
}

bool Scheduler::QueueEntry(std::uint64_t id) {
  Slot* s = Lookup(id);
  if (s == nullptr || s->kind != kEntry) {
    return false;
  }
  if (s->state == kRunning) {
    if (s->requeue_after_run || s->cancelled_in_run) {
      return false;
    }
    s->requeue_after_run = true;
    return true;
  }
  if (s->state != kIdle) {
    return false;
  }
  Enqueue(id, *s);
  if (live_queued_ == 1) {
    Notify();
  }
  return true;
}

void Scheduler::SetEntryPriority(std::uint64_t id, Priority priority) {
  if (Slot* s = Lookup(id)) {
    s->priority = static_cast<std::uint8_t>(priority);
  }
}

bool Scheduler::Cancel(std::uint64_t id) {
  Slot* s = Lookup(id);
  if (s == nullptr) {
    return false;
  }
  switch (s->state) {
    case kQueued:
      --live_queued_;  // the ring keeps a stale id, skipped when popped
      Free(IndexOf(id));
      return true;
    case kTimed:
      HeapRemove(IndexOf(id));
      Free(IndexOf(id));
      return true;
    case kIdle:
      Free(IndexOf(id));
      return true;
    case kRunning:
      if (s->cancelled_in_run || s->kind == kOneShot) {
        return false;  // a running one-shot has nothing left to cancel
      }
      s->cancelled_in_run = true;
      return true;
    default:
      return false;
  }
}

void Scheduler::CancelAll() {
  for (std::uint32_t i = 0; i < slot_count_; ++i) {
    const Slot& s = At(i);
    if (s.state != kFree) {
      Cancel(MakeId(s.generation, i));
    }
  }
  for (const std::unique_ptr<Scheduler>& p : phases_) {
    if (p) {
      p->CancelAll();
    }
  }
}

// --- Phases ---

namespace {
std::size_t PhaseSlot(Phase phase) { return phase == Phase::kPreTick ? 0 : 1; }  // in phases_
}  // namespace

Scheduler& Scheduler::ForPhase(Phase phase) {
  if (phase == Phase::kTick) {
    return *this;
  }
  std::unique_ptr<Scheduler>& slot = phases_[PhaseSlot(phase)];
  if (!slot) {
    SchedulerOptions o = options_;
    o.budget = BudgetPolicy{options_.budget.floor, std::nullopt};
    o.tick_period = Duration::zero();  // stepped by this one's steps, which are paced
    o.profile_tasks = profile_tasks_;
    slot = std::make_unique<Scheduler>(o);
    slot->phase_ = phase;
    slot->SetWakeListener([this] { Notify(); });
    slot->OnError().Connect([this](const TaskError& e) { on_error_.Fire(e); });
  }
  return *slot;
}

const Scheduler* Scheduler::FindPhase(Phase phase) const {
  return phase == Phase::kTick ? this : phases_[PhaseSlot(phase)].get();
}

void Scheduler::StepPhase(Phase phase) {
  Scheduler* s = phases_[PhaseSlot(phase)].get();
  if (s == nullptr) {
    return;
  }
  const std::optional<TimePoint> wake = s->NextWake();
  if (!wake || *wake > Now()) {
    return;  // idle, or its next task is not due yet
  }
  const std::uint64_t start = Ticks();
  s->Run(s->NextBudget());
  external_ += TicksToDuration(Ticks() - start);
}

bool Scheduler::Pending(std::uint64_t id) const {
  Slot* s = Lookup(id);
  if (s == nullptr) {
    return false;
  }
  return !(s->state == kRunning && (s->kind == kOneShot || s->cancelled_in_run));
}

// --- Deadline heap (indexed, so cancel is O(log n) and leaves no garbage) ---

bool Scheduler::HeapLess(std::uint32_t a, std::uint32_t b) const {
  const Slot& x = At(a);
  const Slot& y = At(b);
  return x.deadline < y.deadline || (x.deadline == y.deadline && x.seq < y.seq);
}

void Scheduler::HeapUp(std::size_t pos) {
  const std::uint32_t item = heap_[pos];
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (!HeapLess(item, heap_[parent])) {
      break;
    }
    heap_[pos] = heap_[parent];
    At(heap_[pos]).heap_pos = static_cast<std::uint32_t>(pos);
    pos = parent;
  }
  heap_[pos] = item;
  At(item).heap_pos = static_cast<std::uint32_t>(pos);
}

void Scheduler::HeapDown(std::size_t pos) {
  const std::uint32_t item = heap_[pos];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * pos + 1;
    if (child >= n) {
      break;
    }
    if (child + 1 < n && HeapLess(heap_[child + 1], heap_[child])) {
      ++child;
    }
    if (!HeapLess(heap_[child], item)) {
      break;
    }
    heap_[pos] = heap_[child];
    At(heap_[pos]).heap_pos = static_cast<std::uint32_t>(pos);
    pos = child;
  }
  heap_[pos] = item;
  At(item).heap_pos = static_cast<std::uint32_t>(pos);
}

void Scheduler::HeapPush(std::uint32_t index) {
  heap_.push_back(index);
  HeapUp(heap_.size() - 1);
}

void Scheduler::HeapRemove(std::uint32_t index) {
  const std::size_t pos = At(index).heap_pos;
  At(index).heap_pos = kNone;
  const std::uint32_t last = heap_.back();
  heap_.pop_back();
  if (pos < heap_.size()) {
    heap_[pos] = last;
    At(last).heap_pos = static_cast<std::uint32_t>(pos);
    HeapDown(pos);
    HeapUp(At(last).heap_pos);
  }
}

void Scheduler::Arm(std::uint32_t index, TimePoint deadline) {
  Slot& s = At(index);
  s.deadline = deadline;
  s.seq = next_seq_++;
  s.state = kTimed;
  HeapPush(index);
}

void Scheduler::PromoteDue(TimePoint now) {
  while (!heap_.empty() && At(heap_[0]).deadline <= now) {
    const std::uint32_t index = heap_[0];
    HeapRemove(index);
    Slot& s = At(index);
    Enqueue(MakeId(s.generation, index), s);
  }
}

// --- Steps ---

std::optional<TimePoint> Scheduler::NextWake() const {
  const TimePoint paced = last_step_start_ == TimePoint::min()
                              ? TimePoint::min()
                              : last_step_start_ + options_.tick_period;
  std::optional<TimePoint> wake;
  if (live_queued_ > 0) {
    wake = paced;
  } else if (!heap_.empty()) {
    wake = std::max(At(heap_[0]).deadline, paced);
  }
  for (const std::unique_ptr<Scheduler>& p : phases_) {
    if (const std::optional<TimePoint> w = p ? p->NextWake() : std::nullopt) {
      wake = std::min(wake.value_or(TimePoint::max()), std::max(*w, paced));
    }
  }
  return wake;
}

Duration Scheduler::NextBudget() const {
  const BudgetPolicy& policy = options_.budget;
  if (!policy.target) {
    return policy.floor;
  }
  return std::max(policy.floor, *policy.target - external_ - overhead_);
}

void Scheduler::Step() {
  StepPhase(Phase::kPreTick);
  Run(NextBudget());  // after pre_tick, whose time it subtracts when frame-aware
  StepPhase(Phase::kPostTick);
}

void Scheduler::Step(Duration budget) {
  StepPhase(Phase::kPreTick);
  Run(budget);
  StepPhase(Phase::kPostTick);
}

void Scheduler::ReportError(Slot& slot, std::exception_ptr error) {
  ++stats_.errors;
  const std::string message = ExceptionText(error);
  const std::string origin = OriginLabel(slot.origin);
  on_error_.Fire(TaskError{origin, message, phase_});
}

inline void Scheduler::Finish(std::uint64_t id, Slot& slot) {
  const std::uint32_t index = IndexOf(id);
  if (slot.cancelled_in_run) {
    Free(index);
    return;
  }
  switch (slot.kind) {
    case kOneShot:
      Free(index);
      return;
    case kRecurring:
      if (slot.interval == Duration::zero()) {
        Enqueue(id, slot);  // after this step's snapshot: runs next step
      } else {
        TimePoint next = slot.deadline + slot.interval;
        if (next <= last_step_start_) {
          next = last_step_start_ + slot.interval;  // fell behind: no burst of catch-up runs
        }
        Arm(index, next);
      }
      return;
    case kEntry:
      slot.state = kIdle;
      if (slot.requeue_after_run) {
        slot.requeue_after_run = false;
        Enqueue(id, slot);
      }
      return;
  }
}

void Scheduler::Run(Duration budget) {
  in_step_ = true;
  const std::uint64_t start = Ticks();
  const TimePoint now = Now();
  last_step_start_ = now;
  PromoteDue(now);

  const auto budget_ticks =
      static_cast<std::uint64_t>(std::max<double>(0.0, ToSeconds(budget) * ticks_per_second_));
  std::array<std::size_t, kPriorityCount> left;
  for (int p = 0; p < kPriorityCount; ++p) {
    left[p] = queues_[p]->size();  // work queued during this step waits for the next
  }
  const bool profile = profile_tasks_;
  std::uint64_t tasks_start = Ticks();
  std::uint64_t last = tasks_start;  // the latest clock reading
  std::uint64_t ran = 0;
  // Without the profiler, the clock is read after every task unless the tasks since the last
  // reading averaged under 1/256 of the budget; then up to 7 more run before the next reading, so
  // a long run of tiny tasks overshoots the budget by at most 7 tiny tasks.
  int skip = 0;
  std::uint64_t unread = 0;

  auto drain = [&](int p, bool budgeted) {
    Ring& q = *queues_[p];
    std::size_t& n = left[p];
    while (n > 0) {
      if (budgeted && last - tasks_start >= budget_ticks) {
        return false;
      }
      --n;
      const std::uint64_t id = q.Pop();
      Slot& s = At(IndexOf(id));
      if (s.generation != GenerationOf(id) || s.state != kQueued) {
        continue;  // cancelled while queued
      }
      --live_queued_;
      s.state = kRunning;
      try {
        s.fn();
      } catch (...) {
        ReportError(s, std::current_exception());
      }
      ++ran;
      if (profile) {
        const std::uint64_t end = Ticks();
        const std::uint64_t spent = end - last;
        if (s.origin >= profile_.size()) {
          profile_.resize(s.origin + 1);
        }
        OriginStats& o = profile_[s.origin];
        o.ticks += spent;
        ++o.calls;
        o.max_ticks = std::max(o.max_ticks, spent);
        last = end;
      } else if (budgeted) {
        if (skip > 0) {
          --skip;
          ++unread;
        } else {
          const std::uint64_t end = Ticks();
          skip = (end - last) / (unread + 1) * 256 < budget_ticks ? 7 : 0;
          unread = 0;
          last = end;
        }
      }
      Finish(id, s);
    }
    return true;
  };

  drain(static_cast<int>(Priority::kKernel), false);  // always runs, whatever the budget
  if (!profile) {
    last = Ticks();
  }
  const bool drained = drain(static_cast<int>(Priority::kHigh), true) &&
                       drain(static_cast<int>(Priority::kNormal), true) &&
                       drain(static_cast<int>(Priority::kLow), true);
  if (drained) {
    drain(static_cast<int>(Priority::kBackground), true);  // spare budget only
  }
  const std::uint64_t tasks_end = Ticks();

  std::uint64_t deferred = 0;
  for (int p = 1; p < kPriorityCount; ++p) {
    for (std::size_t i = 0; i < left[p]; ++i) {
      const std::uint64_t id = queues_[p]->At(i);
      const Slot& s = At(IndexOf(id));
      deferred += s.generation == GenerationOf(id) && s.state == kQueued;
    }
  }

  const std::uint64_t total = Ticks() - start;
  overhead_ = (overhead_ * 7 + TicksToDuration(total - (tasks_end - tasks_start))) / 8;
  stats_.last_step = TicksToDuration(total);
  stats_.last_budget = budget;
  stats_.tasks_run += ran;
  stats_.tasks_deferred = deferred;
  stats_.steps_deferring += deferred != 0;
  stats_.tasks_deferred_total += deferred;
  stats_.step_time_max = std::max(stats_.step_time_max, stats_.last_step);
  ++stats_.steps;
  std::size_t bucket = 0;
  const std::int64_t step_ns = stats_.last_step.count();
  while (bucket < kStepTimeBounds.size() && step_ns > kStepTimeBounds[bucket]) {
    ++bucket;
  }
  ++stats_.step_times[bucket];
  stats_.step_time_total += stats_.last_step;
  external_ = Duration::zero();
  in_step_ = false;
}

// --- Profiler ---

Duration Scheduler::TicksToDuration(std::uint64_t ticks) const {
  return Duration(static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick_));
}

std::vector<TaskProfile> Scheduler::TopTasks(std::size_t n) const {
  std::vector<TaskProfile> out;
  for (std::size_t i = 0; i < profile_.size(); ++i) {
    const OriginStats& o = profile_[i];
    if (o.calls > 0) {
      out.push_back({OriginLabel(static_cast<std::uint32_t>(i)), TicksToDuration(o.ticks), o.calls,
                     TicksToDuration(o.max_ticks)});
    }
  }
  std::sort(out.begin(), out.end(), [](const TaskProfile& a, const TaskProfile& b) {
    return a.time != b.time ? a.time > b.time : a.key < b.key;
  });
  if (out.size() > n) {
    out.resize(n);
  }
  return out;
}

void Scheduler::ResetProfile() { profile_.clear(); }

std::vector<DeferredCount> Scheduler::TopDeferred(std::size_t n) const {
  std::unordered_map<std::uint32_t, std::uint64_t> counts;
  for (const auto& q : queues_) {
    for (std::size_t i = 0; i < q->size(); ++i) {
      const std::uint64_t id = q->At(i);
      const Slot& s = At(IndexOf(id));
      if (s.generation == GenerationOf(id) && s.state == kQueued) {
        ++counts[s.origin];
      }
    }
  }
  std::vector<DeferredCount> out;
  for (const auto& [origin, count] : counts) {
    out.push_back({OriginLabel(origin), count});
  }
  std::sort(out.begin(), out.end(), [](const DeferredCount& a, const DeferredCount& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  });
  if (out.size() > n) {
    out.resize(n);
  }
  return out;
}

}  // namespace molt::kernel

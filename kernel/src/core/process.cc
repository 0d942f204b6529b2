// SPDX-License-Identifier: Apache-2.0
// Process: the fiber, the state machine and its sharp edges, and the registry.
//
// Invariants:
//  - needs_step_: the body is parked and continues on the next step (set by Start, by a Yield,
//    and by the wake of a Sleep or Wait). Only a Running process queues its entry; Resume queues
//    it when needs_step_ is set. QueueEntry refuses a second queueing, so one chain only.
//  - A fiber is never destroyed unfinished: a kill resumes it once with unwinding_ set, and the
//    call it is parked in throws ProcessKilled (no forced unwinding through plugin C frames).
//  - self_ keeps a started process alive until it is terminal and its fiber has finished (or
//    was abandoned: its fiber then moves to AbandonedFibers, never destroyed).
#include "kernel/src/core/process.h"

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#endif

namespace molt::kernel {
namespace {

thread_local Process* t_current = nullptr;

// Tells AddressSanitizer about stack switches (Boost's fcontext fibers do not): without it ASan
// mistakes the fiber stacks for overflows of the thread stack. No-ops in other builds.
void StartSwitch(void** fake_stack, const void* bottom, std::size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
  (void)fake_stack, (void)bottom, (void)size;
#endif
}
void FinishSwitch(void* fake_stack, const void** old_bottom, std::size_t* old_size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_size);
#else
  (void)fake_stack, (void)old_bottom, (void)old_size;
#endif
}

struct Registry {
  std::mutex mu;
  std::uint64_t next_pid = 1;
  std::unordered_map<std::uint64_t, std::weak_ptr<Process>> live;

  static Registry& Get() {
    static Registry* r = new Registry();  // never destroyed: processes may outlive statics
    return *r;
  }
};

// Fibers whose bodies ignored their cancellation: destroying one would force-unwind it through
// code that already refused to stop (a plugin's C frames), so they are kept, reachable.
struct AbandonedFibers {
  std::mutex mu;
  std::vector<boost::context::fiber> fibers;

  static AbandonedFibers& Get() {
    static AbandonedFibers* a = new AbandonedFibers();  // never destroyed, like the fibers
    return *a;
  }
};

}  // namespace

bool Completion::Complete(Status status, std::string payload) {
  if (done_) {
    return false;
  }
  done_ = true;
  status_ = std::move(status);
  payload_ = std::move(payload);
  if (std::shared_ptr<Process> waiter = waiter_.lock()) {
    waiter_.reset();
    if (waiter->waiting_.get() == this) {
      waiter->Wake();
    }
  }
  return true;
}

std::string_view Process::StateName(State state) {
  switch (state) {
    case State::kCreated:
      return "Created";
    case State::kRunning:
      return "Running";
    case State::kSuspended:
      return "Suspended";
    case State::kCompleted:
      return "Completed";
    case State::kCrashed:
      return "Crashed";
    case State::kKilled:
      return "Killed";
  }
  return "?";
}

std::shared_ptr<Process> Process::Create(Scheduler& scheduler, Body body, ProcessOptions options) {
  Registry& r = Registry::Get();
  std::uint64_t pid;
  {
    std::lock_guard lock(r.mu);
    pid = r.next_pid++;
  }
  static const bool prepared = (ThrowTrace::Prepare(), true);
  (void)prepared;
  std::shared_ptr<Process> p(new Process(scheduler, std::move(body), std::move(options), pid));
  std::lock_guard lock(r.mu);
  r.live.emplace(pid, p);
  return p;
}

Process::Process(Scheduler& scheduler, Body body, ProcessOptions options, std::uint64_t pid)
    : scheduler_(scheduler),
      body_(std::move(body)),
      pid_(pid),
      name_(std::move(options.name)),
      named_(!name_.empty()),
      priority_(options.priority),
      stack_size_(FiberStack(options.stack_size).size()) {}

Process::~Process() {
  if (!exited_) {  // a Created process nobody started: collectable, and it leaves the registry
    Registry& r = Registry::Get();
    std::lock_guard lock(r.mu);
    r.live.erase(pid_);
  }
  if (entry_ != 0) {
    scheduler_.ReleaseEntry(entry_);
  }
}

Process* Process::Current() { return t_current; }

const std::string& Process::name() const {
  if (name_.empty()) {
    name_ = "Process_" + std::to_string(pid_);
  }
  return name_;
}

std::shared_ptr<Process> Process::Get(std::uint64_t pid) {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  auto it = r.live.find(pid);
  if (it == r.live.end()) {
    return nullptr;
  }
  std::shared_ptr<Process> p = it->second.lock();
  return p && !p->terminal() ? p : nullptr;
}

std::size_t Process::Count() {
  Registry& r = Registry::Get();
  std::lock_guard lock(r.mu);
  return r.live.size();
}

Status Process::Start() {
  if (state_ != State::kCreated) {
    return Status::FailedPrecondition("process " + name() + " already started");
  }
  fiber_ = boost::context::fiber(
      std::allocator_arg, FiberStack(stack_size_, &stack_), [this](boost::context::fiber&& caller) {
        FinishSwitch(nullptr, &caller_stack_bottom_, &caller_stack_size_);
        caller_ = std::move(caller);
        if (!unwinding_) {  // killed before its first step: the body never starts
          try {
            outcome_result_ = body_();
            outcome_ = State::kCompleted;
          } catch (const ProcessKilled&) {
            // Killed while parked: the body unwound; Kill recorded the outcome.
          } catch (const boost::context::detail::forced_unwind&) {
            throw;
          } catch (const std::exception& e) {
            outcome_ = State::kCrashed;
            outcome_result_ = std::string(e.what()) + "\n" + trace_.Format();
          } catch (...) {
            outcome_ = State::kCrashed;
            outcome_result_ = "unknown exception\n" + trace_.Format();
          }
        }
        body_done_ = true;
        StartSwitch(nullptr, caller_stack_bottom_, caller_stack_size_);  // this stack is done
        return std::move(caller_);
      });
  // Unnamed processes share one origin: one per PID would grow the origin table forever, and
  // "Process_412" in a profile tells nobody anything.
  static const TaskOrigin kUnnamed = TaskOrigin::Named("Process (unnamed)");
  origin_ = named_ ? TaskOrigin::Named("Process " + name_) : kUnnamed;
  note_ = {named_ ? name_.c_str() : nullptr, named_ ? name_.size() : 0, pid_, stack_size_};
  entry_ = scheduler_.CreateEntry([this] { Step(); }, priority_, origin_);
  state_ = State::kRunning;
  self_ = shared_from_this();
  needs_step_ = true;
  scheduler_.QueueEntry(entry_);
  return Status::Ok();
}

void Process::Suspend() {
  if (state_ == State::kRunning) {
    state_ = State::kSuspended;
  }
}

void Process::Resume() {
  if (state_ != State::kSuspended) {
    return;
  }
  state_ = State::kRunning;
  if (needs_step_) {
    scheduler_.QueueEntry(entry_);  // refused when the old step is still queued: one chain
  }
}

void Process::Wake() {
  if (terminal()) {
    return;
  }
  needs_step_ = true;
  if (state_ == State::kRunning) {
    scheduler_.QueueEntry(entry_);
  }
}

void Process::SwitchIn() {
  Process* previous = t_current;
  t_current = this;
  ThrowTrace* previous_trace = ThrowTrace::Arm(&trace_);
  SetRunningFiber(&stack_, &note_);
  in_body_ = true;
  void* fake_stack = nullptr;
  StartSwitch(&fake_stack, static_cast<char*>(stack_.sp) - stack_.size, stack_.size);
  fiber_ = std::move(fiber_).resume();
  FinishSwitch(fake_stack, nullptr, nullptr);
  in_body_ = false;
  if (abandoned_ && fiber_) {
    AbandonedFibers& a = AbandonedFibers::Get();
    std::lock_guard lock(a.mu);
    a.fibers.push_back(std::move(fiber_));
#if defined(__SANITIZE_ADDRESS__)
    // What its frames still own is reachable from them: LeakSanitizer scans the stack too.
    __lsan_register_root_region(static_cast<char*>(stack_.sp) - stack_.size, stack_.size);
#endif
  }
  t_current = previous;
  ThrowTrace::Arm(previous_trace);
  if (previous != nullptr) {
    SetRunningFiber(&previous->stack_, &previous->note_);
  } else {
    SetRunningFiber(nullptr, nullptr);
  }
}

void Process::SwitchOut(Park why) {
  park_ = why;
  void* fake_stack = nullptr;
  StartSwitch(&fake_stack, caller_stack_bottom_, caller_stack_size_);
  caller_ = std::move(caller_).resume();
  FinishSwitch(fake_stack, &caller_stack_bottom_, &caller_stack_size_);
  park_ = Park::kNone;
  if (unwinding_) {
    Unwind();
  }
}

void Process::Unwind() {
  if (told_) {
    Abandon();
  }
  told_ = true;
  throw ProcessKilled{};
}

void Process::Abandon() {
  abandoned_ = true;
  park_ = Park::kNone;
  // Switches out for good: a null fake stack tells ASan this stack's frames are done.
  StartSwitch(nullptr, caller_stack_bottom_, caller_stack_size_);
  caller_ = std::move(caller_).resume();
  std::abort();  // never resumed
}

void Process::Step() {
  if (state_ != State::kRunning || !needs_step_ || !fiber_) {
    return;  // a step queued before a Suspend drains without resuming the body
  }
  needs_step_ = false;
  SwitchIn();
  if (body_done_ || abandoned_) {
    Finish();  // may destroy this: nothing after it touches a member
    return;
  }
  if (park_ == Park::kYield) {
    needs_step_ = true;
    if (state_ == State::kRunning) {
      scheduler_.QueueEntry(entry_);  // a later step: at most one slice per step
    }
  }
  // kSleep: the deadline wakes it. kWait: the completion wakes it.
}

void Process::Finish() {
  std::shared_ptr<Process> keep = std::move(self_);  // the fiber is done: last use of its stack
  if (!exited_) {
    Exit(outcome_.value_or(State::kCompleted), std::move(outcome_result_));
  }
}

void Process::Exit(State state, std::string result) {
  if (exited_) {
    return;
  }
  exited_ = true;
  state_ = state;
  result_ = std::move(result);
  sleep_.Cancel();
  sleep_ = TaskHandle();
  if (waiting_) {
    waiting_->waiter_.reset();
    waiting_.reset();
  }
  {
    Registry& r = Registry::Get();
    std::lock_guard lock(r.mu);
    r.live.erase(pid_);
  }
  if (entry_ != 0) {
    scheduler_.ReleaseEntry(entry_);
    entry_ = 0;
  }
  std::shared_ptr<Process> keep = self_;  // OnExit handlers may drop the last outside reference
  on_exit_.Fire(state_, result_);
  if (!in_body_ && (body_done_ || !fiber_)) {
    self_.reset();
  }
}

void Process::Kill(std::string reason) {
  if (terminal()) {
    return;
  }
  std::shared_ptr<Process> keep = shared_from_this();
  unwinding_ = true;
  if (!fiber_ || in_body_) {
    // Never started, or killed from inside its own body: it ends now; a running body unwinds at
    // its next Yield, Sleep or Wait, and a later return is ignored.
    Exit(State::kKilled, std::move(reason));
    return;
  }
  state_ = State::kKilled;  // no step may resume it now
  sleep_.Cancel();
  if (waiting_) {
    waiting_->waiter_.reset();
    waiting_.reset();
  }
  SwitchIn();  // the call it is parked in throws ProcessKilled: destructors run, then it returns
  if (abandoned_) {
    reason += "; its body ignored the cancellation and was abandoned (never resumed)";
  }
  Exit(State::kKilled, std::move(reason));
  if (body_done_ || abandoned_) {
    self_.reset();
  }
}

void Process::Yield() {
  Process* p = t_current;
  if (p == nullptr) {
    throw std::logic_error("Process::Yield must be called inside a process");
  }
  if (p->unwinding_) {
    p->Unwind();
  }
  p->SwitchOut(Park::kYield);
}

void Process::Sleep(Duration delay) {
  Process* p = t_current;
  if (p == nullptr) {
    throw std::logic_error("Process::Sleep must be called inside a process");
  }
  if (p->unwinding_) {
    p->Unwind();
  }
  p->sleep_ = p->scheduler_.After(
      std::max(delay, Duration::zero()),
      [p] {
        p->sleep_ = TaskHandle();
        p->Wake();
      },
      p->priority_, p->origin_);
  p->SwitchOut(Park::kSleep);
}

const Completion& Process::Wait(const std::shared_ptr<Completion>& completion) {
  Process* p = t_current;
  if (p == nullptr) {
    throw std::logic_error("Process::Wait must be called inside a process");
  }
  if (p->unwinding_) {
    p->Unwind();
  }
  if (!completion->done()) {
    completion->waiter_ = p->weak_from_this();
    p->waiting_ = completion;
    p->SwitchOut(Park::kWait);
    p->waiting_.reset();
  }
  return *completion;
}

}  // namespace molt::kernel

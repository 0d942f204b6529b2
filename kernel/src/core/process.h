// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/process.h
//
// Process: a stackful fiber with a PID, a lifecycle and an exit signal, stepped by the Scheduler
// under the frame budget at its priority (spec: Processes). Use one for behaviour that runs across
// frames and that something may need to pause or kill: an escort NPC, a cutscene, a craft.
//
//   auto mover = Process::Create(scheduler, [&] {
//     while (!Arrived()) {
//       StepTowardsTarget();
//       Process::Yield();            // give the frame back; resume on a later step
//     }
//     Process::Sleep(Seconds(2));    // park on one scheduler deadline
//     return std::string("arrived");  // Completed, with this result
//   }, {.name = "Mover", .priority = Priority::kLow});
//   mover->OnExit().Connect([](Process::State s, const std::string& result) { ... });
//   mover->Start();
//   mover->Suspend(); mover->Resume(); mover->Kill("arena closed");
//
// States: Created -> Running <-> Suspended; Running ends Completed (returned), Crashed (threw:
// the result is the message and the stack at the throw point) or Killed (Kill: the result is the
// reason, "killed" by default). Terminal processes leave the registry; Suspend, Resume and Kill do
// nothing on them. OnExit fires exactly once.
//
// Inside the body: Yield() resumes on a later step; Sleep(delay) parks on one deadline (no
// queue traffic meanwhile); Wait(completion) parks until the kernel completes an operation (the
// spec's engine wait). All three resume through a scheduler step, so the body always runs under
// the budget and in the profile ("Process <Name>"). When the process is killed while parked, the
// call throws ProcessKilled instead of returning: code after it never runs, destructors do.
// Do not swallow ProcessKilled (it is not a std::exception; a catch (...) must rethrow it).
// A body that ignores it and parks again is *abandoned*: it switches out for good, the process
// ends Killed at once (abandoned() is true, the result says so), and its fiber and stack are
// kept, never resumed nor unwound, so nothing it points into (a plugin's library) may be
// unloaded. This keeps a hostile body from holding the kernel thread in Kill forever.
//
// Each process has one step closure and one reusable scheduler entry: a step allocates nothing.
// Stacks are guarded and pooled (fiber_stack.h); a stack overflow stops the host with a message
// naming the process, never silently.
//
// Thread safety: REQUIRES the thread that runs the scheduler.
#ifndef MOLT_KERNEL_CORE_PROCESS_H_
#define MOLT_KERNEL_CORE_PROCESS_H_

#include <molt/kernel/status.h>

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/fiber_stack.h"
#include "kernel/src/core/scheduler.h"
#include "kernel/src/core/signal.h"
#include "kernel/src/core/throw_trace.h"

namespace molt::kernel {

class Process;

// Thrown inside a killed process by Yield, Sleep and Wait; caught by the process itself.
struct ProcessKilled {};

// An operation the kernel completes later (a profile load, a request, a timer): a process may
// Wait() on it. Complete() once; later calls are ignored.
class Completion {
 public:
  static std::shared_ptr<Completion> Create() { return std::make_shared<Completion>(); }

  // Completes with `status` and `payload`, waking the process that waits. False when already
  // complete.
  bool Complete(Status status, std::string payload = {});
  bool done() const { return done_; }
  const Status& status() const { return status_; }
  const std::string& payload() const { return payload_; }

 private:
  friend class Process;
  bool done_ = false;
  Status status_;
  std::string payload_;
  std::weak_ptr<Process> waiter_;
};

struct ProcessOptions {
  std::string name{};                     // default "Process_<pid>"
  Priority priority = Priority::kNormal;  // for every step and the sleep deadline
  std::size_t stack_size = kDefaultProcessStack;
};

class Process : public std::enable_shared_from_this<Process> {
 public:
  enum class State { kCreated, kRunning, kSuspended, kCompleted, kCrashed, kKilled };
  // The body returns the process's result.
  using Body = Callback<std::string()>;

  // A Created process bound to `scheduler`, registered under a fresh PID (never reused).
  static std::shared_ptr<Process> Create(Scheduler& scheduler, Body body,
                                         ProcessOptions options = {});
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  // Created -> Running, queueing the first step. Otherwise `process <Name> already started`.
  Status Start();
  // Running -> Suspended: no more steps; a step already queued drains without resuming.
  void Suspend();
  // Suspended -> Running: queues a step if the body is ready for one (never a second chain).
  void Resume();
  // Any live state -> Killed with `reason` ("killed" by default). Cancels a sleep or a wait; a
  // parked body unwinds now (ProcessKilled). From inside the body, the process ends at once and
  // unwinds at its next Yield, Sleep or Wait; a later return never overwrites Killed.
  void Kill(std::string reason = "killed");

  std::uint64_t pid() const { return pid_; }
  // The name given, or "Process_<pid>".
  const std::string& name() const;
  State state() const { return state_; }
  Priority priority() const { return priority_; }
  std::size_t stack_size() const { return stack_size_; }
  // The return value (Completed), the error and trace (Crashed) or the kill reason (Killed).
  const std::string& result() const { return result_; }
  bool terminal() const { return state_ >= State::kCompleted; }
  // True when its body ignored its cancellation and was abandoned (see above).
  bool abandoned() const { return abandoned_; }
  // Fired once with (final state, result).
  Signal<State, const std::string&>& OnExit() { return on_exit_; }

  // --- Inside a process ---

  // The process whose body is running on this thread, or nullptr.
  static Process* Current();
  // Resumes on a later scheduler step. Throws std::logic_error outside a process.
  static void Yield();
  // Parks until `delay` from now (a negative one is none): one scheduler deadline, no steps
  // meanwhile. Throws std::logic_error outside a process. (A plugin's seconds are checked where
  // they cross the ABI: abi/bridge.h, SecondsArg.)
  static void Sleep(Duration delay);
  // Parks until `completion` completes (at once if it is complete) and returns it.
  static const Completion& Wait(const std::shared_ptr<Completion>& completion);

  // --- Registry ---

  // A live (non-terminal) process by PID; nullptr otherwise. Never keeps a process alive.
  static std::shared_ptr<Process> Get(std::uint64_t pid);
  // Registered processes, created ones not yet collected included.
  static std::size_t Count();

  static std::string_view StateName(State state);

 private:
  friend class Completion;
  enum class Park { kNone, kYield, kSleep, kWait };

  Process(Scheduler& scheduler, Body body, ProcessOptions options, std::uint64_t pid);
  void Step();
  void SwitchIn();
  void SwitchOut(Park why);
  void Wake();
  void Finish();
  void Exit(State state, std::string result);
  // The body was killed and parks: throws ProcessKilled the first time, abandons it after.
  [[noreturn]] void Unwind();
  [[noreturn]] void Abandon();

  Scheduler& scheduler_;
  Body body_;
  std::uint64_t pid_;
  mutable std::string name_;  // empty until asked for when unnamed
  bool named_;
  Priority priority_;
  std::size_t stack_size_;
  State state_ = State::kCreated;
  std::string result_;
  Signal<State, const std::string&> on_exit_;

  std::uint64_t entry_ = 0;  // the one reusable scheduler entry
  boost::context::fiber fiber_;
  boost::context::fiber caller_;
  boost::context::stack_context stack_{};
  FiberNote note_;
  ThrowTrace trace_;
  Park park_ = Park::kNone;
  bool needs_step_ = false;       // parked and ready to continue on the next step
  bool in_body_ = false;          // the fiber is running now
  bool unwinding_ = false;        // killed: the next Yield/Sleep/Wait throws ProcessKilled
  bool body_done_ = false;        // the fiber returned
  bool told_ = false;             // ProcessKilled was thrown into the body
  bool abandoned_ = false;        // it parked again after that: never resumed
  std::optional<State> outcome_;  // what the body ended with, applied after it switched out
  std::string outcome_result_;
  TaskHandle sleep_;
  std::shared_ptr<Completion> waiting_;
  std::shared_ptr<Process> self_;  // keeps a started, live process alive
  TaskOrigin origin_;    // "Process <Name>" (one shared "Process (unnamed)" for unnamed ones)
  bool exited_ = false;  // OnExit fired
  // AddressSanitizer's view of the stack switches (unused without ASan).
  const void* caller_stack_bottom_ = nullptr;
  std::size_t caller_stack_size_ = 0;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_PROCESS_H_

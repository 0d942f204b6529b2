// SPDX-License-Identifier: Apache-2.0
// Processes on a ManualClock scheduler: every row of the spec's tables and every sharp edge.
#include "kernel/src/core/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"

namespace molt::kernel {
namespace {

using std::chrono::milliseconds;

class ProcessTest : public ::testing::Test {
 protected:
  ProcessTest() : scheduler_(Options()) {}
  SchedulerOptions Options() {
    SchedulerOptions o;
    o.clock = &clock_;
    o.budget = {std::chrono::seconds(1), std::nullopt};
    return o;
  }
  std::shared_ptr<Process> Make(Process::Body body, ProcessOptions options = {}) {
    auto p = Process::Create(scheduler_, std::move(body), std::move(options));
    p->OnExit().Connect([this](Process::State s, const std::string& r) {
      exits_.push_back(std::string(Process::StateName(s)) + ":" + r);
    });
    return p;
  }
  void Step(int n = 1) {
    for (int i = 0; i < n; ++i) {
      scheduler_.Step();
    }
  }

  ManualClock clock_;
  Scheduler scheduler_;
  std::vector<std::string> exits_;
};

TEST_F(ProcessTest, StartQueuesOneStepAndTheBodyCompletesWithItsResult) {
  int ran = 0;
  auto p = Make([&] {
    ++ran;
    return std::string("arrived");
  });
  EXPECT_EQ(p->state(), Process::State::kCreated);
  EXPECT_EQ(Process::Get(p->pid()), p);
  ASSERT_TRUE(p->Start().ok());
  EXPECT_EQ(p->state(), Process::State::kRunning);
  EXPECT_EQ(ran, 0);
  Step();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(p->state(), Process::State::kCompleted);
  EXPECT_EQ(p->result(), "arrived");
  EXPECT_EQ(exits_, std::vector<std::string>{"Completed:arrived"});
  EXPECT_EQ(Process::Get(p->pid()), nullptr);  // terminal processes leave the registry
  Step(3);
  EXPECT_EQ(exits_.size(), 1u);  // exactly once
}

TEST_F(ProcessTest, DefaultsAreProcessPidAndNormalPriority) {
  auto p = Make([] { return std::string(); });
  EXPECT_EQ(p->name(), "Process_" + std::to_string(p->pid()));
  EXPECT_EQ(p->priority(), Priority::kNormal);
  EXPECT_EQ(p->stack_size(), kDefaultProcessStack);
}

TEST_F(ProcessTest, StartingTwiceErrorsWithTheSpecText) {
  auto p = Make([] { return std::string(); }, {.name = "Mover"});
  ASSERT_TRUE(p->Start().ok());
  EXPECT_EQ(p->Start().message(), "process Mover already started");
  Step();
  EXPECT_EQ(p->Start().message(), "process Mover already started");
}

TEST_F(ProcessTest, YieldResumesOnALaterStepOneSlicePerStep) {
  std::vector<int> slices;
  auto p = Make([&] {
    for (int i = 0; i < 3; ++i) {
      slices.push_back(i);
      Process::Yield();
    }
    return std::string("done");
  });
  ASSERT_TRUE(p->Start().ok());
  for (int step = 1; step <= 3; ++step) {
    Step();
    EXPECT_EQ(slices.size(), static_cast<std::size_t>(step));
    EXPECT_EQ(p->state(), Process::State::kRunning);
  }
  Step();
  EXPECT_EQ(p->state(), Process::State::kCompleted);
}

TEST_F(ProcessTest, ProcessesShareTheStepBudgetAtTheirPriority) {
  SchedulerOptions o = Options();
  o.budget = {milliseconds(2), std::nullopt};
  Scheduler tight(o);
  std::vector<std::string> order;
  std::vector<std::shared_ptr<Process>> procs;
  for (int i = 0; i < 4; ++i) {
    procs.push_back(Process::Create(tight,
                                    [&, i] {
                                      for (;;) {
                                        order.push_back("p" + std::to_string(i));
                                        clock_.Advance(milliseconds(1));
                                        Process::Yield();
                                      }
                                      return std::string();
                                    },
                                    {.priority = Priority::kLow}));
    ASSERT_TRUE(procs.back()->Start().ok());
  }
  tight.Schedule([&] { order.push_back("normal"); });
  tight.Step();  // the normal task first, then two 1 ms slices fill the 2 ms budget
  EXPECT_EQ(order, (std::vector<std::string>{"normal", "p0", "p1"}));
  tight.Step();
  EXPECT_EQ(order, (std::vector<std::string>{"normal", "p0", "p1", "p2", "p3"}));
  for (auto& p : procs) {
    p->Kill();
  }
}

TEST_F(ProcessTest, SleepParksOnOneDeadlineWithNoQueueTraffic) {
  std::vector<std::string> log;
  auto p = Make([&] {
    log.push_back("before");
    Process::Sleep(std::chrono::seconds(1));
    log.push_back("after");
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  EXPECT_EQ(log, std::vector<std::string>{"before"});
  EXPECT_EQ(scheduler_.pending(), 1u);  // one heap entry, nothing queued
  ASSERT_TRUE(scheduler_.NextWake().has_value());
  EXPECT_EQ(*scheduler_.NextWake(), clock_.Now() + std::chrono::seconds(1));
  const auto runs = scheduler_.stats().tasks_run;
  clock_.Advance(milliseconds(999));
  Step(5);
  EXPECT_EQ(scheduler_.stats().tasks_run, runs);  // nothing ran while it slept
  clock_.Advance(milliseconds(1));
  Step(2);  // the deadline queues a step; the step resumes the body
  EXPECT_EQ(log, (std::vector<std::string>{"before", "after"}));
  EXPECT_EQ(p->state(), Process::State::kCompleted);
}

TEST_F(ProcessTest, SleepAndYieldRefuseBadUse) {
  try {
    Process::Sleep(std::chrono::seconds(1));
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "Process::Sleep must be called inside a process");
  }
  EXPECT_THROW(Process::Yield(), std::logic_error);
  EXPECT_THROW(Process::Wait(Completion::Create()), std::logic_error);
}

TEST_F(ProcessTest, SuspendKeepsTheQueuedStepWhichDrainsWithoutResuming) {
  int slices = 0;
  auto p = Make([&] {
    for (;;) {
      ++slices;
      Process::Yield();
    }
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  p->Suspend();
  EXPECT_EQ(p->state(), Process::State::kSuspended);
  Step(3);
  EXPECT_EQ(slices, 0);
  p->Resume();
  Step(3);
  EXPECT_EQ(slices, 3);
  p->Kill();
}

TEST_F(ProcessTest, SuspendAndResumeBeforeTheOldStepDrainsNeverStartTwoChains) {
  int slices = 0;
  auto p = Make([&] {
    for (;;) {
      ++slices;
      Process::Yield();
    }
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Suspend();
  p->Resume();  // the old step is still queued: no second one
  p->Suspend();
  p->Resume();
  Step(4);
  EXPECT_EQ(slices, 5);  // one slice per step, never two
  p->Kill();
}

TEST_F(ProcessTest, SuspendDuringASleepDefersTheWakeToResume) {
  bool woke = false;
  auto p = Make([&] {
    Process::Sleep(std::chrono::seconds(1));
    woke = true;
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Suspend();
  clock_.Advance(std::chrono::seconds(2));
  Step(3);  // the deadline fires but queues nothing
  EXPECT_FALSE(woke);
  p->Resume();  // resume queues the step
  Step();
  EXPECT_TRUE(woke);
}

TEST_F(ProcessTest, ResumeDuringASleepQueuesNothingTheDeadlineDoes) {
  int slices = 0;
  auto p = Make([&] {
    for (;;) {
      ++slices;
      Process::Sleep(std::chrono::seconds(1));
    }
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Suspend();
  p->Resume();
  Step(3);
  EXPECT_EQ(slices, 1);  // still asleep
  clock_.Advance(std::chrono::seconds(1));
  Step(2);
  EXPECT_EQ(slices, 2);
  p->Kill();
}

TEST_F(ProcessTest, WaitParksUntilTheKernelCompletesTheOperation) {
  auto load = Completion::Create();
  std::string got;
  auto p = Make([&] {
    const Completion& c = Process::Wait(load);
    got = c.status().ok() ? c.payload() : c.status().message();
    const Completion& again = Process::Wait(load);  // complete already: returns at once
    return std::string(again.payload());
  });
  ASSERT_TRUE(p->Start().ok());
  Step(3);
  EXPECT_EQ(p->state(), Process::State::kRunning);
  EXPECT_EQ(scheduler_.pending(), 0u);  // a waiting process costs nothing per step
  EXPECT_TRUE(load->Complete(Status::Ok(), "profile bytes"));
  EXPECT_FALSE(load->Complete(Status::Ok(), "again"));
  Step();
  EXPECT_EQ(got, "profile bytes");
  EXPECT_EQ(p->state(), Process::State::kCompleted);
  EXPECT_EQ(p->result(), "profile bytes");
}

TEST_F(ProcessTest, SuspendDuringAWaitParksTheWakeUntilResume) {
  auto op = Completion::Create();
  int resumed = 0;
  auto p = Make([&] {
    Process::Wait(op);
    ++resumed;
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Suspend();
  op->Complete(Status::Ok());
  Step(2);
  EXPECT_EQ(resumed, 0);
  p->Resume();
  Step();
  EXPECT_EQ(resumed, 1);
}

TEST_F(ProcessTest, ResumeDuringAWaitNeverResumesTheBodyTwice) {
  auto op = Completion::Create();
  int after_wait = 0;
  auto p = Make([&] {
    Process::Wait(op);
    ++after_wait;
    Process::Sleep(std::chrono::seconds(100));
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Suspend();
  p->Resume();  // queues nothing: the body waits
  Step(2);
  EXPECT_EQ(after_wait, 0);
  op->Complete(Status::Ok());
  Step(3);
  EXPECT_EQ(after_wait, 1);
  p->Kill();
}

struct Guard {
  std::vector<std::string>* log;
  ~Guard() { log->push_back("destructor ran"); }
};

TEST_F(ProcessTest, KillDuringASleepCancelsItAndCodeAfterNeverRuns) {
  std::vector<std::string> log;
  auto p = Make([&] {
    Guard g{&log};
    Process::Sleep(std::chrono::seconds(10));
    log.push_back("after sleep");
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Kill("guard dismissed");
  EXPECT_EQ(log, std::vector<std::string>{"destructor ran"});
  EXPECT_EQ(p->state(), Process::State::kKilled);
  EXPECT_EQ(p->result(), "guard dismissed");
  EXPECT_EQ(exits_, std::vector<std::string>{"Killed:guard dismissed"});
  EXPECT_EQ(scheduler_.pending(), 0u);  // the deadline is gone
  clock_.Advance(std::chrono::seconds(20));
  Step(2);
  EXPECT_EQ(log.size(), 1u);
}

TEST_F(ProcessTest, KillDuringAWaitDropsTheResumeAndCodeAfterNeverRuns) {
  auto op = Completion::Create();
  std::vector<std::string> log;
  auto p = Make([&] {
    Guard g{&log};
    Process::Wait(op);
    log.push_back("after wait");
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Kill();
  EXPECT_EQ(p->result(), "killed");
  op->Complete(Status::Ok());  // late completion: harmless
  Step(2);
  EXPECT_EQ(log, std::vector<std::string>{"destructor ran"});
}

TEST_F(ProcessTest, KillFromInsideTheBodyEndsItAtOnceAndAReturnNeverOverwritesKilled) {
  std::vector<std::string> log;
  std::shared_ptr<Process> p;
  p = Make([&] {
    p->Kill("self");
    log.push_back(std::string(Process::StateName(p->state())));
    return std::string("returned anyway");
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  EXPECT_EQ(log, std::vector<std::string>{"Killed"});  // at once
  EXPECT_EQ(p->state(), Process::State::kKilled);
  EXPECT_EQ(p->result(), "self");
  EXPECT_EQ(exits_, std::vector<std::string>{"Killed:self"});  // once
}

TEST_F(ProcessTest, KillFromInsideUnwindsAtTheNextYield) {
  std::vector<std::string> log;
  std::shared_ptr<Process> p;
  p = Make([&] {
    Guard g{&log};
    p->Kill();
    log.push_back("still running this slice");
    Process::Yield();
    log.push_back("never");
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step(3);
  EXPECT_EQ(log, (std::vector<std::string>{"still running this slice", "destructor ran"}));
  EXPECT_EQ(exits_.size(), 1u);
}

// A body that swallows ProcessKilled and parks again would hold Kill (and the kernel thread)
// forever: it is abandoned instead, never resumed, and the process ends Killed saying so.
TEST_F(ProcessTest, ABodyThatIgnoresItsKillIsAbandonedAndKillReturns) {
  std::vector<std::string> log;
  auto p = Make([&] {
    for (int i = 0; i < 3; ++i) {
      try {
        Process::Sleep(std::chrono::seconds(10));
      } catch (const ProcessKilled&) {
        log.push_back("told");  // and ignores it: the next Sleep parks for good
      }
    }
    log.push_back("returned");
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Kill("arena closed");
  EXPECT_EQ(log, std::vector<std::string>{"told"});
  EXPECT_TRUE(p->abandoned());
  EXPECT_EQ(p->state(), Process::State::kKilled);
  EXPECT_EQ(p->result(),
            "arena closed; its body ignored the cancellation and was abandoned (never resumed)");
  EXPECT_EQ(exits_.size(), 1u);
  clock_.Advance(std::chrono::seconds(20));
  Step(3);
  EXPECT_EQ(log, std::vector<std::string>{"told"});
  EXPECT_EQ(Process::Get(p->pid()), nullptr);
}

TEST_F(ProcessTest, AWellBehavedBodyIsNeverAbandoned) {
  auto p = Make([&] {
    try {
      Process::Yield();
    } catch (const ProcessKilled&) {
      throw;
    }
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Kill();
  EXPECT_FALSE(p->abandoned());
  EXPECT_EQ(p->result(), "killed");
}

TEST_F(ProcessTest, TerminalAndCreatedProcessesHandleControlCallsQuietly) {
  int ran = 0;
  auto created = Make([&] {
    ++ran;
    return std::string();
  });
  created->Kill();  // a Created process is killed without ever running
  EXPECT_EQ(created->state(), Process::State::kKilled);
  EXPECT_FALSE(created->Start().ok());
  Step();
  EXPECT_EQ(ran, 0);
  created->Suspend();
  created->Resume();
  created->Kill("again");
  EXPECT_EQ(created->state(), Process::State::kKilled);
  EXPECT_EQ(created->result(), "killed");
  EXPECT_EQ(exits_.size(), 1u);
}

[[gnu::noinline]] void ExplodeDeepInside(int depth) {
  if (depth == 0) {
    throw std::runtime_error("kaboom");
  }
  ExplodeDeepInside(depth - 1);
  std::printf("%d", depth);  // not a tail call
}

TEST_F(ProcessTest, CrashBecomesStateWithTheMessageAndTheStackAtTheThrow) {
  int scheduler_errors = 0;
  scheduler_.OnError().Connect([&](const TaskError&) { ++scheduler_errors; });
  auto p = Make(
      [] {
        ExplodeDeepInside(6);
        return std::string();
      },
      {.name = "Doomed"});
  ASSERT_TRUE(p->Start().ok());
  Step();
  EXPECT_EQ(p->state(), Process::State::kCrashed);
  EXPECT_EQ(scheduler_errors, 0);  // a crash never reaches OnError: it becomes state
  const std::string& r = p->result();
  EXPECT_EQ(r.rfind("kaboom\n", 0), 0u) << r;
  // Frames from the throw point: at least the seven nested ExplodeDeepInside calls.
  std::regex frame(R"(  #\d+ 0x[0-9a-f]+)");
  const auto frames =
      std::distance(std::sregex_iterator(r.begin(), r.end(), frame), std::sregex_iterator());
  EXPECT_GE(frames, 7) << r;
  // One of the first frames lies inside ExplodeDeepInside (the throw site).
  const auto fn = reinterpret_cast<std::uintptr_t>(&ExplodeDeepInside);
  bool in_thrower = false;
  const std::regex hex(R"(0x([0-9a-f]+))");
  for (auto it = std::sregex_iterator(r.begin(), r.end(), hex); it != std::sregex_iterator();
       ++it) {
    const auto addr = std::strtoull((*it)[1].str().c_str(), nullptr, 16);
    in_thrower = in_thrower || (addr >= fn && addr < fn + 256);
  }
  EXPECT_TRUE(in_thrower) << r;
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].rfind("Crashed:kaboom", 0), 0u);
}

TEST_F(ProcessTest, ASuspendedProcessKeepsItsStack) {
  std::vector<int> seen;
  auto p = Make([&] {
    int local[64];
    for (int i = 0; i < 64; ++i) {
      local[i] = i * i;
    }
    Process::Yield();
    seen.assign(local, local + 64);
    return std::string();
  });
  ASSERT_TRUE(p->Start().ok());
  Step();
  p->Suspend();
  Step(10);
  p->Resume();
  Step();
  ASSERT_EQ(seen.size(), 64u);
  EXPECT_EQ(seen[63], 63 * 63);
}

TEST_F(ProcessTest, RegistryNeverReusesPidsAndForgetsCollectedProcesses) {
  const std::size_t before = Process::Count();
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto p = Make([] { return std::string(); });
    EXPECT_GT(p->pid(), last);
    last = p->pid();
    EXPECT_EQ(Process::Count(), before + 1);  // created, not yet collected
  }
  EXPECT_EQ(Process::Count(), before);  // dropped Created processes are collectable
  auto live = Make([] {
    Process::Yield();
    return std::string();
  });
  ASSERT_TRUE(live->Start().ok());
  const std::uint64_t pid = live->pid();
  std::weak_ptr<Process> weak = live;
  live.reset();  // the registry does not keep it alive; running does
  ASSERT_NE(Process::Get(pid), nullptr);
  Step(2);
  EXPECT_EQ(Process::Get(pid), nullptr);
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(Process::Count(), before);
}

TEST_F(ProcessTest, ProfilerNamesTheProcess) {
  auto p = Make(
      [&] {
        for (int i = 0; i < 3; ++i) {
          clock_.Advance(milliseconds(1));
          Process::Yield();
        }
        return std::string();
      },
      {.name = "Mover"});
  ASSERT_TRUE(p->Start().ok());
  Step(4);
  bool found = false;
  for (const TaskProfile& t : scheduler_.TopTasks(10)) {
    if (t.key == "Process Mover") {
      found = true;
      EXPECT_EQ(t.calls, 4u);
      EXPECT_EQ(t.time, milliseconds(3));
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(ProcessTest, NestedKillUnwindsTheVictimAndTheKillerGoesOn) {
  std::vector<std::string> log;
  auto victim = Make(
      [&] {
        Guard g{&log};
        Process::Sleep(std::chrono::seconds(100));
        return std::string();
      },
      {.name = "Victim"});
  auto killer = Make(
      [&] {
        victim->Kill("by killer");
        log.push_back("killer continues");
        Process::Yield();
        return std::string("done");
      },
      {.name = "Killer"});
  ASSERT_TRUE(victim->Start().ok());
  Step();
  ASSERT_TRUE(killer->Start().ok());
  Step(3);
  EXPECT_EQ(log, (std::vector<std::string>{"destructor ran", "killer continues"}));
  EXPECT_EQ(victim->result(), "by killer");
  EXPECT_EQ(killer->state(), Process::State::kCompleted);
}

TEST_F(ProcessTest, StackSizeIsPerProcessAndRoundedToPages) {
  auto small = Make(
      [] {
        volatile char buffer[40 * 1024];
        buffer[0] = 1;
        buffer[sizeof buffer - 1] = buffer[0];
        return std::string("fits");
      },
      {.stack_size = 64 * 1024 + 1});
  EXPECT_EQ(small->stack_size(), 64 * 1024 + 4096);
  ASSERT_TRUE(small->Start().ok());
  Step();
  EXPECT_EQ(small->result(), "fits");
  auto tiny = Make([] { return std::string(); }, {.stack_size = 1});
  EXPECT_EQ(tiny->stack_size(), kMinProcessStack);
}

volatile bool g_forever = true;

[[gnu::noinline]] int Recurse(int n) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(n);
  return g_forever ? Recurse(n + 1) + frame[0] : 0;
}

TEST(ProcessDeathTest, StackOverflowStopsTheHostWithAMessageNamingTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ManualClock clock;
        SchedulerOptions o;
        o.clock = &clock;
        Scheduler s(o);
        auto p = Process::Create(s, [] { return std::to_string(Recurse(0)); },
                                 {.name = "Deep", .stack_size = 64 * 1024});
        (void)p->Start();
        s.Step();
      },
      R"(molt: process "Deep" \(pid [0-9]+\) overflowed its 64 KiB stack; give it a larger stack_size)");
}

TEST(KernelProcessTest, SpawnedProcessesAreKilledAtShutdownWithTheReason) {
  ManualClock clock;
  KernelOptions o;
  o.clock = &clock;
  auto kernel = std::move(Kernel::Boot(std::move(o))).value();
  std::string exit;
  auto p = kernel->SpawnProcess(
      [] {
        Process::Sleep(std::chrono::seconds(1000));
        return std::string();
      },
      {.name = "Patrol"});
  ASSERT_TRUE(p.ok());
  (*p)->OnExit().Connect([&](Process::State s, const std::string& r) {
    exit = std::string(Process::StateName(s)) + ":" + r;
  });
  ASSERT_TRUE((*p)->Start().ok());
  kernel->scheduler().Step();
  EXPECT_EQ(kernel->process_count(), 1u);
  ASSERT_TRUE(kernel->Shutdown().ok());
  EXPECT_EQ(exit, "Killed:kernel shutdown");
  auto late = kernel->SpawnProcess([] { return std::string(); }, {});
  EXPECT_EQ(late.status().message(), "kernel is shut down");
}

}  // namespace
}  // namespace molt::kernel

// SPDX-License-Identifier: Apache-2.0
// A process step allocates nothing: this binary replaces the global operator new with a counting
// one and steps yielding and sleeping processes (their own binary, so the counter sees only what
// the test does).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "kernel/src/core/process.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) {
    return p;
  }
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace molt::kernel {
namespace {

TEST(ProcessAllocationTest, StepsOfYieldingAndSleepingProcessesAllocateNothing) {
  ManualClock clock;
  SchedulerOptions o;
  o.clock = &clock;
  o.budget = {std::chrono::seconds(1), std::nullopt};
  Scheduler scheduler(o);
  long slices = 0;
  auto yielder = Process::Create(scheduler,
                                 [&] {
                                   for (;;) {
                                     ++slices;
                                     Process::Yield();
                                   }
                                   return std::string();
                                 },
                                 {.name = "Yielder"});
  auto sleeper = Process::Create(scheduler,
                                 [&] {
                                   for (;;) {
                                     ++slices;
                                     Process::Sleep(std::chrono::milliseconds(10));
                                   }
                                   return std::string();
                                 },
                                 {.name = "Sleeper"});
  ASSERT_TRUE(yielder->Start().ok());
  ASSERT_TRUE(sleeper->Start().ok());
  for (int i = 0; i < 10; ++i) {  // warm up: slabs, rings and the profile grow once
    clock.Advance(std::chrono::milliseconds(10));
    scheduler.Step();
  }
  const long before = g_allocations.load();
  const long slices_before = slices;
  for (int i = 0; i < 1000; ++i) {
    clock.Advance(std::chrono::milliseconds(10));
    scheduler.Step();
  }
  const long allocated = g_allocations.load() - before;  // before any assertion allocates
  EXPECT_EQ(slices - slices_before, 1500);               // 1000 yields and 500 sleeps
  EXPECT_EQ(allocated, 0);
  yielder->Kill();
  sleeper->Kill();
}

}  // namespace
}  // namespace molt::kernel

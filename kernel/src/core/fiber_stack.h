// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/fiber_stack.h
//
// Stacks for process fibers: mmap'ed with a PROT_NONE guard page below, reused through a per-
// thread pool (a spawn then costs no system call), and watched for overflow. A fiber that runs
// into its guard page gets SIGSEGV as usual; the handler (on an alternate signal stack) recognises
// the guard page of the process running on this thread, writes one line naming the process and
// its stack size, and lets the default action end the process with a core dump: an overflow is
// never silent memory corruption. Faults elsewhere go to the previous handler untouched.
//
// FiberStack is a Boost.Context StackAllocator. Thread safety: a pool per thread; the overflow
// note is per thread too (the thread that resumes the fiber).
#ifndef MOLT_KERNEL_CORE_FIBER_STACK_H_
#define MOLT_KERNEL_CORE_FIBER_STACK_H_

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

namespace molt::kernel {

inline constexpr std::size_t kDefaultProcessStack = 128 * 1024;
inline constexpr std::size_t kMinProcessStack = 16 * 1024;

class FiberStack {
 public:
  // `size` is rounded up to whole pages; the guard page comes on top of it. When `record` is
  // set, allocate() also stores the stack there (the process needs it for the overflow note).
  explicit FiberStack(std::size_t size = kDefaultProcessStack,
                      boost::context::stack_context* record = nullptr);

  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sc) noexcept;

  std::size_t size() const { return size_; }
  // Stacks kept for reuse by this thread's pool, all sizes.
  static std::size_t pooled();

 private:
  std::size_t size_;
  boost::context::stack_context* record_;
};

// What the overflow handler says about the fiber this thread runs: "molt: process "<name>"
// (pid <pid>) overflowed its <N> KiB stack; give it a larger stack_size". Owned by the process;
// written piece by piece in the handler (no formatting ahead of time, no allocation).
struct FiberNote {
  const char* name = nullptr;  // nullptr: "Process_<pid>"
  std::size_t name_size = 0;
  std::uint64_t pid = 0;
  std::size_t stack_size = 0;
};

// Tells the overflow handler which fiber this thread runs now; nullptrs when leaving it.
void SetRunningFiber(const boost::context::stack_context* stack, const FiberNote* note);

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_FIBER_STACK_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/core/throw_trace.h
//
// ThrowTrace: the stack at the point an exception was thrown, for crash reports of processes
// (spec: "Result holds the error with a traceback taken inside the body"). By the time a catch
// block runs the stack has unwound, so the kernel interposes __cxa_throw (the executable exports
// it; molt_kernel adds the link option) and records the frames while a ThrowTrace is armed on the
// thread: only inside a process, so other throws pay one thread-local load.
//
// Thread safety: arming is per thread.
#ifndef MOLT_KERNEL_CORE_THROW_TRACE_H_
#define MOLT_KERNEL_CORE_THROW_TRACE_H_

#include <string>

namespace molt::kernel {

class ThrowTrace {
 public:
  static constexpr int kMaxFrames = 32;

  // Resolves the real __cxa_throw and loads the unwinder: call once before arming (cheaply
  // repeatable).
  static void Prepare();
  // Records the next throws on this thread into `trace` (nullptr disarms). Returns the trace
  // that was armed before, to restore.
  static ThrowTrace* Arm(ThrowTrace* trace);

  void Clear() { count_ = 0; }
  bool empty() const { return count_ == 0; }
  // "  #0 0x... module(symbol+0x12)" lines, one per frame, innermost first, skipping the
  // interposer itself.
  std::string Format() const;

  // Called by the interposer.
  void Capture();

 private:
  void* frames_[kMaxFrames];
  int count_ = 0;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_CORE_THROW_TRACE_H_

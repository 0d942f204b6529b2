// SPDX-License-Identifier: Apache-2.0
// ThrowTrace and the __cxa_throw interposer.
#include "kernel/src/core/throw_trace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

namespace molt::kernel {
namespace {

thread_local ThrowTrace* t_armed = nullptr;

// GCC declares __cxa_throw internally with the type_info as void*: the same symbol and ABI.
using ThrowFn = void (*)(void*, std::type_info*, void (*)(void*));

ThrowFn RealThrow() {
  static const ThrowFn real = [] {
    void* frames[1];
    (void)::backtrace(frames, 1);  // loads the unwinder now, not in the middle of a throw
    return reinterpret_cast<ThrowFn>(::dlsym(RTLD_NEXT, "__cxa_throw"));
  }();
  return real;
}

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

}  // namespace

void ThrowTrace::Prepare() { (void)RealThrow(); }

ThrowTrace* ThrowTrace::Arm(ThrowTrace* trace) {
  ThrowTrace* previous = t_armed;
  t_armed = trace;
  if (trace != nullptr) {
    trace->Clear();
  }
  return previous;
}

void ThrowTrace::Capture() { count_ = ::backtrace(frames_, kMaxFrames); }

std::string ThrowTrace::Format() const {
  std::string out;
  for (int i = 1; i < count_; ++i) {  // frame 0 is the interposer
    Dl_info info{};
    out += "  #" + std::to_string(i - 1) + " ";
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", frames_[i]);
    out += addr;
    if (::dladdr(frames_[i], &info) != 0 && info.dli_fname != nullptr) {
      out += " ";
      out += info.dli_fname;
      if (info.dli_sname != nullptr) {
        char off[32];
        std::snprintf(off, sizeof off, "+0x%zx",
                      static_cast<std::size_t>(static_cast<char*>(frames_[i]) -
                                               static_cast<char*>(info.dli_saddr)));
        out += "(" + Demangle(info.dli_sname) + off + ")";
      } else {
        char off[32];
        std::snprintf(off, sizeof off, "(+0x%zx)",
                      static_cast<std::size_t>(static_cast<char*>(frames_[i]) -
                                               static_cast<char*>(info.dli_fbase)));
        out += off;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace molt::kernel

// Every throw in the process passes here (the executable's definition wins the symbol lookup).
// Defined as <cxxabi.h> declares it (in __cxxabiv1, noreturn), so g++ and clang agree.
namespace __cxxabiv1 {
extern "C" void __cxa_throw(void* object, std::type_info* type, void (*destroy)(void*)) {
  if (molt::kernel::ThrowTrace* trace = molt::kernel::t_armed) {
    trace->Capture();
  }
  molt::kernel::RealThrow()(object, type, destroy);
  __builtin_unreachable();
}
}  // namespace __cxxabiv1

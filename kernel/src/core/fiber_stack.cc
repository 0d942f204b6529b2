// SPDX-License-Identifier: Apache-2.0
// FiberStack: guarded mmap stacks, a per-thread free list, and the guard-page SIGSEGV handler.
#include "kernel/src/core/fiber_stack.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace molt::kernel {
namespace {

std::size_t PageSize() {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// Freed stacks by size, reused by the next allocation of that size (bounded).
struct Pool {
  static constexpr std::size_t kMaxPooled = 4096;
  std::vector<boost::context::stack_context> free;

  ~Pool() {
    for (auto& sc : free) {
      ::munmap(static_cast<char*>(sc.sp) - sc.size, sc.size);
    }
  }
};
thread_local Pool t_pool;

// The fiber running on this thread, for the overflow handler. Plain pointers: read in a signal
// handler.
thread_local const boost::context::stack_context* t_stack = nullptr;
thread_local const FiberNote* t_note = nullptr;

// Async-signal-safe output.
void Put(const char* s, std::size_t n) { (void)!::write(2, s, n); }
void Put(const char* s) { Put(s, std::strlen(s)); }
void PutNumber(std::uint64_t v) {
  char digits[24];
  std::size_t i = sizeof digits;
  do {
    digits[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && i > 0);
  Put(digits + i, sizeof digits - i);
}

struct sigaction g_previous;
std::once_flag g_handler_once;
thread_local bool t_altstack = false;

void OnSegv(int signo, siginfo_t* info, void* uctx) {
  const boost::context::stack_context* sc = t_stack;
  if (sc != nullptr && info != nullptr) {
    const auto fault = reinterpret_cast<std::uintptr_t>(info->si_addr);
    const auto base = reinterpret_cast<std::uintptr_t>(sc->sp) - sc->size;  // the guard page
    if (fault >= base && fault < base + PageSize()) {
      if (const FiberNote* n = t_note) {
        Put("molt: process \"");
        if (n->name != nullptr) {
          Put(n->name, n->name_size);
        } else {
          Put("Process_");
          PutNumber(n->pid);
        }
        Put("\" (pid ");
        PutNumber(n->pid);
        Put(") overflowed its ");
        PutNumber(n->stack_size / 1024);
        Put(" KiB stack; give it a larger stack_size\n");
      }
      ::signal(SIGSEGV, SIG_DFL);  // returning re-faults into the default action: a core dump
      return;
    }
  }
  // Not ours: hand it to whoever had SIGSEGV before (a sanitizer, a crash reporter, default).
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signo, info, uctx);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
      g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signo);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);
}

// The handler must run on a stack of its own: the one that faulted is full.
void InstallOverflowHandler() {
  std::call_once(g_handler_once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = OnSegv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &g_previous);
  });
  if (!t_altstack) {
    t_altstack = true;
    stack_t ss;
    std::memset(&ss, 0, sizeof ss);
    stack_t current;
    if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) {
      return;  // the thread already has one (a sanitizer installs its own)
    }
    static thread_local std::vector<char> alt(64 * 1024);
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    ::sigaltstack(&ss, nullptr);
  }
}

}  // namespace

FiberStack::FiberStack(std::size_t size, boost::context::stack_context* record) : record_(record) {
  const std::size_t page = PageSize();
  size_ = (std::max(size, kMinProcessStack) + page - 1) / page * page;
}

boost::context::stack_context FiberStack::allocate() {
  InstallOverflowHandler();
  const std::size_t total = size_ + PageSize();
  for (auto it = t_pool.free.rbegin(); it != t_pool.free.rend(); ++it) {
    if (it->size == total) {
      boost::context::stack_context sc = *it;
      t_pool.free.erase(std::next(it).base());
      if (record_ != nullptr) {
        *record_ = sc;
      }
      return sc;
    }
  }
  void* vp = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (vp == MAP_FAILED) {
    throw std::bad_alloc();
  }
  ::mprotect(vp, PageSize(), PROT_NONE);  // the guard page, below the stack (stacks grow down)
  boost::context::stack_context sc;
  sc.size = total;
  sc.sp = static_cast<char*>(vp) + total;
  if (record_ != nullptr) {
    *record_ = sc;
  }
  return sc;
}

void FiberStack::deallocate(boost::context::stack_context& sc) noexcept {
  if (t_pool.free.size() < Pool::kMaxPooled) {
    try {
      t_pool.free.push_back(sc);
      return;
    } catch (...) {
    }
  }
  ::munmap(static_cast<char*>(sc.sp) - sc.size, sc.size);
}

std::size_t FiberStack::pooled() { return t_pool.free.size(); }

void SetRunningFiber(const boost::context::stack_context* stack, const FiberNote* note) {
  t_stack = stack;
  t_note = note;
}

}  // namespace molt::kernel

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/pg_listener.h
//
// PgListener: a thread of its own that LISTENs on one channel of a PostgreSQL database and calls
// `wake` after each notification and every `poll`, so that a part of a fleet that keeps its
// state there (the deploy registry, live values) hears what another server wrote at once, and
// still converges when a notification was missed: the first wake comes at once, another when a
// lost connection is made again (with backoff: 1 s doubling, at most `poll`), and one at every
// poll. A connection that cannot be made is logged once per reason under `what`. The thread takes
// no process signal (core/threads.h).
//
//   PgListener listener(url, "the fleet's registry", "molt_deploys", 60s, [] { Catch(); });
//   listener.Stop();   // no wake after it returns (also in the destructor)
//
// Thread safety: `wake` runs on the listener's thread; Stop from the owner's.
#ifndef MOLT_KERNEL_STORE_PG_LISTENER_H_
#define MOLT_KERNEL_STORE_PG_LISTENER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace molt::kernel::store {

class PgListener {
 public:
  PgListener(std::string url, std::string what, std::string channel, std::chrono::milliseconds poll,
             std::function<void()> wake);
  ~PgListener();
  PgListener(const PgListener&) = delete;
  PgListener& operator=(const PgListener&) = delete;

  void Stop();

 private:
  void Run();
  // Waits `wait` unless stopped first; true when stopped.
  bool Stopped(std::chrono::milliseconds wait);

  const std::string url_;
  const std::string what_;
  const std::string channel_;
  const std::chrono::milliseconds poll_;
  const std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PG_LISTENER_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/dir_watcher.h
//
// DirWatcher: moltd --watch. A thread of its own waits on inotify for plugin libraries (*.so) and
// the build manifest being written, moved in or removed in one directory, and calls
// `on_change(file name)` from that thread for each; the caller posts to the kernel thread and
// debounces (a build writes several files). When the kernel's event queue overflowed (more
// changes than inotify holds, /proc/sys/fs/inotify/max_queued_events), changes were lost: it
// calls `on_change(kOverflow)`, and the caller reloads as for any change. The destructor stops
// the thread.
//
// Thread safety: construct and destroy on one thread; `on_change` runs on the watcher's thread.
#ifndef MOLT_KERNEL_SERVER_DIR_WATCHER_H_
#define MOLT_KERNEL_SERVER_DIR_WATCHER_H_

#include <molt/kernel/status.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace molt::kernel {

class DirWatcher {
 public:
  // What on_change hears when inotify's queue overflowed: no file name is ever empty.
  static constexpr const char* kOverflow = "";

  // Starts watching `dir`; fails naming the directory and the reason.
  static Result<std::unique_ptr<DirWatcher>> Start(const std::string& dir,
                                                   std::function<void(std::string)> on_change);
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;
  ~DirWatcher();

 private:
  DirWatcher() = default;
  void Run();

  std::function<void(std::string)> on_change_;
  int inotify_ = -1;
  int stop_ = -1;  // an eventfd: written by the destructor
  std::thread thread_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_DIR_WATCHER_H_

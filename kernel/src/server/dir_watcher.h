// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/server/dir_watcher.h
//
// DirWatcher: moltd --watch. A thread of its own waits on inotify for plugin libraries (*.so) and
// the build manifest being written, moved in or removed in one directory, and calls
// `on_change(file name)` from that thread for each, in order; the caller posts to the kernel
// thread and debounces (a build writes several files). When the kernel's event queue overflowed
// (more changes than inotify holds, /proc/sys/fs/inotify/max_queued_events), changes were lost:
// it calls `on_change(kOverflow)`, and the caller reloads as for any change. The destructor stops
// the thread.
//
// A file is heard once it is whole: written and closed, or moved in. A removal is held for
// kReplaceGrace first, because GNU ld replaces a library by removing it and writing a new file
// of the same name, over hundreds of milliseconds on a busy machine: when a new file of that name
// appears meanwhile, the removal is dropped and the new file is heard when it is closed. Heard
// at once, the removal made the caller reload a half-written library.
//
// Thread safety: construct and destroy on one thread; `on_change` runs on the watcher's thread.
#ifndef MOLT_KERNEL_SERVER_DIR_WATCHER_H_
#define MOLT_KERNEL_SERVER_DIR_WATCHER_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace molt::kernel {

class DirWatcher {
 public:
  // What on_change hears when inotify's queue overflowed: no file name is ever empty.
  static constexpr const char* kOverflow = "";
  // How long a removal waits for a new file of the same name (a linker's replacement).
  static constexpr std::chrono::milliseconds kReplaceGrace{200};

  // Starts watching `dir`; fails naming the directory and the reason.
  static Result<std::unique_ptr<DirWatcher>> Start(const std::string& dir,
                                                   std::function<void(std::string)> on_change);
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;
  ~DirWatcher();

 private:
  using Clock = std::chrono::steady_clock;
  struct Change {
    std::string file;
    Clock::time_point due;  // a removal: after kReplaceGrace; anything else: at once
    bool removal = false;
  };

  DirWatcher() = default;
  void Run();
  // One inotify event on `name` (a library or the manifest) into pending_.
  void Note(std::string_view name, std::uint32_t mask);
  // Hands on_change_ the pending changes that are due, in order; a removal not yet due holds the
  // ones behind it. Returns how long the next one waits (-1: none waits).
  int Flush();

  std::string dir_;
  std::deque<Change> pending_;  // the watcher's thread only
  std::function<void(std::string)> on_change_;
  int inotify_ = -1;
  int stop_ = -1;  // an eventfd: written by the destructor
  std::thread thread_;
};

}  // namespace molt::kernel

#endif  // MOLT_KERNEL_SERVER_DIR_WATCHER_H_

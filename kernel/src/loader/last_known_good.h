// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/last_known_good.h
//
// LastKnownGood: the last build that passed its health window, kept whole in a directory this
// host owns (moltd: <data>/builds/last-known-good/) for a boot whose newer builds fail (DESIGN.md
// §6: "the branch head, else the last known good, else a bundled fallback"). Save() writes the
// build beside the directory (every library copied from the copy that ran, the manifest with its
// health settings, everything synced), then exchanges it into place in one step: a crash leaves
// the old build or the new one, each whole. With background saves (moltd) the copy and its fsyncs
// run on a thread of their own, one save at a time, a save overtaken by a newer one dropped.
// Kept() is what a boot reads of it: whether there is a build to try. Used by the plugin host
// (plugin_host.h), which saves the build a health window passed, and by the server's boot plan.
//
// Thread safety: REQUIRES the kernel thread (saves run on threads of their own); Kept() is safe
// on any thread.
#ifndef MOLT_KERNEL_LOADER_LAST_KNOWN_GOOD_H_
#define MOLT_KERNEL_LOADER_LAST_KNOWN_GOOD_H_

#include <molt/kernel/status.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kernel/src/core/loop.h"
#include "kernel/src/loader/generation_set.h"

namespace molt::kernel::loader {

class LastKnownGood {
 public:
  // How long the owner's destruction waits for a save in flight (Wait()).
  static constexpr Duration kWait = std::chrono::seconds(5);

  // A save off the kernel thread reports back through `loop` (its log line).
  explicit LastKnownGood(Loop& loop);
  LastKnownGood(const LastKnownGood&) = delete;
  LastKnownGood& operator=(const LastKnownGood&) = delete;
  // A save still running reports to no one.
  ~LastKnownGood();

  // Where the build is kept (empty, the default: nowhere; Save() does nothing).
  void set_dir(std::string dir) { dir_ = std::move(dir); }
  const std::string& dir() const { return dir_; }
  // Saves run on threads of their own (moltd's background staging), not on the caller's.
  void set_background(bool background) { background_ = background; }
  // Tests only: runs on the saving thread before each background save.
  void set_hook_for_testing(std::function<void()> hook) { hook_ = std::move(hook); }

  // Keeps `g`'s build: its libraries (from the copies it loaded), named as its manifest named
  // them, and its health settings. A generation with a plugin linked into the host is no build to
  // keep. The outcome is logged ("build <id> is the last known good (kept in <dir>)", or why
  // not).
  void Save(const Generation& g);
  // Waits for the saves in flight, for at most `limit`.
  void Wait(Duration limit);

  // Whether `dir` holds a kept build (its manifest), as a boot reads it before trying it.
  static bool Kept(const std::string& dir);

 private:
  void LogKept(const std::string& build_id, const Status& s);

  // The saves running on threads of their own.
  struct Saver {
    std::uint64_t started = 0;  // kernel thread only
    std::mutex write_mu;        // one save at a time
    std::uint64_t newest = 0;   // the newest save written (under write_mu)
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;  // under mu
  };
  // What a save's thread reports through: cut (owner null) when this object goes.
  struct Link {
    std::mutex mu;
    LastKnownGood* owner;
  };

  Loop& loop_;
  std::string dir_;
  bool background_ = false;
  std::function<void()> hook_;
  std::shared_ptr<Saver> saver_ = std::make_shared<Saver>();
  std::shared_ptr<Link> link_;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_LAST_KNOWN_GOOD_H_

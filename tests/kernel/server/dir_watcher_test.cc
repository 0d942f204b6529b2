// SPDX-License-Identifier: Apache-2.0
// DirWatcher (moltd --watch) on a real directory and real inotify: every way a build lands, and
// an event queue that overflows.
#include "kernel/src/server/dir_watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace molt::kernel {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class DirWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_watch_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    watcher_.reset();
    fs::remove_all(dir_);
  }
  void Watch() {
    Result<std::unique_ptr<DirWatcher>> w = DirWatcher::Start(dir_, [this](std::string file) {
      std::unique_lock lock(mu_);
      heard_.push_back(std::move(file));
      changed_.notify_all();
      changed_.wait(lock, [this] { return !hold_; });  // a busy watcher reads nothing meanwhile
    });
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    watcher_ = std::move(w).value();
  }
  // Waits until `file` was heard (at most 10 s).
  bool Heard(const std::string& file) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(
        lock, 10s, [&] { return std::find(heard_.begin(), heard_.end(), file) != heard_.end(); });
  }
  void Write(const std::string& name) { std::ofstream(dir_ + "/" + name) << "x"; }

  std::string dir_;
  std::unique_ptr<DirWatcher> watcher_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> heard_;
  bool hold_ = false;
};

TEST_F(DirWatcherTest, ALibraryWrittenInPlaceMovedInOrRemovedIsHeardAndOtherFilesAreNot) {
  Watch();
  Write("notes.txt");   // not a library: never heard
  Write("counter.so");  // written in place (IN_CLOSE_WRITE)
  EXPECT_TRUE(Heard("counter.so"));
  Write("scores.so.tmp");  // a linker's temporary, then moved in (IN_MOVED_TO)
  fs::rename(dir_ + "/scores.so.tmp", dir_ + "/scores.so");
  EXPECT_TRUE(Heard("scores.so"));
  Write("molt-build.json");  // the manifest
  EXPECT_TRUE(Heard("molt-build.json"));
  fs::remove(dir_ + "/counter.so");  // removed (IN_DELETE): the next reload loads without it
  fs::rename(dir_ + "/scores.so", dir_ + "/scores.so.old");  // moved away (IN_MOVED_FROM)
  {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(changed_.wait_for(lock, 10s, [&] { return heard_.size() >= 5; }));
  }
  std::unique_lock lock(mu_);
  EXPECT_EQ(heard_, (std::vector<std::string>{"counter.so", "scores.so", "molt-build.json",
                                              "counter.so", "scores.so"}));
}

// GNU ld replaces a library by removing it and writing a new file of the same name, which takes
// hundreds of milliseconds on a busy machine: the new file is heard once it is closed, whole, and
// the removal is not heard at all (heard at once, it reloaded a half-written library). The
// watcher is kept busy meanwhile, so it reads the removal and the new file in one batch, as
// it does whenever the linker is quicker than the watcher.
TEST_F(DirWatcherTest, ALibraryReplacedAsALinkerReplacesItIsHeardOnceWhole) {
  Write("counter.so");
  hold_ = true;
  Watch();
  Write("first.so");
  ASSERT_TRUE(Heard("first.so"));  // the watcher now waits in its callback, reading nothing
  fs::remove(dir_ + "/counter.so");
  const std::string path = dir_ + "/counter.so";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd,
                    "\x7f"
                    "ELF",
                    4),
            4);       // the start of a library
  Write("probe.so");  // heard in order, after anything before it
  {
    std::lock_guard lock(mu_);
    hold_ = false;
  }
  changed_.notify_all();
  ASSERT_TRUE(Heard("probe.so"));
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(heard_, (std::vector<std::string>{"first.so", "probe.so"}))
        << "the removal, or the library being written, was heard";
  }
  ::close(fd);
  ASSERT_TRUE(Heard("counter.so"));
  std::lock_guard lock(mu_);
  EXPECT_EQ(heard_, (std::vector<std::string>{"first.so", "probe.so", "counter.so"}));
}

// More changes than inotify's queue holds while the watcher is busy: the kernel drops the rest
// and says so (IN_Q_OVERFLOW), and the watcher reports it (kOverflow) so the caller reloads.
TEST_F(DirWatcherTest, AnEventQueueOverflowIsReportedNotDropped) {
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  long limit = 16384;
  limit_file >> limit;
  ASSERT_GT(limit, 0);
  hold_ = true;
  Watch();
  Write("first.so");
  ASSERT_TRUE(Heard("first.so"));  // the watcher now waits in its callback, reading nothing
  // Each library closed after writing queues one event (IN_CLOSE_WRITE; two names in turn, so
  // none merges with the one before): past the queue's size, they are dropped.
  const std::string names[] = {dir_ + "/a.so", dir_ + "/b.so"};
  for (long i = 0; i <= limit + 16; ++i) {
    const int fd = ::open(names[i % 2].c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  {
    std::lock_guard lock(mu_);
    hold_ = false;
  }
  changed_.notify_all();
  EXPECT_TRUE(Heard(DirWatcher::kOverflow));
}

}  // namespace
}  // namespace molt::kernel

// SPDX-License-Identifier: Apache-2.0
// DirWatcher: inotify and an eventfd, polled together on one thread.
#include "kernel/src/server/dir_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace molt::kernel {

Result<std::unique_ptr<DirWatcher>> DirWatcher::Start(const std::string& dir,
                                                      std::function<void(std::string)> on_change) {
  std::unique_ptr<DirWatcher> w(new DirWatcher());
  w->dir_ = dir;
  w->on_change_ = std::move(on_change);
  w->inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  w->stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->inotify_ < 0 || w->stop_ < 0 ||
      ::inotify_add_watch(w->inotify_, dir.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_CREATE) <
          0) {
    return Status::IoError("cannot watch the plugin directory \"" + dir +
                           "\": " + std::strerror(errno));
  }
  w->thread_ = std::thread([p = w.get()] { p->Run(); });
  return w;
}

DirWatcher::~DirWatcher() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)!::write(stop_, &one, sizeof one);
    thread_.join();
  }
  for (int fd : {inotify_, stop_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void DirWatcher::Run() {
  alignas(inotify_event) char buffer[4096];
  int wait_ms = -1;
  for (;;) {
    pollfd fds[2] = {{inotify_, POLLIN, 0}, {stop_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if (fds[1].revents != 0) {
      return;
    }
    const ssize_t n = ready > 0 ? ::read(inotify_, buffer, sizeof buffer) : 0;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
      const std::string_view name = e->len > 0 ? std::string_view(e->name) : std::string_view();
      if ((e->mask & IN_Q_OVERFLOW) != 0) {
        for (Change& c : pending_) {  // events were dropped: any file may have changed
          c.due = Clock::time_point();
        }
        pending_.push_back({kOverflow, Clock::time_point()});
      } else if (name.ends_with(".so") || name == "molt-build.json") {
        Note(name, e->mask);
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
    wait_ms = Flush();
  }
}

void DirWatcher::Note(std::string_view name, std::uint32_t mask) {
  if ((mask & IN_CREATE) != 0) {
    // A new regular file of one link is being written (a hard link or a symlink is whole now):
    // a removal of its name waiting for it is dropped, and its close is what is heard.
    struct stat st;
    const std::string path = dir_ + "/" + std::string(name);
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) {
      std::erase_if(pending_, [&](const Change& c) { return c.removal && c.file == name; });
      return;
    }
    pending_.push_back({std::string(name), Clock::time_point()});
    return;
  }
  if ((mask & (IN_DELETE | IN_MOVED_FROM)) != 0) {
    pending_.push_back({std::string(name), Clock::now() + kReplaceGrace, true});
    return;
  }
  // Written and closed, or moved in: whole. A removal of the same name waiting is this change.
  std::erase_if(pending_, [&](const Change& c) { return c.removal && c.file == name; });
  pending_.push_back({std::string(name), Clock::time_point()});
}

int DirWatcher::Flush() {
  const Clock::time_point now = Clock::now();
  while (!pending_.empty() && pending_.front().due <= now) {
    std::string file = std::move(pending_.front().file);
    pending_.pop_front();
    on_change_(std::move(file));
  }
  if (pending_.empty()) {
    return -1;
  }
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(pending_.front().due - now);
  return static_cast<int>(std::max<std::int64_t>(wait.count(), 1));
}

}  // namespace molt::kernel

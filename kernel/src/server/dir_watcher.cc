// SPDX-License-Identifier: Apache-2.0
// DirWatcher: inotify and an eventfd, polled together on one thread.
#include "kernel/src/server/dir_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace molt::kernel {

Result<std::unique_ptr<DirWatcher>> DirWatcher::Start(const std::string& dir,
                                                      std::function<void(std::string)> on_change) {
  std::unique_ptr<DirWatcher> w(new DirWatcher());
  w->on_change_ = std::move(on_change);
  w->inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  w->stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->inotify_ < 0 || w->stop_ < 0 ||
      ::inotify_add_watch(w->inotify_, dir.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0) {
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
  for (;;) {
    pollfd fds[2] = {{inotify_, POLLIN, 0}, {stop_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if (fds[1].revents != 0) {
      return;
    }
    const ssize_t n = ::read(inotify_, buffer, sizeof buffer);
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
      const std::string_view name = e->len > 0 ? std::string_view(e->name) : std::string_view();
      if ((e->mask & IN_Q_OVERFLOW) != 0) {
        on_change_(kOverflow);  // events were dropped: any file may have changed
      } else if (name.ends_with(".so") || name == "molt-build.json") {
        on_change_(std::string(name));
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

}  // namespace molt::kernel

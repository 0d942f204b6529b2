// SPDX-License-Identifier: Apache-2.0
// DebugBundles: on-demand bundles and the fatal-signal writer.
#include "kernel/src/admin/debug_bundle.h"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cctype>
#include <filesystem>

namespace molt::kernel::admin {
namespace {

namespace fs = std::filesystem;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// What the handler writes: two snapshot buffers (one is refreshed while the other may be
// written), the current one's index, and the file's path, all prepared in advance.
struct CrashState {
  std::string snapshots[2];
  std::atomic<int> current{-1};
  char path[4096] = {};
};
CrashState g_crash;

bool IsSecret(std::string_view key) {
  std::string name(key.substr(key.rfind('.') + 1));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view word : {"token", "secret", "password", "passwd", "credential", "private"}) {
    if (name.find(word) != std::string::npos) {
      return true;
    }
  }
  return false;
}

void WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) {
      return;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

const char* SignalName(int signo) {
  switch (signo) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
  }
  return "?";
}

// Async-signal-safe: open, write, close, signal, raise; no allocation, no lock.
void OnFatalSignal(int signo) {
  const int current = g_crash.current.load();
  if (current >= 0) {
    const int fd = ::open(g_crash.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      char digits[4] = {static_cast<char>('0' + signo / 10 % 10),
                        static_cast<char>('0' + signo % 10), 0, 0};
      const char* name = SignalName(signo);
      const char head[] = "{\"v\":1,\"reason\":\"fatal signal ";
      WriteAll(fd, head, sizeof head - 1);
      WriteAll(fd, signo >= 10 ? digits : digits + 1, signo >= 10 ? 2 : 1);
      WriteAll(fd, " (", 2);
      WriteAll(fd, name, std::char_traits<char>::length(name));
      const char mid[] = ")\",\"snapshot\":";
      WriteAll(fd, mid, sizeof mid - 1);
      const std::string& s = g_crash.snapshots[current];
      WriteAll(fd, s.data(), s.size());
      WriteAll(fd, "}\n", 2);
      ::close(fd);
    }
  }
  ::signal(signo, SIG_DFL);
  ::raise(signo);
}

}  // namespace

boost::json::object RedactedConfigJson(const Config& config) {
  boost::json::object o;
  for (const std::string& key : config.Keys()) {
    const Config::Scalar* v = config.Get(key);
    if (v == nullptr) {
      continue;
    }
    if (IsSecret(key)) {
      o[key] = "<redacted>";
    } else {
      std::visit([&](const auto& x) { o[key] = boost::json::value_from(x); }, *v);
    }
  }
  return o;
}

DebugBundles::DebugBundles(std::string dir,
                           std::function<std::string(std::string_view reason)> build)
    : dir_(std::move(dir)), build_(std::move(build)) {}

DebugBundles::~DebugBundles() {
  if (installed_) {
    for (int signo : kFatalSignals) {
      ::signal(signo, SIG_DFL);
    }
    g_crash.current.store(-1);
  }
}

Result<std::string> DebugBundles::Write(std::string_view reason) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string safe;
  for (char c : reason) {
    safe += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '-';
  }
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::string path =
      (fs::path(dir_) / fmt::format("bundle-{:%Y%m%dT%H%M%S}.{:03}Z-{:04}-{}.json",
                                    fmt::gmtime(std::chrono::system_clock::to_time_t(now)), ms,
                                    ++written_ % 10000, safe.substr(0, 40)))
          .string();
  const std::string json = build_(reason) + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError(
        fmt::format("debug bundle {} cannot be created: {}", path, std::strerror(errno)));
  }
  const bool written = ::write(fd, json.data(), json.size()) == static_cast<ssize_t>(json.size());
  ::close(fd);
  if (!written) {
    fs::remove(path, ec);
    return Status::IoError("debug bundle " + path + " cannot be written (is the disk full?)");
  }
  Prune();
  return path;
}

void DebugBundles::Prune() {
  std::vector<fs::path> bundles;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().filename().string().rfind("bundle-", 0) == 0) {
      bundles.push_back(e.path());
    }
  }
  if (bundles.size() <= kKept) {
    return;
  }
  std::sort(bundles.begin(), bundles.end());  // the names sort by time
  for (std::size_t i = 0; i + kKept < bundles.size(); ++i) {
    fs::remove(bundles[i], ec);
  }
}

void DebugBundles::RefreshCrashSnapshot() {
  const int next = g_crash.current.load() == 0 ? 1 : 0;
  g_crash.snapshots[next] = build_("fatal signal");
  if (!installed_) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    const std::string path = (fs::path(dir_) / fmt::format("crash-{}.json", ::getpid())).string();
    std::snprintf(g_crash.path, sizeof g_crash.path, "%s", path.c_str());
    for (int signo : kFatalSignals) {
      ::signal(signo, OnFatalSignal);
    }
    installed_ = true;
  }
  g_crash.current.store(next);
}

}  // namespace molt::kernel::admin

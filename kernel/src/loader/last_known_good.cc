// SPDX-License-Identifier: Apache-2.0
// LastKnownGood: the build a health window passed, written beside its directory and exchanged
// into place, on the kernel thread or a thread of its own.
#include "kernel/src/loader/last_known_good.h"

#include <filesystem>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "kernel/src/core/logger.h"
#include "kernel/src/loader/build.h"

namespace molt::kernel::loader {

LastKnownGood::LastKnownGood(Loop& loop) : loop_(loop), link_(std::make_shared<Link>()) {
  link_->owner = this;
}

LastKnownGood::~LastKnownGood() {
  std::lock_guard<std::mutex> lock(link_->mu);
  link_->owner = nullptr;  // a save still running reports to no one
}

bool LastKnownGood::Kept(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(dir) / kBuildManifest, ec);
}

void LastKnownGood::Save(const Generation& g) {
  namespace fs = std::filesystem;
  if (dir_.empty()) {
    return;
  }
  std::vector<BuildFile> files;
  for (const Plugin& p : g.plugins) {
    if (p.library == nullptr) {
      return;  // plugins linked into the host are no build to keep
    }
    const molt_plugin_info& info = p.instance->info();
    files.push_back(
        {p.library->copy(), fs::path(p.library->source()).filename().string(),
         BuildEntry{"", info.name, info.version, std::string(PluginKindText(info.kind))}});
  }
  // Written beside, then exchanged into place in one step: a crash leaves the old one or the new
  // one, each whole, with its health settings.
  auto save = [dir = dir_, id = g.build_id, files = std::move(files), errors = g.health_errors,
               window = g.health_window_seconds] {
    std::error_code ec;
    const std::string tmp = dir + ".new";
    fs::remove_all(tmp, ec);  // a save a crash cut short
    fs::create_directories(fs::path(dir).parent_path(), ec);
    Status s = WriteBuild(tmp, id, files, errors, window);
    if (s.ok()) {
      s = InstallDirectory(tmp, dir);
    }
    if (!s.ok()) {
      fs::remove_all(tmp, ec);
    }
    return s;
  };
  if (!background_) {
    LogKept(g.build_id, save());
    return;
  }
  // In the background the copy and its fsyncs (they grow with the build) run on a thread of
  // their own, one save at a time; a save overtaken by a newer one is dropped.
  const std::uint64_t seq = ++saver_->started;
  {
    std::lock_guard<std::mutex> lock(saver_->mu);
    ++saver_->in_flight;
  }
  std::thread([link = link_, saver = saver_, seq, id = g.build_id, save = std::move(save),
               hook = hook_] {
    if (hook) {
      hook();
    }
    std::optional<Status> s;
    {
      std::lock_guard<std::mutex> write(saver->write_mu);
      if (seq > saver->newest) {
        s = save();
        saver->newest = seq;
      }
    }
    {
      std::lock_guard<std::mutex> lock(saver->mu);
      --saver->in_flight;
    }
    saver->cv.notify_all();
    std::lock_guard<std::mutex> lock(link->mu);
    if (s && link->owner != nullptr) {
      link->owner->loop_.Post([link, id, s = *s] {
        if (link->owner != nullptr) {  // read on the kernel thread, where it is cleared
          link->owner->LogKept(id, s);
        }
      });
    }
  }).detach();
}

void LastKnownGood::LogKept(const std::string& build_id, const Status& s) {
  if (!s.ok()) {
    LogScope("Generations")
        .Warn("build {} could not be kept as last known good: {}", build_id, s.message());
    return;
  }
  LogScope("Generations").Info("build {} is the last known good (kept in {})", build_id, dir_);
}

void LastKnownGood::Wait(Duration limit) {
  std::unique_lock<std::mutex> lock(saver_->mu);
  saver_->cv.wait_for(lock, limit, [this] { return saver_->in_flight == 0; });
}

}  // namespace molt::kernel::loader

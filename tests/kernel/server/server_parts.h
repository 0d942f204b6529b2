// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/server/server_parts.h
//
// ServerParts: the parts moltd's own classes drive (an Assembly on an in-memory profile database,
// its plugin directory and data directory in a scratch directory), with the kernel loop run on a
// thread of its own while a test waits, and the log lines captured, for the tests of the boot
// plan and the drain:
//
//   ServerParts parts(molt::test::kFixtures + "/gen/v1");
//   parts.RunLoop([&] { plan.Begin(); });   // until something stops the loop
//   EXPECT_TRUE(parts.Logged("serving"));
#ifndef MOLT_TESTS_KERNEL_SERVER_SERVER_PARTS_H_
#define MOLT_TESTS_KERNEL_SERVER_SERVER_PARTS_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/server/assembly.h"
#include "kernel/src/server/settings.h"
#include "kernel/src/store/sqlite_store.h"

namespace molt::test {

using kernel::Assembly;
using kernel::AssemblyPaths;
using kernel::Config;
using kernel::Duration;
using kernel::Logger;
using kernel::LogLevel;
using kernel::ServerOptions;
using kernel::Settings;

class ServerParts {
 public:
  explicit ServerParts(const std::string& plugin_dir = "") {
    dir_ = ::testing::TempDir() + "molt_server_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/plugins");
    ServerOptions so;
    so.plugin_dir = plugin_dir.empty() ? dir_ + "/plugins" : plugin_dir;
    so.data_dir = dir_;
    so.server_id = "eu-1";
    Config config;
    EXPECT_TRUE(ResolveSettings(so, config, &settings).ok());
    settings.profiles_db = std::string(kernel::store::kInMemory);
    capture_ = Logger::Get().Capture([this](std::string_view line, LogLevel) {
      std::lock_guard lock(mu_);
      logs_ += std::string(line) + "\n";
    });
    AssemblyPaths paths;
    paths.copy_dir = dir_ + "/copies";
    paths.live_db = dir_ + "/live.db";
    paths.host = "server-test";
    assembly = Assembly::Build(settings, std::move(config), std::move(paths)).value();
  }
  ~ServerParts() {
    assembly->Release();
    assembly.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Posts `first` to the kernel loop and runs the loop on this thread until something stops it
  // (at most `limit`).
  void RunLoop(std::function<void()> first, Duration limit = std::chrono::seconds(30)) {
    assembly->kernel().loop().Post(std::move(first));
    assembly->kernel().loop().RunFor(limit);
  }

  // Whether a log line so far contains `text`.
  bool Logged(const std::string& text) {
    std::lock_guard lock(mu_);
    return logs_.find(text) != std::string::npos;
  }
  std::string logs() {
    std::lock_guard lock(mu_);
    return logs_;
  }
  const std::string& dir() const { return dir_; }

  Settings settings;
  std::unique_ptr<Assembly> assembly;

 private:
  std::string dir_;
  std::mutex mu_;
  std::string logs_;
  Logger::Registration capture_;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_KERNEL_SERVER_SERVER_PARTS_H_

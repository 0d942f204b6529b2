// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/loader/loader_fixture.h
//
// LoaderFixture: what a test of one of the loader's parts stands on: a kernel on a manual clock
// (time moves when the test says; Steps() runs what came due), the plugin instances' shared state
// with a server's network attached (not listening: fx_gen declares channels), a copy directory of
// the test's own, and the fixture builds of fx_gen (tests/fixtures/plugins/generation.cc, one
// build per directory: GenBuild("v1")). Its plugins publish Gen.* topics, recorded in events_.
#ifndef MOLT_TESTS_KERNEL_LOADER_LOADER_FIXTURE_H_
#define MOLT_TESTS_KERNEL_LOADER_LOADER_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/abi/abi_shared.h"
#include "kernel/src/abi/host_api.h"
#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/loop.h"
#include "kernel/src/net/net_api.h"
#include "kernel/src/net/network.h"
#include "tests/support/test_paths.h"

namespace molt::kernel::loader {

class LoaderFixture : public ::testing::Test {
 public:
  // The fx_gen build `name` (gen/<name>/).
  static std::string GenBuild(const std::string& name) {
    return molt::test::kFixtures + "/gen/" + name;
  }

 protected:
  void SetUp() override {
    KernelOptions o;
    o.clock = &clock_;
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
    shared_ = std::make_unique<abi::AbiShared>(*kernel_, abi::CoreHostApi());
    network_ = std::make_unique<net::Network>(*kernel_, net::NetOptions());
    abi::AttachNetwork(*shared_, network_.get());
    copies_ = ::testing::TempDir() + "molt_loader_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
              std::to_string(::getpid());
    std::filesystem::remove_all(copies_);
    events_sub_ = kernel_->bus().Subscribe("Gen.*", [this](std::string_view topic, Args a) {
      std::string line(topic);
      for (const Value& v : a) {
        line += " " + (v.type == Value::kString   ? std::string(v.AsString())
                       : v.type == Value::kHandle ? std::to_string(v.AsHandle())
                                                  : std::to_string(v.AsInt()));
      }
      events_.push_back(line);
    });
  }
  // The parts under test go first (TearDownParts), then what they stand on.
  void TearDown() override {
    (void)kernel_->Shutdown();
    TearDownParts();
    events_sub_.Disconnect();
    shared_.reset();
    network_.reset();
    kernel_.reset();
    std::filesystem::remove_all(copies_);
  }
  // Unloads and destroys what the test built on the shared state.
  virtual void TearDownParts() {}

  // Runs the scheduler's due tasks `n` times.
  void Steps(int n = 1) {
    for (int i = 0; i < n; ++i) {
      kernel_->scheduler().Step();
    }
  }
  // Runs the kernel thread's loop (what other threads post to it, scheduler steps) until `done`,
  // for at most `timeout` of real time.
  bool PumpUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(std::chrono::milliseconds(5));
      Steps();
    }
    return done();
  }
  // Which builds answered Gen.Ping ("Gen.Pong <tag>" each), in order.
  std::vector<std::string> Pongs() {
    events_.clear();
    kernel_->bus().Publish("Gen.Ping");
    std::vector<std::string> pongs;
    for (const std::string& e : events_) {
      if (e.rfind("Gen.Pong", 0) == 0) {
        pongs.push_back(e);
      }
    }
    return pongs;
  }
  bool Saw(const std::string& event) const {
    return std::find(events_.begin(), events_.end(), event) != events_.end();
  }
  bool Logged(const std::string& part) const {
    return std::any_of(lines_.begin(), lines_.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<abi::AbiShared> shared_;
  std::unique_ptr<net::Network> network_;
  std::string copies_;
  std::vector<std::string> events_;
  Connection events_sub_;
  std::vector<std::string> lines_;
  Logger::Registration capture_ = Logger::Get().Capture(
      [this](std::string_view l, LogLevel) { lines_.push_back(std::string(l)); });
};

}  // namespace molt::kernel::loader

#endif  // MOLT_TESTS_KERNEL_LOADER_LOADER_FIXTURE_H_

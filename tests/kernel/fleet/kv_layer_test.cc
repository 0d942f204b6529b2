// SPDX-License-Identifier: Apache-2.0
// KvLayer (kernel/src/fleet/kv_layer.h) behind the key-value slot, with a real plugin
// (tests/fixtures/plugins/messages.cc, build messages/v1) loaded by the real loader over a
// KvStore in memory: its calls answered under its own name and counted while they run, and a
// call whose instance stopped first let go, its answer given to no one.
#include "kernel/src/fleet/kv_layer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/fleet/kv_api.h"
#include "kernel/src/fleet/messages.h"
#include "kernel/src/fleet/messages_api.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::fleet {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// A kernel with the messages and key-value layers and the real loader, the plugin's Kv.Result
// kept.
class KvLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_kv_layer_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    kernel_ = std::move(Kernel::Boot({}).value());
    MessagesOptions o;
    o.server_id = "eu-1";
    o.branch = "prod";
    auto post = [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); };
    messages_ = std::make_unique<Messages>(
        o, post, [] { return std::size_t{0}; }, [] { return WallMs(); });
    ASSERT_TRUE(messages_->Open().ok());
    kv_ = std::make_unique<KvStore>("", post, [] { return WallMs(); });
    ASSERT_TRUE(kv_->Open().ok());
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, dir_ + "/copies");
    sub_ = kernel_->bus().Subscribe("Kv.Result", [this](std::string_view topic, Args a) {
      std::string line(topic);
      for (const Value& v : a) {
        line += " " +
                (v.type == Value::kString ? std::string(v.AsString()) : std::to_string(v.AsInt()));
      }
      events_.push_back(line);
    });
    AttachMessages(plugins_->shared(), *messages_);
    AttachKv(plugins_->shared(), *kv_);
    ASSERT_TRUE(plugins_->LoadDirectory(std::string(MOLT_FIXTURE_DIR) + "/messages/v1").ok());
    ASSERT_TRUE(kernel_->Start().ok());
  }
  void TearDown() override {
    sub_.Disconnect();
    (void)kernel_->Shutdown();
    plugins_.reset();
    kv_.reset();
    messages_.reset();
    kernel_.reset();
    fs::remove_all(dir_);
  }
  bool RunUntil(const std::function<bool()>& done, milliseconds timeout = milliseconds(20000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(milliseconds(5));
    }
    return done();
  }
  bool Saw(const std::string& line) {
    return RunUntil(
        [&] { return std::find(events_.begin(), events_.end(), line) != events_.end(); });
  }
  KvLayer& layer() { return *plugins_->shared().Layer<KvLayer>(); }

  std::string dir_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<Messages> messages_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<loader::PluginHost> plugins_;
  Connection sub_;
  std::vector<std::string> events_;
};

TEST_F(KvLayerTest, APluginsKeyValueCallsAreAnsweredUnderItsOwnName) {
  for (const char* want : {"Kv.Result 0 1 ", "Kv.Result 0 2 "}) {
    events_.clear();
    const Value args[] = {Value::String("visits")};
    kernel_->bus().Publish("Kv.Increment", args);
    EXPECT_TRUE(Saw(want));
  }
  std::optional<KvResult> stored;
  KvOp get;
  get.key = "fx_messages/visits";
  ASSERT_TRUE(kv_->Call(get, [&](KvResult r) { stored = std::move(r); }).ok());
  ASSERT_TRUE(RunUntil([&] { return stored.has_value(); }));
  EXPECT_EQ(stored->value.value_or(""), "2");
  events_.clear();
  const Value bad[] = {Value::String("a\nb")};
  kernel_->bus().Publish("Kv.Increment", bad);
  EXPECT_TRUE(Saw("Kv.Result " + std::to_string(MOLT_ERR_INVALID_ARGUMENT) +
                  " 0 key-value call on \"fx_messages/a\nb\": a key has no control characters"));
}

TEST_F(KvLayerTest, ACallIsCountedWhileItRunsAndLetGoWhenItsInstanceStopsFirst) {
  const Value args[] = {Value::String("visits")};
  kernel_->bus().Publish("Kv.Increment", args);
  EXPECT_EQ(layer().running(), 1u) << "with the store";
  ASSERT_TRUE(Saw("Kv.Result 0 1 "));
  EXPECT_EQ(layer().running(), 0u);

  events_.clear();
  kernel_->bus().Publish("Kv.Increment", args);
  ASSERT_EQ(layer().running(), 1u);
  layer().ReleaseOwner(plugins_->plugins().front().instance.get());  // stopped before the answer
  EXPECT_EQ(layer().running(), 0u);
  // The store answers in order: once this later call is answered, the plugin's was too.
  std::optional<KvResult> after;
  KvOp get;
  get.key = "fx_messages/visits";
  ASSERT_TRUE(kv_->Call(get, [&](KvResult r) { after = std::move(r); }).ok());
  ASSERT_TRUE(RunUntil([&] { return after.has_value(); }));
  EXPECT_EQ(after->value.value_or(""), "2") << "the call ran";
  EXPECT_TRUE(events_.empty()) << "its answer was given to no one";
}

}  // namespace
}  // namespace molt::kernel::fleet

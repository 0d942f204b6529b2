// SPDX-License-Identifier: Apache-2.0
// The live values slots (ABI 1.7, live/live_api.h): a real plugin (tests/fixtures/plugins/live.cc,
// builds live/v1 and live/v2) loaded by the real loader declares values, reads them, checks an
// operator's, hears Config.Changed, and is swapped with its overrides kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "kernel/src/core/kernel.h"
#include "kernel/src/live/live_api.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/loader/plugin_host.h"

namespace molt::kernel::live {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string Build(const std::string& name) {
  return std::string(MOLT_FIXTURE_DIR) + "/live/" + name;
}

class LiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_live_abi_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto k = Kernel::Boot({});
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kernel_ = std::move(k.value());
    LiveOptions o;
    o.path = dir_ + "/live.db";
    live_ = std::make_unique<LiveValues>(
        o, [this](std::function<void()> fn) { kernel_->loop().Post(std::move(fn)); },
        [this](const std::string& key, const std::string& value) {
          const Value args[] = {Value::String(key), Value::String(value)};
          kernel_->bus().Publish("Config.Changed", args);
        },
        [] { return WallMs(); });
    ASSERT_TRUE(live_->Open().ok());
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, dir_ + "/copies");
    plugins_->set_health(3, milliseconds(20));  // the old generation goes soon after a swap
    sub_ = kernel_->bus().Subscribe("Live.*", [this](std::string_view topic, Args a) {
      if (topic == "Live.Get" || topic == "Live.Errors") {
        return;  // the tests' own
      }
      std::string line(topic);
      for (const Value& v : a) {
        line += " " +
                (v.type == Value::kString ? std::string(v.AsString()) : std::to_string(v.AsInt()));
      }
      events_.push_back(line);
    });
  }
  void TearDown() override {
    sub_.Disconnect();
    (void)kernel_->Shutdown();
    plugins_.reset();
    live_.reset();
    kernel_.reset();
    fs::remove_all(dir_);
  }
  void BootWith(const std::string& build, bool attach = true) {
    if (attach) {
      AttachLive(plugins_->shared(), *live_);
    }
    Status s = plugins_->LoadDirectory(Build(build));
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  bool RunUntil(const std::function<bool()>& done, milliseconds timeout = milliseconds(20000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      kernel_->loop().io().restart();
      kernel_->loop().RunFor(milliseconds(5));
    }
    return done();
  }
  Result<SetOutcome> Set(const std::string& key, std::optional<std::string> value) {
    std::optional<Result<SetOutcome>> out;
    live_->Set(key, std::move(value), "ops", [&](Result<SetOutcome> r) { out = std::move(r); });
    EXPECT_TRUE(RunUntil([&] { return out.has_value(); }));
    return out ? *out : Result<SetOutcome>(Status::Internal("no answer"));
  }
  // What the plugin reads for `name`: "<build> <name> <code> <value>".
  std::string Read(const std::string& name) {
    events_.clear();
    const Value args[] = {Value::String(name)};
    kernel_->bus().Publish("Live.Get", args);
    RunUntil([&] { return !events_.empty(); });
    return events_.empty() ? "" : events_.back();
  }

  std::string dir_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<LiveValues> live_;
  std::unique_ptr<loader::PluginHost> plugins_;
  Connection sub_;
  std::vector<std::string> events_;
};

TEST_F(LiveTest, APluginReadsItsValuesAndHearsEachRealChange) {
  BootWith("v1");
  EXPECT_EQ(Read("step"), "Live.Value v1 step 0 1");
  EXPECT_EQ(Read("event"), "Live.Value v1 event 0 \"calm\"");
  events_.clear();
  Result<SetOutcome> r = Set("fx_live.step", "5");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(events_, std::vector<std::string>{"Live.Heard v1 fx_live.step 5"});
  EXPECT_EQ(Read("step"), "Live.Value v1 step 0 5");
  events_.clear();
  ASSERT_TRUE(Set("fx_live.step", "5").ok());  // the same value: nobody hears of it
  ASSERT_TRUE(Set("fx_live.event", "\"festival\"").ok());
  EXPECT_EQ(events_, std::vector<std::string>{"Live.Heard v1 fx_live.event \"festival\""});
}

TEST_F(LiveTest, ThePluginsCheckRefusesAndAThrowRefusesToo) {
  BootWith("v1");
  Result<SetOutcome> r = Set("fx_live.step", "101");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kRejected);
  EXPECT_EQ(r.status().message(), "live value fx_live.step: the plugin refused 101: at most 100");
  r = Set("fx_live.step", "666");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "live value fx_live.step: the plugin refused 666: the check blew up");
  EXPECT_EQ(Read("step"), "Live.Value v1 step 0 1");
  EXPECT_TRUE(plugins_->stuck_callbacks().empty());
}

TEST_F(LiveTest, TheSlotsRefuseWhatIsWrongByName) {
  BootWith("v1");
  events_.clear();
  kernel_->bus().Publish("Live.Errors", {});
  RunUntil([&] { return events_.size() >= 5; });
  ASSERT_EQ(events_.size(), 5u);
  EXPECT_EQ(events_[0], "Live.Error again " + std::to_string(MOLT_ERR_ALREADY_EXISTS) +
                            " live value fx_live.step is declared already");
  EXPECT_EQ(events_[1], "Live.Error bad name " + std::to_string(MOLT_ERR_INVALID_ARGUMENT) +
                            " live value name \"no.dots\": 1..64 of [A-Za-z0-9_-]");
  EXPECT_NE(events_[2].find("the default of fx_live.nothing is null"), std::string::npos)
      << events_[2];
  EXPECT_NE(events_[3].find("the default of fx_live.broken is not JSON"), std::string::npos)
      << events_[3];
  EXPECT_EQ(events_[4], "Live.Error undeclared " + std::to_string(MOLT_ERR_NOT_FOUND) +
                            " live value \"nope\" is not declared by this plugin (declare it "
                            "with live_declare)");
}

TEST_F(LiveTest, ASwapKeepsTheOverridesAndReleasesTheOldDeclarations) {
  BootWith("v1");
  ASSERT_TRUE(Set("fx_live.event", "\"festival\"").ok());
  events_.clear();
  const loader::SwapReport report = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(report.ok) << report.error;
  RunUntil([&] { return plugins_->resident_generations() == 1; }, milliseconds(5000));
  // No check ran, no Config.Changed: a swap is not a change of any value.
  for (const std::string& e : events_) {
    EXPECT_EQ(e.rfind("Live.Heard", 0), std::string::npos) << e;
  }
  EXPECT_EQ(Read("event"), "Live.Value v2 event 0 \"festival\"");
  EXPECT_EQ(Read("step"), "Live.Value v2 step 0 2");  // v2's own default
  // The new generation's check is the one asked.
  Result<SetOutcome> r = Set("fx_live.step", "101");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "live value fx_live.step: the plugin refused 101: at most 100");
  // Every key is declared once more by v2 only.
  for (const LiveView& v : live_->List()) {
    EXPECT_TRUE(v.declared) << v.key;
  }
  EXPECT_EQ(live_->stats().declared, 2u);
}

TEST_F(LiveTest, WithoutTheLayerTheSlotsAreRefused) {
  Status s = plugins_->LoadDirectory(Build("v1"));
  if (s.ok()) {
    s = kernel_->Start();  // init runs here
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("this host keeps no live values (moltd does)"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace molt::kernel::live

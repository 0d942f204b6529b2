// SPDX-License-Identifier: Apache-2.0
// Real plugin libraries, built by the same CMake, loaded into a real kernel.
#include "kernel/src/loader/plugin_host.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "kernel/src/net/net_api.h"
#include "kernel/src/net/network.h"
#include "tests/support/test_paths.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;
using molt::test::kFixtures;
using molt::test::kPlugins;

class PluginHostTest : public ::testing::Test {
 protected:
  void SetUp() override { Boot(Config()); }

  void Boot(Config config) {
    host_.reset();
    network_.reset();
    kernel_.reset();
    KernelOptions o;
    o.clock = &clock_;
    o.config = std::move(config);
    kernel_ = std::move(Kernel::Boot(std::move(o))).value();
    copies_ = ::testing::TempDir() + "molt_plugin_host_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
              std::to_string(::getpid());
    fs::remove_all(copies_);
    host_ = std::make_unique<PluginHost>(*kernel_, copies_);
    // A server's network, not listening: the bundled plugins declare channels and replicas.
    network_ = std::make_unique<net::Network>(*kernel_, net::NetOptions());
    abi::AttachNetwork(host_->shared(), network_.get());
  }
  void TearDown() override {
    if (kernel_) {
      (void)kernel_->Shutdown();
    }
    host_.reset();
    network_.reset();
    kernel_.reset();
  }
  std::vector<std::string> BootOrder() {
    std::vector<std::string> names;
    for (Service* s : kernel_->services().boot_order()) {
      names.push_back(s->name());
    }
    return names;
  }
  void Step(int n = 1) {
    for (int i = 0; i < n; ++i) {
      kernel_->scheduler().Step();
    }
  }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<PluginHost> host_;
  std::unique_ptr<net::Network> network_;
  std::string copies_;
  std::vector<std::string> lines_;
  Logger::Registration capture_ = Logger::Get().Capture(
      [this](std::string_view l, LogLevel) { lines_.push_back(std::string(l)); });
};

TEST_F(PluginHostTest, BundledPluginsBootInDependencyOrderAndTalkThroughTheInterface) {
  Config config;
  config.Set("plugins.rounds.round_seconds", 1.0);
  Boot(std::move(config));
  ASSERT_TRUE(host_->LoadDirectory(kPlugins).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  const std::vector<std::string> order = BootOrder();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(molt::test::kBundledPlugins));
  EXPECT_LT(std::find(order.begin(), order.end(), "scores"),
            std::find(order.begin(), order.end(), "rounds"));

  std::vector<std::string> ended;
  kernel_->bus().Subscribe("Round.Ended", [&](std::string_view, Args args) {
    ended.push_back(std::to_string(args[0].AsInt()) + " " + std::string(args[1].AsString()) + " " +
                    std::to_string(args[2].AsInt()));
  });
  std::vector<std::string> changed;
  kernel_->bus().Subscribe("Score.Changed", [&](std::string_view, Args args) {
    changed.push_back(std::string(args[0].AsString()) + "=" + std::to_string(args[1].AsInt()));
  });
  const Value ada[] = {Value::String("ada"), Value::Int(3)};
  const Value bob[] = {Value::String("bob"), Value::Int(5)};
  kernel_->bus().Publish("Score.Add", ada);
  kernel_->bus().Publish("Score.Add", bob);
  kernel_->bus().Publish("Score.Add", ada);
  EXPECT_EQ(changed, (std::vector<std::string>{"ada=3", "bob=5", "ada=6"}));
  clock_.Advance(std::chrono::seconds(1));
  Step();
  EXPECT_EQ(ended, std::vector<std::string>{"1 ada 6"});

  // A fail-closed veto on Round.CanEnd extends the round.
  Connection veto = kernel_->hooks().On("Round.CanEnd", [](HookContext&) { return false; });
  clock_.Advance(std::chrono::seconds(1));
  Step();
  EXPECT_EQ(ended.size(), 1u);
  veto.Disconnect();
  clock_.Advance(std::chrono::seconds(1));
  Step();
  EXPECT_EQ(ended, (std::vector<std::string>{"1 ada 6", "2  0"}));  // scores were reset
}

// Interface references are tracked: the stats show who holds which, a swap moves them to the new
// generation's exporter, and nobody stops under a holder (no error at any stop).
TEST_F(PluginHostTest, InterfaceReferencesAreTrackedAndMoveWithTheirGeneration) {
  Boot(Config());
  ASSERT_TRUE(host_->LoadDirectory(kPlugins).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  auto stats = [&] { return boost::json::serialize(host_->StatsObject()); };
  const std::string rounds =
      "{\"name\":\"rounds\",\"version\":\"0.1.0\",\"errors\":0,\"uses\":[{\"service\":"
      "\"scores\",\"interface\":\"scores.v1\"}]}";
  EXPECT_NE(stats().find(rounds), std::string::npos) << stats();
  EXPECT_NE(stats().find("{\"name\":\"scores\",\"version\":\"0.1.0\",\"errors\":0,"
                         "\"uses\":[]}"),
            std::string::npos);
  loader::SwapReport r = host_->Reload(kPlugins, "test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(stats().find(rounds), std::string::npos) << stats();
  EXPECT_EQ(host_->UnloadAll(), 0u);
  for (const std::string& l : lines_) {
    EXPECT_EQ(l.find("still hold references"), std::string::npos) << l;
  }
}

// An exporter stopped under a holder (only possible by hand: dependency order rules it out) says
// so, naming the holder.
TEST_F(PluginHostTest, AnExporterStoppedUnderAHolderNamesIt) {
  Boot(Config());
  ASSERT_TRUE(host_->LoadDirectory(kPlugins).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  for (const auto& p : host_->plugins()) {
    if (p.instance->name() == "scores") {
      (void)p.instance->Stop();
    }
  }
  const std::string gen = host_->generation();
  EXPECT_TRUE(std::any_of(lines_.begin(), lines_.end(), [&](const std::string& l) {
    return l == "[scores@" + gen +
                    "] stops while plugins still hold references to its interfaces: rounds@" + gen +
                    " (scores.v1)";
  })) << ::testing::PrintToString(lines_);
}

TEST_F(PluginHostTest, CPluginWorksThroughTheRawAbi) {
  Config config;
  config.Set("plugins.uptime.interval_seconds", std::int64_t{2});
  Boot(std::move(config));
  ASSERT_TRUE(host_->LoadFiles({kPlugins + "/uptime.so"}).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  std::vector<double> ticks;
  kernel_->bus().Subscribe(
      "Uptime.Tick", [&](std::string_view, Args args) { ticks.push_back(args[0].AsDouble()); });
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(std::chrono::seconds(1));
    Step();
  }
  EXPECT_EQ(ticks, (std::vector<double>{2.0, 4.0}));
}

TEST_F(PluginHostTest, RefusesTheWholeSetAndListsEveryProblem) {
  Status s = host_->LoadDirectory(kFixtures + "/bad");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("10 of 10 plugin files refused:\n  plugin ", 0), 0u) << s.message();
  for (const char* file : {"fx_abi_major.so", "fx_bad_size.so", "fx_extra_exports.so",
                           "fx_no_entry.so", "fx_no_version.so"}) {
    EXPECT_NE(s.message().find(file), std::string::npos) << file;
  }
  EXPECT_EQ(kernel_->services().size(), 0u);
  Status mixed =
      host_->LoadFiles({kFixtures + "/good/fx_minimal.so", kFixtures + "/bad/fx_no_entry.so"});
  EXPECT_EQ(mixed.message().rfind("1 of 2 plugin files refused:", 0), 0u);
  EXPECT_EQ(kernel_->services().size(), 0u);  // the good one is not registered either
  EXPECT_TRUE(fs::is_empty(copies_));
}

TEST_F(PluginHostTest, RefusesDuplicateNames) {
  Status s = host_->LoadDirectory(kFixtures + "/dup");
  EXPECT_EQ(s.message(), "1 of 2 plugin files refused:\n  plugin file \"" + kFixtures +
                             "/dup/fx_dup_b.so\": name \"fx_dup\" is already used by \"" +
                             kFixtures + "/dup/fx_dup_a.so\": plugin names must be unique");
}

TEST_F(PluginHostTest, MissingDirectoryIsNamed) {
  EXPECT_EQ(host_->LoadDirectory("/nonexistent/plugins").message(),
            "plugin directory \"/nonexistent/plugins\" does not exist: pass the directory "
            "holding the plugin .so files");
}

TEST_F(PluginHostTest, HostilePluginThatThrowsFromEveryCallbackNeverTakesTheHostDown) {
  ASSERT_TRUE(host_->LoadFiles({kFixtures + "/good/fx_throwing.so"}).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  lines_.clear();
  kernel_->bus().Publish("Fx.Throw");
  HookContext ctx;
  HookResult r = kernel_->hooks().Fire("Fx.ThrowHook", ctx);
  Step(3);
  EXPECT_FALSE(r.passed);  // fail-closed
  EXPECT_EQ(
      r.error,
      "hook \"Fx.ThrowHook\": handler threw: plugin \"fx_throwing@local#1\": callback threw across "
      "the C ABI");
  const auto& instance = *host_->plugins()[0].instance;
  EXPECT_EQ(instance.callback_errors(), 5u);  // bus + hook + 3 task runs
  EXPECT_NE(std::find(lines_.begin(), lines_.end(),
                      "[fx_throwing@local#1] bus subscriber of \"Fx.Throw\" failed: callback threw "
                      "across the C ABI"),
            lines_.end());
  EXPECT_NE(std::find(lines_.begin(), lines_.end(),
                      "[fx_throwing@local#1] task failed: callback threw across the C ABI"),
            lines_.end());
  EXPECT_TRUE(kernel_->Shutdown().ok());
  EXPECT_EQ(host_->UnloadAll(), 0u);
}

// fx_wrapper (g++) and fx_clang (clang++) are the same molt.hpp plugin from two compilers.
class WrapperPluginTest : public PluginHostTest,
                          public ::testing::WithParamInterface<const char*> {};

TEST_P(WrapperPluginTest, MoltHppPluginBehavesTheSameFromEitherCompiler) {
  const std::string name = GetParam();
  Config config;
  config.Set("plugins." + name + ".greeting", std::string("hello"));
  Boot(std::move(config));
  ASSERT_TRUE(host_->LoadFiles({kFixtures + "/good/" + name + ".so"}).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  const std::string p = "Fx." + name + ".";
  std::vector<std::string> echoed;
  kernel_->bus().Subscribe(p + "Echoed", [&](std::string_view, Args args) {
    echoed.push_back(std::to_string(args.size()) + ":" + std::string(args[1].AsString()));
  });
  const Value echo[] = {Value::Int(1), Value::String("two")};
  kernel_->bus().Publish(p + "Echo", echo);
  EXPECT_EQ(echoed, std::vector<std::string>{"2:two"});

  lines_.clear();
  kernel_->bus().Publish(p + "Throw");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0],
            "[" + name + "@local#1] bus subscriber of \"" + p + "Throw\" failed: wrapper boom");

  Value veto_args[] = {Value::Int(12)};
  HookContext ctx;
  ctx.args = veto_args;
  EXPECT_FALSE(kernel_->hooks().Fire(p + "Veto", ctx).passed);

  Step(3);
  std::vector<std::string> answer;
  kernel_->bus().Subscribe(p + "Answer", [&](std::string_view, Args args) {
    answer = {std::to_string(args[0].AsInt()), args[1].AsBool() ? "passed" : "vetoed",
              std::string(args[2].AsString())};
  });
  kernel_->bus().Publish(p + "Ask");
  EXPECT_EQ(answer, (std::vector<std::string>{"3", "passed", "hello"}));
  EXPECT_STREQ(host_->plugins()[0].library->info().version, "2.1.0-rc.1+build.7");

  // A molt.hpp process inside the plugin: yields, sleeps, waits on a completion, completes.
  std::vector<std::string> walk;
  kernel_->bus().Subscribe(p + "Walked", [&](std::string_view, Args args) {
    walk.push_back("walked " + std::to_string(args[0].AsInt()));
  });
  kernel_->bus().Subscribe(p + "Exited", [&](std::string_view, Args args) {
    walk.push_back("exited " + std::to_string(args[0].AsInt()) + " " +
                   std::string(args[1].AsString()));
  });
  kernel_->bus().Publish(p + "Walk");
  Step(6);
  EXPECT_TRUE(walk.empty());  // parked on the completion
  const Value go[] = {Value::String("home")};
  kernel_->bus().Publish(p + "Go", go);
  Step(2);
  EXPECT_EQ(walk, (std::vector<std::string>{"walked 3", "exited 3 walked home"}));
  // A killed walker unwinds inside the plugin (ProcessKilled) and reports Killed.
  walk.clear();
  kernel_->bus().Publish(p + "Walk");
  Step(2);
  kernel_->bus().Publish(p + "Halt");
  EXPECT_EQ(walk, std::vector<std::string>{"exited 5 halted"});
  // A deferred function and a process exit function that throw: logged with their text.
  lines_.clear();
  kernel_->bus().Publish(p + "Guards");
  Step(2);
  EXPECT_NE(std::find(lines_.begin(), lines_.end(),
                      "[" + name + "@local#1] deferred function failed: deferred boom"),
            lines_.end())
      << testing::PrintToString(lines_);
  EXPECT_NE(std::find(lines_.begin(), lines_.end(),
                      "[" + name + "@local#1] process exit function failed: exit boom"),
            lines_.end())
      << testing::PrintToString(lines_);
  EXPECT_TRUE(kernel_->Shutdown().ok());
  EXPECT_EQ(host_->UnloadAll(), 0u);
  EXPECT_TRUE(fs::is_empty(copies_));
}

INSTANTIATE_TEST_SUITE_P(BothCompilers, WrapperPluginTest,
                         ::testing::Values("fx_wrapper", "fx_clang"));

TEST_F(PluginHostTest, UnloadAllStopsWhatStillRunsAndReportsRetiredLibraries) {
  ASSERT_TRUE(host_->LoadDirectory(kFixtures + "/unloadable").ok());
  ASSERT_TRUE(kernel_->Start().ok());
  lines_.clear();
  // Before the kernel shut down: each instance is stopped first. fx_nodelete always stays; glibc
  // pins fx_unique only when it is the first library in the process to define its unique symbol
  // (an earlier test in the same process may have been), and the loader reports what really
  // happened.
  const std::size_t retired = host_->UnloadAll();
  EXPECT_GE(retired, 1u);
  EXPECT_EQ(std::count_if(lines_.begin(), lines_.end(),
                          [](const std::string& l) {
                            return l.find("; kept mapped as retired") != std::string::npos;
                          }),
            static_cast<long>(retired));
  EXPECT_NE(std::find_if(lines_.begin(), lines_.end(),
                         [](const std::string& l) {
                           return l.rfind("[Loader] plugin \"fx_nodelete\"", 0) == 0;
                         }),
            lines_.end());
  EXPECT_TRUE(host_->plugins().empty());
}

}  // namespace
}  // namespace molt::kernel::loader

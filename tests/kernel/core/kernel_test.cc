// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/kernel.h"

#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel {
namespace {

class Native : public Service {
 public:
  using Fn = std::function<Status()>;
  Native(std::string name, std::vector<std::string> deps = {}) : name_(name), deps_(deps) {}
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& dependencies() const override { return deps_; }
  Status Init() override { return init ? init() : Status::Ok(); }
  Status Start() override { return start ? start() : Status::Ok(); }
  Status Stop() override { return stop ? stop() : Status::Ok(); }
  Fn init, start, stop;

 private:
  std::string name_;
  std::vector<std::string> deps_;
};

class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    capture_ = Logger::Get().Capture(
        [this](std::string_view line, LogLevel) { lines_.push_back(std::string(line)); });
    KernelOptions o;
    o.clock = &clock_;
    auto k = Kernel::Boot(std::move(o));
    ASSERT_TRUE(k.ok()) << k.status().message();
    kernel_ = std::move(k).value();
  }

  ManualClock clock_;
  std::unique_ptr<Kernel> kernel_;
  std::vector<std::string> lines_;
  Logger::Registration capture_;
};

TEST_F(KernelTest, SecondBootErrorsAndPointsAtCurrent) {
  EXPECT_EQ(Kernel::Current(), kernel_.get());
  auto again = Kernel::Boot({});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(),
            "a molt kernel is already booted in this process; use Kernel::Current()");
}

TEST_F(KernelTest, FreshBootWorksAfterShutdown) {
  ASSERT_TRUE(kernel_->Shutdown().ok());
  EXPECT_EQ(Kernel::Current(), nullptr);
  auto again = Kernel::Boot({});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Kernel::Current(), again.value().get());
}

TEST_F(KernelTest, StartBootsServicesAndLogsTheBootLine) {
  auto a = std::make_shared<Native>("Store");
  auto b = std::make_shared<Native>("Quest", std::vector<std::string>{"Store"});
  ASSERT_TRUE(kernel_->RegisterService(b).ok());
  ASSERT_TRUE(kernel_->RegisterService(a).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  ASSERT_FALSE(lines_.empty());
  EXPECT_TRUE(std::regex_match(lines_.back(),
                               std::regex(R"(\[molt \d+\.\d+\.\d+\] Server booted 2 services in )"
                                          R"(\d+\.\dms)")))
      << lines_.back();
  EXPECT_NE(lines_.back().find("[molt " + std::string(Kernel::Version()) + "]"), std::string::npos);
  EXPECT_EQ(kernel_->Stats().service_timings[0].name, "Store");
}

TEST_F(KernelTest, RegisterPublishesServiceRegistered) {
  std::vector<std::string> names;
  kernel_->bus().Subscribe("Kernel.ServiceRegistered", [&](std::string_view, Args args) {
    names.push_back(std::string(args[0].AsString()));
  });
  ASSERT_TRUE(kernel_->RegisterService(std::make_shared<Native>("Chat")).ok());
  EXPECT_FALSE(kernel_->RegisterService(std::make_shared<Native>("Chat")).ok());
  EXPECT_EQ(names, std::vector<std::string>{"Chat"});
}

TEST_F(KernelTest, StartTwiceErrors) {
  ASSERT_TRUE(kernel_->Start().ok());
  EXPECT_EQ(kernel_->Start().message(), "kernel already started");
  EXPECT_EQ(kernel_->RegisterService(std::make_shared<Native>("Late")).message(),
            "cannot register service \"Late\": kernel already started");
}

TEST_F(KernelTest, StartAndCreateScopeAfterShutdownError) {
  ASSERT_TRUE(kernel_->Shutdown().ok());
  EXPECT_EQ(kernel_->Start().message(), "kernel is shut down");
  EXPECT_EQ(kernel_->CreateScope().status().message(), "kernel is shut down");
  EXPECT_TRUE(kernel_->Shutdown().ok());  // idempotent
}

TEST_F(KernelTest, ShutdownFromInsideInitOrStartErrors) {
  Status from_init, from_start;
  auto a = std::make_shared<Native>("A");
  a->init = [&] {
    from_init = kernel_->Shutdown();
    return Status::Ok();
  };
  a->start = [&] {
    from_start = kernel_->Shutdown();
    return Status::Ok();
  };
  ASSERT_TRUE(kernel_->RegisterService(a).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  EXPECT_EQ(from_init.message(), "cannot shut down while services are booting");
  EXPECT_EQ(from_start.message(), "cannot shut down while services are booting");
  EXPECT_FALSE(kernel_->shut_down());
}

TEST_F(KernelTest, GetServiceNamesTheUnknownService) {
  EXPECT_EQ(kernel_->GetService("Nope").status().message(), "service \"Nope\" is not registered");
}

TEST_F(KernelTest, ShutdownReleasesInTheSpecOrder) {
  std::vector<std::string> order;
  auto a = std::make_shared<Native>("A");
  auto b = std::make_shared<Native>("B", std::vector<std::string>{"A"});
  a->stop = [&] {
    order.push_back("stop A");
    return Status::Ok();
  };
  b->stop = [&] {
    order.push_back("stop B");
    return Status::Ok();
  };
  ASSERT_TRUE(kernel_->RegisterService(a).ok());
  ASSERT_TRUE(kernel_->RegisterService(b).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  kernel_->OnShutdown(Kernel::ShutdownStage::kFirst, "sessions", [&] {
    order.push_back("sessions");
    return Status::Ok();
  });
  kernel_->OnShutdown(Kernel::ShutdownStage::kAfterScopes, "processes", [&] {
    order.push_back("processes");
    return Status::Ok();
  });
  auto scope = kernel_->CreateScope();
  ASSERT_TRUE(scope.ok());
  (*scope)->Add([&] { order.push_back("scope"); });
  int ran = 0;
  kernel_->scheduler().Schedule([&] { ++ran; });
  Connection sub = kernel_->bus().Subscribe("T", [](std::string_view, Args) {});
  ASSERT_TRUE(kernel_->Shutdown().ok());
  EXPECT_EQ(order,
            (std::vector<std::string>{"sessions", "stop B", "stop A", "scope", "processes"}));
  kernel_->scheduler().Step();
  EXPECT_EQ(ran, 0);  // pending tasks are gone
  EXPECT_FALSE(sub.Connected());
}

TEST_F(KernelTest, ShutdownCollectsEveryFailureAndFinishesTheRest) {
  auto a = std::make_shared<Native>("A");
  auto b = std::make_shared<Native>("B");
  bool b_stopped = false;
  a->stop = [] { return Status::Internal("disk gone"); };
  b->stop = [&] {
    b_stopped = true;
    throw std::runtime_error("socket gone");
    return Status::Ok();
  };
  ASSERT_TRUE(kernel_->RegisterService(a).ok());
  ASSERT_TRUE(kernel_->RegisterService(b).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  kernel_->OnShutdown(Kernel::ShutdownStage::kAfterScopes, "processes",
                      [] { return Status::Internal("3 processes would not die"); });
  Status s = kernel_->Shutdown();
  EXPECT_TRUE(b_stopped);
  EXPECT_EQ(s.message(),
            "kernel shutdown failed:\n"
            "  service \"B\": stop failed: threw: socket gone\n"
            "  service \"A\": stop failed: disk gone\n"
            "  processes: 3 processes would not die");
  EXPECT_TRUE(kernel_->shut_down());
}

TEST_F(KernelTest, ScheduledTaskErrorsBecomeAWarning) {
  kernel_->scheduler().Schedule([] { throw std::runtime_error("nil index"); }, Priority::kNormal,
                                TaskOrigin::Named("Mover"));
  kernel_->scheduler().Step();
  ASSERT_FALSE(lines_.empty());
  EXPECT_EQ(lines_.back(), "[molt] scheduled task errored: Mover: nil index");
}

TEST_F(KernelTest, APhasesTaskErrorsBecomeAWarningNamingThePhase) {
  kernel_->scheduler()
      .ForPhase(Phase::kPostTick)
      .Schedule([] { throw std::runtime_error("no replica"); }, Priority::kNormal,
                TaskOrigin::Named("Replicator"));
  kernel_->scheduler().Step();
  ASSERT_FALSE(lines_.empty());
  EXPECT_EQ(lines_.back(), "[molt] post_tick task errored: Replicator: no replica");
  EXPECT_EQ(kernel_->scheduler().FindPhase(Phase::kPostTick)->stats().errors, 1u);
  EXPECT_EQ(kernel_->scheduler().stats().errors, 0u);
}

TEST_F(KernelTest, StatsJsonCarriesVersionRoleSchedulerAndTimings) {
  ASSERT_TRUE(kernel_->RegisterService(std::make_shared<Native>("Chat")).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  kernel_->scheduler().Schedule([] {});
  kernel_->scheduler().Step();
  const std::string json = kernel_->StatsJson();
  EXPECT_NE(json.find("\"version\":\"" + std::string(Kernel::Version()) + "\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"role\":\"Server\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"tasks_run\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"Chat\""), std::string::npos) << json;
  EXPECT_EQ(kernel_->config().GetValue("kernel.version").AsString(), Kernel::Version());
  EXPECT_EQ(kernel_->config().GetValue("kernel.role").AsString(), "Server");
}

TEST(KernelBootTest, RefusesABadTickRate) {
  KernelOptions o;
  o.tick_rate = 0;
  EXPECT_EQ(Kernel::Boot(std::move(o)).status().message(),
            "tick rate must be a finite number of hertz above 0");
}

TEST(ResolveBudgetTest, ServerDefaultIsFrameAwareWithSpecTargetAndFloor) {
  BudgetPolicy p = ResolveBudget({}, Role::kServer);
  EXPECT_EQ(p.floor, std::chrono::microseconds(1500));
  ASSERT_TRUE(p.target.has_value());
  EXPECT_EQ(*p.target, std::chrono::microseconds(16500));
}

TEST(ResolveBudgetTest, ClientDefaultIsAFixedSlice) {
  BudgetPolicy p = ResolveBudget({}, Role::kClient);
  EXPECT_EQ(p.floor, std::chrono::microseconds(1500));
  EXPECT_FALSE(p.target.has_value());
}

TEST(ResolveBudgetTest, BudgetAloneIsAFixedSliceOnEitherRole) {
  SchedulerConfig c;
  c.budget = std::chrono::milliseconds(2);
  for (Role role : {Role::kServer, Role::kClient}) {
    BudgetPolicy p = ResolveBudget(c, role);
    EXPECT_EQ(p.floor, std::chrono::milliseconds(2));
    EXPECT_FALSE(p.target.has_value());
  }
}

TEST(ResolveBudgetTest, TargetTurnsOnFrameAwareWithBudgetAsFloor) {
  SchedulerConfig c;
  c.target_frame = std::chrono::milliseconds(20);
  c.budget = std::chrono::milliseconds(2);
  BudgetPolicy p = ResolveBudget(c, Role::kClient);
  EXPECT_EQ(p.floor, std::chrono::milliseconds(2));
  EXPECT_EQ(*p.target, std::chrono::milliseconds(20));
}

}  // namespace
}  // namespace molt::kernel

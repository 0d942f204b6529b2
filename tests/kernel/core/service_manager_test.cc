// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/core/service_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernel/src/core/logger.h"

namespace molt::kernel {
namespace {

// A native service that records its calls in a shared journal and fails where told.
class FakeService : public Service {
 public:
  FakeService(std::string name, std::vector<std::string> deps, std::vector<std::string>* journal)
      : name_(std::move(name)), deps_(std::move(deps)), journal_(journal) {}

  const std::string& name() const override { return name_; }
  const std::vector<std::string>& dependencies() const override { return deps_; }
  Status Init() override { return Timed(init_takes_, &init_ran_for_, "init", fail_init_); }
  Status Start() override { return Timed(start_takes_, &start_ran_for_, "start", fail_start_); }
  Status Stop() override {
    if (stop_takes_.count() > 0) {
      std::this_thread::sleep_for(stop_takes_);
    }
    return Step("stop", fail_stop_);
  }
  void Halt() override { journal_->push_back("halt " + name_); }

  bool fail_init_ = false;
  bool fail_start_ = false;
  bool fail_stop_ = false;
  bool throw_instead_ = false;
  std::chrono::milliseconds stop_takes_{0};
  std::chrono::milliseconds init_takes_{0};
  std::chrono::milliseconds start_takes_{0};
  // How long Init() and Start() took, measured inside them.
  Duration init_ran_for_{};
  Duration start_ran_for_{};

 private:
  Status Timed(std::chrono::milliseconds takes, Duration* ran_for, const char* what, bool fail) {
    const TimePoint t0 = RealNow();
    if (takes.count() > 0) {
      std::this_thread::sleep_for(takes);
    }
    Status s = Step(what, fail);
    *ran_for = RealNow() - t0;
    return s;
  }
  Status Step(const char* what, bool fail) {
    journal_->push_back(std::string(what) + " " + name_);
    if (fail && throw_instead_) {
      throw std::runtime_error(std::string(what) + " exploded");
    }
    return fail ? Status::Internal(std::string(what) + " refused") : Status::Ok();
  }
  std::string name_;
  std::vector<std::string> deps_;
  std::vector<std::string>* journal_;
};

class ServiceManagerTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeService> Add(std::string name, std::vector<std::string> deps = {}) {
    auto s = std::make_shared<FakeService>(std::move(name), std::move(deps), &journal_);
    EXPECT_TRUE(manager_.Register(s).ok());
    return s;
  }
  std::vector<std::string> OrderNames() {
    auto order = manager_.ResolveOrder();
    std::vector<std::string> names;
    if (order.ok()) {
      for (Service* s : *order) {
        names.push_back(s->name());
      }
    }
    return names;
  }

  ServiceManager manager_;
  std::vector<std::string> journal_;
  Logger::Registration quiet_ = Logger::Get().Capture([](std::string_view, LogLevel) {});
};

TEST_F(ServiceManagerTest, BootsEveryInitBeforeAnyStartInDependencyOrder) {
  Add("Quest", {"Inventory"});
  Add("Inventory", {"Store"});
  Add("Store");
  Add("Chat");
  ASSERT_TRUE(manager_.Boot().ok());
  EXPECT_EQ(journal_, (std::vector<std::string>{"init Store", "init Inventory", "init Quest",
                                                "init Chat", "start Store", "start Inventory",
                                                "start Quest", "start Chat"}));
  EXPECT_EQ(manager_.state(), ServiceManager::State::kRunning);
}

TEST_F(ServiceManagerTest, UnconstrainedServicesKeepRegistrationOrder) {
  Add("C");
  Add("A");
  Add("B");
  EXPECT_EQ(OrderNames(), (std::vector<std::string>{"C", "A", "B"}));
}

TEST_F(ServiceManagerTest, CycleErrorsWithTheFullChain) {
  Add("A", {"B"});
  Add("B", {"C"});
  Add("C", {"A"});
  Add("D");
  Status s = manager_.Boot();
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "dependency cycle: A -> B -> C -> A");
  EXPECT_TRUE(journal_.empty());  // nothing ran
}

TEST_F(ServiceManagerTest, SelfDependencyIsACycle) {
  Add("A", {"A"});
  EXPECT_EQ(manager_.Boot().message(), "dependency cycle: A -> A");
}

TEST_F(ServiceManagerTest, CycleBehindAHealthyServiceIsReportedFromTheCycle) {
  Add("Root");
  Add("X", {"Root", "Y"});
  Add("Y", {"X"});
  EXPECT_EQ(manager_.Boot().message(), "dependency cycle: X -> Y -> X");
}

TEST_F(ServiceManagerTest, DependencyOnAnUnregisteredServiceErrors) {
  Add("Quest", {"Inventory"});
  Status s = manager_.Boot();
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.message(), "service \"Quest\" depends on \"Inventory\", which is not registered");
}

TEST_F(ServiceManagerTest, InitFailureStopsEveryAttemptedServiceInReverse) {
  Add("A");
  Add("B", {"A"});
  auto c = Add("C", {"B"});
  Add("D", {"C"});
  c->fail_init_ = true;
  Status s = manager_.Boot();
  EXPECT_EQ(s.message(), "service \"C\": init failed: init refused");
  EXPECT_EQ(journal_,
            (std::vector<std::string>{"init A", "init B", "init C", "stop C", "stop B", "stop A"}));
  EXPECT_EQ(manager_.state(), ServiceManager::State::kFailed);
}

TEST_F(ServiceManagerTest, StartFailureStopsEveryServiceInReverseEvenThoseNeverStarted) {
  Add("A");
  auto b = Add("B", {"A"});
  Add("C", {"B"});
  b->fail_start_ = true;
  Status s = manager_.Boot();
  EXPECT_EQ(s.message(), "service \"B\": start failed: start refused");
  EXPECT_EQ(journal_, (std::vector<std::string>{"init A", "init B", "init C", "start A", "start B",
                                                "stop C", "stop B", "stop A"}));
}

TEST_F(ServiceManagerTest, ThrowingInitIsAnInternalErrorWithItsText) {
  auto a = Add("A");
  a->fail_init_ = true;
  a->throw_instead_ = true;
  Status s = manager_.Boot();
  EXPECT_EQ(s.code(), Status::Code::kInternal);
  EXPECT_EQ(s.message(), "service \"A\": init failed: threw: init exploded");
}

TEST_F(ServiceManagerTest, StopAllRunsInReverseBootOrderEachIsolated) {
  std::vector<std::string> lines;
  auto capture = Logger::Get().Capture(
      [&](std::string_view line, LogLevel) { lines.push_back(std::string(line)); });
  Add("A");
  auto b = Add("B", {"A"});
  Add("C", {"B"});
  ASSERT_TRUE(manager_.Boot().ok());
  journal_.clear();
  b->fail_stop_ = true;
  b->throw_instead_ = true;
  std::vector<std::string> observed;
  std::vector<Status> failures =
      manager_.StopAll([&](const Service& s, Duration, const Status& st) {
        observed.push_back(s.name() + (st.ok() ? " ok" : " failed"));
      });
  EXPECT_EQ(journal_, (std::vector<std::string>{"stop C", "stop B", "stop A"}));
  EXPECT_EQ(observed, (std::vector<std::string>{"C ok", "B failed", "A ok"}));
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].message(), "service \"B\": stop failed: threw: stop exploded");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[ServiceManager] service \"B\": stop failed: threw: stop exploded");
}

TEST_F(ServiceManagerTest, StopAllStopsEachServiceOnce) {
  Add("A");
  ASSERT_TRUE(manager_.Boot().ok());
  manager_.StopAll();
  manager_.StopAll();
  EXPECT_EQ(journal_, (std::vector<std::string>{"init A", "start A", "stop A"}));
}

// A swap bounds the soft stop (the spec's 5 s STOP_DEADLINE): once the stops took the budget,
// the services left are halted without their stop logic, each reported.
TEST_F(ServiceManagerTest, StopAllHaltsWhatIsLeftOnceItsBudgetIsSpent) {
  Add("A");
  Add("B", {"A"});
  auto c = Add("C", {"B"});
  ASSERT_TRUE(manager_.Boot().ok());
  journal_.clear();
  c->stop_takes_ = std::chrono::milliseconds(30);
  std::vector<Status> failures = manager_.StopAll(nullptr, std::chrono::milliseconds(10));
  EXPECT_EQ(journal_, (std::vector<std::string>{"stop C", "halt B", "halt A"}));
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].code(), Status::Code::kTimedOut);
  EXPECT_EQ(failures[0].message(),
            "service \"B\": stop skipped: the stops before it took more than 0.01 s; hard stop");
  ASSERT_EQ(manager_.halted().size(), 2u);
  EXPECT_EQ(manager_.halted()[1]->name(), "A");
  manager_.StopAll();  // each once, halted ones included
  EXPECT_EQ(journal_.size(), 3u);
}

TEST_F(ServiceManagerTest, StopAllWithoutABudgetRunsEveryStop) {
  Add("A");
  auto b = Add("B", {"A"});
  ASSERT_TRUE(manager_.Boot().ok());
  journal_.clear();
  b->stop_takes_ = std::chrono::milliseconds(5);
  EXPECT_TRUE(manager_.StopAll().empty());
  EXPECT_EQ(journal_, (std::vector<std::string>{"stop B", "stop A"}));
  EXPECT_TRUE(manager_.halted().empty());
}

TEST_F(ServiceManagerTest, RefusesDuplicatesAndRegistrationAfterBoot) {
  Add("A");
  Status dup =
      manager_.Register(std::make_shared<FakeService>("A", std::vector<std::string>{}, &journal_));
  EXPECT_EQ(dup.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(dup.message(), "service \"A\" is already registered");
  ASSERT_TRUE(manager_.Boot().ok());
  Status late =
      manager_.Register(std::make_shared<FakeService>("B", std::vector<std::string>{}, &journal_));
  EXPECT_EQ(late.message(), "cannot register service \"B\": services are already booted");
  EXPECT_EQ(manager_.size(), 1u);
}

// Each phase of each service is timed around that service's own call: at least what the call
// measured of itself (A's init and B's start sleep), and all of them together within the Boot()
// that ran them. Measurements against each other, never against the wall clock.
TEST_F(ServiceManagerTest, RecordsBootTimingsPerService) {
  std::shared_ptr<FakeService> a = Add("A");
  std::shared_ptr<FakeService> b = Add("B");
  a->init_takes_ = std::chrono::milliseconds(1);
  b->start_takes_ = std::chrono::milliseconds(1);
  const TimePoint before = RealNow();
  ASSERT_TRUE(manager_.Boot().ok());
  const Duration boot = RealNow() - before;
  ASSERT_EQ(manager_.timings().size(), 2u);
  const ServiceTiming& ta = manager_.timings()[0];
  const ServiceTiming& tb = manager_.timings()[1];
  EXPECT_EQ(ta.name, "A");
  EXPECT_EQ(tb.name, "B");
  EXPECT_GE(ta.init, a->init_ran_for_);
  EXPECT_GE(ta.start, a->start_ran_for_);
  EXPECT_GE(tb.init, b->init_ran_for_);
  EXPECT_GE(tb.start, b->start_ran_for_);
  EXPECT_LE(ta.init + ta.start + tb.init + tb.start, boot);
  EXPECT_EQ(manager_.Get("B")->name(), "B");
  EXPECT_EQ(manager_.Get("Z"), nullptr);
}

}  // namespace
}  // namespace molt::kernel

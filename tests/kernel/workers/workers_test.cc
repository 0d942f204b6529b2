// SPDX-License-Identifier: Apache-2.0
// The workers slots (ABI 1.6, workers/workers_api.h): a real plugin (tests/fixtures/plugins/
// worker.cc, builds work/v1 and work/v2) loaded by the real loader submits jobs that run on real
// threads, and is swapped while its jobs run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernel/src/abi/worker_thread.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel::workers {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string Build(const std::string& name) {
  return std::string(MOLT_FIXTURE_DIR) + "/work/" + name;
}

// Whether a library file whose path contains `part` is mapped into this process.
bool Mapped(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

class WorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    copies_ = ::testing::TempDir() + "molt_workers_" + std::to_string(::getpid());
    fs::remove_all(copies_);
    auto k = Kernel::Boot({});
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kernel_ = std::move(k.value());
    plugins_ = std::make_unique<loader::PluginHost>(*kernel_, copies_);
    events_sub_ = kernel_->bus().Subscribe("Work.*", [this](std::string_view topic, Args a) {
      std::string line(topic);
      for (const Value& v : a) {
        line += " " + (v.type == Value::kString ? std::string(v.AsString())
                       : v.type == Value::kBool ? std::string(v.AsBool() ? "true" : "false")
                                                : std::to_string(v.AsInt()));
      }
      events_.push_back(line);
    });
  }
  void TearDown() override {
    events_sub_.Disconnect();
    if (workers_ != nullptr) {
      EXPECT_TRUE(Idle());  // nothing left running into the next test
    }
    (void)kernel_->Shutdown();
    plugins_.reset();
    kernel_.reset();
    fs::remove_all(copies_);
  }
  void Attach(WorkersOptions o = {2, std::chrono::seconds(10), 10000, 256}) {
    workers_ = &AttachWorkers(plugins_->shared(), o);
  }
  void BootWith(const std::string& build) {
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
  // The first event starting with `prefix` (waiting for it), or "".
  std::string Await(const std::string& prefix) {
    std::string found;
    RunUntil([&] {
      for (const std::string& e : events_) {
        if (e.rfind(prefix, 0) == 0) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  bool Saw(const std::string& prefix) const {
    return std::any_of(events_.begin(), events_.end(),
                       [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  }
  void Go(const std::string& mode, const std::string& input, int tag, double timeout = 0,
          bool detached = false) {
    std::vector<Value> args = {Value::String(mode), Value::String(input), Value::Int(tag),
                               Value::Double(timeout), Value::Bool(detached)};
    kernel_->bus().Publish("Work.Go", args);
  }
  // The plugin's label in errors: "fx_worker@<generation>".
  std::string Label() const { return "fx_worker@" + plugins_->generation(); }
  // Waits until no job is left (every function returned, every result handed over).
  bool Idle() {
    return RunUntil([&] { return workers_->stats().jobs == 0; });
  }

  std::string copies_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<loader::PluginHost> plugins_;
  Workers* workers_ = nullptr;
  Connection events_sub_;
  std::vector<std::string> events_;
};

TEST_F(WorkersTest, AJobsResultReachesItsHandlerOnTheKernelThread) {
  Attach();
  BootWith("v1");
  Go("square", "7", 1);
  EXPECT_EQ(Await("Work.Done v1 1"), "Work.Done v1 1 0 49 0 false");
  ASSERT_TRUE(Idle());
  const WorkersStats s = workers_->stats();
  EXPECT_EQ(s.pool.submitted, 1u);
  EXPECT_EQ(s.pool.completed, 1u);
  EXPECT_EQ(s.delivered, 1u);
  EXPECT_EQ(s.handlers, 1u);
  EXPECT_EQ(s.pool.threads, 2u);
}

TEST_F(WorkersTest, ForkJoinHandsBackEveryResultInItemOrder) {
  Attach();
  BootWith("v1");
  std::string items, squares;
  for (int i = 1; i <= 41; ++i) {
    items += (i > 1 ? "," : "") + std::to_string(i);
    squares += (i > 1 ? "," : "") + std::to_string(i * i);
  }
  Go("fork", items, 2);
  EXPECT_EQ(Await("Work.Done v1 2"), "Work.Done v1 2 0 " + squares + " 0 false");
}

TEST_F(WorkersTest, AFailedItemEndsTheForkJoinWithItsIndexOnce) {
  Attach();
  BootWith("v1");
  Go("fail", "1,2,3,bad,5,6,7,bad,9", 3);
  // Chunks run in parallel: the failure reported is the first one seen, either of the two.
  const std::string done = Await("Work.Done v1 3");
  const std::string rejected = "Work.Done v1 3 " + std::to_string(MOLT_ERR_REJECTED);
  EXPECT_TRUE(done == rejected + " item 3: bad item 3 false" ||
              done == rejected + " item 7: bad item 7 false")
      << done;
  ASSERT_TRUE(Idle());
  EXPECT_EQ(std::count_if(events_.begin(), events_.end(),
                          [](const std::string& e) { return e.starts_with("Work.Done"); }),
            1);
  EXPECT_EQ(workers_->stats().pool.failed, 1u);
}

TEST_F(WorkersTest, TheCSlotsTakeNullInputAndNullItemsOfSizeZero) {
  Attach();
  BootWith("v1");
  Go("raw", "", 30);
  EXPECT_EQ(Await("Work.Done v1 30"), "Work.Done v1 30 0 0 0 false");
  EXPECT_EQ(Await("Work.Done v1 31"), "Work.Done v1 31 0 0,1 0 false");
}

TEST_F(WorkersTest, AJobThatThrowsFailsWithItsText) {
  Attach();
  BootWith("v1");
  Go("throw", "", 4);
  EXPECT_EQ(Await("Work.Done v1 4"),
            "Work.Done v1 4 " + std::to_string(MOLT_ERR_INTERNAL) + " job boom 0 false");
}

TEST_F(WorkersTest, TheHostRefusesCallsFromAWorkerThread) {
  Attach();
  BootWith("v1");
  Go("host", "", 5);
  const std::string code = std::to_string(MOLT_ERR_STATE);
  EXPECT_EQ(Await("Work.Done v1 5"),
            "Work.Done v1 5 0 " + code + " " + code + " " + abi::kWorkerThreadRefusal + " 0 false");
  EXPECT_FALSE(Saw("Work.Leak"));  // the publish never happened
}

TEST_F(WorkersTest, ATimedOutJobIsReportedAtOnceAndItsWorkerReplaced) {
  Attach();
  BootWith("v1");
  Go("sleep", "600", 6, 0.05);
  const std::string done = Await("Work.Done v1 6");
  EXPECT_TRUE(done.starts_with("Work.Done v1 6 " + std::to_string(MOLT_ERR_TIMEOUT) +
                               " job 26 for handler \"solve\" timed out after 0.05 s"))
      << done;
  WorkersStats s = workers_->stats();
  EXPECT_EQ(s.pool.timed_out, 1u);
  EXPECT_EQ(s.pool.replaced, 1u);
  EXPECT_EQ(s.pool.threads, 2u);  // the pool kept its size
  EXPECT_EQ(s.pool.hung, 1u);
  // The pool serves on while the old worker sleeps.
  Go("square", "3", 7);
  EXPECT_EQ(Await("Work.Done v1 7"), "Work.Done v1 7 0 9 0 false");
  ASSERT_TRUE(Idle());
  s = workers_->stats();
  EXPECT_EQ(s.pool.hung, 0u);             // it returned and ended
  EXPECT_FALSE(Saw("Work.Done v1 6 0"));  // what it computed was dropped
}

TEST_F(WorkersTest, ACancelledJobIsNeverHeardOf) {
  Attach();
  BootWith("v1");
  Go("cancel", "100", 8);
  const std::string cancelled = Await("Work.Cancelled");
  EXPECT_TRUE(cancelled.starts_with("Work.Cancelled 0 " + std::to_string(MOLT_ERR_STALE) + " job "))
      << cancelled;
  EXPECT_NE(cancelled.find(" is not live (it ended, or is not plugin \"" + Label() + "\"'s)"),
            std::string::npos)
      << cancelled;
  ASSERT_TRUE(Idle());
  EXPECT_FALSE(Saw("Work.Done v1 8"));
  EXPECT_EQ(workers_->stats().pool.cancelled, 1u);
}

TEST_F(WorkersTest, BadCallsAreRefusedByName) {
  Attach();
  BootWith("v1");
  kernel_->bus().Publish("Work.Errors");
  auto error = [&](const std::string& what) {
    for (const std::string& e : events_) {
      if (e.starts_with("Work.Error " + what + " ")) {
        return e.substr(std::string("Work.Error ").size() + what.size() + 1);
      }
    }
    return std::string("(none)");
  };
  EXPECT_EQ(error("undeclared"), std::to_string(MOLT_ERR_NOT_FOUND) +
                                     " job handler \"nope\" is not declared by plugin \"" +
                                     Label() + "\": declare it with job_handler first");
  EXPECT_EQ(error("duplicate"), std::to_string(MOLT_ERR_ALREADY_EXISTS) +
                                    " job handler \"solve\" is already declared by plugin \"" +
                                    Label() + "\"");
  EXPECT_EQ(error("bad name"), std::to_string(MOLT_ERR_INVALID_ARGUMENT) +
                                   " job handler name \"no spaces\" must be 1..64 of "
                                   "[A-Za-z0-9_.:-]");
  EXPECT_EQ(error("no items"), std::to_string(MOLT_ERR_INVALID_ARGUMENT) +
                                   " count is 0: a fork_join takes 1 to 1000000 items");
  EXPECT_EQ(error("timeout"), std::to_string(MOLT_ERR_INVALID_ARGUMENT) +
                                  " timeout_seconds must be a finite number from 0 to 86400, not "
                                  "-1.000000");
  EXPECT_EQ(error("stale"), std::to_string(MOLT_ERR_STALE) + " job " +
                                std::to_string((999ull << 4) | 10) +
                                " is not live (it ended, or is not plugin \"" + Label() + "\"'s)");
  EXPECT_EQ(error("not a job"), std::to_string(MOLT_ERR_INVALID_ARGUMENT) + " task " +
                                    std::to_string((7ull << 4) | 3) + " is not a job");
  EXPECT_EQ(error("size"), std::to_string(MOLT_ERR_INVALID_ARGUMENT) +
                               " molt_job_spec.struct_size is 8, below 64 (its size in ABI 1.6, "
                               "the smallest accepted): set it to sizeof(molt_job_spec)");
  EXPECT_EQ(error("no fn"), std::to_string(MOLT_ERR_INVALID_ARGUMENT) + " spec->handler is NULL");
}

TEST_F(WorkersTest, AHostWithoutWorkersRefusesJobs) {
  // No layer: the plugin's init fails at its job_handler, naming why.
  ASSERT_TRUE(plugins_->LoadDirectory(Build("v1")).ok());
  const Status s = kernel_->Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("this host runs no worker jobs (moltd does)"), std::string::npos)
      << s.message();
}

TEST_F(WorkersTest, ADetachedJobCompletesIntoTheNextGeneration) {
  Attach();
  BootWith("v1");
  Go("sleep", "400", 10, 0, true);   // detached: survives the swap
  Go("sleep", "400", 11, 0, false);  // the v1 instance's own: dropped when it stops
  ASSERT_TRUE(RunUntil([&] { return workers_->stats().pool.running == 2; }));
  plugins_->set_health(3, milliseconds(20));  // v1 is let go once this health window passes
  const loader::SwapReport r = plugins_->Reload(Build("v2"), "test");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.held.size(), 1u);
  EXPECT_EQ(r.held[0], "fx_worker@" + r.previous +
                           ": 2 worker job(s) still running keep its library mapped until they "
                           "return");
  RunUntil([] { return false; }, milliseconds(50));  // the old generation's release task runs
  EXPECT_TRUE(Mapped("fx_worker_v1"));               // its code still runs on the workers
  // v1's function ran; v2's handler heard it, marked inherited.
  EXPECT_EQ(Await("Work.Done"), "Work.Done v2 10 0 slept v1 0 true");
  ASSERT_TRUE(Idle());
  EXPECT_FALSE(Saw("Work.Done v2 11"));
  EXPECT_FALSE(Saw("Work.Done v1"));
  const WorkersStats s = workers_->stats();
  EXPECT_EQ(s.inherited, 1u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.handlers, 1u);             // v1's went with it
  EXPECT_FALSE(Mapped("fx_worker_v1"));  // the last job's end unloaded it
  // The new generation's own jobs run as ever.
  Go("square", "12", 12);
  EXPECT_EQ(Await("Work.Done v2 12"), "Work.Done v2 12 0 144 0 false");
}

TEST_F(WorkersTest, TheStatsSectionNamesEveryCounter) {
  Attach();
  BootWith("v1");
  Go("square", "2", 1);
  Await("Work.Done v1 1");
  ASSERT_TRUE(Idle());
  const boost::json::object o = admin::WorkersJson(workers_->stats());
  for (const char* key : {"threads", "hung", "queued", "running", "submitted", "completed",
                          "failed", "timed_out", "cancelled", "refused", "replaced", "handlers",
                          "jobs", "detached", "delivered", "inherited", "dropped"}) {
    EXPECT_TRUE(o.contains(key)) << key;
  }
  EXPECT_EQ(o.at("completed").as_uint64(), 1u);
}

TEST_F(WorkersTest, TheCloseCancelsJobsAndTheirHandlersHearIt) {
  Attach({1, std::chrono::seconds(10), 10000, 256});
  BootWith("v1");
  Go("sleep", "200", 1);
  Go("square", "5", 2);  // waits behind it: one worker
  workers_->Close();
  const std::string cancelled = std::to_string(MOLT_ERR_CANCELLED);
  EXPECT_TRUE(Await("Work.Done v1 1")
                  .starts_with("Work.Done v1 1 " + cancelled + " the server is closing: job "));
  EXPECT_TRUE(Await("Work.Done v1 2").starts_with("Work.Done v1 2 " + cancelled));
  ASSERT_TRUE(Idle());
  events_.clear();
  Go("square", "5", 3);  // refused: Work.Go's subscriber reports the error
  RunUntil([] { return false; }, milliseconds(20));
  EXPECT_FALSE(Saw("Work.Done"));
  EXPECT_EQ(workers_->stats().pool.submitted, 2u);
}

}  // namespace
}  // namespace molt::kernel::workers

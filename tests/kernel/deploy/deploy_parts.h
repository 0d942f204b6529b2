// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/deploy/deploy_parts.h
//
// DeployParts: the real parts deploy::Deploys composes (a registry in a scratch directory, the
// refusals, the keys, no fleet, the serving state, the stored builds, the reports, the deploy
// thread and its swap queue), for the tests of one part at a time (rollouts_test.cc,
// pins_test.cc, ...). The kernel's side of a swap is the seam: it answers `outcome` at once and
// records what it was asked. Calls run on the deploy thread, as Deploys runs them:
//
//   DeployParts parts(dir_.path(), {.prod_rules = false});
//   Rollouts rollouts(parts.rules(), parts.rollout_parts());
//   Result<DeployOutcome> r = parts.Await<DeployOutcome>(
//       [&](Done<DeployOutcome> done) { rollouts.Deploy(request, std::chrono::seconds(5), done);
//       });
#ifndef MOLT_TESTS_KERNEL_DEPLOY_DEPLOY_PARTS_H_
#define MOLT_TESTS_KERNEL_DEPLOY_DEPLOY_PARTS_H_

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernel/src/core/serial_thread.h"
#include "kernel/src/deploy/build_store.h"
#include "kernel/src/deploy/fleet_link.h"
#include "kernel/src/deploy/pending_reply.h"
#include "kernel/src/deploy/pins.h"
#include "kernel/src/deploy/refusals.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/reports.h"
#include "kernel/src/deploy/rollouts.h"
#include "kernel/src/deploy/serving_state.h"
#include "kernel/src/deploy/signatures.h"
#include "kernel/src/deploy/swap_queue.h"
#include "tests/kernel/deploy/test_builds.h"

namespace molt::kernel::deploy::test {

class DeployParts {
 public:
  struct Options {
    bool prod_rules = false;
    std::string branch = "prod";
    std::string server_id = "a";  // bucket 70
    std::string keys_file = "";
  };

  DeployParts(const std::string& dir, Options o)
      : options_(std::move(o)),
        registry(Registry::Open(dir + "/registry").value()),
        refusals(nullptr, std::chrono::milliseconds(60'000)),
        signatures(options_.keys_file, options_.prod_rules),
        fleet("", options_.server_id, options_.branch, *registry),
        serving(*registry, options_.branch),
        builds(*registry, fleet),
        reports(*registry, fleet, options_.server_id, options_.branch),
        swaps(thread) {
    signatures.Load("at boot");
    swaps.set_swap(
        [this](SwapTarget target, std::string reason, std::function<void(SwapOutcome)> done) {
          std::lock_guard lock(mu_);
          swapped_.push_back(target.build_id + " " + reason);
          done(outcome);
        });
    thread.Start();
  }
  ~DeployParts() { thread.Stop(); }

  Rollouts::Rules rules() const {
    return {options_.branch, options_.prod_rules, options_.server_id};
  }
  Rollouts::Parts rollout_parts() {
    return {*registry, fleet, builds, signatures, refusals, reports, serving, swaps, thread};
  }
  Pins::Parts pin_parts() {
    return {*registry, builds, signatures, refusals, serving, swaps, thread};
  }

  // Runs `fn` on the deploy thread and waits until it ran.
  void Run(const std::function<void()>& fn) {
    std::promise<void> ran;
    thread.Post([&] {
      fn();
      ran.set_value();
    });
    ran.get_future().wait();
  }
  // Calls `call` on the deploy thread and waits for the answer it gives `done`.
  template <class T>
  Result<T> Await(const std::function<void(Done<T>)>& call) {
    auto answer = std::make_shared<std::promise<Result<T>>>();
    std::future<Result<T>> got = answer->get_future();
    thread.Post(
        [&call, answer] { call([answer](Result<T> r) { answer->set_value(std::move(r)); }); });
    return got.get();
  }
  // Stores a build like `b` (as an upload) and returns it.
  StoredBuild Store(const TestBuild& b) {
    const std::string file = builds.UploadPath();
    WriteTestBuild(file, b);
    Result<StoredBuild> s = registry->AddBuild(file);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.value();
  }
  // "<build id> <reason>" of each swap asked, in order.
  std::vector<std::string> Swaps() {
    std::lock_guard lock(mu_);
    return swapped_;
  }

 private:
  const Options options_;

 public:
  std::unique_ptr<Registry> registry;
  Refusals refusals;
  Signatures signatures;
  FleetLink fleet;
  ServingState serving;
  BuildStore builds;
  Reports reports;
  SerialThread thread;
  SwapQueue swaps;
  SwapOutcome outcome{"swapped", "", "{}", false};  // what every swap answers

 private:
  std::mutex mu_;
  std::vector<std::string> swapped_;
};

}  // namespace molt::kernel::deploy::test

#endif  // MOLT_TESTS_KERNEL_DEPLOY_DEPLOY_PARTS_H_

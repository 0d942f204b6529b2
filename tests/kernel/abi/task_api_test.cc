// SPDX-License-Identifier: Apache-2.0
// The task slots (task_api.h), called exactly as a plugin calls them (abi_fixture.h): one-shot,
// delayed and periodic tasks, the tick's phases, a wrong spec named, a task that cancels itself,
// and the profile each task runs under.
#include "kernel/src/abi/task_api.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/kernel/abi/abi_fixture.h"

namespace molt::kernel::abi {
namespace {

using TaskApiTest = AbiFixture;

TEST_F(TaskApiTest, TasksRunReleaseAndCancel) {
  Boot();
  Journal j;
  molt_task_t once = 0, every = 0, later = 0;
  auto record = [](void* ud) -> molt_status_t {
    static_cast<Journal*>(ud)->events.push_back("run");
    return MOLT_OK;
  };
  ASSERT_EQ(api().task_schedule(a(), MOLT_PRIORITY_HIGH, record, &j, RecordRelease, &once),
            MOLT_OK);
  ASSERT_EQ(api().task_every(a(), 1.0, MOLT_PRIORITY_LOW, record, &j, RecordRelease, &every),
            MOLT_OK);
  ASSERT_EQ(api().task_after(a(), 5.0, MOLT_PRIORITY_NORMAL, record, &j, RecordRelease, &later),
            MOLT_OK);
  kernel_->scheduler().Step();
  EXPECT_EQ(j.events, (std::vector<std::string>{"run", "release"}));  // one-shot: run, then over
  EXPECT_EQ(api().task_cancel(a(), once), MOLT_ERR_STALE);
  clock_.Advance(std::chrono::seconds(1));
  kernel_->scheduler().Step();
  clock_.Advance(std::chrono::seconds(1));
  kernel_->scheduler().Step();
  EXPECT_EQ(j.events.size(), 4u);
  ASSERT_EQ(api().task_cancel(a(), every), MOLT_OK);
  ASSERT_EQ(api().task_cancel(a(), later), MOLT_OK);
  clock_.Advance(std::chrono::seconds(10));
  kernel_->scheduler().Step();
  EXPECT_EQ(j.events,
            (std::vector<std::string>{"run", "release", "run", "run", "release", "release"}));
}

// ABI 1.5: task_start puts tasks in the pre_tick and post_tick phases, which run around the main
// scheduler's tasks in every step; cancels and the instance's stop release them like any task.
TEST_F(TaskApiTest, PhaseTasksRunAroundTheTicksTasksAndAreReleasedWithTheirInstance) {
  static std::vector<std::string>* log;
  std::vector<std::string> events;
  log = &events;
  static char pre[] = "pre", main[] = "main", post[] = "post", later[] = "later";
  auto record = [](void* ud) -> molt_status_t {
    log->push_back(static_cast<char*>(ud));
    return MOLT_OK;
  };
  auto release = [](void* ud) { log->push_back(std::string("release ") + static_cast<char*>(ud)); };
  Boot();
  molt_task_spec spec{};
  spec.struct_size = sizeof(spec);
  spec.kind = MOLT_TASK_EVERY;
  molt_task_t t_pre = 0, t_main = 0, t_post = 0, t_later = 0;
  spec.phase = MOLT_PHASE_POST_TICK;  // asked for first, runs last
  ASSERT_EQ(api().task_start(a(), &spec, record, post, release, &t_post), MOLT_OK) << Error(a());
  spec.phase = MOLT_PHASE_TICK;
  ASSERT_EQ(api().task_start(a(), &spec, record, main, release, &t_main), MOLT_OK);
  spec.phase = MOLT_PHASE_PRE_TICK;
  ASSERT_EQ(api().task_start(a(), &spec, record, pre, release, &t_pre), MOLT_OK);
  spec.kind = MOLT_TASK_AFTER;
  spec.seconds = 2;
  spec.phase = MOLT_PHASE_POST_TICK;
  ASSERT_EQ(api().task_start(a(), &spec, record, later, release, &t_later), MOLT_OK);
  kernel_->scheduler().Step();
  EXPECT_EQ(events, (std::vector<std::string>{"pre", "main", "post"}));
  clock_.Advance(std::chrono::seconds(2));
  events.clear();
  kernel_->scheduler().Step();
  EXPECT_EQ(events, (std::vector<std::string>{"pre", "main", "post", "later", "release later"}));
  events.clear();
  ASSERT_EQ(api().task_cancel(a(), t_pre), MOLT_OK);
  EXPECT_EQ(api().task_cancel(a(), t_later), MOLT_ERR_STALE);  // ran once: over
  clock_.Advance(std::chrono::seconds(1));
  kernel_->scheduler().Step();
  EXPECT_EQ(events, (std::vector<std::string>{"release pre", "main", "post"}));
  const std::string stats = kernel_->StatsJson();
  EXPECT_NE(stats.find("\"phases\":{\"pre_tick\":{"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"post_tick\":{"), std::string::npos) << stats;
  events.clear();
  ASSERT_TRUE(alpha_->Stop().ok());  // a swap or the close: each phase's task goes with it
  EXPECT_EQ(events, (std::vector<std::string>{"release main", "release post"}));
  events.clear();
  clock_.Advance(std::chrono::seconds(1));
  kernel_->scheduler().Step();
  EXPECT_TRUE(events.empty());
}

TEST_F(TaskApiTest, ATaskSpecThatIsWrongIsRefusedNamingTheField) {
  Boot();
  auto task = [](void*) -> molt_status_t { return MOLT_OK; };
  molt_task_t t = 0;
  molt_task_spec spec{};
  spec.struct_size = sizeof(spec);
  spec.phase = 3;
  EXPECT_EQ(api().task_start(a(), &spec, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()),
            "phase 3 is not MOLT_PHASE_TICK (0), MOLT_PHASE_PRE_TICK (1) or MOLT_PHASE_POST_TICK "
            "(2)");
  spec.phase = MOLT_PHASE_PRE_TICK;
  spec.kind = 9;
  EXPECT_EQ(api().task_start(a(), &spec, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(a()),
            "task kind 9 is not MOLT_TASK_NEXT_STEP (0), MOLT_TASK_AFTER (1) or MOLT_TASK_EVERY "
            "(2)");
  spec.kind = MOLT_TASK_EVERY;
  spec.seconds = -1;
  EXPECT_EQ(api().task_start(a(), &spec, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error(a()).find("seconds"), std::string::npos) << Error(a());
  spec.seconds = 0;
  spec.priority = 6;
  EXPECT_EQ(api().task_start(a(), &spec, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error(a()).find("priority 6 is not one of"), std::string::npos) << Error(a());
  spec.priority = 0;
  spec.struct_size = 8;
  EXPECT_EQ(api().task_start(a(), &spec, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error(a()).find("molt_task_spec"), std::string::npos) << Error(a());
  EXPECT_EQ(api().task_start(a(), nullptr, task, nullptr, nullptr, &t), MOLT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Error(a()).find("spec"), std::string::npos) << Error(a());
  EXPECT_EQ(t, 0u);
}

struct SelfCancel {
  const molt_host_api* api;
  molt_context_t* ctx;
  molt_task_t task = 0;
  std::vector<std::string>* events;
};

TEST_F(TaskApiTest, ReleaseWaitsUntilTheCallbackThatCancelledItselfReturns) {
  Boot();
  std::vector<std::string> events;
  auto* state = new SelfCancel{&api(), a(), 0, &events};
  auto run = [](void* ud) -> molt_status_t {
    auto* s = static_cast<SelfCancel*>(ud);
    s->events->push_back("run");
    s->api->task_cancel(s->ctx, s->task);
    s->events->push_back("still inside, state valid");  // would be a use after free otherwise
    return MOLT_OK;
  };
  auto release = [](void* ud) {
    auto* s = static_cast<SelfCancel*>(ud);
    s->events->push_back("release");
    delete s;
  };
  ASSERT_EQ(api().task_every(a(), 0, MOLT_PRIORITY_NORMAL, run, state, release, &state->task),
            MOLT_OK);
  kernel_->scheduler().Step();
  kernel_->scheduler().Step();
  EXPECT_EQ(events, (std::vector<std::string>{"run", "still inside, state valid", "release"}));
}

molt_status_t NopTask(void*) { return MOLT_OK; }

TEST_F(TaskApiTest, TasksAreProfiledUnderThePluginsName) {
  Boot();
  molt_task_t t;
  ASSERT_EQ(api().task_schedule(a(), MOLT_PRIORITY_NORMAL, NopTask, nullptr, nullptr, &t), MOLT_OK);
  kernel_->scheduler().Step();
  auto top = kernel_->scheduler().TopTasks(10);
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0].key, "plugin alpha");
}

TEST_F(TaskApiTest, InstallTaskSlotsSetsEveryTaskSlot) {
  molt_host_api table{};
  InstallTaskSlots(table);
  EXPECT_NE(table.task_schedule, nullptr);
  EXPECT_NE(table.task_after, nullptr);
  EXPECT_NE(table.task_every, nullptr);
  EXPECT_NE(table.task_start, nullptr);
  EXPECT_NE(table.task_cancel, nullptr);
  EXPECT_EQ(table.hook_on, nullptr) << "and nothing else";
}

}  // namespace
}  // namespace molt::kernel::abi

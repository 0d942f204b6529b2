// SPDX-License-Identifier: Apache-2.0
// LastKnownGood: a real generation's build kept whole (libraries from the copies it ran, the
// manifest with its health settings), inline or on a thread of its own, and read back as a boot
// reads it.
#include "kernel/src/loader/last_known_good.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "kernel/src/loader/build.h"
#include "tests/kernel/loader/loader_fixture.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

class LastKnownGoodTest : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    set_ = std::make_unique<GenerationSet>(*kernel_, *shared_, copies_, MOLT_PLUGIN_KIND_SERVICE);
    kept_ = std::make_unique<LastKnownGood>(kernel_->loop());
    dir_ = copies_ + "-builds/last-known-good";
    fs::remove_all(copies_ + "-builds");
  }
  void TearDownParts() override {
    kept_->Wait(std::chrono::seconds(5));
    kept_.reset();
    set_->UnloadAll();
    set_.reset();
    fs::remove_all(copies_ + "-builds");
  }
  // A generation of `build`, mounted (its libraries are private copies, as a swap's are).
  std::unique_ptr<Generation> Mounted(const std::string& build) {
    StagedBuild staged = StageBuild(GenBuild(build), set_->copy_dir(), set_->CopyPrefix());
    EXPECT_TRUE(staged.status.ok()) << staged.status.ToString();
    std::unique_ptr<Generation> g = set_->NewGeneration(staged.build.id);
    Status s = set_->Open(*g, std::move(staged.files), staged.build.entries, true);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return g;
  }
  std::unique_ptr<GenerationSet> set_;
  std::unique_ptr<LastKnownGood> kept_;
  std::string dir_;
};

TEST_F(LastKnownGoodTest, SavesTheBuildWholeWithItsManifestAndHealthSettings) {
  std::unique_ptr<Generation> g = Mounted("v2");
  g->health_errors = 7;
  g->health_window_seconds = 12;
  kept_->set_dir(dir_);
  EXPECT_FALSE(LastKnownGood::Kept(dir_));
  kept_->Save(*g);
  EXPECT_TRUE(LastKnownGood::Kept(dir_));
  Result<Build> kept = ReadBuild(dir_);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->id, g->build_id);
  EXPECT_TRUE(kept->has_manifest);
  EXPECT_EQ(kept->health_errors, 7u);
  EXPECT_EQ(kept->health_window_seconds, 12);
  ASSERT_EQ(kept->files.size(), 1u);
  EXPECT_EQ(fs::path(kept->files[0]).filename(), "fx_gen_v2.so") << "named as the build named it";
  const BuildEntry& e = kept->entries.at("fx_gen_v2.so");
  EXPECT_EQ(e.name, "fx_gen");
  EXPECT_EQ(e.version, "1.0.0");
  EXPECT_EQ(e.kind, "service");
  EXPECT_FALSE(fs::exists(dir_ + ".new"));
  EXPECT_TRUE(Logged("build " + g->build_id + " is the last known good (kept in " + dir_ + ")"));
  // A later save replaces it whole.
  std::unique_ptr<Generation> v1 = Mounted("v1");
  kept_->Save(*v1);
  kept = ReadBuild(dir_);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->id, v1->build_id);
  EXPECT_FALSE(fs::exists(dir_ + ".old"));
  set_->ReleaseLater(std::move(g));
  set_->ReleaseLater(std::move(v1));
}

TEST_F(LastKnownGoodTest, WithNoDirectoryOrAPluginLinkedIntoTheHostNothingIsKept) {
  std::unique_ptr<Generation> g = Mounted("v1");
  kept_->Save(*g);  // no directory set
  EXPECT_FALSE(fs::exists(copies_ + "-builds"));
  kept_->set_dir(dir_);
  Generation linked;
  linked.build_id = "static";
  linked.plugins.push_back({nullptr, g->plugins[0].instance});
  kept_->Save(linked);
  EXPECT_FALSE(LastKnownGood::Kept(dir_));
  set_->ReleaseLater(std::move(g));
}

TEST_F(LastKnownGoodTest, ASaveThatCannotBeWrittenIsLoggedAndLeavesNothingBeside) {
  fs::create_directories(copies_ + "-builds");
  std::ofstream(copies_ + "-builds/file") << "a file, not a directory";
  const std::string dir = copies_ + "-builds/file/last-known-good";
  std::unique_ptr<Generation> g = Mounted("v1");
  kept_->set_dir(dir);
  kept_->Save(*g);
  EXPECT_FALSE(LastKnownGood::Kept(dir));
  EXPECT_FALSE(fs::exists(dir + ".new"));
  EXPECT_TRUE(Logged("build " + g->build_id + " could not be kept as last known good: "));
  set_->ReleaseLater(std::move(g));
}

TEST_F(LastKnownGoodTest, InTheBackgroundASaveRunsOffTheKernelThreadAndReportsBack) {
  std::unique_ptr<Generation> g = Mounted("v2");
  kept_->set_dir(dir_);
  kept_->set_background(true);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_save{false};
  std::atomic<std::thread::id> save_thread;
  kept_->set_hook_for_testing([&, released] {
    save_thread = std::this_thread::get_id();
    in_save = true;
    released.wait();
  });
  kept_->Save(*g);
  ASSERT_TRUE(PumpUntil([&] { return in_save.load(); }));
  EXPECT_NE(save_thread.load(), std::this_thread::get_id());
  EXPECT_FALSE(LastKnownGood::Kept(dir_)) << "held mid-way: nothing is written yet";
  release.set_value();
  kept_->Wait(std::chrono::seconds(20));
  EXPECT_TRUE(LastKnownGood::Kept(dir_));
  // Its log line comes back to the kernel thread.
  ASSERT_TRUE(PumpUntil([&] { return Logged("is the last known good (kept in " + dir_ + ")"); }));
  set_->ReleaseLater(std::move(g));
}

TEST_F(LastKnownGoodTest, OfTwoSavesInTheBackgroundTheNewerOneIsKept) {
  std::unique_ptr<Generation> v1 = Mounted("v1");
  std::unique_ptr<Generation> v2 = Mounted("v2");
  kept_->set_dir(dir_);
  kept_->set_background(true);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> waiting{0};
  kept_->set_hook_for_testing([&, released] {
    ++waiting;
    released.wait();
  });
  kept_->Save(*v1);
  kept_->Save(*v2);
  ASSERT_TRUE(PumpUntil([&] { return waiting.load() == 2; }));
  release.set_value();  // whichever takes the write first, the newer one stands last
  kept_->Wait(std::chrono::seconds(20));
  Result<Build> kept = ReadBuild(dir_);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->id, v2->build_id);
  set_->ReleaseLater(std::move(v1));
  set_->ReleaseLater(std::move(v2));
}

}  // namespace
}  // namespace molt::kernel::loader

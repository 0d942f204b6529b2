// SPDX-License-Identifier: Apache-2.0
// GenerationSet: real fx_gen libraries loaded all or nothing, mounted dormant from fresh copies,
// made to serve, and let go (stopped at once, unloaded in a later task).
#include "kernel/src/loader/generation_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tests/kernel/loader/loader_fixture.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

molt_status_t LinkedInit(molt_context_t*, const molt_host_api*, void** state) {
  *state = nullptr;
  return MOLT_OK;
}

// A plugin linked into the host (AddStatic).
const molt_plugin_info* LinkedEntry() {
  static const molt_plugin_info info = [] {
    molt_plugin_info i{};
    i.struct_size = sizeof(molt_plugin_info);
    i.abi_version = MOLT_ABI_VERSION_CURRENT;
    i.name = "linked";
    i.version = "1.0.0";
    i.kind = MOLT_PLUGIN_KIND_SERVICE;
    i.init = LinkedInit;
    return i;
  }();
  return &info;
}

class GenerationSetTest : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    set_ = std::make_unique<GenerationSet>(*kernel_, *shared_, copies_, MOLT_PLUGIN_KIND_SERVICE);
  }
  void TearDownParts() override {
    set_->UnloadAll();
    set_.reset();
  }
  Status BootFrom(const std::string& dir) {
    return set_->LoadStaged(dir, StageBuild(dir, set_->copy_dir(), set_->CopyPrefix()));
  }
  // A new generation of the serving build, mounted from fresh copies of its libraries.
  std::unique_ptr<Generation> MountAgain() {
    std::unique_ptr<Generation> g = set_->NewGeneration(set_->serving().build_id);
    Status s = set_->MountCopiesOf(set_->serving(), *g);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return g;
  }
  std::size_t CopiesLeft() const {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(copies_)) {
      n += e.path().extension() == ".so" ? 1 : 0;
    }
    return n;
  }
  std::unique_ptr<GenerationSet> set_;
};

TEST_F(GenerationSetTest, TheBootGenerationIsNamedAfterItsBuildAndServesFromTheKernel) {
  EXPECT_EQ(set_->serving().name, "");
  ASSERT_TRUE(BootFrom(GenBuild("v1")).ok());
  const Generation& g = set_->serving();
  EXPECT_EQ(g.build_id.rfind("local-", 0), 0u) << g.build_id;
  EXPECT_EQ(g.name, g.build_id + "#1");
  EXPECT_EQ(g.dir, GenBuild("v1"));
  EXPECT_EQ(g.services, nullptr) << "the kernel's own service set holds it";
  ASSERT_EQ(g.plugins.size(), 1u);
  EXPECT_EQ(g.plugins[0].instance->generation(), g.name);
  EXPECT_EQ(set_->resident(), 1u);
  ASSERT_TRUE(kernel_->Start().ok());
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"});
}

TEST_F(GenerationSetTest, ABootThatLoadsNothingLeavesItsNameToTheNextBuild) {
  const std::string junk = copies_ + "-junk";
  fs::remove_all(junk);
  fs::create_directories(junk);
  std::ofstream(junk + "/junk.so") << "not a plugin";
  Status s = BootFrom(junk);
  EXPECT_EQ(s.message().rfind("1 of 1 plugin files refused:\n  ", 0), 0u) << s.ToString();
  EXPECT_EQ(set_->serving().name, "");
  ASSERT_TRUE(BootFrom(GenBuild("v1")).ok());
  EXPECT_EQ(set_->serving().name, set_->serving().build_id + "#1") << "the number is not spent";
  fs::remove_all(junk);
}

TEST_F(GenerationSetTest, ASetWithTwoPluginsOfOneNameIsRefusedWhole) {
  const std::string v1 = GenBuild("v1") + "/fx_gen_v1.so";
  const std::string v2 = GenBuild("v2") + "/fx_gen_v2.so";
  Status s = set_->LoadFiles({v1, v2});
  EXPECT_EQ(s.message(), "1 of 2 plugin files refused:\n  plugin file \"" + v2 +
                             "\": name \"fx_gen\" is already used by \"" + v1 +
                             "\": plugin names must be unique");
  EXPECT_TRUE(set_->serving().plugins.empty());
  EXPECT_EQ(CopiesLeft(), 0u) << "what opened is unloaded, its copy removed";
  EXPECT_TRUE(Logged("plugin names must be unique"));
}

TEST_F(GenerationSetTest, AStaticPluginIsCheckedLikeAFileAndNeverLoadedAgain) {
  EXPECT_EQ(set_->AddStatic(nullptr, "linked:a").message(), "the entry function is NULL");
  ASSERT_TRUE(set_->AddStatic(LinkedEntry, "linked:a").ok());
  EXPECT_EQ(set_->serving().name, "static#1");
  Status again = set_->AddStatic(LinkedEntry, "linked:b");
  EXPECT_EQ(again.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(again.message(),
            "plugin file \"linked:b\": name \"linked\" is already used by \"linked:a\": plugin "
            "names must be unique");
  std::vector<std::string> copies;
  Status s = GenerationSet::CopiesOf(set_->serving(), &copies);
  EXPECT_EQ(s.code(), Status::Code::kUnsupported);
  EXPECT_EQ(s.message(), "plugin \"linked\" is linked into the host: it cannot be loaded again");
}

TEST_F(GenerationSetTest, AMountedGenerationIsFreshCopiesDormantBesideTheServingOne) {
  ASSERT_TRUE(BootFrom(GenBuild("v1")).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  const Generation& boot = set_->serving();
  std::unique_ptr<Generation> g = MountAgain();
  EXPECT_EQ(g->name, boot.build_id + "#2");
  EXPECT_EQ(g->dir, boot.dir);
  ASSERT_EQ(g->plugins.size(), 1u);
  EXPECT_NE(g->plugins[0].library->copy(), boot.plugins[0].library->copy());
  EXPECT_TRUE(fs::exists(g->plugins[0].library->copy()));
  EXPECT_TRUE(g->plugins[0].instance->dormant());
  EXPECT_EQ(g->plugins[0].instance->generation(), g->name);
  EXPECT_EQ(set_->resident(), 1u) << "a mounted generation is not resident before it serves";
  EXPECT_EQ(Pongs(), std::vector<std::string>{"Gen.Pong v1"}) << "a dormant one hears nothing";
  Generation& now = set_->Serve(std::move(g));
  EXPECT_EQ(&set_->serving(), &now);
  EXPECT_EQ(set_->resident(), 2u);
}

TEST_F(GenerationSetTest, ReleaseLaterStopsAGenerationNowAndUnloadsItInALaterTask) {
  ASSERT_TRUE(BootFrom(GenBuild("v1")).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  Generation& boot = set_->serving();
  const std::string copy = boot.plugins[0].library->copy();
  std::shared_ptr<abi::PluginInstance> instance = boot.plugins[0].instance;
  Generation local;
  set_->ReleaseLater(&local);  // not resident: left alone
  set_->Serve(MountAgain());
  EXPECT_EQ(set_->resident(), 2u);
  set_->ReleaseLater(&boot);
  EXPECT_EQ(set_->resident(), 1u);
  EXPECT_FALSE(instance->live()) << "stopped at once";
  EXPECT_TRUE(Saw("Gen.Stopped v1"));
  EXPECT_TRUE(fs::exists(copy)) << "unloaded later, never inside the caller's task";
  Steps();
  EXPECT_FALSE(fs::exists(copy));
  EXPECT_EQ(set_->retired_libraries(), 0u);
}

TEST_F(GenerationSetTest, UnloadAllUnloadsEveryGenerationAndRemovesTheCopies) {
  ASSERT_TRUE(BootFrom(GenBuild("v1")).ok());
  ASSERT_TRUE(kernel_->Start().ok());
  set_->Serve(MountAgain());
  set_->ReleaseLater(set_->NewGeneration("gone"));
  EXPECT_EQ(CopiesLeft(), 2u);
  EXPECT_EQ(set_->UnloadAll(), 0u);
  EXPECT_EQ(CopiesLeft(), 0u);
}

TEST_F(GenerationSetTest, TheCallbackDeadlineReachesThePluginsLoadedAfterIt) {
  set_->set_callback_deadline(std::chrono::milliseconds(300));
  ASSERT_TRUE(BootFrom(GenBuild("v1")).ok());
  EXPECT_EQ(set_->serving().plugins[0].instance->callback_limit(), std::chrono::milliseconds(300));
}

TEST_F(GenerationSetTest, AStageThatFailedIsTheLoadsError) {
  StagedBuild failed;
  failed.status = Status::NotFound("build directory \"x\" does not exist");
  EXPECT_EQ(set_->LoadStaged("x", std::move(failed)).message(),
            "build directory \"x\" does not exist");
  EXPECT_EQ(set_->serving().name, "");
}

}  // namespace
}  // namespace molt::kernel::loader

// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/loader/swap_fixture.h
//
// SwapFixture: the loader's parts a swap works with, wired as the plugin host wires them (the
// health window's verdicts to the swap, the generation set, and a list of the builds it found
// good), on LoaderFixture's kernel and network. For the tests of GenerationSwap and ReloadQueue.
#ifndef MOLT_TESTS_KERNEL_LOADER_SWAP_FIXTURE_H_
#define MOLT_TESTS_KERNEL_LOADER_SWAP_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_stager.h"
#include "kernel/src/loader/generation_set.h"
#include "kernel/src/loader/generation_swap.h"
#include "kernel/src/loader/health_window.h"
#include "tests/kernel/loader/loader_fixture.h"

namespace molt::kernel::loader {

class SwapFixture : public LoaderFixture {
 protected:
  void SetUp() override {
    LoaderFixture::SetUp();
    set_ = std::make_unique<GenerationSet>(*kernel_, *shared_, copies_, MOLT_PLUGIN_KIND_SERVICE);
    stager_ = std::make_unique<BuildStager>(*kernel_);
    health_ = std::make_unique<HealthWindow>(
        kernel_->scheduler(),
        HealthWindow::Verdicts{[this] { swap_->Rollback(); },
                               [this](Generation* previous) { set_->ReleaseLater(previous); },
                               [this](const Generation& good) { good_.push_back(good.build_id); }});
    swap_ = std::make_unique<GenerationSwap>(*kernel_, *shared_, *set_, *health_, *stager_);
  }
  void TearDownParts() override {
    stager_->Abandon();
    swap_->Discard();
    health_->Clear();
    set_->UnloadAll();
    swap_.reset();
    health_.reset();
    stager_.reset();
    set_.reset();
  }
  // Boots the fx_gen build `name` as the first generation and starts the kernel.
  void BootWith(const std::string& name) {
    Status s = set_->LoadStaged(GenBuild(name),
                                StageBuild(GenBuild(name), set_->copy_dir(), set_->CopyPrefix()));
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = kernel_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // The build id of the fx_gen build `name`.
  static std::string IdOf(const std::string& name) {
    Result<Build> b = ReadBuild(GenBuild(name));
    return b.ok() ? b->id : b.status().ToString();
  }

  std::unique_ptr<GenerationSet> set_;
  std::unique_ptr<BuildStager> stager_;
  std::unique_ptr<HealthWindow> health_;
  std::unique_ptr<GenerationSwap> swap_;
  std::vector<std::string> good_;  // the builds whose window passed
};

}  // namespace molt::kernel::loader

#endif  // MOLT_TESTS_KERNEL_LOADER_SWAP_FIXTURE_H_

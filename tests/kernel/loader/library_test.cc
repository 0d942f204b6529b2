// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/loader/library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kernel/src/core/logger.h"
#include "tests/support/test_paths.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;
using molt::test::kFixtures;

class LibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_library_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  Result<std::unique_ptr<Library>> Load(const std::string& file) {
    return Library::Load(
        file, dir_ + "/" + std::to_string(++n_) + "-" + fs::path(file).filename().string(),
        MOLT_PLUGIN_KIND_SERVICE);
  }
  std::string Refusal(const std::string& group_file) {
    auto lib = Load(kFixtures + "/" + group_file);
    EXPECT_FALSE(lib.ok());
    return lib.ok() ? "" : lib.status().message();
  }
  std::string Where(const std::string& group_file) {
    return "plugin file \"" + kFixtures + "/" + group_file + "\": ";
  }

  std::string dir_;
  int n_ = 0;
  std::vector<std::string> lines_;
  Logger::Registration capture_ = Logger::Get().Capture(
      [this](std::string_view l, LogLevel) { lines_.push_back(std::string(l)); });
};

TEST_F(LibraryTest, LoadsAValidPluginThroughAPrivateCopyAndUnloadsIt) {
  auto lib = Load(kFixtures + "/good/fx_minimal.so");
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  EXPECT_STREQ((*lib)->info().name, "fx_minimal");
  EXPECT_TRUE(fs::exists((*lib)->copy()));
  EXPECT_TRUE((*lib)->unload_blocker().empty());
  EXPECT_TRUE((*lib)->Unload());
  EXPECT_FALSE(fs::exists((*lib)->copy()));
  EXPECT_TRUE(lines_.empty());
}

TEST_F(LibraryTest, TheSameFileCanBeResidentTwice) {
  auto first = Load(kFixtures + "/good/fx_minimal.so");
  auto second = Load(kFixtures + "/good/fx_minimal.so");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(&(*first)->info(), &(*second)->info());  // two mappings, two descriptors
}

TEST_F(LibraryTest, RefusesEachBrokenPluginWithTheFileTheCauseAndTheFix) {
  const std::string kAbi = "1." + std::to_string(MOLT_ABI_VERSION_MINOR);
  EXPECT_EQ(Refusal("bad/fx_no_entry.so"),
            Where("bad/fx_no_entry.so") +
                "exports no molt_plugin_entry symbol: define it with MOLT_PLUGIN(...) "
                "(molt.hpp) or MOLT_PLUGIN_EXPORT (molt.h) and build with molt_add_plugin()");
  EXPECT_EQ(Refusal("bad/fx_abi_major.so"),
            Where("bad/fx_abi_major.so") + "built for ABI 2.0 but this host speaks ABI " + kAbi +
                ": rebuild the plugin against the "
                "Molt 1.x SDK");
  EXPECT_EQ(Refusal("bad/fx_abi_minor.so"),
            Where("bad/fx_abi_minor.so") + "needs ABI 1.99 but this host provides ABI " + kAbi +
                ": upgrade the host, or rebuild the "
                "plugin against the " +
                kAbi + " SDK");
  EXPECT_EQ(Refusal("bad/fx_bad_size.so"),
            "plugin file \"" + kFixtures +
                "/bad/fx_bad_size.so\": molt_plugin_info.struct_size is 40, below 112 (its size "
                "in ABI 1.0, the smallest accepted): set it to sizeof(molt_plugin_info)");
  EXPECT_EQ(Refusal("bad/fx_no_name.so"),
            Where("bad/fx_no_name.so") + "descriptor has no name: set molt_plugin_info.name");
  EXPECT_EQ(
      Refusal("bad/fx_bad_name.so"),
      Where("bad/fx_bad_name.so") + "name \"bad name!\" is invalid: use 1 to 64 of [A-Za-z0-9_.-]");
  const std::string f = kFixtures + "/bad/";
  EXPECT_EQ(Refusal("bad/fx_no_version.so"),
            "plugin \"fx_no_version\" (" + f +
                "fx_no_version.so): descriptor has no version: set molt_plugin_info.version to a "
                "semantic version such as \"1.0.0\"");
  EXPECT_EQ(Refusal("bad/fx_bad_version.so"),
            "plugin \"fx_bad_version\" (" + f +
                "fx_bad_version.so): version \"one\" is not a semantic version "
                "(MAJOR.MINOR.PATCH, e.g. \"1.4.2\")");
  EXPECT_EQ(Refusal("bad/fx_controller.so"),
            "plugin \"fx_controller\" (" + f +
                "fx_controller.so): is a controller, but this host loads services only: move it "
                "to the other side's plugin directory");
  // (Under ASan the count includes the sanitizer's ODR indicators, so it is not pinned here.)
  const std::string extra = Refusal("bad/fx_extra_exports.so");
  EXPECT_EQ(extra.rfind(Where("bad/fx_extra_exports.so") + "exports ", 0), 0u) << extra;
  EXPECT_NE(extra.find(" symbols besides molt_plugin_entry ("), std::string::npos) << extra;
  EXPECT_NE(extra.find("fx_counter"), std::string::npos);
  EXPECT_NE(extra.find("fx_helper"), std::string::npos);
  EXPECT_NE(extra.find("): build it with molt_add_plugin() (hidden visibility and the entry-only "
                       "export map) or make them static"),
            std::string::npos);
  EXPECT_EQ(Load("/nonexistent/ghost.so").status().message(),
            "plugin file \"/nonexistent/ghost.so\": does not exist or is not a regular file");
  EXPECT_TRUE(fs::is_empty(dir_));  // every refusal removed its copy
}

TEST_F(LibraryTest, LibraryThatCannotBeUnloadedIsKeptAndReported) {
  for (const char* file : {"unloadable/fx_nodelete.so", "unloadable/fx_unique.so"}) {
    auto lib = Load(kFixtures + "/" + file);
    ASSERT_TRUE(lib.ok()) << lib.status().message();
    EXPECT_FALSE((*lib)->unload_blocker().empty());
    lines_.clear();
    EXPECT_FALSE((*lib)->Unload());
    ASSERT_EQ(lines_.size(), 1u);
    EXPECT_NE(lines_[0].find("cannot be unloaded: it "), std::string::npos) << lines_[0];
    EXPECT_NE(lines_[0].find("; kept mapped as retired"), std::string::npos) << lines_[0];
  }
  auto nodelete = Load(kFixtures + "/unloadable/fx_nodelete.so");
  EXPECT_EQ((*nodelete)->unload_blocker(), "it is linked with -z nodelete (DF_1_NODELETE)");
  auto unique = Load(kFixtures + "/unloadable/fx_unique.so");
  EXPECT_EQ((*unique)->unload_blocker().rfind("it has STB_GNU_UNIQUE symbols (", 0), 0u);
}

molt_status_t Init(molt_context_t*, const molt_host_api*, void**) { return MOLT_OK; }

molt_plugin_info Valid() {
  molt_plugin_info i{};
  i.struct_size = sizeof(molt_plugin_info);
  i.abi_version = MOLT_ABI_VERSION_CURRENT;
  i.name = "ok";
  i.version = "1.0.0";
  i.kind = MOLT_PLUGIN_KIND_SERVICE;
  i.init = Init;
  return i;
}

TEST(ReadDescriptorTest, AcceptsAValidOneAndAnOlderMinor) {
  molt_plugin_info i = Valid();
  EXPECT_TRUE(ReadDescriptor(&i, "f.so", MOLT_PLUGIN_KIND_SERVICE).ok());
  i.abi_version = MOLT_ABI_VERSION(1, 0);
  EXPECT_TRUE(ReadDescriptor(&i, "f.so", MOLT_PLUGIN_KIND_SERVICE).ok());
}

TEST(ReadDescriptorTest, CopiesWhatThePluginGaveIntoAZeroedCurrentDescriptor) {
  // A descriptor from a newer header (say ABI 1.N with a field appended) declaring an older
  // minor: the host reads what it knows and ignores the rest.
  struct Grown {
    molt_plugin_info info;
    std::uint64_t appended;
  } grown{Valid(), 0xfeedu};
  grown.info.struct_size = sizeof(Grown);
  Result<molt_plugin_info> read = ReadDescriptor(&grown.info, "f.so", MOLT_PLUGIN_KIND_SERVICE);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->struct_size, sizeof(Grown));
  EXPECT_STREQ(read->name, "ok");
  EXPECT_EQ(read->init, &Init);
  molt_plugin_info small = Valid();
  small.struct_size = 111;
  EXPECT_EQ(ReadDescriptor(&small, "f.so", MOLT_PLUGIN_KIND_SERVICE).status().message(),
            "plugin file \"f.so\": molt_plugin_info.struct_size is 111, below 112 (its size in "
            "ABI 1.0, the smallest accepted): set it to sizeof(molt_plugin_info)");
}

TEST(ReadDescriptorTest, RefusesBrokenDependencyAndInterfaceTables) {
  molt_plugin_info i = Valid();
  i.dependency_count = 2;
  EXPECT_EQ(ReadDescriptor(&i, "f.so", MOLT_PLUGIN_KIND_SERVICE).status().message(),
            "plugin \"ok\" (f.so): dependency_count is 2 but dependencies is NULL");
  const char* deps[] = {"good", "bad name"};
  i.dependencies = deps;
  EXPECT_EQ(ReadDescriptor(&i, "f.so", MOLT_PLUGIN_KIND_SERVICE).status().message(),
            "plugin \"ok\" (f.so): dependency 1 is not a valid plugin name");
  i = Valid();
  i.interface_count = 1;
  EXPECT_EQ(ReadDescriptor(&i, "f.so", MOLT_PLUGIN_KIND_SERVICE).status().message(),
            "plugin \"ok\" (f.so): interface_count is 1 but interfaces is NULL");
  i = Valid();
  i.init = nullptr;
  EXPECT_EQ(ReadDescriptor(&i, "f.so", MOLT_PLUGIN_KIND_SERVICE).status().message(),
            "plugin \"ok\" (f.so): descriptor has no init callback: set molt_plugin_info.init");
  EXPECT_EQ(ReadDescriptor(nullptr, "f.so", MOLT_PLUGIN_KIND_SERVICE).status().message(),
            "plugin file \"f.so\": molt_plugin_entry() returned NULL: return the address of a "
            "static molt_plugin_info");
}

TEST(SemanticVersionTest, FollowsSemver2) {
  for (const char* good : {"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1",
                           "1.0.0+build.5", "2.1.0-rc.1+build.7"}) {
    EXPECT_TRUE(IsSemanticVersion(good)) << good;
  }
  for (const char* bad : {"", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "a.b.c", "1.2.3-",
                          "1.2.3+", "1.2.3-a..b", "v1.2.3", "1.2.3 "}) {
    EXPECT_FALSE(IsSemanticVersion(bad)) << bad;
  }
}

}  // namespace
}  // namespace molt::kernel::loader

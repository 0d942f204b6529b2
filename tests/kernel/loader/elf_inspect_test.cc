// SPDX-License-Identifier: Apache-2.0
#include "kernel/src/loader/elf_inspect.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>

#include "tests/support/test_paths.h"

namespace molt::kernel::loader {
namespace {

using molt::test::kFixtures;

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ElfInspectTest, PluginBuiltWithMoltAddPluginExportsOnlyItsEntry) {
  auto e = InspectElf(kFixtures + "/good/fx_minimal.so");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->symbols, std::vector<std::string>{"molt_plugin_entry"});
  EXPECT_TRUE(e->unique_symbols.empty());
  EXPECT_FALSE(e->nodelete);
}

TEST(ElfInspectTest, SeesExtraExportsUniqueSymbolsAndNodelete) {
  auto extra = InspectElf(kFixtures + "/bad/fx_extra_exports.so");
  ASSERT_TRUE(extra.ok());
  EXPECT_TRUE(Has(extra->symbols, "fx_helper"));
  EXPECT_TRUE(Has(extra->symbols, "fx_counter"));
  auto unique = InspectElf(kFixtures + "/unloadable/fx_unique.so");
  ASSERT_TRUE(unique.ok());
  ASSERT_EQ(unique->unique_symbols.size(), 1u);
  EXPECT_NE(unique->unique_symbols[0].find("FxUniqueHolder"), std::string::npos);
  auto nodelete = InspectElf(kFixtures + "/unloadable/fx_nodelete.so");
  ASSERT_TRUE(nodelete.ok());
  EXPECT_TRUE(nodelete->nodelete);
}

TEST(ElfInspectTest, RefusesWhatIsNotASharedLibrary) {
  EXPECT_EQ(InspectElf(WriteFile("garbage.so", "this is not a library")).status().message(),
            "plugin file \"" + ::testing::TempDir() + "garbage.so\": not an ELF shared library");
  EXPECT_EQ(InspectElf("/nonexistent/x.so", "x.so").status().message(),
            "plugin file \"x.so\": cannot be read");
  const std::string real = ReadFile(kFixtures + "/good/fx_minimal.so");
  auto truncated = InspectElf(WriteFile("truncated.so", real.substr(0, 200)));
  EXPECT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos)
      << truncated.status().message();
}

// Whatever the bytes, InspectElf returns (no crash, no read outside the file under ASan), and each
// refusal is an error naming the file: never a crash, never an empty or anonymous message.
TEST(ElfInspectTest, HostileBytesGiveErrorsNotCrashes) {
  const std::string real = ReadFile(kFixtures + "/good/fx_minimal.so");
  const std::string path = ::testing::TempDir() + "mutated.so";
  std::mt19937 rng(1);
  int refused = 0;
  for (int round = 0; round < 200; ++round) {
    std::string mutated = real;
    for (int k = 0; k < 16; ++k) {
      // Corrupt the headers and tables, where offsets live; keep the ELF magic.
      const std::size_t at = 4 + rng() % std::min<std::size_t>(mutated.size() - 4, 4096);
      mutated[at] = static_cast<char>(rng());
    }
    auto e = InspectElf(WriteFile("mutated.so", mutated));
    if (!e.ok()) {
      ++refused;
      EXPECT_EQ(e.status().code(), Status::Code::kInvalidArgument) << e.status().message();
      EXPECT_EQ(e.status().message().rfind("plugin file \"" + path + "\": ", 0), 0u)
          << e.status().message();
    }
  }
  EXPECT_GT(refused, 0) << "no mutation was noticed: the inspector read none of the bytes changed";
}

}  // namespace
}  // namespace molt::kernel::loader

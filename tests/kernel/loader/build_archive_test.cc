// SPDX-License-Identifier: Apache-2.0
// Build files (loader/build_archive.h): deterministic ustar that tar reads, read back strictly.
#include "kernel/src/loader/build_archive.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

class BuildArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_archive_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/a.so") << std::string(1000, 'a');
    std::ofstream(dir_ + "/b.so") << "";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  Status Write(const std::string& path) {
    return WriteArchive(path, {{"molt-build.json", "", "{\"build\":\"x\"}"},
                               {"a.so", dir_ + "/a.so", ""},
                               {"b.so", dir_ + "/b.so", ""}});
  }
  std::string dir_;
};

TEST_F(BuildArchiveTest, TheSameFilesGiveTheSameBytesAndTarReadsThem) {
  ASSERT_TRUE(Write(dir_ + "/one.tar").ok());
  ASSERT_TRUE(Write(dir_ + "/two.tar").ok());
  EXPECT_EQ(Slurp(dir_ + "/one.tar"), Slurp(dir_ + "/two.tar"));
  EXPECT_FALSE(fs::exists(dir_ + "/one.tar.tmp"));
  // GNU tar lists it, with the files in order, owned by 0, dated the epoch.
  const std::string list = dir_ + "/list.txt";
  ASSERT_EQ(std::system(("tar tvf " + dir_ + "/one.tar > " + list + " 2>&1").c_str()), 0)
      << Slurp(list);
  const std::string text = Slurp(list);
  EXPECT_LT(text.find("molt-build.json"), text.find("a.so"));
  EXPECT_LT(text.find("a.so"), text.find("b.so"));
  EXPECT_NE(text.find("0/0"), std::string::npos) << text;
  EXPECT_NE(text.find("1970-01-01"), std::string::npos) << text;
  Result<std::vector<ArchiveMember>> members = ReadArchive(dir_ + "/one.tar");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 3u);
  EXPECT_EQ((*members)[1].name, "a.so");
  EXPECT_EQ((*members)[1].size, 1000u);
  EXPECT_EQ(ReadMember(dir_ + "/one.tar", (*members)[0]).value(), "{\"build\":\"x\"}");
  ASSERT_TRUE(ExtractArchive(dir_ + "/one.tar", dir_ + "/out").ok());
  EXPECT_EQ(Slurp(dir_ + "/out/a.so"), std::string(1000, 'a'));
  EXPECT_EQ(fs::file_size(dir_ + "/out/b.so"), 0u);
}

TEST_F(BuildArchiveTest, AnythingButAFlatSetOfFilesIsRefusedNamingTheMember) {
  ASSERT_TRUE(Write(dir_ + "/good.tar").ok());
  const std::string good = Slurp(dir_ + "/good.tar");
  auto refusal = [&](const std::string& bytes) {
    std::ofstream(dir_ + "/bad.tar", std::ios::binary) << bytes;
    Result<std::vector<ArchiveMember>> r = ReadArchive(dir_ + "/bad.tar");
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  // A flipped byte in a header, or in the middle of nowhere.
  std::string tampered = good;
  tampered[3] = 'X';
  EXPECT_NE(refusal(tampered).find("the header checksum does not match"), std::string::npos);
  EXPECT_NE(refusal(good.substr(0, 700)).find("cut short"), std::string::npos);
  EXPECT_NE(refusal(good.substr(0, good.size() - 1024)).find("ends before its end-of-archive"),
            std::string::npos);
  EXPECT_NE(refusal(good + "junk").find("has data after its end-of-archive block"),
            std::string::npos);
  EXPECT_NE(refusal("not a tar archive at all").find("ends before"), std::string::npos);
  // A directory, a link, a path: made by GNU tar itself.
  fs::create_directories(dir_ + "/tree/sub");
  std::ofstream(dir_ + "/tree/sub/x.so") << "x";
  fs::create_symlink("sub/x.so", dir_ + "/tree/link.so");
  ASSERT_EQ(std::system(("tar cf " + dir_ + "/dir.tar -C " + dir_ + "/tree sub").c_str()), 0);
  EXPECT_NE(refusal(Slurp(dir_ + "/dir.tar")).find("is not a regular file"), std::string::npos);
  ASSERT_EQ(std::system(("tar cf " + dir_ + "/link.tar -C " + dir_ + "/tree link.so").c_str()), 0);
  EXPECT_NE(refusal(Slurp(dir_ + "/link.tar")).find("\"link.so\" is not a regular file"),
            std::string::npos);
  ASSERT_EQ(
      std::system(
          ("tar cf " + dir_ + "/path.tar --format=ustar -C " + dir_ + "/tree sub/x.so").c_str()),
      0);
  EXPECT_NE(refusal(Slurp(dir_ + "/path.tar")).find("is not a plain file name"), std::string::npos);
  // Names the writer refuses too.
  EXPECT_NE(
      WriteArchive(dir_ + "/w.tar", {{"../x.so", "", "x"}}).message().find("not a plain file name"),
      std::string::npos);
  EXPECT_NE(WriteArchive(dir_ + "/w.tar", {{"x.so", "", "1"}, {"x.so", "", "2"}})
                .message()
                .find("named twice"),
            std::string::npos);
  // Past the caps.
  ArchiveLimits small;
  small.max_total = 500;
  Result<std::vector<ArchiveMember>> capped = ReadArchive(dir_ + "/good.tar", small);
  EXPECT_NE(capped.status().message().find("more than"), std::string::npos);
  // A failed extraction leaves nothing behind.
  std::ofstream(dir_ + "/bad.tar", std::ios::binary) << tampered;
  EXPECT_FALSE(ExtractArchive(dir_ + "/bad.tar", dir_ + "/none").ok());
  EXPECT_FALSE(fs::exists(dir_ + "/none"));
}

}  // namespace
}  // namespace molt::kernel::loader

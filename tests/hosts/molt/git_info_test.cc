// SPDX-License-Identifier: Apache-2.0
// Where a build comes from (hosts/molt/git_info.h): git's answers for a real repository and for
// a directory outside one, and git branches as Molt branches.
#include "hosts/molt/git_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hosts/molt/cli.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;

TEST(GitInfoTest, MainMasterAndNoBranchBuildForProd) {
  for (const char* b : {"", "HEAD", "main", "master"}) {
    EXPECT_EQ(BranchOf(b), "prod") << b;
  }
}

TEST(GitInfoTest, OtherBranchesAreLowercasedWithSlashesAsDashes) {
  EXPECT_EQ(BranchOf("Feature/New_UI.2"), "feature-new_ui.2");
  EXPECT_EQ(BranchOf("wip!#@"), "wip");
  EXPECT_EQ(BranchOf("!!!"), "prod") << "nothing left: prod";
  EXPECT_EQ(BranchOf(std::string(100, 'a')), std::string(64, 'a'));
}

TEST(GitInfoTest, ABranchNameIsOneToSixtyFourOfTheSafeCharacters) {
  EXPECT_TRUE(IsBranchName("prod"));
  EXPECT_TRUE(IsBranchName("feature-x_1.2"));
  EXPECT_TRUE(IsBranchName(std::string(64, 'a')));
  EXPECT_FALSE(IsBranchName(""));
  EXPECT_FALSE(IsBranchName(std::string(65, 'a')));
  EXPECT_FALSE(IsBranchName("Prod"));
  EXPECT_FALSE(IsBranchName("a/b"));
}

class GitInfoRepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "git_info_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // git in the directory, with an identity of its own; its exit code.
  int Git(std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", dir_, "-c", "user.name=Molt Test", "-c",
                               "user.email=test@molt.invalid", "-c", "commit.gpgsign=false"});
    return RunProgram(args).exit_code;
  }

  std::string dir_;
};

TEST_F(GitInfoRepoTest, OutsideGitThereIsNothingToSay) {
  const GitInfo g = ReadGitInfo(dir_);
  EXPECT_FALSE(g.in_git);
  EXPECT_EQ(g.commit, "");
  EXPECT_FALSE(g.dirty);
  EXPECT_EQ(g.branch, "");
  EXPECT_EQ(g.commit_time, 0u);
}

TEST_F(GitInfoRepoTest, ARepositorySaysItsCommitBranchTimeAndWhetherItIsDirty) {
  ASSERT_EQ(Git({"init", "-q"}), 0);
  ASSERT_EQ(Git({"checkout", "-q", "-b", "feature/x"}), 0);
  std::ofstream(dir_ + "/a.txt") << "one\n";
  ASSERT_EQ(Git({"add", "a.txt"}), 0);
  ASSERT_EQ(Git({"commit", "-q", "-m", "one"}), 0);
  GitInfo g = ReadGitInfo(dir_);
  EXPECT_TRUE(g.in_git);
  EXPECT_EQ(g.commit.size(), 40u);
  EXPECT_EQ(g.commit.find_first_not_of("0123456789abcdef"), std::string::npos) << g.commit;
  EXPECT_FALSE(g.dirty);
  EXPECT_EQ(g.branch, "feature/x");
  EXPECT_GT(g.commit_time, 1'600'000'000u);
  std::ofstream(dir_ + "/untracked.txt") << "not counted\n";
  EXPECT_FALSE(ReadGitInfo(dir_).dirty) << "untracked files do not make a tree dirty";
  std::ofstream(dir_ + "/a.txt") << "two\n";
  g = ReadGitInfo(dir_);
  EXPECT_TRUE(g.dirty);
  EXPECT_EQ(BranchOf(g.branch), "feature-x");
}

}  // namespace
}  // namespace molt::cli

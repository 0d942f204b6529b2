// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/git_info.cc
//
// git asked four questions (rev-parse, status, the branch, the commit time), and branch names.
#include "hosts/molt/git_info.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "hosts/molt/cli.h"

namespace molt::cli {

GitInfo ReadGitInfo(const std::string& dir) {
  GitInfo g;
  RunResult head = RunProgram({"git", "-C", dir, "rev-parse", "HEAD"});
  if (head.exit_code != 0 || head.output.size() < 40) {
    return g;
  }
  g.in_git = true;
  g.commit = head.output.substr(0, 40);
  g.dirty = !RunProgram({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"})
                 .output.empty();
  RunResult branch = RunProgram({"git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD"});
  g.branch = branch.exit_code == 0 ? branch.output.substr(0, branch.output.find('\n')) : "";
  RunResult when = RunProgram({"git", "-C", dir, "log", "-1", "--format=%ct"});
  g.commit_time = when.exit_code == 0 ? std::strtoull(when.output.c_str(), nullptr, 10) : 0;
  return g;
}

std::string BranchOf(const std::string& git_branch) {
  if (git_branch.empty() || git_branch == "HEAD" || git_branch == "main" ||
      git_branch == "master") {
    return "prod";
  }
  std::string out;
  for (char c : git_branch) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == '/') {
      out += '-';
    } else if (std::isalnum(static_cast<unsigned char>(l)) != 0 || l == '.' || l == '_' ||
               l == '-') {
      out += l;
    }
  }
  return out.empty() ? "prod" : out.substr(0, 64);
}

bool IsBranchName(const std::string& b) {
  return !b.empty() && b.size() <= 64 && std::all_of(b.begin(), b.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace molt::cli

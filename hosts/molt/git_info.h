// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/git_info.h
//
// Where a build comes from (molt build, docs/deploys.md): what git says of the tree holding the
// plugin directory (commit, dirty, branch, commit time), and the Molt branch a git branch builds
// for (spec §27). Included by build_command.cc and build_manifest.h.
#ifndef MOLT_HOSTS_MOLT_GIT_INFO_H_
#define MOLT_HOSTS_MOLT_GIT_INFO_H_

#include <cstdint>
#include <string>

namespace molt::cli {

// What git says of the tree holding a directory: nothing when it is not in one.
struct GitInfo {
  bool in_git = false;
  std::string commit;             // the full hash
  bool dirty = false;             // uncommitted changes to tracked files
  std::string branch;             // "HEAD" when detached
  std::uint64_t commit_time = 0;  // seconds since the epoch
};

// Runs git in `dir` (git on PATH; none, or no tree: not in git).
GitInfo ReadGitInfo(const std::string& dir);

// A git branch as a Molt branch (spec §27): main and master (and none, or a detached HEAD) are
// prod; otherwise lowercased, '/' as '-', anything else outside [a-z0-9._-] dropped, at most 64.
std::string BranchOf(const std::string& git_branch);

// Whether `b` is a Molt branch name: 1 to 64 of [a-z0-9._-].
bool IsBranchName(const std::string& b);

}  // namespace molt::cli

#endif  // MOLT_HOSTS_MOLT_GIT_INFO_H_

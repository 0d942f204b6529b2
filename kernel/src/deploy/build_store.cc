// SPDX-License-Identifier: Apache-2.0
// BuildStore: uploads stored, shared and pruned; builds found by name (build_store.h).
#include "kernel/src/deploy/build_store.h"

#include <fmt/format.h>

#include <filesystem>

#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/deploy/fleet_link.h"

namespace molt::kernel::deploy {

std::string BuildStore::UploadPath() {
  return (std::filesystem::path(registry_.upload_dir()) /
          fmt::format("upload-{}.molt", next_upload_.fetch_add(1)))
      .string();
}

Result<Uploaded> BuildStore::Upload(const std::string& file, const std::set<std::string>& keep) {
  bool was_new = false;
  Result<StoredBuild> b = registry_.AddBuild(file, &was_new);
  if (!b.ok()) {
    return b.status().code() == Status::Code::kIoError
               ? Status::Internal(b.status().message())
               : Status::InvalidArgument(b.status().message());
  }
  if (was_new) {
    DeployLog().Info("stored build {} ({}, {} bytes)", b->id, b->sha256.substr(0, 12), b->bytes);
    Prune(keep);
  }
  if (Status s = fleet_.Share(*b); !s.ok()) {
    return Status::IoError("build " + b->id +
                           " is stored on this server but not in the fleet's registry, so no "
                           "other server could fetch it: " +
                           s.message() + " (upload it again)");
  }
  return Uploaded{*b, was_new};
}

std::optional<StoredBuild> BuildStore::Find(std::string_view name) {
  if (name.starts_with('#')) {
    const std::string digits(name.substr(1));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 18) {
      return std::nullopt;
    }
    if (std::optional<Deployment> d = registry_.FindDeployment(std::stoull(digits));
        d.has_value()) {
      return registry_.FindBuild(d->build);
    }
    return std::nullopt;
  }
  std::optional<StoredBuild> b = registry_.FindBuild(name);
  return b.has_value() ? b : fleet_.Fetch(std::string(name));
}

std::optional<StoredBuild> BuildStore::Previous(const std::string& branch) const {
  std::optional<Branch> b = registry_.FindBranch(branch);
  if (!b.has_value()) {
    return std::nullopt;
  }
  for (const Branch::Previous& p : b->previous) {
    if (p.build != b->head) {
      if (std::optional<StoredBuild> s = registry_.FindBuild(p.build);
          s.has_value() && s->failed_here.empty()) {
        return s;
      }
    }
  }
  for (const Deployment& d : registry_.Deployments(branch, Registry::kDeploymentsKept)) {
    if (d.build != b->head && d.seq < b->seq) {
      if (std::optional<StoredBuild> s = registry_.FindBuild(d.build);
          s.has_value() && s->failed_here.empty()) {
        return s;
      }
    }
  }
  return std::nullopt;
}

void BuildStore::Prune(const std::set<std::string>& keep) {
  Result<Registry::Pruned> p = registry_.Prune(keep);
  if (!p.ok()) {
    DeployLog().Error("{}", p.status().message());
  } else if (p->builds > 0) {
    DeployLog().Info(
        "pruned {} stored builds ({:.1f} MB) no branch, kept deployment, pin or recent "
        "upload refers to",
        p->builds, static_cast<double>(p->bytes) / (1 << 20));
  }
}

}  // namespace molt::kernel::deploy

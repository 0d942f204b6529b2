// SPDX-License-Identifier: Apache-2.0
// FleetLink: the fleet's registry opened, shared with, fetched from and mirrored (fleet_link.h).
#include "kernel/src/deploy/fleet_link.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "kernel/src/deploy/deploy_log.h"
#include "kernel/src/store/pg_connection.h"

namespace molt::kernel::deploy {

FleetLink::FleetLink(std::string url, std::string server_id, std::string branch, Registry& registry)
    : branch_(std::move(branch)), registry_(registry) {
  if (!url.empty()) {
    fleet_ = std::make_unique<FleetRegistry>(std::move(url), std::move(server_id));
  }
}

FleetLink::~FleetLink() = default;

Status FleetLink::Open() {
  if (open_) {
    return Status::Ok();
  }
  const Clock::time_point now = Clock::now();
  if (!failure_.ok() && now - failed_at_ < kRetryGap) {
    return failure_;
  }
  failure_ = fleet_->Open();
  failed_at_ = now;
  MOLT_RETURN_IF_ERROR(failure_);
  open_ = true;
  DeployLog().Info("the fleet's registry is open ({})",
                   store::PgConnection::Redacted(fleet_->url()));
  return Status::Ok();
}

Status FleetLink::Share(const StoredBuild& b) {
  if (fleet_ == nullptr) {
    return Status::Ok();
  }
  MOLT_RETURN_IF_ERROR(Open());
  return fleet_->PutBuild(b, registry_.BuildPath(b.sha256));
}

std::optional<StoredBuild> FleetLink::Fetch(const std::string& name) {
  if (fleet_ == nullptr) {
    return std::nullopt;
  }
  const std::string file = (std::filesystem::path(registry_.upload_dir()) /
                            fmt::format("fleet-{}.molt", next_file_.fetch_add(1)))
                               .string();
  Status s = Open();
  if (s.ok()) {
    s = fleet_->FetchBuild(name, file);
  }
  if (s.ok()) {
    Result<StoredBuild> b = registry_.AddBuild(file);
    if (b.ok()) {
      DeployLog().Info("fetched build {} ({} bytes) from the fleet's registry", b->id, b->bytes);
      return *b;
    }
    s = b.status();
  }
  std::error_code ec;
  std::filesystem::remove(file, ec);
  if (s.code() != Status::Code::kNotFound) {
    DeployLog().Error("build \"{}\": {}", name, s.message());
  }
  return std::nullopt;
}

std::uint64_t FleetLink::LastSeq() {
  std::uint64_t last = registry_.last_seq();
  if (fleet_ != nullptr) {
    Status s = Open();
    Result<std::uint64_t> shared = s.ok() ? fleet_->LastSeq() : Result<std::uint64_t>(s);
    if (shared.ok()) {
      return *shared;
    }
    DeployLog().Warn("{} (the next seq shown is this server's guess)", shared.status().message());
    last = std::max(last, registry_.mirrored_seq());
  }
  return last;
}

std::optional<FleetLink::Mirrored> FleetLink::Mirror(bool boot) {
  if (Status s = Open(); !s.ok()) {
    if (std::exchange(sync_error_, s.message()) != s.message()) {  // each new reason once
      DeployLog().Warn("{}: {}",
                       boot ? "booting from this server's copy of the registry"
                            : "the fleet's deploys wait for its database",
                       s.message());
    }
    return std::nullopt;
  }
  if (!std::exchange(sync_error_, "").empty()) {
    DeployLog().Info("the fleet's registry answers again: catching up");
  }
  Mirrored out;
  while (!out.stuck) {
    Result<std::vector<Deployment>> got = fleet_->Since(registry_.mirrored_seq(), 100);
    if (!got.ok()) {
      DeployLog().Warn(
          "reading the fleet's deployments: {} (tried again at the next notification or poll)",
          got.status().message());
      break;
    }
    if (got->empty()) {
      break;
    }
    for (Deployment& d : *got) {
      if (!registry_.FindBuild(d.build).has_value() && !Fetch(d.build).has_value()) {
        DeployLog().Error(
            "#{} {}: its build {} cannot be fetched from the fleet's registry; tried again at "
            "the next notification or poll",
            d.seq, d.branch, d.build_id);
        out.stuck = true;
        break;
      }
      d.result = d.branch == branch_ ? "pending" : "recorded";
      Result<Deployment> mirrored = registry_.Mirror(d);
      if (mirrored.ok()) {
        DeployLog().Info("#{} {}: {} {} by {} (from the fleet)", d.seq, d.branch, d.kind,
                         d.build_id, d.by.empty() ? "(unnamed)" : d.by);
        if (d.branch == branch_) {
          out.newest = d;
        }
      } else if (mirrored.status().code() != Status::Code::kAlreadyExists) {
        DeployLog().Error("#{}: {}", d.seq, mirrored.status().message());
        out.stuck = true;
        break;
      }
      (void)registry_.SetMirrored(d.seq);
    }
  }
  return out;
}

std::optional<Deployment> FleetLink::Widened(std::uint64_t skipped_seq) {
  Result<std::vector<Deployment>> now = fleet_->Since(skipped_seq - 1, 1);
  std::optional<Deployment> here = registry_.FindDeployment(skipped_seq);
  if (!now.ok() || now->empty() || now->front().seq != skipped_seq || !here.has_value() ||
      now->front().rollout <= here->rollout) {
    return std::nullopt;
  }
  (void)registry_.SetRollout(skipped_seq, now->front().rollout);
  DeployLog().Info("#{} {}: its rollout widened to {}%", here->seq, here->branch,
                   now->front().rollout);
  here->rollout = now->front().rollout;
  return here;
}

void FleetLink::Watch(std::chrono::milliseconds poll, std::function<void()> wake) {
  fleet_->Watch(poll, std::move(wake));
}

void FleetLink::StopWatching() {
  if (fleet_ != nullptr) {
    fleet_->StopWatching();
  }
}

}  // namespace molt::kernel::deploy

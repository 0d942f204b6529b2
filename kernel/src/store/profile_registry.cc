// SPDX-License-Identifier: Apache-2.0
// ProfileRegistry: profile stores by name, held by plugin instances, kept by the kernel.
#include "kernel/src/store/profile_registry.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "kernel/src/core/logger.h"

namespace molt::kernel::store {

namespace {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return "host";
  }
  return name;
}

}  // namespace

std::string HostId() { return fmt::format("{}:{}:{}", HostName(), ::getpid(), WallNow()); }

bool GoneFromThisHost(const std::string& owner) {
  // "<hostname>:<pid>:<ms>"; the hostname may not contain ':' for this to match.
  const std::size_t last = owner.rfind(':');
  const std::size_t mid = last == std::string::npos ? last : owner.rfind(':', last - 1);
  if (mid == std::string::npos || mid == 0 || owner.substr(0, mid) != HostName()) {
    return false;
  }
  char* end = nullptr;
  const long pid = std::strtol(owner.c_str() + mid + 1, &end, 10);
  if (end != owner.c_str() + last || pid <= 0 || pid == ::getpid()) {
    return false;
  }
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

ProfileRegistry::ProfileRegistry(Kernel& kernel, net::Network& network, ProfileStore& store,
                                 std::string host)
    : kernel_(kernel), network_(network), store_(store), host_(std::move(host)) {}

ProfileRegistry::~ProfileRegistry() = default;

Status ProfileRegistry::Check(const ProfileSpec& spec) {
  const bool valid_name = !spec.name.empty() && spec.name.size() <= 64 &&
                          std::all_of(spec.name.begin(), spec.name.end(), [](unsigned char c) {
                            return std::isalnum(c) != 0 || c == '_' || c == '.' || c == '-';
                          });
  if (!valid_name) {
    return Status::InvalidArgument("profile store name \"" + spec.name +
                                   "\" is not 1..64 characters of [A-Za-z0-9_.-]");
  }
  boost::system::error_code ec;
  boost::json::value defaults = boost::json::parse(spec.defaults, ec);
  if (ec || !defaults.is_object()) {
    return Status::InvalidArgument(fmt::format(
        "the defaults of profile store \"{}\" are {}: give a JSON object such as {{\"coins\":0}}",
        spec.name, ec ? "not valid JSON (" + ec.message() + ")" : "not a JSON object"));
  }
  if (spec.autosave <= Duration::zero() || spec.lease_ttl <= spec.autosave) {
    return Status::InvalidArgument(fmt::format(
        "profile store \"{}\": the lease ({:g} s) must outlast the autosave period ({:g} s), "
        "which renews it",
        spec.name, ToSeconds(spec.lease_ttl), ToSeconds(spec.autosave)));
  }
  for (Duration d : spec.backoff) {
    if (d <= Duration::zero()) {
      return Status::InvalidArgument("profile store \"" + spec.name +
                                     "\": every backoff delay must be above 0 s");
    }
  }
  return Status::Ok();
}

Result<Profiles*> ProfileRegistry::Declare(const void* owner, const std::string& label,
                                           ProfileSpec spec) {
  MOLT_RETURN_IF_ERROR(Check(spec));
  auto it = slots_.find(spec.name);
  if (it == slots_.end()) {
    const std::string name = spec.name;
    Slot slot{std::make_unique<Profiles>(kernel_, network_, store_, host_, std::move(spec)), owner,
              label};
    it = slots_.emplace(name, std::move(slot)).first;
    return it->second.profiles.get();
  }
  Slot& slot = it->second;
  if (slot.owner != nullptr) {
    return Status::AlreadyExists("profile store \"" + spec.name + "\" is declared by plugin \"" +
                                 slot.label + "\": one declaration per name");
  }
  MOLT_RETURN_IF_ERROR(slot.profiles->Adopt(std::move(spec)));
  slot.owner = owner;
  slot.label = label;
  return slot.profiles.get();
}

void ProfileRegistry::Detach(const void* owner, std::string_view name) {
  auto it = slots_.find(name);
  if (it != slots_.end() && it->second.owner == owner) {
    it->second.profiles->Detach();
    it->second.owner = nullptr;
  }
}

Profiles* ProfileRegistry::Held(const void* owner, std::string_view name) const {
  auto it = slots_.find(name);
  return it != slots_.end() && it->second.owner == owner ? it->second.profiles.get() : nullptr;
}

Profiles* ProfileRegistry::Find(std::string_view name) const {
  auto it = slots_.find(name);
  return it != slots_.end() ? it->second.profiles.get() : nullptr;
}

std::vector<const Profiles*> ProfileRegistry::stores() const {
  std::vector<const Profiles*> out;
  for (const auto& [name, slot] : slots_) {
    out.push_back(slot.profiles.get());
  }
  return out;
}

void ProfileRegistry::ReclaimAbandoned() {
  store_.ReleaseAbandoned(
      GoneFromThisHost, [](Result<std::vector<std::pair<std::string, std::size_t>>> ended) {
        LogScope log("Profiles");
        if (!ended.ok()) {
          log.Warn("{}: players of a killed server wait for its leases to expire",
                   ended.status().message());
          return;
        }
        for (const auto& [owner, count] : *ended) {
          log.Warn(
              "took over {} lease(s) of {}, a server of this host that is gone (killed?): "
              "its players' unsaved changes since their last save are lost",
              count, owner);
        }
      });
}

void ProfileRegistry::ReclaimLost(std::set<std::string> lost) {
  // One that beats again (a partition healed) is forgotten: lost again, it is taken over again.
  std::erase_if(reclaimed_, [&lost](const std::string& o) { return lost.count(o) == 0; });
  std::erase_if(lost, [this](const std::string& o) { return !reclaimed_.insert(o).second; });
  if (lost.empty()) {
    return;
  }
  store_.ReleaseAbandoned(
      [lost](const std::string& owner) { return lost.count(owner) > 0; },
      [this, lost](Result<std::vector<std::pair<std::string, std::size_t>>> ended) {
        LogScope log("Profiles");
        if (!ended.ok()) {
          log.Warn("{}: the leases of a lost server are taken over at the next heartbeat",
                   ended.status().message());
          for (const std::string& o : lost) {
            reclaimed_.erase(o);
          }
          return;
        }
        for (const auto& [owner, count] : *ended) {
          log.Warn(
              "took over {} lease(s) of {}, a server the fleet lost (no heartbeat for three "
              "intervals): its players load here now; their changes since their last save are "
              "lost",
              count, owner);
        }
        if (!ended->empty()) {
          for (auto& [name, slot] : slots_) {
            slot.profiles->RetryWaitingLoads();
          }
        }
      });
}

std::vector<std::string> ProfileRegistry::RetireDetached() {
  std::vector<std::string> retired;
  for (auto it = slots_.begin(); it != slots_.end();) {
    it->second.profiles->ForgetUndo();  // the swap is over: no restore takes documents back
    if (it->second.owner != nullptr) {
      ++it;
      continue;
    }
    retired.push_back("profile store \"" + it->first + "\"");
    LogScope("Profiles " + it->first)
        .Info("no plugin declares it any more: final saves of its {} profiles",
              it->second.profiles->loaded_count());
    Retire(std::move(it->second.profiles));
    it = slots_.erase(it);
  }
  return retired;
}

void ProfileRegistry::Retire(std::unique_ptr<Profiles> p) {
  Profiles* raw = p.get();
  retiring_.push_back(std::move(p));
  raw->Drain([this, raw](std::size_t, std::size_t) {
    // Freed on a later step: this runs inside the drain's own callback.
    kernel_.scheduler().Schedule(
        [this, raw] { std::erase_if(retiring_, [raw](const auto& r) { return r.get() == raw; }); },
        Priority::kKernel, TaskOrigin::Named("profile store retired"));
  });
}

void ProfileRegistry::Drain(Callback<void(std::size_t, std::size_t)> done) {
  struct Totals {
    std::size_t pending = 0;
    std::size_t saved = 0;
    std::size_t failed = 0;
    Callback<void(std::size_t, std::size_t)> done;
  };
  auto totals = std::make_shared<Totals>();
  totals->pending = slots_.size() + 1;  // +1: held until every drain is started
  totals->done = std::move(done);
  auto one = [totals](std::size_t saved, std::size_t failed) {
    totals->saved += saved;
    totals->failed += failed;
    if (--totals->pending == 0) {
      totals->done(totals->saved, totals->failed);
    }
  };
  for (auto& [name, slot] : slots_) {
    slot.profiles->Drain(one);
  }
  one(0, 0);
}

}  // namespace molt::kernel::store

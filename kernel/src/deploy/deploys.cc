// SPDX-License-Identifier: Apache-2.0
// Deploys: the registry, the keys and the rules, on a thread of their own.
#include "kernel/src/deploy/deploys.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "kernel/src/core/clock.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/core/serial_thread.h"
#include "kernel/src/deploy/fleet_registry.h"
#include "kernel/src/deploy/registry.h"
#include "kernel/src/deploy/trusted_keys.h"
#include "kernel/src/loader/signing.h"
#include "kernel/src/store/pg_connection.h"

namespace molt::kernel::deploy {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

LogScope& Log() {
  static LogScope log("Deploys");
  return log;
}

// A branch name: 1..64 of [A-Za-z0-9._-].
bool ValidBranch(std::string_view b) {
  return !b.empty() && b.size() <= 64 &&
         b.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string_view::npos;
}

// The channel a branch is (spec §27): prod for the prod branch, dev for every other.
std::string BranchChannel(std::string_view branch) { return branch == "prod" ? "prod" : "dev"; }

Answer Error(int status, std::string text) {
  return {status, json::object{{"error", std::move(text)}}};
}

// One caller waiting for a deployment's outcome.
struct Waiting {
  Reply reply;
  bool answered = false;
};

}  // namespace

struct Deploys::Impl {
  DeploysOptions options;
  std::unique_ptr<Registry> registry;
  // The fleet's registry (null: this server alone); `fleet_open` once its tables are there.
  std::unique_ptr<FleetRegistry> fleet;
  bool fleet_open = false;
  static constexpr std::chrono::seconds kFleetRetryGap{5};
  Status fleet_failure;  // of the last try to open it, at fleet_failed_at
  Clock::time_point fleet_failed_at{};
  std::string sync_error;         // the last reason the fleet could not be read, logged once
  std::uint64_t skipped_seq = 0;  // this branch's head, when this server is outside its rollout
  TrustedKeys keys;
  Clock::time_point keys_read{};
  SwapFn swap;
  SerialThread worker;  // the deploy thread
  // Held while this object lives: the kernel side's answer to a swap comes back through it, and
  // is dropped when it comes after the Deploys (a swap the close outlived).
  std::shared_ptr<Impl*> alive = std::make_shared<Impl*>(this);
  mutable std::mutex head_mu;
  std::string head_file;  // of options.branch; guarded by head_mu
  std::atomic<std::uint64_t> next_upload{1};
  // The registry's applied seq, for readers off the deploy thread (the fleet's heartbeat).
  std::atomic<std::uint64_t> applied{0};
  // Records `seq` as applied, in the registry and for those readers.
  Status SetApplied(std::uint64_t seq) {
    MOLT_RETURN_IF_ERROR(registry->SetApplied(seq));
    applied = seq;
    return Status::Ok();
  }

  struct Refusal {
    std::int64_t at_ms;
    std::string kind;
    std::string reason;
  };
  std::deque<Refusal> refusals;  // newest first
  std::map<std::string, std::pair<Clock::time_point, std::uint64_t>>
      refusal_log;                                          // kind -> last, hidden
  std::map<std::string, Clock::time_point> refusal_events;  // kind -> last on_refusal

  // Swaps run one at a time, in the order asked: a deployment's, a pin's or an unpin's; each
  // hears its outcome on this thread.
  struct Job {
    SwapTarget target;
    std::string reason;
    std::function<void(const SwapOutcome&)> finished;
  };
  std::deque<Job> jobs;
  bool swapping = false;
  std::string last_swapped_id;  // the build id of the newest deployment that swapped here
  std::uint64_t last_swapped_seq = 0;
  // A pin holds this server on a known build until the next deploy of its branch reaches it, an
  // unpin, or the server closing (never stored).
  struct Pin {
    std::string sha256;
    std::string build_id;
    std::string by;
    std::int64_t at_ms = 0;
  };
  std::optional<Pin> pin;

  void Refuse(std::string_view kind, const std::string& reason);
  // The stored builds nothing refers to go (Registry::Prune); what went is logged.
  void Prune();
  void LoadKeys(std::string_view why);
  // Reads the keys file again every kKeysRefresh (quietly, unless it changed or broke).
  void RefreshKeys();
  void UpdateHeadFile();
  // The build X names: a sha256, a prefix, a build id, or "#SEQ"; one this server lacks is
  // fetched from the fleet's registry.
  std::optional<StoredBuild> Find(std::string_view x);
  // The fleet's registry, opened when it was not; an error names the database.
  Status Fleet();
  // `b` in the fleet's registry too, so every server can fetch it (Ok alone).
  Status ShareBuild(const StoredBuild& b);
  // Fetches build `name` from the fleet and stores it here.
  std::optional<StoredBuild> FetchBuild(const std::string& name);
  // Copies the fleet's deployments this server lacks into its registry (with their builds); off
  // the boot, the newest on this server's branch is applied like a deploy made here.
  void Sync(bool boot);
  // Takes a deployment of this server's branch that another server recorded (or a widened
  // one): checked like one made here (failed-here mark, channel, signature, rollout), then
  // swapped; `waiting` (or null) hears how it went.
  void Apply(Deployment d, const std::shared_ptr<Waiting>& waiting = nullptr);
  // Whether this server is outside `d`'s rollout (never on prod rules: a rollout is unsigned).
  bool Outside(const Deployment& d) const;
  // `d` is not taken here: outside its rollout. Its result becomes skipped (once).
  Deployment Skip(Deployment d);
  // A wider rollout of `r.branch`'s head (molt deploy --widen).
  void RunWiden(DeployRequest r, std::chrono::seconds wait, Reply reply);
  // This server's result of `d`, in its registry and the fleet's.
  void SetResult(const Deployment& d);
  // The next #seq (the fleet's when there is one).
  std::uint64_t LastSeq();
  // Verifies `d`'s signatures for `b` under the keys (once more after re-reading them, at most
  // every kKeysRetryGap, when they fail).
  Status VerifySigned(const Deployment& d, const StoredBuild& b, bool reread);
  // The previous different head of `branch` (rollback without --to).
  std::optional<StoredBuild> Previous(const std::string& branch) const;
  std::string ProtocolLine(const std::string& branch, const StoredBuild& b) const;
  void RunDeploy(DeployRequest r, std::chrono::seconds wait, Reply reply);
  void RunPin(PinRequest r, std::chrono::seconds wait, Reply reply);
  // Queues a swap; `finished` hears its outcome.
  void Enqueue(Job job);
  void RunNextSwap();
  void Finished(Deployment d, const std::shared_ptr<Waiting>& waiting, const SwapOutcome& o);
  // `reply` once at `wait` (202 with `pending`), unless `finished` answers first.
  std::shared_ptr<Waiting> Wait(std::chrono::seconds wait, Reply reply, Answer pending);
  json::object BranchesJson();
};

void Deploys::Impl::Prune() {
  std::set<std::string> keep;
  if (pin.has_value()) {
    keep.insert(pin->sha256);
  }
  Result<Registry::Pruned> p = registry->Prune(keep);
  if (!p.ok()) {
    Log().Error("{}", p.status().message());
  } else if (p->builds > 0) {
    Log().Info(
        "pruned {} stored builds ({:.1f} MB) no branch, kept deployment, pin or recent "
        "upload refers to",
        p->builds, static_cast<double>(p->bytes) / (1 << 20));
  }
}

void Deploys::Impl::Refuse(std::string_view kind, const std::string& reason) {
  refusals.push_front({WallMs(), std::string(kind), reason});
  if (refusals.size() > kRefusalsKept) {
    refusals.pop_back();
  }
  const Clock::time_point now = Clock::now();
  if (options.on_refusal) {
    Clock::time_point& told = refusal_events[std::string(kind)];
    if (told == Clock::time_point{} || now - told >= options.refusal_event_gap) {
      told = now;
      options.on_refusal(std::string(kind), reason);
    }
  }
  auto& [last, hidden] = refusal_log[std::string(kind)];
  if (last != Clock::time_point{} && now - last < kRefusalLogGap) {
    ++hidden;
    return;
  }
  Log().Warn("refused a deploy ({}): {}{}", kind, reason,
             hidden > 0 ? fmt::format(" ({} more not shown)", hidden) : std::string());
  last = now;
  hidden = 0;
}

void Deploys::Impl::LoadKeys(std::string_view why) {
  keys_read = Clock::now();
  if (Status s = keys.Load(options.keys_file); !s.ok()) {
    Log().Error("{} ({}): {}", s.message(), why,
                keys.any() ? "the keys read before stay in force" : "no keys are trusted");
  }
  if (options.prod_rules && !keys.any()) {
    Log().Warn(
        "this server has prod rules and no trusted keys, so it refuses every deploy. Fix: `molt "
        "keys init`, list the public key it prints in a file ({{\"public_keys\": [\"...\"]}}), "
        "name that file as deploy.keys, and start moltd again (or SIGHUP it); a development "
        "server takes unsigned deploys with deploy.require_signatures = false or --branch dev");
  }
}

void Deploys::Impl::RefreshKeys() {
  if (!options.keys_file.empty()) {
    const std::string before = json::serialize(keys.ToJson());
    keys_read = Clock::now();
    if (Status s = keys.Load(options.keys_file); !s.ok()) {
      Log().Error("{} (the periodic read): the keys read before stay in force", s.message());
    } else if (json::serialize(keys.ToJson()) != before) {
      Log().Info("trusted keys changed in {}: {}", options.keys_file,
                 json::serialize(keys.ToJson()));
    }
  }
  worker.At(Clock::now() + kKeysRefresh, [this] { RefreshKeys(); });
}

void Deploys::Impl::UpdateHeadFile() {
  std::string file;
  if (pin.has_value()) {
    file = registry->BuildPath(pin->sha256);
  } else if (std::optional<Branch> b = registry->FindBranch(options.branch); b.has_value()) {
    if (b->seq == skipped_seq) {  // outside the head's rollout: what it applied last
      std::optional<Deployment> a = registry->FindDeployment(registry->applied_seq());
      file = a.has_value() ? registry->BuildPath(a->build) : std::string();
    } else {
      file = registry->BuildPath(b->head);
    }
  }
  std::lock_guard lock(head_mu);
  head_file = std::move(file);
}

Status Deploys::Impl::Fleet() {
  if (fleet_open) {
    return Status::Ok();
  }
  // Not asked again for kFleetRetryGap after it did not answer: the dashboard's reads of the
  // branches would each wait for the connect timeout.
  const Clock::time_point now = Clock::now();
  if (!fleet_failure.ok() && now - fleet_failed_at < kFleetRetryGap) {
    return fleet_failure;
  }
  fleet_failure = fleet->Open();
  fleet_failed_at = now;
  MOLT_RETURN_IF_ERROR(fleet_failure);
  fleet_open = true;
  Log().Info("the fleet's registry is open ({})", store::PgConnection::Redacted(fleet->url()));
  return Status::Ok();
}

Status Deploys::Impl::ShareBuild(const StoredBuild& b) {
  if (fleet == nullptr) {
    return Status::Ok();
  }
  MOLT_RETURN_IF_ERROR(Fleet());
  return fleet->PutBuild(b, registry->BuildPath(b.sha256));
}

std::optional<StoredBuild> Deploys::Impl::FetchBuild(const std::string& name) {
  if (fleet == nullptr) {
    return std::nullopt;
  }
  const std::string file =
      (fs::path(registry->upload_dir()) / fmt::format("fleet-{}.molt", next_upload.fetch_add(1)))
          .string();
  Status s = Fleet();
  if (s.ok()) {
    s = fleet->FetchBuild(name, file);
  }
  if (s.ok()) {
    Result<StoredBuild> b = registry->AddBuild(file);
    if (b.ok()) {
      Log().Info("fetched build {} ({} bytes) from the fleet's registry", b->id, b->bytes);
      return *b;
    }
    s = b.status();
  }
  std::error_code ec;
  fs::remove(file, ec);
  if (s.code() != Status::Code::kNotFound) {
    Log().Error("build \"{}\": {}", name, s.message());
  }
  return std::nullopt;
}

std::uint64_t Deploys::Impl::LastSeq() {
  std::uint64_t last = registry->last_seq();
  if (fleet != nullptr) {
    Status s = Fleet();
    Result<std::uint64_t> shared = s.ok() ? fleet->LastSeq() : Result<std::uint64_t>(s);
    if (shared.ok()) {
      return *shared;
    }
    Log().Warn("{} (the next seq shown is this server's guess)", shared.status().message());
    last = std::max(last, registry->mirrored_seq());
  }
  return last;
}

void Deploys::Impl::SetResult(const Deployment& d) {
  if (Status s = registry->SetResult(d.seq, d.result, d.reason, d.report); !s.ok()) {
    Log().Error("#{}: {}", d.seq, s.message());
  }
  if (fleet != nullptr && d.branch == options.branch) {
    Status s = Fleet();
    if (s.ok()) {
      s = fleet->SetResult(d.seq, d.result, d.reason, d.report);
    }
    if (!s.ok()) {
      Log().Error("#{}: this server's result ({}) is not in the fleet's registry: {}", d.seq,
                  d.result, s.message());
    }
  }
}

void Deploys::Impl::Sync(bool boot) {
  if (Status s = Fleet(); !s.ok()) {
    if (std::exchange(sync_error, s.message()) != s.message()) {  // each new reason once
      Log().Warn("{}: {}",
                 boot ? "booting from this server's copy of the registry"
                      : "the fleet's deploys wait for its database",
                 s.message());
    }
    return;
  }
  if (!std::exchange(sync_error, "").empty()) {
    Log().Info("the fleet's registry answers again: catching up");
  }
  std::optional<Deployment> newest;  // of this server's branch, recorded by another server
  bool stuck = false;
  while (!stuck) {
    Result<std::vector<Deployment>> got = fleet->Since(registry->mirrored_seq(), 100);
    if (!got.ok()) {
      Log().Warn(
          "reading the fleet's deployments: {} (tried again at the next notification or poll)",
          got.status().message());
      break;
    }
    if (got->empty()) {
      break;
    }
    for (Deployment& d : *got) {
      if (!registry->FindBuild(d.build).has_value() && !FetchBuild(d.build).has_value()) {
        Log().Error(
            "#{} {}: its build {} cannot be fetched from the fleet's registry; tried again at "
            "the next notification or poll",
            d.seq, d.branch, d.build_id);
        stuck = true;
        break;
      }
      d.result = d.branch == options.branch ? "pending" : "recorded";
      Result<Deployment> mirrored = registry->Mirror(d);
      if (mirrored.ok()) {
        Log().Info("#{} {}: {} {} by {} (from the fleet)", d.seq, d.branch, d.kind, d.build_id,
                   d.by.empty() ? "(unnamed)" : d.by);
        if (d.branch == options.branch) {
          newest = d;
        }
      } else if (mirrored.status().code() != Status::Code::kAlreadyExists) {
        Log().Error("#{}: {}", d.seq, mirrored.status().message());
        stuck = true;
        break;
      }
      (void)registry->SetMirrored(d.seq);
    }
  }
  UpdateHeadFile();
  if (newest.has_value()) {
    Prune();
    if (!boot) {
      Apply(std::move(*newest));
    }
  } else if (skipped_seq != 0 && !stuck) {  // outside the head's rollout: widened since?
    Result<std::vector<Deployment>> now = fleet->Since(skipped_seq - 1, 1);
    std::optional<Deployment> here = registry->FindDeployment(skipped_seq);
    if (now.ok() && !now->empty() && now->front().seq == skipped_seq && here.has_value() &&
        now->front().rollout > here->rollout) {
      (void)registry->SetRollout(skipped_seq, now->front().rollout);
      Log().Info("#{} {}: its rollout widened to {}%", here->seq, here->branch,
                 now->front().rollout);
      here->rollout = now->front().rollout;
      Apply(std::move(*here));
    }
  }
}

bool Deploys::Impl::Outside(const Deployment& d) const {
  return !options.prod_rules && d.rollout < 100 && Bucket(options.server_id) >= d.rollout;
}

Deployment Deploys::Impl::Skip(Deployment d) {
  skipped_seq = d.seq;
  UpdateHeadFile();
  const std::string reason = fmt::format("outside the {}% rollout (this server's bucket is {})",
                                         d.rollout, Bucket(options.server_id));
  if (d.result == "skipped" && d.reason == reason) {
    return d;  // reported once per seq and result
  }
  d.result = "skipped";
  d.reason = reason;
  d.report.clear();
  SetResult(d);
  Log().Info("#{} {}: {} skipped: {}", d.seq, d.branch, d.build_id, reason);
  return d;
}

void Deploys::Impl::Apply(Deployment d, const std::shared_ptr<Waiting>& waiting) {
  auto refuse = [&](std::string_view kind, const std::string& reason) {
    Refuse(kind, reason);
    d.result = "failed";
    d.reason = reason;
    SetResult(d);
    if (waiting != nullptr && !std::exchange(waiting->answered, true)) {
      waiting->reply({200, json::object{{"deployment", d.ToJson()}}});
    }
  };
  std::optional<StoredBuild> b = registry->FindBuild(d.build);
  if (d.seq <= registry->applied_seq() || !b.has_value()) {
    return;  // applied already (or a newer one was)
  }
  if (!b->failed_here.empty() && d.kind != "resign") {
    refuse("failed_here", "build " + b->id + " failed on this server (" + b->failed_here +
                              "): it is not taken again without --force");
    return;
  }
  if (options.prod_rules) {
    if (b->ManifestField("channel") != "prod") {
      refuse("channel", "build " + b->id + " is a " + b->ManifestField("channel") +
                            "-channel build: a prod-rules server takes prod builds only");
      return;
    }
    if (Status s = VerifySigned(d, *b, true); !s.ok()) {
      refuse("signature", s.message());
      return;
    }
  }
  if (Outside(d)) {
    d = Skip(std::move(d));
    if (waiting != nullptr && !std::exchange(waiting->answered, true)) {
      waiting->reply({200, json::object{{"deployment", d.ToJson()}}});
    }
    return;
  }
  skipped_seq = 0;
  UpdateHeadFile();
  if (d.kind == "resign") {
    Finished(d, waiting, {"adopted", "re-signed: the same build, no swap", "", false});
    return;
  }
  Enqueue({{registry->BuildPath(d.build), d.build, d.build_id},
           fmt::format("{} #{}", d.kind, d.seq),
           [this, d, waiting](const SwapOutcome& o) { Finished(d, waiting, o); }});
}

void Deploys::Impl::RunWiden(DeployRequest r, std::chrono::seconds wait, Reply reply) {
  auto refuse = [&](const std::string& reason) {
    Refuse("rollout", reason);
    Answer a = Error(409, reason);
    a.body["result"] = "refused";
    reply(std::move(a));
  };
  std::optional<Branch> head = registry->FindBranch(r.branch);
  std::optional<Deployment> d =
      head.has_value() ? registry->FindDeployment(head->seq) : std::nullopt;
  if (!d.has_value()) {
    reply(Error(404, r.branch + " has no head to widen the rollout of (molt branches)"));
    return;
  }
  if (d->rollout >= r.rollout) {
    refuse(
        fmt::format("#{} (the head of {}) reaches {}% of its servers already: --widen names "
                    "a larger share",
                    d->seq, r.branch, d->rollout));
    return;
  }
  if (fleet != nullptr) {
    Status s = Fleet();
    if (s.ok()) {
      s = fleet->Widen(d->seq, r.rollout);
    }
    if (s.code() == Status::Code::kRejected) {
      refuse(s.message());
      return;
    }
    if (!s.ok()) {
      reply(Error(503, s.message()));
      return;
    }
  }
  if (Status s = registry->SetRollout(d->seq, r.rollout); !s.ok()) {
    reply(Error(500, s.message()));
    return;
  }
  Log().Info("#{} {}: {}'s rollout widened from {}% to {}% by {}", d->seq, d->branch, d->build_id,
             d->rollout, r.rollout, r.by.empty() ? "(unnamed)" : r.by);
  d->rollout = r.rollout;
  if (d->branch != options.branch || d->result != "skipped") {
    reply({200, json::object{{"deployment", d->ToJson()}}});
    return;
  }
  if (wait.count() == 0) {
    reply({202, json::object{{"deployment", d->ToJson()}}});
  }
  Apply(*d, wait.count() == 0
                ? nullptr
                : Wait(wait, std::move(reply), {202, json::object{{"deployment", d->ToJson()}}}));
}

std::optional<StoredBuild> Deploys::Impl::Find(std::string_view x) {
  if (x.starts_with('#')) {
    std::uint64_t seq = 0;
    const std::string digits(x.substr(1));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 18) {
      return std::nullopt;
    }
    seq = std::stoull(digits);
    if (std::optional<Deployment> d = registry->FindDeployment(seq); d.has_value()) {
      return registry->FindBuild(d->build);
    }
    return std::nullopt;
  }
  std::optional<StoredBuild> b = registry->FindBuild(x);
  return b.has_value() ? b : FetchBuild(std::string(x));
}

Status Deploys::Impl::VerifySigned(const Deployment& d, const StoredBuild& b, bool reread) {
  loader::DeployFields f;
  f.branch = d.branch;
  f.build = b.sha256;
  f.build_id = b.id;
  f.seq = d.seq;
  f.commit = b.ManifestField("commit");
  f.channel = b.ManifestField("channel");
  f.sent_ms = d.sent_ms;
  f.reason = loader::DeployReasonField(d.kind);
  const std::string message = loader::CanonicalDeploy(f);
  Status s = keys.Verify(message, d.sig, d.sig_fallback);
  if (!s.ok() && reread && Clock::now() - keys_read >= kKeysRetryGap) {
    LoadKeys("after a failed signature");
    s = keys.Verify(message, d.sig, d.sig_fallback);
  }
  return s;
}

std::optional<StoredBuild> Deploys::Impl::Previous(const std::string& branch) const {
  std::optional<Branch> b = registry->FindBranch(branch);
  if (!b.has_value()) {
    return std::nullopt;
  }
  for (const Branch::Previous& p : b->previous) {
    if (p.build != b->head) {
      if (std::optional<StoredBuild> s = registry->FindBuild(p.build);
          s.has_value() && s->failed_here.empty()) {
        return s;
      }
    }
  }
  for (const Deployment& d : registry->Deployments(branch, Registry::kDeploymentsKept)) {
    if (d.build != b->head && d.seq < b->seq) {
      if (std::optional<StoredBuild> s = registry->FindBuild(d.build);
          s.has_value() && s->failed_here.empty()) {
        return s;
      }
    }
  }
  return std::nullopt;
}

std::string Deploys::Impl::ProtocolLine(const std::string& branch, const StoredBuild& b) const {
  std::optional<Branch> head = registry->FindBranch(branch);
  if (!head.has_value()) {
    return "first on this branch";
  }
  std::optional<StoredBuild> was = registry->FindBuild(head->head);
  const bool same =
      was.has_value() && was->ManifestField("protocol") == b.ManifestField("protocol");
  return fmt::format("{} since #{}", same ? "unchanged" : "changed", head->seq);
}

void Deploys::Impl::RunDeploy(DeployRequest r, std::chrono::seconds wait, Reply reply) {
  auto refuse = [&](std::string_view kind, const std::string& reason) {
    Refuse(kind, reason);
    Answer a = Error(409, reason);
    a.body["result"] = "refused";
    reply(std::move(a));
  };
  if (!ValidBranch(r.branch)) {
    reply(Error(400, "\"branch\" must be 1 to 64 letters, digits, '.', '_' or '-'"));
    return;
  }
  if (r.rollout < 100 && options.prod_rules) {
    reply(Error(400,
                "a rollout is not signed, so prod-rules servers take every deploy whole: "
                "deploy without --rollout (spec §28)"));
    return;
  }
  if (r.kind == "widen") {
    RunWiden(std::move(r), wait, std::move(reply));
    return;
  }
  std::optional<StoredBuild> b;
  if (r.kind == "rollback" && r.build.empty()) {
    b = Previous(r.branch);
    if (!b.has_value()) {
      reply(Error(404, "no earlier build in " + r.branch +
                           "'s previous heads or deployments to roll back to (name one with "
                           "--to BUILD|#SEQ)"));
      return;
    }
  } else {
    b = Find(r.build);
    if (!b.has_value()) {
      reply(Error(404, "no stored build is named \"" + r.build +
                           "\" (a sha256, a build id or #SEQ; `molt builds` lists them, `molt "
                           "deploy FILE.molt` uploads one)"));
      return;
    }
  }
  const bool here = r.branch == options.branch;
  const std::string build_channel = b->ManifestField("channel");
  if (r.kind == "resign") {  // the head again, under a new seq and today's key: never a swap
    std::optional<Branch> head = registry->FindBranch(r.branch);
    if (!head.has_value() || head->head != b->sha256) {
      refuse("resign", "a re-sign names the head of " + r.branch + " (" +
                           (head.has_value() ? "build " + head->head.substr(0, 12)
                                             : std::string("it has none")) +
                           "), not build " + b->id + ": deploy that build instead");
      return;
    }
  }
  if (BranchChannel(r.branch) == "prod" && (build_channel != "prod" || b->dirty()) &&
      r.kind != "resign") {  // a re-signed head was admitted once already
    const std::string what = b->dirty() ? "a dirty build (uncommitted changes)"
                                        : "a " + build_channel + "-channel build";
    if (r.kind == "promote") {
      refuse("channel", "build " + b->id + " is " + what + ": " + r.branch +
                            " is a prod branch, so it takes prod builds only, even with --force "
                            "(rebuild for prod: molt build DIR --channel prod from a clean tree)");
      return;
    }
    if (!r.force) {
      refuse("channel", "build " + b->id + " is " + what + " and " + r.branch +
                            " is a prod branch: build it for prod, or deploy with --force");
      return;
    }
  }
  if (here && !b->failed_here.empty() && !r.force && r.kind != "resign") {
    refuse("failed_here", "build " + b->id + " failed on this server (" + b->failed_here +
                              "): it is not taken again without --force");
    return;
  }
  const std::uint64_t applied = registry->applied_seq();
  if (r.seq != 0 && r.seq <= applied) {
    refuse("seq", fmt::format("seq {} is not newer than the applied {} (replay?)", r.seq, applied));
    return;
  }
  Deployment d;
  d.seq = r.seq;
  d.branch = r.branch;
  d.build = b->sha256;
  d.build_id = b->id;
  d.kind = r.kind;
  d.by = r.by;
  d.message = r.message;
  d.sent_ms = r.sent_ms;
  d.sig = r.sig;
  d.sig_fallback = r.sig_fallback;
  d.rollout = r.rollout;
  if (options.prod_rules) {
    if (build_channel != "prod") {
      refuse("channel", "build " + b->id + " is a " + build_channel +
                            "-channel build: a prod-rules server takes prod builds only");
      return;
    }
    if (r.seq == 0) {
      refuse("signature",
             "unsigned: a prod-rules server takes only signed deploys, each naming its seq "
             "(molt deploy --key FILE signs them)");
      return;
    }
    if (Status s = VerifySigned(d, *b, true); !s.ok()) {
      refuse("signature", s.message());
      return;
    }
  }
  d.protocol = ProtocolLine(r.branch, *b);
  d.result = here ? "pending" : "recorded";
  // In a fleet the fleet's registry numbers it (and every server hears of it), then this
  // server's copy records it like a deployment it mirrors.
  Result<Deployment> recorded = Status::Ok();
  if (fleet != nullptr) {
    Status shared = ShareBuild(*b);
    recorded = shared.ok() ? fleet->Record(std::move(d)) : Result<Deployment>(shared);
    if (recorded.ok()) {
      recorded = registry->Mirror(*recorded);
    }
  } else {
    recorded = registry->Record(std::move(d));
  }
  if (!recorded.ok()) {
    if (recorded.status().code() == Status::Code::kRejected) {
      refuse("seq", recorded.status().message());
    } else {
      reply(Error(recorded.status().code() == Status::Code::kIoError ? 503 : 500,
                  recorded.status().message()));
    }
    return;
  }
  UpdateHeadFile();
  Prune();  // the deployments past the kept ones went: so may their builds
  Log().Info("#{} {}: {} {} by {}{} ({})", recorded->seq, recorded->branch, recorded->kind,
             recorded->build_id, recorded->by.empty() ? "(unnamed)" : recorded->by,
             recorded->message.empty() ? "" : ": " + recorded->message,
             here ? "swapping" : "recorded: this server runs " + options.branch);
  if (!here) {
    reply({200, json::object{{"deployment", recorded->ToJson()}}});
    return;
  }
  if (r.kind == "resign") {  // the applied seq moves; whatever serves keeps serving
    Finished(*recorded, std::make_shared<Waiting>(Waiting{std::move(reply), false}),
             {"adopted", "re-signed: the same build, no swap", "", false});
    return;
  }
  if (Outside(*recorded)) {  // the head moved; this server keeps what it serves
    reply({200, json::object{{"deployment", Skip(*recorded).ToJson()}}});
    return;
  }
  skipped_seq = 0;
  UpdateHeadFile();
  if (wait.count() == 0) {
    reply({202, json::object{{"deployment", recorded->ToJson()}}});
  }
  std::shared_ptr<Waiting> waiting =
      wait.count() == 0
          ? nullptr
          : Wait(wait, std::move(reply),
                 {202, json::object{{"deployment", recorded->ToJson()},
                                    {"note",
                                     "the swap did not finish in time; GET /api/v1/deployments "
                                     "shows its result"}}});
  Enqueue({{registry->BuildPath(recorded->build), recorded->build, recorded->build_id},
           fmt::format("{} #{}", recorded->kind, recorded->seq),
           [this, d = *recorded, waiting](const SwapOutcome& o) { Finished(d, waiting, o); }});
}

std::shared_ptr<Waiting> Deploys::Impl::Wait(std::chrono::seconds wait, Reply reply,
                                             Answer pending) {
  auto w = std::make_shared<Waiting>(Waiting{std::move(reply), false});
  worker.At(Clock::now() + wait, [w, pending = std::move(pending)] {
    if (!std::exchange(w->answered, true)) {
      w->reply(pending);
    }
  });
  return w;
}

void Deploys::Impl::Enqueue(Job job) {
  jobs.push_back(std::move(job));
  RunNextSwap();
}

void Deploys::Impl::RunNextSwap() {
  if (swapping || jobs.empty()) {
    return;
  }
  swapping = true;
  std::weak_ptr<Impl*> weak = alive;
  swap(jobs.front().target, jobs.front().reason, [weak](SwapOutcome o) {
    std::shared_ptr<Impl*> self = weak.lock();
    if (self == nullptr) {
      return;  // the Deploys is gone (the close): nobody waits for this answer
    }
    Impl* impl = *self;
    impl->worker.Post([impl, o = std::move(o)] {
      Job job = std::move(impl->jobs.front());
      impl->jobs.pop_front();
      impl->swapping = false;
      job.finished(o);
      impl->RunNextSwap();
    });
  });
}

void Deploys::Impl::Finished(Deployment d, const std::shared_ptr<Waiting>& waiting,
                             const SwapOutcome& o) {
  d.result = o.result;
  d.reason = o.reason;
  d.report = o.report;
  SetResult(d);
  if (o.result == "failed") {
    if (o.build_failed) {
      (void)registry->MarkFailed(d.build, o.reason);
    }
    Log().Error("#{} {}: {} failed here: {} ({} keeps serving)", d.seq, d.branch, d.build_id,
                o.reason, last_swapped_id.empty() ? "the previous build" : last_swapped_id);
  } else if (d.kind == "resign") {
    if (Status s = SetApplied(d.seq); !s.ok()) {
      Log().Error("#{}: {}", d.seq, s.message());
    }
    Log().Info("#{} {}: {} re-signed (no swap)", d.seq, d.branch, d.build_id);
  } else {
    (void)registry->ClearFailed(d.build);
    if (Status s = SetApplied(d.seq); !s.ok()) {
      Log().Error("#{}: {}", d.seq, s.message());
    }
    last_swapped_id = d.build_id;
    last_swapped_seq = d.seq;
    if (pin.has_value()) {
      Log().Info("#{} {}: the pin on {} ends: the branch's deploy reached this server", d.seq,
                 d.branch, pin->build_id);
      pin.reset();
      UpdateHeadFile();
    }
    Log().Info("#{} {}: {} {}", d.seq, d.branch, d.build_id, o.result);
  }
  if (waiting != nullptr && !std::exchange(waiting->answered, true)) {
    waiting->reply({200, json::object{{"deployment", d.ToJson()}}});
  }
}

void Deploys::Impl::RunPin(PinRequest r, std::chrono::seconds wait, Reply reply) {
  const std::string what = r.unpin ? "unpin" : "pin";
  auto refuse = [&](std::string_view kind, const std::string& reason) {
    Refuse(kind, reason);
    Answer a = Error(409, reason);
    a.body["result"] = "refused";
    reply(std::move(a));
  };
  std::optional<StoredBuild> b;
  if (r.unpin) {
    if (!pin.has_value()) {
      refuse("pin", "this server is not pinned");
      return;
    }
    std::optional<Branch> head = registry->FindBranch(options.branch);
    b = head.has_value() ? registry->FindBuild(head->head) : std::nullopt;
    if (!b.has_value()) {
      refuse("pin", options.branch + " has no head to go back to");
      return;
    }
  } else {
    b = Find(r.build);
    const bool known = b.has_value() && [&] {
      for (const Deployment& d : registry->Deployments("", Registry::kDeploymentsKept)) {
        if (d.build == b->sha256) {
          return true;
        }
      }
      return false;
    }();
    if (!known) {
      refuse("pin", "build \"" + r.build +
                        "\" is not a known deployment (a pin takes a build some branch was "
                        "deployed with: molt deployments)");
      return;
    }
  }
  if (options.prod_rules) {
    const std::int64_t age = WallMs() - static_cast<std::int64_t>(r.sent_ms);
    if (age > kPinMaxAgeMs || age < -kPinMaxAgeMs) {
      refuse("pin", fmt::format("a {} is taken within {} s of its signing (sent_ms); this one is "
                                "{} s off: sign it again",
                                what, kPinMaxAgeMs / 1000, age / 1000));
      return;
    }
    loader::PinFields f;
    f.branch = options.branch;
    f.build = r.unpin ? "" : b->sha256;
    f.by = r.by;
    f.sent_ms = r.sent_ms;
    f.unpin = r.unpin;
    Status s = keys.Verify(loader::CanonicalPin(f), r.sig, r.sig_fallback);
    if (!s.ok() && Clock::now() - keys_read >= kKeysRetryGap) {
      LoadKeys("after a failed signature");
      s = keys.Verify(loader::CanonicalPin(f), r.sig, r.sig_fallback);
    }
    if (!s.ok()) {
      refuse("signature", "prod servers take only signed pins: " + s.message());
      return;
    }
  }
  json::object pending{{"result", "pending"}, {"build", b->id}, {"sha256", b->sha256}};
  if (wait.count() == 0) {
    reply({202, pending});
  }
  std::shared_ptr<Waiting> waiting =
      wait.count() == 0 ? nullptr : Wait(wait, std::move(reply), {202, pending});
  Enqueue(
      {{registry->BuildPath(b->sha256), b->sha256, b->id},
       what + " by " + (r.by.empty() ? std::string("(unnamed)") : r.by),
       [this, r, b = *b, waiting](const SwapOutcome& o) {
         const bool ok = o.result != "failed";
         if (ok && r.unpin) {
           Log().Info("unpinned by {}: {} serves again", r.by, b.id);
           pin.reset();
         } else if (ok) {
           Log().Info("pinned to {} by {} until the next deploy of {} reaches this server", b.id,
                      r.by, options.branch);
           pin = Pin{b.sha256, b.id, r.by, WallMs()};
         }
         UpdateHeadFile();
         if (waiting != nullptr && !std::exchange(waiting->answered, true)) {
           json::object body{
               {"result", o.result}, {"build", b.id}, {"sha256", b.sha256}, {"reason", o.reason}};
           std::error_code ec;
           body["report"] = o.report.empty() ? json::value(nullptr) : json::parse(o.report, ec);
           waiting->reply({200, std::move(body)});
         }
       }});
}

json::object Deploys::Impl::BranchesJson() {
  auto shorter = [this](const std::string& sha) {
    std::optional<StoredBuild> b = registry->FindBuild(sha);
    return json::object{{"sha256", sha},
                        {"id", b ? b->id : std::string("?")},
                        {"channel", b ? b->ManifestField("channel") : std::string()},
                        {"commit", b ? b->ManifestField("commit") : std::string()},
                        {"failed_here", b && !b->failed_here.empty() ? json::value(b->failed_here)
                                                                     : json::value(nullptr)}};
  };
  json::array branches;
  for (const Branch& b : registry->Branches()) {
    json::array previous;
    for (const Branch::Previous& p : b.previous) {
      json::object o = shorter(p.build);
      o["seq"] = p.seq;
      previous.push_back(std::move(o));
    }
    branches.push_back(json::object{{"name", b.name},
                                    {"seq", b.seq},
                                    {"updated_ms", b.updated_ms},
                                    {"head", shorter(b.head)},
                                    {"previous", std::move(previous)}});
  }
  json::array refused;
  for (const Refusal& r : refusals) {
    refused.push_back(json::object{{"at_ms", r.at_ms}, {"kind", r.kind}, {"reason", r.reason}});
  }
  const std::uint64_t last = LastSeq();
  json::value pinned = nullptr;
  if (pin.has_value()) {
    pinned = json::object{
        {"build", pin->build_id}, {"sha256", pin->sha256}, {"by", pin->by}, {"at_ms", pin->at_ms}};
  }
  return {{"branch", options.branch},       {"rules", options.prod_rules ? "prod" : "dev"},
          {"pin", std::move(pinned)},       {"seq", last},
          {"next_seq", last + 1},           {"applied_seq", registry->applied_seq()},
          {"serving", last_swapped_id},     {"keys", keys.ToJson()},
          {"refusals", std::move(refused)}, {"branches", std::move(branches)}};
}

// --- Deploys ---------------------------------------------------------------------------------

Result<std::unique_ptr<Deploys>> Deploys::Open(DeploysOptions options) {
  if (!ValidBranch(options.branch)) {
    return Status::InvalidArgument("branch \"" + options.branch +
                                   "\": a branch is 1 to 64 letters, digits, '.', '_' or '-' "
                                   "(moltd --branch, deploy.branch)");
  }
  auto impl = std::make_unique<Impl>();
  MOLT_ASSIGN_OR_RETURN(impl->registry, Registry::Open(options.dir));
  impl->applied = impl->registry->applied_seq();
  impl->options = std::move(options);
  impl->LoadKeys("at boot");
  if (!impl->options.fleet_url
           .empty()) {  // the fleet's deployments first: the boot plans with them
    impl->fleet = std::make_unique<FleetRegistry>(impl->options.fleet_url, impl->options.server_id);
    if (Status s = impl->Fleet(); s.code() == Status::Code::kFailedPrecondition) {
      return s;  // a layout too new, a right missing: the operator's to fix
    }
    impl->Sync(/*boot=*/true);
  }
  impl->UpdateHeadFile();
  return std::unique_ptr<Deploys>(new Deploys(std::move(impl)));
}

Deploys::Deploys(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Deploys::~Deploys() {
  if (impl_->fleet != nullptr) {
    impl_->fleet->StopWatching();  // no wake posted past here
  }
  impl_->worker.Stop();
}

std::vector<Deploys::Candidate> Deploys::BootCandidates() {
  Impl& m = *impl_;
  std::vector<Candidate> out;
  std::optional<Branch> branch = m.registry->FindBranch(m.options.branch);
  if (!branch.has_value()) {
    return out;
  }
  std::set<std::string> seen;
  auto consider = [&](std::uint64_t seq, const std::string& sha, std::string what) {
    if (!seen.insert(sha).second) {
      return;
    }
    std::optional<StoredBuild> b = m.registry->FindBuild(sha);
    if (!b.has_value()) {
      Log().Warn("{}: build {} is not in the registry", what, sha.substr(0, 12));
      return;
    }
    if (!b->failed_here.empty()) {
      Log().Info("{}: {} is skipped, it failed here ({})", what, b->id, b->failed_here);
      return;
    }
    if (m.options.prod_rules) {
      std::optional<Deployment> d = m.registry->FindDeployment(seq);
      Status v = d.has_value() ? m.VerifySigned(*d, *b, false)
                               : Status::NotFound("its deployment is no longer recorded");
      if (!v.ok()) {
        Log().Warn("{}: {} is skipped on a prod-rules server: {}", what, b->id, v.message());
        return;
      }
    }
    out.push_back({m.registry->BuildPath(sha), sha, b->id, seq, std::move(what)});
  };
  consider(branch->seq, branch->head,
           fmt::format("the head of {} (#{})", branch->name, branch->seq));
  for (const Deployment& d : m.registry->Deployments(branch->name, Registry::kDeploymentsKept)) {
    if (out.size() > kBootTries) {
      break;
    }
    if (d.seq < branch->seq) {
      consider(d.seq, d.build, fmt::format("{}'s #{} (last known good)", branch->name, d.seq));
    }
  }
  return out;
}

void Deploys::BootResult(const Candidate& c, const Status& outcome) {
  Impl& m = *impl_;
  if (!outcome.ok()) {
    (void)m.registry->MarkFailed(c.sha256, outcome.message());
    return;
  }
  m.last_swapped_id = c.build_id;
  m.last_swapped_seq = c.seq;
  std::optional<Branch> b = m.registry->FindBranch(m.options.branch);
  if (b.has_value() && b->seq == c.seq && c.seq > m.registry->applied_seq()) {
    (void)m.SetApplied(c.seq);
  }
}

void Deploys::Start(SwapFn swap) {
  impl_->swap = std::move(swap);
  impl_->worker.At(Clock::now() + kKeysRefresh, [this] { impl_->RefreshKeys(); });
  impl_->worker.Start();
  if (impl_->fleet != nullptr) {
    impl_->fleet->Watch(impl_->options.poll,
                        [this] { impl_->worker.Post([this] { impl_->Sync(/*boot=*/false); }); });
  }
}

std::string Deploys::UploadPath() {
  return (fs::path(impl_->registry->upload_dir()) /
          fmt::format("upload-{}.molt", impl_->next_upload.fetch_add(1)))
      .string();
}

std::uint64_t Deploys::max_build_bytes() const { return impl_->options.max_build_bytes; }

void Deploys::Upload(std::string file, Reply reply) {
  impl_->worker.Post([this, file = std::move(file), reply = std::move(reply)] {
    bool was_new = false;
    Result<StoredBuild> b = impl_->registry->AddBuild(file, &was_new);
    if (!b.ok()) {
      reply(Error(b.status().code() == Status::Code::kIoError ? 500 : 400, b.status().message()));
      return;
    }
    if (was_new) {
      Log().Info("stored build {} ({}, {} bytes)", b->id, b->sha256.substr(0, 12), b->bytes);
      impl_->Prune();
    }
    if (Status s = impl_->ShareBuild(*b); !s.ok()) {
      reply(Error(503, "build " + b->id +
                           " is stored on this server but not in the fleet's registry, so no "
                           "other server could fetch it: " +
                           s.message() + " (upload it again)"));
      return;
    }
    reply({was_new ? 201 : 200, json::object{{"build", b->ToJson()}}});
  });
}

void Deploys::Deploy(DeployRequest request, std::chrono::seconds wait, Reply reply) {
  impl_->worker.Post(
      [this, request = std::move(request), wait, reply = std::move(reply)]() mutable {
        impl_->RunDeploy(std::move(request), wait, std::move(reply));
      });
}

void Deploys::Pin(PinRequest request, std::chrono::seconds wait, Reply reply) {
  impl_->worker.Post(
      [this, request = std::move(request), wait, reply = std::move(reply)]() mutable {
        impl_->RunPin(std::move(request), wait, std::move(reply));
      });
}

void Deploys::Resolve(std::string branch, std::string build, bool rollback, Reply reply) {
  impl_->worker.Post([this, branch = std::move(branch), build = std::move(build), rollback,
                      reply = std::move(reply)] {
    Impl& m = *impl_;
    std::optional<StoredBuild> b = rollback && build.empty() ? m.Previous(branch) : m.Find(build);
    if (!b.has_value()) {
      reply(Error(404, rollback && build.empty()
                           ? "no earlier build in " + branch + "'s previous heads or deployments"
                           : "no stored build is named \"" + build + "\""));
      return;
    }
    reply({200, json::object{{"build", b->ToJson()}, {"next_seq", m.LastSeq() + 1}}});
  });
}

void Deploys::Builds(std::size_t limit, Reply reply) {
  impl_->worker.Post([this, limit, reply = std::move(reply)] {
    json::array builds;
    for (const StoredBuild& b : impl_->registry->Builds(limit)) {
      builds.push_back(b.ToJson());
    }
    reply({200, json::object{{"builds", std::move(builds)}}});
  });
}

void Deploys::Branches(Reply reply) {
  impl_->worker.Post([this, reply = std::move(reply)] { reply({200, impl_->BranchesJson()}); });
}

void Deploys::Deployments(std::string branch, std::size_t limit, Reply reply) {
  impl_->worker.Post([this, branch = std::move(branch), limit, reply = std::move(reply)] {
    json::array out;
    for (const Deployment& d : impl_->registry->Deployments(branch, limit)) {
      out.push_back(d.ToJson());
    }
    reply({200, json::object{{"deployments", std::move(out)}}});
  });
}

void Deploys::Results(std::uint64_t seq, Reply reply) {
  impl_->worker.Post([this, seq, reply = std::move(reply)] {
    Impl& m = *impl_;
    std::optional<Deployment> d = m.registry->FindDeployment(seq);
    if (!d.has_value() && m.fleet != nullptr) {
      m.Sync(/*boot=*/false);  // one recorded a moment ago elsewhere
      d = m.registry->FindDeployment(seq);
    }
    if (!d.has_value()) {
      reply(Error(404,
                  fmt::format("no deployment #{} is recorded (molt deployments lists them)", seq)));
      return;
    }
    json::array results;
    if (m.fleet != nullptr) {
      Status s = m.Fleet();
      Result<std::vector<ServerResult>> got =
          s.ok() ? m.fleet->Results(seq) : Result<std::vector<ServerResult>>(s);
      if (!got.ok()) {
        reply(Error(503, got.status().message()));
        return;
      }
      for (const ServerResult& r : *got) {
        results.push_back(json::object{
            {"id", r.server_id}, {"result", r.result}, {"reason", r.reason}, {"at_ms", r.at_ms}});
      }
    } else if (d->branch == m.options.branch && d->result != "pending") {
      results.push_back(json::object{{"id", m.options.server_id},
                                     {"result", d->result},
                                     {"reason", d->reason},
                                     {"at_ms", d->at_ms}});
    }
    reply({200, json::object{{"deployment", d->ToJson()}, {"results", std::move(results)}}});
  });
}

void Deploys::ReloadKeys() {
  impl_->worker.Post([this] { impl_->LoadKeys("on SIGHUP"); });
}

std::uint64_t Deploys::AppliedSeq() const { return impl_->applied.load(); }

std::string Deploys::HeadFile() const {
  std::lock_guard lock(impl_->head_mu);
  return impl_->head_file;
}

std::uint32_t Deploys::Bucket(std::string_view server_id) {
  std::uint32_t hash = 5381;
  for (const char c : server_id) {
    hash = hash * 33 + static_cast<unsigned char>(c);
  }
  return hash % 100;
}

void Deploys::RolledBack(std::string build_id, std::string why) {
  impl_->worker.Post([this, build_id = std::move(build_id), why = std::move(why)] {
    Impl& m = *impl_;
    if (m.last_swapped_seq == 0 || m.last_swapped_id != build_id) {
      return;  // not a deployed build
    }
    std::optional<Deployment> d = m.registry->FindDeployment(m.last_swapped_seq);
    if (d.has_value()) {
      d->result = "rolled_back";
      d->reason = why;
      m.SetResult(*d);
      (void)m.registry->MarkFailed(d->build, why);
      Log().Warn("#{} {}: {} rolled back: {}", d->seq, d->branch, d->build_id, why);
    }
    m.last_swapped_id.clear();
  });
}

}  // namespace molt::kernel::deploy

// SPDX-License-Identifier: Apache-2.0
// ProfileAutosave: a profile store's periodic save, built in slices (profile_autosave.h).
#include "kernel/src/store/profile_autosave.h"

#include <algorithm>
#include <random>

namespace molt::kernel::store {

ProfileAutosave::ProfileAutosave(Scheduler& scheduler, ProfileStore& store, ProfileEntries& entries,
                                 const ProfileDeclaration& declaration, ProfileWriter& writer,
                                 ProfileStats& stats, LogScope log)
    : scheduler_(scheduler),
      store_(store),
      entries_(entries),
      declaration_(declaration),
      writer_(writer),
      stats_(stats),
      log_(std::move(log)) {}

ProfileAutosave::~ProfileAutosave() { task_.Cancel(); }

void ProfileAutosave::Arm(Duration delay) {
  task_.Cancel();
  if (entries_.closing()) {
    return;
  }
  task_ = scheduler_.After(
      delay, [this] { Run(); }, Priority::kKernel, TaskOrigin::Named("profile autosave"));
}

void ProfileAutosave::Stop() {
  task_.Cancel();
  pass_.reset();
}

void ProfileAutosave::Run() {
  if (pass_ != nullptr) {
    return;  // one at a time: the pass under way takes every write made meanwhile
  }
  task_.Cancel();
  pass_ = std::make_unique<Pass>();
  entries_.ForEach([this](ProfileEntry& e) {
    if (e.state == ProfileState::kLoaded) {
      pass_->ids.push_back(e.session);
    }
  });
  Continue();
}

void ProfileAutosave::Continue() {
  Pass& p = *pass_;
  const TimePoint t0 = RealNow();
  while (p.next < p.ids.size()) {
    ProfileEntry* e = entries_.Find(p.ids[p.next++]);
    if (e != nullptr && e->state == ProfileState::kLoaded) {
      p.batch.push_back(writer_.WriteFor(*e, false));
      p.sent.emplace_back(e->session, p.batch.back().data ? e->version : 0);
    }
    if (p.next % 64 == 0 && p.next < p.ids.size() && RealNow() - t0 >= kSlice) {
      task_ = scheduler_.Schedule([this] { Continue(); }, Priority::kKernel,
                                  TaskOrigin::Named("profile autosave"));
      return;  // the rest on the next step
    }
  }
  std::unique_ptr<Pass> done = std::move(pass_);
  if (done->batch.empty()) {
    Arm(declaration_.spec().autosave);
    return;
  }
  store_.Write(std::move(done->batch),
               [this, alive = std::weak_ptr<bool>(alive_), sent = std::move(done->sent)](
                   Status s, std::vector<WriteResult> r) {
                 if (alive.lock()) {
                   OnWritten(sent, std::move(s), std::move(r));
                 }
               });
}

void ProfileAutosave::OnWritten(std::vector<std::pair<net::SessionId, std::uint64_t>> sent,
                                Status batch, std::vector<WriteResult> results) {
  if (!batch.ok()) {
    ++stats_.save_failures;
    const Duration retry = declaration_.Backoff(failed_batches_++);
    log_.Warn("saving {} profiles failed: {}; they stay in memory, trying again in {:.0f}s",
              sent.size(), batch.message(), ToSeconds(retry));
    Arm(retry);
    return;
  }
  failed_batches_ = 0;
  for (std::size_t i = 0; i < sent.size() && i < results.size(); ++i) {
    ProfileEntry* e = entries_.Find(sent[i].first);
    if (e == nullptr || e->state != ProfileState::kLoaded) {
      continue;
    }
    if (results[i].status.code() == Status::Code::kStale) {
      writer_.Lose(*e, results[i].status);
    } else if (results[i].status.ok() && sent[i].second > 0) {
      e->saved_version = std::max(e->saved_version, sent[i].second);
      ++stats_.saves;
    }
  }
  // Jitter: hosts that booted together do not write together.
  static thread_local std::mt19937 rng{std::random_device{}()};
  const double f = std::uniform_real_distribution<double>(0.9, 1.1)(rng);
  Arm(std::chrono::duration_cast<Duration>(declaration_.spec().autosave * f));
}

}  // namespace molt::kernel::store

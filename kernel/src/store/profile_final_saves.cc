// SPDX-License-Identifier: Apache-2.0
// ProfileFinalSaves: a session's last save and the close's drain (profile_final_saves.h).
#include "kernel/src/store/profile_final_saves.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace molt::kernel::store {

ProfileFinalSaves::ProfileFinalSaves(ProfileEntries& entries, ProfileLoader& loader,
                                     ProfileWriter& writer, ProfileTransactions& transactions,
                                     ProfileAutosave& autosave, ProfileStats& stats, LogScope log)
    : entries_(entries),
      loader_(loader),
      writer_(writer),
      transactions_(transactions),
      autosave_(autosave),
      stats_(stats),
      log_(std::move(log)) {}

void ProfileFinalSaves::FinalSave(net::SessionId session) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr) {
    return;
  }
  e->retry.Cancel();
  if (e->state == ProfileState::kPending && e->loading) {
    e->left = true;  // released when the load lands
    return;
  }
  if (e->in_txn) {
    e->leave_after_txn = true;  // the transaction's documents are what the final save writes
    return;
  }
  if (e->state != ProfileState::kLoaded) {
    loader_.ReleaseParked(*e);
    entries_.Erase(session);  // failed, lost, or waiting for a lease it never got
    return;
  }
  const std::string key = e->key;
  Write write = writer_.WriteFor(*e, true);
  const bool saving = write.data.has_value();
  entries_.Erase(session);
  loader_.Hold(key);  // a rejoin waits for this
  writer_.Persist({std::move(write)}, "the final save of profile \"" + key + "\"",
                  [this, key, saving](std::vector<WriteResult> r) {
                    if (!r.empty() && r[0].status.code() == Status::Code::kStale) {
                      ++stats_.lost;
                      log_.Error("{}", r[0].status.message());
                    } else if (saving) {
                      ++stats_.saves;
                    }
                    loader_.Released(key);
                  });
}

void ProfileFinalSaves::Drain(Callback<void(std::size_t, std::size_t)> done) {
  if (transactions_.busy()) {  // their documents are what the drain writes
    auto pending = std::make_shared<Callback<void(std::size_t, std::size_t)>>(std::move(done));
    transactions_.AfterAll([this, pending] { Drain(std::move(*pending)); });
    return;
  }
  autosave_.Stop();
  std::vector<Write> batch;
  for (net::SessionId id : entries_.Ids()) {
    ProfileEntry& e = *entries_.Find(id);
    e.retry.Cancel();
    if (e.state == ProfileState::kPending && e.loading) {
      e.left = true;  // released when the load lands
      continue;
    }
    if (e.state == ProfileState::kLoaded) {
      batch.push_back(writer_.WriteFor(e, true));
    }
    loader_.ReleaseParked(e);
    entries_.Erase(id);
  }
  const std::size_t n = batch.size();
  if (n == 0) {
    done(0, 0);
    return;
  }
  writer_.Persist(
      std::move(batch), "the close drain's saves",
      [this, n, done = std::move(done)](std::vector<WriteResult> r) mutable {
        const std::size_t failed =
            std::count_if(r.begin(), r.end(), [](const WriteResult& w) { return !w.status.ok(); });
        stats_.saves += n - failed;
        log_.Info("close drain: {} profiles saved and released{}", n - failed,
                  failed > 0 ? fmt::format(", {} refused (their leases were lost)", failed) : "");
        done(n - failed, failed);
      });
}

}  // namespace molt::kernel::store

// SPDX-License-Identifier: Apache-2.0
// ProfileWriter: a profile's write, batches written until stored, a lease lost (profile_writer.h).
#include "kernel/src/store/profile_writer.h"

#include <boost/json/serialize.hpp>
#include <utility>

namespace molt::kernel::store {

namespace json = boost::json;

ProfileWriter::ProfileWriter(Scheduler& scheduler, ProfileStore& store,
                             const ProfileDeclaration& declaration, ProfileStats& stats,
                             LogScope log, ProfileKick kick)
    : scheduler_(scheduler),
      store_(store),
      declaration_(declaration),
      stats_(stats),
      log_(std::move(log)),
      kick_(std::move(kick)) {}

Write ProfileWriter::WriteFor(ProfileEntry& e, bool release) {
  const ProfileSpec& spec = declaration_.spec();
  Write w{.key = e.key, .token = e.token, .release = release};
  if (!release) {
    w.renew_until =
        WallNow() + std::chrono::duration_cast<std::chrono::milliseconds>(spec.lease_ttl).count();
  }
  if (e.dirty() || e.backup_now) {
    std::string text = json::serialize(e.doc);
    Status ok = declaration_.Validate(e, text);
    if (ok.ok()) {
      w.data = std::move(text);
      w.schema_version = spec.schema_version;
      w.backup_every =
          std::chrono::duration_cast<std::chrono::milliseconds>(spec.backup_interval).count();
      w.backup_now = std::exchange(e.backup_now, false);
      w.mirror = spec.mirror;
    } else {
      ++stats_.refused;
      log_.Error("profile \"{}\": save refused by validate: {} (the stored revision stays)", e.key,
                 ok.message());
    }
  }
  return w;
}

void ProfileWriter::Persist(std::vector<Write> batch, std::string what,
                            Callback<void(std::vector<WriteResult>)> done) {
  Send(std::make_shared<Persisting>(
      Persisting{std::move(batch), std::move(what), std::move(done), 0}));
}

void ProfileWriter::Send(std::shared_ptr<Persisting> job) {
  store_.Write(job->batch, [this, alive = std::weak_ptr<bool>(alive_), job](
                               Status s, std::vector<WriteResult> r) {
    if (!alive.lock()) {
      return;
    }
    if (!s.ok()) {
      ++stats_.save_failures;
      const Duration retry = declaration_.Backoff(job->attempt++);
      log_.Warn("{} failed: {}; the profiles stay in memory, trying again in {:.0f}s", job->what,
                s.message(), ToSeconds(retry));
      scheduler_.After(
          retry,
          [this, alive, job] {
            if (alive.lock()) {
              Send(job);
            }
          },
          Priority::kKernel, TaskOrigin::Named("profile save retry"));
      return;
    }
    job->done(std::move(r));
  });
}

void ProfileWriter::Lose(ProfileEntry& e, const Status& why) {
  ++stats_.lost;
  e.state = ProfileState::kLost;
  if (e.manual()) {
    log_.Error("{}: this host no longer writes it", why.message());
    return;
  }
  log_.Error("{}: session {} ends", why.message(), e.session);
  kick_(e.session, "your " + declaration_.name() +
                       " profile was opened on another server: this session ends so that "
                       "nothing is overwritten");
}

}  // namespace molt::kernel::store

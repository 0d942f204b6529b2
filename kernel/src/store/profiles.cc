// SPDX-License-Identifier: Apache-2.0
// Profiles: a profile store as the composition of its parts (profiles.h): the join, reading and
// writing a document, manual keys and the declarations that come and go here; the rest handed to
// the part whose job it is. Documents live in memory as Boost.JSON values; each Set bumps the
// entry's version, and a write acknowledged for version v makes the entry clean up to v (a Set
// made while the write was in flight keeps it dirty).
#include "kernel/src/store/profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <utility>

#include "kernel/src/net/network.h"
#include "kernel/src/store/profile_document.h"

namespace molt::kernel::store {

namespace json = boost::json;

Profiles::Profiles(Kernel& kernel, net::Network& network, ProfileStore& store, std::string host,
                   ProfileSpec spec)
    : network_(network),
      log_("Profiles " + spec.name),
      declaration_(std::move(spec), log_),
      writer_(kernel.scheduler(), store, declaration_, stats_, log_,
              [&network](net::SessionId session, std::string reason) {
                (void)network.Kick(session, reason);
              }),
      backups_(store, entries_, declaration_),
      loader_(kernel.scheduler(), kernel.bus(), store, host, entries_, declaration_, backups_,
              stats_, log_,
              [&network](net::SessionId session, std::string reason) {
                (void)network.Kick(session, reason);
              }),
      snapshots_(entries_, declaration_),
      autosave_(kernel.scheduler(), store, entries_, declaration_, writer_, stats_, log_),
      transactions_(store, entries_, declaration_, writer_, stats_, std::move(host),
                    [this](net::SessionId session) { final_saves_.FinalSave(session); }),
      final_saves_(entries_, loader_, writer_, transactions_, autosave_, stats_, log_) {
  on_session_ = network_.sessions().OnSession([this](net::Session& s) { Join(s); });
  autosave_.Arm(declaration_.spec().autosave);
}

Profiles::~Profiles() {
  on_session_.Disconnect();
  network_.sessions().ReleaseOwner(this);  // the final-save bindings: released, not run
  autosave_.Stop();
  entries_.ForEach([](ProfileEntry& e) { e.retry.Cancel(); });
}

void Profiles::Join(net::Session& s) {
  std::string key;
  key.reserve(name().size() + 1 + s.user().size());  // one allocation, not three
  key.append(name()).append(1, '/').append(s.user());
  entries_.AddSession(s.id(), std::move(key));
  s.BindLast([this, id = s.id()] { final_saves_.FinalSave(id); }, this, [] {});
  loader_.Load(s.id(), 0);
}

ProfileState Profiles::state(net::SessionId session) const {
  const ProfileEntry* e = entries_.Find(session);
  return e == nullptr ? ProfileState::kNone : e->state;
}

std::size_t Profiles::loaded_count() const { return entries_.Count(ProfileState::kLoaded); }

// --- Reading and writing ---

Result<std::string> Profiles::Get(net::SessionId session, std::string_view pointer) const {
  const ProfileEntry* e = entries_.Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is {}: wait for Kernel.ProfileLoaded", name(),
                    session, ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
  }
  MOLT_ASSIGN_OR_RETURN(const json::value* at, FindPointer(e->doc, pointer));
  if (at == nullptr) {
    return Status::NotFound(fmt::format("the {} profile of session {} has nothing at \"{}\"",
                                        name(), session, pointer));
  }
  return json::serialize(*at);
}

Status Profiles::Set(net::SessionId session, std::string_view pointer, std::string_view value) {
  ProfileEntry* e = entries_.Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is {}: it cannot be written", name(), session,
                    ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
  }
  if (e->in_txn) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is in a transaction: write it on a later step",
                    name(), session));
  }
  Result<json::value> v = ParseJson(value);
  if (!v.ok()) {
    return Status::InvalidArgument(
        fmt::format("the value for \"{}\" is {}", pointer, v.status().message()));
  }
  MOLT_RETURN_IF_ERROR(SetPointer(e->doc, pointer, std::move(v).value()));
  ++e->version;
  return Status::Ok();
}

void Profiles::SaveAll() { autosave_.Run(); }

// --- Manual keys ---

void Profiles::LoadKey(const std::string& key, Callback<void(Status)> done) {
  const bool valid = !key.empty() && key.size() <= 200 &&
                     std::none_of(key.begin(), key.end(), [](unsigned char c) { return c < 0x20; });
  if (!valid) {
    return done(Status::InvalidArgument("profile key \"" + key +
                                        "\" must be 1..200 characters without control characters"));
  }
  if (entries_.closing()) {
    return done(Status::FailedPrecondition("profile store \"" + name() + "\" is closing"));
  }
  if (KeySession(key) != 0) {
    return done(Status::AlreadyExists(fmt::format("profile \"{}/{}\" is already {} here", name(),
                                                  key, ProfileStateName(state(KeySession(key))))));
  }
  ProfileEntry& e = entries_.AddKey(key, name() + "/" + key);
  e.on_load = std::move(done);
  loader_.Load(e.session, 0);
}

net::SessionId Profiles::KeySession(const std::string& key) const { return entries_.KeyId(key); }

Status Profiles::ReleaseKey(const std::string& key) {
  const net::SessionId id = entries_.KeyId(key);
  entries_.ForgetKey(key);
  if (id == 0) {
    return Status::NotFound(fmt::format("profile \"{}/{}\" is not loaded here", name(), key));
  }
  if (ProfileEntry* e = entries_.Find(id); e->on_load) {  // still loading: told it was let go
    std::exchange(e->on_load, nullptr)(
        Status::Cancelled(fmt::format("profile \"{}\" was released before it loaded", e->key)));
  }
  final_saves_.FinalSave(id);
  return Status::Ok();
}

void Profiles::ReleaseAllKeys() {
  for (const std::string& key : entries_.KeyNames()) {
    (void)ReleaseKey(key);
  }
}

// --- The parts' calls ---

Result<std::uint64_t> Profiles::Snapshot(net::SessionId session, std::string label) {
  return snapshots_.Take(session, std::move(label));
}

Result<std::vector<SnapshotInfo>> Profiles::Snapshots(net::SessionId session) const {
  return snapshots_.List(session);
}

Status Profiles::Rollback(net::SessionId session, std::uint64_t id) {
  return snapshots_.Rollback(session, id);
}

Status Profiles::BackupNow(net::SessionId session) { return backups_.BackupNow(session); }

void Profiles::Transact(std::string id, net::SessionId a, net::SessionId b, const Mutator& mutate,
                        Callback<void(TxnResult)> done) {
  transactions_.Transact(std::move(id), a, b, mutate, std::move(done));
}

// --- Declarations come and go ---

void Profiles::Detach() { declaration_.Detach(entries_); }

void Profiles::ForgetUndo() { declaration_.ForgetUndo(); }

Status Profiles::Adopt(ProfileSpec spec) {
  MOLT_RETURN_IF_ERROR(declaration_.Adopt(std::move(spec), entries_));
  // Loads that landed while detached finish now, in turn.
  loader_.FinishParked();
  if (!autosave_.running()) {  // a pass under way re-arms when its batch is written
    autosave_.Arm(declaration_.spec().autosave);
  }
  return Status::Ok();
}

void Profiles::Drain(Callback<void(std::size_t, std::size_t)> done) {
  entries_.Close();
  on_session_.Disconnect();
  final_saves_.Drain(std::move(done));
}

}  // namespace molt::kernel::store

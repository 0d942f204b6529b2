// SPDX-License-Identifier: Apache-2.0
// Profiles: the per-session state machine over the store's completions: the load lifecycle (the
// join, a lease held elsewhere, decoding and migrating, the failure that kicks), reading and
// writing, autosave, the final save and the drain, manual keys, and declarations that come and
// go. Documents live in memory as Boost.JSON values; each Set bumps the entry's version, and a
// write acknowledged for version v makes the entry clean up to v (a Set made while the write was
// in flight keeps it dirty). Snapshots, backups and transactions are member functions defined in
// files of their own (profile_snapshots.cc, profile_backups.cc, profile_transactions.cc).
#include "kernel/src/store/profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <random>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/profile_document.h"
#include "kernel/src/store/profile_entry.h"

namespace molt::kernel::store {

namespace json = boost::json;

std::string_view ProfileStateName(ProfileState state) {
  switch (state) {
    case ProfileState::kNone:
      return "none";
    case ProfileState::kPending:
      return "pending";
    case ProfileState::kLoaded:
      return "loaded";
    case ProfileState::kFailed:
      return "failed";
    case ProfileState::kLost:
      return "lost";
  }
  return "?";
}

struct Profiles::Undo {
  std::uint32_t schema_version = 0;  // of `docs`
  std::map<net::SessionId, json::value> docs;
};

Profiles::Profiles(Kernel& kernel, net::Network& network, ProfileStore& store, std::string host,
                   ProfileSpec spec)
    : kernel_(kernel),
      network_(network),
      store_(store),
      host_(std::move(host)),
      spec_(std::move(spec)),
      log_("Profiles " + spec_.name) {
  Result<json::value> defaults = ParseJson(spec_.defaults);
  if (!defaults.ok() || !defaults->is_object()) {
    log_.Error("the defaults are {}: profiles get no defaults (give a JSON object)",
               defaults.ok() ? "not a JSON object" : defaults.status().message());
  }
  defaults_ = std::make_unique<json::value>(
      defaults.ok() && defaults->is_object() ? std::move(defaults).value() : json::object());
  on_session_ = network_.sessions().OnSession([this](net::Session& s) {
    auto e = std::make_unique<Entry>();
    e->session = s.id();
    e->key.reserve(spec_.name.size() + 1 + s.user().size());  // one allocation, not three
    e->key.append(spec_.name).append(1, '/').append(s.user());
    entries_[s.id()] = std::move(e);
    s.BindLast([this, id = s.id()] { FinalSave(id); }, this, [] {});
    Load(s.id(), 0);
  });
  ArmAutosave(spec_.autosave);
}

Profiles::~Profiles() {
  on_session_.Disconnect();
  network_.sessions().ReleaseOwner(this);  // the final-save bindings: released, not run
  autosave_.Cancel();
  for (auto& [id, e] : entries_) {
    e->retry.Cancel();
  }
}

Profiles::Entry* Profiles::Find(net::SessionId session) const {
  auto it = entries_.find(session);
  return it == entries_.end() ? nullptr : it->second.get();
}

ProfileState Profiles::state(net::SessionId session) const {
  const Entry* e = Find(session);
  return e == nullptr ? ProfileState::kNone : e->state;
}

std::size_t Profiles::loaded_count() const {
  return std::count_if(entries_.begin(), entries_.end(),
                       [](const auto& e) { return e.second->state == ProfileState::kLoaded; });
}

Duration Profiles::Backoff(std::uint32_t attempt) const {
  if (spec_.backoff.empty()) {
    return std::chrono::seconds(1);
  }
  return spec_.backoff[std::min<std::size_t>(attempt, spec_.backoff.size() - 1)];
}

// --- Loading ---

void Profiles::Load(net::SessionId session, std::uint32_t attempt) {
  Entry* e = Find(session);
  if (e == nullptr) {
    return;
  }
  e->loading = true;
  e->attempt = attempt;
  // The completion's captures fit a Callback's inline storage: no allocation per join.
  store_.Load(e->key, host_, std::chrono::duration_cast<std::chrono::milliseconds>(spec_.lease_ttl),
              [this, alive = std::weak_ptr<bool>(alive_), session](LoadResult r) {
                if (alive.lock()) {
                  OnLoaded(session, std::move(r));
                }
              });
}

void Profiles::OnLoaded(net::SessionId session, LoadResult r) {
  Entry* e = Find(session);
  if (e == nullptr) {
    return;
  }
  const std::uint32_t attempt = e->attempt;
  e->loading = false;
  if (e->left || draining_) {
    // The session ended (or the server closes) while it loaded: let the lease go at once.
    if (r.status.ok()) {
      store_.Write({{.key = e->key, .token = r.record.lease.token, .release = true}},
                   [](Status, std::vector<WriteResult>) {});
    }
    entries_.erase(session);
    return;
  }
  if (r.busy()) {
    ++stats_.lease_waits;
    if (r.holder.owner == host_ && releasing_.count(e->key) != 0) {
      releasing_[e->key].push_back(session);  // our own final save: loaded again once it lands
      return;
    }
    const Duration until_expiry =
        std::chrono::milliseconds(std::max<WallMillis>(r.holder.expires - WallNow() + 50, 10));
    const Duration delay = std::min(until_expiry, Backoff(attempt));
    log_.Info("{}; session {} waits, trying again in {:.1f}s", r.status.message(), session,
              ToSeconds(delay));
    e->retry = kernel_.scheduler().After(
        delay, [this, session, attempt] { Load(session, attempt + 1); }, Priority::kKernel,
        TaskOrigin::Named("profile load"));
    return;
  }
  if (r.status.code() == Status::Code::kIoError) {
    // The store cannot be reached (a database restarting, a disk error): the session waits with
    // its profile pending and the load is tried again; only what is wrong with the record itself
    // fails it.
    const Duration delay = Backoff(attempt);
    log_.Warn("{}; session {} waits with its profile pending, trying again in {:.1f}s",
              r.status.message(), session, ToSeconds(delay));
    e->retry = kernel_.scheduler().After(
        delay, [this, session, attempt] { Load(session, attempt + 1); }, Priority::kKernel,
        TaskOrigin::Named("profile load"));
    return;
  }
  if (!r.status.ok()) {
    return Fail(session, r.status.message());
  }
  if (!attached_) {
    e->parked = std::move(r);  // its migrations and defaults are the next declaration's
    return;
  }
  const Record& rec = r.record;
  e->token = rec.lease.token;
  if (!rec.data) {  // a new profile: the defaults, saved at the next autosave
    json::value doc = json::object();
    FillDefaults(doc, *defaults_);
    return Loaded(*e, std::move(doc), true);
  }
  const std::string where = fmt::format("profile \"{}\" (revision {})", e->key, rec.revision);
  if (rec.schema_version > spec_.schema_version) {  // a deploy mismatch: never "restored"
    return Fail(session, fmt::format("{} has schema version {}, newer than this build reads ({}): "
                                     "deploy the build that wrote it",
                                     where, rec.schema_version, spec_.schema_version));
  }
  bool changed = false;
  Result<json::value> doc = Decode(*rec.data, rec.schema_version, where, &changed);
  if (!doc.ok()) {
    if (spec_.backup_interval > Duration::zero() || spec_.mirror) {
      return Restore(session, e->token, doc.status().message());
    }
    return Fail(session,
                doc.status().message() + ": fix it with the sqlite3 tool (docs/profiles.md)");
  }
  Loaded(*e, std::move(doc).value(), changed);
}

Result<json::value> Profiles::Decode(const std::string& data, std::uint32_t from,
                                     const std::string& where, bool* changed) const {
  Result<json::value> parsed = ParseJson(data);
  if (!parsed.ok() || !parsed->is_object()) {
    return Status::InvalidArgument(fmt::format(
        "{} is {}", where, parsed.ok() ? "not a JSON object" : parsed.status().message()));
  }
  MOLT_ASSIGN_OR_RETURN(json::value doc,
                        MigrateDocument(spec_, std::move(parsed).value(), from, where));
  *changed = from != spec_.schema_version;
  *changed = FillDefaults(doc, *defaults_) || *changed;
  return doc;
}

void Profiles::Loaded(Entry& e, json::value doc, bool changed) {
  e.doc = std::move(doc);
  e.state = ProfileState::kLoaded;
  e.version = changed ? 1 : 0;
  e.saved_version = 0;
  ++stats_.loaded;
  if (e.manual()) {
    if (e.on_load) {
      std::exchange(e.on_load, nullptr)(Status::Ok());
    }
    return;
  }
  const Value args[] = {Value::Handle(e.session), Value::String(spec_.name)};
  kernel_.bus().Publish("Kernel.ProfileLoaded", args);
}

void Profiles::Fail(net::SessionId session, const std::string& why) {
  Entry* e = Find(session);
  ++stats_.load_failures;
  e->state = ProfileState::kFailed;
  if (e->manual()) {
    log_.Error("{}", why);
    Callback<void(Status)> done = std::move(e->on_load);
    keys_.erase(e->key.substr(spec_.name.size() + 1));
    entries_.erase(session);
    if (done) {
      done(Status::FailedPrecondition(why));
    }
    return;
  }
  log_.Error("session {}: {}", session, why);
  const Value args[] = {Value::Handle(session), Value::String(spec_.name), Value::String(why)};
  kernel_.bus().Publish("Kernel.ProfileFailed", args);
  if (spec_.kick_on_load_failure) {
    (void)network_.Kick(session, "your " + spec_.name +
                                     " profile could not be loaded; nothing was changed: try "
                                     "again later");
  }
}

// --- Reading and writing ---

Result<std::string> Profiles::Get(net::SessionId session, std::string_view pointer) const {
  const Entry* e = Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is {}: wait for Kernel.ProfileLoaded", spec_.name,
                    session, ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
  }
  MOLT_ASSIGN_OR_RETURN(std::vector<std::string> tokens, PointerTokens(pointer));
  const json::value* at = &e->doc;
  for (const std::string& t : tokens) {
    const json::value* next = nullptr;
    if (at->is_object()) {
      next = at->as_object().if_contains(t);
    } else if (at->is_array()) {
      if (auto i = PointerIndex(t, at->as_array().size(), false)) {
        next = &at->as_array()[*i];
      }
    }
    if (next == nullptr) {
      return Status::NotFound(fmt::format("the {} profile of session {} has nothing at \"{}\"",
                                          spec_.name, session, pointer));
    }
    at = next;
  }
  return json::serialize(*at);
}

Status Profiles::Set(net::SessionId session, std::string_view pointer, std::string_view value) {
  Entry* e = Find(session);
  if (e == nullptr || e->state != ProfileState::kLoaded) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is {}: it cannot be written", spec_.name, session,
                    ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
  }
  if (e->in_txn) {
    return Status::FailedPrecondition(
        fmt::format("the {} profile of session {} is in a transaction: write it on a later step",
                    spec_.name, session));
  }
  Result<json::value> v = ParseJson(value);
  if (!v.ok()) {
    return Status::InvalidArgument(
        fmt::format("the value for \"{}\" is {}", pointer, v.status().message()));
  }
  MOLT_ASSIGN_OR_RETURN(std::vector<std::string> tokens, PointerTokens(pointer));
  if (tokens.empty()) {
    if (!v->is_object()) {
      return Status::InvalidArgument("a profile document is a JSON object");
    }
    e->doc = std::move(v).value();
    ++e->version;
    return Status::Ok();
  }
  json::value* at = &e->doc;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    const std::string& t = (tokens)[i];
    if (at->is_object()) {
      json::object& o = at->as_object();
      auto it = o.find(t);
      at = it != o.end() ? &it->value() : &o.emplace(t, json::object()).first->value();
    } else if (at->is_array()) {
      auto idx = PointerIndex(t, at->as_array().size(), false);
      if (!idx) {
        return Status::NotFound(fmt::format("\"{}\": no element {} in that array", pointer, t));
      }
      at = &at->as_array()[*idx];
    } else {
      return Status::InvalidArgument(fmt::format(
          "\"{}\": \"{}\" is inside a value that is neither object nor array", pointer, t));
    }
  }
  const std::string& last = tokens.back();
  if (at->is_object()) {
    at->as_object()[last] = std::move(v).value();
  } else if (at->is_array()) {
    json::array& a = at->as_array();
    auto idx = PointerIndex(last, a.size(), true);
    if (!idx) {
      return Status::NotFound(fmt::format("\"{}\": no element {} in that array", pointer, last));
    }
    if (*idx == a.size()) {
      a.push_back(std::move(v).value());
    } else {
      a[*idx] = std::move(v).value();
    }
  } else {
    return Status::InvalidArgument(
        fmt::format("\"{}\": its parent is neither an object nor an array", pointer));
  }
  ++e->version;
  return Status::Ok();
}

// --- Saving ---

Write Profiles::WriteFor(Entry& e, bool release) {
  Write w{.key = e.key, .token = e.token, .release = release};
  if (!release) {
    w.renew_until =
        WallNow() + std::chrono::duration_cast<std::chrono::milliseconds>(spec_.lease_ttl).count();
  }
  if (e.dirty() || e.backup_now) {
    std::string text = json::serialize(e.doc);
    Status ok = Validate(e, text);
    if (ok.ok()) {
      w.data = std::move(text);
      w.schema_version = spec_.schema_version;
      w.backup_every =
          std::chrono::duration_cast<std::chrono::milliseconds>(spec_.backup_interval).count();
      w.backup_now = std::exchange(e.backup_now, false);
      w.mirror = spec_.mirror;
    } else {
      ++stats_.refused;
      log_.Error("profile \"{}\": save refused by validate: {} (the stored revision stays)", e.key,
                 ok.message());
    }
  }
  return w;
}

Status Profiles::Validate(Entry& e, const std::string& text) {
  if (spec_.validate) {
    return spec_.validate(text);
  }
  return e.verdict && e.verdict_version == e.version ? *e.verdict : Status::Ok();
}

// --- Declarations come and go ---

void Profiles::Detach() {
  if (!attached_) {
    return;
  }
  for (auto& [id, e] : entries_) {
    if (e->state == ProfileState::kLoaded && e->dirty() && spec_.validate) {
      e->verdict = spec_.validate(json::serialize(e->doc));
      e->verdict_version = e->version;
    }
  }
  spec_.migrate = nullptr;
  spec_.validate = nullptr;
  attached_ = false;
}

void Profiles::ForgetUndo() { undo_.reset(); }

Status Profiles::Adopt(ProfileSpec spec) {
  Result<json::value> defaults = ParseJson(spec.defaults);
  if (!defaults.ok() || !defaults->is_object()) {
    return Status::InvalidArgument(
        fmt::format("the defaults of profile store \"{}\" are {}: give a JSON object", spec.name,
                    defaults.ok() ? "not a JSON object" : defaults.status().message()));
  }
  const std::uint32_t from = spec_.schema_version;
  // A failed swap's restored build takes back what the swap's adoption migrated.
  const bool take_back = spec.schema_version < from && undo_ != nullptr &&
                         undo_->schema_version == spec.schema_version;
  auto undo = std::make_unique<Undo>(Undo{from, {}});
  std::map<net::SessionId, json::value> migrated;
  if (spec.schema_version != from) {
    for (const auto& [id, e] : entries_) {
      if (e->state != ProfileState::kLoaded) {
        continue;
      }
      const json::value* before = nullptr;
      if (take_back) {
        auto it = undo_->docs.find(id);
        before = it != undo_->docs.end() ? &it->second : nullptr;
      }
      if (spec.schema_version < from && before == nullptr) {
        return Status::FailedPrecondition(fmt::format(
            "profile store \"{}\" holds documents at schema version {} (profile \"{}\" is "
            "loaded): a build that reads up to {} cannot take it over; deploy a build at schema "
            "version {} or later",
            spec.name, from, e->key, spec.schema_version, from));
      }
      if (take_back) {
        migrated[id] = *before;
        continue;
      }
      MOLT_ASSIGN_OR_RETURN(json::value doc,
                            MigrateDocument(spec, e->doc, from, "profile \"" + e->key + "\""));
      migrated[id] = std::move(doc);
      undo->docs[id] = e->doc;
    }
  }
  if (take_back) {
    log_.Warn(
        "the documents migrated to schema version {} go back to version {}: the swap that "
        "migrated them failed",
        from, spec.schema_version);
    undo_.reset();
  } else if (spec.schema_version != from) {
    undo_ = std::move(undo);
  }
  spec_ = std::move(spec);
  *defaults_ = std::move(defaults).value();
  attached_ = true;
  for (auto& [id, e] : entries_) {
    e->verdict.reset();
    if (e->state != ProfileState::kLoaded) {
      continue;
    }
    bool changed = false;
    if (auto it = migrated.find(id); it != migrated.end()) {
      e->doc = std::move(it->second);
      changed = true;
    }
    if (FillDefaults(e->doc, *defaults_) || changed) {
      ++e->version;
    }
  }
  // Loads that landed while detached finish now, in turn. Each stays parked until its turn: a
  // ProfileLoaded handler of an earlier one may end a later one's session, whose end then lets
  // go of its lease (ReleaseParked) as for any parked load.
  std::vector<net::SessionId> parked;
  for (auto& [id, e] : entries_) {
    if (e->parked) {
      parked.push_back(id);
    }
  }
  for (net::SessionId id : parked) {
    Entry* e = Find(id);
    if (e == nullptr || !e->parked) {
      continue;  // ended meanwhile
    }
    LoadResult r = std::move(*e->parked);
    e->parked.reset();
    e->attempt = 0;
    OnLoaded(id, std::move(r));
  }
  if (pass_ == nullptr) {  // a pass under way re-arms when its batch is written
    ArmAutosave(spec_.autosave);
  }
  return Status::Ok();
}

void Profiles::ArmAutosave(Duration delay) {
  autosave_.Cancel();
  if (draining_) {
    return;
  }
  autosave_ = kernel_.scheduler().After(
      delay, [this] { Autosave(); }, Priority::kKernel, TaskOrigin::Named("profile autosave"));
}

void Profiles::SaveAll() { Autosave(); }

// An autosave builds its one batch a slice at a time (serializing 10,000 documents at once
// would hold the kernel thread for tens of milliseconds), then writes it.
struct Profiles::Pass {
  std::vector<net::SessionId> ids;
  std::size_t next = 0;
  std::vector<Write> batch;
  std::vector<std::pair<net::SessionId, std::uint64_t>> sent;  // (session, version written)
};

void Profiles::Autosave() {
  if (pass_ != nullptr) {
    return;  // one at a time: the pass under way takes every write made meanwhile
  }
  autosave_.Cancel();
  pass_ = std::make_unique<Pass>();
  for (const auto& [id, e] : entries_) {
    if (e->state == ProfileState::kLoaded) {
      pass_->ids.push_back(id);
    }
  }
  ContinuePass();
}

void Profiles::ContinuePass() {
  Pass& p = *pass_;
  const TimePoint t0 = RealNow();
  while (p.next < p.ids.size()) {
    Entry* e = Find(p.ids[p.next++]);
    if (e != nullptr && e->state == ProfileState::kLoaded) {
      p.batch.push_back(WriteFor(*e, false));
      p.sent.emplace_back(e->session, p.batch.back().data ? e->version : 0);
    }
    if (p.next % 64 == 0 && p.next < p.ids.size() && RealNow() - t0 >= kAutosaveSlice) {
      autosave_ = kernel_.scheduler().Schedule([this] { ContinuePass(); }, Priority::kKernel,
                                               TaskOrigin::Named("profile autosave"));
      return;  // the rest on the next step
    }
  }
  std::unique_ptr<Pass> done = std::move(pass_);
  if (done->batch.empty()) {
    ArmAutosave(spec_.autosave);
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

void Profiles::OnWritten(std::vector<std::pair<net::SessionId, std::uint64_t>> sent, Status batch,
                         std::vector<WriteResult> results) {
  if (!batch.ok()) {
    ++stats_.save_failures;
    const Duration retry = Backoff(failed_batches_++);
    log_.Warn("saving {} profiles failed: {}; they stay in memory, trying again in {:.0f}s",
              sent.size(), batch.message(), ToSeconds(retry));
    ArmAutosave(retry);
    return;
  }
  failed_batches_ = 0;
  for (std::size_t i = 0; i < sent.size() && i < results.size(); ++i) {
    Entry* e = Find(sent[i].first);
    if (e == nullptr || e->state != ProfileState::kLoaded) {
      continue;
    }
    if (results[i].status.code() == Status::Code::kStale) {
      Lose(*e, results[i].status);
    } else if (results[i].status.ok() && sent[i].second > 0) {
      e->saved_version = std::max(e->saved_version, sent[i].second);
      ++stats_.saves;
    }
  }
  // Jitter: hosts that booted together do not write together.
  static thread_local std::mt19937 rng{std::random_device{}()};
  const double f = std::uniform_real_distribution<double>(0.9, 1.1)(rng);
  ArmAutosave(std::chrono::duration_cast<Duration>(spec_.autosave * f));
}

void Profiles::FinalSave(net::SessionId session) {
  Entry* e = Find(session);
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
    ReleaseParked(*e);
    entries_.erase(session);  // failed, lost, or waiting for a lease it never got
    return;
  }
  const std::string key = e->key;
  Write write = WriteFor(*e, true);
  const bool saving = write.data.has_value();
  entries_.erase(session);
  releasing_[key];  // a rejoin waits for this
  Persist({std::move(write)}, "the final save of profile \"" + key + "\"",
          [this, key, saving](std::vector<WriteResult> r) {
            if (!r.empty() && r[0].status.code() == Status::Code::kStale) {
              ++stats_.lost;
              log_.Error("{}", r[0].status.message());
            } else if (saving) {
              ++stats_.saves;
            }
            std::vector<net::SessionId> waiting = std::move(releasing_[key]);
            releasing_.erase(key);
            for (net::SessionId w : waiting) {
              Load(w, 0);
            }
          });
}

void Profiles::Lose(Entry& e, const Status& why) {
  ++stats_.lost;
  e.state = ProfileState::kLost;
  if (e.manual()) {
    log_.Error("{}: this host no longer writes it", why.message());
    return;
  }
  log_.Error("{}: session {} ends", why.message(), e.session);
  (void)network_.Kick(e.session, "your " + spec_.name +
                                     " profile was opened on another server: this session ends "
                                     "so that nothing is overwritten");
}

// --- Manual keys ---

void Profiles::LoadKey(const std::string& key, Callback<void(Status)> done) {
  const bool valid = !key.empty() && key.size() <= 200 &&
                     std::none_of(key.begin(), key.end(), [](unsigned char c) { return c < 0x20; });
  if (!valid) {
    return done(Status::InvalidArgument("profile key \"" + key +
                                        "\" must be 1..200 characters without control characters"));
  }
  if (draining_) {
    return done(Status::FailedPrecondition("profile store \"" + spec_.name + "\" is closing"));
  }
  if (KeySession(key) != 0) {
    return done(
        Status::AlreadyExists(fmt::format("profile \"{}/{}\" is already {} here", spec_.name, key,
                                          ProfileStateName(state(KeySession(key))))));
  }
  const net::SessionId id = next_key_++;
  auto e = std::make_unique<Entry>();
  e->session = id;
  e->key = spec_.name + "/" + key;
  e->on_load = std::move(done);
  entries_[id] = std::move(e);
  keys_[key] = id;
  Load(id, 0);
}

net::SessionId Profiles::KeySession(const std::string& key) const {
  auto it = keys_.find(key);
  return it != keys_.end() && Find(it->second) != nullptr ? it->second : 0;
}

Status Profiles::ReleaseKey(const std::string& key) {
  const net::SessionId id = KeySession(key);
  keys_.erase(key);
  if (id == 0) {
    return Status::NotFound(fmt::format("profile \"{}/{}\" is not loaded here", spec_.name, key));
  }
  if (Entry* e = Find(id); e->on_load) {  // still loading: it is told it was let go
    std::exchange(e->on_load, nullptr)(
        Status::Cancelled(fmt::format("profile \"{}\" was released before it loaded", e->key)));
  }
  FinalSave(id);
  return Status::Ok();
}

void Profiles::ReleaseAllKeys() {
  std::vector<std::string> keys;
  for (const auto& [key, id] : keys_) {
    keys.push_back(key);
  }
  for (const std::string& key : keys) {
    (void)ReleaseKey(key);
  }
}

void Profiles::ReleaseParked(Entry& e) {
  if (e.parked && e.parked->status.ok()) {
    store_.Write({{.key = e.key, .token = e.parked->record.lease.token, .release = true}},
                 [](Status, std::vector<WriteResult>) {});
  }
  e.parked.reset();
}

void Profiles::Drain(Callback<void(std::size_t, std::size_t)> done) {
  draining_ = true;
  on_session_.Disconnect();
  if (transactions_ > 0) {  // their documents are what the drain writes
    auto pending = std::make_shared<Callback<void(std::size_t, std::size_t)>>(std::move(done));
    after_transactions_ = [this, pending] { Drain(std::move(*pending)); };
    return;
  }
  autosave_.Cancel();
  pass_.reset();
  std::vector<Write> batch;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = *it->second;
    e.retry.Cancel();
    if (e.state == ProfileState::kPending && e.loading) {
      e.left = true;  // released when the load lands
      ++it;
      continue;
    }
    if (e.state == ProfileState::kLoaded) {
      batch.push_back(WriteFor(e, true));
    }
    ReleaseParked(e);
    it = entries_.erase(it);
  }
  const std::size_t n = batch.size();
  if (n == 0) {
    done(0, 0);
    return;
  }
  Persist(
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

// A batch being written until it is stored.
struct Profiles::Persisting {
  std::vector<Write> batch;
  std::string what;
  Callback<void(std::vector<WriteResult>)> done;
  std::uint32_t attempt = 0;
};

void Profiles::Persist(std::vector<Write> batch, std::string what,
                       Callback<void(std::vector<WriteResult>)> done) {
  Send(std::make_shared<Persisting>(
      Persisting{std::move(batch), std::move(what), std::move(done), 0}));
}

void Profiles::Send(std::shared_ptr<Persisting> job) {
  store_.Write(job->batch, [this, alive = std::weak_ptr<bool>(alive_), job](
                               Status s, std::vector<WriteResult> r) {
    if (!alive.lock()) {
      return;
    }
    if (!s.ok()) {
      ++stats_.save_failures;
      const Duration retry = Backoff(job->attempt++);
      log_.Warn("{} failed: {}; the profiles stay in memory, trying again in {:.0f}s", job->what,
                s.message(), ToSeconds(retry));
      kernel_.scheduler().After(
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

}  // namespace molt::kernel::store

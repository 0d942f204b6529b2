// SPDX-License-Identifier: Apache-2.0
// ProfileTransactions: two profiles changed at once, in one database transaction
// (profile_transactions.h).
#include "kernel/src/store/profile_transactions.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <exception>
#include <tuple>
#include <utility>

#include "kernel/src/store/profile_document.h"

namespace molt::kernel::store {

namespace json = boost::json;

std::string_view TxnReasonName(TxnReason reason) {
  switch (reason) {
    case TxnReason::kOk:
      return "Ok";
    case TxnReason::kAborted:
      return "Aborted";
    case TxnReason::kMutatorError:
      return "MutatorError";
    case TxnReason::kSaveAFailed:
      return "SaveAFailed";
    case TxnReason::kSaveBFailed:
      return "SaveBFailed";
    case TxnReason::kProfileInactive:
      return "ProfileInactive";
    case TxnReason::kSameProfile:
      return "SameProfile";
    case TxnReason::kBusy:
      return "Busy";
    case TxnReason::kDuplicateTransaction:
      return "DuplicateTransaction";
  }
  return "?";
}

ProfileTransactions::ProfileTransactions(ProfileStore& store, ProfileEntries& entries,
                                         const ProfileDeclaration& declaration,
                                         ProfileWriter& writer, ProfileStats& stats,
                                         std::string host,
                                         Callback<void(net::SessionId)> final_save)
    : store_(store),
      entries_(entries),
      declaration_(declaration),
      writer_(writer),
      stats_(stats),
      host_(std::move(host)),
      final_save_(std::move(final_save)) {}

void ProfileTransactions::Transact(std::string id, net::SessionId a, net::SessionId b,
                                   const Mutator& mutate, Callback<void(TxnResult)> done) {
  ProfileEntry* ea = entries_.Find(a);
  ProfileEntry* eb = entries_.Find(b);
  if (std::optional<TxnResult> refused = Check(a, b, ea, eb)) {
    return done(std::move(*refused));
  }
  if (id.empty()) {
    id = fmt::format("{}#{}", host_, next_id_++);
  }
  json::value da, db;
  if (std::optional<TxnResult> refused = Mutate(*ea, *eb, mutate, &da, &db)) {
    return done(std::move(*refused));
  }
  std::vector<Write> batch;
  if (std::optional<TxnResult> refused = Writes(*ea, *eb, da, db, &batch)) {
    return done(std::move(*refused));
  }
  ea->in_txn = eb->in_txn = true;
  ++in_flight_;
  store_.Transact(
      id, std::move(batch),
      [this, alive = std::weak_ptr<bool>(alive_), a, b, da = std::move(da), db = std::move(db),
       done = std::move(done)](Status s, std::vector<WriteResult>) mutable {
        if (alive.lock()) {
          OnCommitted(a, b, da, db, s, done);
        }
      });
}

std::optional<TxnResult> ProfileTransactions::Check(net::SessionId a, net::SessionId b,
                                                    const ProfileEntry* ea,
                                                    const ProfileEntry* eb) const {
  const std::string& name = declaration_.name();
  if (a == b || (ea != nullptr && eb != nullptr && ea->key == eb->key)) {
    return TxnResult{TxnReason::kSameProfile,
                     fmt::format("sessions {} and {} share one {} profile: a transaction needs two",
                                 a, b, name)};
  }
  const bool closing = entries_.closing();
  for (auto [e, s] : {std::pair{ea, a}, std::pair{eb, b}}) {
    if (e == nullptr || e->state != ProfileState::kLoaded || closing) {
      return TxnResult{
          TxnReason::kProfileInactive,
          fmt::format("the {} profile of session {} is {}", name, s,
                      closing ? "closing"
                              : ProfileStateName(e == nullptr ? ProfileState::kNone : e->state))};
    }
    if (e->in_txn) {
      return TxnResult{
          TxnReason::kBusy,
          fmt::format("the {} profile of session {} is in another transaction", name, s)};
    }
  }
  return std::nullopt;
}

std::optional<TxnResult> ProfileTransactions::Mutate(const ProfileEntry& ea, const ProfileEntry& eb,
                                                     const Mutator& mutate, json::value* da,
                                                     json::value* db) const {
  std::string ta = json::serialize(ea.doc);
  std::string tb = json::serialize(eb.doc);
  Status m;
  try {
    m = mutate(ta, tb);
  } catch (const std::exception& ex) {
    m = Status::Internal(std::string("the mutator threw: ") + ex.what());
  }
  if (!m.ok()) {
    return TxnResult{
        m.code() == Status::Code::kRejected ? TxnReason::kAborted : TxnReason::kMutatorError,
        m.message()};
  }
  Result<json::value> va = ParseJson(ta);
  Result<json::value> vb = ParseJson(tb);
  for (auto [v, which] : {std::pair{&va, "A"}, std::pair{&vb, "B"}}) {
    if (!v->ok() || !(*v)->is_object()) {
      return TxnResult{TxnReason::kMutatorError,
                       fmt::format("the mutator left document {} {}", which,
                                   v->ok() ? "not a JSON object" : v->status().message())};
    }
  }
  *da = std::move(va).value();
  *db = std::move(vb).value();
  return std::nullopt;
}

std::optional<TxnResult> ProfileTransactions::Writes(const ProfileEntry& ea, const ProfileEntry& eb,
                                                     const json::value& da, const json::value& db,
                                                     std::vector<Write>* batch) {
  const ProfileSpec& spec = declaration_.spec();
  for (auto [e, v, reason] : {std::tuple{&ea, &da, TxnReason::kSaveAFailed},
                              std::tuple{&eb, &db, TxnReason::kSaveBFailed}}) {
    std::string text = json::serialize(*v);
    if (Status ok = spec.validate ? spec.validate(text) : Status::Ok(); !ok.ok()) {
      ++stats_.refused;
      return TxnResult{reason, fmt::format("profile \"{}\": validate refused the transaction's "
                                           "document: {}",
                                           e->key, ok.message())};
    }
    batch->push_back(Write{
        .key = e->key,
        .token = e->token,
        .data = std::move(text),
        .schema_version = spec.schema_version,
        .renew_until =
            WallNow() +
            std::chrono::duration_cast<std::chrono::milliseconds>(spec.lease_ttl).count(),
        .backup_every =
            std::chrono::duration_cast<std::chrono::milliseconds>(spec.backup_interval).count(),
        .mirror = spec.mirror});
  }
  return std::nullopt;
}

void ProfileTransactions::OnCommitted(net::SessionId a, net::SessionId b, json::value& da,
                                      json::value& db, const Status& s,
                                      Callback<void(TxnResult)>& done) {
  ProfileEntry* ea = entries_.Find(a);
  ProfileEntry* eb = entries_.Find(b);
  TxnResult result;
  if (s.ok()) {
    for (auto [e, doc] : {std::pair{ea, &da}, std::pair{eb, &db}}) {
      e->doc = std::move(*doc);
      e->saved_version = ++e->version;  // committed: clean
    }
    ++stats_.transactions;
    stats_.saves += 2;
  } else if (s.code() == Status::Code::kAlreadyExists) {
    result = {TxnReason::kDuplicateTransaction, s.message()};
  } else {
    const bool b_failed = s.message().find("profile \"" + eb->key + "\"") != std::string::npos;
    result = {b_failed ? TxnReason::kSaveBFailed : TxnReason::kSaveAFailed, s.message()};
    if (s.code() == Status::Code::kStale) {
      writer_.Lose(b_failed ? *eb : *ea, s);
    }
  }
  --in_flight_;
  End(*ea);
  End(*eb);
  done(std::move(result));
  if (in_flight_ == 0 && after_all_) {
    std::exchange(after_all_, nullptr)();
  }
}

void ProfileTransactions::End(ProfileEntry& e) {
  e.in_txn = false;
  if (std::exchange(e.leave_after_txn, false)) {
    final_save_(e.session);
  }
}

}  // namespace molt::kernel::store

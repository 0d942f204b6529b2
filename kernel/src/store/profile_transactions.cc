// SPDX-License-Identifier: Apache-2.0
// Profiles' two-profile transactions (docs/profiles.md, "Snapshots and transactions"): the
// mutator edits copies of two loaded documents; both are validated, then written in one database
// transaction that records the id (a replay is refused durably), and only once it committed do
// they replace the documents in memory. Meanwhile both profiles refuse writes, and their final
// saves, or the drain, wait for it (profiles.cc).
//
// These are member functions of Profiles defined in a file of their own, not a class of their
// own: a transaction works on the driver's per-profile state (profile_entry.h), validates with
// its spec, counts in its stats, loses a lease the way the driver does (Lose), and hands the
// final save it held back to the driver (FinalSave); the drain waits on its count. A separate
// class would reach all of it through a back-reference to Profiles: a seam in name only.
#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <exception>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel/src/store/profile_document.h"
#include "kernel/src/store/profile_entry.h"
#include "kernel/src/store/profiles.h"

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

void Profiles::Transact(std::string id, net::SessionId a, net::SessionId b, const Mutator& mutate,
                        Callback<void(TxnResult)> done) {
  auto refuse = [&done](TxnReason reason, std::string message) {
    done(TxnResult{reason, std::move(message)});
  };
  Entry* ea = Find(a);
  Entry* eb = Find(b);
  if (a == b || (ea != nullptr && eb != nullptr && ea->key == eb->key)) {
    return refuse(TxnReason::kSameProfile,
                  fmt::format("sessions {} and {} share one {} profile: a transaction needs two", a,
                              b, spec_.name));
  }
  for (auto [e, s] : {std::pair{ea, a}, std::pair{eb, b}}) {
    if (e == nullptr || e->state != ProfileState::kLoaded || draining_) {
      return refuse(
          TxnReason::kProfileInactive,
          fmt::format("the {} profile of session {} is {}", spec_.name, s,
                      draining_ ? "closing"
                                : ProfileStateName(e == nullptr ? ProfileState::kNone : e->state)));
    }
    if (e->in_txn) {
      return refuse(
          TxnReason::kBusy,
          fmt::format("the {} profile of session {} is in another transaction", spec_.name, s));
    }
  }
  if (id.empty()) {
    id = fmt::format("{}#{}", host_, next_txn_++);
  }
  std::string da = json::serialize(ea->doc);
  std::string db = json::serialize(eb->doc);
  Status m;
  try {
    m = mutate(da, db);
  } catch (const std::exception& ex) {
    m = Status::Internal(std::string("the mutator threw: ") + ex.what());
  }
  if (!m.ok()) {
    return refuse(
        m.code() == Status::Code::kRejected ? TxnReason::kAborted : TxnReason::kMutatorError,
        m.message());
  }
  Result<json::value> va = ParseJson(da);
  Result<json::value> vb = ParseJson(db);
  for (auto [v, which] : {std::pair{&va, "A"}, std::pair{&vb, "B"}}) {
    if (!v->ok() || !(*v)->is_object()) {
      return refuse(TxnReason::kMutatorError,
                    fmt::format("the mutator left document {} {}", which,
                                v->ok() ? "not a JSON object" : v->status().message()));
    }
  }
  std::vector<Write> batch;
  for (auto [e, v, reason] : {std::tuple{ea, &va, TxnReason::kSaveAFailed},
                              std::tuple{eb, &vb, TxnReason::kSaveBFailed}}) {
    std::string text = json::serialize(**v);
    if (Status ok = spec_.validate ? spec_.validate(text) : Status::Ok(); !ok.ok()) {
      ++stats_.refused;
      return refuse(reason, fmt::format("profile \"{}\": validate refused the transaction's "
                                        "document: {}",
                                        e->key, ok.message()));
    }
    batch.push_back(Write{
        .key = e->key,
        .token = e->token,
        .data = std::move(text),
        .schema_version = spec_.schema_version,
        .renew_until =
            WallNow() +
            std::chrono::duration_cast<std::chrono::milliseconds>(spec_.lease_ttl).count(),
        .backup_every =
            std::chrono::duration_cast<std::chrono::milliseconds>(spec_.backup_interval).count(),
        .mirror = spec_.mirror});
  }
  ea->in_txn = eb->in_txn = true;
  ++transactions_;
  store_.Transact(
      id, std::move(batch),
      [this, alive = std::weak_ptr<bool>(alive_), a, b, da = std::move(va).value(),
       db = std::move(vb).value(),
       done = std::move(done)](Status s, std::vector<WriteResult>) mutable {
        if (!alive.lock()) {
          return;
        }
        Entry* ea = Find(a);
        Entry* eb = Find(b);
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
          const bool b_failed =
              s.message().find("profile \"" + eb->key + "\"") != std::string::npos;
          result = {b_failed ? TxnReason::kSaveBFailed : TxnReason::kSaveAFailed, s.message()};
          if (s.code() == Status::Code::kStale) {
            Lose(b_failed ? *eb : *ea, s);
          }
        }
        --transactions_;
        EndTransaction(ea);
        EndTransaction(eb);
        done(std::move(result));
        if (transactions_ == 0 && after_transactions_) {
          std::exchange(after_transactions_, nullptr)();
        }
      });
}

void Profiles::EndTransaction(Entry* e) {
  e->in_txn = false;
  if (std::exchange(e->leave_after_txn, false)) {
    FinalSave(e->session);
  }
}

}  // namespace molt::kernel::store

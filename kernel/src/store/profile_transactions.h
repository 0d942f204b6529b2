// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_transactions.h
//
// ProfileTransactions: a profile store's two-profile transactions (docs/profiles.md, "Snapshots
// and transactions"). The mutator edits copies of two loaded documents; both are validated, then
// written in one database transaction that records the id (a replay is refused durably), and only
// once it committed do they replace the documents in memory. Meanwhile both profiles refuse
// writes (their entries say so); a session that ends meanwhile has its final save held back until
// the transaction ends, and the drain waits for every transaction (AfterAll).
//
//   transactions.Transact("trade-7", a, b, [](std::string& x, std::string& y) { ... },
//                         [](TxnResult r) { ... r.reason ... });
//
// Thread safety: the kernel thread; `done` runs on it, on a later step once the store answered.
#ifndef MOLT_KERNEL_STORE_PROFILE_TRANSACTIONS_H_
#define MOLT_KERNEL_STORE_PROFILE_TRANSACTIONS_H_

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/store/profile_declaration.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_store.h"
#include "kernel/src/store/profile_writer.h"

namespace molt::kernel::store {

// How a two-profile transaction ended (spec: Transactions.atomic's reasons).
enum class TxnReason {
  kOk,
  kAborted,               // the mutator declined (MOLT_ERR_REJECTED / Status::Rejected)
  kMutatorError,          // it failed otherwise, or returned what is not a JSON object
  kSaveAFailed,           // profile A's save was refused (validate, its lease, the disk)
  kSaveBFailed,           // profile B's
  kProfileInactive,       // one of them is not loaded
  kSameProfile,           // A and B are one profile
  kBusy,                  // one of them is in another transaction
  kDuplicateTransaction,  // the id was committed before: a replay
};
std::string_view TxnReasonName(TxnReason reason);
struct TxnResult {
  TxnReason reason = TxnReason::kOk;
  std::string message;  // "" when kOk
  bool ok() const { return reason == TxnReason::kOk; }
};

class ProfileTransactions {
 public:
  // Edits the two documents (JSON text) in place; an error declines (kRejected: aborted).
  using Mutator = std::function<Status(std::string& a, std::string& b)>;

  // `host` names this host in the default ids ("<host>#<n>"); `final_save` runs the final save
  // a transaction held back (ProfileFinalSaves::FinalSave).
  ProfileTransactions(ProfileStore& store, ProfileEntries& entries,
                      const ProfileDeclaration& declaration, ProfileWriter& writer,
                      ProfileStats& stats, std::string host,
                      Callback<void(net::SessionId)> final_save);
  ProfileTransactions(const ProfileTransactions&) = delete;
  ProfileTransactions& operator=(const ProfileTransactions&) = delete;

  // Changes the loaded profiles of sessions `a` and `b` atomically under `id` ("": one of this
  // host's); `done` hears the outcome, at once for a refusal, on a later step once the store
  // answered.
  void Transact(std::string id, net::SessionId a, net::SessionId b, const Mutator& mutate,
                Callback<void(TxnResult)> done);
  // Transactions are with the store.
  bool busy() const { return in_flight_ > 0; }
  // Runs `then` once the last transaction with the store ended. REQUIRES: busy().
  void AfterAll(Callback<void()> then) { after_all_ = std::move(then); }

 private:
  // Why `a` and `b` (entries `ea`, `eb`) cannot be transacted, or nullopt.
  std::optional<TxnResult> Check(net::SessionId a, net::SessionId b, const ProfileEntry* ea,
                                 const ProfileEntry* eb) const;
  // Runs the mutator on copies of the two documents: the new documents in `da` and `db`, or why
  // not.
  std::optional<TxnResult> Mutate(const ProfileEntry& ea, const ProfileEntry& eb,
                                  const Mutator& mutate, boost::json::value* da,
                                  boost::json::value* db) const;
  // The two validated writes, or the refusal of the first the gate refuses.
  std::optional<TxnResult> Writes(const ProfileEntry& ea, const ProfileEntry& eb,
                                  const boost::json::value& da, const boost::json::value& db,
                                  std::vector<Write>* batch);
  // The store answered transaction of `a` and `b` with `s`.
  void OnCommitted(net::SessionId a, net::SessionId b, boost::json::value& da,
                   boost::json::value& db, const Status& s, Callback<void(TxnResult)>& done);
  // A transaction on `e` ended: the final save it held back runs.
  void End(ProfileEntry& e);

  ProfileStore& store_;
  ProfileEntries& entries_;
  const ProfileDeclaration& declaration_;
  ProfileWriter& writer_;
  ProfileStats& stats_;
  const std::string host_;
  Callback<void(net::SessionId)> final_save_;
  std::size_t in_flight_ = 0;
  Callback<void()> after_all_;  // a drain that waits for them
  std::uint64_t next_id_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // completions after the end
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_TRANSACTIONS_H_

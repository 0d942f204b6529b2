// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/live/live_values.h
//
// LiveValues (spec: LiveConfig): values an operator tunes while the game runs. A plugin declares
// each with a typed default (the source-controlled truth) and, if it likes, a check; an operator
// overrides it (molt config set, the admin API), and the override is stored (live.db, through
// LiveStore on a thread of its own) before any plugin sees it. A key is "<plugin>.<name>".
//
//   LiveValues live(options, post_to_kernel, on_changed, wall_ms);
//   live.Open();                                  // the boot: overrides read, expired ones gone
//   live.Declare(instance, "shop", "price", "10", {});
//   live.Get(instance, "shop", "price");                // "10", or the override
//   live.Set("shop.price", "12", "ada", [](Result<SetOutcome> r) { ... });
//
// A value whose JSON type differs from its default's is refused with a reason; so is one the
// plugin's check refuses (fail-closed: any error, a throw included). `changed(key, value)` hears
// only real changes of the value served (an unset serves the default again). Overrides survive
// swaps and restarts; they expire after `ttl` with no server online (the store's stamp,
// refreshed every `stamp_every` while one runs).
//
// Thread safety: the kernel thread, but for the store's thread inside.
#ifndef MOLT_KERNEL_LIVE_LIVE_VALUES_H_
#define MOLT_KERNEL_LIVE_LIVE_VALUES_H_

#include <molt/kernel/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/serial_thread.h"
#include "kernel/src/live/live_store.h"
#include "kernel/src/store/pg_listener.h"

namespace molt::kernel::live {

struct LiveOptions {
  // <data>/live.db, or the fleet's PostgreSQL (a URL): shared by its servers, each hearing the
  // others' changes by NOTIFY and every `poll`.
  std::string path;
  std::chrono::milliseconds poll = std::chrono::seconds(60);
  std::chrono::milliseconds ttl = std::chrono::hours(24 * 7);  // overrides outlive no server longer
  std::chrono::milliseconds stamp_every = std::chrono::hours(1);
};

// A plugin's check of an operator's value: Ok takes it; an error refuses it with its text.
using LiveCheck = std::function<Status(std::string_view key, std::string_view value_json)>;

// What a set or an unset did.
struct SetOutcome {
  std::string key;
  std::string value;  // the value served now (JSON)
  bool changed = false;
  LiveChange change;
};

// One key as the admin API lists it.
struct LiveView {
  std::string key;
  bool declared = false;      // a running plugin declares it
  std::string default_value;  // its default (JSON), when declared
  std::string value;          // the value served (JSON), when declared
  std::optional<StoredValue> override_value;
  bool override_ignored = false;  // stored, but of another type than the default
};

struct LiveStats {
  std::size_t declared = 0;
  std::size_t overrides = 0;
  std::uint64_t sets = 0;
  std::uint64_t refused = 0;
  std::uint64_t expired = 0;
  bool open = false;
};

class LiveValues {
 public:
  using Post = std::function<void(std::function<void()>)>;
  using Changed = std::function<void(const std::string& key, const std::string& value)>;

  // `post` runs a task on the kernel thread; `changed` (the kernel thread) hears real changes;
  // `wall_ms` is the time stored with each change (ms since the epoch).
  LiveValues(LiveOptions options, Post post, Changed changed,
             std::function<std::int64_t()> wall_ms);
  // Stops the store's thread: a set still in it is never answered.
  ~LiveValues();
  LiveValues(const LiveValues&) = delete;
  LiveValues& operator=(const LiveValues&) = delete;

  // The boot, before any plugin: opens the store, expires idle overrides, reads the rest and
  // starts the store's thread. On an error the defaults are served and every set is refused
  // with it; the server still runs.
  Status Open();

  // `owner` (a plugin instance) declares "<plugin>.<name>" with `default_json`. An override of
  // another type than the default is ignored, with one warning. The newest declaration of a key
  // is the one a set is checked against.
  Status Declare(const void* owner, std::string_view plugin, std::string_view name,
                 std::string_view default_json, LiveCheck check);
  // Everything `owner` declared goes (its instance stopped; the overrides stay).
  void Forget(const void* owner);
  // The value `owner` (of `plugin`) is served for its `name`: the override, else its default.
  Result<std::string> Get(const void* owner, std::string_view plugin, std::string_view name) const;

  // Sets `key` to `value` (JSON), or unsets it (nullopt), by `by`. A set is checked first (the
  // key declared, the type, the plugin's check); then stored; then served, and `changed` heard
  // when the value served changed. `done` runs once, on the kernel thread.
  void Set(std::string key, std::optional<std::string> value, std::string by,
           std::function<void(Result<SetOutcome>)> done);
  // The history, newest first (`key` "": every key); `done` on the kernel thread.
  void History(std::string key, std::size_t limit,
               std::function<void(Result<std::vector<LiveChange>>)> done);
  // Every declared or overridden key, by key.
  std::vector<LiveView> List() const;
  LiveStats stats() const;

 private:
  struct Declaration {
    const void* owner;
    std::string default_value;  // canonical JSON
    LiveCheck check;
    std::string served;  // the override when its type matches the default, else the default
  };
  // The newest declaration of `key`, or null.
  const Declaration* Newest(const std::string& key) const;
  // What `d` serves given the override of `key` (a read serves d.served, decided once here).
  std::string Served(const std::string& key, const Declaration& d) const;
  void Apply(const LiveChange& change, std::function<void(Result<SetOutcome>)> done);
  // Reads the changes other servers of a shared store made since the last read (the store's
  // thread) and applies them on the kernel thread.
  void CatchUp();
  void Refresh();  // the online stamp, then again in stamp_every

  const LiveOptions options_;
  const Post post_;
  const Changed changed_;
  const std::function<std::int64_t()> wall_ms_;
  std::map<std::string, std::vector<Declaration>> declared_;  // key -> oldest first
  std::map<std::string, StoredValue> overrides_;
  Status open_ = Status::FailedPrecondition("live values are not open yet");
  LiveStats stats_;
  std::unique_ptr<LiveStore> store_;  // used on thread_ only, once Open() returned
  std::int64_t seen_seq_ = 0;         // the newest change CatchUp read (thread_)
  SerialThread thread_;
  std::unique_ptr<store::PgListener> listener_;  // a shared store's notifications
  std::shared_ptr<LiveValues*> alive_ = std::make_shared<LiveValues*>(this);
};

// Whether `a` and `b` (JSON) are of one type: both true/false, numbers (a whole-number default
// takes whole numbers only), strings, arrays or objects. "" when so, else why not.
std::string TypeMismatch(std::string_view value_json, std::string_view default_json);

}  // namespace molt::kernel::live

#endif  // MOLT_KERNEL_LIVE_LIVE_VALUES_H_

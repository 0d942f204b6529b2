// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/fleet/fleet.h
//
// Fleet: this server among the others (spec §38, heartbeats; docs/fleet.md, "Servers"). Every
// heartbeat it reports itself (its id, branch, build, applied deploy, sessions, TPS, health and
// state) into molt_servers on the fleet's PostgreSQL, and it lists the fleet for `molt servers`:
// every server that ever reported, a server whose last heartbeat is older than three of its
// intervals shown as lost, never silently dropped. Without a fleet database (profiles in SQLite)
// the fleet is this server alone, from its last report.
//
//   Fleet fleet(url, std::chrono::seconds(2));
//   MOLT_RETURN_IF_ERROR(fleet.Open());               // the table, created by the first server
//   fleet.Beat(report);                               // the kernel thread, every interval
//   fleet.List("prod", [](Result<std::vector<ServerReport>> servers) { ... });
//
// The database work runs on a thread of its own (the kernel thread never waits for it); a
// heartbeat that cannot be written is logged once per reason and tried again at the next.
//
// Thread safety: every call from any thread; `done` runs on the fleet's thread.
#ifndef MOLT_KERNEL_FLEET_FLEET_H_
#define MOLT_KERNEL_FLEET_FLEET_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/core/callback.h"
#include "kernel/src/core/clock.h"
#include "kernel/src/core/serial_thread.h"

namespace molt::kernel::store {
class PgConnection;
class PgListener;
}  // namespace molt::kernel::store

namespace molt::kernel::fleet {

// One server as its heartbeat reports it.
struct ServerReport {
  std::string id;                 // --server-id, server.id (docs/fleet.md)
  std::string branch;             // the branch it runs (deploy.branch)
  std::string build;              // the build id of the generation serving ("": none yet)
  std::uint64_t applied_seq = 0;  // the newest deployment it applied
  std::uint64_t sessions = 0;
  double tps = 0;                 // ticks per second over the last diagnostics window
  std::string health = "ok";      // "ok", or what is wrong ("starting", "stuck callbacks: 1")
  std::string state = "live";     // "live", "draining" (closing); "lost" when listed late
  std::string address;            // where its clients connect (host:port)
  std::string websocket_address;  // where its WebSocket clients do ("": it takes none)
  std::int64_t started_ms = 0;
  std::int64_t interval_ms = 0;   // its heartbeat interval
  std::int64_t last_seen_ms = 0;  // its last heartbeat (wall clock)
  // The owner its profile leases name (store::HostId(): host:pid:start): what another server
  // takes over once this one is lost (LostLeaseOwners). "": a server of an older build.
  std::string lease_owner;
};

// The lease owners of the servers in `fleet` that are lost (no heartbeat for three intervals),
// `self` (this server's id) left out: their leases may be taken over at once, since the leases are
// fenced (a late write of a server that was only cut off is refused by its lease token).
std::set<std::string> LostLeaseOwners(const std::vector<ServerReport>& fleet,
                                      std::string_view self);

class Fleet {
 public:
  // `url`: the fleet's PostgreSQL (a libpq URL); "": none, this server alone.
  Fleet(std::string url, Duration interval);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Starts the fleet's thread; on PostgreSQL, connects and creates molt_servers. An error names
  // the database and the fix.
  Status Open();
  // Records this server's report (stamped now) and writes it as its heartbeat.
  void Beat(ServerReport report);
  // The fleet, on `branch` ("": every branch), ordered by id; `done` on the fleet's thread.
  void List(std::string branch, Callback<void(Result<std::vector<ServerReport>>)> done);
  // Asks server `id` to drain (`molt drain ID` through any server; docs/fleet.md): a row in
  // molt_drains and a NOTIFY molt_drain. That server hears it at once, or at its next poll (a
  // heartbeat interval). FailedPrecondition without a fleet database.
  void RequestDrain(std::string id, double deadline_seconds, Callback<void(Status)> done);
  // Hears the drains asked of this server, `id`: `drain(deadline_seconds)` on the fleet's
  // thread, once per request. A request older than this call (asked of a process that had this
  // id before) is dropped with a warning. Nothing without a fleet database.
  void WatchDrains(std::string id, std::function<void(double deadline_seconds)> drain);
  Duration interval() const { return interval_; }
  bool shared() const { return !url_.empty(); }

  // A report's state as a reader sees it at `now_ms`: "lost" when its heartbeat is older than
  // three of its intervals, else the state it reported.
  static std::string StateAt(const ServerReport& r, std::int64_t now_ms);

 private:
  void Write(const ServerReport& report);  // the fleet's thread

  const std::string url_;
  const Duration interval_;
  std::unique_ptr<store::PgConnection> db_;    // null: no fleet database
  std::unique_ptr<store::PgListener> drains_;  // WatchDrains
  SerialThread thread_;
  std::mutex mu_;
  ServerReport last_;       // this server's newest report; guarded by mu_
  std::string last_error_;  // the last heartbeat failure logged (the fleet's thread)
};

}  // namespace molt::kernel::fleet

#endif  // MOLT_KERNEL_FLEET_FLEET_H_

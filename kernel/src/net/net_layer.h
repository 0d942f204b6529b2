// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/net_layer.h
//
// NetLayer: the server's network as a host layer (abi/plugin_instance.h, HostLayer), what its
// slots (net_api.cc) reach through AbiShared::Layer<NetLayer>(). It releases what a stopping
// plugin instance holds in the network (session bindings, channels, replicas) and carries the
// network's side of a swap: a dormant instance's channel declarations wait here (staged) until
// its generation serves; between BeginHandoff and EndHandoff released channels, replicas, zones
// and grids are kept for the next generation to adopt (channels, zones and grids by name,
// replicas by replica_claim; a replica's interest predicate is frozen meanwhile), and what nobody
// adopted is retired.
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_NET_LAYER_H_
#define MOLT_KERNEL_NET_NET_LAYER_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/abi/staged_declarations.h"
#include "kernel/src/net/channel.h"
#include "kernel/src/net/grids.h"
#include "kernel/src/net/replica.h"
#include "kernel/src/net/zones.h"

namespace molt::kernel::net {
class Network;
}  // namespace molt::kernel::net

namespace molt::kernel::abi {

class NetLayer final : public HostLayer {
 public:
  // `network` may be null: the slots then answer MOLT_ERR_UNSUPPORTED.
  explicit NetLayer(net::Network* network) : network_(network) {}
  net::Network* network() const { return network_; }

  void ReleaseOwner(const void* owner) override;
  void Release(const void* owner, molt_handle_t handle, std::uint8_t kind,
               std::uint32_t id) override;
  void BeginHandoff() override;
  Status Serve(const void* owner) override;
  std::vector<std::string> EndHandoff() override;
  void SetServing(bool serving) override;

  // A dormant instance's declaration: checked now, declared when it serves.
  Result<net::ChannelId> Stage(const void* owner, net::ChannelSpec spec);
  // replica_claim: `p` takes over the replica its predecessor held as `predecessor`; returns
  // p's handle of it.
  Result<molt_replica_t> Claim(PluginInstance& p, molt_replica_t predecessor);
  // zone_declare / grid_declare: `p`'s new zone or grid, or the one of that name its predecessor
  // released in this swap (members, bindings and positions kept); returns p's handle of it.
  Result<molt_zone_t> DeclareZone(PluginInstance& p, std::string name);
  Result<molt_grid_t> DeclareGrid(PluginInstance& p, net::GridSpec spec);

 private:
  // Seconds a client should wait before retrying a request the swap refused.
  static constexpr double kRetryAfterSwap = 0.05;
  struct Staged {
    net::ChannelId id;
    net::ChannelSpec spec;
  };
  struct OrphanReplica {
    net::ReplicaId id;
    std::string plugin;  // who held it: only the same plugin's next instance may claim it
  };

  net::Network* network_;
  StagedDeclarations<Staged> staged_;
  std::map<molt_replica_t, OrphanReplica> orphan_replicas_;  // by the old handle, during a swap
  std::map<molt_replica_t, molt_replica_t> claimed_;  // a claimer's handle -> the handle it claimed
  // Zones and grids released during a swap, by (plugin, name), for the next generation to find.
  std::map<std::pair<std::string, std::string>, net::ZoneId> orphan_zones_;
  std::map<std::pair<std::string, std::string>, net::GridId> orphan_grids_;
  bool handoff_ = false;
  std::uint64_t table_before_ = 0;  // the channel table's hash when the handoff began
};

}  // namespace molt::kernel::abi

#endif  // MOLT_KERNEL_NET_NET_LAYER_H_

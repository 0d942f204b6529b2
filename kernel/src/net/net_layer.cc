// SPDX-License-Identifier: Apache-2.0
// NetLayer: releases, staged declarations and the network's side of a swap (net_layer.h).
#include "kernel/src/net/net_layer.h"

#include "kernel/src/abi/bridge.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::abi {

void NetLayer::ReleaseOwner(const void* owner) {
  staged_.Drop(owner);
  if (network_ != nullptr) {
    network_->sessions().ReleaseOwner(owner);
  }
}

void NetLayer::Release(const void* owner, molt_handle_t handle, std::uint8_t kind,
                       std::uint32_t id) {
  if (network_ == nullptr) {
    return;
  }
  if (kind == static_cast<std::uint8_t>(Kind::kProfile)) {
    return;  // the profile layer's (store/profile_layer.h)
  }
  const std::string& plugin = static_cast<const PluginInstance*>(owner)->name();
  if (kind == static_cast<std::uint8_t>(Kind::kReplica)) {
    if (handoff_) {  // kept for the next generation to claim by its first handle
      auto alias = claimed_.find(handle);
      const molt_handle_t key = alias != claimed_.end() ? alias->second : handle;
      orphan_replicas_[key] = {id, plugin};
      (void)network_->replicas().FreezeInterest(id);  // its predicate is the old library's
    } else {
      (void)network_->replicas().Destroy(id);
    }
    return;
  }
  if (kind == static_cast<std::uint8_t>(Kind::kZone)) {
    if (handoff_) {
      orphan_zones_[{plugin, network_->zones().NameOf(id)}] = id;
    } else {
      (void)network_->zones().Destroy(id);
    }
    return;
  }
  if (kind == static_cast<std::uint8_t>(Kind::kGrid)) {
    if (handoff_) {
      orphan_grids_[{plugin, network_->grids().NameOf(id)}] = id;
    } else {
      (void)network_->grids().Destroy(id);
    }
    return;
  }
  if (kind != static_cast<std::uint8_t>(Kind::kChannel)) {
    return;  // another layer's (a worker job)
  }
  const auto channel = static_cast<net::ChannelId>(id);
  staged_.DropIf(owner, [channel](const Staged& s) { return s.id == channel; });
  net::Channel* ch = network_->channels().Find(channel);
  if (ch == nullptr || ch->owner() != owner) {
    return;  // staged only, or already adopted by the next generation
  }
  // The handlers that took its pending requests are going away: answer them now, retryable.
  network_->RefusePending(channel, Status::Code::kCancelled, kRetryAfterSwap);
  if (handoff_) {
    (void)network_->channels().Orphan(channel);
  } else {
    (void)network_->channels().Remove(channel);
  }
}

Result<net::ChannelId> NetLayer::Stage(const void* owner, net::ChannelSpec spec) {
  net::ChannelRegistry& channels = network_->channels();
  MOLT_RETURN_IF_ERROR(channels.Check(spec));
  MOLT_ASSIGN_OR_RETURN(const net::ChannelId id, channels.Reserve(spec.name));
  const net::Channel* live = channels.Find(id);
  const bool taken = (live != nullptr && live->owner() == nullptr)  // the host's: never swapped
                     || staged_.Any([id](const Staged& st) { return st.id == id; });
  if (taken) {
    return Status::AlreadyExists("channel \"" + spec.name +
                                 "\" is already declared; remove it first or pick another name");
  }
  staged_.Add(owner, {id, std::move(spec)});
  return id;
}

void NetLayer::BeginHandoff() {
  handoff_ = true;
  table_before_ = network_->channels().ProtocolHash();
}

void NetLayer::SetServing(bool serving) { network_->SetServing(serving); }

Status NetLayer::Serve(const void* owner) {
  for (Staged& st : staged_.Take(owner)) {
    const std::string name = st.spec.name;
    Result<net::ChannelId> id = network_->channels().Declare(std::move(st.spec), owner);
    if (!id.ok()) {  // the swap fails: a generation never serves without a channel it declared
      return Status(id.status().code(), "plugin \"" +
                                            static_cast<const PluginInstance*>(owner)->label() +
                                            "\": channel \"" + name +
                                            "\" could not be declared: " + id.status().message());
    }
  }
  return Status::Ok();
}

Result<molt_replica_t> NetLayer::Claim(PluginInstance& p, molt_replica_t predecessor) {
  auto it = orphan_replicas_.find(predecessor);
  if (it == orphan_replicas_.end() || it->second.plugin != p.name()) {
    return Status::NotFound("replica " + std::to_string(predecessor) +
                            " was not handed over to plugin \"" + p.label() +
                            "\": claim, in import_state, a handle its previous instance held "
                            "and exported");
  }
  const net::ReplicaId id = it->second.id;
  orphan_replicas_.erase(it);
  MOLT_RETURN_IF_ERROR(network_->replicas().Adopt(id, &p));
  PluginInstance::Resource r{Kind::kReplica, {}, 0, false, nullptr, nullptr, nullptr};
  r.layer_id = id;
  const molt_replica_t handle = p.Own(std::move(r));
  // Should this claimer fail in the same swap, the build restored after it claims the replica
  // by the handle its own state names: the first one.
  claimed_[handle] = predecessor;
  return handle;
}

Result<molt_zone_t> NetLayer::DeclareZone(PluginInstance& p, std::string name) {
  net::Zones& zones = network_->zones();
  net::ZoneId id = 0;
  if (auto it = orphan_zones_.find({p.name(), name}); it != orphan_zones_.end()) {
    id = it->second;
    orphan_zones_.erase(it);
    MOLT_RETURN_IF_ERROR(zones.Adopt(id, &p));
  } else {
    if (zones.Named(&p, name) != 0) {
      return Status::AlreadyExists("zone \"" + name + "\" is already declared by plugin \"" +
                                   p.name() + "\"");
    }
    MOLT_ASSIGN_OR_RETURN(id, zones.Declare(std::move(name), &p));
  }
  PluginInstance::Resource r{Kind::kZone, {}, 0, false, nullptr, nullptr, nullptr};
  r.layer_id = id;
  return p.Own(std::move(r));
}

Result<molt_grid_t> NetLayer::DeclareGrid(PluginInstance& p, net::GridSpec spec) {
  net::Grids& grids = network_->grids();
  net::GridId id = 0;
  if (auto it = orphan_grids_.find({p.name(), spec.name}); it != orphan_grids_.end()) {
    id = it->second;
    orphan_grids_.erase(it);
    MOLT_RETURN_IF_ERROR(grids.Adopt(id, &p));
  } else {
    if (grids.Named(&p, spec.name) != 0) {
      return Status::AlreadyExists("grid \"" + spec.name + "\" is already declared by plugin \"" +
                                   p.name() + "\"");
    }
    MOLT_ASSIGN_OR_RETURN(id, grids.Declare(std::move(spec), &p));
  }
  PluginInstance::Resource r{Kind::kGrid, {}, 0, false, nullptr, nullptr, nullptr};
  r.layer_id = id;
  return p.Own(std::move(r));
}

std::vector<std::string> NetLayer::EndHandoff() {
  handoff_ = false;
  std::vector<std::string> retired;
  for (const auto& [key, id] : orphan_zones_) {
    retired.push_back("zone \"" + key.second + "\" of " + key.first);
    (void)network_->zones().Destroy(id);
  }
  orphan_zones_.clear();
  for (const auto& [key, id] : orphan_grids_) {
    retired.push_back("grid \"" + key.second + "\" of " + key.first);
    (void)network_->grids().Destroy(id);
  }
  orphan_grids_.clear();
  for (const auto& [handle, orphan] : orphan_replicas_) {
    retired.push_back("replica \"" + network_->replicas().NameOf(orphan.id) + "\" of " +
                      orphan.plugin);
    (void)network_->replicas().Destroy(orphan.id);
  }
  orphan_replicas_.clear();
  claimed_.clear();
  network_->replicas().ThawInterest();  // a claimed replica whose new instance set none
  for (std::string& name : network_->channels().RemoveOrphans()) {
    retired.push_back("channel \"" + name + "\"");
  }
  // Connected clients learn a table the swap changed (channels added or retired) at once.
  if (network_->channels().ProtocolHash() != table_before_) {
    network_->AnnounceChannels();
  }
  return retired;
}

}  // namespace molt::kernel::abi

// SPDX-License-Identifier: Apache-2.0
// The host API's networking slots (ABI 1.1 channels and sessions, ABI 1.2 replicas): the server
// layer's part of the table, installed by AttachNetwork(). Hosts without a network (the client
// library) never link this file: their tables keep the core's refusals (MOLT_ERR_UNSUPPORTED).
#include "kernel/src/net/net_api.h"

#include <cmath>
#include <map>
#include <string>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/struct_size.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/net/net_layer.h"
#include "kernel/src/net/network.h"

namespace molt::kernel::abi {
namespace {

// --- Networking (ABI 1.1) ---

static_assert(static_cast<int>(net::ChannelKind::kEvent) == MOLT_CHANNEL_EVENT &&
                  static_cast<int>(net::ChannelKind::kUnreliable) == MOLT_CHANNEL_UNRELIABLE &&
                  static_cast<int>(net::ChannelKind::kPredicted) == MOLT_CHANNEL_PREDICTED_INTENT &&
                  static_cast<int>(net::UnreliablePriority::kHigh) == MOLT_UNRELIABLE_HIGH &&
                  net::kMaxUnreliablePayload == MOLT_UNRELIABLE_MAX_PAYLOAD &&
                  static_cast<int>(net::FieldType::kString) == MOLT_FIELD_STRING &&
                  static_cast<int>(net::FieldType::kFloat) == MOLT_FIELD_FLOAT &&
                  static_cast<int>(net::ExitReason::kClientClosed) == MOLT_EXIT_CLIENT_CLOSED &&
                  static_cast<int>(net::ExitReason::kOffender) == MOLT_EXIT_OFFENDER &&
                  static_cast<int>(net::ExitReason::kTransportError) == MOLT_EXIT_TRANSPORT_ERROR,
              "the kernel's network enums are the ABI's numbers");

Result<net::Network*> NetworkOf(PluginInstance& p) {
  // The networking slots are only in tables whose layer AttachNetwork installed.
  if (net::Network* n = p.shared().Layer<NetLayer>()->network()) {
    return n;
  }
  return Status::Unsupported("this host has no network (channels and sessions are server-side)");
}

Result<net::FieldRule> ToRule(const molt_field_rule& r, std::size_t index) {
  const std::string where = "rule " + std::to_string(index);
  if (r.type > MOLT_FIELD_STRING) {
    return Status::InvalidArgument(where + ": type " + std::to_string(r.type) +
                                   " is not a MOLT_FIELD_* value");
  }
  const auto type = static_cast<net::FieldType>(r.type);
  std::string name = r.name != nullptr ? r.name : "field " + std::to_string(r.field);
  switch (r.rule) {
    case MOLT_RULE_RANGE:
      return net::FieldRule::Range(r.field, std::move(name), type, r.min, r.max);
    case MOLT_RULE_ONE_OF:
      if (r.one_of == nullptr || r.one_of_count == 0) {
        return Status::InvalidArgument(where + ": MOLT_RULE_ONE_OF needs one_of values");
      }
      return net::FieldRule::OneOf(r.field, std::move(name), type,
                                   std::vector<std::int64_t>(r.one_of, r.one_of + r.one_of_count));
    case MOLT_RULE_MAX_LENGTH:
      if (r.type != MOLT_FIELD_STRING) {
        return Status::InvalidArgument(where +
                                       ": MOLT_RULE_MAX_LENGTH applies to MOLT_FIELD_STRING");
      }
      return net::FieldRule::MaxLength(r.field, std::move(name), r.max_length);
  }
  return Status::InvalidArgument(where + ": rule " + std::to_string(r.rule) +
                                 " is not a MOLT_RULE_* value");
}

// `in` is the plugin's spec as a current struct (ReadSized).
Result<net::ChannelSpec> ToChannelSpec(PluginInstance& p, net::Network& network,
                                       const molt_channel_spec& in) {
  MOLT_RETURN_IF_ERROR(Required({{in.name, "spec->name"}, {in.schema, "spec->schema"}}));
  if (in.kind < MOLT_CHANNEL_INTENT || in.kind > MOLT_CHANNEL_PREDICTED_INTENT) {
    return Status::InvalidArgument(
        "spec->kind " + std::to_string(in.kind) +
        " is not MOLT_CHANNEL_INTENT, _REQUEST, _EVENT, _UNRELIABLE or _PREDICTED_INTENT");
  }
  if (in.unreliable_priority != MOLT_UNRELIABLE_LOW &&
      in.unreliable_priority != MOLT_UNRELIABLE_HIGH) {
    return Status::InvalidArgument("spec->unreliable_priority " +
                                   std::to_string(in.unreliable_priority) +
                                   " is not MOLT_UNRELIABLE_LOW or MOLT_UNRELIABLE_HIGH");
  }
  MOLT_RETURN_IF_ERROR(RequiredIfAny(in.rules, in.rule_count, "spec->rules", "rule_count"));
  MOLT_RETURN_IF_ERROR(
      RequiredIfAny(in.reject_payload, in.reject_size, "spec->reject_payload", "reject_size"));
  net::ChannelSpec out;
  out.name = in.name;
  out.kind = static_cast<net::ChannelKind>(in.kind);
  out.schema = in.schema;
  for (std::size_t i = 0; i < in.rule_count; ++i) {
    MOLT_ASSIGN_OR_RETURN(net::FieldRule r, ToRule(in.rules[i], i));
    out.rules.push_back(std::move(r));
  }
  out.rate = in.rate;
  out.burst = in.burst;
  out.open = in.open != 0;
  out.timeout_seconds = in.timeout_seconds;
  out.priority = static_cast<net::UnreliablePriority>(in.unreliable_priority);
  out.latest_wins = in.latest_wins != 0;
  const auto* reject = static_cast<const std::uint8_t*>(in.reject_payload);
  out.reject_payload.assign(reject, reject + (reject != nullptr ? in.reject_size : 0));
  PluginInstance* inst = &p;
  void* ud = in.user_data;
  if (molt_verify_fn verify = in.verify) {
    out.verify = [verify, ud](std::span<const std::uint8_t> payload) {
      return verify(ud, payload.data(), payload.size()) != 0;
    };
  }
  if (molt_intent_fn fn = in.on_intent) {
    const bool predicted = in.kind == MOLT_CHANNEL_PREDICTED_INTENT;
    out.on_intent = [inst, fn, ud, predicted](net::Session& s, std::span<Value> args) {
      const molt_status_t st = CallPlugin(*inst, [&] {
        return fn(ud, s.id(), static_cast<const molt_value*>(static_cast<void*>(args.data())),
                  args.size());
      });
      if (st == MOLT_ERR_REJECTED && predicted) {  // a game rule refused it: not an error
        throw net::HandlerRefused{inst->last_error()[0] != 0 ? inst->last_error() : "refused"};
      }
      if (st != MOLT_OK) {
        inst->CountCallbackError();
        throw std::runtime_error("plugin \"" + inst->label() + "\": " + inst->CallbackError(st));
      }
    };
  }
  if (molt_request_fn fn = in.on_request) {
    net::Network* n = &network;
    out.on_request = [inst, fn, ud, n](net::Session& s, std::span<Value> args,
                                       net::RequestToken request) {
      const molt_status_t st = CallPlugin(*inst, [&] {
        return fn(ud, s.id(), static_cast<const molt_value*>(static_cast<void*>(args.data())),
                  args.size(), request);
      });
      if (st != MOLT_OK) {
        inst->ReportCallbackError("request handler of channel", st);
        (void)n->Reply(request, AbiCode(st), {});  // STALE when the handler had answered
      }
    };
  }
  return out;
}

molt_status_t ChannelDeclare(molt_context_t* ctx, const molt_channel_spec* given,
                             molt_cleanup_fn release, molt_channel_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{given, "spec"}, {out, "out_channel"}}));
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(molt_channel_spec spec, ReadSized(*given));
    MOLT_ASSIGN_OR_RETURN(net::ChannelSpec cs, ToChannelSpec(p, *network, spec));
    MOLT_ASSIGN_OR_RETURN(net::ChannelId id,
                          p.dormant() ? p.shared().Layer<NetLayer>()->Stage(&p, std::move(cs))
                                      : network->channels().Declare(std::move(cs), &p));
    PluginInstance::Resource r{Kind::kChannel, {}, 0, false, nullptr, release, spec.user_data};
    r.layer_id = id;
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t ChannelRemove(molt_context_t* ctx, molt_channel_t channel) noexcept {
  return Guard(
      ctx, [&](PluginInstance& p) { return ReleaseOwned(p, channel, Kind::kChannel, "channel"); });
}

molt_status_t EventSend(molt_context_t* ctx, molt_channel_t channel, const molt_session_t* sessions,
                        std::size_t count, const void* data, std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, channel, Kind::kChannel, "channel"));
    if (p.dormant()) {
      return Status::FailedPrecondition("plugin \"" + p.label() +
                                        "\" is mounted but does not serve yet: send events from "
                                        "start() on");
    }
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    if (sessions == nullptr) {
      if (count > 0) {
        return Status::InvalidArgument("sessions is NULL with count > 0 (NULL and 0: everyone)");
      }
      return network->Broadcast(static_cast<net::ChannelId>(r->layer_id), payload);
    }
    return network->SendList(static_cast<net::ChannelId>(r->layer_id), std::span(sessions, count),
                             payload);
  });
}

molt_status_t RequestReply(molt_context_t* ctx, molt_request_t request, molt_status_t status,
                           const void* data, std::size_t size) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    return network->Reply(request, status == MOLT_OK ? Status::Code::kOk : AbiCode(status),
                          payload);
  });
}

molt_status_t SessionOn(molt_context_t* ctx, molt_session_fn fn, void* user_data,
                        molt_cleanup_fn release, molt_subscription_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    if (Status s = Required({{reinterpret_cast<const void*>(fn), "fn"}, {out, "out_subscription"}});
        !s.ok()) {
      return s;
    }
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    PluginInstance* inst = &p;
    PluginInstance::Resource r{Kind::kSubscription, {}, 0, false, nullptr, release, user_data};
    auto call = [inst, fn, user_data](net::SessionId id) {
      CallPlugin(*inst, [&] {
        fn(user_data, id);
        return MOLT_OK;
      });
    };
    r.connection = network->sessions().OnSession(
        [inst, call](net::Session& s) {
          if (!inst->dormant()) {
            call(s.id());
          }
        },
        &p);
    const molt_handle_t h = p.Own(std::move(r));
    if (p.dormant()) {
      // Its generation serves later: then it sees every session live at that moment, once.
      p.WhenServing([inst, call, h, n = network] {
        for (net::SessionId id : n->sessions().ActiveIds()) {
          if (inst->Find(h) == nullptr) {
            return;  // unsubscribed by a handler meanwhile
          }
          call(id);
        }
      });
    }
    *out = h;
    return Status::Ok();
  });
}

// The live or ending session `id`, for the session_* slots.
Result<net::Session*> FindSession(PluginInstance& p, molt_session_t id) {
  MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
  if (net::Session* s = network->sessions().Find(id)) {
    return s;
  }
  return Status::NotFound("session " + std::to_string(id) +
                          " is not live (it left, or never existed)");
}

molt_status_t SessionBind(molt_context_t* ctx, molt_session_t session, std::int32_t last,
                          molt_cleanup_fn fn, void* user_data) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(fn), "fn"));
    MOLT_ASSIGN_OR_RETURN(net::Session * s, FindSession(p, session));
    PluginInstance* inst = &p;
    auto cleanup = [inst, fn, user_data] {
      CallPlugin(*inst, [&] {
        fn(user_data);
        return MOLT_OK;
      });
    };
    if (last != 0) {
      s->BindLast(std::move(cleanup), &p);
    } else {
      s->Bind(std::move(cleanup), &p);
    }
    return Status::Ok();
  });
}

molt_status_t SessionBindEnd(molt_context_t* ctx, molt_session_t session, std::int32_t last,
                             molt_session_end_fn on_end, void* user_data,
                             molt_cleanup_fn release) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(on_end), "on_end"));
    MOLT_ASSIGN_OR_RETURN(net::Session * s, FindSession(p, session));
    PluginInstance* inst = &p;
    net::Session* found = s;
    // The session outlives its cleanups (session.h), so the reason is read when they run.
    auto end = [inst, on_end, user_data, found] {
      const std::int32_t reason =
          found->exit_reason() ? static_cast<std::int32_t>(*found->exit_reason()) : MOLT_EXIT_NONE;
      CallPlugin(*inst, [&] {
        on_end(user_data, found->id(), reason);
        return MOLT_OK;
      });
    };
    // Always a release, even with none to call: a binding without one runs its cleanup when its
    // owner lets go (session.h), and on_end is leave logic. Released is not left.
    Callback<void()> let_go = [inst, release, user_data] {
      if (release != nullptr) {
        inst->RunRelease(release, user_data);
      }
    };
    if (last != 0) {
      found->BindLast(std::move(end), &p, std::move(let_go));
    } else {
      found->Bind(std::move(end), &p, std::move(let_go));
    }
    return Status::Ok();
  });
}

static_assert(static_cast<int>(net::LinkTier::kGood) == MOLT_LINK_GOOD &&
              static_cast<int>(net::LinkTier::kStrained) == MOLT_LINK_STRAINED &&
              static_cast<int>(net::LinkTier::kPoor) == MOLT_LINK_POOR);

molt_status_t SessionInfo(molt_context_t* ctx, molt_session_t session,
                          molt_session_info* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out, "out_info"));
    MOLT_RETURN_IF_ERROR(CheckStructSize<molt_session_info>(out->struct_size));
    MOLT_ASSIGN_OR_RETURN(net::Session * found, FindSession(p, session));
    const net::Session& s = *found;
    molt_session_info info{};
    info.active = s.active() ? 1 : 0;
    info.user = s.user().c_str();
    info.join_data = s.join_data().data();
    info.join_size = s.join_data().size();
    info.address = s.address().c_str();
    info.exit_reason =
        s.exit_reason() ? static_cast<std::int32_t>(*s.exit_reason()) : MOLT_EXIT_NONE;
    info.rtt_seconds = ToSeconds(s.rtt());
    info.link_tier = static_cast<std::int32_t>(s.grade().tier);
    info.rtt_median_seconds = s.grade().quality.Median();
    info.jitter_seconds = s.grade().quality.Jitter();
    info.ping_loss = s.grade().quality.Loss();
    info.device_quality = s.grade().device;
    return WriteSized(info, out);
  });
}

molt_status_t SessionDataSet(molt_context_t* ctx, molt_session_t session, const char* key,
                             void* value, molt_cleanup_fn release) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(key, "key"));
    MOLT_ASSIGN_OR_RETURN(net::Session * s, FindSession(p, session));
    PluginInstance* inst = &p;
    Callback<void(void*)> on_release;
    if (release != nullptr) {
      on_release = [inst, release](void* v) { inst->RunRelease(release, v); };
    }
    s->SetData(key, value, std::move(on_release), &p);
    return Status::Ok();
  });
}

molt_status_t SessionDataGet(molt_context_t* ctx, molt_session_t session, const char* key,
                             void** out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{key, "key"}, {out, "out_value"}}));
    MOLT_ASSIGN_OR_RETURN(net::Session * s, FindSession(p, session));
    *out = s->GetData(key);
    return Status::Ok();
  });
}

molt_status_t SessionKick(molt_context_t* ctx, molt_session_t session,
                          const char* reason) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    return network->Kick(session, reason != nullptr ? reason : "kicked");
  });
}

// --- Replicas (ABI 1.2) ---

static_assert(static_cast<int>(net::ReplicaFieldType::kBytes) == MOLT_REPLICA_BYTES &&
                  static_cast<int>(net::Audience::kList) == MOLT_AUDIENCE_LIST,
              "replica enums follow molt.h");

molt_status_t ReplicaCreate(molt_context_t* ctx, const molt_replica_spec* given,
                            molt_replica_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{given, "spec"}, {out, "out_replica"}}));
    MOLT_ASSIGN_OR_RETURN(molt_replica_spec sized, ReadSized(*given));
    const molt_replica_spec* spec = &sized;
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    if (Status s = Required({{spec->name, "spec->name"}, {spec->fields, "spec->fields"}});
        !s.ok()) {
      return s;
    }
    if (spec->audience != MOLT_AUDIENCE_ALL && spec->audience != MOLT_AUDIENCE_LIST) {
      return Status::InvalidArgument("spec->audience is not a MOLT_AUDIENCE_* value");
    }
    if (spec->field_count == 0 || spec->field_count > net::kMaxReplicaFields) {
      return Status::InvalidArgument(
          "replica \"" + std::string(spec->name) + "\": spec->field_count is " +
          std::to_string(spec->field_count) + "; a replica has 1 to 64 fields");
    }
    net::ReplicaSpec rs;
    rs.name = spec->name;
    rs.tick_rate = spec->tick_rate == 0 ? 10 : spec->tick_rate;
    rs.audience = static_cast<net::Audience>(spec->audience);
    for (std::size_t i = 0; i < spec->field_count; ++i) {
      const molt_replica_field& f = spec->fields[i];
      if (f.type < MOLT_REPLICA_INT || f.type > MOLT_REPLICA_BYTES) {
        return Status::InvalidArgument("replica \"" + rs.name + "\": field " + std::to_string(i) +
                                       " has type " + std::to_string(f.type) +
                                       ", not a MOLT_REPLICA_* value");
      }
      rs.fields.push_back({f.name != nullptr ? f.name : "",
                           static_cast<net::ReplicaFieldType>(f.type),
                           f.max_bytes == 0 ? net::kDefaultReplicaBytes : f.max_bytes,
                           spec->quantize != nullptr ? spec->quantize[i] : 0});
    }
    MOLT_ASSIGN_OR_RETURN(net::ReplicaId id, network->replicas().Create(std::move(rs), &p));
    PluginInstance::Resource r{Kind::kReplica, {}, 0, false, nullptr, nullptr, nullptr};
    r.layer_id = id;
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

molt_status_t ReplicaClaim(molt_context_t* ctx, molt_replica_t predecessor,
                           molt_replica_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out, "out_replica"));
    MOLT_RETURN_IF_ERROR(NetworkOf(p).status());  // a host without a network has no replicas
    MOLT_ASSIGN_OR_RETURN(molt_replica_t claimed,
                          p.shared().Layer<NetLayer>()->Claim(p, predecessor));
    *out = claimed;
    return Status::Ok();
  });
}

molt_status_t ReplicaDestroy(molt_context_t* ctx, molt_replica_t replica) noexcept {
  return Guard(
      ctx, [&](PluginInstance& p) { return ReleaseOwned(p, replica, Kind::kReplica, "replica"); });
}

// Runs `fn(replicas, id)` for a replica `p` owns.
template <class F>
molt_status_t WithReplica(molt_context_t* ctx, molt_replica_t replica, F fn) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, replica, Kind::kReplica, "replica"));
    return fn(network->replicas(), r->layer_id);
  });
}

molt_status_t ReplicaSetInt(molt_context_t* ctx, molt_replica_t replica, std::uint32_t field,
                            std::int64_t value) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.SetInt(id, field, value);
  });
}

molt_status_t ReplicaSetFloat(molt_context_t* ctx, molt_replica_t replica, std::uint32_t field,
                              double value) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.SetFloat(id, field, value);
  });
}

molt_status_t ReplicaSetBytes(molt_context_t* ctx, molt_replica_t replica, std::uint32_t field,
                              const void* data, std::size_t size) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) -> Status {
    MOLT_ASSIGN_OR_RETURN(const auto value, BytesArg(data, size));
    return rs.SetBytes(id, field, value);
  });
}

molt_status_t ReplicaAddSession(molt_context_t* ctx, molt_replica_t replica,
                                molt_session_t session) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.AddSession(id, session);
  });
}

molt_status_t ReplicaRemoveSession(molt_context_t* ctx, molt_replica_t replica,
                                   molt_session_t session) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.RemoveSession(id, session);
  });
}

// --- Interest (ABI 1.11) ---

// The network's id of replica handle `replica`, which `p` owns.
Result<net::ReplicaId> ReplicaIdOf(PluginInstance& p, molt_replica_t replica) {
  MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                        FindKind(p, replica, Kind::kReplica, "replica"));
  return r->layer_id;
}

molt_status_t ReplicaSetInterest(molt_context_t* ctx, molt_replica_t replica, molt_interest_fn fn,
                                 void* user_data, molt_cleanup_fn release) noexcept {
  // The plugin's predicate, called as any plugin callback (not once its instance was abandoned),
  // and its user_data, released as the instance's releases are (deferred while one of its
  // callbacks runs: it is usually one that replaces the predicate) with the last copy of it.
  struct Predicate {
    std::weak_ptr<PluginInstance> owner;
    molt_interest_fn fn;
    void* user_data;
    molt_cleanup_fn release;
    ~Predicate() {
      if (release == nullptr) {
        return;
      }
      if (std::shared_ptr<PluginInstance> p = owner.lock()) {
        p->RunRelease(release, user_data);
      }
    }
    bool Ask(net::SessionId s) const {
      std::shared_ptr<PluginInstance> p = owner.lock();
      if (p == nullptr || fn == nullptr) {
        return false;
      }
      std::int32_t yes = 0;
      const molt_status_t code = CallPlugin(*p, [&] {
        yes = fn(user_data, s);
        return static_cast<molt_status_t>(MOLT_OK);
      });
      return code == MOLT_OK && yes != 0;
    }
  };
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    // Held first: whatever is refused below, `release` runs once.
    const std::shared_ptr<Predicate> held(
        new Predicate{p.weak_from_this(), fn, user_data, release});  // no copy
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(net::ReplicaId id, ReplicaIdOf(p, replica));
    if (fn == nullptr) {
      return network->replicas().SetInterest(id, nullptr);
    }
    return network->replicas().SetInterest(id, [held](net::SessionId s) { return held->Ask(s); });
  });
}

molt_status_t ReplicaRefreshInterest(molt_context_t* ctx, molt_replica_t replica,
                                     molt_session_t session) noexcept {
  return WithReplica(ctx, replica, [&](net::Replicas& rs, net::ReplicaId id) {
    return rs.RefreshInterest(id, session);
  });
}

molt_status_t ZoneDeclare(molt_context_t* ctx, const char* name, molt_zone_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{name, "name"}, {out, "out_zone"}}));
    MOLT_RETURN_IF_ERROR(NetworkOf(p).status());
    MOLT_ASSIGN_OR_RETURN(*out, p.shared().Layer<NetLayer>()->DeclareZone(p, name));
    return Status::Ok();
  });
}

molt_status_t ZoneDestroy(molt_context_t* ctx, molt_zone_t zone) noexcept {
  return Guard(ctx, [&](PluginInstance& p) { return ReleaseOwned(p, zone, Kind::kZone, "zone"); });
}

// Runs `fn(network, zone id)` for a zone `p` owns.
template <class F>
molt_status_t WithZone(molt_context_t* ctx, molt_zone_t zone, F fn) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r, FindKind(p, zone, Kind::kZone, "zone"));
    return fn(p, *network, r->layer_id);
  });
}

molt_status_t ZoneEnter(molt_context_t* ctx, molt_zone_t zone, molt_session_t session) noexcept {
  return WithZone(ctx, zone, [&](PluginInstance&, net::Network& n, net::ZoneId id) {
    return n.zones().Enter(id, session);
  });
}

molt_status_t ZoneLeave(molt_context_t* ctx, molt_zone_t zone, molt_session_t session) noexcept {
  return WithZone(ctx, zone, [&](PluginInstance&, net::Network& n, net::ZoneId id) {
    return n.zones().Leave(id, session);
  });
}

molt_status_t ZoneBind(molt_context_t* ctx, molt_zone_t zone, molt_replica_t replica) noexcept {
  return WithZone(ctx, zone, [&](PluginInstance& p, net::Network& n, net::ZoneId id) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::ReplicaId r, ReplicaIdOf(p, replica));
    return n.zones().Bind(id, r);
  });
}

molt_status_t ZoneUnbind(molt_context_t* ctx, molt_zone_t zone, molt_replica_t replica) noexcept {
  return WithZone(ctx, zone, [&](PluginInstance& p, net::Network& n, net::ZoneId id) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::ReplicaId r, ReplicaIdOf(p, replica));
    return n.zones().Unbind(id, r);
  });
}

molt_status_t GridDeclare(molt_context_t* ctx, const molt_grid_spec* given,
                          molt_grid_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{given, "spec"}, {out, "out_grid"}}));
    MOLT_ASSIGN_OR_RETURN(molt_grid_spec spec, ReadSized(*given));
    MOLT_RETURN_IF_ERROR(Required(spec.name, "spec->name"));
    MOLT_RETURN_IF_ERROR(NetworkOf(p).status());
    net::GridSpec gs;
    gs.name = spec.name;
    gs.options.radius = spec.radius;
    gs.options.cell_size = spec.cell_size;
    gs.options.leave_radius = spec.leave_radius;
    gs.rate = spec.rate == 0 ? 10 : spec.rate;
    MOLT_ASSIGN_OR_RETURN(*out, p.shared().Layer<NetLayer>()->DeclareGrid(p, std::move(gs)));
    return Status::Ok();
  });
}

molt_status_t GridDestroy(molt_context_t* ctx, molt_grid_t grid) noexcept {
  return Guard(ctx, [&](PluginInstance& p) { return ReleaseOwned(p, grid, Kind::kGrid, "grid"); });
}

// Runs `fn(p, network, grid id)` for a grid `p` owns.
template <class F>
molt_status_t WithGrid(molt_context_t* ctx, molt_grid_t grid, F fn) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::Network * network, NetworkOf(p));
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r, FindKind(p, grid, Kind::kGrid, "grid"));
    return fn(p, *network, r->layer_id);
  });
}

molt_status_t GridBind(molt_context_t* ctx, molt_grid_t grid, molt_replica_t replica,
                       std::uint32_t x_field, std::uint32_t y_field) noexcept {
  return WithGrid(ctx, grid, [&](PluginInstance& p, net::Network& n, net::GridId id) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::ReplicaId r, ReplicaIdOf(p, replica));
    return n.grids().BindReplica(id, r, x_field, y_field);
  });
}

molt_status_t GridUnbind(molt_context_t* ctx, molt_grid_t grid, molt_replica_t replica) noexcept {
  return WithGrid(ctx, grid, [&](PluginInstance& p, net::Network& n, net::GridId id) -> Status {
    MOLT_ASSIGN_OR_RETURN(net::ReplicaId r, ReplicaIdOf(p, replica));
    return n.grids().UnbindReplica(id, r);
  });
}

molt_status_t GridPlace(molt_context_t* ctx, molt_grid_t grid, molt_session_t session, double x,
                        double y) noexcept {
  return WithGrid(ctx, grid, [&](PluginInstance&, net::Network& n, net::GridId id) {
    return n.grids().PlaceSession(id, session, x, y);
  });
}

molt_status_t GridRemove(molt_context_t* ctx, molt_grid_t grid, molt_session_t session) noexcept {
  return WithGrid(ctx, grid, [&](PluginInstance&, net::Network& n, net::GridId id) {
    return n.grids().RemoveSession(id, session);
  });
}

}  // namespace

void AttachNetwork(AbiShared& shared, net::Network* network) {
  shared.AddLayer(std::make_unique<NetLayer>(network));
  molt_host_api& api = shared.mutable_api();
  api.channel_declare = ChannelDeclare;
  api.channel_remove = ChannelRemove;
  api.event_send = EventSend;
  api.request_reply = RequestReply;
  api.session_on = SessionOn;
  api.session_bind = SessionBind;
  api.session_info = SessionInfo;
  api.session_data_set = SessionDataSet;
  api.session_data_get = SessionDataGet;
  api.session_kick = SessionKick;
  api.replica_create = ReplicaCreate;
  api.replica_destroy = ReplicaDestroy;
  api.replica_set_int = ReplicaSetInt;
  api.replica_set_float = ReplicaSetFloat;
  api.replica_set_bytes = ReplicaSetBytes;
  api.replica_add_session = ReplicaAddSession;
  api.replica_remove_session = ReplicaRemoveSession;
  api.session_bind_end = SessionBindEnd;
  api.replica_claim = ReplicaClaim;
  api.replica_set_interest = ReplicaSetInterest;
  api.replica_refresh_interest = ReplicaRefreshInterest;
  api.zone_declare = ZoneDeclare;
  api.zone_destroy = ZoneDestroy;
  api.zone_enter = ZoneEnter;
  api.zone_leave = ZoneLeave;
  api.zone_bind = ZoneBind;
  api.zone_unbind = ZoneUnbind;
  api.grid_declare = GridDeclare;
  api.grid_destroy = GridDestroy;
  api.grid_bind = GridBind;
  api.grid_unbind = GridUnbind;
  api.grid_place = GridPlace;
  api.grid_remove = GridRemove;
}

}  // namespace molt::kernel::abi

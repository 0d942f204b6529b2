// SPDX-License-Identifier: Apache-2.0
// The refusals of the layer slots a host has not replaced: one Guard()ed function per slot
// signature and text, generated from the slot's own type.
#include "kernel/src/abi/layer_refusals.h"

#include "kernel/src/abi/bridge.h"

namespace molt::kernel::abi {
namespace {

// The networking and client slots are always in the table: a host without the layer answers
// MOLT_ERR_UNSUPPORTED (molt.h), and the layer replaces them (net_api.cc, the client library).
constexpr char kNoNetwork[] = "this host has no network (channels and sessions are server-side)";
constexpr char kNoProfiles[] =
    "this host keeps no profiles (moltd does: profile stores are server-side)";
constexpr char kNoAnalytics[] = "this host keeps no analytics (moltd does)";
constexpr char kNoWorkers[] = "this host runs no worker jobs (moltd does)";
constexpr char kNoLive[] = "this host keeps no live values (moltd does)";
constexpr char kNoMessages[] = "this host sends no messages between servers (moltd does)";
constexpr char kNoKv[] = "this host keeps no key-value store (moltd does)";
constexpr char kNotClient[] =
    "this host is not a client (intents, requests and replica reads are for controllers)";

template <const char* kText, class Slot>
struct Refuse;
template <const char* kText, class... A>
struct Refuse<kText, molt_status_t (*)(molt_context_t*, A...)> {
  static molt_status_t Call(molt_context_t* ctx, A...) noexcept {
    return Guard(ctx, [](PluginInstance&) { return Status::Unsupported(kText); });
  }
};

template <const char* kText, class Slot>
void SetRefusal(Slot& slot) {
  slot = &Refuse<kText, Slot>::Call;
}

}  // namespace

void InstallLayerRefusals(molt_host_api& api) {
  SetRefusal<kNoAnalytics>(api.analytics_track);
  SetRefusal<kNoWorkers>(api.job_handler);
  SetRefusal<kNoWorkers>(api.job_submit);
  SetRefusal<kNoWorkers>(api.job_fork_join);
  SetRefusal<kNoWorkers>(api.job_cancel);
  SetRefusal<kNoLive>(api.live_declare);
  SetRefusal<kNoLive>(api.live_get);
  SetRefusal<kNoMessages>(api.message_publish);
  SetRefusal<kNoMessages>(api.message_subscribe);
  SetRefusal<kNoKv>(api.kv_call);
  SetRefusal<kNoNetwork>(api.channel_declare);
  SetRefusal<kNoNetwork>(api.channel_remove);
  SetRefusal<kNoNetwork>(api.event_send);
  SetRefusal<kNoNetwork>(api.request_reply);
  SetRefusal<kNoNetwork>(api.session_on);
  SetRefusal<kNoNetwork>(api.session_bind);
  SetRefusal<kNoNetwork>(api.session_bind_end);
  SetRefusal<kNoNetwork>(api.replica_claim);
  SetRefusal<kNoNetwork>(api.session_info);
  SetRefusal<kNoNetwork>(api.session_data_set);
  SetRefusal<kNoNetwork>(api.session_data_get);
  SetRefusal<kNoNetwork>(api.session_kick);
  SetRefusal<kNoNetwork>(api.replica_create);
  SetRefusal<kNoNetwork>(api.replica_destroy);
  SetRefusal<kNoNetwork>(api.replica_set_int);
  SetRefusal<kNoNetwork>(api.replica_set_float);
  SetRefusal<kNoNetwork>(api.replica_set_bytes);
  SetRefusal<kNoNetwork>(api.replica_add_session);
  SetRefusal<kNoNetwork>(api.replica_remove_session);
  SetRefusal<kNoNetwork>(api.replica_set_interest);
  SetRefusal<kNoNetwork>(api.replica_refresh_interest);
  SetRefusal<kNoNetwork>(api.zone_declare);
  SetRefusal<kNoNetwork>(api.zone_destroy);
  SetRefusal<kNoNetwork>(api.zone_enter);
  SetRefusal<kNoNetwork>(api.zone_leave);
  SetRefusal<kNoNetwork>(api.zone_bind);
  SetRefusal<kNoNetwork>(api.zone_unbind);
  SetRefusal<kNoNetwork>(api.grid_declare);
  SetRefusal<kNoNetwork>(api.grid_destroy);
  SetRefusal<kNoNetwork>(api.grid_bind);
  SetRefusal<kNoNetwork>(api.grid_unbind);
  SetRefusal<kNoNetwork>(api.grid_place);
  SetRefusal<kNoNetwork>(api.grid_remove);
  SetRefusal<kNotClient>(api.client_intent);
  SetRefusal<kNotClient>(api.client_request);
  SetRefusal<kNotClient>(api.client_replica_get);
  SetRefusal<kNotClient>(api.client_predict);
  SetRefusal<kNotClient>(api.client_pending);
  SetRefusal<kNoProfiles>(api.profile_declare);
  SetRefusal<kNoProfiles>(api.profile_state);
  SetRefusal<kNoProfiles>(api.profile_get);
  SetRefusal<kNoProfiles>(api.profile_set);
  SetRefusal<kNoProfiles>(api.profile_save);
  SetRefusal<kNoProfiles>(api.profile_snapshot);
  SetRefusal<kNoProfiles>(api.profile_snapshots);
  SetRefusal<kNoProfiles>(api.profile_rollback);
  SetRefusal<kNoProfiles>(api.profile_backup_now);
  SetRefusal<kNoProfiles>(api.profile_transact);
  SetRefusal<kNoProfiles>(api.profile_key_load);
  SetRefusal<kNoProfiles>(api.profile_key_session);
  SetRefusal<kNoProfiles>(api.profile_key_release);
}

}  // namespace molt::kernel::abi

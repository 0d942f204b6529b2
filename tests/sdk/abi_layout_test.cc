// SPDX-License-Identifier: Apache-2.0
// Freezes the layout of every ABI struct (LP64). Moving, retyping or removing a field fails the
// build; appending a field changes only the sizeof line, on purpose and in review.
#include <gtest/gtest.h>
#include <molt/molt.h>

#include <cstddef>

#define MOLT_FROZEN(type, field, offset) \
  static_assert(offsetof(type, field) == (offset), #type "." #field " moved")

static_assert(sizeof(void*) == 8, "the frozen offsets below are for LP64 targets");

MOLT_FROZEN(molt_value, type, 0);
MOLT_FROZEN(molt_value, size, 4);
MOLT_FROZEN(molt_value, as, 8);
static_assert(sizeof(molt_value) == 16);

MOLT_FROZEN(molt_hook_context, struct_size, 0);
MOLT_FROZEN(molt_hook_context, reserved, 4);
MOLT_FROZEN(molt_hook_context, point, 8);
MOLT_FROZEN(molt_hook_context, args, 16);
MOLT_FROZEN(molt_hook_context, arg_count, 24);
MOLT_FROZEN(molt_hook_context, session, 32);
static_assert(sizeof(molt_hook_context) == 40);

MOLT_FROZEN(molt_interface_export, name, 0);
MOLT_FROZEN(molt_interface_export, vtable, 8);
MOLT_FROZEN(molt_interface_export, vtable_size, 16);
MOLT_FROZEN(molt_interface_export, reserved, 20);
static_assert(sizeof(molt_interface_export) == 24);

MOLT_FROZEN(molt_interface_ref, vtable, 0);
MOLT_FROZEN(molt_interface_ref, self, 8);
MOLT_FROZEN(molt_interface_ref, vtable_size, 16);
MOLT_FROZEN(molt_interface_ref, reserved, 20);
static_assert(sizeof(molt_interface_ref) == 24);

// ABI 1.0
MOLT_FROZEN(molt_host_api, struct_size, 0);
MOLT_FROZEN(molt_host_api, abi_version, 4);
MOLT_FROZEN(molt_host_api, last_error, 8);
MOLT_FROZEN(molt_host_api, set_error, 16);
MOLT_FROZEN(molt_host_api, log, 24);
MOLT_FROZEN(molt_host_api, log_enabled, 32);
MOLT_FROZEN(molt_host_api, bus_resolve, 40);
MOLT_FROZEN(molt_host_api, bus_publish, 48);
MOLT_FROZEN(molt_host_api, bus_publish_topic, 56);
MOLT_FROZEN(molt_host_api, bus_subscribe, 64);
MOLT_FROZEN(molt_host_api, bus_unsubscribe, 72);
MOLT_FROZEN(molt_host_api, hook_define, 80);
MOLT_FROZEN(molt_host_api, hook_on, 88);
MOLT_FROZEN(molt_host_api, hook_off, 96);
MOLT_FROZEN(molt_host_api, hook_fire, 104);
MOLT_FROZEN(molt_host_api, task_schedule, 112);
MOLT_FROZEN(molt_host_api, task_after, 120);
MOLT_FROZEN(molt_host_api, task_every, 128);
MOLT_FROZEN(molt_host_api, task_cancel, 136);
MOLT_FROZEN(molt_host_api, scope_create, 144);
MOLT_FROZEN(molt_host_api, scope_defer, 152);
MOLT_FROZEN(molt_host_api, scope_adopt, 160);
MOLT_FROZEN(molt_host_api, scope_close, 168);
MOLT_FROZEN(molt_host_api, service_interface, 176);
MOLT_FROZEN(molt_host_api, config_get, 184);
MOLT_FROZEN(molt_host_api, stats_json, 192);
MOLT_FROZEN(molt_host_api, process_spawn, 200);
MOLT_FROZEN(molt_host_api, process_start, 208);
MOLT_FROZEN(molt_host_api, process_yield, 216);
MOLT_FROZEN(molt_host_api, process_sleep, 224);
MOLT_FROZEN(molt_host_api, process_wait, 232);
MOLT_FROZEN(molt_host_api, process_suspend, 240);
MOLT_FROZEN(molt_host_api, process_resume, 248);
MOLT_FROZEN(molt_host_api, process_kill, 256);
MOLT_FROZEN(molt_host_api, process_state, 264);
MOLT_FROZEN(molt_host_api, process_on_exit, 272);
MOLT_FROZEN(molt_host_api, process_set_result, 280);
MOLT_FROZEN(molt_host_api, completion_create, 288);
MOLT_FROZEN(molt_host_api, completion_complete, 296);
// ABI 1.1
MOLT_FROZEN(molt_host_api, channel_declare, 304);
MOLT_FROZEN(molt_host_api, channel_remove, 312);
MOLT_FROZEN(molt_host_api, event_send, 320);
MOLT_FROZEN(molt_host_api, request_reply, 328);
MOLT_FROZEN(molt_host_api, session_on, 336);
MOLT_FROZEN(molt_host_api, session_bind, 344);
MOLT_FROZEN(molt_host_api, session_info, 352);
MOLT_FROZEN(molt_host_api, session_data_set, 360);
MOLT_FROZEN(molt_host_api, session_data_get, 368);
MOLT_FROZEN(molt_host_api, session_kick, 376);
// ABI 1.2
MOLT_FROZEN(molt_host_api, replica_create, 384);
MOLT_FROZEN(molt_host_api, replica_destroy, 392);
MOLT_FROZEN(molt_host_api, replica_set_int, 400);
MOLT_FROZEN(molt_host_api, replica_set_float, 408);
MOLT_FROZEN(molt_host_api, replica_set_bytes, 416);
MOLT_FROZEN(molt_host_api, replica_add_session, 424);
MOLT_FROZEN(molt_host_api, replica_remove_session, 432);
MOLT_FROZEN(molt_host_api, client_intent, 440);
MOLT_FROZEN(molt_host_api, client_request, 448);
MOLT_FROZEN(molt_host_api, client_replica_get, 456);
MOLT_FROZEN(molt_host_api, completion_release, 464);
// ABI 1.3: generations.
MOLT_FROZEN(molt_host_api, session_bind_end, 472);
MOLT_FROZEN(molt_host_api, replica_claim, 480);
MOLT_FROZEN(molt_host_api, reload_request, 488);
// ABI 1.4: profiles.
MOLT_FROZEN(molt_host_api, profile_declare, 496);
MOLT_FROZEN(molt_host_api, profile_state, 504);
MOLT_FROZEN(molt_host_api, profile_get, 512);
MOLT_FROZEN(molt_host_api, profile_set, 520);
MOLT_FROZEN(molt_host_api, profile_save, 528);
MOLT_FROZEN(molt_host_api, profile_snapshot, 536);
MOLT_FROZEN(molt_host_api, profile_snapshots, 544);
MOLT_FROZEN(molt_host_api, profile_rollback, 552);
MOLT_FROZEN(molt_host_api, profile_backup_now, 560);
MOLT_FROZEN(molt_host_api, profile_transact, 568);
MOLT_FROZEN(molt_host_api, profile_key_load, 576);
MOLT_FROZEN(molt_host_api, profile_key_session, 584);
MOLT_FROZEN(molt_host_api, profile_key_release, 592);
// ABI 1.5: phases.
MOLT_FROZEN(molt_host_api, task_start, 600);
// ABI 1.5: analytics.
MOLT_FROZEN(molt_host_api, analytics_track, 608);
// ABI 1.6: workers.
MOLT_FROZEN(molt_host_api, job_handler, 616);
MOLT_FROZEN(molt_host_api, job_submit, 624);
MOLT_FROZEN(molt_host_api, job_fork_join, 632);
MOLT_FROZEN(molt_host_api, job_cancel, 640);
// ABI 1.7: live values.
MOLT_FROZEN(molt_host_api, live_declare, 648);
MOLT_FROZEN(molt_host_api, live_get, 656);
// ABI 1.9: messages between servers.
MOLT_FROZEN(molt_host_api, message_publish, 664);
MOLT_FROZEN(molt_host_api, message_subscribe, 672);
// ABI 1.9: the key-value store.
MOLT_FROZEN(molt_host_api, kv_call, 680);
// ABI 1.10: predicted intents from controllers.
MOLT_FROZEN(molt_host_api, client_predict, 688);
MOLT_FROZEN(molt_host_api, client_pending, 696);
// ABI 1.11: interest.
MOLT_FROZEN(molt_host_api, replica_set_interest, 704);
MOLT_FROZEN(molt_host_api, replica_refresh_interest, 712);
MOLT_FROZEN(molt_host_api, zone_declare, 720);
MOLT_FROZEN(molt_host_api, zone_destroy, 728);
MOLT_FROZEN(molt_host_api, zone_enter, 736);
MOLT_FROZEN(molt_host_api, zone_leave, 744);
MOLT_FROZEN(molt_host_api, zone_bind, 752);
MOLT_FROZEN(molt_host_api, zone_unbind, 760);
MOLT_FROZEN(molt_host_api, grid_declare, 768);
MOLT_FROZEN(molt_host_api, grid_destroy, 776);
MOLT_FROZEN(molt_host_api, grid_bind, 784);
MOLT_FROZEN(molt_host_api, grid_unbind, 792);
MOLT_FROZEN(molt_host_api, grid_place, 800);
MOLT_FROZEN(molt_host_api, grid_remove, 808);
static_assert(sizeof(molt_host_api) == 816);
MOLT_FROZEN(molt_kv_op, struct_size, 0);
MOLT_FROZEN(molt_kv_op, kind, 4);
MOLT_FROZEN(molt_kv_op, key, 8);
MOLT_FROZEN(molt_kv_op, value, 16);
MOLT_FROZEN(molt_kv_op, value_size, 24);
MOLT_FROZEN(molt_kv_op, expected, 32);
MOLT_FROZEN(molt_kv_op, expected_size, 40);
MOLT_FROZEN(molt_kv_op, number, 48);
MOLT_FROZEN(molt_kv_op, number2, 56);
MOLT_FROZEN(molt_kv_op, limit, 64);
MOLT_FROZEN(molt_kv_op, flags, 68);
MOLT_FROZEN(molt_kv_op, ttl_seconds, 72);
static_assert(sizeof(molt_kv_op) == 80);
MOLT_FROZEN(molt_kv_entry, member, 0);
MOLT_FROZEN(molt_kv_entry, member_size, 8);
MOLT_FROZEN(molt_kv_entry, score, 16);
static_assert(sizeof(molt_kv_entry) == 24);
MOLT_FROZEN(molt_kv_result, struct_size, 0);
MOLT_FROZEN(molt_kv_result, status, 4);
MOLT_FROZEN(molt_kv_result, error, 8);
MOLT_FROZEN(molt_kv_result, value, 16);
MOLT_FROZEN(molt_kv_result, value_size, 24);
MOLT_FROZEN(molt_kv_result, number, 32);
MOLT_FROZEN(molt_kv_result, entries, 40);
MOLT_FROZEN(molt_kv_result, entry_count, 48);
static_assert(sizeof(molt_kv_result) == 56);
static_assert(MOLT_KV_GET == 1 && MOLT_KV_ZRANGE == 8 && MOLT_KV_ABSENT == 1u &&
              MOLT_KV_DESCENDING == 2u);
MOLT_FROZEN(molt_message_meta, struct_size, 0);
MOLT_FROZEN(molt_message_meta, flags, 4);
MOLT_FROZEN(molt_message_meta, server, 8);
MOLT_FROZEN(molt_message_meta, branch, 16);
MOLT_FROZEN(molt_message_meta, sent_ms, 24);
static_assert(sizeof(molt_message_meta) == 32);
static_assert(MOLT_MESSAGE_SELF == 1u && MOLT_MESSAGE_REPLAYED == 2u);

// ABI 1.6: workers.
MOLT_FROZEN(molt_bytes_view, data, 0);
MOLT_FROZEN(molt_bytes_view, size, 8);
static_assert(sizeof(molt_bytes_view) == 16);
MOLT_FROZEN(molt_job_spec, struct_size, 0);
MOLT_FROZEN(molt_job_spec, flags, 4);
MOLT_FROZEN(molt_job_spec, handler, 8);
MOLT_FROZEN(molt_job_spec, fn, 16);
MOLT_FROZEN(molt_job_spec, user_data, 24);
MOLT_FROZEN(molt_job_spec, release, 32);
MOLT_FROZEN(molt_job_spec, timeout_seconds, 40);
MOLT_FROZEN(molt_job_spec, tag, 48);
MOLT_FROZEN(molt_job_spec, chunk_size, 56);
static_assert(sizeof(molt_job_spec) == 64);
MOLT_FROZEN(molt_job_result, struct_size, 0);
MOLT_FROZEN(molt_job_result, status, 4);
MOLT_FROZEN(molt_job_result, job, 8);
MOLT_FROZEN(molt_job_result, tag, 16);
MOLT_FROZEN(molt_job_result, error, 24);
MOLT_FROZEN(molt_job_result, count, 32);
MOLT_FROZEN(molt_job_result, results, 40);
MOLT_FROZEN(molt_job_result, failed_item, 48);
MOLT_FROZEN(molt_job_result, inherited, 56);
static_assert(sizeof(molt_job_result) == 64);

// ABI 1.5: phases.
MOLT_FROZEN(molt_task_spec, struct_size, 0);
MOLT_FROZEN(molt_task_spec, phase, 4);
MOLT_FROZEN(molt_task_spec, kind, 8);
MOLT_FROZEN(molt_task_spec, priority, 12);
MOLT_FROZEN(molt_task_spec, seconds, 16);
static_assert(sizeof(molt_task_spec) == 24);

// ABI 1.4: profiles.
MOLT_FROZEN(molt_profile_spec, struct_size, 0);
MOLT_FROZEN(molt_profile_spec, schema_version, 4);
MOLT_FROZEN(molt_profile_spec, name, 8);
MOLT_FROZEN(molt_profile_spec, defaults_json, 16);
MOLT_FROZEN(molt_profile_spec, autosave_seconds, 24);
MOLT_FROZEN(molt_profile_spec, lease_seconds, 32);
MOLT_FROZEN(molt_profile_spec, backoff_seconds, 40);
MOLT_FROZEN(molt_profile_spec, backoff_count, 48);
MOLT_FROZEN(molt_profile_spec, flags, 56);
MOLT_FROZEN(molt_profile_spec, reserved, 60);
MOLT_FROZEN(molt_profile_spec, migrate, 64);
MOLT_FROZEN(molt_profile_spec, validate, 72);
MOLT_FROZEN(molt_profile_spec, user_data, 80);
MOLT_FROZEN(molt_profile_spec, backup_seconds, 88);
static_assert(sizeof(molt_profile_spec) == 96);

// ABI 1.1: networking.
MOLT_FROZEN(molt_field_rule, field, 0);
MOLT_FROZEN(molt_field_rule, type, 2);
MOLT_FROZEN(molt_field_rule, rule, 3);
MOLT_FROZEN(molt_field_rule, max_length, 4);
MOLT_FROZEN(molt_field_rule, min, 8);
MOLT_FROZEN(molt_field_rule, max, 16);
MOLT_FROZEN(molt_field_rule, one_of, 24);
MOLT_FROZEN(molt_field_rule, one_of_count, 32);
MOLT_FROZEN(molt_field_rule, name, 40);
static_assert(sizeof(molt_field_rule) == 48);

MOLT_FROZEN(molt_channel_spec, struct_size, 0);
MOLT_FROZEN(molt_channel_spec, kind, 4);
MOLT_FROZEN(molt_channel_spec, name, 8);
MOLT_FROZEN(molt_channel_spec, schema, 16);
MOLT_FROZEN(molt_channel_spec, verify, 24);
MOLT_FROZEN(molt_channel_spec, rules, 32);
MOLT_FROZEN(molt_channel_spec, rule_count, 40);
MOLT_FROZEN(molt_channel_spec, rate, 48);
MOLT_FROZEN(molt_channel_spec, burst, 56);
MOLT_FROZEN(molt_channel_spec, open, 64);
MOLT_FROZEN(molt_channel_spec, reserved, 68);
MOLT_FROZEN(molt_channel_spec, timeout_seconds, 72);
MOLT_FROZEN(molt_channel_spec, reject_payload, 80);
MOLT_FROZEN(molt_channel_spec, reject_size, 88);
MOLT_FROZEN(molt_channel_spec, on_intent, 96);
MOLT_FROZEN(molt_channel_spec, on_request, 104);
MOLT_FROZEN(molt_channel_spec, user_data, 112);
// ABI 1.10: unreliable channels.
MOLT_FROZEN(molt_channel_spec, unreliable_priority, 120);
MOLT_FROZEN(molt_channel_spec, latest_wins, 124);
static_assert(sizeof(molt_channel_spec) == 128);

MOLT_FROZEN(molt_session_info, struct_size, 0);
MOLT_FROZEN(molt_session_info, active, 4);
MOLT_FROZEN(molt_session_info, user, 8);
MOLT_FROZEN(molt_session_info, join_data, 16);
MOLT_FROZEN(molt_session_info, join_size, 24);
MOLT_FROZEN(molt_session_info, address, 32);
MOLT_FROZEN(molt_session_info, exit_reason, 40);
MOLT_FROZEN(molt_session_info, reserved, 44);
MOLT_FROZEN(molt_session_info, rtt_seconds, 48);
// ABI 1.12: the link's grade.
MOLT_FROZEN(molt_session_info, link_tier, 56);
MOLT_FROZEN(molt_session_info, reserved2, 60);
MOLT_FROZEN(molt_session_info, rtt_median_seconds, 64);
MOLT_FROZEN(molt_session_info, jitter_seconds, 72);
MOLT_FROZEN(molt_session_info, ping_loss, 80);
MOLT_FROZEN(molt_session_info, device_quality, 88);
static_assert(sizeof(molt_session_info) == 96);

// ABI 1.2
MOLT_FROZEN(molt_replica_field, name, 0);
MOLT_FROZEN(molt_replica_field, type, 8);
MOLT_FROZEN(molt_replica_field, max_bytes, 12);
static_assert(sizeof(molt_replica_field) == 16);
MOLT_FROZEN(molt_replica_spec, struct_size, 0);
MOLT_FROZEN(molt_replica_spec, audience, 4);
MOLT_FROZEN(molt_replica_spec, name, 8);
MOLT_FROZEN(molt_replica_spec, fields, 16);
MOLT_FROZEN(molt_replica_spec, field_count, 24);
MOLT_FROZEN(molt_replica_spec, tick_rate, 32);
// ABI 1.11: deadbands.
MOLT_FROZEN(molt_replica_spec, quantize, 40);
static_assert(sizeof(molt_replica_spec) == 48);

// ABI 1.11
MOLT_FROZEN(molt_grid_spec, struct_size, 0);
MOLT_FROZEN(molt_grid_spec, reserved, 4);
MOLT_FROZEN(molt_grid_spec, name, 8);
MOLT_FROZEN(molt_grid_spec, radius, 16);
MOLT_FROZEN(molt_grid_spec, cell_size, 24);
MOLT_FROZEN(molt_grid_spec, leave_radius, 32);
MOLT_FROZEN(molt_grid_spec, rate, 40);
static_assert(sizeof(molt_grid_spec) == 48);

MOLT_FROZEN(molt_process_options, struct_size, 0);
MOLT_FROZEN(molt_process_options, priority, 4);
MOLT_FROZEN(molt_process_options, name, 8);
MOLT_FROZEN(molt_process_options, stack_size, 16);
static_assert(sizeof(molt_process_options) == 24);

MOLT_FROZEN(molt_plugin_info, struct_size, 0);
MOLT_FROZEN(molt_plugin_info, abi_version, 4);
MOLT_FROZEN(molt_plugin_info, name, 8);
MOLT_FROZEN(molt_plugin_info, version, 16);
MOLT_FROZEN(molt_plugin_info, kind, 24);
MOLT_FROZEN(molt_plugin_info, dependency_count, 28);
MOLT_FROZEN(molt_plugin_info, dependencies, 32);
MOLT_FROZEN(molt_plugin_info, init, 40);
MOLT_FROZEN(molt_plugin_info, start, 48);
MOLT_FROZEN(molt_plugin_info, stop, 56);
MOLT_FROZEN(molt_plugin_info, destroy, 64);
MOLT_FROZEN(molt_plugin_info, state_version, 72);
MOLT_FROZEN(molt_plugin_info, interface_count, 76);
MOLT_FROZEN(molt_plugin_info, export_state, 80);
MOLT_FROZEN(molt_plugin_info, import_state, 88);
MOLT_FROZEN(molt_plugin_info, interfaces, 96);
MOLT_FROZEN(molt_plugin_info, description, 104);
MOLT_FROZEN(molt_plugin_info, oldest_state_version, 112);  // ABI 1.3
MOLT_FROZEN(molt_plugin_info, self_test, 120);             // ABI 1.8
static_assert(sizeof(molt_plugin_info) == 128);

namespace {

TEST(AbiLayoutTest, ConstantsAreFrozen) {
  EXPECT_EQ(MOLT_ABI_VERSION(1, 2), 0x10002u);
  EXPECT_EQ(MOLT_ABI_MAJOR_OF(0x10002u), 1u);
  EXPECT_EQ(MOLT_ABI_MINOR_OF(0x10002u), 2u);
  EXPECT_EQ(MOLT_ERR_REJECTED, -9);
  EXPECT_EQ(MOLT_PRIORITY_KERNEL, 1);
  EXPECT_EQ(MOLT_PRIORITY_BACKGROUND, 5);
  EXPECT_EQ(MOLT_VALUE_HANDLE, 6);
  EXPECT_EQ(MOLT_HOOK_DEFAULT_PRIORITY, 100);
  EXPECT_EQ(MOLT_PROCESS_CREATED, 0);
  EXPECT_EQ(MOLT_PROCESS_KILLED, 5);
  EXPECT_STREQ(MOLT_PLUGIN_ENTRY_SYMBOL, "molt_plugin_entry");
}

TEST(AbiLayoutTest, ApiHasChecksTheTableLengthAndTheSlot) {
  molt_host_api api{};
  api.struct_size = offsetof(molt_host_api, stats_json);  // a 1.0 table cut short
  api.config_get = [](molt_context_t*, const char*, molt_value*) { return MOLT_OK; };
  api.stats_json = [](molt_context_t*, molt_bytes_fn, void*) { return MOLT_OK; };
  EXPECT_TRUE(MOLT_API_HAS(&api, config_get));
  EXPECT_FALSE(MOLT_API_HAS(&api, stats_json));
  api.struct_size = sizeof(molt_host_api);
  EXPECT_TRUE(MOLT_API_HAS(&api, stats_json));
  api.stats_json = nullptr;
  EXPECT_FALSE(MOLT_API_HAS(&api, stats_json));
}

}  // namespace

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * molt.h is valid C99: this program includes only it, compiles with -std=c99 -pedantic -Werror,
 * and checks the layout from C (a C compiler lays the structs out; the C++ test checks the same).
 */
#include <molt/molt.h>
#include <stdio.h>

#define C_STATIC_ASSERT(cond, name) typedef char name[(cond) ? 1 : -1]

C_STATIC_ASSERT(sizeof(molt_value) == 16, value_size);
C_STATIC_ASSERT(offsetof(molt_value, as) == 8, value_as);
C_STATIC_ASSERT(sizeof(molt_hook_context) == 40, hook_context_size);
C_STATIC_ASSERT(sizeof(molt_interface_export) == 24, interface_export_size);
C_STATIC_ASSERT(sizeof(molt_interface_ref) == 24, interface_ref_size);
C_STATIC_ASSERT(offsetof(molt_host_api, stats_json) == 192, host_api_stats_slot);
C_STATIC_ASSERT(offsetof(molt_host_api, completion_complete) == 296, host_api_last_slot_1_0);
C_STATIC_ASSERT(offsetof(molt_host_api, session_kick) == 376, host_api_last_slot_1_1);
C_STATIC_ASSERT(offsetof(molt_host_api, completion_release) == 464, host_api_last_slot_1_2);
C_STATIC_ASSERT(offsetof(molt_host_api, reload_request) == 488, host_api_last_slot_1_3);
C_STATIC_ASSERT(offsetof(molt_host_api, profile_key_release) == 592, host_api_last_slot_1_4);
C_STATIC_ASSERT(offsetof(molt_host_api, task_start) == 600, host_api_phase_slot_1_5);
C_STATIC_ASSERT(offsetof(molt_host_api, analytics_track) == 608, host_api_last_slot_1_5);
C_STATIC_ASSERT(offsetof(molt_host_api, job_cancel) == 640, host_api_last_slot_1_6);
C_STATIC_ASSERT(offsetof(molt_host_api, live_get) == 656, host_api_last_slot_1_7);
C_STATIC_ASSERT(offsetof(molt_host_api, message_subscribe) == 672, host_api_messages_slot_1_9);
C_STATIC_ASSERT(offsetof(molt_host_api, kv_call) == 680, host_api_last_slot_1_9);
C_STATIC_ASSERT(offsetof(molt_host_api, client_pending) == 696, host_api_last_slot_1_10);
C_STATIC_ASSERT(offsetof(molt_host_api, grid_remove) == 808, host_api_last_slot_1_11);
C_STATIC_ASSERT(sizeof(molt_host_api) == 816, host_api_size);
C_STATIC_ASSERT(offsetof(molt_replica_spec, quantize) == 40, replica_spec_last_field_1_11);
C_STATIC_ASSERT(sizeof(molt_grid_spec) == 48, grid_spec_size);
C_STATIC_ASSERT(sizeof(molt_kv_op) == 80, kv_op_size);
C_STATIC_ASSERT(sizeof(molt_kv_result) == 56, kv_result_size);
C_STATIC_ASSERT(sizeof(molt_message_meta) == 32, message_meta_size);
C_STATIC_ASSERT(sizeof(molt_job_spec) == 64, job_spec_size);
C_STATIC_ASSERT(sizeof(molt_job_result) == 64, job_result_size);
C_STATIC_ASSERT(sizeof(molt_bytes_view) == 16, bytes_view_size);
C_STATIC_ASSERT(sizeof(molt_task_spec) == 24, task_spec_size);
C_STATIC_ASSERT(sizeof(molt_profile_spec) == 96, profile_spec_size);
C_STATIC_ASSERT(offsetof(molt_channel_spec, latest_wins) == 124, channel_spec_last_field_1_10);
C_STATIC_ASSERT(sizeof(molt_channel_spec) == 128, channel_spec_size);
C_STATIC_ASSERT(sizeof(molt_field_rule) == 48, field_rule_size);
C_STATIC_ASSERT(offsetof(molt_session_info, device_quality) == 88, session_info_last_field_1_12);
C_STATIC_ASSERT(sizeof(molt_session_info) == 96, session_info_size);
C_STATIC_ASSERT(sizeof(molt_process_options) == 24, process_options_size);
C_STATIC_ASSERT(offsetof(molt_plugin_info, description) == 104, info_last_field);
C_STATIC_ASSERT(offsetof(molt_plugin_info, oldest_state_version) == 112, info_last_field_1_3);
C_STATIC_ASSERT(offsetof(molt_plugin_info, self_test) == 120, info_last_field_1_8);
C_STATIC_ASSERT(sizeof(molt_plugin_info) == 128, info_size);

int main(void) {
  molt_host_api api;
  molt_value v;
  api.struct_size = (uint32_t)sizeof api;
  api.stats_json = NULL;
  v.type = MOLT_VALUE_DOUBLE;
  v.size = 0;
  v.as.d = 1.5;
  if (MOLT_API_HAS(&api, stats_json)) {
    fprintf(stderr, "MOLT_API_HAS accepted a NULL slot\n");
    return 1;
  }
  if (MOLT_ABI_MAJOR_OF(MOLT_ABI_VERSION_CURRENT) != MOLT_ABI_VERSION_MAJOR || v.as.d != 1.5) {
    fprintf(stderr, "version macros disagree\n");
    return 1;
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// The C entry points of molt/testkit.h over TestKit (test_kit.h): arguments checked and every
// exception caught with the kit every C entry point uses (abi/bridge.h: GuardedCall, Required,
// BytesArg), structs read by the struct-size rule, errors kept per kit.
#include <fmt/format.h>
#include <molt/testkit.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/struct_size.h"
#include "kernel/src/testkit/test_kit.h"

namespace molt::kernel::abi {

template <>
struct SizedStruct<molt_testkit_options> {
  static constexpr const char* kName = "molt_testkit_options";
  static constexpr const char* kSince = "test kit 1";
  static constexpr std::uint32_t kMinSize = 40;
};
template <>
struct SizedStruct<molt_testkit_hello> {
  static constexpr const char* kName = "molt_testkit_hello";
  static constexpr const char* kSince = "test kit 1";
  static constexpr std::uint32_t kMinSize = 48;
};
template <>
struct SizedStruct<molt_testkit_message> {
  static constexpr const char* kName = "molt_testkit_message";
  static constexpr const char* kSince = "test kit 1";
  static constexpr std::uint32_t kMinSize = 80;
};

}  // namespace molt::kernel::abi

struct molt_testkit {
  std::unique_ptr<molt::kernel::testkit::TestKit> kit;
  std::string error;
};

namespace {

using molt::kernel::Result;
using molt::kernel::Status;
using molt::kernel::abi::Required;
using molt::kernel::testkit::TestKit;
namespace kabi = molt::kernel::abi;

std::string g_create_error;  // molt_testkit_error(NULL): the last create's

molt_status_t Fail(molt_testkit* k, const Status& s) {
  k->error = s.message();
  return kabi::ToCode(s);
}

// Runs `body` (a Status) for `k` (abi/bridge.h's GuardedCall): its error kept on the kit, or
// cleared once it succeeds; every exception turned into one ("the test kit threw: ...").
template <class F>
molt_status_t Call(molt_testkit* k, F&& body) noexcept {
  if (k == nullptr) {
    g_create_error = "the kit is NULL: make one with molt_testkit_create";
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  const molt_status_t code = kabi::GuardedCall([k](const Status& s) { return Fail(k, s); },
                                               [&] { return body(*k->kit); }, "the test kit threw");
  if (code == MOLT_OK) {
    k->error.clear();
  }
  return code;
}

std::vector<std::string> Paths(const char* const* paths, size_t count) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    out.emplace_back(paths[i] != nullptr ? paths[i] : "");
  }
  return out;
}

}  // namespace

extern "C" {

molt_status_t molt_testkit_create(const molt_testkit_options* options, molt_testkit_t** out) {
  g_create_error.clear();
  if (out == nullptr) {
    g_create_error = "out is NULL";
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  try {
    molt::kernel::testkit::KitOptions o;
    if (options != nullptr) {
      Result<molt_testkit_options> given = kabi::ReadSized(*options);
      if (!given.ok()) {
        g_create_error = given.status().message();
        return MOLT_ERR_INVALID_ARGUMENT;
      }
      o.config_json = given->config_json != nullptr ? given->config_json : "";
      o.profile_db = given->profile_db != nullptr ? given->profile_db : "";
      o.tick_rate = given->tick_rate;
      if (given->echo_level != nullptr &&
          !molt::kernel::ParseLogLevel(given->echo_level, &o.echo)) {
        g_create_error = fmt::format(
            "echo_level \"{}\" is not a level: debug, info, warn, error or off", given->echo_level);
        return MOLT_ERR_INVALID_ARGUMENT;
      }
    }
    Result<std::unique_ptr<TestKit>> kit = TestKit::Create(std::move(o));
    if (!kit.ok()) {
      g_create_error = kit.status().message();
      return static_cast<molt_status_t>(kit.status().code());
    }
    *out = new molt_testkit{std::move(kit).value(), {}};
    return MOLT_OK;
  } catch (const std::exception& e) {
    g_create_error = std::string("the test kit threw: ") + e.what();
    return MOLT_ERR_INTERNAL;
  }
}

const char* molt_testkit_error(const molt_testkit_t* kit) {
  return kit != nullptr ? kit->error.c_str() : g_create_error.c_str();
}

void molt_testkit_destroy(molt_testkit_t* kit) { delete kit; }

molt_status_t molt_testkit_load(molt_testkit_t* kit, const char* const* paths, size_t count) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(paths, "paths"));
    return k.Load(Paths(paths, count));
  });
}

molt_status_t molt_testkit_swap(molt_testkit_t* kit, const char* const* paths, size_t count,
                                molt_bytes_fn report, void* user_data) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(paths, "paths"));
    std::string json;
    Status s = k.Swap(Paths(paths, count), &json);
    if (report != nullptr && !json.empty()) {
      report(user_data, json.data(), json.size());
    }
    return s;
  });
}

molt_status_t molt_testkit_self_test(molt_testkit_t* kit, molt_bytes_fn report, void* user_data) {
  return Call(kit, [&](TestKit& k) {
    std::string json;
    Status s = k.SelfTest(&json);
    if (report != nullptr && !json.empty()) {
      report(user_data, json.data(), json.size());
    }
    return s;
  });
}

molt_status_t molt_testkit_close(molt_testkit_t* kit) {
  return Call(kit, [](TestKit& k) { return k.Close(); });
}

molt_status_t molt_testkit_advance(molt_testkit_t* kit, double seconds) {
  return Call(kit, [&](TestKit& k) {
    if (!(seconds >= 0) || seconds > 1e9) {
      return Status::InvalidArgument(
          fmt::format("advance by {} seconds: time moves forward, by 0 to 1e9 seconds", seconds));
    }
    return k.Advance(molt::kernel::Seconds(seconds));
  });
}

double molt_testkit_now(const molt_testkit_t* kit) {
  return kit != nullptr ? kit->kit->now_seconds() : 0;
}

molt_status_t molt_testkit_join(molt_testkit_t* kit, const molt_testkit_hello* hello,
                                molt_session_t* out) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(hello, "hello"));
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    *out = 0;
    MOLT_ASSIGN_OR_RETURN(molt_testkit_hello h, kabi::ReadSized(*hello));
    MOLT_RETURN_IF_ERROR(Required(h.user, "hello.user"));
    MOLT_ASSIGN_OR_RETURN(std::span<const std::uint8_t> credentials,
                          kabi::BytesArg(h.credentials, h.credentials_size, "hello.credentials"));
    MOLT_ASSIGN_OR_RETURN(std::span<const std::uint8_t> join_data,
                          kabi::BytesArg(h.join_data, h.join_data_size, "hello.join_data"));
    MOLT_ASSIGN_OR_RETURN(*out, k.Join(h.user, credentials, join_data));
    return Status::Ok();
  });
}

molt_status_t molt_testkit_leave(molt_testkit_t* kit, molt_session_t session) {
  return Call(kit, [&](TestKit& k) { return k.Leave(session); });
}

molt_status_t molt_testkit_intent(molt_testkit_t* kit, molt_session_t session, const char* channel,
                                  const void* payload, size_t size) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(channel, "channel"));
    MOLT_ASSIGN_OR_RETURN(std::span<const std::uint8_t> bytes,
                          kabi::BytesArg(payload, size, "payload"));
    return k.Intent(session, channel, bytes);
  });
}

molt_status_t molt_testkit_request(molt_testkit_t* kit, molt_session_t session, const char* channel,
                                   const void* payload, size_t size, uint32_t* out_id) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(channel, "channel"));
    MOLT_ASSIGN_OR_RETURN(std::span<const std::uint8_t> bytes,
                          kabi::BytesArg(payload, size, "payload"));
    std::uint32_t id = 0;
    Status s = k.Request(session, channel, bytes, &id);
    if (out_id != nullptr) {
      *out_id = id;
    }
    return s;
  });
}

int32_t molt_testkit_next(molt_testkit_t* kit, molt_session_t session, molt_testkit_message* out) {
  bool got = false;
  const molt_status_t s = Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    MOLT_RETURN_IF_ERROR(kabi::CheckStructSize<molt_testkit_message>(out->struct_size));
    Status error;
    const TestKit::Message* m = k.Next(session, &error);
    if (m == nullptr) {
      return error;
    }
    molt_testkit_message v{};
    v.struct_size = sizeof v;
    v.kind = m->kind;
    v.channel = m->channel.c_str();
    v.request_id = m->request_id;
    v.status = m->status;
    v.payload = m->payload.data();
    v.size = m->payload.size();
    v.reason = m->reason.c_str();
    v.text = m->text.c_str();
    v.retry_after = m->retry_after;
    v.args = m->args.data();
    v.arg_count = m->args.size();
    got = true;
    return kabi::WriteSized(v, out);
  });
  return s == MOLT_OK && got ? 1 : 0;
}

molt_status_t molt_testkit_watch(molt_testkit_t* kit, const char* pattern) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(pattern, "pattern"));
    return k.Watch(pattern);
  });
}

namespace {

// A replica field of the wanted type, or why not.
Result<molt_value> ReplicaOf(TestKit& k, molt_session_t session, const char* replica,
                             const char* field, std::int32_t type) {
  MOLT_RETURN_IF_ERROR(Required(replica, "replica"));
  MOLT_RETURN_IF_ERROR(Required(field, "field"));
  MOLT_ASSIGN_OR_RETURN(molt_value v, k.ReplicaField(session, replica, field));
  if (v.type != type) {
    static constexpr const char* kTypes[] = {"nil", "bool", "int", "float", "string", "bytes"};
    return Status::InvalidArgument(
        fmt::format("field \"{}\" of replica \"{}\" holds {}: read it with molt_testkit_replica_{}",
                    field, replica, kTypes[v.type], kTypes[v.type]));
  }
  return v;
}

}  // namespace

molt_status_t molt_testkit_replica_int(molt_testkit_t* kit, molt_session_t session,
                                       const char* replica, const char* field, int64_t* out) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    MOLT_ASSIGN_OR_RETURN(molt_value v, ReplicaOf(k, session, replica, field, MOLT_VALUE_INT));
    *out = v.as.i;
    return Status::Ok();
  });
}

molt_status_t molt_testkit_replica_float(molt_testkit_t* kit, molt_session_t session,
                                         const char* replica, const char* field, double* out) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    MOLT_ASSIGN_OR_RETURN(molt_value v, ReplicaOf(k, session, replica, field, MOLT_VALUE_DOUBLE));
    *out = v.as.d;
    return Status::Ok();
  });
}

molt_status_t molt_testkit_replica_bytes(molt_testkit_t* kit, molt_session_t session,
                                         const char* replica, const char* field, molt_bytes_fn sink,
                                         void* user_data) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    MOLT_ASSIGN_OR_RETURN(molt_value v, ReplicaOf(k, session, replica, field, MOLT_VALUE_BYTES));
    sink(user_data, v.as.ptr, v.size);
    return Status::Ok();
  });
}

molt_status_t molt_testkit_profile(molt_testkit_t* kit, const char* store, const char* user,
                                   molt_bytes_fn sink, void* user_data) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(store, "store"));
    MOLT_RETURN_IF_ERROR(Required(user, "user"));
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    MOLT_ASSIGN_OR_RETURN(std::string doc, k.Profile(store, user));
    sink(user_data, doc.data(), doc.size());
    return Status::Ok();
  });
}

molt_status_t molt_testkit_publish(molt_testkit_t* kit, const char* topic, const molt_value* args,
                                   size_t count) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(topic, "topic"));
    MOLT_RETURN_IF_ERROR(kabi::BytesArg(args, count, "args").status());
    return k.Publish(topic, std::span<const molt_value>(args, args != nullptr ? count : 0));
  });
}

molt_status_t molt_testkit_set_live(molt_testkit_t* kit, const char* key, const char* json) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(key, "key"));
    return k.SetLive(key, json != nullptr ? std::optional<std::string_view>(json) : std::nullopt);
  });
}

molt_status_t molt_testkit_stats(molt_testkit_t* kit, molt_bytes_fn sink, void* user_data) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    const std::string json = k.StatsJson();
    sink(user_data, json.data(), json.size());
    return Status::Ok();
  });
}

molt_status_t molt_testkit_logs(molt_testkit_t* kit, molt_bytes_fn sink, void* user_data) {
  return Call(kit, [&](TestKit& k) {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    const std::string lines = k.TakeLogs();
    sink(user_data, lines.data(), lines.size());
    return Status::Ok();
  });
}

}  // extern "C"

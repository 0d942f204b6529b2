// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/client.cc
//
// libmolt_client's C entry points (sdk/include/molt/client.h): thin shims over Connection
// (connection.h). Each checks its pointers, calls the connection, and turns a failed Status into
// its code and the client's error text; no exception crosses into the app. The definitions match
// client.h's declarations, which stay as released (a `noexcept` there would retype them for C++
// callers), so the guarantee is in the bodies: each runs inside Guard() (noexcept, catching
// everything) or a try block, or cannot throw.
#include <molt/client.h>

#include <cmath>
#include <exception>
#include <span>
#include <string>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/client/connection.h"

struct molt_client {
  explicit molt_client(const molt_client_options& o) : connection(o) {}
  molt::kernel::client::Connection connection;
  std::string error;  // molt_client_last_error
};

namespace {

using molt::kernel::Duration;
using molt::kernel::Result;
using molt::kernel::Status;
using molt::kernel::abi::Bytes;
using molt::kernel::abi::BytesArg;
using molt::kernel::abi::Required;
using molt::kernel::abi::SecondsArg;
using molt::kernel::client::Connection;
using molt::kernel::client::Predictions;

// `s` as a code, its text on `c`.
molt_status_t Report(molt_client& c, const Status& s) {
  if (s.ok()) {
    return MOLT_OK;
  }
  c.error = s.message();
  return molt::kernel::abi::ToCode(s);
}

// Runs `body(connection)` for a non-null client; its Status (or an exception) becomes a code with
// the text on the client.
template <class F>
molt_status_t Guard(molt_client* c, F&& body) noexcept {
  if (c == nullptr) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  c->error.clear();
  return molt::kernel::abi::GuardedCall([c](const Status& s) { return Report(*c, s); },
                                        [&] { return body(c->connection); });
}

// Copies the value of a field of `type` (member `value` of its Field) to `out`.
template <class T>
molt_status_t ReadField(molt_client* client, molt_client_replica_t replica, std::int32_t field,
                        std::int32_t type, T molt::kernel::client::ReplicaStore::Field::*value,
                        T* out) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    MOLT_ASSIGN_OR_RETURN(const molt::kernel::client::ReplicaStore::Field* f,
                          c.replicas().FieldAt(replica, field, type));
    *out = f->*value;
    return Status::Ok();
  });
}

}  // namespace

extern "C" {

molt_status_t molt_client_create(const molt_client_options* options, molt_client** out) {
  if (out == nullptr) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  molt_client_options o{};
  if (options != nullptr) {
    // An app built against an older client.h passes a shorter struct: the rest stays zero.
    Result<molt_client_options> given = molt::kernel::abi::ReadSized(*options);
    if (!given.ok()) {
      return MOLT_ERR_INVALID_ARGUMENT;
    }
    o = *given;
  }
  try {
    *out = new molt_client(o);
    return MOLT_OK;
  } catch (...) {
    return MOLT_ERR_INTERNAL;
  }
}

void molt_client_destroy(molt_client* c) {
  delete c;  // ~Connection is noexcept: controllers stop inside their guards, callbacks are dropped
}

const char* molt_client_last_error(const molt_client* c) {
  return c == nullptr ? "" : c->error.c_str();
}

molt_status_t molt_client_connect(molt_client* client, const char* host, std::uint16_t port,
                                  const char* user, const void* credentials,
                                  std::size_t credentials_size, const void* join_data,
                                  std::size_t join_size) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(host, "host"));
    MOLT_RETURN_IF_ERROR(Required(user, "user"));
    if ((credentials_size > 0 && credentials == nullptr) ||
        (join_size > 0 && join_data == nullptr)) {
      return Status::InvalidArgument("credentials or join_data is NULL with a size");
    }
    return c.Connect(host, port, user, Bytes(credentials, credentials_size),
                     Bytes(join_data, join_size));
  });
}

molt_status_t molt_client_disconnect(molt_client* client) {
  return Guard(client, [](Connection& c) {
    c.Disconnect();
    return Status::Ok();
  });
}

molt_status_t molt_client_step(molt_client* client, double budget_seconds) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(SecondsArg(budget_seconds, "budget_seconds").status());
    c.Step(budget_seconds);
    return Status::Ok();
  });
}

std::int32_t molt_client_state(const molt_client* c) {
  return c == nullptr ? MOLT_CLIENT_IDLE : c->connection.state();
}

std::uint64_t molt_client_session(const molt_client* c) {
  return c == nullptr ? 0 : c->connection.session();
}

double molt_client_rtt(const molt_client* c) { return c == nullptr ? 0 : c->connection.rtt(); }

molt_status_t molt_client_channel(molt_client* client, const char* name, std::uint16_t* out) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(name, "name"));
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    Result<std::uint16_t> id = c.ChannelId(name);
    if (id.ok()) {
      *out = *id;
    }
    return id.status();
  });
}

molt_status_t molt_client_intent(molt_client* client, std::uint16_t channel, const void* data,
                                 std::size_t size) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    return c.SendIntent(channel, payload);
  });
}

molt_status_t molt_client_request(molt_client* client, std::uint16_t channel, const void* data,
                                  std::size_t size, double timeout_seconds,
                                  molt_client_response_fn fn, void* user_data) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(fn), "fn"));
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    MOLT_RETURN_IF_ERROR(SecondsArg(timeout_seconds, "timeout_seconds").status());
    return c.SendRequest(channel, payload, timeout_seconds,
                         [fn, user_data](molt_status_t status, std::span<const std::uint8_t> p) {
                           fn(user_data, status, p.data(), p.size());
                         });
  });
}

molt_status_t molt_client_on_event(molt_client* client, std::uint16_t channel,
                                   molt_client_event_fn fn, void* user_data) {
  return Guard(client, [&](Connection& c) {
    c.OnEvent(channel, fn, user_data);
    return Status::Ok();
  });
}

molt_status_t molt_client_on_state(molt_client* client, molt_client_state_fn fn, void* user_data) {
  return Guard(client, [&](Connection& c) {
    c.OnState(fn, user_data);
    return Status::Ok();
  });
}

// --- Predicted intents (client API 8) ------------------------------------------------------------

molt_status_t molt_client_predict(molt_client* client, std::uint16_t channel, const void* data,
                                  std::size_t size, std::uint32_t* out_seq) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_ASSIGN_OR_RETURN(const auto payload, BytesArg(data, size));
    MOLT_ASSIGN_OR_RETURN(const std::uint32_t seq, c.SendPredicted(channel, payload));
    if (out_seq != nullptr) {
      *out_seq = seq;
    }
    return Status::Ok();
  });
}

molt_status_t molt_client_on_resolved(molt_client* client, molt_client_resolved_fn fn,
                                      void* user_data) {
  return Guard(client, [&](Connection& c) {
    c.OnResolved(fn, user_data);
    return Status::Ok();
  });
}

molt_status_t molt_client_pending(molt_client* client, std::uint16_t channel,
                                  molt_client_pending_fn fn, void* user_data) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(fn), "fn"));
    for (const Predictions::Pending& p : c.PendingPredictions(channel)) {
      fn(user_data, p.channel, p.seq, p.payload.data(), p.payload.size());
    }
    return Status::Ok();
  });
}

// --- The device's quality (client API 9) --------------------------------------------------------

molt_status_t molt_client_set_device_quality(molt_client* client, double quality) {
  return Guard(client, [&](Connection& c) { return c.SetDeviceQuality(quality); });
}

// --- Replicas ------------------------------------------------------------------------------------

molt_status_t molt_client_on_replica(molt_client* client, const char* name,
                                     molt_client_replica_fn fn, void* user_data) {
  return Guard(client, [&](Connection& c) {
    c.OnReplica(name != nullptr ? name : "", fn, user_data);
    return Status::Ok();
  });
}

molt_status_t molt_client_replica_find(molt_client* client, const char* name,
                                       molt_client_replica_t* out) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(name, "name"));
    MOLT_RETURN_IF_ERROR(Required(out, "out"));
    Result<std::uint32_t> id = c.replicas().FindByName(name);
    if (id.ok()) {
      *out = *id;
    }
    return id.status();
  });
}

const char* molt_client_replica_name(molt_client* c, molt_client_replica_t replica) {
  if (c == nullptr) {
    return nullptr;
  }
  const molt::kernel::client::ReplicaStore::Replica* r = c->connection.replicas().Find(replica);
  return r == nullptr ? nullptr : r->name.c_str();
}

molt_status_t molt_client_replica_field(molt_client* client, molt_client_replica_t replica,
                                        const char* field_name, std::int32_t* out_index,
                                        std::int32_t* out_type) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(field_name, "field_name"));
    return c.replicas().FieldIndex(replica, field_name, out_index, out_type);
  });
}

molt_status_t molt_client_replica_int(molt_client* client, molt_client_replica_t replica,
                                      std::int32_t field, std::int64_t* out) {
  return ReadField(client, replica, field, MOLT_CLIENT_FIELD_INT,
                   &molt::kernel::client::ReplicaStore::Field::i, out);
}

molt_status_t molt_client_replica_float(molt_client* client, molt_client_replica_t replica,
                                        std::int32_t field, double* out) {
  return ReadField(client, replica, field, MOLT_CLIENT_FIELD_FLOAT,
                   &molt::kernel::client::ReplicaStore::Field::f, out);
}

molt_status_t molt_client_replica_bytes(molt_client* client, molt_client_replica_t replica,
                                        std::int32_t field, const void** out_data,
                                        std::size_t* out_size) {
  return Guard(client, [&](Connection& c) -> Status {
    if (out_data == nullptr || out_size == nullptr) {
      return Status::InvalidArgument("out_data or out_size is NULL");
    }
    Result<const molt::kernel::client::ReplicaStore::Field*> f =
        c.replicas().FieldAt(replica, field, MOLT_CLIENT_FIELD_BYTES);
    if (f.ok()) {
      *out_data = (*f)->bytes.data();
      *out_size = (*f)->bytes.size();
    }
    return f.status();
  });
}

// --- Controllers ---------------------------------------------------------------------------------

molt_status_t molt_client_load_controllers(molt_client* client, const char* path) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(path, "path"));
    Result<molt::kernel::client::ClientKernel*> k = c.Controllers();
    return k.ok() ? (*k)->Load(path) : k.status();
  });
}

molt_status_t molt_client_add_controller(molt_client* client, molt_plugin_entry_fn entry) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(entry), "entry"));
    Result<molt::kernel::client::ClientKernel*> k = c.Controllers();
    return k.ok() ? (*k)->Add(entry) : k.status();
  });
}

molt_status_t molt_client_start(molt_client* client) {
  return Guard(client, [&](Connection& c) -> Status {
    molt::kernel::client::ClientKernel* k = c.controllers_if_booted();
    if (k == nullptr) {
      return Status::FailedPrecondition(
          "no controller to start: molt_client_load_controllers or molt_client_add_controller "
          "first");
    }
    return k->Start();
  });
}

molt_status_t molt_client_reload_controllers(molt_client* client, const char* path) {
  return Guard(client, [&](Connection& c) -> Status {
    MOLT_RETURN_IF_ERROR(Required(path, "path"));
    molt::kernel::client::ClientKernel* k = c.controllers_if_booted();
    if (k == nullptr) {
      return Status::FailedPrecondition(
          "no controllers run: load and start them first (molt_client_load_controllers, "
          "molt_client_start)");
    }
    return k->Reload(path);
  });
}

// --- Event-loop integration ----------------------------------------------------------------------

std::int32_t molt_client_socket(const molt_client* c) {
  return c == nullptr ? -1 : c->connection.socket();
}

std::int32_t molt_client_socket_events(const molt_client* c) {
  return c == nullptr ? 0 : c->connection.socket_events();
}

double molt_client_timeout(molt_client* c) {
  try {
    return c == nullptr ? -1 : c->connection.Timeout();
  } catch (...) {
    return 0;  // step now: the step reports what went wrong
  }
}

molt_status_t molt_client_wait(molt_client* client, double max_seconds) {
  return Guard(client, [&](Connection& c) { return c.Wait(max_seconds); });
}

std::size_t molt_client_send_queue_bytes(const molt_client* c) {
  return c == nullptr ? 0 : c->connection.queued_bytes();
}

}  // extern "C"

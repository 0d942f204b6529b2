// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/client/client.cc
//
// libmolt_client: the client side of the wire (sdk/include/molt/client.h). One molt_client owns
// an Asio io_context that only molt_client_step runs, so I/O and every callback happen on the
// app's thread, inside step. The server is not trusted either: every frame is verified before it
// is read, and a frame over the client's cap ends the connection.
#include <molt/client.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kernel/src/abi/plugin_instance.h"
#include "kernel/src/abi/struct_size.h"
#include "kernel/src/client/client_kernel.h"
#include "kernel/src/core/token_bucket.h"
#include "kernel/src/wire/wire.h"
#include "molt_wire_generated.h"

template <>
struct molt::kernel::abi::SizedStruct<molt_client_options> {
  static constexpr const char* kName = "molt_client_options";
  static constexpr const char* kSince = "client API 1";
  static constexpr std::uint32_t kMinSize = 24;
};

namespace {

namespace asio = boost::asio;
namespace fb = ::flatbuffers;
namespace w = ::molt::wire;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using molt::kernel::TokenBucket;

constexpr std::uint32_t kMaxInboundFrame = 16u << 20;  // the client's own cap on server frames
// What a server may make the client hold: the server's own replica limits, and a count.
constexpr std::size_t kMaxReplicasHeld = 4096;
constexpr std::size_t kMaxReplicaFields = 64;
constexpr std::size_t kMaxReplicaName = 128;
constexpr double kDefaultConnectTimeout = 10;
constexpr std::size_t kDefaultSendQueue = 1 << 20;
constexpr double kFirstReconnectDelay = 0.1;
constexpr double kDefaultReconnectMax = 8;

// Seconds as a duration, clamped to [0, 11 days] so no conversion overflows.
std::chrono::nanoseconds Seconds(double s) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::clamp(s, 0.0, 1e6) * 1e9));
}

}  // namespace

struct molt_client final : molt::kernel::client::ClientPort {
  struct Channel {
    std::string name;
    w::ChannelKind kind = w::ChannelKind::Intent;
    double timeout_seconds = 15;
    TokenBucket bucket{0, 1, Clock::time_point()};
  };
  struct Pending {
    molt_client_response_fn fn;
    void* user_data;
    Clock::time_point deadline;
    // A controller's request (ClientPort::Request): called instead of fn.
    std::function<void(molt_status_t, const void*, std::size_t)> done = nullptr;

    void Answer(molt_status_t status, const void* data, std::size_t size) const {
      if (done) {
        done(status, data, size);
      } else {
        fn(user_data, status, data, size);
      }
    }
  };
  struct Handler {
    molt_client_event_fn fn = nullptr;
    void* user_data = nullptr;
  };
  struct Replica {
    std::string name;
    struct Field {
      std::string name;
      std::int32_t type = MOLT_CLIENT_FIELD_INT;
      std::int64_t i = 0;
      double f = 0;
      std::vector<std::uint8_t> bytes;
    };
    std::vector<Field> fields;
  };
  struct ReplicaListener {
    std::string name;  // empty: every replica
    molt_client_replica_fn fn;
    void* user_data;
  };

  explicit molt_client(const molt_client_options& o)
      : connect_timeout(o.connect_timeout_seconds > 0 ? o.connect_timeout_seconds
                                                      : kDefaultConnectTimeout),
        max_send_queue(o.max_send_queue_bytes > 0 ? o.max_send_queue_bytes : kDefaultSendQueue),
        reconnect((o.flags & MOLT_CLIENT_NO_RECONNECT) == 0),
        reconnect_max(o.reconnect_max_seconds > 0 ? o.reconnect_max_seconds
                                                  : kDefaultReconnectMax) {}

  molt_status_t Fail(molt_status_t code, std::string text) {
    error = std::move(text);
    return code;
  }

  // --- Connection ---

  // Starts one attempt: resolve, connect, Hello. A first connect announces CONNECTING; a
  // reconnect stays RECONNECTING until the Welcome.
  void Connect(const std::string& h, std::uint16_t p) {
    const std::uint64_t gen = ++generation;
    host = h;
    port = p;
    attempting = true;
    if (state != MOLT_CLIENT_RECONNECTING) {
      SetState(MOLT_CLIENT_CONNECTING, "");
    }
    connect_deadline = Clock::now() + Seconds(connect_timeout);
    target = host + ":" + std::to_string(port);
    resolver.async_resolve(
        host, std::to_string(port),
        [this, gen](boost::system::error_code ec, tcp::resolver::results_type r) {
          if (gen != generation) {
            return;
          }
          if (ec) {
            return Lost("cannot resolve " + target + ": " + ec.message());
          }
          asio::async_connect(socket, r,
                              [this, gen](boost::system::error_code e, const tcp::endpoint&) {
                                if (gen == generation) {
                                  OnConnected(e);
                                }
                              });
        });
  }

  void OnConnected(boost::system::error_code ec) {
    if (ec) {
      return Lost("cannot connect to " + target + ": " + ec.message());
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    linked = true;
    last_receive = Clock::now();
    // The Hello goes first; what the app queued while the link was down waits for the Welcome.
    fb::FlatBufferBuilder b(256);
    auto hello = w::CreateHelloDirect(b, w::kProtocolVersion, 0, user.c_str(), &credentials,
                                      &join_data, &resume_token);
    b.FinishSizePrefixed(w::CreateEnvelope(b, w::Body::Hello, hello.Union()));
    out.insert(out.begin(), b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
    Flush();
    Read();
  }

  void Read() {
    const std::uint64_t gen = generation;
    socket.async_read_some(
        asio::buffer(in), [this, gen](boost::system::error_code ec, std::size_t n) {
          if (gen != generation) {
            return;
          }
          if (ec) {
            return Lost(ec == asio::error::eof ? "the server closed the connection"
                                               : "connection lost: " + ec.message());
          }
          last_receive = Clock::now();
          rx.insert(rx.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
          Parse(gen);
          if (gen == generation) {
            Read();
          }
        });
  }

  void Parse(std::uint64_t gen) {
    std::size_t at = 0;
    while (gen == generation && rx.size() - at >= 4) {
      std::uint32_t size = 0;
      std::memcpy(&size, rx.data() + at, 4);
      if (size == 0 || size > kMaxInboundFrame) {
        return Closed("the server sent a frame of " + std::to_string(size) + " bytes");
      }
      if (rx.size() - at < 4 + std::size_t{size}) {
        break;
      }
      Frame(std::span<const std::uint8_t>(rx.data() + at, 4 + std::size_t{size}));
      at += 4 + std::size_t{size};
    }
    if (gen == generation) {
      rx.erase(rx.begin(), rx.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }

  void Frame(std::span<const std::uint8_t> frame) {
    frame = w::Aligned(frame, frame_scratch);
    fb::Verifier v(frame.data(), frame.size(), w::ServerEnvelopeVerifierOptions());
    const w::Envelope* env =
        w::VerifySizePrefixedEnvelopeBuffer(v) ? w::GetSizePrefixedEnvelope(frame.data()) : nullptr;
    if (env == nullptr || env->body() == nullptr) {
      return Closed("the server sent a malformed frame");
    }
    auto bytes = [this](const fb::Vector<std::uint8_t>* p) {
      return p == nullptr ? std::span<const std::uint8_t>()
                          : w::Aligned(std::span(p->data(), p->size()), payload_scratch);
    };
    switch (env->body_type()) {
      case w::Body::Welcome:
        return OnWelcome(env->body_as_Welcome());
      case w::Body::Refuse: {
        const w::Refuse* r = env->body_as_Refuse();
        const std::string why = std::string(w::EnumNameRefuseReason(r->reason())) + ": " +
                                (r->text() ? r->text()->str() : "");
        const bool passing = r->reason() == w::RefuseReason::RateLimited ||
                             r->reason() == w::RefuseReason::ServerFull ||
                             r->reason() == w::RefuseReason::ShuttingDown;
        if (state == MOLT_CLIENT_RECONNECTING && passing) {
          // A busy server is not the end of a session being resumed: try again later.
          backoff = std::max(backoff, r->retry_after_ms() / 1000.0);
          return Lost(why);
        }
        return Closed(why);
      }
      case w::Body::Bye: {
        const w::Bye* m = env->body_as_Bye();
        return Closed((m->reason() ? m->reason()->str() : "Bye") + ": " +
                      (m->text() ? m->text()->str() : ""));
      }
      case w::Body::Event: {
        const w::Event* e = env->body_as_Event();
        const std::span<const std::uint8_t> payload = bytes(e->payload());
        Handler h = handlers.count(e->channel()) ? handlers[e->channel()] : all_channels;
        const std::uint64_t gen = generation;
        if (h.fn != nullptr) {
          h.fn(h.user_data, e->channel(), payload.data(), payload.size());
        }
        if (kernel && gen == generation) {  // the controllers' Bus
          if (auto ch = channels.find(e->channel()); ch != channels.end()) {
            kernel->Event(e->channel(), ch->second.name, payload);
          }
        }
        return;
      }
      case w::Body::Response: {
        const w::Response* r = env->body_as_Response();
        auto it = pending.find(r->id());
        if (it == pending.end()) {
          return;  // answered late, after our own timeout
        }
        const Pending p = it->second;
        pending.erase(it);
        const std::span<const std::uint8_t> payload = bytes(r->payload());
        p.Answer(r->status(), payload.data(), payload.size());
        return;
      }
      case w::Body::Ping: {
        if (queued() > max_send_queue) {
          return;  // a server that pings and never reads does not grow our queue
        }
        const w::Ping* m = env->body_as_Ping();
        fb::FlatBufferBuilder b(64);
        Queue(b, w::Body::Pong, w::CreatePong(b, m->seq(), m->time_ns()).Union());
        return;
      }
      case w::Body::Pong: {
        const w::Pong* m = env->body_as_Pong();
        const auto now = Clock::now().time_since_epoch().count();
        const auto sent = static_cast<std::int64_t>(m->time_ns());
        if (m->seq() == ping_seq && sent > 0 && sent <= now) {
          const double sample = static_cast<double>(now - sent) * 1e-9;
          rtt = rtt == 0 ? sample : (rtt * 7 + sample) / 8;
        }
        return;
      }
      case w::Body::Replica:
        return OnReplica(env->body_as_Replica());
      case w::Body::Error:
        return;  // the server dropped something we sent (counted there); nothing to do here
      case w::Body::Hello:
      case w::Body::Intent:
      case w::Body::Request:
        return Closed("the server sent a client-to-server message");
      default:
        return;  // a body from a newer server: ignored, so appending one never breaks clients
    }
  }

  // --- Replicas ---

  void OnReplica(const w::Replica* m) {
    const std::uint32_t id = m->id();
    switch (m->kind()) {
      case w::ReplicaUpdateKind::Snapshot: {
        const std::size_t fields = m->fields() != nullptr ? m->fields()->size() : 0;
        const std::size_t name = m->name() != nullptr ? m->name()->size() : 0;
        if (fields > kMaxReplicaFields || name > kMaxReplicaName ||
            (replicas.count(id) == 0 && replicas.size() >= kMaxReplicasHeld)) {
          return Closed("the server sent a replica beyond the client's limits (" +
                        std::to_string(kMaxReplicasHeld) + " replicas, " +
                        std::to_string(kMaxReplicaFields) + " fields, names of " +
                        std::to_string(kMaxReplicaName) + " bytes)");
        }
        Replica r;
        r.name = m->name() != nullptr ? m->name()->str() : "";
        if (m->fields() != nullptr) {
          for (const w::ReplicaFieldInfo* f : *m->fields()) {
            Replica::Field field;
            field.name = f->name() != nullptr ? f->name()->str() : "";
            field.type = static_cast<std::int32_t>(f->type());
            r.fields.push_back(std::move(field));
          }
        }
        replicas[id] = std::move(r);
        Apply(replicas[id], m, nullptr);
        return NotifyReplica(id, MOLT_CLIENT_REPLICA_SNAPSHOT, -1);
      }
      case w::ReplicaUpdateKind::Delta: {
        auto it = replicas.find(id);
        if (it == replicas.end()) {
          return;  // no snapshot for it: nothing to apply a delta to
        }
        std::vector<std::int32_t> changed;
        Apply(it->second, m, &changed);
        const std::uint64_t gen = generation;
        for (std::int32_t field : changed) {
          NotifyReplica(id, MOLT_CLIENT_REPLICA_CHANGED, field);
          if (gen != generation || replicas.count(id) == 0) {
            return;  // a callback disconnected
          }
        }
        return;
      }
      case w::ReplicaUpdateKind::Remove:
        if (replicas.count(id) != 0) {
          NotifyReplica(id, MOLT_CLIENT_REPLICA_REMOVED, -1);
          replicas.erase(id);
        }
        return;
    }
  }

  // Copies the message's values into `r`; a value for a field it does not have, or of another
  // type, is ignored.
  static void Apply(Replica& r, const w::Replica* m, std::vector<std::int32_t>* changed) {
    if (m->values() == nullptr) {
      return;
    }
    for (const w::ReplicaValue* v : *m->values()) {
      if (v->field() >= r.fields.size()) {
        continue;
      }
      Replica::Field& f = r.fields[v->field()];
      switch (f.type) {
        case MOLT_CLIENT_FIELD_INT:
          f.i = v->int_value();
          break;
        case MOLT_CLIENT_FIELD_FLOAT:
          f.f = v->float_value();
          break;
        case MOLT_CLIENT_FIELD_BYTES:
          if (v->bytes() != nullptr) {
            f.bytes.assign(v->bytes()->begin(), v->bytes()->end());
          } else {
            f.bytes.clear();
          }
          break;
        default:
          continue;
      }
      if (changed != nullptr) {
        changed->push_back(v->field());
      }
    }
  }

  void NotifyReplica(std::uint32_t id, std::int32_t what, std::int32_t field) {
    const std::string& name = replicas[id].name;
    const ReplicaListener* exact = nullptr;
    const ReplicaListener* any = nullptr;
    for (const ReplicaListener& l : replica_listeners) {
      if (l.name.empty()) {
        any = &l;
      } else if (l.name == name) {
        exact = &l;
      }
    }
    // Copies: the callback may replace its own listener.
    const ReplicaListener* chosen[] = {exact, any};
    ReplicaListener calls[2];
    int n = 0;
    for (const ReplicaListener* l : chosen) {
      if (l != nullptr) {
        calls[n++] = *l;
      }
    }
    const std::uint64_t gen = generation;
    for (int i = 0; i < n && gen == generation && replicas.count(id) != 0; ++i) {
      calls[i].fn(calls[i].user_data, id, what, field);
    }
    if (kernel && gen == generation) {  // the controllers' Bus
      if (auto it = replicas.find(id); it != replicas.end()) {
        kernel->ReplicaUpdate(it->second.name, id, what, field);
      }
    }
  }

  // The session is new (not resumed): what the old one was sent is gone.
  void DropReplicas() {
    std::vector<std::uint32_t> held;
    for (const auto& [id, r] : replicas) {
      held.push_back(id);
    }
    for (std::uint32_t id : held) {
      if (replicas.count(id) != 0) {
        NotifyReplica(id, MOLT_CLIENT_REPLICA_REMOVED, -1);
        replicas.erase(id);
      }
    }
  }

  void OnWelcome(const w::Welcome* wel) {
    if (!attempting) {
      return Closed("the server sent a second welcome");
    }
    attempting = false;
    const bool was_reconnecting = state == MOLT_CLIENT_RECONNECTING;
    const bool resumed = was_reconnecting && wel->resumed() && wel->session_id() == session;
    if (was_reconnecting && !resumed) {
      // The old session is gone: nobody will answer its requests, and what was queued for it
      // (with its channel ids) is not sent to the new one.
      ClearBacklog();
      const std::uint64_t gen = generation;
      FailPending();
      if (gen != generation) {
        return;  // a callback disconnected
      }
    }
    if (!resumed && !replicas.empty()) {
      const std::uint64_t gen = generation;
      DropReplicas();
      if (gen != generation) {
        return;
      }
    }
    session = wel->session_id();
    resume_token.clear();
    if (wel->resume_token() != nullptr) {
      resume_token.assign(wel->resume_token()->begin(), wel->resume_token()->end());
    }
    backoff = kFirstReconnectDelay;
    max_frame = wel->max_frame_bytes();
    ping_interval = wel->ping_interval_ms() / 1000.0;
    channels.clear();
    ids.clear();
    const auto now = Clock::now();
    if (wel->channels() != nullptr) {
      for (const w::ChannelInfo* info : *wel->channels()) {
        if (info->name() == nullptr) {
          continue;
        }
        Channel c;
        c.name = info->name()->str();
        c.kind = info->kind();
        c.timeout_seconds = info->timeout_ms() / 1000.0;
        c.bucket = TokenBucket(info->rate(), info->burst(), now);
        ids[c.name] = info->id();
        channels[info->id()] = std::move(c);
      }
    }
    next_ping = now + Seconds(ping_interval > 0 ? ping_interval : 1);
    bytes_per_tick = wel->bytes_per_tick();
    messages_per_tick = wel->messages_per_tick();
    if (resumed) {  // what the app sent while the link was down goes now, after the Welcome
      out.insert(out.end(), backlog.begin(), backlog.end());
      ClearBacklog();
      Flush();
    }
    SetState(MOLT_CLIENT_CONNECTED, !was_reconnecting ? ""
                                    : resumed
                                        ? "resumed"
                                        : "a new session: the server did not resume the old one");
  }

  // The server ended it (Refuse, Bye): no retry.
  void Closed(const std::string& reason) {
    state = MOLT_CLIENT_CLOSED;  // before the requests' callbacks: they may not send any more
    Teardown();
    SetState(MOLT_CLIENT_CLOSED, reason);
  }

  // The link failed. With a session to resume (and reconnect on) the client retries after a
  // backoff with jitter; otherwise it is closed.
  void Lost(const std::string& reason) {
    const bool had_session = state == MOLT_CLIENT_CONNECTED || state == MOLT_CLIENT_RECONNECTING;
    if (!reconnect || !had_session) {
      return Closed(reason);
    }
    DropTransport();
    std::uniform_real_distribution<double> jitter(0.75, 1.25);
    next_attempt = Clock::now() + Seconds(backoff * jitter(rng));
    backoff = std::min(backoff * 2, reconnect_max);
    if (state != MOLT_CLIENT_RECONNECTING) {
      SetState(MOLT_CLIENT_RECONNECTING, reason);
    }
  }

  // Closes the socket; what is queued and the requests in flight stay for the next link.
  void DropTransport() {
    ++generation;  // completions of the old connection are ignored from here on
    attempting = false;
    linked = false;
    boost::system::error_code ignored;
    resolver.cancel();
    socket.close(ignored);
    socket = tcp::socket(io);
    rx.clear();
    writing.clear();  // on the wire when the link broke: may be lost
  }

  void ClearBacklog() {
    backlog.clear();
    backlog_frames = 0;
    backlog_per_channel.clear();
  }

  // Every request in flight is answered MOLT_ERR_TIMEOUT.
  void FailPending() {
    auto requests = std::move(pending);
    pending.clear();
    for (auto& [id, p] : requests) {
      p.Answer(MOLT_ERR_TIMEOUT, nullptr, 0);
    }
  }

  // Best effort, without waiting: a Bye written now, before the socket closes, so the server ends
  // the session at once instead of keeping it for a resume. Nothing when a write is in flight
  // (the Bye cannot be put behind it without waiting).
  void SayBye() {
    if (state != MOLT_CLIENT_CONNECTED || !writing.empty()) {
      return;
    }
    fb::FlatBufferBuilder b(64);
    b.FinishSizePrefixed(
        w::CreateEnvelope(b, w::Body::Bye, w::CreateByeDirect(b, "ClientClosed", "").Union()));
    out.insert(out.end(), b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
    boost::system::error_code ignored;
    socket.non_blocking(true, ignored);
    asio::write(socket, asio::buffer(out), ignored);
  }

  // Runs the I/O (no app callback is left) until the write in flight is done, for at most 50 ms,
  // so a Bye can follow it.
  void FinishWrites() {
    const auto deadline = Clock::now() + std::chrono::milliseconds(50);
    io.restart();
    while (!writing.empty() && linked && Clock::now() < deadline) {
      if (io.poll_one() == 0) {
        std::this_thread::yield();
      }
    }
  }

  // Drops the connection, the queue, the session and every pending request.
  void Teardown() {
    DropTransport();
    out.clear();
    ClearBacklog();
    session = 0;
    resume_token.clear();
    backoff = kFirstReconnectDelay;
    FailPending();
  }

  void SetState(std::int32_t s, const std::string& reason) {
    state = s;
    if (state_fn != nullptr) {
      state_fn(state_user, s, reason.c_str());
    }
    if (kernel) {
      kernel->State(s, reason);
    }
  }

  // --- ClientPort: what controllers ask of the connection ---

  molt::kernel::Status Code(molt_status_t code) const {
    return code == MOLT_OK ? molt::kernel::Status::Ok()
                           : molt::kernel::Status(molt::kernel::abi::AbiCode(code), error);
  }

  molt::kernel::Result<std::uint16_t> ChannelId(std::string_view name) {
    if (state != MOLT_CLIENT_CONNECTED && state != MOLT_CLIENT_RECONNECTING) {
      return molt::kernel::Status::FailedPrecondition(
          "not connected: channels come with the server's welcome");
    }
    auto it = ids.find(std::string(name));
    if (it == ids.end()) {
      return molt::kernel::Status::NotFound("the server has no channel \"" + std::string(name) +
                                            "\"");
    }
    return it->second;
  }

  molt::kernel::Status Intent(std::string_view channel,
                              std::span<const std::uint8_t> payload) override {
    molt::kernel::Result<std::uint16_t> id = ChannelId(channel);
    if (!id.ok()) {
      return id.status();
    }
    return Code(molt_client_intent(this, *id, payload.data(), payload.size()));
  }

  molt::kernel::Status Request(
      std::string_view channel, std::span<const std::uint8_t> payload, double timeout_seconds,
      molt::kernel::Callback<void(molt_status_t, std::string_view)> done) override {
    molt::kernel::Result<std::uint16_t> id = ChannelId(channel);
    if (!id.ok()) {
      return id.status();
    }
    const std::uint32_t request = next_request;
    const molt_status_t code = molt_client_request(
        this, *id, payload.data(), payload.size(), timeout_seconds,
        [](void*, molt_status_t, const void*, std::size_t) {}, nullptr);
    if (code != MOLT_OK) {
      return Code(code);
    }
    auto box = std::make_shared<decltype(done)>(std::move(done));
    pending.at(request).done = [box](molt_status_t status, const void* data, std::size_t size) {
      (*box)(status, std::string_view(static_cast<const char*>(data), data != nullptr ? size : 0));
    };
    return molt::kernel::Status::Ok();
  }

  molt::kernel::Status ReplicaValue(std::string_view replica, std::string_view field,
                                    molt_value* out) override {
    for (auto& [id, r] : replicas) {
      if (r.name != replica) {
        continue;
      }
      for (Replica::Field& f : r.fields) {
        if (f.name != field) {
          continue;
        }
        *out = molt_value{};
        if (f.type == MOLT_CLIENT_FIELD_INT) {
          out->type = MOLT_VALUE_INT;
          out->as.i = f.i;
        } else if (f.type == MOLT_CLIENT_FIELD_FLOAT) {
          out->type = MOLT_VALUE_DOUBLE;
          out->as.d = f.f;
        } else {
          out->type = MOLT_VALUE_BYTES;
          out->size = static_cast<std::uint32_t>(f.bytes.size());
          out->as.ptr = f.bytes.data();
        }
        return molt::kernel::Status::Ok();
      }
      return molt::kernel::Status::NotFound("replica \"" + r.name + "\" has no field \"" +
                                            std::string(field) + "\"");
    }
    return molt::kernel::Status::NotFound("no replica \"" + std::string(replica) +
                                          "\" is held (not sent yet, or not to this session)");
  }

  // --- Outbound ---

  // Queues a frame; the app's intents and requests wait in the backlog while reconnecting.
  void Queue(fb::FlatBufferBuilder& b, w::Body type, fb::Offset<void> body) {
    b.FinishSizePrefixed(w::CreateEnvelope(b, type, body));
    const bool app = type == w::Body::Intent || type == w::Body::Request;
    std::vector<std::uint8_t>& to = app && state == MOLT_CLIENT_RECONNECTING ? backlog : out;
    to.insert(to.end(), b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
    Flush();
  }

  void Flush() {
    if (!linked || !writing.empty() || out.empty()) {
      return;
    }
    writing.swap(out);
    const std::uint64_t gen = generation;
    asio::async_write(socket, asio::buffer(writing),
                      [this, gen](boost::system::error_code ec, std::size_t) {
                        if (gen != generation) {
                          return;
                        }
                        writing.clear();
                        if (ec) {
                          return Lost("connection lost: " + ec.message());
                        }
                        Flush();
                      });
  }

  std::size_t queued() const { return out.size() + writing.size() + backlog.size(); }

  // --- Timers, checked once per step ---

  void Timers() {
    const auto now = Clock::now();
    if (attempting && now > connect_deadline) {
      return Lost("timed out connecting to " + target + " (connect_timeout_seconds)");
    }
    if (state == MOLT_CLIENT_RECONNECTING && !attempting && now >= next_attempt) {
      Connect(host, port);
    }
    if (state != MOLT_CLIENT_CONNECTED && state != MOLT_CLIENT_RECONNECTING) {
      return;
    }
    for (auto it = pending.begin(); it != pending.end();) {
      if (now >= it->second.deadline) {
        const Pending p = it->second;
        it = pending.erase(it);
        p.Answer(MOLT_ERR_TIMEOUT, nullptr, 0);
        if (state != MOLT_CLIENT_CONNECTED && state != MOLT_CLIENT_RECONNECTING) {
          return;
        }
      } else {
        ++it;
      }
    }
    const double silence = 3 * (ping_interval > 0 ? ping_interval : 1) + 2;
    if (state == MOLT_CLIENT_CONNECTED && linked && now - last_receive > Seconds(silence)) {
      return Lost("nothing from the server for " + std::to_string(static_cast<int>(silence)) +
                  " s");
    }
    if (state == MOLT_CLIENT_CONNECTED && now >= next_ping) {
      next_ping = now + Seconds(ping_interval > 0 ? ping_interval : 1);
      fb::FlatBufferBuilder b(64);
      const auto t = static_cast<std::uint64_t>(now.time_since_epoch().count());
      Queue(b, w::Body::Ping, w::CreatePing(b, ++ping_seq, t).Union());
    }
  }

  asio::io_context io;
  tcp::resolver resolver{io};
  tcp::socket socket{io};
  std::uint64_t generation = 0;
  double connect_timeout;
  std::size_t max_send_queue;
  bool reconnect;
  double reconnect_max;
  double backoff = kFirstReconnectDelay;
  bool attempting = false;  // an attempt (resolve, connect, Hello) waits for its Welcome
  Clock::time_point next_attempt{};
  std::minstd_rand rng{std::random_device{}()};
  std::string host;
  std::uint16_t port = 0;
  std::vector<std::uint8_t> resume_token;
  bool linked = false;  // TCP connected: frames may be written (the Hello first)
  // While reconnecting: the app's frames, kept within one tick of the server's budgets and each
  // channel's burst, so the resumed burst is never a flood or a rate-limit rejection.
  std::vector<std::uint8_t> backlog;
  std::uint32_t backlog_frames = 0;
  std::unordered_map<std::uint16_t, std::uint32_t> backlog_per_channel;
  std::uint32_t bytes_per_tick = 8192;
  std::uint32_t messages_per_tick = 64;
  std::int32_t state = MOLT_CLIENT_IDLE;
  std::string error;
  std::string target;
  std::string user;
  std::vector<std::uint8_t> credentials;
  std::vector<std::uint8_t> join_data;
  Clock::time_point connect_deadline{};
  Clock::time_point last_receive{};
  Clock::time_point next_ping{};
  std::vector<std::uint8_t> in = std::vector<std::uint8_t>(16 * 1024);
  std::vector<std::uint8_t> rx;
  std::vector<std::uint8_t> out;
  std::vector<std::uint8_t> writing;
  std::vector<std::uint64_t> frame_scratch;
  std::vector<std::uint64_t> payload_scratch;
  std::uint64_t session = 0;
  std::uint32_t max_frame = 8192;
  double ping_interval = 1;
  std::uint32_t ping_seq = 0;
  double rtt = 0;
  std::unordered_map<std::uint16_t, Channel> channels;
  std::unordered_map<std::string, std::uint16_t> ids;
  std::uint32_t next_request = 1;
  std::map<std::uint32_t, Pending> pending;
  std::unordered_map<std::uint16_t, Handler> handlers;
  Handler all_channels;
  std::map<std::uint32_t, Replica> replicas;
  std::vector<ReplicaListener> replica_listeners;
  molt_client_state_fn state_fn = nullptr;
  void* state_user = nullptr;
  // The process's client kernel, when this client loaded or added controllers.
  std::unique_ptr<molt::kernel::client::ClientKernel> kernel;
};

namespace {

// Runs `body` for a non-null client; exceptions become MOLT_ERR_INTERNAL with their text.
template <class F>
molt_status_t Guard(molt_client* c, F&& body) noexcept {
  if (c == nullptr) {
    return MOLT_ERR_INVALID_ARGUMENT;
  }
  try {
    c->error.clear();
    return body(*c);
  } catch (const std::exception& e) {
    return c->Fail(MOLT_ERR_INTERNAL, e.what());
  } catch (...) {
    return c->Fail(MOLT_ERR_INTERNAL, "unknown exception");
  }
}

// The channel `id` of `kind` for a send of `size` bytes; an error code (with text) otherwise.
molt_status_t CheckSend(molt_client& c, std::uint16_t id, w::ChannelKind kind, const void* data,
                        std::size_t size, molt_client::Channel** out) {
  if (c.state != MOLT_CLIENT_CONNECTED && c.state != MOLT_CLIENT_RECONNECTING) {
    return c.Fail(MOLT_ERR_STATE, "not connected");
  }
  if (size > 0 && data == nullptr) {
    return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "data is NULL with size > 0");
  }
  auto it = c.channels.find(id);
  if (it == c.channels.end() || it->second.kind != kind) {
    return c.Fail(MOLT_ERR_NOT_FOUND,
                  "the server has no " +
                      std::string(kind == w::ChannelKind::Intent ? "intent" : "request") +
                      " channel with id " + std::to_string(id));
  }
  if (size + 64 > c.max_frame) {
    return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "a payload of " + std::to_string(size) +
                                                 " bytes does not fit the server's " +
                                                 std::to_string(c.max_frame) + "-byte frames");
  }
  if (c.queued() + size > c.max_send_queue) {
    return c.Fail(MOLT_ERR_STATE, "the send queue is full (" + std::to_string(c.queued()) +
                                      " bytes; max_send_queue_bytes)");
  }
  const bool down = c.state == MOLT_CLIENT_RECONNECTING;
  const double burst = it->second.bucket.unlimited() ? 1e9 : it->second.bucket.burst();
  if (down &&
      (c.backlog_frames + 1 > c.messages_per_tick ||
       c.backlog.size() + size + 64 > c.bytes_per_tick || c.backlog_per_channel[id] + 1 > burst)) {
    return c.Fail(MOLT_ERR_STATE,
                  "the link is down and " + std::to_string(c.backlog_frames) +
                      " messages wait for it (the server's per-tick budget and the channel's "
                      "burst): try again once reconnected");
  }
  if (!it->second.bucket.Take(Clock::now())) {
    return c.Fail(MOLT_ERR_RATE_LIMITED, "channel \"" + it->second.name + "\" allows " +
                                             std::to_string(it->second.bucket.rate()) +
                                             " per second: the server would refuse this one");
  }
  if (down) {
    ++c.backlog_per_channel[id];
    ++c.backlog_frames;
  }
  *out = &it->second;
  return MOLT_OK;
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
    molt::kernel::Result<molt_client_options> given = molt::kernel::abi::ReadSized(*options);
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
  if (c == nullptr) {
    return;
  }
  c->kernel.reset();      // controllers stop first: they may still send
  c->state_fn = nullptr;  // no callbacks from a client being destroyed
  c->handlers.clear();
  c->all_channels = {};
  c->replica_listeners.clear();
  for (auto& [id, p] : c->pending) {
    p.fn = [](void*, molt_status_t, const void*, std::size_t) {};
    p.done = nullptr;
  }
  c->FinishWrites();  // what the controllers sent as they stopped, then the Bye
  c->SayBye();        // like molt_client_disconnect: the server ends the session now
  c->Teardown();
  delete c;
}

const char* molt_client_last_error(const molt_client* c) {
  return c == nullptr ? "" : c->error.c_str();
}

molt_status_t molt_client_connect(molt_client* client, const char* host, std::uint16_t port,
                                  const char* user, const void* credentials,
                                  std::size_t credentials_size, const void* join_data,
                                  std::size_t join_size) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (host == nullptr || user == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, host == nullptr ? "host is NULL" : "user is NULL");
    }
    if ((credentials_size > 0 && credentials == nullptr) ||
        (join_size > 0 && join_data == nullptr)) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "credentials or join_data is NULL with a size");
    }
    if (c.state == MOLT_CLIENT_CONNECTING || c.state == MOLT_CLIENT_CONNECTED ||
        c.state == MOLT_CLIENT_RECONNECTING) {
      return c.Fail(MOLT_ERR_STATE, "already connecting or connected: disconnect first");
    }
    c.user = user;
    const auto* cr = static_cast<const std::uint8_t*>(credentials);
    const auto* jd = static_cast<const std::uint8_t*>(join_data);
    c.credentials.assign(cr, cr + (cr != nullptr ? credentials_size : 0));
    c.join_data.assign(jd, jd + (jd != nullptr ? join_size : 0));
    c.Connect(host, port);
    return MOLT_OK;
  });
}

molt_status_t molt_client_disconnect(molt_client* client) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (c.state == MOLT_CLIENT_IDLE || c.state == MOLT_CLIENT_CLOSED) {
      c.state = MOLT_CLIENT_IDLE;
      return MOLT_OK;
    }
    c.SayBye();
    c.state = MOLT_CLIENT_IDLE;  // before the requests' callbacks: they may not send any more
    c.Teardown();
    c.SetState(MOLT_CLIENT_IDLE, "disconnected by the app");
    return MOLT_OK;
  });
}

molt_status_t molt_client_step(molt_client* client, double budget_seconds) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (!(budget_seconds >= 0) || !std::isfinite(budget_seconds)) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "budget_seconds must be a finite number >= 0");
    }
    const auto deadline = Clock::now() + Seconds(budget_seconds);
    c.io.restart();
    do {
      if (c.io.poll_one() == 0) {
        break;
      }
    } while (Clock::now() < deadline);
    c.Timers();
    if (c.kernel && c.kernel->started()) {
      // Controllers: what the I/O left of the budget, and at least a quarter of it; a zero
      // budget ("what is ready now") runs them under the kernel's own frame budget.
      const auto quarter = std::chrono::duration_cast<Clock::duration>(Seconds(budget_seconds) / 4);
      c.kernel->Step(budget_seconds == 0
                         ? std::nullopt
                         : std::optional(std::max(quarter, deadline - Clock::now())));
    }
    return MOLT_OK;
  });
}

std::int32_t molt_client_state(const molt_client* c) {
  return c == nullptr ? MOLT_CLIENT_IDLE : c->state;
}

std::uint64_t molt_client_session(const molt_client* c) { return c == nullptr ? 0 : c->session; }

double molt_client_rtt(const molt_client* c) { return c == nullptr ? 0 : c->rtt; }

molt_status_t molt_client_channel(molt_client* client, const char* name, std::uint16_t* out) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (name == nullptr || out == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, name == nullptr ? "name is NULL" : "out is NULL");
    }
    if (c.state != MOLT_CLIENT_CONNECTED && c.state != MOLT_CLIENT_RECONNECTING) {
      return c.Fail(MOLT_ERR_STATE, "not connected: channels come with the server's welcome");
    }
    auto it = c.ids.find(name);  // while reconnecting: the last welcome's table
    if (it == c.ids.end()) {
      return c.Fail(MOLT_ERR_NOT_FOUND, "the server has no channel \"" + std::string(name) + "\"");
    }
    *out = it->second;
    return MOLT_OK;
  });
}

molt_status_t molt_client_intent(molt_client* client, std::uint16_t channel, const void* data,
                                 std::size_t size) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    molt_client::Channel* ch = nullptr;
    if (molt_status_t s = CheckSend(c, channel, w::ChannelKind::Intent, data, size, &ch);
        s != MOLT_OK) {
      return s;
    }
    fb::FlatBufferBuilder b(64 + size);
    auto payload = w::PayloadVector(
        b, std::span(static_cast<const std::uint8_t*>(data), data != nullptr ? size : 0));
    c.Queue(b, w::Body::Intent, w::CreateIntent(b, channel, payload).Union());
    return MOLT_OK;
  });
}

molt_status_t molt_client_request(molt_client* client, std::uint16_t channel, const void* data,
                                  std::size_t size, double timeout_seconds,
                                  molt_client_response_fn fn, void* user_data) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (fn == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "fn is NULL");
    }
    if (!(timeout_seconds >= 0) || !std::isfinite(timeout_seconds)) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "timeout_seconds must be a finite number >= 0");
    }
    molt_client::Channel* ch = nullptr;
    if (molt_status_t s = CheckSend(c, channel, w::ChannelKind::Request, data, size, &ch);
        s != MOLT_OK) {
      return s;
    }
    // The server answers MOLT_ERR_TIMEOUT at the channel's timeout; our own deadline is a second
    // later, for a server that does not answer at all.
    const double timeout = timeout_seconds > 0 ? timeout_seconds : ch->timeout_seconds + 1;
    const std::uint32_t id = c.next_request++;
    c.pending[id] = {fn, user_data, Clock::now() + Seconds(timeout)};
    fb::FlatBufferBuilder b(64 + size);
    auto payload = w::PayloadVector(
        b, std::span(static_cast<const std::uint8_t*>(data), data != nullptr ? size : 0));
    c.Queue(b, w::Body::Request, w::CreateRequest(b, channel, id, payload).Union());
    return MOLT_OK;
  });
}

molt_status_t molt_client_on_event(molt_client* client, std::uint16_t channel,
                                   molt_client_event_fn fn, void* user_data) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (channel == MOLT_CLIENT_ALL_CHANNELS) {
      c.all_channels = {fn, user_data};
    } else if (fn == nullptr) {
      c.handlers.erase(channel);
    } else {
      c.handlers[channel] = {fn, user_data};
    }
    return MOLT_OK;
  });
}

molt_status_t molt_client_on_state(molt_client* client, molt_client_state_fn fn, void* user_data) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    c.state_fn = fn;
    c.state_user = user_data;
    return MOLT_OK;
  });
}

// --- Replicas ---

namespace {

// The held replica `id`'s field `field` of type `type`, or a failure on `c`.
molt_client::Replica::Field* ReplicaField(molt_client& c, molt_client_replica_t id,
                                          std::int32_t field, std::int32_t type,
                                          molt_status_t* status) {
  static const char* kTypes[] = {"int", "float", "bytes"};
  auto it = c.replicas.find(id);
  if (it == c.replicas.end()) {
    *status = c.Fail(MOLT_ERR_NOT_FOUND, "replica " + std::to_string(id) + " is not held");
    return nullptr;
  }
  molt_client::Replica& r = it->second;
  if (field < 0 || static_cast<std::size_t>(field) >= r.fields.size()) {
    *status = c.Fail(MOLT_ERR_INVALID_ARGUMENT, "replica \"" + r.name + "\" has no field " +
                                                    std::to_string(field) + " (it has " +
                                                    std::to_string(r.fields.size()) + ")");
    return nullptr;
  }
  molt_client::Replica::Field& f = r.fields[static_cast<std::size_t>(field)];
  if (f.type != type) {
    *status = c.Fail(MOLT_ERR_INVALID_ARGUMENT,
                     "replica \"" + r.name + "\": field \"" + f.name + "\" is " +
                         (f.type >= 0 && f.type <= 2 ? kTypes[f.type] : "unknown") + ", not " +
                         kTypes[type]);
    return nullptr;
  }
  *status = MOLT_OK;
  return &f;
}

extern "C++" {
// Copies the value of a field of `type` (member `value` of its Field) to `out`.
template <class T>
molt_status_t ReadField(molt_client* client, molt_client_replica_t replica, std::int32_t field,
                        std::int32_t type, T molt_client::Replica::Field::*value, T* out) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (out == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    molt_status_t status = MOLT_OK;
    if (const auto* f = ReplicaField(c, replica, field, type, &status)) {
      *out = f->*value;
    }
    return status;
  });
}
}  // extern "C++"

}  // namespace

molt_status_t molt_client_on_replica(molt_client* client, const char* name,
                                     molt_client_replica_fn fn, void* user_data) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    const std::string key = name != nullptr ? name : "";
    std::erase_if(c.replica_listeners, [&](const auto& l) { return l.name == key; });
    if (fn == nullptr) {
      return MOLT_OK;
    }
    c.replica_listeners.push_back({key, fn, user_data});
    // Replicas that arrived before anyone listened (spec: early packets are buffered).
    std::vector<std::uint32_t> held;
    for (const auto& [id, r] : c.replicas) {
      if (key.empty() || r.name == key) {
        held.push_back(id);
      }
    }
    for (std::uint32_t id : held) {
      if (c.replicas.count(id) != 0) {
        fn(user_data, id, MOLT_CLIENT_REPLICA_SNAPSHOT, -1);
      }
    }
    return MOLT_OK;
  });
}

molt_status_t molt_client_replica_find(molt_client* client, const char* name,
                                       molt_client_replica_t* out) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (name == nullptr || out == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, name == nullptr ? "name is NULL" : "out is NULL");
    }
    for (const auto& [id, r] : c.replicas) {
      if (r.name == name) {
        *out = id;
        return MOLT_OK;
      }
    }
    return c.Fail(MOLT_ERR_NOT_FOUND, "no replica \"" + std::string(name) +
                                          "\" is held (not sent yet, or not to this session)");
  });
}

const char* molt_client_replica_name(molt_client* c, molt_client_replica_t replica) {
  if (c == nullptr) {
    return nullptr;
  }
  auto it = c->replicas.find(replica);
  return it == c->replicas.end() ? nullptr : it->second.name.c_str();
}

molt_status_t molt_client_replica_field(molt_client* client, molt_client_replica_t replica,
                                        const char* field_name, std::int32_t* out_index,
                                        std::int32_t* out_type) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (field_name == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "field_name is NULL");
    }
    auto it = c.replicas.find(replica);
    if (it == c.replicas.end()) {
      return c.Fail(MOLT_ERR_NOT_FOUND, "replica " + std::to_string(replica) + " is not held");
    }
    const auto& fields = it->second.fields;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == field_name) {
        if (out_index != nullptr) {
          *out_index = static_cast<std::int32_t>(i);
        }
        if (out_type != nullptr) {
          *out_type = fields[i].type;
        }
        return MOLT_OK;
      }
    }
    return c.Fail(MOLT_ERR_NOT_FOUND,
                  "replica \"" + it->second.name + "\" has no field \"" + field_name + "\"");
  });
}

molt_status_t molt_client_replica_int(molt_client* client, molt_client_replica_t replica,
                                      std::int32_t field, std::int64_t* out) {
  return ReadField(client, replica, field, MOLT_CLIENT_FIELD_INT, &molt_client::Replica::Field::i,
                   out);
}

molt_status_t molt_client_replica_float(molt_client* client, molt_client_replica_t replica,
                                        std::int32_t field, double* out) {
  return ReadField(client, replica, field, MOLT_CLIENT_FIELD_FLOAT, &molt_client::Replica::Field::f,
                   out);
}

molt_status_t molt_client_replica_bytes(molt_client* client, molt_client_replica_t replica,
                                        std::int32_t field, const void** out_data,
                                        std::size_t* out_size) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (out_data == nullptr || out_size == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "out_data or out_size is NULL");
    }
    molt_status_t status = MOLT_OK;
    const auto* f = ReplicaField(c, replica, field, MOLT_CLIENT_FIELD_BYTES, &status);
    if (f != nullptr) {
      *out_data = f->bytes.data();
      *out_size = f->bytes.size();
    }
    return status;
  });
}

// --- Controllers ---

namespace {

// The client kernel of `c`, booted on first use; nullptr (with the error on `c`) when another
// client of this process already booted the process's kernel.
molt::kernel::client::ClientKernel* KernelOf(molt_client& c) {
  if (!c.kernel) {
    auto k = molt::kernel::client::ClientKernel::Boot(c);
    if (!k.ok()) {
      // The only way to fail: the process's kernel is already booted, by another client.
      c.Fail(MOLT_ERR_STATE,
             "another client of this process runs the controllers: one client kernel per process");
      return nullptr;
    }
    c.kernel = std::move(k).value();
  }
  return c.kernel.get();
}

// `s` as a code, its text on `c`.
molt_status_t Reported(molt_client& c, const molt::kernel::Status& s) {
  return s.ok() ? MOLT_OK : c.Fail(molt::kernel::abi::ToCode(s), s.message());
}

}  // namespace

molt_status_t molt_client_load_controllers(molt_client* client, const char* path) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (path == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "path is NULL");
    }
    auto* k = KernelOf(c);
    return k == nullptr ? MOLT_ERR_STATE : Reported(c, k->Load(path));
  });
}

molt_status_t molt_client_add_controller(molt_client* client, molt_plugin_entry_fn entry) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (entry == nullptr) {
      return c.Fail(MOLT_ERR_INVALID_ARGUMENT, "entry is NULL");
    }
    auto* k = KernelOf(c);
    return k == nullptr ? MOLT_ERR_STATE : Reported(c, k->Add(entry));
  });
}

molt_status_t molt_client_start(molt_client* client) {
  return Guard(client, [&](molt_client& c) -> molt_status_t {
    if (!c.kernel) {
      return c.Fail(MOLT_ERR_STATE,
                    "no controller to start: molt_client_load_controllers or "
                    "molt_client_add_controller first");
    }
    return Reported(c, c.kernel->Start());
  });
}

}  // extern "C"

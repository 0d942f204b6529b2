// SPDX-License-Identifier: Apache-2.0
// FrontDoor (front_door.h): a connection's admission, refusals, and the Hello that turns it into
// a session, new or resumed.
#include "kernel/src/net/front_door.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/datagram_links.h"
#include "kernel/src/net/frames.h"
#include "kernel/src/net/handshake_slots.h"
#include "kernel/src/net/link.h"
#include "kernel/src/net/link_table.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/peer.h"
#include "kernel/src/net/redirection.h"
#include "kernel/src/net/replica.h"
#include "kernel/src/wire/datagram_seal.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

constexpr std::size_t kMaxUserId = 64;

// 16 bytes from the operating system's generator: a resume token nobody can guess.
std::vector<std::uint8_t> NewResumeToken() {
  static std::random_device device;
  std::vector<std::uint8_t> token(16);
  for (std::size_t i = 0; i < token.size(); i += 4) {
    const std::uint32_t r = device();
    std::memcpy(token.data() + i, &r, 4);
  }
  return token;
}

bool ValidUserId(std::string_view user) {
  if (user.empty() || user.size() > kMaxUserId) {
    return false;
  }
  for (unsigned char c : user) {
    if (c < 0x20 || c == 0x7f) {
      return false;
    }
  }
  return true;
}

}  // namespace

FrontDoor::FrontDoor(Kernel& kernel, const NetOptions& options, NetStats& stats,
                     ChannelRegistry& channels, Sessions& sessions, Replicas& replicas,
                     LinkTable& links, HandshakeSlots& slots, Redirection& redirection,
                     DatagramLinks& datagrams)
    : kernel_(kernel),
      options_(options),
      stats_(stats),
      channels_(channels),
      sessions_(sessions),
      replicas_(replicas),
      links_(links),
      slots_(slots),
      redirection_(redirection),
      datagrams_(datagrams),
      load_(kernel.scheduler(), options),
      auth_point_(kernel.hooks().Define("Auth.Hello", Hooks::Mode::kFailClosed)),
      resumed_topic_(kernel.bus().Resolve("Kernel.SessionResumed")) {}

bool FrontDoor::authenticates() const { return kernel_.hooks().handler_count(auth_point_) > 0; }

// --- Admission ---------------------------------------------------------------------------------

void FrontDoor::Admit(Peer& peer, TimePoint now) {
  ++stats_.connections_accepted;
  if (double retry = 0; !slots_.TakeRate(peer.address(), now, &retry)) {
    ++stats_.refused_handshake_rate;
    Refuse(peer, w::RefuseReason::RateLimited,
           fmt::format("too many connections from {}; retry later", peer.address()), retry);
    return;
  }
  // Every slot taken while the server is overloaded: the waiting connections are not idle but
  // unserved, so the newcomer is the one told to come back later.
  if (slots_.size() >= std::max<std::size_t>(options_.max_half_open, 1) && load_.Overloaded()) {
    RefuseOverloaded(peer);
    return;
  }
  MakeHandshakeRoom(peer.address());
  slots_.Enter(peer);
}

// Slots: a connection that says Hello promptly is never kept out by connections that do not.
// Whoever holds slots without a Hello has them taken back oldest first, so keeping a client out
// means opening more connections than the slots within that client's round trip (docs/network.md).
void FrontDoor::MakeHandshakeRoom(const std::string& address) {
  auto evict = [&](Peer& p, w::RefuseReason reason, std::string text) {
    ++stats_.half_open_evicted;
    Refuse(p, reason, text, 1);
  };
  const std::size_t per_address = std::max<std::size_t>(options_.max_half_open_per_address, 1);
  if (Peer* oldest = slots_.OldestOf(address, per_address)) {
    evict(*oldest, w::RefuseReason::RateLimited,
          fmt::format("{} connections from {} are waiting to join "
                      "(net.max_half_open_per_address) and this one waited longest without "
                      "a hello; retry",
                      per_address, address));
  }
  const std::size_t total = std::max<std::size_t>(options_.max_half_open, 1);
  if (Peer* oldest = slots_.OldestWhenFull(total)) {
    evict(*oldest, w::RefuseReason::ServerFull,
          fmt::format("{} connections are waiting to join (net.max_half_open) and this one "
                      "waited longest without a hello; retry",
                      total));
  }
}

void FrontDoor::Refuse(Peer& peer, w::RefuseReason reason, std::string_view text,
                       double retry_after) {
  if (peer.link().closed) {
    return;
  }
  ++stats_.handshakes_refused;
  peer.link().refused = true;
  links_.NoteRefusal(w::EnumNameRefuseReason(reason), peer.address(), text);
  fb::FlatBufferBuilder b(128);
  links_.SendFrame(peer, RefuseFrame(b, reason, text, retry_after));
  links_.End(peer, ExitReason::kProtocolError, text);
}

std::vector<std::uint8_t> FrontDoor::RefuseOverCapacity(const std::string& address,
                                                        std::string_view why) {
  ++stats_.connections_accepted;
  ++stats_.handshakes_refused;
  ++stats_.refused_no_descriptors;
  links_.NoteRefusal("OutOfDescriptors", address, why);
  fb::FlatBufferBuilder b(128);
  const std::span<const std::uint8_t> frame =
      RefuseFrame(b, w::RefuseReason::ServerFull, "the server is at capacity; retry", 5);
  stats_.bytes_out += frame.size();
  return {frame.begin(), frame.end()};
}

// --- The Hello ---------------------------------------------------------------------------------

void FrontDoor::OnHello(Peer& peer, const w::Hello& hello) {
  std::string user = hello.user() == nullptr ? std::string() : hello.user()->str();
  if (!Acceptable(peer, hello, user)) {
    return;
  }
  const auto token = w::BytesOf(hello.resume_token());
  if (Resumable(token, user) == nullptr && !HasRoom(peer)) {
    return;
  }
  if (!Authenticate(peer, hello, &user)) {
    return;
  }
  Session* resume = Resumable(token, user);  // the token is only good for the user it was issued to
  if (resume == nullptr) {
    // The user is back without resuming (a restarted game): the session their lost link left
    // waiting will not be resumed. It ends now, so what it holds (a profile's lease) is free for
    // the new one instead of waiting out net.resume_window_seconds.
    stats_.resumes_superseded += links_.EndWaitingOf(user);
  }
  // A lost link's client comes back: the same session, its bindings and data intact, and what
  // was sent to it meanwhile.
  if (resume != nullptr) {
    resume->grade_.SayDevice(hello.device_quality());
    Welcome(peer, *resume, /*resuming=*/true);
    return;
  }
  const auto join = w::BytesOf(hello.join_data());
  Session& s =
      sessions_.Create(std::move(user), std::vector<std::uint8_t>(join.begin(), join.end()),
                       peer.address(), kernel_.scheduler().Now());
  s.grade_.SayDevice(hello.device_quality());  // before the Welcome: plugins may read it
  Welcome(peer, s, /*resuming=*/false);
}

bool FrontDoor::Acceptable(Peer& peer, const w::Hello& hello, std::string_view user) {
  if (hello.protocol_version() != w::kProtocolVersion) {
    Refuse(peer, w::RefuseReason::ProtocolVersion,
           fmt::format("protocol version {} is not supported: this server speaks {}",
                       hello.protocol_version(), w::kProtocolVersion),
           0);
    return false;
  }
  // Before the channel table is compared: while nothing serves, the table is not the game's.
  if (kernel_.shutting_down() || links_.shut_down() || closing_) {
    Refuse(peer, w::RefuseReason::ShuttingDown, "the server is shutting down", 0);
    return false;
  }
  if (!serving_) {
    Refuse(peer, w::RefuseReason::Starting,
           "the server is starting: no plugin generation serves yet", 1);
    return false;
  }
  const std::uint64_t hash = channels_.ProtocolHash();
  if (hello.protocol_hash() != 0 && hello.protocol_hash() != hash) {
    Refuse(peer, w::RefuseReason::ProtocolHash,
           fmt::format("the client's channel table (hash {:016x}) differs from the "
                       "server's ({:016x}): update the client",
                       hello.protocol_hash(), hash),
           0);
    return false;
  }
  if (!ValidUserId(user)) {
    Refuse(peer, w::RefuseReason::BadHello,
           fmt::format("the user id must be 1..{} printable characters", kMaxUserId), 0);
    return false;
  }
  return true;
}

bool FrontDoor::HasRoom(Peer& peer) {
  if (draining_) {  // only the sessions here may come back
    Refuse(peer, w::RefuseReason::ShuttingDown, redirection_.RefusalText(), 0);
    return false;
  }
  if (load_.Overloaded()) {
    RefuseOverloaded(peer);
    return false;
  }
  if (sessions_.count() >= options_.max_sessions) {
    Refuse(peer, w::RefuseReason::ServerFull,
           fmt::format("the server is full ({} sessions)", options_.max_sessions), 5);
    return false;
  }
  return true;
}

void FrontDoor::RefuseOverloaded(Peer& peer) {
  // One generator per kernel thread (a test process may run several servers at once).
  thread_local std::minstd_rand spread(std::random_device{}());
  const double retry = options_.overload_retry_after_seconds *
                       std::uniform_real_distribution<double>(0.75, 1.25)(spread);
  ++stats_.refused_overloaded;
  Refuse(peer, w::RefuseReason::Overloaded,
         fmt::format("the server is overloaded: new sessions are refused until it catches up; "
                     "retry in {:.1f} s",
                     retry),
         retry);
}

bool FrontDoor::Authenticate(Peer& peer, const w::Hello& hello, std::string* user) {
  if (!authenticates()) {
    if (options_.auth == AuthMode::kProduction) {
      Refuse(peer, w::RefuseReason::AuthFailed, "no authenticator is installed", 0);
      return false;
    }
    return true;
  }
  const auto credentials = w::BytesOf(hello.credentials());
  const auto join = w::BytesOf(hello.join_data());
  Value args[] = {Value::String(*user),
                  Value::Bytes(credentials.data(), static_cast<std::uint32_t>(credentials.size())),
                  Value::Bytes(join.data(), static_cast<std::uint32_t>(join.size())),
                  Value::String(peer.address())};
  HookContext ctx{.args = args};
  HookResult r = kernel_.hooks().Fire(auth_point_, ctx);
  if (!r.passed) {
    if (!r.error.empty()) {
      kNetLog.Warn("Auth.Hello threw for {} from {}: {}", *user, peer.address(), r.error);
    }
    Refuse(peer, w::RefuseReason::AuthFailed, "authentication failed", 0);
    return false;
  }
  // A validator may replace the claimed user id with the verified one.
  if (args[0].type == Value::kString && args[0].AsString() != *user) {
    std::string verified(args[0].AsString());
    if (!ValidUserId(verified)) {
      Refuse(peer, w::RefuseReason::AuthFailed, "authentication failed", 0);
      return false;
    }
    *user = std::move(verified);
  }
  return true;
}

Session* FrontDoor::Resumable(std::span<const std::uint8_t> token, std::string_view user) {
  if (token.empty() || options_.resume_window_seconds <= 0) {
    return nullptr;
  }
  // Detached sessions, and attached ones too: the old link may have died without the server
  // noticing yet (the client then takes its session over).
  for (SessionId id : sessions_.ActiveIds()) {
    Session* s = sessions_.Get(id);
    if (s == nullptr || s->user() != user || s->resume_token_.size() != token.size()) {
      continue;
    }
    unsigned char diff = 0;  // every byte compared: the time says nothing about the token
    for (std::size_t i = 0; i < token.size(); ++i) {
      diff |= static_cast<unsigned char>(s->resume_token_[i] ^ token[i]);
    }
    if (diff == 0) {
      return s;
    }
  }
  return nullptr;
}

void FrontDoor::Welcome(Peer& peer, Session& s, bool resuming) {
  if (resuming) {
    ++stats_.resumes;
  }
  links_.Bind(peer, s);
  s.resume_token_ = NewResumeToken();
  fb::FlatBufferBuilder b(1024);
  const std::vector<fb::Offset<w::ChannelInfo>> infos = ChannelInfos(b, channels_);
  // A WebSocket client (a browser) cannot open a datagram link: it gets none offered. Over TLS
  // both ends export the key from the TLS session and the Welcome carries none; over plain TCP
  // it carries a random one.
  std::vector<std::uint8_t> exported =
      peer.ExportKey(w::DatagramSeal::kTlsExporterLabel, w::DatagramSeal::kKeyBytes);
  const bool from_tls = !exported.empty();
  const std::vector<std::uint8_t> key = peer.websocket()
                                            ? std::vector<std::uint8_t>()
                                            : datagrams_.Offer(s.id(), std::move(exported));
  auto welcome = w::CreateWelcomeDirect(
      b, s.id(), channels_.ProtocolHash(), static_cast<float>(options_.tick_rate), &infos,
      options_.max_frame_bytes, options_.bytes_per_tick, options_.messages_per_tick,
      w::Millis(options_.ping_interval_seconds), &s.resume_token_, resuming,
      w::Millis(options_.resume_window_seconds), static_cast<float>(options_.budget_burst_ticks),
      key.empty()
          ? 0
          : static_cast<std::uint16_t>(options_.udp_public_port != 0 ? options_.udp_public_port
                                                                     : datagrams_.port()),
      key.empty() || from_tls ? nullptr : &key, /*device_hints=*/true);
  links_.SendFrame(peer, w::FinishFrame(b, w::Body::Welcome, welcome.Union()));
  if (peer.link().closed) {
    return;
  }
  if (!resuming) {
    sessions_.Announce(s);
    return;
  }
  links_.FlushOutbox(s);  // what was sent to it meanwhile
  if (peer.link().closed) {
    return;
  }
  replicas_.Resumed(s.id());
  Value args[] = {Value::Handle(s.id())};
  kernel_.bus().Publish(resumed_topic_, args);
  if (s.peer() == &peer) {  // resumed during a drain: where to go next
    redirection_.Send(s);
  }
}

}  // namespace molt::kernel::net

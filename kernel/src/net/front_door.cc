// SPDX-License-Identifier: Apache-2.0
// The front door: a connection's admission (the per-address handshake rate, the handshake
// slots), refusals and their rate-limited log, and the Hello that turns a connection into a
// session, new or resumed (network.h, "The handshake").
#include "kernel/src/net/front_door.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "kernel/src/core/kernel.h"
#include "kernel/src/net/frames.h"
#include "kernel/src/net/net_log.h"
#include "kernel/src/net/network.h"
#include "kernel/src/wire/envelope.h"

namespace molt::kernel::net {
namespace {

namespace fb = ::flatbuffers;
namespace w = ::molt::wire;

constexpr std::size_t kMaxUserId = 64;
constexpr std::size_t kForgetRatesAbove = 4096;  // addresses whose rate buckets are kept

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

// --- HandshakeSlots ----------------------------------------------------------------------------

bool HandshakeSlots::TakeRate(const std::string& address, TimePoint now, double* retry_after) {
  if (rates_.size() > kForgetRatesAbove) {  // forget addresses whose buckets refilled
    for (auto it = rates_.begin(); it != rates_.end();) {
      it = it->second.Available(now) >= it->second.burst() ? rates_.erase(it) : std::next(it);
    }
  }
  auto [it, fresh] = rates_.try_emplace(address, per_second_, per_second_ * 2, now);
  if (it->second.Take(now)) {
    return true;
  }
  *retry_after = it->second.SecondsUntil(now);
  return false;
}

Peer* HandshakeSlots::OldestOf(const std::string& address, std::size_t share) const {
  auto it = by_address_.find(address);
  if (it == by_address_.end() || it->second < share) {
    return nullptr;
  }
  for (Peer* p : half_open_) {
    if (p->address() == address) {
      return p;
    }
  }
  return nullptr;
}

Peer* HandshakeSlots::OldestWhenFull(std::size_t total) const {
  return half_open_.size() >= total ? half_open_.front() : nullptr;
}

void HandshakeSlots::Enter(Peer& peer) {
  peer.waiting_ = half_open_.insert(half_open_.end(), &peer);
  peer.in_handshake_ = true;
  ++by_address_[peer.address()];
}

void HandshakeSlots::Leave(Peer& peer) {
  if (!peer.in_handshake_) {
    return;
  }
  peer.in_handshake_ = false;
  half_open_.erase(peer.waiting_);
  auto it = by_address_.find(peer.address());
  if (it != by_address_.end() && --it->second == 0) {
    by_address_.erase(it);
  }
}

// --- RefusalLog --------------------------------------------------------------------------------

bool RefusalLog::Note(std::string_view reason, const std::string& address, std::string_view text,
                      TimePoint now) {
  auto it = windows_.find(reason);
  if (it == windows_.end()) {
    it = windows_.emplace(std::string(reason), Window()).first;
  }
  Window& window = it->second;
  if (window.count == 0 && now >= window.quiet_until) {
    kNetLog.Warn("refused a connection from {} ({}): {}", address, reason, text);
    window.quiet_until = now + Seconds(interval_seconds_);
    return false;
  }
  ++window.count;
  window.address = address;
  window.text = text;
  return true;
}

void RefusalLog::Flush(bool all, TimePoint now) {
  for (auto& [reason, window] : windows_) {
    if (window.count > 0 && (all || now >= window.quiet_until)) {
      kNetLog.Warn(
          "refused {} more connection(s) ({}) within {} s (net.refusal_log_seconds); the "
          "latest from {}: {}",
          window.count, reason, interval_seconds_, window.address, window.text);
      window.count = 0;
      window.quiet_until = now + Seconds(interval_seconds_);
    }
  }
}

bool RefusalLog::waiting() const {
  return std::any_of(windows_.begin(), windows_.end(),
                     [](const auto& w) { return w.second.count > 0; });
}

// --- Admission ---------------------------------------------------------------------------------

bool Network::Attach(Peer& peer) {
  if (shut_down_) {
    return false;
  }
  ++stats_.connections_accepted;
  const TimePoint now = kernel_.scheduler().Now();
  const double tick = std::max(options_.tick_rate, 1.0);
  peer.bytes_ = TokenBucket(options_.bytes_per_tick * tick,
                            options_.bytes_per_tick * options_.budget_burst_ticks, now);
  peer.messages_ = TokenBucket(options_.messages_per_tick * tick,
                               options_.messages_per_tick * options_.budget_burst_ticks, now);
  peer.attached_at_ = now;
  peer.last_receive_ = now;
  peer.offender_window_start_ = now;
  peers_.push_back(&peer);
  ArmHousekeeping();

  if (double retry = 0; !slots_.TakeRate(peer.address(), now, &retry)) {
    ++stats_.refused_handshake_rate;
    Refuse(peer, static_cast<std::uint8_t>(w::RefuseReason::RateLimited),
           fmt::format("too many connections from {}; retry later", peer.address()), retry);
    return true;
  }
  MakeHandshakeRoom(peer.address());
  slots_.Enter(peer);
  return true;
}

// Slots: a connection that says Hello promptly is never kept out by connections that do not.
// Whoever holds slots without a Hello has them taken back oldest first, so keeping a client out
// means opening more connections than the slots within that client's round trip (docs/network.md).
void Network::MakeHandshakeRoom(const std::string& address) {
  auto evict = [&](Peer& p, w::RefuseReason reason, std::string text) {
    ++stats_.half_open_evicted;
    Refuse(p, static_cast<std::uint8_t>(reason), text, 1);
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

void Network::LogRefusal(std::string_view reason, const std::string& address,
                         std::string_view text) {
  if (refusals_.Note(reason, address, text, kernel_.scheduler().Now())) {
    ArmHousekeeping();  // it says how many when the interval ends
  }
}

void Network::Refuse(Peer& peer, std::uint8_t reason, std::string_view text, double retry_after) {
  if (peer.closed_) {
    return;
  }
  ++stats_.handshakes_refused;
  peer.refused_ = true;
  LogRefusal(w::EnumNameRefuseReason(static_cast<w::RefuseReason>(reason)), peer.address(), text);
  fb::FlatBufferBuilder b(128);
  SendFrame(peer, RefuseFrame(b, static_cast<w::RefuseReason>(reason), text, retry_after));
  End(peer, ExitReason::kProtocolError, text);
}

std::vector<std::uint8_t> Network::RefuseOverCapacity(const std::string& address,
                                                      std::string_view why) {
  ++stats_.connections_accepted;
  ++stats_.handshakes_refused;
  ++stats_.refused_no_descriptors;
  LogRefusal("OutOfDescriptors", address, why);
  fb::FlatBufferBuilder b(128);
  const std::span<const std::uint8_t> frame =
      RefuseFrame(b, w::RefuseReason::ServerFull, "the server is at capacity; retry", 5);
  stats_.bytes_out += frame.size();
  return {frame.begin(), frame.end()};
}

// --- The Hello ---------------------------------------------------------------------------------

Session* Network::Resumable(std::span<const std::uint8_t> token, std::string_view user) {
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

void Network::OnHello(Peer& peer, const void* raw) {
  const auto* hello = static_cast<const w::Hello*>(raw);
  auto refuse = [&](w::RefuseReason reason, std::string text, double retry = 0) {
    Refuse(peer, static_cast<std::uint8_t>(reason), text, retry);
  };
  if (hello->protocol_version() != w::kProtocolVersion) {
    return refuse(w::RefuseReason::ProtocolVersion,
                  fmt::format("protocol version {} is not supported: this server speaks {}",
                              hello->protocol_version(), w::kProtocolVersion));
  }
  // Before the channel table is compared: while nothing serves, the table is not the game's.
  if (kernel_.shutting_down() || shut_down_ || closing_) {
    return refuse(w::RefuseReason::ShuttingDown, "the server is shutting down");
  }
  if (!serving_) {
    return refuse(w::RefuseReason::Starting,
                  "the server is starting: no plugin generation serves yet", 1);
  }
  const std::uint64_t hash = channels_.ProtocolHash();
  if (hello->protocol_hash() != 0 && hello->protocol_hash() != hash) {
    return refuse(w::RefuseReason::ProtocolHash,
                  fmt::format("the client's channel table (hash {:016x}) differs from the "
                              "server's ({:016x}): update the client",
                              hello->protocol_hash(), hash));
  }
  std::string user = hello->user() == nullptr ? std::string() : hello->user()->str();
  if (!ValidUserId(user)) {
    return refuse(w::RefuseReason::BadHello,
                  fmt::format("the user id must be 1..{} printable characters", kMaxUserId));
  }
  const auto token = w::BytesOf(hello->resume_token());
  Session* resume = Resumable(token, user);
  if (resume == nullptr && draining_) {  // only the sessions here may come back
    std::string text = "the server is draining";
    if (redirect_) {  // the least loaded target, by its TCP address
      const auto least = std::min_element(
          redirect_->targets.begin(), redirect_->targets.end(),
          [](const RedirectTarget& a, const RedirectTarget& b) { return a.sessions < b.sessions; });
      text = fmt::format("{}: go to server {} at {}", redirect_->reason, least->server,
                         least->address);
    }
    return refuse(w::RefuseReason::ShuttingDown, text);
  }
  if (resume == nullptr && sessions_.count() >= options_.max_sessions) {
    return refuse(w::RefuseReason::ServerFull,
                  fmt::format("the server is full ({} sessions)", options_.max_sessions), 5);
  }
  const auto credentials = w::BytesOf(hello->credentials());
  const auto join = w::BytesOf(hello->join_data());
  if (kernel_.hooks().handler_count(auth_point_) > 0) {
    Value args[] = {
        Value::String(user),
        Value::Bytes(credentials.data(), static_cast<std::uint32_t>(credentials.size())),
        Value::Bytes(join.data(), static_cast<std::uint32_t>(join.size())),
        Value::String(peer.address())};
    HookContext ctx{.args = args};
    HookResult r = kernel_.hooks().Fire(auth_point_, ctx);
    if (!r.passed) {
      if (!r.error.empty()) {
        kNetLog.Warn("Auth.Hello threw for {} from {}: {}", user, peer.address(), r.error);
      }
      return refuse(w::RefuseReason::AuthFailed, "authentication failed");
    }
    // A validator may replace the claimed user id with the verified one.
    if (args[0].type == Value::kString && args[0].AsString() != user) {
      std::string verified(args[0].AsString());
      if (!ValidUserId(verified)) {
        return refuse(w::RefuseReason::AuthFailed, "authentication failed");
      }
      user = std::move(verified);
    }
  } else if (options_.auth == AuthMode::kProduction) {
    return refuse(w::RefuseReason::AuthFailed, "no authenticator is installed");
  }
  resume = Resumable(token, user);  // the token is only good for the user it was issued to
  if (resume == nullptr) {
    // The user is back without resuming (a restarted game): the session their lost link left
    // waiting will not be resumed. It ends now, so what it holds (a profile's lease) is free for
    // the new one instead of waiting out net.resume_window_seconds.
    for (SessionId id : std::vector<SessionId>(detached_)) {
      Session* old = sessions_.Get(id);
      if (old != nullptr && old->user() == user) {
        std::erase(detached_, id);
        ++stats_.resumes_superseded;
        sessions_.End(id, old->detach_reason_);
      }
    }
  }

  // A lost link's client comes back: the same session, its bindings and data intact, and what
  // was sent to it meanwhile.
  const bool resuming = resume != nullptr;
  Session& s = resuming ? *resume
                        : sessions_.Create(std::move(user),
                                           std::vector<std::uint8_t>(join.begin(), join.end()),
                                           peer.address(), kernel_.scheduler().Now());
  if (resuming && s.peer_ != nullptr) {  // take the session over from its old link
    Peer* old = s.peer_;
    Unlink(*old, ExitReason::kTransportError, /*resumable=*/true);
    old->Close(/*flush=*/false);
  }
  if (resuming) {
    std::erase(detached_, s.id());
    s.detached_ = false;
    ++stats_.resumes;
  }
  s.resume_token_ = NewResumeToken();
  slots_.Leave(peer);
  peer.session_ = s.id();
  s.peer_ = &peer;

  fb::FlatBufferBuilder b(1024);
  const std::vector<fb::Offset<w::ChannelInfo>> infos = ChannelInfos(b, channels_);
  auto welcome = w::CreateWelcomeDirect(
      b, s.id(), hash, static_cast<float>(options_.tick_rate), &infos, options_.max_frame_bytes,
      options_.bytes_per_tick, options_.messages_per_tick,
      w::Millis(options_.ping_interval_seconds), &s.resume_token_, resuming,
      w::Millis(options_.resume_window_seconds), static_cast<float>(options_.budget_burst_ticks));
  SendFrame(peer, w::FinishFrame(b, w::Body::Welcome, welcome.Union()));
  if (peer.closed_) {
    return;
  }
  if (resuming) {
    const std::vector<std::uint8_t> missed = std::exchange(s.outbox_, {});
    if (!missed.empty()) {
      SendFrame(peer, missed);
    }
    if (peer.closed_) {
      return;
    }
    replicas_.Resumed(s.id());
    Value args[] = {Value::Handle(s.id())};
    kernel_.bus().Publish(resumed_topic_, args);
    if (redirect_ && s.peer_ == &peer) {  // resumed during a drain: where to go next
      SendRedirect(s);
    }
    return;
  }
  sessions_.Announce(s);
}

}  // namespace molt::kernel::net

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/net/channel.h
//
// Channels: what plugins declare so clients can talk to them (spec: NetDriver intents, requests,
// state, unreliable state, predicted intents). An intent is a client -> server message, a request
// is a client -> server message answered with a status and a payload, an event is a server ->
// client message. An unreliable channel carries both ways what is better lost than late (at most
// kMaxUnreliablePayload bytes; with latest_wins, a message older than the newest taken is
// dropped); a client sends on it only when it has a verifier. A predicted intent is an intent
// whose every sequence number the server acknowledges, accepted or rejected (the client rolls
// back a rejected one). Every channel
// names its payload schema (a FlatBuffers root type and its generated verifier), may declare
// rules on the payload's fields, and has a per-session token bucket.
//
//   ChannelSpec spec;
//   spec.name = "chat.Say";
//   spec.kind = ChannelKind::kIntent;
//   spec.schema = "chat.Say";
//   spec.verify = [](std::span<const std::uint8_t> p) { return VerifySayPayload(p); };
//   spec.rules = {FieldRule::MaxLength(0, "text", 200)};
//   spec.rate = 5;                                  // per session per second; default 30
//   spec.on_intent = [](Session& s, std::span<Value> args) { ... };
//   Result<ChannelId> id = registry.Declare(std::move(spec), owner);
//
// Rules read fields of the payload's root table by field id (declaration order in the .fbs,
// from 0) with their own bounds checks, so a rule that names the wrong type cannot read outside
// the payload. An absent field is checked as its default (0, empty string). Rules count as a
// validator; so does any handler on the channel's Intent.<Name> / Request.<Name> hook point.
// A handler-bearing channel with neither, and not Open, rejects every payload (fail-closed).
//
// Thread safety: REQUIRES the kernel thread.
#ifndef MOLT_KERNEL_NET_CHANNEL_H_
#define MOLT_KERNEL_NET_CHANNEL_H_

#include <molt/kernel/status.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernel/src/core/bus.h"
#include "kernel/src/core/callback.h"
#include "kernel/src/core/hooks.h"
#include "kernel/src/core/value.h"

namespace molt::kernel::net {

class Session;
using ChannelId = std::uint16_t;
using SessionId = std::uint64_t;

enum class ChannelKind : std::uint8_t {
  kIntent = 0,
  kRequest = 1,
  kEvent = 2,
  kUnreliable = 3,  // wire 2.5, ABI 1.10
  kPredicted = 4,   // wire 2.5, ABI 1.10
};
// "intent", "request", "event", "unreliable", "predicted_intent"
std::string_view ChannelKindName(ChannelKind kind);
// Whether clients send on channels of `kind` through the intent path (intents, predicted intents
// and unreliable channels with a verifier).
inline bool IntentLike(ChannelKind kind) {
  return kind == ChannelKind::kIntent || kind == ChannelKind::kPredicted ||
         kind == ChannelKind::kUnreliable;
}

// How an unreliable channel fares on a strained link: Low is shed first, High always flows.
enum class UnreliablePriority : std::uint8_t { kLow = 0, kHigh = 1 };

// The spec's unreliable payload cap ("about 900 bytes": one datagram under any path's MTU).
inline constexpr std::size_t kMaxUnreliablePayload = 900;

// Why an inbound message was rejected: the wire's RejectReason, in pipeline order.
enum class Reject : std::uint8_t {
  kFlood = 0,
  kFrameTooLarge = 1,
  kBadEnvelope = 2,
  kUnknownChannel = 3,
  kNoSession = 4,
  kRateLimited = 5,
  kBadPayload = 6,
  kRuleViolated = 7,
  kUnguarded = 8,
  kHookRejected = 9,
  kDuplicateRequest = 10,  // a request id still in flight on the session: never handled twice
  kRefused = 11,           // a predicted intent's handler refused it (HandlerRefused)
};
inline constexpr std::size_t kRejectCount = 12;

// Thrown by a predicted intent's handler to refuse it: the client hears it rejected (and rolls
// back), and it is a rejection like a validator's, not a handler error (the C ABI: the handler
// returns MOLT_ERR_REJECTED). Any other exception is a handler error.
struct HandlerRefused {
  std::string reason;
};
std::string_view RejectName(Reject reason);  // "flood", "frame_too_large", ...

// The type a rule reads a field as.
enum class FieldType : std::uint8_t {
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat,
  kDouble,
  kString,
};

// One declarative rule on a field of the payload's root table (spec: Validate = Range, OneOf,
// MaxLength). Numbers: inclusive range and/or a set of allowed values; NaN and infinities fail a
// range. Strings: a maximum length in bytes.
struct FieldRule {
  std::uint16_t field = 0;  // the field id: its position in the table, from 0
  std::string name;         // for error texts and the audit
  FieldType type = FieldType::kInt32;
  bool has_range = false;
  double min = 0;
  double max = 0;
  std::vector<std::int64_t> one_of;  // empty: any value
  std::uint32_t max_length = 0;      // strings; 0: no limit

  static FieldRule Range(std::uint16_t field, std::string name, FieldType type, double min,
                         double max);
  static FieldRule OneOf(std::uint16_t field, std::string name, FieldType type,
                         std::vector<std::int64_t> values);
  static FieldRule MaxLength(std::uint16_t field, std::string name, std::uint32_t max_length);
};

// The answer to a request, handed to the request handler. Calling it answers the client; a
// request not answered before the channel's timeout is answered MOLT_ERR_TIMEOUT.
using RequestToken = std::uint64_t;

// The schema's verifier: true when `payload` is a well-formed root table of the channel's type.
using PayloadVerifier = Callback<bool(std::span<const std::uint8_t> payload)>;
using IntentHandler = Callback<void(Session& session, std::span<Value> args)>;
using RequestHandler = Callback<void(Session& session, std::span<Value> args, RequestToken reply)>;

inline constexpr double kDefaultRate = 30;            // per session per second (spec)
inline constexpr double kDefaultRequestTimeout = 15;  // seconds (spec: invoke timeout)
inline constexpr double kMinRequestTimeout = 0.5;     // spec range 0.5 - 120 s
inline constexpr double kMaxRequestTimeout = 120;

struct ChannelSpec {
  std::string name;  // [A-Za-z0-9_.-], 1..120 characters, unique
  ChannelKind kind = ChannelKind::kIntent;
  std::string schema;      // the payload's root type ("chat.Say"); required
  PayloadVerifier verify;  // required for intents and requests
  std::vector<FieldRule> rules;
  double rate = 0;             // 0: the default (kDefaultRate); +inf: unlimited
  double burst = 0;            // 0: equal to the rate (at least 1)
  bool open = false;           // accept payloads with no validator (the audit reports it)
  double timeout_seconds = 0;  // requests: 0 is kDefaultRequestTimeout, clamped
  std::vector<std::uint8_t> reject_payload;  // requests: sent with rejections (RejectValue)
  IntentHandler on_intent;
  RequestHandler on_request;
  UnreliablePriority priority = UnreliablePriority::kLow;  // unreliable channels
  bool latest_wins = false;  // unreliable channels: drop what is older than the newest
};

// Per-channel counters (spec: Net.Stats), kept per channel and per reason.
struct ChannelCounters {
  std::uint64_t accepted = 0;
  std::array<std::uint64_t, kRejectCount> rejected{};
  std::uint64_t handler_errors = 0;
  std::uint64_t events_sent = 0;  // event channels: messages queued, counted per recipient
  std::uint64_t timeouts = 0;     // requests answered MOLT_ERR_TIMEOUT
  std::uint64_t stale = 0;        // latest-wins: messages dropped for an older seq (no offence)
  std::uint64_t shed = 0;         // unreliable: events not queued to a backed-up link

  std::uint64_t rejected_total() const;
};

// A declared channel. Stable address while declared.
class Channel {
 public:
  ChannelId id() const { return id_; }
  const ChannelSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  ChannelKind kind() const { return spec_.kind; }
  double rate() const { return rate_; }
  double burst() const { return burst_; }
  double timeout_seconds() const { return timeout_; }
  // Unreliable or a predicted intent: its messages carry a seq (one check on the per-frame path).
  bool sequenced() const { return sequenced_; }
  // Whether clients send on it as intents: an intent, a predicted intent, or an unreliable
  // channel with a verifier (one without takes nothing from clients).
  bool takes_intents() const { return takes_intents_; }
  bool default_rate() const { return default_rate_; }
  const void* owner() const { return owner_; }
  Hooks::Point* point() const { return point_; }  // Intent.<Name> / Request.<Name>
  Bus::Topic* topic() const { return topic_; }    // Intent.<Name> (accepted intents)
  // Bumped every time the id is declared again (not when a swap adopts it with the same rate and
  // burst), so per-session buckets start over.
  std::uint32_t epoch() const { return epoch_; }
  ChannelCounters& counters() { return counters_; }
  const ChannelCounters& counters() const { return counters_; }

  // Unreliable channels: the next outbound seq (from 1, skipping 0 when it wraps). Kept across a
  // swap, so a client's latest-wins never sees the sequence restart.
  std::uint32_t NextSeq() { return ++next_seq_ != 0 ? next_seq_ : ++next_seq_; }

  // True the first time only: the spec's one-time warning when it rejects for lack of a validator.
  bool FirstUnguardedReject() { return !std::exchange(warned_unguarded_, true); }

  // Whether it has a validator: rules, or a handler on its hook point.
  bool guarded(const Hooks& hooks) const;
  // OK, or `field "text" (id 0) of chat.Say: length 340 exceeds 200`.
  Status CheckRules(std::span<const std::uint8_t> payload) const;
  // Whether every rule holds: CheckRules() without the text, for the per-frame path.
  bool RulesHold(std::span<const std::uint8_t> payload) const;

 private:
  friend class ChannelRegistry;
  ChannelSpec spec_;
  ChannelId id_ = 0;
  double rate_ = kDefaultRate;
  double burst_ = kDefaultRate;
  double timeout_ = kDefaultRequestTimeout;
  bool default_rate_ = true;
  bool sequenced_ = false;
  bool takes_intents_ = false;
  const void* owner_ = nullptr;
  Hooks::Point* point_ = nullptr;
  Bus::Topic* topic_ = nullptr;
  std::uint32_t epoch_ = 0;
  bool warned_unguarded_ = false;
  std::uint32_t next_seq_ = 0;
  ChannelCounters counters_;
};

class ChannelRegistry {
 public:
  // Keeps removed channels alive while it exists: a handler may remove its own channel while
  // the pipeline still holds it.
  class Hold {
   public:
    explicit Hold(ChannelRegistry& registry) : registry_(registry) { ++registry_.holds_; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() {
      if (--registry_.holds_ == 0) {
        registry_.retired_.clear();
      }
    }

   private:
    ChannelRegistry& registry_;
  };

  ChannelRegistry(Hooks& hooks, Bus& bus);
  ChannelRegistry(const ChannelRegistry&) = delete;
  ChannelRegistry& operator=(const ChannelRegistry&) = delete;
  ~ChannelRegistry();

  // Declares a channel owned by `owner` (a plugin instance; nullptr for the host). A name keeps
  // its id for the registry's lifetime, so a re-declared channel (a new generation) has the same
  // id. Errors name the channel and the fix.
  Result<ChannelId> Declare(ChannelSpec spec, const void* owner = nullptr);
  // The checks Declare() makes on a spec, without declaring it.
  Status Check(const ChannelSpec& spec) const;
  // The id `name` has, or gets when first declared: a name keeps its id for the registry's
  // lifetime.
  Result<ChannelId> Reserve(std::string_view name);
  // Removes a channel (and its counters). NOT_FOUND when it is not declared.
  Status Remove(ChannelId id);

  // A swap (loader/plugin_host.h): Orphan() takes a channel of a stopping generation out of
  // service without forgetting it (its handlers are dropped; Find() no longer sees it); the next
  // Declare() of its name adopts it with its id, counters and, when the rate and burst are
  // unchanged, its epoch (every session's token bucket carries on). RemoveOrphans() removes what
  // no declaration adopted and returns their names.
  Status Orphan(ChannelId id);
  std::vector<std::string> RemoveOrphans();
  // Removes every channel of `owner` (the plugin instance stops).
  void RemoveOwner(const void* owner);

  // The live channel with `id`, or nullptr.
  Channel* Find(ChannelId id) { return id < by_id_.size() ? by_id_[id].get() : nullptr; }
  Channel* Find(std::string_view name);
  // Every live channel in id order.
  std::vector<const Channel*> List() const;
  std::size_t size() const { return live_; }

  // FNV-1a over (id, name, kind, schema) of every live channel: equal tables, equal hashes.
  std::uint64_t ProtocolHash() const;

 private:
  void Retire(std::unique_ptr<Channel>& slot);

  Hooks& hooks_;
  Bus& bus_;
  std::vector<std::unique_ptr<Channel>> by_id_;  // index = id; null when not declared
  std::unordered_map<std::string, ChannelId, internal::StringHash, std::equal_to<>> ids_;
  std::vector<std::uint32_t> epochs_;
  std::vector<std::uint32_t> seqs_;  // index = id: the outbound seq a removed channel reached
  std::size_t live_ = 0;
  std::vector<std::unique_ptr<Channel>> retired_;  // removed while a Hold existed
  std::map<ChannelId, std::unique_ptr<Channel>> orphans_;
  int holds_ = 0;
};

// OK, or `channel name "..." is invalid: use 1..120 characters of [A-Za-z0-9_.-]`.
Status CheckChannelName(std::string_view name);

}  // namespace molt::kernel::net

#endif  // MOLT_KERNEL_NET_CHANNEL_H_

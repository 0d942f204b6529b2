// SPDX-License-Identifier: Apache-2.0
// Channels: declaration checks, ids stable by name, declarative rules over FlatBuffers tables.
#include "kernel/src/net/channel.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace molt::kernel::net {
namespace {

constexpr std::size_t kMaxChannelName = 120;  // spec: channel names are <= 120 characters

template <class T>
bool ReadAt(std::span<const std::uint8_t> buf, std::size_t pos, T* out) {
  if (pos > buf.size() || buf.size() - pos < sizeof(T)) {
    return false;
  }
  std::memcpy(out, buf.data() + pos, sizeof(T));  // little-endian hosts only (x86-64, arm64)
  return true;
}

std::size_t FieldSize(FieldType type) {
  switch (type) {
    case FieldType::kBool:
    case FieldType::kInt8:
    case FieldType::kUInt8:
      return 1;
    case FieldType::kInt16:
    case FieldType::kUInt16:
      return 2;
    case FieldType::kInt32:
    case FieldType::kUInt32:
    case FieldType::kFloat:
    case FieldType::kString:
      return 4;
    case FieldType::kInt64:
    case FieldType::kUInt64:
    case FieldType::kDouble:
      return 8;
  }
  return 8;
}

// Where field `id` of the root table starts, 0 when absent; false when the table is malformed.
// (Inlined: a rule on every frame reads one field.)
[[gnu::always_inline]] inline bool LocateField(std::span<const std::uint8_t> buf, std::uint16_t id,
                                               std::size_t* out) {
  std::uint32_t root = 0;
  std::int32_t soffset = 0;
  if (!ReadAt(buf, 0, &root) || !ReadAt(buf, root, &soffset)) {
    return false;
  }
  const std::int64_t vtable = static_cast<std::int64_t>(root) - soffset;
  std::uint16_t vt_size = 0;
  if (vtable < 0 || !ReadAt(buf, static_cast<std::size_t>(vtable), &vt_size) || vt_size < 4) {
    return false;
  }
  const std::size_t slot = 4 + 2 * static_cast<std::size_t>(id);
  std::uint16_t field_offset = 0;
  if (slot + 2 <= vt_size && !ReadAt(buf, static_cast<std::size_t>(vtable) + slot, &field_offset)) {
    return false;
  }
  *out = field_offset == 0 ? 0 : root + field_offset;
  return true;
}

bool ReadNumber(std::span<const std::uint8_t> buf, std::size_t pos, FieldType type, double* d,
                std::int64_t* i) {
  auto read = [&](auto v) {
    if (pos != 0 && !ReadAt(buf, pos, &v)) {
      return false;
    }
    if (pos == 0) {
      v = 0;
    }
    *d = static_cast<double>(v);
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      *i = std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<std::int64_t>(v) : 0;
    } else {
      *i = static_cast<std::int64_t>(v);
    }
    return true;
  };
  switch (type) {
    case FieldType::kBool:
    case FieldType::kUInt8:
      return read(std::uint8_t{});
    case FieldType::kInt8:
      return read(std::int8_t{});
    case FieldType::kInt16:
      return read(std::int16_t{});
    case FieldType::kUInt16:
      return read(std::uint16_t{});
    case FieldType::kInt32:
      return read(std::int32_t{});
    case FieldType::kUInt32:
      return read(std::uint32_t{});
    case FieldType::kInt64:
      return read(std::int64_t{});
    case FieldType::kUInt64:
      return read(std::uint64_t{});
    case FieldType::kFloat:
      return read(float{});
    case FieldType::kDouble:
      return read(double{});
    case FieldType::kString:
      return false;
  }
  return false;
}

}  // namespace

std::string_view ChannelKindName(ChannelKind kind) {
  switch (kind) {
    case ChannelKind::kIntent:
      return "intent";
    case ChannelKind::kRequest:
      return "request";
    case ChannelKind::kEvent:
      return "event";
    case ChannelKind::kUnreliable:
      return "unreliable";
    case ChannelKind::kPredicted:
      return "predicted_intent";
  }
  return "unknown";
}

std::string_view RejectName(Reject reason) {
  static constexpr std::string_view kNames[kRejectCount] = {
      "flood",      "frame_too_large", "bad_envelope",      "unknown_channel",
      "no_session", "rate_limited",    "bad_payload",       "rule",
      "unguarded",  "hook_rejected",   "duplicate_request", "refused"};
  const auto i = static_cast<std::size_t>(reason);
  return i < kRejectCount ? kNames[i] : "unknown";
}

std::uint64_t ChannelCounters::rejected_total() const {
  std::uint64_t n = 0;
  for (std::uint64_t r : rejected) {
    n += r;
  }
  return n;
}

FieldRule FieldRule::Range(std::uint16_t field, std::string name, FieldType type, double min,
                           double max) {
  FieldRule r;
  r.field = field;
  r.name = std::move(name);
  r.type = type;
  r.has_range = true;
  r.min = min;
  r.max = max;
  return r;
}

FieldRule FieldRule::OneOf(std::uint16_t field, std::string name, FieldType type,
                           std::vector<std::int64_t> values) {
  FieldRule r;
  r.field = field;
  r.name = std::move(name);
  r.type = type;
  r.one_of = std::move(values);
  return r;
}

FieldRule FieldRule::MaxLength(std::uint16_t field, std::string name, std::uint32_t max_length) {
  FieldRule r;
  r.field = field;
  r.name = std::move(name);
  r.type = FieldType::kString;
  r.max_length = max_length;
  return r;
}

Status CheckChannelName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxChannelName;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-');
  }
  if (!ok) {
    return Status::InvalidArgument(
        fmt::format("channel name \"{}\" is invalid: use 1..{} characters of [A-Za-z0-9_.-]",
                    name.substr(0, kMaxChannelName + 8), kMaxChannelName));
  }
  return Status();
}

bool Channel::guarded(const Hooks& hooks) const {
  return !spec_.rules.empty() || hooks.handler_count(point_) > 0;
}

namespace {

// A rule's refusal, naming the field, its schema and `what` (off the per-frame path).
[[gnu::cold]] Status RuleRefused(const FieldRule& rule, std::string_view schema,
                                 std::string_view what) {
  return Status::Rejected(
      fmt::format("field \"{}\" (id {}) of {}: {}", rule.name, rule.field, schema, what));
}

// Refuses: sets *why, when `why` is set, to the refusal of `rule` with the text what() builds
// (never built otherwise). Returns false, for `return Refuse(...)`.
template <class What>
bool Refuse(Status* why, const FieldRule& rule, std::string_view schema, What&& what) {
  if (why != nullptr) {
    *why = RuleRefused(rule, schema, what());
  }
  return false;
}

// A numeric rule (range, one-of) on the field at `pos` (0: absent, read as 0): whether it holds.
[[gnu::noinline]] bool NumberHolds(const FieldRule& rule, std::string_view schema,
                                   std::span<const std::uint8_t> payload, std::size_t pos,
                                   Status* why) {
  double d = 0;
  std::int64_t i = 0;
  if (!ReadNumber(payload, pos, rule.type, &d, &i)) {
    return Refuse(why, rule, schema, [] { return "the value is out of bounds"; });
  }
  if (rule.has_range && !(d >= rule.min && d <= rule.max)) {  // NaN fails too
    return Refuse(why, rule, schema,
                  [&] { return fmt::format("{} is outside [{}, {}]", d, rule.min, rule.max); });
  }
  if (!rule.one_of.empty()) {
    bool found = false;
    for (std::int64_t v : rule.one_of) {
      found = found || (v == i && static_cast<double>(v) == d);
    }
    if (!found) {
      return Refuse(why, rule, schema,
                    [&] { return fmt::format("{} is not one of the allowed values", d); });
    }
  }
  return true;
}

// Whether `rule` holds on `payload` (a refusal into *why when `why` is set). Both callers inline
// it: with `why` null (RulesHold, every frame) no text is ever built.
[[gnu::always_inline]] inline bool RuleHolds(const FieldRule& rule, std::string_view schema,
                                             std::span<const std::uint8_t> payload, Status* why) {
  std::size_t pos = 0;
  if (!LocateField(payload, rule.field, &pos) ||
      (pos != 0 && pos + FieldSize(rule.type) > payload.size())) {
    return Refuse(why, rule, schema, [] { return "the table is malformed"; });
  }
  if (rule.type != FieldType::kString) {
    return NumberHolds(rule, schema, payload, pos, why);
  }
  std::uint32_t length = 0;
  if (pos != 0) {
    std::uint32_t rel = 0;
    ReadAt(payload, pos, &rel);
    const std::size_t at = pos + rel;
    if (!ReadAt(payload, at, &length) || payload.size() - at - 4 < length) {
      return Refuse(why, rule, schema, [] { return "the string is out of bounds"; });
    }
  }
  if (rule.max_length != 0 && length > rule.max_length) {
    return Refuse(why, rule, schema,
                  [&] { return fmt::format("length {} exceeds {}", length, rule.max_length); });
  }
  return true;
}

}  // namespace

Status Channel::CheckRules(std::span<const std::uint8_t> payload) const {
  Status why;
  for (const FieldRule& rule : spec_.rules) {
    if (!RuleHolds(rule, spec_.schema, payload, &why)) {
      return why;
    }
  }
  return Status();
}

bool Channel::RulesHold(std::span<const std::uint8_t> payload) const {
  for (const FieldRule& rule : spec_.rules) {
    if (!RuleHolds(rule, spec_.schema, payload, nullptr)) {
      return false;
    }
  }
  return true;
}

ChannelRegistry::ChannelRegistry(Hooks& hooks, Bus& bus) : hooks_(hooks), bus_(bus) {}
ChannelRegistry::~ChannelRegistry() = default;

Status ChannelRegistry::Check(const ChannelSpec& spec) const {
  MOLT_RETURN_IF_ERROR(CheckChannelName(spec.name));
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("channel \"{}\": {}", spec.name, why));
  };
  if (spec.schema.empty()) {
    return bad("name its payload schema (the FlatBuffers root type, e.g. \"chat.Say\")");
  }
  const bool inbound = spec.kind != ChannelKind::kEvent && spec.kind != ChannelKind::kUnreliable;
  if (inbound && !spec.verify) {
    return bad("an inbound channel needs a payload verifier (the schema's generated Verify...)");
  }
  if (IntentLike(spec.kind) && spec.on_request) {
    return bad("an intent takes an intent handler, not a request handler");
  }
  if (spec.kind == ChannelKind::kUnreliable && spec.on_intent && !spec.verify) {
    return bad(
        "an unreliable channel with a handler takes messages from clients: give it a payload "
        "verifier (the schema's generated Verify...)");
  }
  if (spec.kind > ChannelKind::kPredicted) {
    return bad(fmt::format("kind {} is not a channel kind", static_cast<int>(spec.kind)));
  }
  if (spec.kind == ChannelKind::kRequest && spec.on_intent) {
    return bad("a request takes a request handler, not an intent handler");
  }
  if (spec.kind == ChannelKind::kEvent && (spec.on_intent || spec.on_request)) {
    return bad("an event channel is server -> client: it takes no handler");
  }
  if (!(spec.rate >= 0) || !(spec.burst >= 0)) {
    return bad("rate and burst must be >= 0 (0 takes the default, +inf is unlimited)");
  }
  for (const FieldRule& r : spec.rules) {
    if (r.type == FieldType::kString ? (r.has_range || !r.one_of.empty()) : r.max_length != 0) {
      return bad(
          fmt::format("rule on field \"{}\": strings take MaxLength, numbers take Range "
                      "and OneOf",
                      r.name));
    }
    if (r.has_range && !(r.min <= r.max)) {
      return bad(
          fmt::format("rule on field \"{}\": range [{}, {}] is empty", r.name, r.min, r.max));
    }
  }
  return Status();
}

Result<ChannelId> ChannelRegistry::Reserve(std::string_view name) {
  MOLT_RETURN_IF_ERROR(CheckChannelName(name));
  auto [it, fresh] = ids_.try_emplace(std::string(name), static_cast<ChannelId>(by_id_.size()));
  if (fresh) {
    if (by_id_.size() > std::numeric_limits<ChannelId>::max()) {
      ids_.erase(it);
      return Status::FailedPrecondition("too many channels (65536)");
    }
    by_id_.emplace_back();
    epochs_.push_back(0);
    seqs_.push_back(0);
  }
  return it->second;
}

Result<ChannelId> ChannelRegistry::Declare(ChannelSpec spec, const void* owner) {
  MOLT_RETURN_IF_ERROR(Check(spec));
  const bool inbound = spec.kind != ChannelKind::kEvent;
  MOLT_ASSIGN_OR_RETURN(ChannelId reserved, Reserve(spec.name));
  const ChannelId id = reserved;
  if (by_id_[id] != nullptr) {
    return Status::AlreadyExists(fmt::format(
        "channel \"{}\" is already declared; remove it first or pick another name", spec.name));
  }
  // An orphan of a swap is adopted: the same object keeps its counters, and its epoch (so every
  // session's token bucket) unless the new declaration changes the rate or the burst.
  std::unique_ptr<Channel> ch;
  if (auto orphan = orphans_.find(id); orphan != orphans_.end()) {
    ch = std::move(orphan->second);
    orphans_.erase(orphan);
  } else {
    ch = std::make_unique<Channel>();
    ch->next_seq_ = seqs_[id];  // a name's outbound seqs never restart: clients keep the newest
  }
  const double rate = spec.rate == 0 ? kDefaultRate : spec.rate;
  const double burst =
      std::max(1.0, spec.burst == 0 ? (std::isinf(rate) ? 1.0 : rate) : spec.burst);
  const bool keep_buckets =
      ch->epoch_ != 0 && ch->kind() == spec.kind && ch->rate_ == rate && ch->burst_ == burst;
  ch->id_ = id;
  ch->owner_ = owner;
  ch->default_rate_ = spec.rate == 0;
  ch->sequenced_ = spec.kind == ChannelKind::kUnreliable || spec.kind == ChannelKind::kPredicted;
  ch->takes_intents_ = IntentLike(spec.kind) &&
                       (spec.kind != ChannelKind::kUnreliable || static_cast<bool>(spec.verify));
  ch->rate_ = rate;
  ch->burst_ = burst;
  ch->timeout_ = spec.timeout_seconds == 0
                     ? kDefaultRequestTimeout
                     : std::clamp(spec.timeout_seconds, kMinRequestTimeout, kMaxRequestTimeout);
  if (inbound) {
    const std::string prefix = spec.kind == ChannelKind::kRequest ? "Request." : "Intent.";
    ch->point_ = hooks_.Resolve(prefix + spec.name);
    ch->topic_ = bus_.Resolve(prefix + spec.name);
  }
  ch->epoch_ = keep_buckets ? ch->epoch_ : ++epochs_[id];
  ch->spec_ = std::move(spec);
  by_id_[id] = std::move(ch);
  ++live_;
  return id;
}

Status ChannelRegistry::Remove(ChannelId id) {
  if (Find(id) == nullptr) {
    return Status::NotFound(fmt::format("channel id {} is not declared", id));
  }
  Retire(by_id_[id]);
  --live_;
  return Status();
}

Status ChannelRegistry::Orphan(ChannelId id) {
  Channel* ch = Find(id);
  if (ch == nullptr) {
    return Status::NotFound(fmt::format("channel id {} is not declared", id));
  }
  // The handlers and the verifier point into a library about to leave: drop them now.
  ch->spec_.verify = nullptr;
  ch->spec_.on_intent = nullptr;
  ch->spec_.on_request = nullptr;
  ch->owner_ = nullptr;
  orphans_[id] = std::move(by_id_[id]);
  --live_;
  return Status();
}

std::vector<std::string> ChannelRegistry::RemoveOrphans() {
  std::vector<std::string> names;
  for (auto& [id, ch] : orphans_) {
    names.push_back(ch->name());
    Retire(ch);
  }
  orphans_.clear();
  return names;
}

void ChannelRegistry::RemoveOwner(const void* owner) {
  for (auto& ch : by_id_) {
    if (ch != nullptr && ch->owner_ == owner) {
      Retire(ch);
      --live_;
    }
  }
}

void ChannelRegistry::Retire(std::unique_ptr<Channel>& slot) {
  seqs_[slot->id()] = slot->next_seq_;
  if (holds_ > 0) {
    retired_.push_back(std::move(slot));
  }
  slot.reset();
}

Channel* ChannelRegistry::Find(std::string_view name) {
  auto it = ids_.find(name);
  return it == ids_.end() ? nullptr : Find(it->second);
}

std::vector<const Channel*> ChannelRegistry::List() const {
  std::vector<const Channel*> out;
  for (const auto& ch : by_id_) {
    if (ch != nullptr) {
      out.push_back(ch.get());
    }
  }
  return out;
}

std::uint64_t ChannelRegistry::ProtocolHash() const {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h = (h ^ c) * 1099511628211ull;
    }
    h = (h ^ 0xff) * 1099511628211ull;  // a separator, so ("ab","c") != ("a","bc")
  };
  for (const Channel* ch : List()) {
    mix(std::to_string(ch->id()));
    mix(ch->name());
    mix(ChannelKindName(ch->kind()));
    mix(ch->spec().schema);
  }
  return h;
}

}  // namespace molt::kernel::net

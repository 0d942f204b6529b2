// SPDX-License-Identifier: Apache-2.0
// LiveValues: declarations on the kernel thread, overrides stored on a thread of their own.
#include "kernel/src/live/live_values.h"

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <utility>

#include "kernel/src/core/logger.h"
#include "kernel/src/live/open_live_store.h"

namespace molt::kernel::live {
namespace {

namespace json = boost::json;

LogScope& Log() {
  static LogScope log("LiveValues");
  return log;
}

// A value, at most this long as JSON.
constexpr std::size_t kMaxValueBytes = 64 * 1024;

// A name: 1..64 of [A-Za-z0-9_-] (the plugin's name and a dot come before it in a key).
bool ValidName(std::string_view n) {
  return !n.empty() && n.size() <= 64 &&
         n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
             std::string_view::npos;
}

// `v` as JSON an operator reads back as they wrote it: numbers in their shortest form ("2.5",
// never "2.5E0"), a fraction-less one as a whole number ("12.0" is 12) unless `keep_fractions`
// (a default: "1.0" says its value is any number, "1" a whole one); no spaces.
void Write(const json::value& v, bool keep_fractions, std::string& out) {
  switch (v.kind()) {
    case json::kind::double_: {
      const double d = v.as_double();
      if (std::trunc(d) == d && std::fabs(d) < 9e15) {
        out += std::to_string(static_cast<std::int64_t>(d));
        out += keep_fractions ? ".0" : "";
        return;
      }
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, r.ptr);
      return;
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const json::value& e : v.as_array()) {
        out += first ? "" : ",";
        first = false;
        Write(e, keep_fractions, out);
      }
      out += ']';
      return;
    }
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const json::key_value_pair& kv : v.as_object()) {
        out += first ? "" : ",";
        first = false;
        out += json::serialize(json::string(kv.key()));
        out += ':';
        Write(kv.value(), keep_fractions, out);
      }
      out += '}';
      return;
    }
    default:
      out += json::serialize(v);
  }
}

// `text` as canonical JSON (so "1.0" and "1" compare as one value), or why it is not JSON.
Result<std::string> Canonical(std::string_view text, std::string_view what,
                              bool keep_fractions = false) {
  if (text.size() > kMaxValueBytes) {
    return Status::InvalidArgument(std::string(what) + " is " + std::to_string(text.size()) +
                                   " bytes; a live value is at most 65536");
  }
  std::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec) {
    return Status::InvalidArgument(std::string(what) + " is not JSON (" + ec.message() +
                                   "): a number, true/false, a \"string\", an array or an object");
  }
  if (v.is_null()) {
    return Status::InvalidArgument(std::string(what) +
                                   " is null; a live value has a type (unset reverts to the "
                                   "default)");
  }
  std::string out;
  Write(v, keep_fractions, out);
  return out;
}

std::string TypeName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::bool_:
      return "true/false";
    case json::kind::int64:
    case json::kind::uint64:
      return "a whole number";
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
    case json::kind::null:
      break;
  }
  return "null";
}

std::string Shown(std::string_view json_text) {
  return json_text.size() <= 60 ? std::string(json_text)
                                : std::string(json_text.substr(0, 57)) + "...";
}

}  // namespace

std::string TypeMismatch(std::string_view value_json, std::string_view default_json) {
  std::error_code ec;
  const json::value v = json::parse(value_json, ec);
  const json::value d = json::parse(default_json, ec);
  const bool number_default = d.is_number();
  const bool whole_default = d.is_int64() || d.is_uint64();
  if (number_default ? (v.is_number() && (!whole_default || !v.is_double()))
                     : v.kind() == d.kind()) {
    return "";
  }
  return Shown(value_json) + " is " + TypeName(v) + ", but the default " + Shown(default_json) +
         " is " + (number_default && !whole_default ? "a number" : TypeName(d));
}

LiveValues::LiveValues(LiveOptions options, Post post, Changed changed,
                       std::function<std::int64_t()> wall_ms)
    : options_(std::move(options)),
      post_(std::move(post)),
      changed_(std::move(changed)),
      wall_ms_(std::move(wall_ms)) {}

LiveValues::~LiveValues() {
  listener_.reset();  // no wake after this
  thread_.Stop();
  store_.reset();
}

Status LiveValues::Open() {
  Result<std::unique_ptr<LiveStore>> store = OpenLiveStore(options_.path);
  Result<std::size_t> expired =
      store.ok() ? (*store)->ExpireIfIdle(wall_ms_(), options_.ttl.count()) : store.status();
  Result<std::vector<StoredValue>> all = expired.ok() ? (*store)->Overrides() : expired.status();
  if (!all.ok()) {
    open_ = all.status();
    Log().Error(
        "{}: every live value serves its default, and molt config set is refused until "
        "a restart with it fixed",
        open_.message());
    return open_;
  }
  if (*expired > 0) {
    stats_.expired += *expired;
    Log().Warn("{} live value override(s) expired: no server was online for {} hours", *expired,
               std::chrono::duration_cast<std::chrono::hours>(options_.ttl).count());
  }
  for (StoredValue& v : *all) {
    std::string key = v.key;
    overrides_.emplace(std::move(key), std::move(v));
  }
  store_ = std::move(store).value();
  open_ = Status::Ok();
  stats_.open = true;
  if (const std::string url = store_->shared_url(); !url.empty()) {
    Result<std::vector<LiveChange>> newest = store_->History("", 1);
    seen_seq_ = newest.ok() && !newest->empty() ? newest->front().seq : 0;
    listener_ = std::make_unique<store::PgListener>(
        url, "the fleet's live values", LiveStore::kChannel, options_.poll,
        [this] { thread_.Post([this] { CatchUp(); }); });
  }
  thread_.Start();
  thread_.At(SerialThread::Clock::now() + options_.stamp_every, [this] { Refresh(); });
  return Status::Ok();
}

void LiveValues::CatchUp() {
  for (;;) {
    Result<std::vector<LiveChange>> got = store_->Since(seen_seq_, 500);
    if (!got.ok()) {
      Log().Warn("{} (tried again at the next notification or poll)", got.status().message());
      return;
    }
    if (got->empty()) {
      return;
    }
    seen_seq_ = got->back().seq;
    std::weak_ptr<LiveValues*> alive = alive_;
    post_([alive, changes = std::move(got).value()] {
      if (alive.expired()) {
        return;
      }
      LiveValues& self = **alive.lock();
      for (const LiveChange& c : changes) {
        auto o = self.overrides_.find(c.key);
        const bool known = c.value ? o != self.overrides_.end() && o->second.value == *c.value &&
                                         o->second.at_ms == c.at_ms
                                   : o == self.overrides_.end();
        if (!known) {  // another server's (this server's own were applied as they were made)
          self.Apply(c, [](Result<SetOutcome>) {});
        }
      }
    });
  }
}

void LiveValues::Refresh() {
  if (Status s = store_->Stamp(wall_ms_()); !s.ok()) {
    Log().Warn("{} (tried again in an hour; overrides expire after a week without one)",
               s.message());
  }
  thread_.At(SerialThread::Clock::now() + options_.stamp_every, [this] { Refresh(); });
}

Status LiveValues::Declare(const void* owner, std::string_view plugin, std::string_view name,
                           std::string_view default_json, LiveCheck check) {
  if (!ValidName(name)) {
    return Status::InvalidArgument("live value name \"" + std::string(name) +
                                   "\": 1..64 of [A-Za-z0-9_-]");
  }
  const std::string key = std::string(plugin) + "." + std::string(name);
  MOLT_ASSIGN_OR_RETURN(std::string def, Canonical(default_json, "the default of " + key, true));
  std::vector<Declaration>& list = declared_[key];
  for (const Declaration& d : list) {
    if (d.owner == owner) {
      return Status::AlreadyExists("live value " + key + " is declared already");
    }
  }
  if (auto o = overrides_.find(key); o != overrides_.end()) {
    if (std::string why = TypeMismatch(o->second.value, def); !why.empty()) {
      Log().Warn(
          "live value {}: the stored override {}: serving the default (molt config unset "
          "{} clears it)",
          key, why, key);
    }
  }
  list.push_back({owner, std::move(def), std::move(check), std::string()});
  list.back().served = Served(key, list.back());
  return Status::Ok();
}

void LiveValues::Forget(const void* owner) {
  for (auto it = declared_.begin(); it != declared_.end();) {
    std::erase_if(it->second, [owner](const Declaration& d) { return d.owner == owner; });
    it = it->second.empty() ? declared_.erase(it) : std::next(it);
  }
}

const LiveValues::Declaration* LiveValues::Newest(const std::string& key) const {
  auto it = declared_.find(key);
  return it == declared_.end() ? nullptr : &it->second.back();
}

std::string LiveValues::Served(const std::string& key, const Declaration& d) const {
  auto o = overrides_.find(key);
  return o != overrides_.end() && TypeMismatch(o->second.value, d.default_value).empty()
             ? o->second.value
             : d.default_value;
}

Result<std::string> LiveValues::Get(const void* owner, std::string_view plugin,
                                    std::string_view name) const {
  std::string key;
  key.reserve(plugin.size() + 1 + name.size());
  key.append(plugin).append(".").append(name);
  if (auto it = declared_.find(key); it != declared_.end()) {
    for (const Declaration& d : it->second) {
      if (d.owner == owner) {
        return d.served;
      }
    }
  }
  return Status::NotFound("live value \"" + std::string(name) +
                          "\" is not declared by this plugin (declare it with live_declare)");
}

void LiveValues::Set(std::string key, std::optional<std::string> value, std::string by,
                     std::function<void(Result<SetOutcome>)> done) {
  auto refuse = [&](Status s) {
    ++stats_.refused;
    done(std::move(s));
  };
  if (!open_.ok()) {
    return refuse(
        Status::FailedPrecondition("this server cannot store live values: " + open_.message()));
  }
  if (by.size() > 200) {
    return refuse(Status::InvalidArgument("\"by\" is at most 200 bytes"));
  }
  const Declaration* d = Newest(key);
  if (value) {
    if (d == nullptr) {
      return refuse(Status::NotFound("no running plugin declares the live value \"" + key +
                                     "\" (molt config get lists those that do)"));
    }
    Result<std::string> v = Canonical(*value, "the value of " + key);
    if (!v.ok()) {
      return refuse(v.status());
    }
    if (std::string why = TypeMismatch(*v, d->default_value); !why.empty()) {
      return refuse(Status::InvalidArgument("live value " + key + ": " + why));
    }
    if (d->check) {
      if (Status s = d->check(key, *v); !s.ok()) {
        return refuse(Status::Rejected("live value " + key + ": the plugin refused " + Shown(*v) +
                                       ": " + s.message()));
      }
    }
    value = std::move(v).value();
  } else if (d == nullptr && !overrides_.contains(key)) {
    return refuse(Status::NotFound("live value \"" + key + "\" is neither declared nor set"));
  }
  std::weak_ptr<LiveValues*> alive = alive_;
  thread_.Post([this, alive, key = std::move(key), value = std::move(value), by = std::move(by),
                done = std::move(done)]() mutable {
    Result<LiveChange> c = store_->Write(key, value, by, wall_ms_());
    post_([alive, c = std::move(c), done = std::move(done)]() mutable {
      if (alive.expired()) {
        return;
      }
      LiveValues& self = **alive.lock();
      if (!c.ok()) {
        ++self.stats_.refused;
        Log().Error("{}", c.status().message());
        done(c.status());
        return;
      }
      self.Apply(*c, std::move(done));
    });
  });
}

void LiveValues::Apply(const LiveChange& change, std::function<void(Result<SetOutcome>)> done) {
  const Declaration* d = Newest(change.key);
  const std::string before = d != nullptr ? d->served : std::string();
  if (change.value) {
    overrides_[change.key] = {change.key, *change.value, change.by, change.at_ms};
  } else {
    overrides_.erase(change.key);
  }
  if (auto it = declared_.find(change.key); it != declared_.end()) {
    for (Declaration& each : it->second) {
      each.served = Served(change.key, each);
    }
  }
  ++stats_.sets;
  d = Newest(change.key);
  SetOutcome out{change.key, d != nullptr ? d->served : std::string(), false, change};
  out.changed = d != nullptr && out.value != before;
  Log().Info(
      "live value {} {} by {}{}", change.key,
      change.value ? "set to " + Shown(*change.value) : std::string("unset"),
      change.by.empty() ? "an operator" : change.by,
      out.changed ? "; now " + Shown(out.value) : std::string(" (the value served is the same)"));
  if (out.changed && changed_) {
    changed_(out.key, out.value);
  }
  done(std::move(out));
}

void LiveValues::History(std::string key, std::size_t limit,
                         std::function<void(Result<std::vector<LiveChange>>)> done) {
  if (!open_.ok()) {
    done(Status::FailedPrecondition("this server cannot read live values: " + open_.message()));
    return;
  }
  std::weak_ptr<LiveValues*> alive = alive_;
  thread_.Post([this, alive, key = std::move(key), limit, done = std::move(done)]() mutable {
    Result<std::vector<LiveChange>> h = store_->History(key, limit);
    post_([alive, h = std::move(h), done = std::move(done)]() mutable {
      if (!alive.expired()) {
        done(std::move(h));
      }
    });
  });
}

std::vector<LiveView> LiveValues::List() const {
  std::map<std::string, LiveView> all;
  for (const auto& [key, list] : declared_) {
    LiveView& v = all[key];
    v.key = key;
    v.declared = true;
    v.default_value = list.back().default_value;
    v.value = list.back().served;
  }
  for (const auto& [key, o] : overrides_) {
    LiveView& v = all[key];
    v.key = key;
    v.override_value = o;
    v.override_ignored = v.declared && v.value != o.value;
  }
  std::vector<LiveView> out;
  out.reserve(all.size());
  for (auto& [key, v] : all) {
    out.push_back(std::move(v));
  }
  return out;
}

LiveStats LiveValues::stats() const {
  LiveStats s = stats_;
  s.declared = declared_.size();
  s.overrides = overrides_.size();
  return s;
}

}  // namespace molt::kernel::live

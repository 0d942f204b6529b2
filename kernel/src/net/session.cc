// SPDX-License-Identifier: Apache-2.0
// Sessions: join and leave announcements, ordered cleanups, per-visit data, owner release.
#include "kernel/src/net/session.h"

#include <algorithm>
#include <exception>

#include "kernel/src/core/logger.h"

namespace molt::kernel::net {
namespace {

const LogScope kLog("sessions");

// Runs one cleanup; a throwing cleanup is logged and the rest still run (spec: Scope).
template <class F>
void RunIsolated(SessionId id, F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    kLog.Error("session {}: a cleanup threw: {}", id, e.what());
  } catch (...) {
    kLog.Error("session {}: a cleanup threw a non-standard exception", id);
  }
}

}  // namespace

Session::Session(SessionId id, std::string user, std::vector<std::uint8_t> join_data,
                 std::string address, TimePoint now)
    : id_(id),
      user_(std::move(user)),
      join_data_(std::move(join_data)),
      address_(std::move(address)),
      joined_at_(now) {}

Session::~Session() {
  RunCleanups();
  ClearData();
}

std::uint64_t Session::Bind(Callback<void()> cleanup, const void* owner, Callback<void()> release) {
  return Add(binds_, std::move(cleanup), owner, std::move(release));
}

std::uint64_t Session::BindLast(Callback<void()> cleanup, const void* owner,
                                Callback<void()> release) {
  return Add(last_binds_, std::move(cleanup), owner, std::move(release));
}

std::uint64_t Session::Add(std::vector<Binding>& list, Callback<void()> cleanup, const void* owner,
                           Callback<void()> release) {
  const std::uint64_t id = next_binding_++;
  Binding b{id, owner, std::move(cleanup), std::move(release)};
  if (cleaned_) {
    RunEnd(b);
    return id;
  }
  list.push_back(std::move(b));
  return id;
}

void Session::RunEnd(Binding& b) {
  RunIsolated(id_, b.cleanup);
  if (b.release) {
    RunIsolated(id_, b.release);
  }
}

Status Session::Unbind(std::uint64_t binding) {
  for (auto* list : {&binds_, &last_binds_}) {
    for (auto it = list->begin(); it != list->end(); ++it) {
      if (it->id == binding) {
        Binding b = std::move(*it);
        list->erase(it);
        if (b.release) {
          RunIsolated(id_, b.release);
        }
        return Status();
      }
    }
  }
  return Status::NotFound("the binding already ran or is not bound to this session");
}

void Session::SetData(std::string_view key, void* value, Callback<void(void*)> release,
                      const void* owner) {
  auto it = data_.find(key);
  if (it != data_.end()) {
    DataSlot old = std::move(it->second);
    it->second = DataSlot{value, std::move(release), owner};
    if (old.release) {
      RunIsolated(id_, [&] { old.release(old.value); });
    }
    return;
  }
  data_.emplace(std::string(key), DataSlot{value, std::move(release), owner});
}

void* Session::GetData(std::string_view key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : it->second.value;
}

bool Session::EraseData(std::string_view key) {
  auto it = data_.find(key);
  if (it == data_.end()) {
    return false;
  }
  DataSlot old = std::move(it->second);
  data_.erase(it);
  if (old.release) {
    RunIsolated(id_, [&] { old.release(old.value); });
  }
  return true;
}

TokenBucket& Session::NewBucket(const Channel& channel, TimePoint now) {
  if (channel.id() >= buckets_.size()) {
    buckets_.resize(channel.id() + 1);
  }
  ChannelBucket& b = buckets_[channel.id()];
  b.epoch = channel.epoch();
  b.bucket = TokenBucket(channel.rate(), channel.burst(), now);
  return b.bucket;
}

void Session::RunCleanups() {
  if (cleaned_) {
    return;
  }
  cleaned_ = true;
  // A cleanup may Bind (runs at once, cleaned_ is set) or Unbind (the lists are moved out).
  std::vector<Binding> binds = std::move(binds_);
  std::vector<Binding> last = std::move(last_binds_);
  for (Binding& b : binds) {
    RunEnd(b);
  }
  for (Binding& b : last) {
    RunEnd(b);
  }
}

void Session::ClearData() {
  auto data = std::move(data_);
  data_.clear();
  for (auto& entry : data) {
    DataSlot& slot = entry.second;  // (clang < 16 cannot capture structured bindings)
    if (slot.release) {
      RunIsolated(id_, [&] { slot.release(slot.value); });
    }
  }
}

void Session::ReleaseOwner(const void* owner) {
  for (auto* list : {&binds_, &last_binds_}) {
    std::vector<Binding> mine;
    for (auto it = list->begin(); it != list->end();) {
      if (it->owner == owner) {
        mine.push_back(std::move(*it));
        it = list->erase(it);
      } else {
        ++it;
      }
    }
    for (Binding& b : mine) {
      // Released, not left: a binding with a release gets only that (its end logic never runs).
      RunIsolated(id_, b.release ? b.release : b.cleanup);
    }
  }
  for (auto it = data_.begin(); it != data_.end();) {
    if (it->second.owner == owner) {
      DataSlot slot = std::move(it->second);
      it = data_.erase(it);
      if (slot.release) {
        RunIsolated(id_, [&] { slot.release(slot.value); });
      }
    } else {
      ++it;
    }
  }
}

Sessions::Sessions(Hooks& hooks, Bus& bus)
    : hooks_(hooks),
      bus_(bus),
      start_point_(hooks.Define("Session.Start", Hooks::Mode::kFailOpen)),
      end_point_(hooks.Define("Session.End", Hooks::Mode::kFailOpen)),
      start_topic_(bus.Resolve("Kernel.SessionStart")),
      end_topic_(bus.Resolve("Kernel.SessionEnd")) {}

Sessions::~Sessions() {
  for (auto& [id, s] : sessions_) {
    s->active_ = false;
  }
}

SessionId Sessions::Start(std::string user, std::vector<std::uint8_t> join_data,
                          std::string address, TimePoint now) {
  Session& s = Create(std::move(user), std::move(join_data), std::move(address), now);
  const SessionId id = s.id();
  Announce(s);
  return id;
}

Session& Sessions::Create(std::string user, std::vector<std::uint8_t> join_data,
                          std::string address, TimePoint now) {
  const SessionId id = next_id_++;
  auto owned =
      std::make_unique<Session>(id, std::move(user), std::move(join_data), std::move(address), now);
  Session& s = *owned;
  sessions_.emplace(id, std::move(owned));
  ++active_;
  ++stats_.started;
  return s;
}

void Sessions::Announce(Session& s) {
  const SessionId id = s.id();
  Hold hold(*this);
  Value args[] = {Value::Handle(id), Value::String(s.user())};
  HookContext ctx{.args = args, .session = id};
  hooks_.Fire(start_point_, ctx);  // observational: the verdict is ignored
  if (!s.active_) {
    return;  // a handler ended it
  }
  on_session_.Fire(s);
  if (!s.active_) {
    return;
  }
  Value topic_args[] = {Value::Handle(id)};
  bus_.Publish(start_topic_, topic_args);
}

void Sessions::End(SessionId id, ExitReason reason) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || !it->second->active_) {
    return;
  }
  Session& s = *it->second;
  s.active_ = false;
  s.exit_reason_ = reason;
  --active_;
  ++stats_.ended;
  ++stats_.by_reason[static_cast<std::size_t>(reason)];
  const std::string_view name = ExitReasonName(reason);
  Hold hold(*this);
  Value args[] = {Value::Handle(id), Value::String(name)};
  HookContext ctx{.args = args, .session = id};
  hooks_.Fire(end_point_, ctx);
  Value topic_args[] = {Value::Handle(id), Value::String(name)};
  bus_.Publish(end_topic_, topic_args);
  s.RunCleanups();
  s.ClearData();
  // Callers up the stack may still hold the Session& (a handler that kicks its own session):
  // the object lives until no Hold is left.
  graveyard_.push_back(std::move(it->second));
  sessions_.erase(it);
  if (holds_ == 0) {
    graveyard_.clear();
  }
}

Sessions::Hold::Hold(Sessions& sessions) : sessions_(sessions) { ++sessions_.holds_; }

Sessions::Hold::~Hold() {
  if (--sessions_.holds_ == 0) {
    sessions_.graveyard_.clear();
  }
}

Connection Sessions::OnSession(Callback<void(Session&)> fn, const void* owner) {
  // Existing sessions first (spec: a late system misses nobody), in id order.
  std::vector<SessionId> ids = ActiveIds();
  for (SessionId id : ids) {
    if (Session* s = Get(id)) {
      try {
        fn(*s);
      } catch (const std::exception& e) {
        kLog.Error("an OnSession handler threw for session {}: {}", id, e.what());
      }
    }
  }
  Connection c = on_session_.Connect(std::move(fn));
  if (owner != nullptr) {
    owned_handlers_.emplace_back(owner, c);
  }
  return c;
}

std::vector<SessionId> Sessions::ActiveIds() const {
  std::vector<SessionId> ids;
  ids.reserve(active_);
  for (const auto& [id, s] : sessions_) {
    if (s->active_) {
      ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void Sessions::ReleaseOwner(const void* owner) {
  for (auto it = owned_handlers_.begin(); it != owned_handlers_.end();) {
    if (it->first == owner) {
      it->second.Disconnect();
      it = owned_handlers_.erase(it);
    } else {
      ++it;
    }
  }
  for (SessionId id : ActiveIds()) {
    if (Session* s = Find(id)) {
      s->ReleaseOwner(owner);
    }
  }
}

Sessions::Stats Sessions::stats() const {
  Stats s = stats_;
  s.active = active_;
  return s;
}

}  // namespace molt::kernel::net

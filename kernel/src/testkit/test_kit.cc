// SPDX-License-Identifier: Apache-2.0
// TestKit: a server's parts on a manual clock, with in-process clients (test_kit.h; each client
// is a KitPeer, kit_peer.h).
#include "kernel/src/testkit/test_kit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <utility>

#include "kernel/src/core/kernel.h"
#include "kernel/src/live/live_values.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/audit.h"
#include "kernel/src/net/network.h"
#include "kernel/src/server/assembly.h"
#include "kernel/src/store/profile_registry.h"
#include "kernel/src/store/profiles.h"
#include "kernel/src/store/sqlite_store.h"
#include "kernel/src/wire/envelope.h"
#include "kernel/src/workers/workers_api.h"

namespace molt::kernel::testkit {

namespace fs = std::filesystem;
namespace w = ::molt::wire;

namespace {

const LogScope kLog("testkit");

// The manual clock starts a century after the steady clock's epoch: the loop's timer, armed for
// its times, then never fires in a test's lifetime, and every step is the kit's.
constexpr auto kEpoch = std::chrono::hours(24 * 365 * 100);
// The longest the kit waits, in real time, for another thread (a profile save, a worker job).
constexpr auto kSettleLimit = std::chrono::seconds(60);
// The wire inspector records every message for the verdicts: leased for longer than any test.
constexpr Duration kInspectLease = std::chrono::hours(24 * 365);

// The only kit of the process (the kernel is one per process).
std::atomic<bool> g_alive{false};

}  // namespace

TestKit::TestKit(KitOptions options)
    : options_(std::move(options)), clock_(TimePoint(kEpoch)), started_(clock_.Now()) {}

Result<std::unique_ptr<TestKit>> TestKit::Create(KitOptions options) {
  if (g_alive.exchange(true)) {
    return Status::FailedPrecondition(
        "another test kit is alive in this process: destroy it first (one kit at a time, as one "
        "kernel per process)");
  }
  std::unique_ptr<TestKit> kit(new TestKit(std::move(options)));
  if (Status s = kit->Init(); !s.ok()) {
    return s;  // the destructor lets the next kit in
  }
  return kit;
}

Status TestKit::Init() {
  static std::atomic<int> kits{0};
  dir_ =
      (fs::temp_directory_path() / fmt::format("molt-testkit-{}-{}", ::getpid(), kits++)).string();
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (!fs::create_directories(dir_, ec)) {
    return Status::IoError(
        fmt::format("the test kit cannot create its directory {}: {}", dir_, ec.message()));
  }
  Config config;
  if (!options_.config_json.empty()) {
    MOLT_RETURN_IF_ERROR(
        MergeConfigJson(config, options_.config_json, "the test kit's config_json"));
  }
  ServerOptions so;
  so.plugin_dir = dir_;  // unused: the kit loads what the test names
  so.data_dir = dir_;
  if (options_.tick_rate > 0) {
    so.tick_rate = options_.tick_rate;
  }
  Settings settings;
  MOLT_RETURN_IF_ERROR(ResolveSettings(so, config, &settings));
  if (!options_.profile_db.empty()) {
    settings.profiles_db = options_.profile_db;
  } else if (config.Get("profiles.database") == nullptr && config.Get("store.url") == nullptr) {
    settings.profiles_db = std::string(store::kInMemory);
  }
  Logger::Get().SetLevel(settings.log_level);
  capture_ = Logger::Get().Capture([this](std::string_view line, LogLevel level) {
    const std::string text = fmt::format("{} {}\n", LogLevelName(level), line);
    if (level >= options_.echo && options_.echo != LogLevel::kOff) {
      std::fputs(text.c_str(), stderr);
    }
    std::lock_guard lock(logs_mu_);
    logs_ += text;
  });
  AssemblyPaths paths;
  paths.copy_dir = dir_ + "/copies";
  paths.live_db = dir_ + "/live.db";
  paths.host = store::HostId();
  paths.clock = &clock_;
  MOLT_ASSIGN_OR_RETURN(parts_, Assembly::Build(settings, std::move(config), std::move(paths)));
  net::Network& network = parts_->network();
  network.SetServing(false);  // a Hello before Load() is told "Starting", as moltd tells it
  network.Inspect(kInspectLease);
  return Status::Ok();
}

TestKit::~TestKit() {
  if (parts_ != nullptr) {
    (void)Close();
    parts_->Release();
    watches_.clear();
    parts_.reset();  // the network closes the peers, which outlive it
  }
  peers_.clear();
  capture_.Remove();
  std::error_code ec;
  fs::remove_all(dir_, ec);
  g_alive = false;
}

// --- Generations ---------------------------------------------------------------------------------

Result<std::string> TestKit::Stage(const std::vector<std::string>& paths) {
  std::error_code ec;
  if (paths.empty()) {
    return Status::InvalidArgument("no plugin named: pass plugin libraries or their directory");
  }
  if (paths.size() == 1 && fs::is_directory(paths[0], ec)) {
    return paths[0];
  }
  const fs::path build = fs::path(dir_) / fmt::format("build-{}", ++builds_);
  fs::create_directories(build, ec);
  for (const std::string& p : paths) {
    if (fs::is_directory(p, ec)) {
      return Status::InvalidArgument(fmt::format(
          "\"{}\" is a directory: name one directory alone, or the libraries in it", p));
    }
    if (!fs::is_regular_file(p, ec)) {
      return Status::NotFound(fmt::format("no plugin library at \"{}\"", p));
    }
    fs::copy_file(p, build / fs::path(p).filename(), fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return Status::IoError(fmt::format("\"{}\" cannot be copied: {}", p, ec.message()));
    }
  }
  return build.string();
}

Status TestKit::Load(const std::vector<std::string>& paths) {
  if (loaded_) {
    return Status::FailedPrecondition(
        "the plugins are loaded already: a new build goes in with molt_testkit_swap");
  }
  MOLT_ASSIGN_OR_RETURN(std::string dir, Stage(paths));
  Kernel& kernel = parts_->kernel();
  MOLT_RETURN_IF_ERROR(parts_->plugins().LoadDirectory(dir));
  loaded_ = true;
  MOLT_RETURN_IF_ERROR(kernel.Start());
  net::Network& network = parts_->network();
  if (network.options().auth == net::AuthMode::kDev) {  // as moltd refuses to serve
    MOLT_RETURN_IF_ERROR(net::FuzzGate(network.channels(), kernel.hooks()));
  }
  network.SetServing(true);
  parts_->StopIntakeOnClose();
  return Settle();
}

Status TestKit::Swap(const std::vector<std::string>& paths, std::string* report) {
  if (!loaded_) {
    return Status::FailedPrecondition("nothing serves yet: load the plugins first");
  }
  MOLT_ASSIGN_OR_RETURN(std::string dir, Stage(paths));
  const loader::SwapReport r = parts_->plugins().Reload(dir, "test kit");
  if (report != nullptr) {
    *report = r.Json();
  }
  MOLT_RETURN_IF_ERROR(Settle());
  if (!r.ok) {
    return Status::FailedPrecondition(
        fmt::format("the swap failed at {}: {}{}", r.stage, r.error,
                    r.restored ? " (the previous build was restored and serves)" : ""));
  }
  return Status::Ok();
}

Status TestKit::Close() {
  if (std::exchange(closed_, true)) {
    return Status::Ok();
  }
  if (!loaded_) {
    parts_->network().Shutdown();
    return Status::Ok();
  }
  bool done = false;
  parts_->Close(
      "test kit close",
      [] { kLog.Error("the close ran past its deadline: a stop() blocks (the kit waits on)"); },
      [&done](const CloseOutcome&) { done = true; });
  // The drain's saves are on the store's thread; its deadline is a task on the manual clock.
  MOLT_RETURN_IF_ERROR(Settle());
  if (!done) {
    MOLT_RETURN_IF_ERROR(Advance(Seconds(60)));
  }
  return Status::Ok();
}

Status TestKit::SelfTest(std::string* report) {
  if (!loaded_ || closed_) {
    return Status::FailedPrecondition(
        "no generation serves: the self-tests run on the plugins loaded and not closed");
  }
  const std::vector<loader::PluginHost::SelfTestRun> runs = parts_->plugins().RunSelfTests();
  *report = loader::PluginHost::SelfTestsJson(runs);
  MOLT_RETURN_IF_ERROR(Settle());
  std::size_t failed = 0;
  std::string why;
  for (const loader::PluginHost::SelfTestRun& run : runs) {
    for (const abi::PluginInstance::SelfTestResult& t : run.tests) {
      if (!t.status.ok()) {
        why += fmt::format("{}{}: \"{}\": {}", failed++ > 0 ? "; " : "", run.plugin, t.name,
                           t.status.message());
      }
    }
    if (!run.error.ok()) {
      why += fmt::format("{}{}: {}", failed++ > 0 ? "; " : "", run.plugin, run.error.message());
    }
  }
  return failed == 0 ? Status::Ok()
                     : Status::Rejected(fmt::format("{} self-test(s) failed: {}", failed, why));
}

// --- Time ----------------------------------------------------------------------------------------

bool TestKit::Busy() const {
  return parts_->profile_db().stats().queued > 0 || parts_->workers().stats().jobs > 0 ||
         live_pending_ > 0;
}

Status TestKit::Settle() {
  boost::asio::io_context& io = parts_->kernel().loop().io();
  const TimePoint give_up = RealNow() + kSettleLimit;
  for (;;) {
    for (const std::unique_ptr<KitPeer>& p : peers_) {
      for (std::vector<std::uint8_t>& frame : p->TakeOwed()) {
        if (!p->closed()) {
          parts_->network().Receive(*p, frame);
        }
      }
    }
    if (io.stopped()) {
      io.restart();
    }
    if (io.poll() > 0) {
      continue;
    }
    if (!Busy()) {
      // Another thread hands its results back before it stops counting them as out: what it
      // handed back between the poll above and this check is run before the kit returns.
      if (io.poll() > 0) {
        continue;
      }
      return Status::Ok();
    }
    if (RealNow() > give_up) {
      return Status::TimedOut(fmt::format(
          "the test kit waited {} s for the server's other threads: {} profile store "
          "operation(s), {} worker job(s) and {} live value set(s) are still out",
          std::chrono::duration_cast<std::chrono::seconds>(kSettleLimit).count(),
          parts_->profile_db().stats().queued, parts_->workers().stats().jobs, live_pending_));
    }
    io.run_one_for(std::chrono::milliseconds(1));
  }
}

Status TestKit::Advance(Duration d) {
  if (d < Duration::zero()) {
    return Status::InvalidArgument("time moves forward only: advance by 0 seconds or more");
  }
  Scheduler& scheduler = parts_->kernel().scheduler();
  const TimePoint target = clock_.Now() + d;
  for (;;) {
    MOLT_RETURN_IF_ERROR(Settle());
    const std::optional<TimePoint> wake = scheduler.NextWake();
    if (!wake || *wake > target) {
      break;
    }
    clock_.Set(std::max(clock_.Now(), *wake));
    scheduler.Step();
  }
  clock_.Set(target);
  return Settle();
}

double TestKit::now_seconds() {
  return std::chrono::duration<double>(clock_.Now() - started_).count();  // 30 s reads 30
}

// --- Clients -------------------------------------------------------------------------------------

Result<molt_session_t> TestKit::Join(std::string_view user,
                                     std::span<const std::uint8_t> credentials,
                                     std::span<const std::uint8_t> join_data) {
  // Each client from an address of its own: the per-address handshake limits are not the test.
  const std::size_t n = peers_.size() + 1;
  peers_.push_back(std::make_unique<KitPeer>(
      fmt::format("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255), std::string(user),
      [this](std::uint16_t id) { return ChannelName(id); }));
  KitPeer& peer = *peers_.back();
  if (!parts_->network().Attach(peer)) {
    return Status::FailedPrecondition("the server is closed: it takes no new connection");
  }
  flatbuffers::FlatBufferBuilder b;
  const std::vector<std::uint8_t> creds(credentials.begin(), credentials.end());
  const std::vector<std::uint8_t> join(join_data.begin(), join_data.end());
  const std::string name(user);
  auto hello = w::CreateHelloDirect(b, w::kProtocolVersion, 0, name.c_str(), &creds, &join);
  parts_->network().Receive(peer, w::FinishFrame(b, w::Body::Hello, hello.Union()));
  MOLT_RETURN_IF_ERROR(Settle());
  switch (peer.state()) {
    case KitPeer::State::kWelcomed:
      sessions_[peer.id()] = &peer;
      return peer.id();
    case KitPeer::State::kRefused:
      return peer.refusal();
    case KitPeer::State::kEnded:
      return Status::Rejected(
          fmt::format("the server closed {}'s connection during the Hello", peer.user()));
    case KitPeer::State::kHandshake:
      break;
  }
  return Status::TimedOut(fmt::format(
      "the server has not answered {}'s Hello (an Auth.Hello handler that has not decided? "
      "advance the clock past net.handshake_timeout_seconds to see it refused)",
      peer.user()));
}

Result<KitPeer*> TestKit::Find(molt_session_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return Status::NotFound(fmt::format("session {} was never joined in this kit", session));
  }
  return it->second;
}

Result<KitPeer*> TestKit::Joined(molt_session_t session) {
  MOLT_ASSIGN_OR_RETURN(KitPeer * p, Find(session));
  if (p->state() != KitPeer::State::kWelcomed) {
    return Status::Stale(fmt::format("session {} ({}) has ended", session, p->user()));
  }
  return p;
}

Status TestKit::Leave(molt_session_t session) {
  MOLT_ASSIGN_OR_RETURN(KitPeer * p, Joined(session));
  flatbuffers::FlatBufferBuilder b;
  parts_->network().Receive(
      *p, w::FinishFrame(b, w::Body::Bye, w::CreateByeDirect(b, "ClientClosed", "").Union()));
  return Settle();
}

Status TestKit::Send(KitPeer& peer, std::span<const std::uint8_t> frame, std::string_view channel) {
  net::Network& network = parts_->network();
  const std::uint64_t before = network.tap().last();
  network.Receive(peer, frame);
  // The verdict of the one inbound message, recorded before what it caused.
  Status verdict = Status::Ok();
  const net::WireTap::Page page = network.tap().Since(before);
  for (const net::WireFrame& f : page.items) {
    if (!f.inbound) {
      continue;
    }
    if (f.verdict == "handler_error") {
      verdict =
          Status::Internal(fmt::format("{}: the handler failed (its error is logged)", channel));
    } else if (f.verdict == "rate_limited") {
      verdict = Status::RateLimited(fmt::format("{}: rate_limited: {}", channel, f.detail));
    } else if (f.verdict != "accepted") {
      verdict = Status::Rejected(fmt::format("{}: {}: {}", channel, f.verdict, f.detail));
    }
    break;
  }
  MOLT_RETURN_IF_ERROR(Settle());
  return verdict;
}

Result<net::ChannelId> TestKit::ChannelNamed(std::string_view name, net::ChannelKind kind) {
  const net::Channel* ch = parts_->network().channels().Find(name);
  const bool fits =
      ch != nullptr &&
      (kind == net::ChannelKind::kIntent ? net::IntentLike(ch->kind()) : ch->kind() == kind);
  if (!fits) {
    return Status::NotFound(fmt::format("no {} channel is named \"{}\"",
                                        kind == net::ChannelKind::kIntent ? "intent" : "request",
                                        name));
  }
  return ch->id();
}

Status TestKit::Intent(molt_session_t session, std::string_view channel,
                       std::span<const std::uint8_t> payload) {
  MOLT_ASSIGN_OR_RETURN(KitPeer * p, Joined(session));
  MOLT_ASSIGN_OR_RETURN(net::ChannelId id, ChannelNamed(channel, net::ChannelKind::kIntent));
  flatbuffers::FlatBufferBuilder b;
  // Unreliable and predicted intents carry a sequence number: the peer's request counter serves.
  const auto intent = w::CreateIntent(b, id, w::PayloadVector(b, payload), p->NextRequestId());
  return Send(*p, w::FinishFrame(b, w::Body::Intent, intent.Union()), channel);
}

Status TestKit::Request(molt_session_t session, std::string_view channel,
                        std::span<const std::uint8_t> payload, std::uint32_t* id) {
  *id = 0;
  MOLT_ASSIGN_OR_RETURN(KitPeer * p, Joined(session));
  MOLT_ASSIGN_OR_RETURN(net::ChannelId channel_id,
                        ChannelNamed(channel, net::ChannelKind::kRequest));
  *id = p->NextRequestId();
  flatbuffers::FlatBufferBuilder b;
  const auto request = w::CreateRequest(b, channel_id, *id, w::PayloadVector(b, payload));
  return Send(*p, w::FinishFrame(b, w::Body::Request, request.Union()), channel);
}

const TestKit::Message* TestKit::Next(molt_session_t session, Status* error) {
  if (session != 0) {
    Result<KitPeer*> p = Find(session);
    if (!p.ok()) {
      *error = p.status();
      return nullptr;
    }
    std::optional<Message> m = (*p)->Next();
    if (!m) {
      return nullptr;
    }
    current_ = std::move(*m);
    return &current_;
  }
  if (bus_.empty()) {
    return nullptr;
  }
  current_ = std::move(bus_.front());
  bus_.pop_front();
  return &current_;
}

Status TestKit::Watch(std::string_view pattern) {
  watches_.push_back(
      parts_->kernel().bus().Subscribe(pattern, [this](std::string_view topic, Args args) {
        Message m;
        m.kind = MOLT_TESTKIT_BUS;
        m.channel = std::string(topic);
        for (const Value& a : args) {
          if (a.type == MOLT_VALUE_STRING || a.type == MOLT_VALUE_BYTES) {
            m.arg_bytes.emplace_back(static_cast<const char*>(a.as.ptr), a.size);
          }
        }
        std::size_t next = 0;  // arg_bytes no longer grows: its strings stay where they are
        for (const Value& a : args) {
          molt_value v = a;
          if (a.type == MOLT_VALUE_STRING || a.type == MOLT_VALUE_BYTES) {
            v.as.ptr = m.arg_bytes[next++].data();
          }
          m.args.push_back(v);
        }
        bus_.push_back(std::move(m));
      }));
  return Status::Ok();
}

Result<molt_value> TestKit::ReplicaField(molt_session_t session, std::string_view replica,
                                         std::string_view field) {
  MOLT_ASSIGN_OR_RETURN(KitPeer * p, Find(session));
  molt_value v{};
  MOLT_RETURN_IF_ERROR(p->ReplicaValue(replica, field, &v));
  return v;
}

std::string TestKit::ChannelName(std::uint16_t id) {
  const net::Channel* ch = parts_->network().channels().Find(id);
  return ch != nullptr ? ch->name() : std::string();
}

// --- The server's side ---------------------------------------------------------------------------

Result<std::string> TestKit::Profile(std::string_view store_name, std::string_view user) {
  store::Profiles* profiles = parts_->profiles().Find(store_name);
  for (const auto& [id, peer] : sessions_) {
    if (profiles != nullptr && peer->user() == user && peer->state() == KitPeer::State::kWelcomed) {
      if (Result<std::string> doc = profiles->Get(id); doc.ok()) {
        return doc;
      }
    }
  }
  std::optional<Result<store::Record>> read;
  parts_->profile_db().Read(fmt::format("{}/{}", store_name, user),
                            [&read](Result<store::Record> r) { read = std::move(r); });
  while (!read) {
    MOLT_RETURN_IF_ERROR(Settle());
  }
  if (read->ok() && (*read)->data) {
    return *(*read)->data;
  }
  if (!read->ok() && read->status().code() != Status::Code::kNotFound) {
    return read->status();
  }
  return Status::NotFound(fmt::format(
      "no profile of \"{}\" in the store \"{}\": not loaded by a session, never saved{}", user,
      store_name, profiles == nullptr ? " (and no plugin declares that store)" : ""));
}

Status TestKit::Publish(std::string_view topic, std::span<const molt_value> args) {
  std::vector<Value> values(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    static_cast<molt_value&>(values[i]) = args[i];
  }
  parts_->kernel().bus().Publish(topic, values);
  return Settle();
}

Status TestKit::SetLive(std::string_view key, std::optional<std::string_view> json) {
  std::optional<Status> outcome;
  ++live_pending_;
  parts_->live().Set(std::string(key),
                     json ? std::optional<std::string>(std::string(*json)) : std::nullopt,
                     "test kit", [this, &outcome](Result<live::SetOutcome> r) {
                       --live_pending_;
                       outcome = r.status();
                     });
  MOLT_RETURN_IF_ERROR(Settle());
  return outcome.value_or(Status::Internal("the live value set was never answered"));
}

std::string TestKit::StatsJson() { return boost::json::serialize(parts_->kernel().StatsObject()); }

std::string TestKit::TakeLogs() {
  std::lock_guard lock(logs_mu_);
  return std::exchange(logs_, {});
}

}  // namespace molt::kernel::testkit

// SPDX-License-Identifier: Apache-2.0
// AdminApi: access on the HTTP thread, answers built on the kernel thread.
#include "kernel/src/admin/admin_api.h"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <fstream>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/dashboard.h"
#include "kernel/src/admin/debug_bundle.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/error_watch.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/metrics.h"
#include "kernel/src/admin/stats_json.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/net/network.h"
#include "kernel/src/store/profile_store.h"

namespace molt::kernel::admin {
namespace {

// How a session is linked now: "tcp", "websocket", or "" while its link is lost.
const char* TransportOf(const net::Session& s) {
  if (s.peer() == nullptr) {
    return "";
  }
  return s.peer()->websocket() ? "websocket" : "tcp";
}

namespace json = boost::json;

constexpr std::string_view kApi = "/api/v1/";
constexpr std::string_view kText = "text/plain; charset=utf-8";
constexpr std::size_t kDefaultPage = 100;
constexpr std::size_t kMaxPage = 1000;
// How long the wire inspector records after each read of /api/v1/wire.
constexpr Duration kInspectLease = std::chrono::seconds(10);

HttpResponse DashboardPage() {
  return {200,
          "text/html; charset=utf-8",
          std::string(kDashboardHtml),
          {{"Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'"},
           {"X-Content-Type-Options", "nosniff"},
           {"Referrer-Policy", "no-referrer"},
           {"Cache-Control", "no-store"}}};
}

std::string IsoTime(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(t)), ms.count() % 1000);
}

}  // namespace

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

Result<std::string> LoadAdminToken(const std::string& path, const std::string& configured) {
  if (!configured.empty()) {
    return configured;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      return Status::FailedPrecondition(
          fmt::format("admin token file {} can be read by other users (mode {:04o}): chmod 600 {}",
                      path, st.st_mode & 0777, path));
    }
    std::ifstream in(path);
    std::string token;
    std::getline(in, token);
    if (token.size() < 16) {
      return Status::FailedPrecondition("admin token file " + path +
                                        " holds no token of 16 characters or more: delete it "
                                        "and a new one is made at the next start");
    }
    return token;
  }
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    return Status::Internal("admin token: no random bytes from OpenSSL");
  }
  std::string token;
  for (unsigned char b : bytes) {
    token += fmt::format("{:02x}", b);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError(
        fmt::format("admin token file {} cannot be created: {}", path, std::strerror(errno)));
  }
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!written) {
    ::unlink(path.c_str());
    return Status::IoError("admin token file " + path + " cannot be written");
  }
  return token;
}

AdminApi::AdminApi(AdminSources sources, std::string token)
    : sources_(std::move(sources)),
      deploys_(sources_.deploys),
      token_(std::move(token)),
      started_(RealNow()) {}

bool AdminApi::Authorized(const HttpRequest& request) const {
  constexpr std::string_view kBearer = "Bearer ";
  const std::string_view auth = request.authorization;
  return auth.rfind(kBearer, 0) == 0 && ConstantTimeEquals(auth.substr(kBearer.size()), token_);
}

HttpResponse AdminApi::Unauthorized() {
  HttpResponse r = Error(401,
                         "this needs the admin token: send \"Authorization: Bearer <token>\" "
                         "(the token is in the data directory's admin.token, or the "
                         "configuration's admin.token)");
  r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"moltd\"");
  return r;
}

void AdminApi::Handle(HttpRequest request, HttpReply reply) {
  if (request.path == "/" || request.path == "/index.html") {
    // The dashboard: a page with no secret in it (it asks for the token), answered here so it
    // loads even while the kernel thread is stuck.
    if (request.method != "GET" && request.method != "HEAD") {
      HttpResponse r = Error(405, "/ takes GET");
      r.headers.emplace_back("Allow", "GET");
      reply(std::move(r));
      return;
    }
    reply(DashboardPage());
    return;
  }
  const bool open =
      request.path == "/healthz" || request.path == "/readyz" || request.path == "/metrics";
  if (!open) {
    if (request.path.rfind(kApi, 0) != 0) {
      reply(Error(404, "no such path: " + request.path + " (the API is under /api/v1/)"));
      return;
    }
    if (!Authorized(request)) {
      reply(Unauthorized());
      return;
    }
    if (HandleDeploys(std::string_view(request.path).substr(kApi.size()), request, reply)) {
      return;
    }
  }
  // The process's figures come from /proc: read here, off the kernel thread.
  ProcessFigures process;
  if (request.path == "/metrics" || request.path == "/api/v1/status") {
    process = ReadProcessFigures();
  }
  sources_.kernel.loop().Post(
      [this, request = std::move(request), process, reply = std::move(reply)]() mutable {
        try {
          Route(request, process, reply);
        } catch (const std::exception& e) {
          reply(Error(500, std::string("internal error: ") + e.what()));
        }
      });
}

void AdminApi::Route(const HttpRequest& req, const ProcessFigures& process, HttpReply& reply) {
  const std::string& path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  auto method_not_allowed = [&](std::string_view allowed) {
    HttpResponse r = Error(405, fmt::format("{} takes {}", path, allowed));
    r.headers.emplace_back("Allow", std::string(allowed));
    reply(std::move(r));
  };
  if (path == "/healthz") {
    // Answered from the kernel thread (a watchdog: no answer, no health). A plugin callback
    // abandoned at its deadline leaves the server serving, degraded: each one is a line.
    std::string body = "ok\n";
    if (const std::vector<std::string>& stuck = sources_.plugins.stuck_callbacks();
        !stuck.empty()) {
      body = "degraded: " + std::to_string(stuck.size()) +
             " plugin callback(s) abandoned at their deadline, still mapped (fix the plugin; "
             "docs/generations.md, \"Deadlines\")\n";
      for (const std::string& line : stuck) {
        body += "  " + line + "\n";
      }
    }
    reply({200, std::string(kText), std::move(body), {}});
    return;
  }
  if (path == "/readyz") {
    Ready(std::move(reply));
    return;
  }
  if (path == "/metrics") {
    MetricsWriter w;
    WriteProcessMetrics(w, process);
    reply({200, "text/plain; version=0.0.4; charset=utf-8", w.Take() + Metrics(), {}});
    return;
  }
  const std::string_view rest = std::string_view(path).substr(kApi.size());
  if (HandleLive(rest, req, reply)) {
    return;
  }
  if (rest == "status" || rest == "diagnostics" || rest == "errors" || rest == "plugins" ||
      rest == "channels" || rest == "hooks" || rest == "logs" || rest == "sessions" ||
      rest == "profiles" || rest == "tasks" || rest == "wire" || rest == "series") {
    if (!get) {
      method_not_allowed("GET");
      return;
    }
    if (rest == "status") {
      reply(Json(200, StatusJson(process)));
    } else if (rest == "diagnostics") {
      reply(Json(200, sources_.diagnostics.ToJson()));
    } else if (rest == "series") {
      reply(Json(200, SeriesJson()));
    } else if (rest == "wire") {
      reply(Json(200, WireJson(req)));
    } else if (rest == "tasks") {
      reply(Json(200, TasksJson()));
    } else if (rest == "profiles") {
      reply(Json(200, StoreJson(sources_.store.stats())));
    } else if (rest == "errors") {
      reply(Json(200, ErrorsJson()));
    } else if (rest == "plugins") {
      reply(Json(200, sources_.plugins.StatsObject()));
    } else if (rest == "channels") {
      reply(Json(200, json::object{{"channels", ChannelsJson(sources_.network.Snapshot())}}));
    } else if (rest == "hooks") {
      reply(Json(200, HooksJson()));
    } else if (rest == "logs") {
      reply(Json(200, LogsJson(req)));
    } else {
      reply(SessionsPage(req));
    }
    return;
  }
  if (rest == "servers") {
    if (!get) {
      method_not_allowed("GET");
      return;
    }
    Servers(req, std::move(reply));
    return;
  }
  if (rest == "drain") {
    if (req.method != "POST") {
      method_not_allowed("POST");
      return;
    }
    Drain(req, std::move(reply));
    return;
  }
  if (rest == "bundle") {
    if (req.method != "POST") {
      method_not_allowed("POST");
      return;
    }
    std::string reason = QueryValue(req.query, "reason");
    Result<std::string> path = sources_.write_bundle(reason.empty() ? "manual" : reason);
    if (!path.ok()) {
      reply(Error(500, path.status().message()));
      return;
    }
    LogScope("Admin").Info("debug bundle written to {}", *path);
    reply(Json(200, json::object{{"path", *path}}));
    return;
  }
  if (rest == "reload") {
    if (req.method != "POST") {
      method_not_allowed("POST");
      return;
    }
    // ?wait=S: the answer is the swap's report, once the swap is over (at most S seconds,
    // 1..600); without it, 202 at once.
    const std::string wait_text = QueryValue(req.query, "wait");
    const std::optional<std::uint64_t> wait =
        wait_text.empty() ? std::optional<std::uint64_t>(0) : Number(wait_text);
    if (!wait || *wait > 600) {
      reply(Error(400, "wait is a number of seconds, 1 to 600 (or leave it out: 202 at once)"));
      return;
    }
    if (*wait == 0) {
      sources_.reload(nullptr);
      reply(Json(202, json::object{{"accepted", true},
                                   {"note",
                                    "the swap runs on the next steps; its report is logged and "
                                    "GET /api/v1/plugins shows the generation serving (or POST "
                                    "with ?wait=SECONDS for the report)"}}));
      return;
    }
    // One answer: the report, or at the deadline a 202 saying it is still running.
    struct Waiting {
      HttpReply reply;
      TaskHandle deadline;
      bool answered = false;
    };
    auto waiting = std::make_shared<Waiting>();
    waiting->reply = std::move(reply);
    waiting->deadline = sources_.kernel.scheduler().After(
        Seconds(static_cast<double>(*wait)),
        [waiting] {
          if (!std::exchange(waiting->answered, true)) {
            waiting->reply(Json(202, json::object{{"accepted", true},
                                                  {"note",
                                                   "the swap did not finish in time; its report "
                                                   "will be logged"}}));
          }
        },
        Priority::kKernel, TaskOrigin::Named("admin reload wait"));
    sources_.reload([waiting](const loader::SwapReport& r) {
      if (!std::exchange(waiting->answered, true)) {
        waiting->deadline.Cancel();
        waiting->reply(Json(200, json::object{{"report", r.ToJson()}}));
      }
    });
    return;
  }
  if (rest.rfind("profiles/", 0) == 0) {
    if (!get) {
      method_not_allowed("GET");
      return;
    }
    Profile(std::string(rest.substr(9)), std::move(reply));
    return;
  }
  if (rest.rfind("sessions/", 0) == 0) {
    std::string_view id = rest.substr(9);
    const std::size_t slash = id.find('/');
    if (slash == std::string_view::npos) {
      if (!get) {
        method_not_allowed("GET");
        return;
      }
      reply(SessionJson(id));
      return;
    }
    if (id.substr(slash) == "/kick") {
      if (req.method != "POST") {
        method_not_allowed("POST");
        return;
      }
      reply(KickSession(id.substr(0, slash), req));
      return;
    }
  }
  reply(Error(404, "no such path: " + path + " (docs/operations.md lists the API)"));
}

void AdminApi::Ready(HttpReply reply) {
  std::vector<std::string> not_ready;
  if (sources_.closing()) {
    not_ready.emplace_back("the server is closing");
  }
  if (!sources_.network.serving() || sources_.plugins.generation().empty()) {
    not_ready.emplace_back("no plugin generation serves");
  }
  if (sources_.network.port() == 0) {
    not_ready.emplace_back("clients are not accepted (not listening)");
  }
  // The store answers a read of a key nobody has on its own thread: reachable, and not stuck.
  sources_.store.Read("molt.readyz", [reply = std::move(reply), not_ready = std::move(not_ready)](
                                         Result<store::Record> r) mutable {
    if (!r.ok() && r.status().code() != Status::Code::kNotFound) {
      not_ready.push_back("the profile store failed a read: " + r.status().message());
    }
    if (not_ready.empty()) {
      reply({200, std::string(kText), "ready\n", {}});
      return;
    }
    std::string text = "not ready:";
    for (const std::string& why : not_ready) {
      text += " " + why + ";";
    }
    text.back() = '\n';
    reply({503, std::string(kText), std::move(text), {}});
  });
}

json::object AdminApi::StatusJson(const ProcessFigures& p) const {
  Kernel& k = sources_.kernel;
  const KernelStats ks = k.Stats();
  json::object o;
  o["version"] = ks.version;
  o["role"] = Kernel::RoleName(ks.role);
  o["uptime_seconds"] = ToSeconds(RealNow() - started_);
  o["closing"] = sources_.closing();
  o["generation"] = sources_.plugins.generation();
  o["sessions"] = sources_.network.sessions().count();
  o["tps"] = sources_.diagnostics.last().tps;  // over the last diagnostics window
  o["scheduler"] = {{"steps", ks.scheduler.steps},
                    {"tasks_run", ks.scheduler.tasks_run},
                    {"tasks_deferred", ks.scheduler.tasks_deferred},
                    {"errors", ks.scheduler.errors},
                    {"last_step_seconds", ToSeconds(ks.scheduler.last_step)},
                    {"budget_seconds", ToSeconds(ks.scheduler.last_budget)}};
  o["process"] = {{"resident_bytes", p.resident_bytes},
                  {"cpu_seconds", p.cpu_seconds},
                  {"open_fds", p.open_fds},
                  {"max_fds", p.max_fds},
                  {"heap_in_use_bytes", p.heap_in_use_bytes}};
  // Every subsystem's own figures (net, generations), as the stats slot gives plugins.
  o["stats"] = k.StatsObject();
  return o;
}

void AdminApi::Servers(const HttpRequest& req, HttpReply reply) {
  if (sources_.fleet == nullptr) {
    reply(Error(503, "this server keeps no fleet (a check runs alone)"));
    return;
  }
  // This server's own row is always fresh: reported now, the others as their heartbeats left
  // them.
  sources_.fleet->Beat(sources_.self_report());
  sources_.fleet->List(
      QueryValue(req.query, "branch"),
      [reply = std::move(reply), shared = sources_.fleet->shared()](
          Result<std::vector<fleet::ServerReport>> servers) mutable {
        if (!servers.ok()) {
          reply(Error(503, servers.status().message()));
          return;
        }
        json::array list;
        for (const fleet::ServerReport& r : *servers) {
          list.push_back(json::object{{"id", r.id},
                                      {"branch", r.branch},
                                      {"build", r.build},
                                      {"applied_seq", r.applied_seq},
                                      {"sessions", r.sessions},
                                      {"tps", r.tps},
                                      {"health", r.health},
                                      {"state", r.state},
                                      {"address", r.address},
                                      {"websocket_address", r.websocket_address},
                                      {"started_ms", r.started_ms},
                                      {"interval_ms", r.interval_ms},
                                      {"last_seen_ms", r.last_seen_ms}});
        }
        reply(Json(200, json::object{{"servers", std::move(list)}, {"shared", shared}}));
      });
}

void AdminApi::Drain(const HttpRequest& req, HttpReply reply) {
  std::error_code ec;
  const json::value doc =
      req.body.empty() ? json::value(json::object()) : json::parse(req.body, ec);
  const json::object* o = !ec ? doc.if_object() : nullptr;
  const json::value* server = o != nullptr ? o->if_contains("server") : nullptr;
  const json::value* deadline = o != nullptr ? o->if_contains("deadline_seconds") : nullptr;
  const double seconds =
      deadline != nullptr && deadline->is_number() ? deadline->to_number<double>() : 0;
  if (o == nullptr || (server != nullptr && !server->is_string()) ||
      (deadline != nullptr && (!deadline->is_number() || !(seconds >= 0 && seconds <= 86400)))) {
    reply(Error(400,
                "the body must be a JSON object: {\"server\": \"<id>\" (this server when left "
                "out), \"deadline_seconds\": <0 to 86400: how long its players may stay; 0: "
                "they move at once>} (docs/fleet.md)"));
    return;
  }
  if (sources_.drain == nullptr || sources_.self_report == nullptr) {
    reply(Error(503, "this server takes no drain (a check runs alone)"));
    return;
  }
  const fleet::ServerReport self = sources_.self_report();
  const std::string id = server != nullptr ? std::string(server->as_string()) : self.id;
  const json::object answer{{"server", id}, {"state", "draining"}, {"deadline_seconds", seconds}};
  if (id == self.id) {
    if (!sources_.drain(seconds, "admin API")) {
      reply(Error(409, "server " + id + " is already closing"));
      return;
    }
    reply(Json(202, answer));
    return;
  }
  if (sources_.fleet == nullptr || !sources_.fleet->shared()) {
    reply(Error(404, "no server \"" + id + "\" here: this server (" + self.id +
                         ") keeps no fleet database, so it drains only itself"));
    return;
  }
  fleet::Fleet* fleet = sources_.fleet;
  fleet->List("", [fleet, id, seconds, answer, reply = std::move(reply)](
                      Result<std::vector<fleet::ServerReport>> servers) mutable {
    if (!servers.ok()) {
      reply(Error(503, servers.status().message()));
      return;
    }
    auto it = std::find_if(servers->begin(), servers->end(),
                           [&](const fleet::ServerReport& s) { return s.id == id; });
    if (it == servers->end()) {
      reply(Error(404, "no server \"" + id + "\" in the fleet (molt servers lists them)"));
      return;
    }
    if (it->state != "live") {
      reply(Error(409, "server " + id + " is " + it->state + ": only a live server drains"));
      return;
    }
    fleet->RequestDrain(id, seconds, [answer, reply = std::move(reply)](Status s) mutable {
      reply(s.ok() ? Json(202, answer) : Error(503, s.message()));
    });
  });
}

HttpResponse AdminApi::SessionsPage(const HttpRequest& req) const {
  const std::string offset_text = QueryValue(req.query, "offset");
  const std::string limit_text = QueryValue(req.query, "limit");
  const std::optional<std::uint64_t> offset =
      offset_text.empty() ? std::optional<std::uint64_t>(0) : Number(offset_text);
  const std::optional<std::uint64_t> limit =
      limit_text.empty() ? std::optional<std::uint64_t>(kDefaultPage) : Number(limit_text);
  if (!offset || !limit || *limit == 0 || *limit > kMaxPage) {
    return Error(400, fmt::format("offset must be a number, and limit 1..{}", kMaxPage));
  }
  net::Sessions& sessions = sources_.network.sessions();
  std::vector<net::SessionId> ids = sessions.ActiveIds();
  std::sort(ids.begin(), ids.end());
  json::array list;
  const TimePoint now = RealNow();
  for (std::size_t i = static_cast<std::size_t>(std::min<std::uint64_t>(*offset, ids.size()));
       i < ids.size() && list.size() < *limit; ++i) {
    const net::Session* s = sessions.Get(ids[i]);
    list.push_back({{"id", s->id()},
                    {"user", s->user()},
                    {"address", s->address()},
                    {"connected_seconds", ToSeconds(now - s->joined_at())},
                    {"rtt_seconds", ToSeconds(s->rtt())},
                    {"link_lost", s->detached()},
                    {"transport", TransportOf(*s)}});
  }
  json::object o{{"total", ids.size()}, {"offset", *offset}, {"sessions", std::move(list)}};
  return Json(200, o);
}

HttpResponse AdminApi::SessionJson(std::string_view id_text) const {
  const std::optional<std::uint64_t> id = Number(id_text);
  const net::Session* s = id ? sources_.network.sessions().Get(*id) : nullptr;
  if (s == nullptr) {
    return Error(404, fmt::format("no session {} is connected", id_text));
  }
  json::object o{{"id", s->id()},
                 {"user", s->user()},
                 {"address", s->address()},
                 {"connected_seconds", ToSeconds(RealNow() - s->joined_at())},
                 {"rtt_seconds", ToSeconds(s->rtt())},
                 {"last_rtt_seconds", ToSeconds(s->last_rtt())},
                 {"link_lost", s->detached()},
                 {"transport", TransportOf(*s)},
                 {"queued_bytes", s->peer() != nullptr ? s->peer()->queued_bytes() : 0}};
  return Json(200, o);
}

HttpResponse AdminApi::KickSession(std::string_view id_text, const HttpRequest& req) {
  const std::optional<std::uint64_t> id = Number(id_text);
  if (!id || sources_.network.sessions().Get(*id) == nullptr) {
    return Error(404, fmt::format("no session {} is connected", id_text));
  }
  std::string text = QueryValue(req.query, "reason");
  if (text.empty()) {
    text = "kicked by an operator";
  }
  if (text.size() > 200) {
    return Error(400, "reason is over 200 characters");
  }
  if (Status s = sources_.network.Kick(*id, text); !s.ok()) {
    return Error(409, s.message());
  }
  LogScope("Admin").Info("session {} kicked by {}: {}", *id, "an operator", text);
  return Json(200, json::object{{"kicked", *id}, {"reason", text}});
}

json::object AdminApi::HooksJson() const {
  json::array list;
  const kernel::Hooks& hooks = sources_.kernel.hooks();
  for (const kernel::Hooks::PointInfo& p : hooks.ListPoints()) {
    list.push_back(
        {{"name", p.name},
         {"fail_open", p.fail_open},
         {"handlers", p.handlers},
         {"fired", p.fired},
         {"rejected", p.rejected},
         {"errors", p.errors},
         {"timed", p.timed},
         {"average_chain_us",
          p.timed == 0 ? 0.0 : ToSeconds(p.time_total) * 1e6 / static_cast<double>(p.timed)},
         {"max_chain_us", ToSeconds(p.time_max) * 1e6}});
  }
  return {{"timing", hooks.timing()}, {"hooks", std::move(list)}};
}

json::object AdminApi::WireJson(const HttpRequest& req) {
  net::Network& network = sources_.network;
  network.Inspect(kInspectLease);
  const std::optional<std::uint64_t> since = Number(QueryValue(req.query, "since"));
  const net::WireTap::Page page = network.tap().Since(since.value_or(0));
  json::array frames;
  for (const net::WireFrame& f : page.items) {
    std::string hex;
    hex.reserve(f.head.size() * 2);
    for (std::uint8_t b : f.head) {
      hex += fmt::format("{:02x}", b);
    }
    frames.push_back({{"seq", f.seq},
                      {"time", IsoTime(f.time)},
                      {"direction", f.inbound ? "in" : "out"},
                      {"kind", f.kind},
                      {"channel", f.channel},
                      {"channel_name", f.channel_name},
                      {"session", f.session},
                      {"recipients", f.recipients},
                      {"bytes", f.bytes},
                      {"head_hex", std::move(hex)},
                      {"verdict", f.verdict},
                      {"detail", f.detail},
                      {"took_us", ToSeconds(f.took) * 1e6}});
  }
  return {{"capturing", network.tap().on()},
          {"lease_seconds", ToSeconds(kInspectLease)},
          {"next", page.next},
          {"lost", page.lost},
          {"frames", std::move(frames)}};
}

json::object AdminApi::LogsJson(const HttpRequest& req) const {
  const std::optional<std::uint64_t> since = Number(QueryValue(req.query, "since"));
  const LogRing::Page page = sources_.logs.Since(since.value_or(0));
  json::array lines;
  for (const LogRing::Line& l : page.items) {
    lines.push_back({{"seq", l.seq},
                     {"time", IsoTime(l.time)},
                     {"level", LogLevelName(l.level)},
                     {"scope", l.scope},
                     {"message", l.message}});
  }
  return {{"next", page.next}, {"lost", page.lost}, {"lines", std::move(lines)}};
}

std::string AdminApi::BundleJson(std::string_view reason) const {
  const json::object bundle{{"v", 1},
                            {"reason", reason},
                            {"time", IsoTime(std::chrono::system_clock::now())},
                            {"pid", ::getpid()},
                            {"status", StatusJson(ReadMemoryFigures())},
                            {"diagnostics", sources_.diagnostics.ToJson()},
                            {"errors", ErrorsJson()},
                            {"generations", sources_.plugins.StatsObject()},
                            {"channels", ChannelsJson(sources_.network.Snapshot())},
                            {"configuration", RedactedConfigJson(sources_.kernel.config())},
                            {"logs", LogsJson({})}};
  return json::serialize(bundle);
}

json::object AdminApi::TasksJson() const {
  json::array tasks;
  for (const TaskProfile& t : sources_.kernel.scheduler().TopTasks(20)) {
    tasks.push_back({{"origin", t.key},
                     {"calls", t.calls},
                     {"total_ms", ToSeconds(t.time) * 1000},
                     {"max_ms", ToSeconds(t.max) * 1000}});
  }
  return {{"profiling", sources_.kernel.scheduler().profile_tasks()},
          {"since_seconds", ToSeconds(sources_.diagnostics.open_for())},
          {"tasks", std::move(tasks)}};
}

json::object AdminApi::SeriesJson() const {
  json::object o = sources_.diagnostics.SeriesJson();
  const json::array& times = o.at("series").at("time_ms").as_array();
  const std::int64_t since = times.empty() ? 0 : times.front().as_int64();
  json::array swaps;  // oldest first, as the series
  const json::object generations = sources_.plugins.StatsObject();
  const json::array& history = generations.at("history").as_array();
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    const std::int64_t at = it->at("time_ms").to_number<std::int64_t>();
    const json::object& r = it->at("report").as_object();
    if (at <
        since - static_cast<std::int64_t>(o.at("interval_seconds").to_number<double>() * 1000)) {
      continue;  // before the series starts
    }
    swaps.push_back({{"time_ms", at},
                     {"ok", r.at("ok")},
                     {"rollback", r.at("rollback")},
                     {"generation", r.at("ok").as_bool() ? r.at("serving") : r.at("generation")},
                     {"reason", r.at("reason")},
                     {"error", r.at("error")}});
  }
  o["swaps"] = std::move(swaps);
  return o;
}

void AdminApi::Profile(std::string key, HttpReply reply) {
  if (key.empty() || key.find('/') == std::string::npos) {
    reply(Error(400, "name a profile as profiles/STORE/USER (e.g. profiles/scores/ada)"));
    return;
  }
  store::ProfileStore& store = sources_.store;
  store.Read(key, [&store, key, reply = std::move(reply)](Result<store::Record> r) mutable {
    if (!r.ok()) {
      reply(r.status().code() == Status::Code::kNotFound
                ? Error(404, "no profile " + key + " is stored")
                : Error(500,
                        "the profile store failed to read " + key + ": " + r.status().message()));
      return;
    }
    json::object o{
        {"key", r->key},
        {"schema_version", r->schema_version},
        {"revision", r->revision},
        {"updated_ms", r->updated},
        {"lease",
         {{"owner", r->lease.owner}, {"token", r->lease.token}, {"expires_ms", r->lease.expires}}}};
    boost::system::error_code ec;
    json::value data = r->data ? json::parse(*r->data, ec) : json::value();
    o["data"] = ec ? json::value(*r->data) : std::move(data);
    store.ListBackups(key, [o = std::move(o), reply = std::move(reply)](
                               Result<std::vector<store::Backup>> backups) mutable {
      json::array list;
      for (const store::Backup& b : backups.ok() ? *backups : std::vector<store::Backup>()) {
        list.push_back(
            {{"slot", b.slot == store::kMirrorSlot ? json::value("mirror") : json::value(b.slot)},
             {"revision", b.revision},
             {"schema_version", b.schema_version},
             {"taken_ms", b.taken}});
      }
      o["backups"] = std::move(list);
      reply(Json(200, o));
    });
  });
}

json::object AdminApi::ErrorsJson() const {
  const ErrorWatch& watch = sources_.errors;
  const ErrorWatch::Counts counts = watch.counts();
  json::array recent;
  for (const ErrorWatch::Entry& e : watch.Recent()) {
    recent.push_back({{"scope", e.scope},
                      {"message", e.message},
                      {"level", LogLevelName(e.level)},
                      {"count", e.count},
                      {"first", IsoTime(e.first)},
                      {"last", IsoTime(e.last)}});
  }
  return {{"window_seconds", std::round(ToSeconds(watch.window()) * 1000) / 1000},
          {"warnings", counts.warnings},
          {"errors", counts.errors},
          {"merged", counts.merged},
          {"recent", std::move(recent)}};
}

}  // namespace molt::kernel::admin

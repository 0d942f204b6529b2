// SPDX-License-Identifier: Apache-2.0
// AdminApi: the routes composed; access on the HTTP thread, each route on its thread
// (admin_api.h); the admin token.
#include "kernel/src/admin/admin_api.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <utility>

#include "kernel/src/admin/api_answers.h"
#include "kernel/src/admin/dashboard.h"
#include "kernel/src/core/kernel.h"

namespace molt::kernel::admin {
namespace {

constexpr std::string_view kApiPrefix = "/api/v1/";

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
      token_(std::move(token)),
      health_(sources_.network, sources_.plugins, sources_.store, sources_.closing),
      metrics_(sources_),
      status_({sources_.kernel, sources_.network, sources_.plugins, sources_.diagnostics,
               sources_.errors, sources_.logs, sources_.closing, sources_.write_bundle},
              RealNow()),
      sessions_(sources_.network),
      plugins_(sources_.kernel, sources_.plugins, sources_.reload),
      channels_(sources_.network),
      profiles_(sources_.store),
      fleet_(sources_.fleet, sources_.self_report, sources_.drain),
      deploys_(sources_.deploys, sources_.fleet, sources_.self_report),
      live_(sources_.live) {
  table_.Add({"*", "/", Role::kOpen, Runs::kHttpThread, &AdminApi::Dashboard});
  table_.Add({"*", "/index.html", Role::kOpen, Runs::kHttpThread, &AdminApi::Dashboard});
  health_.Register(table_);
  metrics_.Register(table_);
  status_.Register(table_);
  sessions_.Register(table_);
  plugins_.Register(table_);
  channels_.Register(table_);
  profiles_.Register(table_);
  fleet_.Register(table_);
  deploys_.Register(table_);
  live_.Register(table_);
}

void AdminApi::Dashboard(RouteCall& call) {
  if (call.request.method != "GET" && call.request.method != "HEAD") {
    HttpResponse r = Error(405, "/ takes GET");  // "/" for /index.html too
    r.headers.emplace_back("Allow", "GET");
    call.reply(std::move(r));
    return;
  }
  call.reply(DashboardPage());
}

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
  RouteTable::Found found = table_.Find(request.path);
  // Today the token holds every role: a route needs it unless it is open.
  if (!found.open()) {
    if (request.path.rfind(kApiPrefix, 0) != 0) {
      reply(Error(404, "no such path: " + request.path + " (the API is under /api/v1/)"));
      return;
    }
    if (!Authorized(request)) {
      reply(Unauthorized());
      return;
    }
  }
  if (!found.empty() && found.runs() == Runs::kHttpThread) {
    RouteCall call{request, std::move(reply)};
    RouteTable::Dispatch(found, call);
    return;
  }
  // The process's figures come from /proc: read here, off the kernel thread.
  ProcessFigures process;
  if (!found.empty() && found.reads_process()) {
    process = ReadProcessFigures();
  }
  sources_.kernel.loop().Post([request = std::move(request), found = std::move(found), process,
                               reply = std::move(reply)]() mutable {
    RouteCall call{request, std::move(reply), {}, process};
    try {
      if (found.empty()) {
        call.reply(
            Error(404, "no such path: " + request.path + " (docs/operations.md lists the API)"));
        return;
      }
      RouteTable::Dispatch(found, call);
    } catch (const std::exception& e) {
      if (call.reply) {
        call.reply(Error(500, std::string("internal error: ") + e.what()));
      }
    }
  });
}

HttpPlan AdminApi::Plan(const HttpRequest& head) const {
  HttpPlan plan;
  if (head.path.rfind(kApiPrefix, 0) != 0) {
    return plan;
  }
  if (head.path == "/api/v1/builds" && head.method == "POST") {
    return deploys_.UploadPlan(Authorized(head), Unauthorized());
  }
  if (std::optional<std::uint64_t> wait = WaitSeconds(head.query); wait && *wait > 0) {
    plan.handler_timeout = std::chrono::seconds(*wait + 5);  // the call answers at its deadline
  }
  return plan;
}

}  // namespace molt::kernel::admin

// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/admin/admin_parts.h
//
// AdminParts: the real parts the admin routes read (an Assembly as moltd builds it, on an
// in-memory profile database, nothing loaded or listening; the logs ring, diagnostics and
// ErrorWatch), with the kernel loop running on a thread of its own, for the tests of one routes
// class at a time. Call() runs a request through a RouteTable as AdminApi would, on the thread
// its route names, and waits for the answer:
//
//   AdminParts parts;
//   RouteTable table;
//   SessionsRoutes routes(parts.assembly->network());
//   routes.Register(table);
//   HttpResponse r = parts.Call(table, "GET", "/api/v1/sessions/12");
#ifndef MOLT_TESTS_KERNEL_ADMIN_ADMIN_PARTS_H_
#define MOLT_TESTS_KERNEL_ADMIN_ADMIN_PARTS_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "kernel/src/admin/admin_sources.h"
#include "kernel/src/admin/diagnostics.h"
#include "kernel/src/admin/error_watch.h"
#include "kernel/src/admin/log_ring.h"
#include "kernel/src/admin/route_table.h"
#include "kernel/src/core/kernel.h"
#include "kernel/src/loader/plugin_host.h"
#include "kernel/src/server/assembly.h"
#include "kernel/src/server/settings.h"
#include "kernel/src/store/sqlite_store.h"

namespace molt::test {

using kernel::Assembly;
using kernel::AssemblyPaths;
using kernel::Config;
using kernel::Result;
using kernel::ServerOptions;
using kernel::Settings;
using kernel::admin::AdminSources;
using kernel::admin::Diagnostics;
using kernel::admin::DiagnosticsOptions;
using kernel::admin::ErrorWatch;
using kernel::admin::HttpRequest;
using kernel::admin::HttpResponse;
using kernel::admin::LogRing;
using kernel::admin::ReadProcessFigures;
using kernel::admin::RouteCall;
using kernel::admin::RouteTable;
using kernel::admin::Runs;

class AdminParts {
 public:
  AdminParts() {
    dir_ = ::testing::TempDir() + "molt_admin_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ServerOptions so;
    so.plugin_dir = dir_;
    so.data_dir = dir_;
    Config config;
    Settings settings;
    EXPECT_TRUE(ResolveSettings(so, config, &settings).ok());
    settings.profiles_db = std::string(kernel::store::kInMemory);
    AssemblyPaths paths;
    paths.copy_dir = dir_ + "/copies";
    paths.live_db = dir_ + "/live.db";
    paths.host = "admin-test";
    assembly = Assembly::Build(settings, std::move(config), std::move(paths)).value();
    diagnostics = std::make_unique<Diagnostics>(assembly->kernel(), DiagnosticsOptions{});
    errors = std::make_unique<ErrorWatch>(assembly->kernel());
    loop_ = std::thread([this] { assembly->kernel().loop().Run(); });
  }
  ~AdminParts() {
    OnLoop([this] {
      diagnostics.reset();
      errors.reset();
    });
    assembly->kernel().loop().Stop();
    loop_.join();
    assembly->Release();
    assembly.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Every source, as moltd hands them to AdminApi, without a fleet or deploys.
  AdminSources Sources() {
    return {assembly->kernel(),
            assembly->network(),
            assembly->plugins(),
            assembly->profile_db(),
            logs,
            *diagnostics,
            *errors,
            [](auto) {},
            [](std::string_view) -> Result<std::string> { return std::string("bundle.json"); },
            [] { return false; },
            nullptr,
            nullptr,
            &assembly->analytics(),
            &assembly->live()};
  }

  // Runs `fn` on the kernel thread and waits until it ran.
  void OnLoop(const std::function<void()>& fn) {
    std::promise<void> ran;
    assembly->kernel().loop().Post([&] {
      fn();
      ran.set_value();
    });
    ran.get_future().wait();
  }

  // `method` `target` ("/path?query") through `table`, on the thread its route names; the answer.
  HttpResponse Call(const RouteTable& table, std::string method, const std::string& target,
                    std::string body = "") {
    auto request = std::make_shared<HttpRequest>();
    request->method = std::move(method);
    const std::size_t q = target.find('?');
    request->path = target.substr(0, q);
    request->query = q == std::string::npos ? "" : target.substr(q + 1);
    request->body = std::move(body);
    auto answer = std::make_shared<std::promise<HttpResponse>>();
    std::future<HttpResponse> got = answer->get_future();
    const RouteTable::Found found = table.Find(request->path);
    if (found.empty()) {
      ADD_FAILURE() << "no route for " << request->path;
      return {};
    }
    auto dispatch = [request, found, answer] {
      RouteCall call{*request, [answer](HttpResponse r) { answer->set_value(std::move(r)); }};
      call.process = ReadProcessFigures();
      RouteTable::Dispatch(found, call);
    };
    if (found.runs() == Runs::kHttpThread) {
      dispatch();
    } else {
      assembly->kernel().loop().Post(dispatch);
    }
    return got.get();
  }

  std::unique_ptr<Assembly> assembly;
  LogRing logs;
  std::unique_ptr<Diagnostics> diagnostics;
  std::unique_ptr<ErrorWatch> errors;

 private:
  std::string dir_;
  std::thread loop_;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_KERNEL_ADMIN_ADMIN_PARTS_H_

// SPDX-License-Identifier: Apache-2.0
// AdminApi (admin/admin_api.h): the routes composed and reached as a client reaches them: the
// token, the paths outside the API, the dashboard, an unknown API path, the open probes, and the
// plan an upload or a waiting call gets.
#include "kernel/src/admin/admin_api.h"

#include <gtest/gtest.h>

#include <future>
#include <set>

#include "tests/kernel/admin/admin_parts.h"

namespace molt::kernel::admin {
namespace {

constexpr char kToken[] = "admin-test-token-0123456789";

class AdminApiTest : public ::testing::Test {
 protected:
  HttpResponse Handle(std::string method, std::string path, bool token = true) {
    HttpRequest req;
    req.method = std::move(method);
    req.path = std::move(path);
    if (token) {
      req.authorization = std::string("Bearer ") + kToken;
    }
    auto answer = std::make_shared<std::promise<HttpResponse>>();
    std::future<HttpResponse> got = answer->get_future();
    api_.Handle(std::move(req), [answer](HttpResponse r) { answer->set_value(std::move(r)); });
    return got.get();
  }

  molt::test::AdminParts parts_;
  AdminApi api_{parts_.Sources(), kToken};
};

TEST_F(AdminApiTest, TheTokenGuardsTheApiAndOnlyTheApi) {
  const HttpResponse outside = Handle("GET", "/favicon.ico", false);
  EXPECT_EQ(outside.status, 404);
  EXPECT_EQ(outside.body,
            "{\"error\":\"no such path: /favicon.ico (the API is under /api/v1/)\"}\n");
  const HttpResponse no_token = Handle("GET", "/api/v1/status", false);
  EXPECT_EQ(no_token.status, 401);
  ASSERT_EQ(no_token.headers.size(), 1u);
  EXPECT_EQ(no_token.headers[0].first, "WWW-Authenticate");
  EXPECT_EQ(Handle("GET", "/api/v1/nothing", false).status, 401);  // before the path is known
  const HttpResponse unknown = Handle("GET", "/api/v1/nothing");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body,
            "{\"error\":\"no such path: /api/v1/nothing (docs/operations.md lists the API)\"}\n");
  EXPECT_EQ(Handle("GET", "/api/v1/status").status, 200);
  EXPECT_EQ(Handle("GET", "/healthz", false).body, "ok\n");
  EXPECT_EQ(Handle("GET", "/metrics", false).status, 200);
}

TEST_F(AdminApiTest, TheDashboardIsOpenAndItsOtherMethodsAre405NamingSlash) {
  const HttpResponse page = Handle("GET", "/index.html", false);
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  const HttpResponse post = Handle("POST", "/index.html", false);
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.body, "{\"error\":\"/ takes GET\"}\n");
}

TEST_F(AdminApiTest, TheDeployCallsWaitForTheRegistryAndTheirPlans) {
  EXPECT_EQ(Handle("POST", "/api/v1/deploy").status, 503);
  HttpRequest upload;
  upload.method = "POST";
  upload.path = "/api/v1/builds";
  EXPECT_EQ(api_.Plan(upload).refuse->status, 401);
  upload.authorization = std::string("Bearer ") + kToken;
  EXPECT_EQ(api_.Plan(upload).refuse->status, 503);
  HttpRequest reload;
  reload.method = "POST";
  reload.path = "/api/v1/reload";
  reload.query = "wait=10";
  EXPECT_EQ(api_.Plan(reload).handler_timeout, std::chrono::seconds(15));
}

TEST_F(AdminApiTest, EveryApiRouteNeedsARoleAndOnlyThePageAndTheProbesAreOpen) {
  std::set<std::string> open;
  for (const Route& r : api_.routes().routes()) {
    if (r.role == Role::kOpen) {
      open.insert(r.pattern);
    } else {
      EXPECT_EQ(r.pattern.rfind("/api/v1/", 0), 0u) << r.pattern;
    }
  }
  EXPECT_EQ(open, (std::set<std::string>{"/", "/index.html", "/healthz", "/readyz", "/metrics"}));
}

}  // namespace
}  // namespace molt::kernel::admin

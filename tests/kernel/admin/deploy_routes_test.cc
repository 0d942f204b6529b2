// SPDX-License-Identifier: Apache-2.0
// DeployRoutes (admin/deploy_routes.h): 503 for every method until the registry opens; then, on
// a real Deploys (dev rules, no fleet), the methods each call takes, a malformed body, a wait out
// of bounds, the branches, and the plan of an upload.
#include "kernel/src/admin/deploy_routes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <future>

#include "kernel/src/deploy/deploys.h"

namespace molt::kernel::admin {
namespace {

class DeployRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_deploy_routes_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    routes_.Register(table_);
  }
  void TearDown() override {
    deploys_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    deploy::DeploysOptions o;
    o.dir = dir_;
    o.branch = "dev";
    o.prod_rules = false;
    deploys_ = deploy::Deploys::Open(o).value();
    deploys_->Start(
        [](deploy::SwapTarget, std::string, std::function<void(deploy::SwapOutcome)> done) {
          done({"swapped", "", "{}", false});
        });
    routes_.set_deploys(deploys_.get());
  }
  // The deploy routes run on the HTTP thread: here, answered from the deploy thread.
  HttpResponse Call(std::string method, const std::string& target, std::string body = "") {
    HttpRequest req;
    req.method = std::move(method);
    const std::size_t q = target.find('?');
    req.path = target.substr(0, q);
    req.query = q == std::string::npos ? "" : target.substr(q + 1);
    req.body = std::move(body);
    auto answer = std::make_shared<std::promise<HttpResponse>>();
    std::future<HttpResponse> got = answer->get_future();
    RouteCall call{req, [answer](HttpResponse r) { answer->set_value(std::move(r)); }};
    const RouteTable::Found found = table_.Find(req.path);
    EXPECT_EQ(found.runs(), Runs::kHttpThread);
    RouteTable::Dispatch(found, call);
    return got.get();
  }

  std::string dir_;
  std::unique_ptr<deploy::Deploys> deploys_;
  DeployRoutes routes_{nullptr, nullptr, nullptr};
  RouteTable table_;
};

TEST_F(DeployRoutesTest, UntilTheRegistryOpensEveryMethodIs503) {
  for (const char* method : {"GET", "POST", "DELETE"}) {
    const HttpResponse r = Call(method, "/api/v1/deploy");
    EXPECT_EQ(r.status, 503);
    EXPECT_NE(r.body.find("its deploy registry is not open yet"), std::string::npos);
  }
  const HttpPlan plan = routes_.UploadPlan(true, {401, "", "", {}});
  ASSERT_TRUE(plan.refuse.has_value());
  EXPECT_EQ(plan.refuse->status, 503);
}

TEST_F(DeployRoutesTest, EachCallTakesItsMethodsAndABadBodyOrWaitIs400) {
  Open();
  const HttpResponse get_deploy = Call("GET", "/api/v1/deploy");
  EXPECT_EQ(get_deploy.status, 405);
  EXPECT_EQ(get_deploy.body, "{\"error\":\"/api/v1/deploy takes POST\"}\n");
  const HttpResponse put_builds = Call("PUT", "/api/v1/builds");
  ASSERT_EQ(put_builds.headers.size(), 1u);
  EXPECT_EQ(put_builds.headers[0].second, "GET, POST");
  EXPECT_EQ(Call("POST", "/api/v1/deploy", "[]").body,
            "{\"error\":\"the body must be a JSON object: {\\\"branch\\\": ..., \\\"build\\\": "
            "...} (docs/deploys.md)\"}\n");
  EXPECT_EQ(Call("POST", "/api/v1/deploy", "{\"branch\":\"dev\"}").body,
            "{\"error\":\"\\\"build\\\" is required: a sha256, a build id or #SEQ\"}\n");
  EXPECT_EQ(Call("POST", "/api/v1/deploy?wait=601", "{}").status, 400);
  EXPECT_EQ(Call("POST", "/api/v1/builds").body,
            "{\"error\":\"send the build file as the body (Content-Length set)\"}\n");
  EXPECT_EQ(Call("GET", "/api/v1/report?seq=0").status, 400);
  EXPECT_EQ(Call("GET", "/api/v1/builds?limit=1001").status, 400);
}

TEST_F(DeployRoutesTest, AnswersComeFromTheDeployThreadAsTheApiGivesThem) {
  Open();
  const boost::json::value branches = boost::json::parse(Call("GET", "/api/v1/branches").body);
  EXPECT_EQ(branches.at("branch").as_string(), "dev");
  EXPECT_EQ(branches.at("rules").as_string(), "dev");
  EXPECT_EQ(Call("GET", "/api/v1/builds").body, "{\"builds\":[]}\n");
  const HttpResponse missing =
      Call("POST", "/api/v1/deploy", "{\"branch\":\"dev\",\"build\":\"x\"}");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/report?seq=4").body,
            "{\"error\":\"no deployment #4 is recorded (molt deployments lists them)\"}\n");
  const HttpPlan plan = routes_.UploadPlan(true, {401, "", "", {}});
  EXPECT_FALSE(plan.refuse.has_value());
  EXPECT_EQ(plan.max_body_bytes, deploys_->max_build_bytes());
  EXPECT_EQ(plan.read_timeout, DeployRoutes::kUploadTime);
  EXPECT_NE(plan.body_file.find("upload-"), std::string::npos);
  EXPECT_EQ(routes_.UploadPlan(false, {401, "", "no token", {}}).refuse->body, "no token");
}

}  // namespace
}  // namespace molt::kernel::admin

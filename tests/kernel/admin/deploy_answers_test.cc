// SPDX-License-Identifier: Apache-2.0
// The deploy calls' answers (admin/deploy_answers.h): each Status code's HTTP status and body, the
// 201 of a new upload, the 202 of an answer before the swap's outcome (with the note only for a
// deploy whose wait ran out), a branch's head that is no longer stored, and a deployment's report.
#include "kernel/src/admin/deploy_answers.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "kernel/src/core/clock.h"
#include "kernel/src/fleet/fleet.h"

namespace molt::kernel::admin {
namespace {

namespace json = boost::json;

TEST(DeployAnswersTest, EachCodeHasItsStatusAndARefusalSaysSo) {
  struct Case {
    Status status;
    int http;
    std::string body;
  };
  const Case cases[] = {
      {Status::InvalidArgument("bad"), 400, "{\"error\":\"bad\"}\n"},
      {Status::NotFound("none"), 404, "{\"error\":\"none\"}\n"},
      {Status::Rejected("no"), 409, "{\"error\":\"no\",\"result\":\"refused\"}\n"},
      {Status::IoError("down"), 503, "{\"error\":\"down\"}\n"},
      {Status::Internal("disk"), 500, "{\"error\":\"disk\"}\n"},
      {Status::FailedPrecondition("odd"), 500, "{\"error\":\"odd\"}\n"},
  };
  for (const Case& c : cases) {
    const HttpResponse r = DeployError(c.status);
    EXPECT_EQ(r.status, c.http) << c.status.ToString();
    EXPECT_EQ(r.body, c.body);
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(DeployAnswer(c.status).body, c.body);  // every call's error is the same
  }
}

TEST(DeployAnswersTest, AnswersBeforeTheSwapAre202AndOnlyADeploysTimeoutAddsTheNote) {
  deploy::Deployment d;
  d.seq = 3;
  d.result = "pending";
  EXPECT_EQ(DeployAnswer(deploy::DeployOutcome{d}).status, 200);
  const HttpResponse at_once = DeployAnswer(deploy::DeployOutcome{d, true});
  EXPECT_EQ(at_once.status, 202);
  EXPECT_EQ(json::parse(at_once.body).as_object().size(), 1u);
  const HttpResponse late = DeployAnswer(deploy::DeployOutcome{d, true, true});
  EXPECT_EQ(late.status, 202);
  EXPECT_EQ(json::parse(late.body).at("note").as_string(),
            "the swap did not finish in time; GET /api/v1/deployments shows its result");
  const HttpResponse pin = PinAnswer(deploy::PinOutcome{"pending", "abc", "sha", "", "", true});
  EXPECT_EQ(pin.status, 202);
  EXPECT_EQ(pin.body, "{\"result\":\"pending\",\"build\":\"abc\",\"sha256\":\"sha\"}\n");
  const HttpResponse pinned =
      PinAnswer(deploy::PinOutcome{"swapped", "abc", "sha", "", "{\"ok\":true}"});
  EXPECT_EQ(pinned.body,
            "{\"result\":\"swapped\",\"build\":\"abc\",\"sha256\":\"sha\",\"reason\":\"\","
            "\"report\":{\"ok\":true}}\n");
}

TEST(DeployAnswersTest, ANewUploadIs201AndAHeadNoLongerStoredIsShownAsQuestionMark) {
  deploy::StoredBuild b;
  b.sha256 = "aa";
  b.id = "abc1234-000001";
  EXPECT_EQ(UploadAnswer(deploy::Uploaded{b, true}).status, 201);
  EXPECT_EQ(UploadAnswer(deploy::Uploaded{b, false}).status, 200);
  deploy::BranchesView v;
  v.branch = "prod";
  v.seq = 4;
  deploy::Branch branch;
  branch.name = "prod";
  branch.head = "gone";
  branch.seq = 4;
  v.branches.push_back(branch);
  const json::value body = json::parse(BranchesAnswer(v).body);
  EXPECT_EQ(body.at("next_seq").to_number<int>(), 5);
  EXPECT_EQ(body.at("rules").as_string(), "prod");
  EXPECT_TRUE(body.at("pin").is_null());
  EXPECT_EQ(body.at("branches").at(0).at("head").at("id").as_string(), "?");
  EXPECT_TRUE(body.at("branches").at(0).at("head").at("failed_here").is_null());
}

TEST(DeployAnswersTest, AReportNamesEveryServerOfTheBranchWithItsResult) {
  deploy::DeploymentResults r;
  r.deployment.seq = 7;
  r.deployment.branch = "prod";
  r.results.push_back({"a", "swapped", "", 1});
  r.results.push_back({"gone", "failed", "boom", 2});
  fleet::ServerReport a;
  a.id = "a";
  a.branch = "prod";
  a.state = "live";
  a.interval_ms = 60'000;
  a.last_seen_ms = WallMs();
  fleet::ServerReport later = a;  // started after #7: booted the head
  later.id = "later";
  later.applied_seq = 7;
  fleet::ServerReport waiting = a;
  waiting.id = "waiting";
  const json::object report = DeployReport(ResultsJson(r), {a, later, waiting});
  const json::array& rows = report.at("servers").as_array();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].at("result").as_string(), "swapped");
  EXPECT_EQ(rows[1].at("result").as_string(), "booted");
  EXPECT_EQ(rows[2].at("result").as_string(), "pending");
  EXPECT_EQ(rows[3].at("id").as_string(), "gone");
  EXPECT_EQ(rows[3].at("state").as_string(), "lost");
  const json::object& summary = report.at("summary").as_object();
  EXPECT_EQ(summary.at("tried").to_number<int>(), 2);
  EXPECT_EQ(summary.at("failed_pct").to_number<double>(), 50.0);
  EXPECT_FALSE(summary.at("done").as_bool());
}

}  // namespace
}  // namespace molt::kernel::admin

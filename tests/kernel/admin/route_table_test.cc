// SPDX-License-Identifier: Apache-2.0
// RouteTable (admin/route_table.h): patterns with a segment and a rest, the first pattern that
// matches, the gate before the method, 405 naming every method of the pattern, HEAD as GET.
#include "kernel/src/admin/route_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace molt::kernel::admin {
namespace {

TEST(MatchPatternTest, ASegmentStopsAtASlashAndTheRestTakesEverything) {
  std::map<std::string, std::string, std::less<>> p;
  EXPECT_TRUE(MatchPattern("/s/{id}/kick", "/s/12/kick", &p));
  EXPECT_EQ(p["id"], "12");
  EXPECT_TRUE(MatchPattern("/s/{id}/kick", "/s//kick", &p));
  EXPECT_EQ(p["id"], "");
  EXPECT_TRUE(MatchPattern("/s/{id}", "/s/", &p));
  EXPECT_FALSE(MatchPattern("/s/{id}", "/s/12/kick", &p));
  EXPECT_FALSE(MatchPattern("/s/{id}/kick", "/s/12/kick/x", &p));
  EXPECT_FALSE(MatchPattern("/s", "/s/", &p));
  EXPECT_TRUE(MatchPattern("/p/{key...}", "/p/scores/ada", &p));
  EXPECT_EQ(p["key"], "scores/ada");
  EXPECT_TRUE(MatchPattern("/p/{key...}", "/p/", &p));
  EXPECT_FALSE(MatchPattern("/p/{key...}", "/p", &p));
}

class RouteTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto say = [this](std::string what) {
      return [this, what](RouteCall& call) {
        heard_.push_back(what + " " + call.Param("id"));
        call.reply({200, "text/plain", what, {}});
      };
    };
    table_.Add({"GET", "/things/{id}", Role::kViewer, Runs::kKernelThread, say("get")});
    table_.Add({"POST", "/things/{id}", Role::kOperator, Runs::kKernelThread, say("post")});
    table_.Add({"*", "/open", Role::kOpen, Runs::kHttpThread, say("open")});
    table_.Add({"GET", "/gated", Role::kViewer, Runs::kKernelThread, say("gated"),
                [this]() -> std::optional<HttpResponse> {
                  if (!there_) {
                    return HttpResponse{503, "text/plain", "not here", {}};
                  }
                  return std::nullopt;
                }});
  }
  HttpResponse Call(std::string method, std::string path) {
    HttpRequest req;
    req.method = std::move(method);
    req.path = std::move(path);
    HttpResponse out;
    RouteCall call{req, [&](HttpResponse r) { out = std::move(r); }};
    RouteTable::Dispatch(table_.Find(req.path), call);
    return out;
  }

  RouteTable table_;
  std::vector<std::string> heard_;
  bool there_ = false;
};

TEST_F(RouteTableTest, EachMethodOfAPatternHasItsRowAndHeadIsAGet) {
  EXPECT_EQ(Call("GET", "/things/7").body, "get");
  EXPECT_EQ(Call("HEAD", "/things/8").body, "get");
  EXPECT_EQ(Call("POST", "/things/9").body, "post");
  EXPECT_EQ(Call("PATCH", "/open").body, "open");
  EXPECT_EQ(heard_, (std::vector<std::string>{"get 7", "get 8", "post 9", "open "}));
  const RouteTable::Found found = table_.Find("/things/1");
  ASSERT_EQ(found.routes.size(), 2u);
  EXPECT_FALSE(found.open());
  EXPECT_TRUE(table_.Find("/open").open());
  EXPECT_EQ(table_.Find("/open").runs(), Runs::kHttpThread);
  EXPECT_TRUE(table_.Find("/nothing").empty());
}

TEST_F(RouteTableTest, AMethodThePatternDoesNotTakeIs405NamingTheOnesItTakes) {
  const HttpResponse r = Call("DELETE", "/things/1");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.body, "{\"error\":\"/things/1 takes GET, POST\"}\n");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Allow", "GET, POST"}));
  EXPECT_TRUE(heard_.empty());
}

TEST_F(RouteTableTest, TheGateAnswersEveryMethodFirstWhileTheResourceIsMissing) {
  EXPECT_EQ(Call("POST", "/gated").body, "not here");  // not a 405: the gate comes first
  there_ = true;
  EXPECT_EQ(Call("POST", "/gated").status, 405);
  EXPECT_EQ(Call("GET", "/gated").body, "gated");
}

}  // namespace
}  // namespace molt::kernel::admin

// SPDX-License-Identifier: Apache-2.0
// The fleet's registry (deploy/fleet_registry.h) on a real PostgreSQL the test starts: one #seq
// for every server (a taken one refused, a race between servers never sharing one), builds
// fetched by any server, notifications and the poll; and Deploys over it (deploy/deploys.h):
// a signed deploy recorded on one server is checked and swapped on another, refused where its
// key is not trusted, and a server whose fleet database is down boots from its own copy.
#include "kernel/src/deploy/fleet_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "kernel/src/deploy/deploys.h"
#include "kernel/src/loader/signing.h"
#include "tests/kernel/deploy/api_answer.h"
#include "tests/kernel/deploy/test_builds.h"
#include "tests/support/postgres.h"

namespace molt::kernel::deploy {
namespace {

namespace json = boost::json;
using test::Answer;
using test::CallApi;
using test::TestBuild;
using test::TestDir;
using test::WriteTestBuild;

// One PostgreSQL for the whole suite (initdb takes a second); a database per test.
class FleetRegistryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pg_ = new molt::test::PostgresServer(); }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(pg_->ok()) << pg_->error();
    url_ = pg_->NewDatabase();
    db_ = url_.substr(url_.rfind('=') + 1);
  }
  std::unique_ptr<FleetRegistry> OpenFleet(const std::string& server) {
    auto f = std::make_unique<FleetRegistry>(url_, server);
    Status s = f->Open();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return f;
  }
  static Deployment DeployOf(const std::string& build, const std::string& branch,
                             std::uint64_t seq = 0) {
    Deployment d;
    d.seq = seq;
    d.branch = branch;
    d.build = build;
    d.build_id = "abc1234-" + build.substr(0, 6);
    d.kind = "deploy";
    d.by = "ana";
    return d;
  }
  std::string Sql(const std::string& query) { return pg_->Psql(query, db_); }

  static molt::test::PostgresServer* pg_;
  std::string url_;
  std::string db_;
  TestDir dir_;
};
molt::test::PostgresServer* FleetRegistryTest::pg_ = nullptr;

TEST_F(FleetRegistryTest, TheFleetNumbersDeploymentsOnceAndRefusesATakenSeq) {
  auto a = OpenFleet("a");
  auto b = OpenFleet("b");
  Result<Deployment> one = a->Record(DeployOf("aaaa1111", "prod"));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->seq, 1u);
  Result<Deployment> two = b->Record(DeployOf("bbbb2222", "prod"));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->seq, 2u);
  // A signed deploy names its seq: one taken already is refused, naming the next.
  Result<Deployment> taken = a->Record(DeployOf("cccc3333", "prod", 2));
  ASSERT_EQ(taken.status().code(), Status::Code::kRejected);
  EXPECT_EQ(taken.status().message(),
            "seq 2 was taken already in the fleet (the last is #2; the next is 3)");
  Result<Deployment> seven = a->Record(DeployOf("cccc3333", "dev", 7));
  ASSERT_TRUE(seven.ok()) << seven.status().ToString();
  EXPECT_EQ(a->LastSeq().value(), 7u);
  // Any server reads them in order, with who recorded each.
  Result<std::vector<Deployment>> all = b->Since(0, 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].build, "aaaa1111");
  EXPECT_EQ((*all)[0].by, "ana");
  EXPECT_EQ((*all)[2].seq, 7u);
  EXPECT_EQ(b->Since(2, 100)->size(), 1u);
  EXPECT_EQ(Sql("SELECT string_agg(name || ':' || head || '#' || seq, ',' ORDER BY name) FROM "
                "molt_branches"),
            "dev:cccc3333#7,prod:bbbb2222#2\n");
  EXPECT_EQ(Sql("SELECT string_agg(origin, ',' ORDER BY seq) FROM molt_deployments"), "a,b,a\n");
  // Each server's result of a deployment, kept per server.
  ASSERT_TRUE(a->SetResult(2, "swapped", "", "{}").ok());
  ASSERT_TRUE(b->SetResult(2, "failed", "it broke", "").ok());
  ASSERT_TRUE(b->SetResult(2, "rolled_back", "health", "").ok());
  EXPECT_EQ(Sql("SELECT string_agg(server_id || '=' || result, ',' ORDER BY server_id) FROM "
                "molt_deploy_results WHERE seq = 2"),
            "a=swapped,b=rolled_back\n");
}

TEST_F(FleetRegistryTest, ServersRacingForTheNextSeqNeverShareOne) {
  auto a = OpenFleet("a");
  auto b = OpenFleet("b");
  std::vector<std::uint64_t> seqs_a, seqs_b;
  auto run = [](FleetRegistry* f, std::vector<std::uint64_t>* out) {
    for (int i = 0; i < 40; ++i) {
      Result<Deployment> d = f->Record(DeployOf("aaaa1111", "prod"));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      out->push_back(d->seq);
    }
  };
  std::thread ta(run, a.get(), &seqs_a);
  std::thread tb(run, b.get(), &seqs_b);
  ta.join();
  tb.join();
  std::set<std::uint64_t> all(seqs_a.begin(), seqs_a.end());
  all.insert(seqs_b.begin(), seqs_b.end());
  EXPECT_EQ(all.size(), 80u);
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), 80u);
}

TEST_F(FleetRegistryTest, ABuildStoredByOneServerIsFetchedByAnother) {
  auto a = OpenFleet("a");
  auto b = OpenFleet("b");
  auto registry = Registry::Open(dir_ / "a").value();
  WriteTestBuild(dir_ / "up.molt", {});
  StoredBuild stored = registry->AddBuild(dir_ / "up.molt").value();
  ASSERT_TRUE(a->PutBuild(stored, registry->BuildPath(stored.sha256)).ok());
  ASSERT_TRUE(a->PutBuild(stored, registry->BuildPath(stored.sha256)).ok());  // once is enough
  EXPECT_EQ(Sql("SELECT count(*) FROM molt_builds"), "1\n");
  // By its sha256, a prefix of it, or its build id; the bytes are the same file.
  auto other = Registry::Open(dir_ / "b").value();
  for (const std::string& name : {stored.sha256, stored.sha256.substr(0, 10), stored.id}) {
    ASSERT_TRUE(b->FetchBuild(name, dir_ / "fetched.molt").ok()) << name;
    Result<StoredBuild> got = other->AddBuild(dir_ / "fetched.molt");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->sha256, stored.sha256);
  }
  Status none = b->FetchBuild("nothing", dir_ / "none.molt");
  EXPECT_EQ(none.code(), Status::Code::kNotFound);
  EXPECT_EQ(none.message(), "the fleet's registry has no build \"nothing\"");
}

TEST_F(FleetRegistryTest, AWatcherWakesAtOnceOnEachNotificationAndEveryPoll) {
  auto a = OpenFleet("a");
  std::mutex mu;
  std::condition_variable cv;
  int wakes = 0;
  auto watcher = OpenFleet("w");
  watcher->Watch(std::chrono::hours(1), [&] {
    std::lock_guard lock(mu);
    ++wakes;
    cv.notify_all();
  });
  auto await = [&](int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return wakes >= n; });
  };
  ASSERT_TRUE(await(1)) << "the first wake comes at once";
  const int before = [&] {
    std::lock_guard lock(mu);
    return wakes;
  }();
  ASSERT_TRUE(a->Record(DeployOf("aaaa1111", "prod")).ok());
  EXPECT_TRUE(await(before + 1)) << "a recorded deployment wakes the watcher (the poll is 1 h)";
  watcher->StopWatching();
  // With no notification at all, the poll wakes it.
  auto polled = OpenFleet("p");
  std::atomic<int> polls{0};
  polled->Watch(std::chrono::milliseconds(100), [&] { ++polls; });
  for (int i = 0; i < 200 && polls.load() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(polls.load(), 4);
}

TEST_F(FleetRegistryTest, TablesOfANewerLayoutAreRefusedNamingTheFix) {
  OpenFleet("a");
  Sql("UPDATE molt_schema SET version = 99 WHERE name = 'registry'");
  FleetRegistry f(url_, "b");
  Status s = f.Open();
  ASSERT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("the fleet's registry tables in host="), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("have layout 99, newer than this build's (1): run the Molt release "
                             "that wrote them on every server"),
            std::string::npos)
      << s.message();
}

// Two servers' Deploys on one fleet database, with a seam for the kernel's swap as in
// deploys_test.cc.
class FleetDeploysTest : public FleetRegistryTest {
 protected:
  struct Server {
    std::unique_ptr<Deploys> deploys;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> swaps;  // "<build id> <reason>"
  };
  void SetUp() override {
    FleetRegistryTest::SetUp();
    key_ = loader::GenerateKey().value();
    std::ofstream(dir_ / "keys.json") << json::serialize(
        json::object{{"public_keys", json::array{loader::PublicKeyOf(key_).value().c_str()}}});
    const loader::PrivateKey other = loader::GenerateKey().value();
    std::ofstream(dir_ / "other.json") << json::serialize(
        json::object{{"public_keys", json::array{loader::PublicKeyOf(other).value().c_str()}}});
  }
  std::unique_ptr<Deploys> OpenServer(const std::string& id, const std::string& keys, Server* s,
                                      const std::string& url = "", bool prod_rules = true) {
    DeploysOptions o;
    o.dir = dir_ / (id + "/registry");
    o.branch = prod_rules ? "prod" : "dev";
    o.prod_rules = prod_rules;
    o.keys_file = keys.empty() ? std::string() : dir_ / keys;
    o.fleet_url = url.empty() ? url_ : url;
    o.server_id = id;
    Result<std::unique_ptr<Deploys>> d = Deploys::Open(o);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    (*d)->Start([s](SwapTarget target, std::string reason, std::function<void(SwapOutcome)> done) {
      {
        std::lock_guard lock(s->mu);
        s->swaps.push_back(target.build_id + " " + reason);
      }
      s->cv.notify_all();
      done({"swapped", "", "{}", false});
    });
    return std::move(*d);
  }
  // Uploads a build like `b` to `d` and deploys it on prod, signed with seq `seq`.
  Answer DeploySigned(Deploys& d, const TestBuild& b, std::uint64_t seq) {
    const std::string file = d.UploadPath();
    WriteTestBuild(file, b);
    Answer up = CallApi(&admin::UploadAnswer, [&](Done<Uploaded> r) { d.Upload(file, r); });
    EXPECT_TRUE(up.status == 201 || up.status == 200) << json::serialize(up.body);
    const json::object& build = up.body.at("build").as_object();
    DeployRequest r;
    r.branch = "prod";
    r.build = std::string(build.at("sha256").as_string());
    r.seq = seq;
    r.sent_ms = 1'700'000'000'000;
    loader::DeployFields f;
    f.branch = "prod";
    f.build = r.build;
    f.build_id = std::string(build.at("id").as_string());
    f.seq = seq;
    f.commit = std::string(build.at("commit").as_string());
    f.channel = std::string(build.at("channel").as_string());
    f.sent_ms = r.sent_ms;
    r.sig = loader::Sign(key_, loader::CanonicalDeploy(f)).value();
    return CallApi(&admin::DeployAnswer, [&](Done<DeployOutcome> reply) {
      d.Deploy(std::move(r), std::chrono::seconds(10), reply);
    });
  }
  static bool AwaitSwaps(Server& s, std::size_t n) {
    std::unique_lock lock(s.mu);
    return s.cv.wait_for(lock, std::chrono::seconds(20), [&] { return s.swaps.size() >= n; });
  }
  std::string Results(std::uint64_t seq) {
    return Sql(
        "SELECT string_agg(server_id || '=' || result || ':' || reason, ',' ORDER BY "
        "server_id) FROM molt_deploy_results WHERE seq = " +
        std::to_string(seq));
  }

  loader::PrivateKey key_;
};

TEST_F(FleetDeploysTest, ASignedDeployOnOneServerIsCheckedAndSwappedOnEveryOther) {
  Server a, b, c;
  a.deploys = OpenServer("a", "keys.json", &a);
  b.deploys = OpenServer("b", "keys.json", &b);
  c.deploys = OpenServer("c", "other.json", &c);  // trusts another key
  Answer d = DeploySigned(*a.deploys, {}, 1);
  ASSERT_EQ(d.status, 200) << json::serialize(d.body);
  EXPECT_EQ(d.body.at("deployment").at("result").as_string(), "swapped");
  ASSERT_TRUE(AwaitSwaps(b, 1));
  EXPECT_EQ(b.swaps[0], "abc1234-000001 deploy #1");
  // c heard it too, and refused it: its keys do not verify the signature.
  for (int i = 0; i < 200 && Results(1).find("c=") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(c.swaps.size(), 0u);
  const std::string results = Results(1);
  EXPECT_NE(results.find("a=swapped:,b=swapped:,c=failed:"), std::string::npos) << results;
  EXPECT_NE(results.find("signature"), std::string::npos) << results;
  // A seq the fleet took already is refused on any server, even one that applied nothing yet.
  Server late;
  late.deploys = OpenServer("late", "keys.json", &late);
  Answer again = DeploySigned(*late.deploys, {.id = "abc1234-000002", .bytes = "other"}, 1);
  EXPECT_EQ(again.status, 409) << json::serialize(again.body);
  EXPECT_EQ(again.body.at("error").as_string(),
            "seq 1 was taken already in the fleet (the last is #1; the next is 2)");
  // The next seq any server offers to sign is the fleet's.
  Answer next =
      CallApi(&admin::BranchesAnswer, [&](Done<BranchesView> r) { c.deploys->Branches(r); });
  EXPECT_EQ(next.body.at("next_seq").to_number<int>(), 2) << json::serialize(next.body);
}

TEST_F(FleetDeploysTest, AServerWhoseFleetDatabaseIsDownBootsFromItsOwnCopy) {
  Server a;
  a.deploys = OpenServer("a", "keys.json", &a, "host=" + dir_.path() + " port=1 dbname=none");
  ASSERT_NE(a.deploys, nullptr);
  Answer branches =
      CallApi(&admin::BranchesAnswer, [&](Done<BranchesView> r) { a.deploys->Branches(r); });
  EXPECT_EQ(branches.status, 200);
  // An upload is kept here and answered 503: no other server could fetch it yet.
  const std::string file = a.deploys->UploadPath();
  WriteTestBuild(file, {});
  Answer up = CallApi(&admin::UploadAnswer, [&](Done<Uploaded> r) { a.deploys->Upload(file, r); });
  EXPECT_EQ(up.status, 503) << json::serialize(up.body);
  const std::string error(up.body.at("error").as_string());
  EXPECT_NE(error.find("build abc1234-000001 is stored on this server but not in the fleet's "
                       "registry, so no other server could fetch it: cannot reach the fleet's "
                       "registry host="),
            std::string::npos)
      << error;
}

// The bucket is the spec's, bit for bit: djb2 of the id, mod 2^32, mod 100.
TEST(RolloutBucketTest, IsDjb2OfTheServerIdModOneHundred) {
  EXPECT_EQ(Deploys::Bucket(""), 81u);  // 5381 % 100
  EXPECT_EQ(Deploys::Bucket("a"), 70u);
  EXPECT_EQ(Deploys::Bucket("b"), 71u);
  EXPECT_EQ(Deploys::Bucket("eu-1"), 89u);
  EXPECT_EQ(Deploys::Bucket("vm-7f3a2c"), 79u);  // past 2^32: the hash wraps
}

// A rollout reaches the servers whose bucket is below it; the others record it, report skipped
// once, and keep what they serve until it is widened over them (the same seq).
TEST_F(FleetDeploysTest, ARolloutReachesItsBucketsAndAWiderOneTheRest) {
  Server a, b;
  a.deploys = OpenServer("a", "", &a, "", /*prod_rules=*/false);  // bucket 70
  b.deploys = OpenServer("b", "", &b, "", /*prod_rules=*/false);  // bucket 71
  const std::string file = a.deploys->UploadPath();
  WriteTestBuild(file, {.channel = "dev"});
  ASSERT_EQ(
      CallApi(&admin::UploadAnswer, [&](Done<Uploaded> r) { a.deploys->Upload(file, r); }).status,
      201);
  DeployRequest r;
  r.branch = "dev";
  r.build = "abc1234-000001";
  r.rollout = 71;
  Answer d = CallApi(&admin::DeployAnswer, [&](Done<DeployOutcome> reply) {
    a.deploys->Deploy(r, std::chrono::seconds(10), reply);
  });
  ASSERT_EQ(d.status, 200) << json::serialize(d.body);
  EXPECT_EQ(d.body.at("deployment").at("result").as_string(), "swapped");
  EXPECT_EQ(d.body.at("deployment").at("rollout").to_number<int>(), 71);
  for (int i = 0; i < 200 && Results(1).find("b=") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Results(1),
            "a=swapped:,b=skipped:outside the 71% rollout (this server's bucket is 71)\n");
  EXPECT_TRUE(b.swaps.empty());
  // A narrower or equal share is refused; a wider one reaches b, under the same seq.
  DeployRequest narrow;
  narrow.kind = "widen";
  narrow.branch = "dev";
  narrow.rollout = 71;
  Answer refused = CallApi(&admin::DeployAnswer, [&](Done<DeployOutcome> reply) {
    b.deploys->Deploy(narrow, std::chrono::seconds(0), reply);
  });
  EXPECT_EQ(refused.status, 409) << json::serialize(refused.body);
  EXPECT_EQ(refused.body.at("error").as_string(),
            "#1 (the head of dev) reaches 71% of its servers already: --widen names a larger "
            "share");
  DeployRequest wide = narrow;
  wide.rollout = 100;
  Answer widened = CallApi(&admin::DeployAnswer, [&](Done<DeployOutcome> reply) {
    a.deploys->Deploy(wide, std::chrono::seconds(0), reply);
  });
  EXPECT_EQ(widened.status, 200) << json::serialize(widened.body);
  ASSERT_TRUE(AwaitSwaps(b, 1));
  EXPECT_EQ(b.swaps[0], "abc1234-000001 deploy #1");
  for (int i = 0; i < 200 && Results(1).find("b=swapped") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Results(1), "a=swapped:,b=swapped:\n");
  EXPECT_EQ(Sql("SELECT rollout FROM molt_deployments WHERE seq = 1"), "100\n");
}

// A rollout is not signed: a prod-rules server takes no deploy that names one.
TEST_F(FleetDeploysTest, AProdRulesServerRefusesARollout) {
  Server a;
  a.deploys = OpenServer("a", "keys.json", &a);
  DeployRequest r;
  r.branch = "prod";
  r.build = "abc1234-000001";
  r.rollout = 50;
  Answer d = CallApi(&admin::DeployAnswer, [&](Done<DeployOutcome> reply) {
    a.deploys->Deploy(r, std::chrono::seconds(0), reply);
  });
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.body.at("error").as_string(),
            "a rollout is not signed, so prod-rules servers take every deploy whole: deploy "
            "without --rollout (spec §28)");
}

}  // namespace
}  // namespace molt::kernel::deploy

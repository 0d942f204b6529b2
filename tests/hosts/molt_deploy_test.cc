// SPDX-License-Identifier: Apache-2.0
// Deploys end to end, as an operator runs them: `molt build`, `molt deploy`, `molt rollback` and
// the registry's verbs against a real moltd; signed deploys on a prod server; a deploy and a
// rollback under 50 verifying clients; a server killed mid-deploy; the last-known-good chain.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "test_client.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/postgres.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using molt::test::kFixtures;
using molt::test::kMoltCli;
using molt::test::kMoltd;
using molt::test::kPlugins;
using molt::test::Process;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    static const char* d = "0123456789abcdef";
    hex += d[md[i] >> 4];
    hex += d[md[i] & 15];
  }
  return hex;
}

class MoltDeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_deploy_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::unsetenv("MOLT_TOKEN");
    ::unsetenv("MOLT_KEY_FILE");
    ::unsetenv("MOLT_FALLBACK_KEY_FILE");
  }
  void TearDown() override {
    moltd_.reset();
    fs::remove_all(dir_);
  }
  int Molt(std::vector<std::string> args, std::string* out = nullptr) {
    args.insert(args.begin(), kMoltCli);
    Process p(std::move(args));
    const int code = p.Wait();
    if (out != nullptr) {
      *out = p.output();
    }
    return code;
  }
  // `molt VERB ... --json --server S --data D`: its exit code and its JSON (null if none).
  json::value MoltJson(std::vector<std::string> args, int* code = nullptr) {
    for (const std::string& a :
         {std::string("--json"), std::string("--server"), server_, std::string("--data"), data()}) {
      args.push_back(a);
    }
    std::string out;
    const int c = Molt(std::move(args), &out);
    if (code != nullptr) {
      *code = c;
    }
    std::error_code ec;
    // The JSON is the last line (a progress line may come before it on stderr).
    const std::size_t start = out.find('{');
    json::value v = start == std::string::npos ? json::value() : json::parse(out.substr(start), ec);
    EXPECT_FALSE(ec) << out;
    return v;
  }
  std::string data() const { return dir_ + "/data"; }
  // moltd on `branch` with `extra` flags, serving; admin port in server_.
  void StartMoltd(const std::string& branch, std::vector<std::string> extra = {},
                  const std::string& plugins = kPlugins) {
    LaunchMoltd(branch, std::move(extra), plugins);
    ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
  }
  // The same, once it listens (it may still be booting); `env` ("NAME=VALUE") for it alone.
  void LaunchMoltd(const std::string& branch, std::vector<std::string> extra = {},
                   const std::string& plugins = kPlugins, std::vector<std::string> env = {}) {
    std::vector<std::string> args = {kMoltd, "-p",      plugins,       "-d",       data(), "--port",
                                     "0",    "--admin", "127.0.0.1:0", "--branch", branch};
    args.insert(args.end(), extra.begin(), extra.end());
    if (!env.empty()) {  // through env(1): the test's own environment stays as it is
      env.insert(env.begin(), "/usr/bin/env");
      args.insert(args.begin(), env.begin(), env.end());
    }
    moltd_ = std::make_unique<Process>(args);
    ASSERT_TRUE(moltd_->WaitFor("admin endpoint on")) << moltd_->output();
    const std::string& out = moltd_->output();
    const std::string admin = "admin endpoint on http://127.0.0.1:";
    admin_port_ = std::stoi(out.substr(out.find(admin) + admin.size()));
    server_ = "http://127.0.0.1:" + std::to_string(admin_port_);
    const std::string listening = "listening on 127.0.0.1:";
    port_ = out.substr(out.find(listening) + listening.size(), 5);
    port_ = port_.substr(0, port_.find_first_not_of("0123456789"));
  }
  void StopMoltd() {
    moltd_->Signal(SIGTERM);
    EXPECT_EQ(moltd_->Wait(), 0) << moltd_->output();
  }
  // `molt build` of `plugins` with `flags`, to dir_/name.molt.
  std::string Build(const std::string& name, std::vector<std::string> flags = {},
                    const std::string& plugins = kPlugins) {
    const std::string out_file = dir_ + "/" + name + ".molt";
    std::vector<std::string> args = {"build", plugins, "--out", out_file};
    args.insert(args.end(), flags.begin(), flags.end());
    std::string out;
    EXPECT_EQ(Molt(args, &out), 0) << out;
    return out_file;
  }
  // A build file packed by hand (tar, as `molt build` lays it out) from one library: how a test
  // makes a build that `molt build` would refuse (its plugin fails to start).
  std::string HandBuild(const std::string& name, const std::string& library,
                        const std::string& id) {
    const std::string stage = dir_ + "/stage-" + name;
    fs::create_directories(stage);
    fs::copy_file(library, stage + "/fx_gen.so");
    const json::object manifest{
        {"build", id},
        {"channel", "dev"},
        {"commit", "0000000"},
        {"plugins",
         json::array{json::object{{"file", "fx_gen.so"},
                                  {"sha256", Sha256Hex(ReadFile(stage + "/fx_gen.so"))}}}}};
    std::ofstream(stage + "/molt-build.json") << json::serialize(manifest);
    const std::string file = dir_ + "/" + name + ".molt";
    EXPECT_EQ(std::system(("tar --format=ustar --owner=0 --group=0 --numeric-owner -cf " + file +
                           " -C " + stage + " molt-build.json fx_gen.so")
                              .c_str()),
              0);
    return file;
  }
  std::string Token() { return ReadFile(data() + "/admin.token").substr(0, 64); }
  // One more moltd of a fleet: its data directory `name` under dir_, on `branch`, with `config`
  // (JSON, "" none); serving. Its admin endpoint's URL in *server.
  std::unique_ptr<Process> StartPeer(const std::string& name, const std::string& branch,
                                     const std::string& url, std::string* server,
                                     const std::string& config = "",
                                     const std::string& plugins = kPlugins) {
    std::vector<std::string> args = {
        kMoltd,   "-p",         plugins,   "-d",          dir_ + "/" + name,
        "--port", "0",          "--admin", "127.0.0.1:0", "--branch",
        branch,   "--database", url,       "--server-id", name};
    if (!config.empty()) {
      std::ofstream(dir_ + "/" + name + ".json") << config;
      args.insert(args.end(), {"--config", dir_ + "/" + name + ".json"});
    }
    auto p = std::make_unique<Process>(args);
    EXPECT_TRUE(p->WaitFor("SIGTERM or SIGINT closes")) << p->output();
    const std::string& out = p->output();
    const std::string admin = "admin endpoint on http://127.0.0.1:";
    const std::size_t at = out.find(admin);
    *server = at == std::string::npos
                  ? std::string()
                  : "http://127.0.0.1:" + std::to_string(std::stoi(out.substr(at + admin.size())));
    return p;
  }

  std::string dir_;
  std::unique_ptr<Process> moltd_;
  std::string server_;
  int admin_port_ = 0;
  std::string port_;
};

TEST_F(MoltDeployTest, DeployAdoptRollbackAndTheRegistryVerbsOnADevServer) {
  StartMoltd("dev");
  const std::string a = Build("a", {"--channel", "dev"});
  const std::string b = Build("b", {"--channel", "dev", "--health-errors", "7"});
  int code = -1;
  json::value d = MoltJson(
      {"deploy", a, "--branch", "dev", "--wait", "30", "--message", "first", "--by", "ana"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  EXPECT_EQ(d.at("seq").to_number<int>(), 1);
  EXPECT_EQ(d.at("branch").as_string(), "dev");
  // The same build again: adopted, no swap.
  d = MoltJson({"deploy", a, "--branch", "dev", "--wait", "30"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(d.at("result").as_string(), "adopted") << d;
  d = MoltJson({"deploy", b, "--branch", "dev", "--wait", "30"}, &code);
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  // The registry's verbs.
  json::value builds = MoltJson({"builds"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(builds.at("builds").as_array().size(), 2u) << builds;
  json::value branches = MoltJson({"branches"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(branches.at("applied_seq").to_number<int>(), 3) << branches;
  EXPECT_EQ(branches.at("rules").as_string(), "dev");
  const std::string b_sha(builds.at("builds").at(0).at("sha256").as_string());
  EXPECT_EQ(branches.at("branches").at(0).at("head").at("sha256").as_string(), b_sha);
  json::value history = MoltJson({"deployments", "--branch", "dev"}, &code);
  ASSERT_EQ(history.at("deployments").as_array().size(), 3u) << history;
  EXPECT_EQ(history.at("deployments").at(2).at("message").as_string(), "first");
  EXPECT_EQ(history.at("deployments").at(2).at("by").as_string(), "ana");
  // Rollback: the previous different head, a's build.
  d = MoltJson({"rollback", "--branch", "dev", "--wait", "30"}, &code);
  EXPECT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  branches = MoltJson({"branches"});
  EXPECT_NE(branches.at("branches").at(0).at("head").at("sha256").as_string(), b_sha);
  // The tables, for a person.
  std::string out;
  ASSERT_EQ(Molt({"deployments", "--server", server_, "--data", data()}, &out), 0) << out;
  EXPECT_NE(out.find("rollback"), std::string::npos) << out;
  EXPECT_NE(out.find("adopted"), std::string::npos) << out;
  // Promote a dev build onto prod: refused, even with --force (rebuild for prod).
  d = MoltJson({"promote", "prod", "#1", "--force"}, &code);
  EXPECT_EQ(code, 1) << d;
  EXPECT_EQ(d.at("result").as_string(), "refused") << d;
  EXPECT_NE(std::string(d.at("reason").as_string()).find("rebuild for prod"), std::string::npos)
      << d;
  // A pin holds this server on #3's build (b) until an unpin; the head stays.
  d = MoltJson({"pin", "#3"}, &code);
  EXPECT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  branches = MoltJson({"branches"});
  EXPECT_EQ(branches.at("pin").at("sha256").as_string(), b_sha) << branches;
  EXPECT_NE(branches.at("branches").at(0).at("head").at("sha256").as_string(), b_sha);
  d = MoltJson({"unpin"}, &code);
  EXPECT_EQ(code, 0) << d;
  EXPECT_TRUE(MoltJson({"branches"}).at("pin").is_null());
  // A restart boots the head.
  StopMoltd();
  StartMoltd("dev");
  EXPECT_NE(moltd_->output().find("booted the head of dev (#4)"), std::string::npos)
      << moltd_->output();
  StopMoltd();
}

TEST_F(MoltDeployTest, AProdServerTakesOnlyDeploysSignedByATrustedKey) {
  std::string out;
  ASSERT_EQ(Molt({"keys", "init", "--dir", dir_ + "/keys", "--json"}, &out), 0) << out;
  const std::string pub(json::parse(out).at("public_key").as_string());
  const std::string fingerprint(json::parse(out).at("fingerprint").as_string());
  ASSERT_EQ(Molt({"keys", "init", "--dir", dir_ + "/other", "--json"}, &out), 0) << out;
  std::ofstream(dir_ + "/trusted.json")
      << json::serialize(json::object{{"public_keys", json::array{pub.c_str()}}});
  std::ofstream(dir_ + "/moltd.json")
      << json::serialize(json::object{{"deploy", json::object{{"keys", dir_ + "/trusted.json"}}}});
  // It boots fx_gen, whose plugin hears the refusals on the Bus.
  StartMoltd("prod", {"-c", dir_ + "/moltd.json"}, kFixtures + "/gen/v1");
  const std::string a = Build("a", {"--channel", "prod"});
  int code = -1;
  // Unsigned: refused, with the spec's reason, exit 1.
  json::value d = MoltJson({"deploy", a, "--branch", "prod", "--force", "--wait", "30"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(d.at("result").as_string(), "refused") << d;
  EXPECT_NE(std::string(d.at("reason").as_string()).find("unsigned"), std::string::npos) << d;
  // Signed by a key the server does not trust.
  d = MoltJson({"deploy", a, "--branch", "prod", "--force", "--wait", "30", "--key",
                dir_ + "/other/main.key"},
               &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(std::string(d.at("reason").as_string()).find("bad signature"), std::string::npos) << d;
  // Signed by the trusted key (MOLT_KEY_FILE).
  ::setenv("MOLT_KEY_FILE", (dir_ + "/keys/main.key").c_str(), 1);
  d = MoltJson({"deploy", a, "--branch", "prod", "--force", "--wait", "30"}, &code);
  EXPECT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  // The server keeps the refusals.
  const json::value branches = MoltJson({"branches"});
  EXPECT_EQ(branches.at("refusals").as_array().size(), 2u) << branches;
  EXPECT_EQ(branches.at("keys").at("main").as_array().size(), 1u) << branches;
  EXPECT_TRUE(moltd_->WaitFor("refused a deploy (signature): unsigned")) << moltd_->output();
  // A plugin hears the first refusal of its kind as Kernel.DeployRefused(kind, reason); the
  // second, of the same kind within 60 s, is not published again.
  EXPECT_TRUE(moltd_->WaitFor("fx_gen v1 heard Kernel.DeployRefused(signature, unsigned"))
      << moltd_->output();
  EXPECT_EQ(moltd_->output().find("heard Kernel.DeployRefused(signature, bad signature"),
            std::string::npos)
      << moltd_->output();
  // Rotation: the new key signs, the old one is revoked once moltd reads the file again.
  ASSERT_EQ(Molt({"keys", "rotate", "--dir", dir_ + "/keys", "--keys-file", dir_ + "/trusted.json"},
                 &out),
            0)
      << out;
  moltd_->Signal(SIGHUP);
  ASSERT_TRUE(moltd_->WaitFor("\"reason\":\"SIGHUP\"")) << moltd_->output();
  d = MoltJson({"deploy", a, "--branch", "prod", "--force", "--wait", "30", "--key",
                dir_ + "/keys/main.key." + fingerprint + ".revoked"},
               &code);
  EXPECT_EQ(code, 1) << d;
  EXPECT_NE(std::string(d.at("reason").as_string()).find("revoked"), std::string::npos) << d;
  d = MoltJson({"deploy", a, "--branch", "prod", "--force", "--wait", "30"}, &code);
  EXPECT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("result").as_string(), "adopted") << d;
  StopMoltd();
}

TEST_F(MoltDeployTest, UploadsAreGuardedCappedAndVerified) {
  std::ofstream(dir_ + "/moltd.json")
      << json::serialize(json::object{{"deploy", json::object{{"max_build_mb", 1}}}});
  StartMoltd("dev", {"-c", dir_ + "/moltd.json"});
  using molt::test::HttpCall;
  const auto port = static_cast<std::uint16_t>(admin_port_);
  // Without the token nothing of the body is read.
  EXPECT_EQ(HttpCall(port, "POST", "/api/v1/builds", "", "x").status, 401);
  // Over deploy.max_build_mb: 413 before a byte is stored.
  EXPECT_EQ(HttpCall(port, "POST", "/api/v1/builds", Token(), std::string(2 << 20, 'x')).status,
            413);
  // Not a build file.
  molt::test::HttpResult r = HttpCall(port, "POST", "/api/v1/builds", Token(), "not a build");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_TRUE(fs::is_empty(data() + "/registry/builds"));
  EXPECT_TRUE(fs::is_empty(data() + "/registry/uploads"));
  // A deploy body that is not JSON, a build nobody uploaded.
  EXPECT_EQ(HttpCall(port, "POST", "/api/v1/deploy", Token(), "{").status, 400);
  r = HttpCall(port, "POST", "/api/v1/deploy", Token(), R"({"branch":"dev","build":"nope"})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("molt builds"), std::string::npos) << r.body;
  EXPECT_EQ(HttpCall(port, "GET", "/api/v1/deploy", Token()).status, 405);
  StopMoltd();
}

// The product's promise for deploys: a deploy and a rollback while 50 clients number their
// messages on the counter's echo channel; nothing lost, duplicated or reordered.
TEST_F(MoltDeployTest, ADeployAndARollbackUnderFiftyVerifyingClientsLoseNothing) {
  StartMoltd("dev");
  const std::string a = Build("a", {"--channel", "dev"});
  const std::string b = Build("b", {"--channel", "dev", "--health-errors", "9"});
  int code = -1;
  ASSERT_EQ(MoltJson({"deploy", a, "--branch", "dev", "--wait", "30"}, &code).at("result"),
            "swapped");
  Process bot({MOLT_BOT_PATH, "--port", port_, "--clients", "50", "--rate", "10", "--duration",
               "600", "--verify"});
  ASSERT_TRUE(bot.WaitFor("50/50 clients joined")) << bot.output();
  json::value d = MoltJson({"deploy", b, "--branch", "dev", "--wait", "30"}, &code);
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  ::usleep(300 * 1000);
  d = MoltJson({"rollback", "--branch", "dev", "--wait", "30"}, &code);
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  ::usleep(300 * 1000);
  bot.Signal(SIGINT);
  EXPECT_EQ(bot.Wait(), 0) << bot.output();
  EXPECT_NE(bot.output().find("done: 50/50 connected"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find("disconnects 0"), std::string::npos) << bot.output();
  EXPECT_NE(bot.output().find(" echoed 0 lost 0 duplicated 0 out of order"), std::string::npos)
      << bot.output();
  StopMoltd();
}

// kill -9 in the middle of a deploy, then a boot: a valid build serves, never an empty server,
// and the deployments the kill cut get their result (they stayed pending forever before).
TEST_F(MoltDeployTest, AServerKilledMidDeployBootsAValidBuildAndSettlesWhatTheKillCut) {
  StartMoltd("dev");
  const std::string a = Build("a", {"--channel", "dev"});
  const std::string b = Build("b", {"--channel", "dev", "--health-errors", "9"});
  const std::string c = Build("c", {"--channel", "dev", "--health-errors", "8"});
  int code = -1;
  ASSERT_EQ(MoltJson({"deploy", a, "--branch", "dev", "--wait", "30"}, &code).at("result"),
            "swapped");
  // No --wait: the answer comes at once and the swaps are under way when the kill lands.
  const json::value d2 = MoltJson({"deploy", b, "--branch", "dev"}, &code);
  EXPECT_EQ(d2.at("result").as_string(), "pending") << d2;
  const json::value d3 = MoltJson({"deploy", c, "--branch", "dev"}, &code);
  EXPECT_EQ(d3.at("result").as_string(), "pending") << d3;
  moltd_->Signal(SIGKILL);
  moltd_->Wait();
  const std::string pending = molt::test::Shell(
      "sqlite3 " + data() +
      "/registry/registry.db \"SELECT seq FROM deployments WHERE result = 'pending'\"");
  ASSERT_NE(pending.find("3"), std::string::npos) << "the kill came after #3 reported: " << pending;

  StartMoltd("dev");
  EXPECT_NE(moltd_->output().find(molt::test::kServingBundled), std::string::npos)
      << moltd_->output();
  EXPECT_EQ(molt::test::HttpCall(static_cast<std::uint16_t>(admin_port_), "GET", "/readyz").status,
            200);
  // The head booted: #3 is adopted; #2, which #3 came after, is superseded (or swapped, when its
  // swap reported before the kill). Nothing stays pending, and molt doctor agrees.
  std::map<std::uint64_t, json::value> by_seq;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    by_seq.clear();
    const json::value list = MoltJson({"deployments"});
    ASSERT_TRUE(list.is_object()) << list;
    for (const json::value& d : list.at("deployments").as_array()) {
      by_seq[d.at("seq").to_number<std::uint64_t>()] = d;
    }
  } while (by_seq[3].at("result") == "pending" && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(by_seq[3].at("result"), "adopted") << by_seq[3];
  EXPECT_NE(std::string(by_seq[3].at("reason").as_string()).find("stopped mid-deploy"),
            std::string::npos)
      << by_seq[3];
  const std::string r2(by_seq[2].at("result").as_string());
  EXPECT_TRUE(r2 == "superseded" || r2 == "swapped") << by_seq[2];
  if (r2 == "superseded") {
    EXPECT_NE(std::string(by_seq[2].at("reason").as_string())
                  .find("#3 moved the head past it before this server reported on it"),
              std::string::npos)
        << by_seq[2];
  }
  std::string out;
  EXPECT_EQ(Molt({"doctor", "--server", server_, "--data", data()}, &out), 0) << out;
  EXPECT_NE(out.find("ok    deployments: none of dev left pending"), std::string::npos) << out;
  StopMoltd();
}

// The last-known-good chain: the branch's head and the deploy before it do not start; the boot
// goes on to the third, says so, and marks the two failed here.
TEST_F(MoltDeployTest, TheLastKnownGoodChainBootsTheThirdWhenTheFirstTwoAreBroken) {
  const std::string good = HandBuild("good", kFixtures + "/gen/v1/fx_gen_v1.so", "good-000001");
  const std::string init =
      HandBuild("init", kFixtures + "/gen/fail_init/fx_gen_fail_init.so", "broken-00init");
  const std::string start =
      HandBuild("start", kFixtures + "/gen/fail_start/fx_gen_fail_start.so", "broken-0start");
  // Recorded by a server on another branch: nothing runs them yet.
  StartMoltd("other");
  int code = -1;
  for (const std::string* file : {&good, &init, &start}) {
    const json::value d = MoltJson({"deploy", *file, "--branch", "dev", "--force"}, &code);
    ASSERT_EQ(d.at("result").as_string(), "recorded") << d;
  }
  StopMoltd();
  StartMoltd("dev");
  const std::string& out = moltd_->output();
  EXPECT_NE(out.find("the head of dev (#3), broken-0start does not boot"), std::string::npos)
      << out;
  EXPECT_NE(out.find("dev's #2 (last known good), broken-00init does not boot"), std::string::npos)
      << out;
  EXPECT_NE(out.find("booted dev's #1 (last known good), good-000001"), std::string::npos) << out;
  EXPECT_NE(out.find("serving 1 plugins"), std::string::npos) << out;
  const json::value builds = MoltJson({"builds"});
  int failed = 0;
  for (const json::value& b : builds.at("builds").as_array()) {
    failed += b.at("failed_here").is_string() ? 1 : 0;
  }
  EXPECT_EQ(failed, 2) << builds;
  StopMoltd();
}

// --- The boot budget (spec §31): a generation serves within 15 s of the start, or moltd says why.
// A disk or network file system that hangs cannot be made for real here: MOLT_TEST_SLOW_STAGES
// holds moltd's build reads (server.cc); a start that hangs is a real plugin's (sleep_start).

// After a rotation revoked the key that signed the prod head, a prod server that restarts passes
// the head over (its signature no longer verifies); `molt keys resign` signs it again with the
// new key (the same build, a new seq, no swap), and the next restart boots it.
TEST_F(MoltDeployTest, KeysResignKeepsTheProdHeadTrustedAfterARotation) {
  std::string out;
  ASSERT_EQ(Molt({"keys", "init", "--dir", dir_ + "/keys", "--json"}, &out), 0) << out;
  const std::string pub(json::parse(out).at("public_key").as_string());
  std::ofstream(dir_ + "/trusted.json")
      << json::serialize(json::object{{"public_keys", json::array{pub.c_str()}}});
  std::ofstream(dir_ + "/moltd.json")
      << json::serialize(json::object{{"deploy", json::object{{"keys", dir_ + "/trusted.json"}}}});
  const std::vector<std::string> config = {"-c", dir_ + "/moltd.json"};
  StartMoltd("prod", config);
  const std::string a = Build("a", {"--channel", "prod"});
  const std::string key = dir_ + "/keys/main.key";
  int code = -1;
  json::value d =
      MoltJson({"deploy", a, "--branch", "prod", "--force", "--wait", "30", "--key", key}, &code);
  ASSERT_EQ(d.at("result").as_string(), "swapped") << d;
  const std::string build(d.at("build").as_string());
  ASSERT_EQ(Molt({"keys", "rotate", "--dir", dir_ + "/keys", "--keys-file", dir_ + "/trusted.json"},
                 &out),
            0)
      << out;
  EXPECT_NE(out.find("then molt keys resign --key " + key), std::string::npos) << out;
  // Without the re-sign: the head is passed over at the next boot.
  StopMoltd();
  StartMoltd("prod", config);
  EXPECT_NE(moltd_->output().find("the head of prod (#1): " + build +
                                  " is skipped on a prod-rules server"),
            std::string::npos)
      << moltd_->output();
  // Arguments first: no key, no re-sign.
  EXPECT_EQ(Molt({"keys", "resign", "--server", server_, "--data", data()}, &out), 2) << out;
  EXPECT_NE(out.find("re-sign with which key? --key FILE (or MOLT_KEY_FILE)"), std::string::npos);
  d = MoltJson({"keys", "resign", "--key", key, "--wait", "30"}, &code);
  EXPECT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("result").as_string(), "adopted") << d;
  EXPECT_EQ(d.at("seq").to_number<std::int64_t>(), 2) << d;
  EXPECT_TRUE(moltd_->WaitFor("#2 prod: " + build + " re-signed (no swap)")) << moltd_->output();
  const json::value history = MoltJson({"deployments"});
  EXPECT_EQ(history.at("deployments").as_array()[0].at("kind").as_string(), "resign") << history;
  // A re-sign names the head, nothing else.
  d = MoltJson({"keys", "resign", "--key", key, "--branch", "nowhere"}, &code);
  EXPECT_EQ(code, 1);
  const std::string other = Build("other", {"--channel", "prod", "--health-errors", "9"});
  const molt::test::HttpResult up = molt::test::HttpCall(
      static_cast<std::uint16_t>(admin_port_), "POST", "/api/v1/builds", Token(), ReadFile(other));
  ASSERT_EQ(up.status, 201) << up.body;
  const json::value stored = json::parse(up.body).at("build");
  const molt::test::HttpResult refused = molt::test::HttpCall(
      static_cast<std::uint16_t>(admin_port_), "POST", "/api/v1/resign", Token(),
      R"({"branch":"prod","build":")" + std::string(stored.at("sha256").as_string()) + R"("})");
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("a re-sign names the head of prod (build "), std::string::npos)
      << refused.body;
  EXPECT_NE(refused.body.find("not build " + std::string(stored.at("id").as_string()) +
                              ": deploy that build instead"),
            std::string::npos)
      << refused.body;
  StopMoltd();
  StartMoltd("prod", config);
  EXPECT_NE(moltd_->output().find("booted the head of prod (#2), " + build), std::string::npos)
      << moltd_->output();
  StopMoltd();
}

// The listener opens before the boot: a client that comes meanwhile is refused with "Starting"
// (whatever its channel table says: the server's is not the game's yet), /readyz says nothing
// serves, and once a generation serves both are served.
TEST_F(MoltDeployTest, ClientsThatComeWhileItBootsAreToldItIsStarting) {
  namespace w = molt::wire;
  LaunchMoltd("dev", {}, kPlugins, {"MOLT_TEST_SLOW_STAGES=3:1"});
  ASSERT_EQ(moltd_->output().find("SIGTERM or SIGINT closes"), std::string::npos)
      << "booted before the held stage ended: " << moltd_->output();
  const auto port = static_cast<std::uint16_t>(std::stoi(port_));
  molt::test::TestClient early(port);
  const molt::test::Frame refused = early.Hello("early", 2, 0x1234);
  ASSERT_EQ(refused.type(), w::Body::Refuse) << moltd_->output();
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->reason(), w::RefuseReason::Starting);
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->text()->str(),
            "the server is starting: no plugin generation serves yet");
  EXPECT_EQ(refused.envelope()->body_as_Refuse()->retry_after_ms(), 1000u);
  const molt::test::HttpResult ready =
      molt::test::HttpCall(static_cast<std::uint16_t>(admin_port_), "GET", "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("no plugin generation serves"), std::string::npos) << ready.body;
  ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
  molt::test::TestClient later(port);
  EXPECT_EQ(later.Hello("later").type(), w::Body::Welcome) << moltd_->output();
  EXPECT_EQ(molt::test::HttpCall(static_cast<std::uint16_t>(admin_port_), "GET", "/readyz").status,
            200);
  StopMoltd();
}

// The registry is read off the kernel thread and waited for at most 3 s: one locked by another
// process (a write transaction held on registry.db, a real one here) does not stop the boot. The
// bundled fallback serves, deploys answer 503 naming why, and once the lock goes the registry
// opens and the branch's head is swapped in.
TEST_F(MoltDeployTest, ALockedRegistryDoesNotStopTheBootAndTheHeadFollowsOnceItOpens) {
  StartMoltd("dev");
  const std::string a = Build("a", {"--channel", "dev"});
  int code = -1;
  json::value d = MoltJson({"deploy", a, "--branch", "dev", "--wait", "30"}, &code);
  ASSERT_EQ(d.at("result").as_string(), "swapped") << d;
  const std::string build(d.at("build").as_string());
  StopMoltd();
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open((data() + "/registry/registry.db").c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  LaunchMoltd("dev");
  ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
  EXPECT_NE(moltd_->output().find("boot: the deploy registry is not open after 3 s: booting "
                                  "without it"),
            std::string::npos)
      << moltd_->output();
  EXPECT_NE(moltd_->output().find(molt::test::kServingBundled + " from " + kPlugins),
            std::string::npos);
  EXPECT_TRUE(moltd_->WaitFor("the deploy registry cannot be opened: ")) << moltd_->output();
  EXPECT_TRUE(moltd_->WaitFor("database is locked")) << moltd_->output();
  const molt::test::HttpResult refused = molt::test::HttpCall(
      static_cast<std::uint16_t>(admin_port_), "GET", "/api/v1/branches", Token());
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("its deploy registry is not open yet"), std::string::npos)
      << refused.body;
  ASSERT_EQ(sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(lock);
  EXPECT_TRUE(moltd_->WaitFor("the deploy registry is open, ")) << moltd_->output();
  EXPECT_TRUE(
      moltd_->WaitFor("{\"swap\":\"ok\",\"reason\":\"boot: the head, once the registry opened\""))
      << moltd_->output();
  EXPECT_NE(moltd_->output().find("\"build\":\"" + build + "\""), std::string::npos)
      << moltd_->output();
  d = MoltJson({"branches"}, &code);
  EXPECT_EQ(code, 0) << d;
  StopMoltd();
}

// A head whose read hangs is abandoned at the 4 s load cap; the bundled fallback serves, the head
// is not marked failed (nothing is known of it), and it is swapped in once the disk answers.
TEST_F(MoltDeployTest, AHeadWhoseReadHangsIsAbandonedAtTheLoadCapAndRetriedOnceServing) {
  StartMoltd("dev");
  const std::string a = Build("a", {"--channel", "dev"});
  int code = -1;
  ASSERT_EQ(MoltJson({"deploy", a, "--branch", "dev", "--wait", "30"}, &code).at("result"),
            "swapped");
  StopMoltd();
  LaunchMoltd("dev", {}, kPlugins, {"MOLT_TEST_SLOW_STAGES=60:1"});
  ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
  const std::string& out = moltd_->output();
  EXPECT_NE(out.find("took more than 4 s: abandoned (is its disk or file system stuck?)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("booting the plugin directory " + kPlugins + " (the bundled fallback)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(molt::test::kServingBundled), std::string::npos) << out;
  EXPECT_TRUE(moltd_->WaitFor("\"reason\":\"boot: the head again, after its boot timed out\""))
      << out;
  EXPECT_NE(moltd_->output().find("ran out of boot time; retrying it while"), std::string::npos);
  const json::value builds = MoltJson({"builds"});
  for (const json::value& b : builds.at("builds").as_array()) {
    EXPECT_FALSE(b.at("failed_here").is_string()) << b;
  }
  StopMoltd();
}

// Every read hangs: each candidate gets its cap (4 s, squeezed toward the 12 s deadline, never
// under 2 s), none starts after the 9 s cut-off but the bundled fallback, and when nothing
// serves moltd exits saying so (its supervisor starts it again).
TEST_F(MoltDeployTest, WhenNothingBootsWithinTheBudgetMoltdSaysSoAndExits) {
  StartMoltd("dev");
  int code = -1;
  for (const char* name : {"a", "b", "c", "d"}) {
    const std::string file =
        Build(name, {"--channel", "dev", "--health-errors", std::to_string(2 + (name[0] - 'a'))});
    ASSERT_EQ(MoltJson({"deploy", file, "--branch", "dev", "--wait", "30"}, &code).at("result"),
              "swapped");
  }
  StopMoltd();
  LaunchMoltd("dev", {}, kPlugins, {"MOLT_TEST_SLOW_STAGES=60"});
  EXPECT_EQ(moltd_->Wait(), 1) << moltd_->output();  // kExitBootFailed
  const std::string& out = moltd_->output();
  EXPECT_NE(out.find("past the 9 s fallback cut-off: the plugin directory " + kPlugins +
                     " (the bundled fallback) boots now"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("took more than 2 s: abandoned"), std::string::npos) << out;  // the floor
  EXPECT_NE(out.find("cannot start: nothing boots within the 15 s boot budget (5 of 5 builds "
                     "tried, each failure above): the last known good chain is exhausted "
                     "(lkg_exhausted)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("serving "), std::string::npos) << out;
}

// A head whose start() hangs (a real plugin, sleeping past the 5 s callback deadline) is
// abandoned there, marked failed here, and the next build serves.
TEST_F(MoltDeployTest, AHeadWhoseStartHangsIsAbandonedAtItsDeadlineAndTheNextServes) {
  const std::string hang =
      HandBuild("hang", kFixtures + "/gen/sleep_start/fx_gen_sleep_start.so", "hangs-0start");
  StartMoltd("other");
  int code = -1;
  ASSERT_EQ(MoltJson({"deploy", hang, "--branch", "dev", "--force"}, &code).at("result"),
            "recorded");
  StopMoltd();
  LaunchMoltd("dev", {}, kPlugins, {"MOLT_FX_SLEEP_SECONDS=30"});
  ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
  const std::string& out = moltd_->output();
  EXPECT_NE(out.find("the head of dev (#1), hangs-0start does not boot"), std::string::npos) << out;
  EXPECT_NE(out.find(molt::test::kServingBundled), std::string::npos) << out;
  bool marked = false;
  const json::value builds = MoltJson({"builds"});
  for (const json::value& b : builds.at("builds").as_array()) {
    marked =
        marked || (b.at("id").as_string() == "hangs-0start" && b.at("failed_here").is_string());
  }
  EXPECT_TRUE(marked) << builds;
  StopMoltd();
}

// The registry on the fleet's PostgreSQL (docs/fleet.md, "Deploys"): one #seq for the fleet, a
// deploy made on one server reaches every server on its branch by NOTIFY (well inside the 60 s
// poll), the others record it; each server's result is in molt_deploy_results; a server
// started later boots the head; a deployment that came without a notification arrives by the
// poll.
TEST_F(MoltDeployTest, ADeployOnOneServerReachesEveryServerOnItsBranch) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  const std::string db = url.substr(url.rfind('=') + 1);
  std::string server_a, server_b, server_c;
  auto a = StartPeer("a", "dev", url, &server_a);
  auto b = StartPeer("b", "dev", url, &server_b);
  auto c = StartPeer("c", "qa", url, &server_c);
  ASSERT_FALSE(server_a.empty() || server_b.empty() || server_c.empty());
  // Live values are the fleet's too: one set through a serves on b and c at once.
  std::string live;
  ASSERT_EQ(Molt({"config", "set", "counter.multiplier", "3", "--server", server_a, "--token-file",
                  dir_ + "/a/admin.token"},
                 &live),
            0)
      << live;
  EXPECT_TRUE(b->WaitFor("live value counter.multiplier set to 3 by")) << b->output();
  EXPECT_TRUE(c->WaitFor("live value counter.multiplier set to 3 by")) << c->output();
  ASSERT_EQ(
      Molt({"config", "get", "--server", server_c, "--token-file", dir_ + "/c/admin.token"}, &live),
      0)
      << live;
  EXPECT_NE(live.find("counter.multiplier  3      1"), std::string::npos) << live;
  const std::string first = Build("first", {"--channel", "dev"});
  const std::string second = Build("second", {"--channel", "dev", "--health-errors", "7"});
  auto deploy = [&](const std::string& file, const std::string& server) {
    server_ = server;
    int code = -1;
    json::value d = MoltJson({"deploy", file, "--branch", "dev", "--wait", "30", "--token-file",
                              dir_ + "/a/admin.token"},
                             &code);
    EXPECT_EQ(code, 0) << d;
    return d;
  };
  json::value d = deploy(first, server_a);
  ASSERT_EQ(d.at("result").as_string(), "swapped") << d << a->output();
  EXPECT_EQ(d.at("seq").to_number<int>(), 1);
  const std::string first_id(d.at("build").as_string());
  // b heard it at once (the poll is 60 s away) and swapped; c (qa) recorded it only.
  EXPECT_TRUE(b->WaitFor("#1 dev: " + first_id + " swapped", std::chrono::seconds(20)))
      << b->output();
  EXPECT_TRUE(b->WaitFor("fetched build " + first_id)) << b->output();
  EXPECT_TRUE(c->WaitFor("#1 dev: deploy " + first_id + " by")) << c->output();
  EXPECT_EQ(c->output().find("swapped"), std::string::npos) << c->output();
  EXPECT_EQ(pg.Psql("SELECT string_agg(server_id || '=' || result, ',' ORDER BY server_id) FROM "
                    "molt_deploy_results WHERE seq = 1",
                    db),
            "a=swapped,b=swapped\n");
  // The fleet's seq: a deploy through b (qa's server c too) takes #2, never a number b had.
  std::string out;
  ASSERT_EQ(Molt({"branches", "--json", "--server", server_c, "--data", dir_ + "/c"}, &out), 0)
      << out;
  EXPECT_NE(out.find("\"next_seq\":2"), std::string::npos) << out;
  // b stops; #2 is deployed meanwhile; b started again boots it (the head of dev).
  b->Signal(SIGTERM);
  EXPECT_EQ(b->Wait(), 0) << b->output();
  d = deploy(second, server_a);
  ASSERT_EQ(d.at("seq").to_number<int>(), 2) << d;
  b = StartPeer("b", "dev", url, &server_b);
  EXPECT_NE(b->output().find("booted the head of dev (#2)"), std::string::npos) << b->output();
  // A deployment recorded without a notification (as if b missed it) arrives by the poll: a
  // server polling every 0.5 s takes #3 (the first build again) on its own.
  auto e = StartPeer("e", "dev", url, &server_b, R"({"deploy": {"poll_seconds": 0.5}})");
  ASSERT_TRUE(e->WaitFor("booted the head of dev (#2)")) << e->output();
  pg.Psql(
      "BEGIN; INSERT INTO molt_deployments SELECT 3, branch, build, build_id, 'rollback', "
      "'psql', 'quietly', at_ms, sent_ms, sig, sig_fallback, protocol, rollout, origin FROM "
      "molt_deployments WHERE seq = 1; UPDATE molt_registry_seq SET last_seq = 3; "
      "UPDATE molt_branches SET seq = 3, head = (SELECT build FROM molt_deployments WHERE "
      "seq = 1) WHERE name = 'dev'; COMMIT;",
      db);
  EXPECT_TRUE(e->WaitFor("#3 dev: " + first_id + " swapped", std::chrono::seconds(20)))
      << e->output();
  // A rollout to 71%: a (bucket 70) swaps; b (71) and e (74) record it, skip it, keep serving.
  server_ = server_a;
  int code = -1;
  const std::string third = Build("third", {"--channel", "dev", "--health-errors", "9"});
  d = MoltJson({"deploy", third, "--branch", "dev", "--rollout", "71", "--wait", "30",
                "--token-file", dir_ + "/a/admin.token"},
               &code);
  ASSERT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("result").as_string(), "swapped") << d;
  EXPECT_EQ(d.at("rollout").to_number<int>(), 71) << d;
  const std::string third_id(d.at("build").as_string());
  EXPECT_TRUE(b->WaitFor("#4 dev: " + third_id +
                         " skipped: outside the 71% rollout (this server's bucket is 71)"))
      << b->output();
  EXPECT_TRUE(e->WaitFor("#4 dev: " + third_id + " skipped")) << e->output();
  // Widened to everyone: the same #4 reaches b and e.
  d = MoltJson(
      {"deploy", "--widen", "100", "--branch", "dev", "--token-file", dir_ + "/a/admin.token"},
      &code);
  ASSERT_EQ(code, 0) << d;
  EXPECT_EQ(d.at("rollout").to_number<int>(), 100) << d;
  EXPECT_TRUE(b->WaitFor("#4 dev: " + third_id + " swapped")) << b->output();
  EXPECT_TRUE(e->WaitFor("#4 dev: " + third_id + " swapped")) << e->output();
  EXPECT_EQ(pg.Psql("SELECT string_agg(server_id || '=' || result, ',' ORDER BY server_id) FROM "
                    "molt_deploy_results WHERE seq = 4",
                    db),
            "a=swapped,b=swapped,e=swapped\n");
  // molt report: every server of dev with its result; c (qa) is not one of them.
  std::string report;
  EXPECT_EQ(
      Molt({"report", "4", "--server", server_a, "--token-file", dir_ + "/a/admin.token"}, &report),
      0)
      << report;
  EXPECT_NE(report.find("3 server(s): 3 swapped"), std::string::npos) << report;
  EXPECT_EQ(report.find("\nc "), std::string::npos) << report;
  // A build that fails to start everywhere: --wait sees every server fail (100% >= 20%) and
  // rolls dev back on its own; the exit code says it failed.
  const std::string broken =
      HandBuild("broken", kFixtures + "/gen/fail_start/fx_gen_fail_start.so", "broken-0start");
  d = MoltJson({"deploy", broken, "--branch", "dev", "--wait", "30", "--token-file",
                dir_ + "/a/admin.token"},
               &code);
  EXPECT_EQ(code, 1) << d;
  EXPECT_EQ(d.at("result").as_string(), "failed") << d;
  EXPECT_EQ(d.at("fleet").at("failed").to_number<int>(), 3) << d;
  EXPECT_EQ(d.at("auto_rollback").at("kind").as_string(), "rollback") << d;
  EXPECT_EQ(d.at("auto_rollback").at("build").as_string(), third_id) << d;
  EXPECT_EQ(d.at("auto_rollback").at("fleet").at("failed").to_number<int>(), 0) << d;
  EXPECT_EQ(
      Molt({"report", "5", "--json", "--server", server_a, "--token-file", dir_ + "/a/admin.token"},
           &report),
      1)
      << report;
  // Below the threshold: reported, exit 1, no rollback.
  d = MoltJson({"deploy", broken, "--branch", "dev", "--wait", "30", "--force", "--rollback-at",
                "100", "--no-auto-rollback", "--token-file", dir_ + "/a/admin.token"},
               &code);
  EXPECT_EQ(code, 1) << d;
  EXPECT_FALSE(d.as_object().contains("auto_rollback")) << d;
  for (Process* p : {a.get(), b.get(), c.get(), e.get()}) {
    p->Signal(SIGTERM);
    EXPECT_EQ(p->Wait(), 0) << p->output();
  }
}

// --rollout and --widen are checked before anything is sent.
TEST_F(MoltDeployTest, RolloutAndWidenFlagsAreCheckedBeforeAnythingIsSent) {
  std::string out;
  EXPECT_EQ(Molt({"deploy", "x.molt", "--rollout", "100", "--server", "http://127.0.0.1:1"}, &out),
            2);
  EXPECT_NE(out.find("--rollout is 1 to 99"), std::string::npos) << out;
  EXPECT_EQ(Molt({"deploy", "x.molt", "--widen", "50", "--server", "http://127.0.0.1:1"}, &out), 2);
  EXPECT_NE(out.find("--widen names no build and no --rollout"), std::string::npos) << out;
}

// Messages between servers (docs/fleet.md, "Messages"): a plugin on each of two servers of one
// fleet database hears the other's, and its own.
TEST_F(MoltDeployTest, PluginsOnTwoServersHearEachOthersMessages) {
  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  const std::string plugins = kFixtures + "/messages/v1";
  std::string server_a, server_b;
  auto a = StartPeer("a", "dev", url, &server_a, "", plugins);
  auto b = StartPeer("b", "dev", url, &server_b, "", plugins);  // its start says hello
  EXPECT_TRUE(a->WaitFor("heard chat 'hello' from b self=0 replayed=0")) << a->output();
  EXPECT_TRUE(b->WaitFor("heard chat 'hello' from b self=1 replayed=0")) << b->output();
  EXPECT_TRUE(a->WaitFor("heard chat 'hello' from a self=1 replayed=0")) << a->output();
  EXPECT_EQ(b->output().find("from a"), std::string::npos) << "a's hello came before b started";
  for (Process* p : {a.get(), b.get()}) {
    p->Signal(SIGTERM);
    EXPECT_EQ(p->Wait(), 0) << p->output();
  }
}

}  // namespace

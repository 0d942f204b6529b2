// SPDX-License-Identifier: Apache-2.0
// The molt CLI (hosts/molt), run as an operator runs it: real processes against a real moltd,
// and build files checked with tar and loaded by moltd.
#include <gtest/gtest.h>
#include <molt/molt.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/child_process.h"
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

class MoltCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_cli_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::unsetenv("MOLT_TOKEN");
  }
  void TearDown() override {
    moltd_.reset();
    fs::remove_all(dir_);
  }
  // Runs molt with `args`; its exit code, and its output in `out`.
  int Molt(std::vector<std::string> args, std::string* out = nullptr) {
    args.insert(args.begin(), kMoltCli);
    Process p(std::move(args));
    const int code = p.Wait();
    if (out != nullptr) {
      *out = p.output();
    }
    return code;
  }
  std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // A moltd serving `plugins`; --server for it in server_.
  void StartMoltd(const std::string& plugins) {
    moltd_ = std::make_unique<Process>(std::vector<std::string>{
        kMoltd, "-p", plugins, "-d", dir_ + "/data", "--port", "0", "--admin", "127.0.0.1:0"});
    ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
    const std::string& out = moltd_->output();
    const std::string admin = "admin endpoint on http://127.0.0.1:";
    server_ =
        "http://127.0.0.1:" + std::to_string(std::stoi(out.substr(out.find(admin) + admin.size())));
  }

  std::string dir_;
  std::unique_ptr<Process> moltd_;
  std::string server_;
};

TEST_F(MoltCliTest, HelpListsTheVerbsAndMistakesExitTwoNamingTheFix) {
  std::string out;
  EXPECT_EQ(Molt({"--help"}, &out), 0);
  for (const char* verb :
       {"status", "sessions", "kick", "logs", "reload", "bundle", "build", "keys"}) {
    EXPECT_NE(out.find(std::string("  ") + verb + " "), std::string::npos) << verb << "\n" << out;
  }
  EXPECT_NE(out.find("Exit codes: 0 done; 1 the operation failed"), std::string::npos);
  EXPECT_EQ(Molt({"frobnicate"}, &out), 2);
  EXPECT_NE(out.find("unknown verb \"frobnicate\" (molt --help lists the verbs)"),
            std::string::npos)
      << out;
  EXPECT_EQ(Molt({"build"}, &out), 2);
  EXPECT_NE(out.find("which plugin directory? molt build DIR"), std::string::npos) << out;
  EXPECT_EQ(Molt({"build", kPlugins, "--channel", "beta"}, &out), 2);
  EXPECT_NE(out.find("channel \"beta\" is prod or dev"), std::string::npos) << out;
  EXPECT_EQ(Molt({"status", "--no-such-flag"}, &out), 2);
  EXPECT_NE(out.find("(molt status --help lists the flags)"), std::string::npos) << out;
  // Arguments are checked before a server is needed: no token, no moltd, still exit 2.
  EXPECT_EQ(Molt({"deploy", "--branch", "dev"}, &out), 2);
  EXPECT_NE(out.find("which build? molt deploy BUILD_FILE|BUILD --branch B"), std::string::npos)
      << out;
  EXPECT_EQ(Molt({"promote", "dev"}, &out), 2);
  EXPECT_NE(out.find("which branch and build? molt promote BRANCH BUILD|#SEQ"), std::string::npos)
      << out;
  EXPECT_EQ(Molt({"reload", "--help"}, &out), 0);
  EXPECT_NE(out.find("--wait"), std::string::npos) << out;
}

TEST_F(MoltCliTest, ABuildFileIsATarOfTheManifestAndTheLibrariesTheSameEveryTime) {
  const std::string a = dir_ + "/a.molt";
  const std::string b = dir_ + "/b.molt";
  std::string out;
  ASSERT_EQ(Molt({"build", kPlugins, "--out", a}, &out), 0) << out;
  EXPECT_NE(out.find("(" + std::to_string(molt::test::kBundledPlugins) + " plugins, "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(", protocol "), std::string::npos) << out;
  ASSERT_EQ(Molt({"build", kPlugins, "--out", b, "--json"}, &out), 0) << out;
  EXPECT_EQ(Slurp(a), Slurp(b)) << "the same inputs give the same bytes";
  const json::value j = json::parse(out);
  const std::string id(j.at("build").as_string());
  // <commit7>-<hash6>, or <commit7>-dirty-<hash6>, or nogit-<hash6>.
  EXPECT_GE(id.size(), 12u) << id;
  EXPECT_EQ(id.substr(id.size() - 7, 1), "-") << id;
  const json::value& m = j.at("manifest");
  EXPECT_EQ(m.at("build").as_string(), id);
  EXPECT_EQ(m.at("branch").as_string().size() > 0, true);
  EXPECT_EQ(m.at("protocol").as_string().size(), 16u);
  ASSERT_EQ(m.at("plugins").as_array().size(),
            static_cast<std::size_t>(molt::test::kBundledPlugins));
  const json::value& first = m.at("plugins").as_array()[0];
  EXPECT_EQ(first.at("kind").as_string(), "service");
  EXPECT_EQ(first.at("abi").as_string(),
            "1." + std::to_string(MOLT_ABI_VERSION_MINOR));  // built with today's molt.h
  EXPECT_EQ(first.at("sha256").as_string().size(), 64u);
  // tar reads it: the manifest first, then the libraries.
  ASSERT_EQ(std::system(("tar tf " + a + " > " + dir_ + "/list").c_str()), 0);
  const std::string list = Slurp(dir_ + "/list");
  EXPECT_EQ(list.rfind("molt-build.json\n", 0), 0u) << list;
  EXPECT_NE(list.find("scores.so"), std::string::npos) << list;
  // Flags land in the manifest, the branch's channel by default.
  ASSERT_EQ(Molt({"build", kPlugins, "--out", dir_ + "/c.molt", "--branch", "feature-x",
                  "--health-errors", "7", "--json"},
                 &out),
            0)
      << out;
  const json::value c = json::parse(out).at("manifest");
  EXPECT_EQ(c.at("branch").as_string(), "feature-x");
  EXPECT_EQ(c.at("channel").as_string(), "dev");
  EXPECT_EQ(c.at("health").at("errors").as_int64(), 7);
  // moltd boots a build file as it is, named after its build id.
  Process p({kMoltd, "-p", a, "-d", dir_ + "/data", "--port", "0", "--admin", "off"});
  ASSERT_TRUE(p.WaitFor("SIGTERM or SIGINT closes")) << p.output();
  EXPECT_NE(
      p.output().find(molt::test::kServingBundled + " from " + a + " as generation " + id + "#1"),
      std::string::npos)
      << p.output();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0) << p.output();
}

TEST_F(MoltCliTest, BuildRefusesWhatIsNotAPluginSetAndNamesWhy) {
  std::string out;
  fs::create_directories(dir_ + "/empty");
  EXPECT_EQ(Molt({"build", dir_ + "/empty"}, &out), 1);
  EXPECT_NE(out.find("holds no plugin (*.so): there is nothing to build"), std::string::npos)
      << out;
  EXPECT_EQ(Molt({"build", kFixtures + "/dup"}, &out), 1);
  EXPECT_NE(out.find("plugin names must be unique"), std::string::npos) << out;
  fs::create_directories(dir_ + "/fake");
  std::ofstream(dir_ + "/fake/notes.so") << "not a library";
  EXPECT_EQ(Molt({"build", dir_ + "/fake"}, &out), 1);
  EXPECT_NE(out.find("cannot build \"" + dir_ + "/fake\":\n  "), std::string::npos) << out;
  EXPECT_NE(out.find("notes.so"), std::string::npos) << out;
  // A set the spec gate fails (an unguarded channel; a plugin's own failing test) is not built.
  EXPECT_EQ(Molt({"build", kFixtures + "/unsafe", "--out", dir_ + "/u.molt"}, &out), 1);
  EXPECT_NE(out.find("does not pass moltd --self-test (its own tests, the security audit, the "
                     "fuzz gate), so it is not built"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(dir_ + "/u.molt"));
  EXPECT_EQ(Molt({"build", kFixtures + "/gen/fail_self_test", "--out", dir_ + "/t.molt"}, &out), 1);
  EXPECT_NE(out.find(": \"totals are never negative\": the total went below zero"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(dir_ + "/t.molt"));
}

TEST_F(MoltCliTest, KeysInitWritesAPrivateKeyOnlyItsOwnerReadsAndNeverOverwritesOne) {
  std::string out;
  ASSERT_EQ(Molt({"keys", "init", "--dir", dir_ + "/keys", "--json"}, &out), 0) << out;
  const json::value k = json::parse(out);
  EXPECT_EQ(k.at("file").as_string(), dir_ + "/keys/main.key");
  EXPECT_EQ(k.at("public_key").as_string().size(), 44u);  // base64 of 32 bytes
  EXPECT_EQ(k.at("fingerprint").as_string().size(), 8u);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/keys/main.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Slurp(dir_ + "/keys/main.key").find(std::string(k.at("public_key").as_string())),
            std::string::npos)
      << "the file holds the private key only";
  EXPECT_EQ(Molt({"keys", "init", "--dir", dir_ + "/keys"}, &out), 1);
  EXPECT_NE(out.find("a key is never overwritten"), std::string::npos) << out;
  ASSERT_EQ(Molt({"keys", "init", "--fallback", "--dir", dir_ + "/keys"}, &out), 0) << out;
  EXPECT_NE(out.find("fingerprint "), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir_ + "/keys/fallback.key"));
  EXPECT_EQ(Molt({"keys", "spin"}, &out), 2);
}

// molt servers (docs/fleet.md): a server alone (profiles in SQLite) is a fleet of one, with the
// id it made and kept; servers on one PostgreSQL list each other from their heartbeats, and one
// killed is shown lost, not dropped.
TEST_F(MoltCliTest, ServersListsTheFleetFromItsHeartbeats) {
  StartMoltd(kPlugins);
  const std::string data = dir_ + "/data";
  std::string out;
  ASSERT_EQ(Molt({"servers", "--server", server_, "--data", data, "--json"}, &out), 0) << out;
  json::value alone = json::parse(out);
  ASSERT_EQ(alone.as_array().size(), 1u) << out;
  std::string kept = Slurp(data + "/server.id");
  kept.erase(kept.find('\n'));
  EXPECT_EQ(alone.at(0).at("id").as_string(), kept) << "the id made at the first start";
  EXPECT_EQ(alone.at(0).at("state").as_string(), "live");
  EXPECT_EQ(alone.at(0).at("branch").as_string(), "prod");
  EXPECT_EQ(alone.at(0).at("sessions").as_int64(), 0);
  for (const char* field : {"build", "applied_seq", "last_seen_ms", "health", "tps"}) {
    EXPECT_TRUE(alone.at(0).as_object().contains(field)) << field;
  }
  ASSERT_EQ(Molt({"servers", "--server", server_, "--data", data}, &out), 0) << out;
  EXPECT_NE(out.find("ID"), std::string::npos);
  EXPECT_NE(out.find(kept + "  prod"), std::string::npos) << out;
  EXPECT_NE(out.find("1 servers"), std::string::npos) << out;
  moltd_->Signal(SIGTERM);
  ASSERT_EQ(moltd_->Wait(), 0) << moltd_->output();
  moltd_.reset();

  molt::test::PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  const std::string url = pg.NewDatabase();
  std::ofstream(dir_ + "/fleet.json") << R"({"server": {"heartbeat_seconds": 0.2}})";
  std::vector<std::unique_ptr<Process>> fleet;
  std::vector<std::string> admin;
  for (const char* id : {"eu-1", "eu-2"}) {
    fleet.push_back(std::make_unique<Process>(std::vector<std::string>{
        kMoltd, "-p", kPlugins, "-d", dir_ + "/" + id, "--port", "0", "--admin", "127.0.0.1:0",
        "--database", url, "--server-id", id, "-c", dir_ + "/fleet.json"}));
  }
  for (auto& p : fleet) {
    ASSERT_TRUE(p->WaitFor("SIGTERM or SIGINT closes")) << p->output();
    const std::string& o = p->output();
    const std::string at = "admin endpoint on http://127.0.0.1:";
    admin.push_back("http://127.0.0.1:" +
                    std::to_string(std::stoi(o.substr(o.find(at) + at.size()))));
  }
  const std::string data1 = dir_ + "/eu-1";
  auto list = [&] {
    EXPECT_EQ(Molt({"servers", "--server", admin[0], "--data", data1, "--json"}, &out), 0) << out;
    return json::parse(out);
  };
  json::value both = list();
  ASSERT_EQ(both.as_array().size(), 2u) << out;
  EXPECT_EQ(both.at(0).at("id").as_string(), "eu-1");
  EXPECT_EQ(both.at(1).at("id").as_string(), "eu-2");
  EXPECT_EQ(both.at(1).at("state").as_string(), "live");
  EXPECT_FALSE(both.at(1).at("build").as_string().empty()) << "the build it serves";
  fleet[1]->Signal(SIGKILL);
  fleet[1]->Wait();
  std::string state;
  for (int i = 0; i < 50 && state != "lost"; ++i) {  // three heartbeats of 0.2 s, and a margin
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    json::value now = list();
    state = now.as_array().size() == 2 ? std::string(now.at(1).at("state").as_string()) : "";
  }
  EXPECT_EQ(state, "lost") << "a server that stops heartbeating is shown lost";
  ASSERT_EQ(
      Molt({"servers", "--server", admin[0], "--data", data1, "--branch", "dev", "--json"}, &out),
      0);
  EXPECT_EQ(json::parse(out).as_array().size(), 0u) << out;
  fleet[0]->Signal(SIGTERM);
  EXPECT_EQ(fleet[0]->Wait(), 0) << fleet[0]->output();
}

TEST_F(MoltCliTest, TheServerVerbsDriveARealMoltd) {
  StartMoltd(kPlugins);
  const std::string data = dir_ + "/data";
  std::string out;
  ASSERT_EQ(Molt({"status", "--server", server_, "--data", data}, &out), 0) << out;
  EXPECT_NE(out.find("  generation  "), std::string::npos) << out;
  EXPECT_NE(out.find("(" + std::to_string(molt::test::kBundledPlugins) + " plugins)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  health      ok"), std::string::npos) << out;
  ASSERT_EQ(Molt({"status", "--server", server_, "--data", data, "--json"}, &out), 0) << out;
  EXPECT_EQ(json::parse(out).at("sessions").as_int64(), 0);
  ASSERT_EQ(Molt({"sessions", "--server", server_, "--data", data}, &out), 0) << out;
  EXPECT_NE(out.find("ID  USER  ADDRESS  VIA  CONNECTED  RTT  LINK"), std::string::npos) << out;
  EXPECT_NE(out.find("0 sessions"), std::string::npos) << out;
  EXPECT_EQ(Molt({"kick", "99", "--server", server_, "--data", data}, &out), 1);
  EXPECT_NE(out.find("moltd answered 404"), std::string::npos) << out;
  ASSERT_EQ(Molt({"logs", "--lines", "3", "--server", server_, "--data", data}, &out), 0) << out;
  EXPECT_NE(out.find("[molt]"), std::string::npos) << out;
  // The token from the environment; reload prints the report and exits 0 when it swapped.
  ::setenv("MOLT_TOKEN", Slurp(data + "/admin.token").substr(0, 64).c_str(), 1);
  ASSERT_EQ(Molt({"reload", "--server", server_}, &out), 0) << out;
  EXPECT_NE(out.find("swapped: "), std::string::npos) << out;
  EXPECT_NE(out.find("#2 serves (was "), std::string::npos) << out;
  ASSERT_EQ(Molt({"bundle", "--server", server_, "--json"}, &out), 0) << out;
  EXPECT_TRUE(fs::exists(std::string(json::parse(out).at("path").as_string())));
  // A wrong token, no token, no server: exit 3, each saying what to do.
  ::setenv("MOLT_TOKEN", "wrong", 1);
  EXPECT_EQ(Molt({"status", "--server", server_}, &out), 3);
  EXPECT_NE(out.find("refused the admin token"), std::string::npos) << out;
  ::unsetenv("MOLT_TOKEN");
  EXPECT_EQ(Molt({"status", "--server", server_, "--data", dir_ + "/nowhere"}, &out), 3);
  EXPECT_NE(out.find("cannot be read"), std::string::npos) << out;
  moltd_->Signal(SIGTERM);
  EXPECT_EQ(moltd_->Wait(), 0) << moltd_->output();
  EXPECT_EQ(Molt({"status", "--server", server_, "--data", data}, &out), 3);
  EXPECT_NE(out.find("cannot reach moltd at " + server_), std::string::npos) << out;
}

TEST_F(MoltCliTest, ConfigSetsALiveValueTheServerChecksStoresAndKeepsAcrossARestart) {
  StartMoltd(kPlugins);
  const std::string data = dir_ + "/data";
  const std::vector<std::string> at = {"--server", server_, "--data", data};
  auto molt = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.end(), at.begin(), at.end());
    return Molt(std::move(args), out);
  };
  std::string out;
  ASSERT_EQ(molt({"config", "get"}, &out), 0) << out;
  EXPECT_NE(out.find("counter.multiplier  1      1"), std::string::npos) << out;
  // Mistakes exit 2 before any call; refusals exit 1 with the server's reason.
  EXPECT_EQ(Molt({"config", "set", "counter.multiplier"}, &out), 2);
  EXPECT_NE(out.find("molt config set KEY JSON"), std::string::npos) << out;
  EXPECT_EQ(Molt({"config", "set", "counter.multiplier", "festival"}, &out), 2);
  EXPECT_NE(out.find("a string needs its quotes"), std::string::npos) << out;
  EXPECT_EQ(Molt({"config", "spin"}, &out), 2);
  EXPECT_NE(out.find("unknown action \"spin\": get, set, unset or history"), std::string::npos)
      << out;
  EXPECT_EQ(molt({"config", "set", "counter.multiplier", "\"two\""}, &out), 1);
  EXPECT_NE(out.find("moltd answered 400: live value counter.multiplier: \"two\" is a string, "
                     "but the default 1 is a whole number"),
            std::string::npos)
      << out;
  EXPECT_EQ(molt({"config", "set", "counter.multiplier", "500"}, &out), 1);
  EXPECT_NE(out.find("moltd answered 422: live value counter.multiplier: the plugin refused 500: "
                     "the multiplier is a whole number from 1 to 100"),
            std::string::npos)
      << out;
  EXPECT_EQ(molt({"config", "set", "nobody.knows", "1"}, &out), 1);
  EXPECT_NE(out.find("moltd answered 404: no running plugin declares the live value"),
            std::string::npos)
      << out;
  ASSERT_EQ(molt({"config", "set", "counter.multiplier", "2", "--by", "ada"}, &out), 0) << out;
  EXPECT_EQ(out, "counter.multiplier set: serving 2\n");
  ASSERT_EQ(molt({"config", "set", "counter.multiplier", "2", "--by", "ada"}, &out), 0) << out;
  EXPECT_EQ(out, "counter.multiplier set: serving 2 (unchanged: it served that already)\n");
  // A restart reads it at boot.
  moltd_->Signal(SIGTERM);
  ASSERT_EQ(moltd_->Wait(), 0) << moltd_->output();
  StartMoltd(kPlugins);
  const std::vector<std::string> again = {"--server", server_, "--data", data};
  ASSERT_EQ(Molt({"config", "get", "counter.multiplier", "--json", again[0], again[1], again[2],
                  again[3]},
                 &out),
            0)
      << out;
  const json::value v = json::parse(out);
  EXPECT_EQ(v.at("value").as_int64(), 2);
  EXPECT_EQ(v.at("default").as_int64(), 1);
  EXPECT_EQ(v.at("override").at("by").as_string(), "ada");
  ASSERT_EQ(Molt({"config", "unset", "counter.multiplier", "--by", "bo", again[0], again[1],
                  again[2], again[3]},
                 &out),
            0)
      << out;
  EXPECT_EQ(out, "counter.multiplier unset: serving 1\n");
  ASSERT_EQ(Molt({"config", "history", again[0], again[1], again[2], again[3]}, &out), 0) << out;
  EXPECT_NE(out.find("counter.multiplier  unset   -      bo"), std::string::npos) << out;
  EXPECT_NE(out.find("counter.multiplier  set     2      ada"), std::string::npos) << out;
  EXPECT_TRUE(moltd_->WaitFor("live value counter.multiplier unset by bo; now 1"))
      << moltd_->output();
}

TEST_F(MoltCliTest, ReloadExitsOneWhenTheSwapFails) {
  const std::string plugins = dir_ + "/plugins";
  fs::create_directories(plugins);
  fs::copy_file(kFixtures + "/gen/v1/fx_gen_v1.so", plugins + "/fx_gen.so");
  StartMoltd(plugins);
  fs::copy_file(kFixtures + "/gen/fail_start/fx_gen_fail_start.so", plugins + "/fx_gen.so.tmp");
  fs::rename(plugins + "/fx_gen.so.tmp", plugins + "/fx_gen.so");
  std::string out;
  EXPECT_EQ(Molt({"reload", "--server", server_, "--data", dir_ + "/data"}, &out), 1) << out;
  EXPECT_NE(out.find("failed at start: service \"fx_gen\": start failed: start refused"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("(the previous build was restored)"), std::string::npos) << out;
}

}  // namespace

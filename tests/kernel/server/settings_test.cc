// SPDX-License-Identifier: Apache-2.0
// ResolveSettings: flags over the configuration file over the defaults, and one line naming the
// key, the value and what is accepted for every mistake.
#include "kernel/src/server/settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace molt::kernel {
namespace {

class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.plugin_dir = "plugins";
    file_ = ::testing::TempDir() + "molt_settings_" + std::to_string(::getpid()) + ".json";
  }
  void TearDown() override { std::filesystem::remove(file_); }
  // Resolves with the configuration file holding `json` (none when empty).
  Status Resolve(const std::string& json = "") {
    if (!json.empty()) {
      std::ofstream(file_) << json;
      options_.config_file = file_;
    }
    config_ = Config();
    settings_ = Settings();
    return ResolveSettings(options_, config_, &settings_);
  }

  ServerOptions options_;
  std::string file_;
  Config config_;
  Settings settings_;
};

TEST_F(SettingsTest, DefaultsAreTheDocumentedOnes) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.tick_rate, 60);
  EXPECT_EQ(settings_.close_budget, 25);
  EXPECT_EQ(settings_.plugin_dir, "plugins");
  EXPECT_EQ(settings_.data_dir, "data");
  EXPECT_EQ(settings_.log_level, LogLevel::kInfo);
  EXPECT_EQ(settings_.log_format, ConsoleFormat::kText);
  EXPECT_EQ(settings_.net.bind_address, "127.0.0.1");
  EXPECT_EQ(settings_.net.port, 7777);
  EXPECT_EQ(settings_.net.auth, net::AuthMode::kDev);
  EXPECT_EQ(settings_.net.tick_rate, 60);  // the transport budgets are per server tick
  EXPECT_FALSE(settings_.scheduler.budget.has_value());
  EXPECT_EQ(settings_.profiles_db, "data/profiles.db");
  EXPECT_FALSE(settings_.profiles_sync_full);
  EXPECT_EQ(settings_.profiles_drain, 27);
  // What plugins read with config_get.
  EXPECT_EQ(std::get<double>(*config_.Get("server.tick_rate")), 60);
  EXPECT_EQ(std::get<std::string>(*config_.Get("server.data_dir")), "data");
}

// Where profiles live: --database over store.url over the older profiles.database, over the
// data directory's file.
TEST_F(SettingsTest, TheDatabaseIsTheFlagsThenStoreUrlThenProfilesDatabase) {
  ASSERT_TRUE(Resolve(R"({"profiles": {"database": "/srv/old.db"}})").ok());
  EXPECT_EQ(settings_.profiles_db, "/srv/old.db");
  ASSERT_TRUE(Resolve(R"({"profiles": {"database": "/srv/old.db"},
                          "store": {"url": "postgresql://molt@db/molt"}})")
                  .ok());
  EXPECT_EQ(settings_.profiles_db, "postgresql://molt@db/molt");
  options_.database = "host=/run/postgresql dbname=molt";
  ASSERT_TRUE(Resolve(R"({"store": {"url": "postgresql://molt@db/molt"}})").ok());
  EXPECT_EQ(settings_.profiles_db, "host=/run/postgresql dbname=molt");
  options_.database = "";
  EXPECT_NE(Resolve().message().find("the database is empty: give --database (store.url)"),
            std::string::npos);
  options_.database.reset();
  EXPECT_EQ(Resolve(R"({"store": {"uri": "x"}})").message(),
            "config file \"" + file_ + "\": unknown key \"store.uri\" (known: store.url)");
}

TEST_F(SettingsTest, AServerIdIsCheckedAndItsHeartbeatHasItsRange) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.server_id, "") << "made and kept by the server as it starts";
  EXPECT_EQ(settings_.heartbeat_seconds, 2);
  ASSERT_TRUE(Resolve(R"({"server": {"id": "eu-1", "heartbeat_seconds": 0.5}})").ok());
  EXPECT_EQ(settings_.server_id, "eu-1");
  EXPECT_EQ(settings_.heartbeat_seconds, 0.5);
  options_.server_id = "eu 2";
  EXPECT_EQ(Resolve().message(), "server id \"eu 2\" is not 1 to 64 of [A-Za-z0-9._-]");
  options_.server_id.reset();
  EXPECT_EQ(Resolve(R"({"server": {"heartbeat_seconds": 0}})").message(),
            "configuration key \"server.heartbeat_seconds\" is 0: use 0.05 to 60");
  EXPECT_TRUE(ValidServerId("a.b_c-9"));
  EXPECT_FALSE(ValidServerId(std::string(65, 'a')));
  EXPECT_FALSE(ValidServerId(""));
}

TEST_F(SettingsTest, FlagsWinOverTheFileWhichWinsOverDefaults) {
  ASSERT_TRUE(Resolve(R"({"server": {"tick_rate": 30, "log_level": "debug"},
                          "net": {"port": 9000, "bytes_per_tick": 4096, "auth": "production"},
                          "scheduler": {"budget_ms": 2, "profile_tasks": false}})")
                  .ok());
  EXPECT_EQ(settings_.tick_rate, 30);
  EXPECT_EQ(settings_.log_level, LogLevel::kDebug);
  EXPECT_EQ(settings_.net.port, 9000);
  EXPECT_EQ(settings_.net.bytes_per_tick, 4096u);
  EXPECT_EQ(settings_.net.auth, net::AuthMode::kProduction);
  EXPECT_EQ(settings_.scheduler.budget, std::chrono::milliseconds(2));
  EXPECT_FALSE(settings_.scheduler.profile_tasks);
  options_.tick_rate = 120;
  options_.port = 0;
  options_.log_format = "json";
  ASSERT_TRUE(Resolve(R"({"server": {"tick_rate": 30}, "net": {"port": 9000}})").ok());
  EXPECT_EQ(settings_.tick_rate, 120);
  EXPECT_EQ(settings_.net.port, 0);
  EXPECT_EQ(settings_.log_format, ConsoleFormat::kJson);
}

// docs/network.md documents the key; a server that refused it as unknown could not turn resume
// off or lengthen the window.
TEST_F(SettingsTest, TheResumeWindowIsAKeyWithItsRange) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.net.resume_window_seconds, 30);
  Status s = Resolve(R"({"net": {"resume_window_seconds": 0}})");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(settings_.net.resume_window_seconds, 0);
  ASSERT_TRUE(Resolve(R"({"net": {"resume_window_seconds": 90}})").ok());
  EXPECT_EQ(settings_.net.resume_window_seconds, 90);
  EXPECT_EQ(Resolve(R"({"net": {"resume_window_seconds": -1}})").message(),
            "configuration key \"net.resume_window_seconds\" = -1 is out of range: use 0..86400");
}

TEST_F(SettingsTest, AnalyticsTakeTheirKeysAndRefuseWhatIsNotOne) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.analytics.flush_after, std::chrono::seconds(10));
  EXPECT_EQ(settings_.analytics.max_per_minute, 120u);
  EXPECT_TRUE(settings_.analytics.sample.empty());
  Status s = Resolve(R"({"analytics": {"flush_seconds": 2, "max_per_minute": 0, "seed": 7,
                                       "keep_files": 3, "sample": {"tick": 0.1, "buy": 1}}})");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(settings_.analytics.flush_after, std::chrono::seconds(2));
  EXPECT_EQ(settings_.analytics.max_per_minute, 0u);
  EXPECT_EQ(settings_.analytics.seed, 7u);
  EXPECT_EQ(settings_.analytics.keep_files, 3u);
  EXPECT_EQ(settings_.analytics.sample.at("tick"), 0.1);
  EXPECT_EQ(settings_.analytics.sample.at("buy"), 1);
  EXPECT_EQ(Resolve(R"({"analytics": {"sample": {"tick": 2}}})").message(),
            "configuration key \"analytics.sample.tick\" is 2: use 0 to 1");
  EXPECT_EQ(Resolve(R"({"analytics": {"flush_second": 2}})").message(),
            "config file \"" + file_ +
                "\": unknown key \"analytics.flush_second\" (known: analytics.flush_seconds, "
                "analytics.http_backoff_seconds, analytics.http_retries, "
                "analytics.http_timeout_seconds, analytics.http_url, analytics.keep_files, "
                "analytics.max_per_minute, analytics.rotate_bytes, analytics.seed, "
                "analytics.sample.<event>)");
  // The HTTP sink: off by default, its URL checked before anything starts.
  ASSERT_TRUE(Resolve(R"({"analytics": {}})").ok());
  EXPECT_FALSE(settings_.analytics.http.has_value());
  EXPECT_EQ(settings_.analytics.http_retries, 5u);
  s = Resolve(R"({"analytics": {"http_url": "http://127.0.0.1:9000/events", "http_retries": 2,
                                "http_backoff_seconds": 0.5, "http_timeout_seconds": 3}})");
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(settings_.analytics.http.has_value());
  EXPECT_EQ(settings_.analytics.http->port, "9000");
  EXPECT_EQ(settings_.analytics.http->target, "/events");
  EXPECT_EQ(settings_.analytics.http_retries, 2u);
  EXPECT_EQ(settings_.analytics.http_backoff, std::chrono::milliseconds(500));
  EXPECT_EQ(settings_.analytics.http_timeout, std::chrono::seconds(3));
  EXPECT_EQ(Resolve(R"({"analytics": {"http_url": "https://collector/"}})").message(),
            "analytics.http_url \"https://collector/\": moltd posts plain http only; run a TLS "
            "proxy beside it (nginx, Vector) and name its http:// address");
  EXPECT_EQ(Resolve(R"({"analytics": {"http_url": 9000}})").message(),
            "configuration key \"analytics.http_url\" must be a string "
            "(http://HOST[:PORT][/PATH])");
  EXPECT_EQ(Resolve(R"({"analytics": {"http_retries": 1.5}})").message(),
            "configuration key \"analytics.http_retries\" is 1.5: use a whole number");
}

TEST_F(SettingsTest, WorkersTakeTheirKeysAndRefuseWhatIsNotOne) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.workers.threads, 0u);  // the cores but one, decided by the pool
  EXPECT_EQ(settings_.workers.timeout, std::chrono::seconds(10));
  EXPECT_EQ(settings_.workers.queue_max, 10000u);
  EXPECT_EQ(settings_.workers.detached_max, 256u);
  Status s = Resolve(R"({"workers": {"threads": 3, "timeout_seconds": 2.5, "queue_max": 50,
                                     "detached_max": 4}})");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(settings_.workers.threads, 3u);
  EXPECT_EQ(settings_.workers.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(settings_.workers.queue_max, 50u);
  EXPECT_EQ(settings_.workers.detached_max, 4u);
  EXPECT_EQ(Resolve(R"({"workers": {"threads": 0}})").message(),
            "configuration key \"workers.threads\" is 0: use 1 to 256 (a whole number)");
  EXPECT_EQ(Resolve(R"({"workers": {"threads": 1.5}})").message(),
            "configuration key \"workers.threads\" is 1.5: use 1 to 256 (a whole number)");
  EXPECT_EQ(Resolve(R"({"workers": {"timeout_seconds": 0}})").message(),
            "configuration key \"workers.timeout_seconds\" is 0: use 0.001 to 86400");
  EXPECT_EQ(Resolve(R"({"workers": {"thread": 2}})").message(),
            "config file \"" + file_ +
                "\": unknown key \"workers.thread\" (known: workers.detached_max, "
                "workers.queue_max, workers.threads, workers.timeout_seconds)");
  const unsigned cores = std::thread::hardware_concurrency();
  EXPECT_EQ(workers::WorkerThreads(0), cores > 1 ? cores - 1 : 1u);
  EXPECT_EQ(workers::WorkerThreads(5), 5u);
}

TEST_F(SettingsTest, EveryMistakeIsNamedWithWhatIsAccepted) {
  auto error = [&](const std::string& json) { return Resolve(json).message(); };
  EXPECT_EQ(error(R"({"server": {"tick_rat": 30}})"),
            "config file \"" + file_ +
                "\": unknown key \"server.tick_rat\" (known: server.callback_deadline_seconds, "
                "server.close_budget_seconds, server.data_dir, server.diagnostics_seconds, "
                "server.error_window_seconds, "
                "server.health_errors, "
                "server.health_window_seconds, server.heartbeat_seconds, server.id, "
                "server.log_format, server.log_level, server.plugin_dir, server.tick_rate)");
  EXPECT_EQ(error(R"({"server": {"health_errors": 0}})"),
            "configuration key \"server.health_errors\" is 0: use 1 to 100");
  // The health window's bounds are a manifest's (loader/build.h): one set of bounds.
  EXPECT_EQ(error(R"({"server": {"health_window_seconds": 0.2}})"),
            "configuration key \"server.health_window_seconds\" is 0.2: use 5 to 300");
  EXPECT_EQ(error(R"({"server": {"health_window_seconds": 301}})"),
            "configuration key \"server.health_window_seconds\" is 301: use 5 to 300");
  EXPECT_TRUE(Resolve(R"({"server": {"health_window_seconds": 5}})").ok());
  EXPECT_EQ(
      error(R"({"sever": {}, "server": {"tick_rate": 30}})").find("unknown section \"sever\""),
      std::string::npos)
      << "an empty section has no keys";
  EXPECT_EQ(error(R"({"sever": {"x": 1}})"),
            "config file \"" + file_ +
                "\": unknown section \"sever\" (known: server, "
                "scheduler, net, profiles, store, admin, deploy, analytics, workers, plugins)");
  EXPECT_EQ(error(R"({"profiles": {"datbase": "x.db"}})"),
            "config file \"" + file_ +
                "\": unknown key \"profiles.datbase\" (known: profiles.database, "
                "profiles.drain_seconds, profiles.synchronous)");
  EXPECT_EQ(error(R"({"profiles": {"synchronous": "off"}})"),
            "profiles.synchronous \"off\" is unknown: use normal (WAL's default: a power loss may "
            "undo the last saves) or full (every save survives it)");
  EXPECT_EQ(error(R"({"profiles": {"drain_seconds": 0}})"),
            "configuration key \"profiles.drain_seconds\" is 0: use 1 to 3600");
  EXPECT_EQ(error(R"({"net": {"bytes_per_tick": 10}})"),
            "configuration key \"net.bytes_per_tick\" = 10 is out of range: use 64..1073741824");
  EXPECT_EQ(error(R"({"net": {"port": 70000}})"),
            "port 70000 is out of range: use 0..65535 (0 picks a free port)");
  EXPECT_EQ(error(R"({"net": {"auth": "maybe"}})"),
            "net.auth \"maybe\" is unknown: use dev or production");
  EXPECT_EQ(error(R"({"server": {"tick_rate": 0}})"),
            "tick rate 0 Hz is out of range: use a value in (0, 10000]");
  EXPECT_EQ(error(R"({"server": {"log_level": "loud"}})"),
            "log level \"loud\" is unknown: use debug, info, warn, error or off");
  EXPECT_EQ(error(R"({"server": {"log_format": "xml"}})"),
            "log format \"xml\" is unknown: use text or json");
  EXPECT_EQ(error(R"({"scheduler": {"budget_ms": -1}})"),
            "configuration key \"scheduler.budget_ms\" must be a number of milliseconds above 0");
  EXPECT_EQ(error(R"({"scheduler": {"profile_tasks": 1}})"),
            "configuration key \"scheduler.profile_tasks\" must be true or false");
  EXPECT_EQ(error(R"({"net": {"max_sessions": "many"}})"),
            "configuration key \"net.max_sessions\" must be a number");
  options_.plugin_dir.clear();
  options_.config_file.clear();
  EXPECT_EQ(Resolve().message(), "no plugin directory: pass --plugins DIR");
}

// "deploy": the prod branch has prod rules unless the file says otherwise; --branch wins.
TEST_F(SettingsTest, DeploysRunTheProdBranchWithSignaturesUnlessToldOtherwise) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.branch, "prod");
  EXPECT_TRUE(settings_.require_signatures);
  EXPECT_EQ(settings_.deploy_keys, "");
  EXPECT_EQ(settings_.max_build_mb, 1024);
  ASSERT_TRUE(Resolve(R"({"deploy": {"branch": "dev", "keys": "/etc/molt/keys.json",
                           "max_build_mb": 64}})")
                  .ok());
  EXPECT_EQ(settings_.branch, "dev");
  EXPECT_FALSE(settings_.require_signatures);  // a dev branch is dev-channel
  EXPECT_EQ(settings_.deploy_keys, "/etc/molt/keys.json");
  EXPECT_EQ(settings_.max_build_mb, 64);
  options_.branch = "prod";
  ASSERT_TRUE(Resolve(R"({"deploy": {"branch": "dev", "require_signatures": false}})").ok());
  EXPECT_EQ(settings_.branch, "prod");
  EXPECT_FALSE(settings_.require_signatures);
  EXPECT_EQ(Resolve(R"({"deploy": {"max_build_mb": 0}})").message(),
            "configuration key \"deploy.max_build_mb\" is 0: use 1 to 1024");
  EXPECT_NE(Resolve(R"({"deploy": {"require_signatures": "yes"}})")
                .message()
                .find("\"deploy.require_signatures\" must be true or false"),
            std::string::npos);
  EXPECT_NE(Resolve(R"({"deploy": {"key": "x"}})")
                .message()
                .find("unknown key \"deploy.key\" (deploy takes branch, keys, require_signatures, "
                      "max_build_mb)"),
            std::string::npos);
}

TEST_F(SettingsTest, TheAdminEndpointDefaultsToLoopbackAndTakesAddressPortOrOff) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_TRUE(settings_.admin_enabled);
  EXPECT_EQ(settings_.admin_address, "127.0.0.1");
  EXPECT_EQ(settings_.admin_port, 7778);
  EXPECT_EQ(settings_.admin_token, "");
  options_.admin = "127.0.0.2:0";
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.admin_address, "127.0.0.2");
  EXPECT_EQ(settings_.admin_port, 0);
  options_.admin = "[::1]:9000";
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.admin_address, "::1");
  EXPECT_EQ(settings_.admin_port, 9000);
  options_.admin = "off";
  ASSERT_TRUE(Resolve().ok());
  EXPECT_FALSE(settings_.admin_enabled);
  options_.admin.reset();
  ASSERT_TRUE(Resolve(R"({"admin": {"address": "localhost:7000",
                                     "token": "0123456789abcdef0123"}})")
                  .ok());
  EXPECT_EQ(settings_.admin_address, "127.0.0.1");
  EXPECT_EQ(settings_.admin_port, 7000);
  EXPECT_EQ(settings_.admin_token, "0123456789abcdef0123");
}

TEST_F(SettingsTest, TheDiagnosticsWindowIsFiveSecondsOrOneInDevelopment) {
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.diagnostics_seconds, 5);
  options_.watch = true;
  ASSERT_TRUE(Resolve().ok());
  EXPECT_EQ(settings_.diagnostics_seconds, 1);
  ASSERT_TRUE(Resolve(R"({"server": {"diagnostics_seconds": 0.5}})").ok());
  EXPECT_EQ(settings_.diagnostics_seconds, 0.5);
  EXPECT_EQ(Resolve(R"({"server": {"diagnostics_seconds": 0}})").message(),
            "configuration key \"server.diagnostics_seconds\" is 0: use 0.1 to 3600");
}

TEST_F(SettingsTest, AdminMistakesAreNamed) {
  options_.admin = "7778";
  EXPECT_EQ(Resolve().message(),
            "admin endpoint \"7778\" is not ADDRESS:PORT (e.g. 127.0.0.1:7778) or off");
  options_.admin = "127.0.0.1:99999";
  EXPECT_EQ(Resolve().message(),
            "admin endpoint \"127.0.0.1:99999\" is not ADDRESS:PORT (e.g. 127.0.0.1:7778) or off");
  options_.admin.reset();
  EXPECT_EQ(Resolve(R"({"admin": {"token": "short"}})").message(),
            "admin.token is too short to guard the admin endpoint: use 16 characters or more");
  EXPECT_NE(Resolve(R"({"admin": {"adress": "127.0.0.1:1"}})")
                .message()
                .find("unknown key \"admin.adress\" (known: admin.address, "
                      "admin.allow_insecure_remote, admin.token)"),
            std::string::npos);
}

TEST_F(SettingsTest, AnAdminEndpointBeyondLoopbackIsRefusedWithoutTheOverride) {
  options_.admin = "0.0.0.0:7778";
  const Status s = Resolve();
  EXPECT_EQ(s.message(),
            "admin endpoint 0.0.0.0:7778 is beyond loopback and speaks plain HTTP, so its token "
            "would cross the network in clear: keep it on 127.0.0.1 and reach it through an SSH "
            "tunnel or a TLS proxy, or set admin.allow_insecure_remote to true in the "
            "configuration if that network is private");
  ASSERT_TRUE(Resolve(R"({"admin": {"allow_insecure_remote": true}})").ok());
  EXPECT_EQ(settings_.admin_address, "0.0.0.0");
  EXPECT_EQ(Resolve(R"({"admin": {"allow_insecure_remote": "yes"}})").message(),
            "configuration key \"admin.allow_insecure_remote\" must be true or false");
}

// The test kit's configuration text is checked as a file is: a typo is named, with its source.
TEST(MergeConfigJsonTest, RefusesAnUnknownKeyNamingItsSource) {
  Config config;
  Status s = MergeConfigJson(config, R"({"net": {"max_frame_byte": 1}})", "the kit's config_json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the kit's config_json: unknown key \"net.max_frame_byte\""),
            std::string::npos)
      << s.message();
  Config good;
  ASSERT_TRUE(MergeConfigJson(good, R"({"net": {"max_frame_bytes": 4096}})", "x").ok());
  EXPECT_NE(good.Get("net.max_frame_bytes"), nullptr);
  EXPECT_FALSE(MergeConfigJson(good, "{not json", "x").ok());
}

}  // namespace
}  // namespace molt::kernel

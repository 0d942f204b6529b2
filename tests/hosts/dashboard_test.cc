// SPDX-License-Identifier: Apache-2.0
// The dashboard in a real browser (docs/operations.md, "The dashboard"): headless Chromium,
// driven over the DevTools protocol, opens the page a real moltd serves while molt-bot plays
// against it. The page shows the sessions and a channel's counters rising, the wire inspector
// shows the messages with their verdicts, and a kick from the page ends a session. A wrong token
// gets the token form, and typing the right one opens the dashboard. On a development server the
// deploy panel lists the branches and deployments, and rolls a branch back from the page.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel/src/wire/wire.h"
#include "molt_wire_generated.h"
#include "tests/support/child_process.h"
#include "tests/support/devtools_client.h"
#include "tests/support/http_client.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using molt::test::Browser;
using molt::test::HttpCall;
using molt::test::Process;

std::uint16_t PortAfter(const std::string& out, const std::string& label) {
  const std::size_t at = out.find(label);
  return at == std::string::npos
             ? 0
             : static_cast<std::uint16_t>(std::stoi(out.substr(at + label.size())));
}

std::int64_t Number(const json::value& v) {
  return v.is_number() ? v.to_number<std::int64_t>() : -1;
}

// Writes the screenshot where MOLT_DASHBOARD_SCREENSHOT says (docs/dashboard.png is refreshed
// this way: see docs/operations.md).
void KeepScreenshot(const std::string& base64) {
  const char* path = std::getenv("MOLT_DASHBOARD_SCREENSHOT");
  if (path == nullptr || base64.empty()) {
    return;
  }
  std::string png(base64.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(png.data()),
                                reinterpret_cast<const unsigned char*>(base64.data()),
                                static_cast<int>(base64.size()));
  ASSERT_GT(n, 0);
  const std::size_t padding = base64.size() - base64.find_last_not_of('=') - 1;
  png.resize(static_cast<std::size_t>(n) - padding);
  std::ofstream(path, std::ios::binary) << png;
}

class DashboardTest : public ::testing::Test {
 protected:
  // The branch the moltd under test runs.
  virtual std::string Branch() const { return "prod"; }
  // Its configuration file's JSON ("": none).
  virtual std::string Config() const { return ""; }
  void SetUp() override {
    data_ = ::testing::TempDir() + "dashboard_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(data_);
    std::vector<std::string> args = {MOLTD_PATH, "-p",   MOLT_PLUGIN_DIR, "-d",          data_,
                                     "--port",   "0",    "--admin",       "127.0.0.1:0", "--branch",
                                     Branch(),   "--ws", "127.0.0.1:0"};
    if (!Config().empty()) {
      fs::create_directories(data_);
      std::ofstream(data_ + "/moltd.json") << Config();
      args.insert(args.end(), {"-c", data_ + "/moltd.json"});
    }
    moltd_ = std::make_unique<Process>(args);
    ASSERT_TRUE(moltd_->WaitFor("SIGTERM or SIGINT closes")) << moltd_->output();
    admin_ = PortAfter(moltd_->output(), "admin endpoint on http://127.0.0.1:");
    game_ = PortAfter(moltd_->output(), "listening on 127.0.0.1:");
    ws_ = PortAfter(moltd_->output(), "WebSocket clients on ws://127.0.0.1:");
    std::ifstream in(data_ + "/admin.token");
    std::getline(in, token_);
    ASSERT_FALSE(token_.empty());
  }
  std::string Url(const std::string& token) const {
    return "http://127.0.0.1:" + std::to_string(admin_) + "/#token=" + token;
  }

  std::string data_;
  std::unique_ptr<Process> moltd_;
  std::uint16_t admin_ = 0;
  std::uint16_t game_ = 0;
  std::uint16_t ws_ = 0;  // --ws
  std::string token_;
};

// The browser's own WebSocket joins moltd's --ws port with the same Hello frame a native client
// sends (built here, handed to the page as bytes), gets its Welcome, and the dashboard lists the
// session as a WebSocket one.
TEST_F(DashboardTest, ABrowsersWebSocketJoinsAndTheDashboardSaysHowItIsLinked) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<std::uint8_t> none;
  b.FinishSizePrefixed(molt::wire::CreateEnvelope(
      b, molt::wire::Body::Hello,
      molt::wire::CreateHelloDirect(b, molt::wire::kProtocolVersion, 0, "ada", &none, &none, &none)
          .Union()));
  std::string bytes;
  for (std::size_t i = 0; i < b.GetSize(); ++i) {
    bytes += (i == 0 ? "" : ",") + std::to_string(b.GetBufferPointer()[i]);
  }
  // A page of its own: the dashboard's policy lets it connect only to its own origin.
  Browser browser(MOLT_CHROMIUM, "about:blank", data_ + "/chromium-page");
  ASSERT_TRUE(browser.ok()) << browser.error();
  browser.Evaluate(
      "window.got = null; window.wsError = ''; const ws = new WebSocket('ws://127.0.0.1:" +
      std::to_string(ws_) +
      "/'); ws.binaryType = 'arraybuffer'; ws.onopen = () => ws.send(new Uint8Array([" + bytes +
      "])); ws.onerror = () => { window.wsError = 'error'; }; ws.onmessage = (e) => "
      "{ if (!window.got) window.got = Array.from(new Uint8Array(e.data)); }; "
      "window.moltWs = ws; true");
  ASSERT_TRUE(browser.WaitUntil("window.got !== null || window.wsError !== ''"))
      << moltd_->output();
  ASSERT_EQ(browser.Evaluate("window.wsError").as_string(), "") << moltd_->output();
  const boost::json::value got =
      boost::json::parse(browser.Evaluate("JSON.stringify(window.got)").as_string());
  ASSERT_TRUE(got.is_array()) << got;
  std::vector<std::uint8_t> frame;
  for (const boost::json::value& v : got.as_array()) {
    frame.push_back(static_cast<std::uint8_t>(v.as_int64()));
  }
  ASSERT_GT(frame.size(), 8u);
  flatbuffers::Verifier verifier(frame.data(), frame.size());
  ASSERT_TRUE(molt::wire::VerifySizePrefixedEnvelopeBuffer(verifier));
  EXPECT_EQ(molt::wire::GetSizePrefixedEnvelope(frame.data())->body_type(),
            molt::wire::Body::Welcome);
  Browser dashboard(MOLT_CHROMIUM, Url(token_), data_ + "/chromium");
  ASSERT_TRUE(dashboard.ok()) << dashboard.error();
  EXPECT_TRUE(dashboard.WaitUntil(
      "document.getElementById('sessions-rows').textContent.includes('WebSocket')"))
      << dashboard.Evaluate("document.body.innerText");
}

TEST_F(DashboardTest, ShowsLiveSessionsAndTrafficAndKicksASessionFromThePage) {
  Process bot({MOLT_BOT_PATH, "--port", std::to_string(game_), "--clients", "3", "--rate", "8",
               "--duration", "120", "--request", "counter.Get", "--intent", "counter.Add"});
  ASSERT_TRUE(bot.WaitFor("3/3 clients joined")) << bot.output();

  Browser browser(MOLT_CHROMIUM, Url(token_), data_ + "/chromium");
  ASSERT_TRUE(browser.ok()) << browser.error();
  ASSERT_TRUE(browser.WaitUntil("window.moltDashboard && moltDashboard.polls >= 2"))
      << browser.Evaluate("document.body.innerText");
  // The token left the address bar; the page runs on what this moltd serves.
  EXPECT_EQ(browser.Evaluate("location.hash").as_string(), "");
  EXPECT_EQ(browser.Evaluate("document.getElementById('live').textContent").as_string(), "live");
  EXPECT_EQ(browser.Evaluate("document.getElementById('version').textContent").as_string(),
            MOLT_VERSION);
  // The toolkit's figures and the live values the bundled plugins declare, with an override.
  EXPECT_NE(browser.Evaluate("document.getElementById('toolkit-figures').innerText")
                .as_string()
                .find("worker threads"),
            std::string::npos);
  const molt::test::HttpResult set =
      HttpCall(admin_, "POST", "/api/v1/config", token_,
               R"({"key":"counter.multiplier","value":3,"by":"dash"})");
  EXPECT_EQ(set.status, 200) << set.body;
  EXPECT_TRUE(browser.WaitUntil(
      "document.getElementById('live-rows').innerText.includes('counter.multiplier\t3\t1\tby "
      "dash')"))
      << browser.Evaluate("document.getElementById('live-rows').innerText");

  // The session count, and the counter.Add channel's accepted intents rising.
  EXPECT_TRUE(browser.WaitUntil("document.getElementById('sessions-count').textContent === '3'"))
      << browser.Evaluate("document.getElementById('sessions-count').textContent");
  const std::string accepted =
      "Number(document.querySelector('tr[data-channel=\"counter.Add\"] td.accepted')"
      ".textContent.replace(/,/g, ''))";
  const std::int64_t before = Number(browser.Evaluate(accepted));
  ASSERT_GE(before, 0) << browser.Evaluate("document.getElementById('channel-rows').innerText");
  EXPECT_TRUE(browser.WaitUntil(accepted + " > " + std::to_string(before)));

  // The wire inspector records while open: the intents with their verdicts, the responses.
  browser.Evaluate("document.getElementById('wire').open = true");
  const std::string inspector_shows =
      "[...document.querySelectorAll('#wire-rows tr')].some((r) => "
      "r.cells[3].textContent === 'counter.Add' && r.cells[6].textContent === 'accepted')";
  EXPECT_TRUE(browser.WaitUntil(inspector_shows))
      << browser.Evaluate("document.getElementById('wire-rows').innerText");
  EXPECT_TRUE(browser.WaitUntil(
      "[...document.querySelectorAll('#wire-rows tr')].some((r) => "
      "r.cells[2].textContent === 'response' && r.cells[3].textContent === 'counter.Get')"));
  // Pinning a row shows its payload's bytes in hex; the hook chains are timed meanwhile.
  browser.Evaluate("document.querySelector('#wire-rows tr').click()");
  EXPECT_TRUE(browser.WaitUntil(
      "/0000  [0-9a-f]{2} /.test(document.getElementById('wire-pinned').textContent)"))
      << browser.Evaluate("document.getElementById('wire-pinned').textContent");
  EXPECT_TRUE(browser.WaitUntil(
      "document.getElementById('hooks-timing').textContent.startsWith('chain cost timed')"));
  KeepScreenshot(browser.ScreenshotBase64());

  // Kick the first session from the page: one click arms the button, the second kicks.
  const json::value id =
      browser.Evaluate("document.querySelector('#sessions-rows button[data-kick]').dataset.kick");
  ASSERT_TRUE(id.is_string());
  const std::string button =
      "document.querySelector('button[data-kick=\"" + std::string(id.as_string()) + "\"]')";
  browser.Evaluate(button + ".click()");
  EXPECT_EQ(browser.Evaluate(button + ".textContent").as_string(), "Confirm kick");
  browser.Evaluate(button + ".click()");
  EXPECT_TRUE(moltd_->WaitFor("[Admin] session " + std::string(id.as_string()) +
                              " kicked by an operator: kicked from the dashboard"))
      << moltd_->output();
  EXPECT_TRUE(browser.WaitUntil("document.getElementById('sessions-count').textContent === '2'"));
  EXPECT_TRUE(browser.WaitUntil("document.getElementById('toast').textContent === 'session " +
                                std::string(id.as_string()) + " kicked'"));
  const molt::test::HttpResult sessions =
      HttpCall(admin_, "GET", "/api/v1/sessions/" + std::string(id.as_string()), token_);
  EXPECT_EQ(sessions.status, 404) << sessions.body;
}

// A development server (dev rules: unsigned deploys), for the deploy panel.
class DashboardDeployTest : public DashboardTest {
 protected:
  std::string Branch() const override { return "dev"; }
  // Short diagnostics windows, so the charts have points within the test.
  std::string Config() const override { return R"({"server": {"diagnostics_seconds": 0.2}})"; }
  // Packs the bundled plugins with `molt build` (`flags` make each build its own) and deploys
  // the file to dev through the API, waiting for the swap; the deployment's result.
  std::string Deploy(const std::string& name, std::vector<std::string> flags) {
    const std::string file = data_ + "/" + name + ".molt";
    std::vector<std::string> args = {MOLT_CLI_PATH, "build", MOLT_PLUGIN_DIR, "--out", file,
                                     "--channel",   "dev"};
    args.insert(args.end(), flags.begin(), flags.end());
    Process build(args);
    EXPECT_EQ(build.Wait(), 0) << build.output();
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const molt::test::HttpResult up = HttpCall(admin_, "POST", "/api/v1/builds", token_, bytes);
    EXPECT_EQ(up.status, 201) << up.body;
    const std::string sha(json::parse(up.body).at("build").at("sha256").as_string());
    const molt::test::HttpResult d = HttpCall(
        admin_, "POST", "/api/v1/deploy?wait=30", token_,
        R"({"branch":"dev","build":")" + sha + R"(","by":"ci","message":")" + name + R"("})");
    EXPECT_EQ(d.status, 200) << d.body;
    return std::string(json::parse(d.body).at("deployment").at("result").as_string());
  }
};

// The deploy panel: the branches with their heads, the history with results, and a rollback
// from the page behind a confirming second click.
TEST_F(DashboardDeployTest, ShowsTheBranchesAndDeploymentsAndRollsBackFromThePage) {
  ASSERT_EQ(Deploy("first", {}), "swapped");
  ASSERT_EQ(Deploy("second", {"--health-errors", "9"}), "swapped");
  Browser browser(MOLT_CHROMIUM, Url(token_), data_ + "/chromium");
  ASSERT_TRUE(browser.ok()) << browser.error();
  ASSERT_TRUE(browser.WaitUntil("window.moltDashboard && moltDashboard.polls >= 1"))
      << browser.Evaluate("document.body.innerText");
  EXPECT_NE(browser.Evaluate("document.getElementById('deploy-line').textContent")
                .as_string()
                .find("this server runs dev with dev rules, applied #2"),
            std::string::npos)
      << browser.Evaluate("document.getElementById('deploy-line').textContent");
  EXPECT_EQ(browser
                .Evaluate("document.querySelector('#deployment-rows tr[data-seq=\"2\"] "
                          "td.result').textContent")
                .as_string(),
            "swapped");
  // The fleet panel: a server alone lists itself, live, and how the head's deploy went on it.
  EXPECT_EQ(browser.Evaluate("document.getElementById('fleet-line').textContent").as_string(),
            "a server alone (no fleet database): itself");
  EXPECT_NE(browser.Evaluate("document.getElementById('fleet-rows').innerText")
                .as_string()
                .find("\tdev\t"),
            std::string::npos)
      << browser.Evaluate("document.getElementById('fleet-rows').innerText");
  EXPECT_EQ(browser
                .Evaluate("document.querySelector('#fleet-rows td.green:nth-child(8)')"
                          ".textContent")
                .as_string(),
            "live");
  EXPECT_TRUE(
      browser.WaitUntil("document.getElementById('fleet-deploy').textContent.startsWith("
                        "'deploy #2 of dev (')"))
      << browser.Evaluate("document.getElementById('fleet-deploy').textContent");
  EXPECT_NE(browser.Evaluate("document.getElementById('fleet-deploy').textContent")
                .as_string()
                .find(": 1 swapped"),
            std::string::npos)
      << browser.Evaluate("document.getElementById('fleet-deploy').textContent");
  const std::string button = "document.querySelector('button[data-rollback=\"dev\"]')";
  browser.Evaluate(button + ".click()");
  EXPECT_EQ(browser.Evaluate(button + ".textContent").as_string(), "Confirm rollback");
  browser.Evaluate(button + ".click()");
  EXPECT_TRUE(moltd_->WaitFor("#3 dev: rollback")) << moltd_->output();
  EXPECT_TRUE(browser.WaitUntil(
      "(document.querySelector('#deployment-rows tr[data-seq=\"3\"] td.result') || {})"
      ".textContent === 'swapped'"))
      << browser.Evaluate("document.getElementById('deployment-rows').innerText");
  EXPECT_TRUE(browser.WaitUntil(
      "document.getElementById('toast').textContent.startsWith('#3 dev: rolled back to ')"))
      << browser.Evaluate("document.getElementById('toast').textContent");
  // Drain, from the fleet panel, behind a confirming second click: a server alone closes.
  const std::string drain = "document.querySelector('#fleet-rows button[data-drain]')";
  browser.Evaluate(drain + ".click()");
  EXPECT_EQ(browser.Evaluate(drain + ".textContent").as_string(), "Confirm drain");
  browser.Evaluate(drain + ".click()");
  EXPECT_TRUE(moltd_->WaitFor("draining (admin API): ")) << moltd_->output();
  EXPECT_EQ(moltd_->Wait(), 0) << moltd_->output();
}

// The charts an operator watches during a deploy: sessions, TPS, step, traffic and errors over the
// last 15 minutes, one point per diagnostics window, with every swap marked on each.
TEST_F(DashboardDeployTest, ChartsTheLastFifteenMinutesWithTheSwapsMarked) {
  Process bot({MOLT_BOT_PATH, "--port", std::to_string(game_), "--clients", "2", "--rate", "20",
               "--duration", "120", "--request", "counter.Get", "--intent", "counter.Add"});
  ASSERT_TRUE(bot.WaitFor("2/2 clients joined")) << bot.output();
  ASSERT_EQ(Deploy("first", {}), "swapped");
  ASSERT_EQ(Deploy("second", {"--health-errors", "9"}), "swapped");
  // The series behind them, as the API answers it.
  const molt::test::HttpResult api = HttpCall(admin_, "GET", "/api/v1/series", token_);
  ASSERT_EQ(api.status, 200) << api.body;
  const json::object series = json::parse(api.body).as_object();
  EXPECT_EQ(series.at("history_seconds").to_number<double>(), 900);
  EXPECT_NEAR(series.at("interval_seconds").to_number<double>(), 0.2, 1e-9);
  for (const char* column :
       {"time_ms", "tps", "step_ms", "step_max_ms", "sessions", "net_in_bytes_per_second",
        "net_out_bytes_per_second", "errors_logged", "net_rejected"}) {
    EXPECT_TRUE(series.at("series").as_object().contains(column)) << column << " " << api.body;
  }
  const json::array& swaps = series.at("swaps").as_array();
  ASSERT_EQ(swaps.size(), 2u) << api.body;
  EXPECT_TRUE(swaps[1].at("ok").as_bool());
  EXPECT_EQ(swaps[1].at("reason").as_string().find("deploy #2"), 0u) << api.body;

  Browser browser(MOLT_CHROMIUM, Url(token_), data_ + "/chromium");
  ASSERT_TRUE(browser.ok()) << browser.error();
  ASSERT_TRUE(browser.WaitUntil("window.moltDashboard && moltDashboard.seriesReads >= 2"))
      << browser.Evaluate("document.body.innerText");
  EXPECT_EQ(browser.Evaluate("document.querySelectorAll('#charts svg').length").as_int64(), 5);
  // Every chart marks both swaps, green: they swapped.
  EXPECT_EQ(browser.Evaluate("document.querySelectorAll('#charts line.swap.ok').length").as_int64(),
            10);
  EXPECT_NE(browser.Evaluate("document.querySelector('#chart-tps line.swap title').textContent")
                .as_string()
                .find("swapped to "),
            std::string::npos);
  // Points, one per window, and the sessions line at the two bots.
  EXPECT_TRUE(
      browser.WaitUntil("document.querySelector('#chart-sessions polyline').getAttribute('points')"
                        ".split(' ').length >= 3"))
      << browser.Evaluate("document.getElementById('charts').innerHTML");
  EXPECT_TRUE(
      browser.WaitUntil("document.querySelector('#chart-sessions .label b').textContent === '2.0'"))
      << browser.Evaluate("document.getElementById('chart-sessions').innerText");
  EXPECT_TRUE(browser.WaitUntil(
      "Number(document.querySelector('#chart-traffic .label b').textContent.split(' / ')[0]) > 0"))
      << browser.Evaluate("document.getElementById('chart-traffic').innerText");
  EXPECT_EQ(browser.Evaluate("document.querySelectorAll('#chart-step polyline').length").as_int64(),
            2);
}

TEST_F(DashboardTest, AWrongTokenGetsTheTokenFormAndTheRightOneOpensTheDashboard) {
  Browser browser(MOLT_CHROMIUM, Url("not-the-token"), data_ + "/chromium");
  ASSERT_TRUE(browser.ok()) << browser.error();
  ASSERT_TRUE(browser.WaitUntil("!document.getElementById('login').classList.contains('hidden')"));
  EXPECT_EQ(browser.Evaluate("document.getElementById('login-error').textContent").as_string(),
            "the server refused the token: check the token");
  EXPECT_TRUE(
      browser.Evaluate("document.getElementById('app').classList.contains('hidden')").as_bool());
  browser.Evaluate("document.getElementById('login-token').value = '" + token_ +
                   "'; document.getElementById('login-form').requestSubmit()");
  EXPECT_TRUE(
      browser.WaitUntil("moltDashboard.polls >= 1 && "
                        "document.getElementById('login').classList.contains('hidden')"));
  EXPECT_EQ(browser.Evaluate("document.getElementById('sessions-count').textContent").as_string(),
            "0");
  // The page itself holds no secret and loads without the token; the API does not answer
  // without it.
  EXPECT_EQ(HttpCall(admin_, "GET", "/").status, 200);
  EXPECT_EQ(HttpCall(admin_, "GET", "/api/v1/status").status, 401);
}

}  // namespace

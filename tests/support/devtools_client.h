// SPDX-License-Identifier: Apache-2.0
// File: tests/support/devtools_client.h
//
// Drives a real headless Chromium over the Chrome DevTools Protocol, for tests of the dashboard:
// starts the browser on a page, attaches to that page over its websocket, evaluates JavaScript
// in it, and takes screenshots. No timing assertions: the waits are generous upper bounds.
//
//   Browser browser(MOLT_CHROMIUM, "http://127.0.0.1:7778/#token=...");
//   ASSERT_TRUE(browser.ok()) << browser.error();
//   EXPECT_TRUE(browser.WaitUntil("document.title === 'moltd'"));
//   json::value n = browser.Evaluate("moltDashboard.polls");
//
// Chromium runs with --no-sandbox: test machines run as root or in containers without the user
// namespaces its sandbox needs, and the page it loads is our own, on loopback. It keeps its
// shared memory in /tmp (--disable-dev-shm-usage): containers often give /dev/shm 64 MB.
#ifndef MOLT_TESTS_SUPPORT_DEVTOOLS_CLIENT_H_
#define MOLT_TESTS_SUPPORT_DEVTOOLS_CLIENT_H_

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"

namespace molt::test {

class Browser {
 public:
  Browser(const std::string& chromium, const std::string& url, const std::string& profile_dir,
          const std::string& window_size = "1400,2000") {
    std::filesystem::remove_all(profile_dir);
    process_ = std::make_unique<Process>(std::vector<std::string>{
        chromium, "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--log-level=3",
        "--no-first-run", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
        "--user-data-dir=" + profile_dir, "--window-size=" + window_size, url});
    const std::string listening = "DevTools listening on ws://127.0.0.1:";
    if (!process_->WaitFor(listening)) {
      error_ = "chromium did not start: " + process_->output();
      return;
    }
    const std::string& out = process_->output();
    const std::uint16_t port =
        static_cast<std::uint16_t>(std::stoi(out.substr(out.find(listening) + listening.size())));
    // The page's own websocket, from the list of targets.
    std::string target;
    for (int i = 0; i < 100 && target.empty(); ++i) {
      const HttpResult list = HttpRaw(port,
                                      "GET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                      "Connection: close\r\n\r\n",
                                      2000);
      if (list.status == 200) {
        const boost::json::value targets = boost::json::parse(list.body);
        for (const boost::json::value& t : targets.as_array()) {
          if (t.at("type").as_string() == "page") {
            target = std::string(t.at("webSocketDebuggerUrl").as_string());
          }
        }
      }
      if (target.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    // The address in it follows the Host header HttpCall sent: only its path is used.
    const std::size_t path = target.find("/devtools/");
    if (path == std::string::npos) {
      error_ = "no page target in /json/list";
      return;
    }
    try {
      namespace asio = boost::asio;
      asio::ip::tcp::resolver resolver(io_);
      asio::connect(ws_.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
      ws_.handshake("127.0.0.1:" + std::to_string(port), target.substr(path));
      ws_.read_message_max(64 << 20);  // screenshots
    } catch (const std::exception& e) {
      error_ = std::string("the page's websocket: ") + e.what();
    }
  }
  ~Browser() {
    boost::system::error_code ec;
    ws_.next_layer().close(ec);
    if (process_) {
      process_->Signal(SIGTERM);
      process_->Wait();
    }
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // Sends one command and returns its "result" (or the whole answer when it has an "error").
  boost::json::value Call(const std::string& method, boost::json::object params = {}) {
    const std::int64_t id = next_id_++;
    ws_.text(true);
    ws_.write(boost::asio::buffer(boost::json::serialize(
        boost::json::object{{"id", id}, {"method", method}, {"params", std::move(params)}})));
    for (;;) {  // events come in between; they are not needed here
      boost::beast::flat_buffer buffer;
      ws_.read(buffer);
      boost::json::value answer =
          boost::json::parse(boost::beast::buffers_to_string(buffer.data()));
      const boost::json::object& o = answer.as_object();
      if (o.contains("id") && o.at("id").to_number<std::int64_t>() == id) {
        return o.contains("result") ? o.at("result") : answer;
      }
    }
  }

  // Evaluates `expression` in the page (promises awaited) and returns its value; null when it
  // threw or gave undefined.
  boost::json::value Evaluate(const std::string& expression) {
    const boost::json::value r =
        Call("Runtime.evaluate",
             {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
    const boost::json::object* o = r.if_object();
    if (o == nullptr || o->contains("exceptionDetails") || !o->contains("result")) {
      return nullptr;
    }
    const boost::json::object& result = o->at("result").as_object();
    return result.contains("value") ? result.at("value") : boost::json::value();
  }

  // Polls `expression` until it is true (at most `limit`).
  bool WaitUntil(const std::string& expression,
                 std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      const boost::json::value v = Evaluate("!!(" + expression + ")");
      if (v.is_bool() && v.as_bool()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // A PNG of the whole page, base64 as the protocol gives it ("" on failure).
  std::string ScreenshotBase64() {
    const boost::json::value r =
        Call("Page.captureScreenshot", {{"format", "png"}, {"captureBeyondViewport", true}});
    const boost::json::object* o = r.if_object();
    return o != nullptr && o->contains("data") ? std::string(o->at("data").as_string()) : "";
  }

 private:
  std::unique_ptr<Process> process_;
  std::string error_;
  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_{io_};
  std::int64_t next_id_ = 1;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_DEVTOOLS_CLIENT_H_

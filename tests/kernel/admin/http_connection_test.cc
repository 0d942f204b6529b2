// SPDX-License-Identifier: Apache-2.0
// HttpConnection (admin/http_connection.h) alone: one accepted socket on loopback, the handler a
// test function, the server's side a counter of closes. A request reaches the handler with its
// head and body, a planned refusal ends the connection unread, a handler that does not answer is
// answered 503 and its late answer dropped, and the close is told once.
#include "kernel/src/admin/http_connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/http_client.h"

namespace molt::kernel::admin {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class HttpConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    limits_.handler_timeout = std::chrono::milliseconds(300);
    Accept();
    thread_ = std::thread([this] { io_->run(); });
  }
  void TearDown() override {
    asio::post(*io_, [this] {
      acceptor_.close();
      if (conn_ != nullptr) {
        conn_->Close();
      }
    });
    thread_.join();
  }
  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) {
        return;
      }
      conn_ = std::make_shared<HttpConnection>(
          HttpConnection::Server{io_, limits_, handler_, planner_,
                                 [this](HttpConnection* c) {
                                   EXPECT_EQ(c, conn_.get());
                                   ++closed_;
                                   conn_.reset();  // as the server forgets it
                                 }},
          std::move(socket));
      conn_->Read(true);
      Accept();
    });
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  std::shared_ptr<asio::io_context> io_ = std::make_shared<asio::io_context>(1);
  tcp::acceptor acceptor_{*io_, {asio::ip::address_v4::loopback(), 0}};
  HttpLimits limits_;
  HttpHandler handler_ = [this](HttpRequest req, HttpReply reply) {
    if (req.path == "/stall") {
      stalled_ = std::move(reply);
      return;
    }
    reply({200, "text/plain", req.method + " " + req.path + "?" + req.query + " " + req.body, {}});
  };
  HttpPlanner planner_ = [](const HttpRequest& head) {
    HttpPlan plan;
    if (head.path == "/refused") {
      plan.refuse = HttpResponse{403, "text/plain", "not you\n", {}};
    }
    return plan;
  };
  std::shared_ptr<HttpConnection> conn_;  // the server's thread
  std::atomic<int> closed_{0};
  HttpReply stalled_;
  std::thread thread_;
};

TEST_F(HttpConnectionTest, ARequestReachesTheHandlerAndTheCloseIsToldOnce) {
  const test::HttpResult r = test::HttpCall(port(), "POST", "/x?y=1", "", "hello");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /x?y=1 hello");
  EXPECT_NE(r.headers.find("Server: moltd"), std::string::npos);
  for (int i = 0; i < 500 && closed_ == 0; ++i) {  // "Connection: close": the server closes
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(closed_, 1);
}

TEST_F(HttpConnectionTest, APlannedRefusalIsAnsweredWithoutReadingTheBody) {
  const test::HttpResult r =
      test::HttpRaw(port(), "POST /refused HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "not you\n");
}

TEST_F(HttpConnectionTest, AHandlerThatDoesNotAnswerGets503AndItsLateAnswerIsDropped) {
  const test::HttpResult r = test::HttpCall(port(), "GET", "/stall");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "the kernel thread did not answer within 300 ms\n");
  ASSERT_TRUE(stalled_);
  stalled_({200, "text/plain", "late\n", {}});  // dropped: answered already, or gone
}

TEST_F(HttpConnectionTest, AMalformedRequestIs400AndTheConnectionEnds) {
  const test::HttpResult r = test::HttpRaw(port(), "NOT HTTP\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.rfind("malformed request: ", 0), 0u);
}

}  // namespace
}  // namespace molt::kernel::admin

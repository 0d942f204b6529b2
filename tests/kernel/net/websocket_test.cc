// SPDX-License-Identifier: Apache-2.0
// The WebSocket transport (wire/websocket.h): the filter's upgrade and framing byte by byte, then
// a real Network on loopback driven by Boost.Beast's own WebSocket client (an implementation
// that shares nothing with ours) and by a raw socket that speaks plain HTTP or breaks the rules.
#include "kernel/src/wire/websocket.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "net_fixture.h"
#include "tests/support/test_pki.h"

namespace molt::kernel::net {
namespace {

namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using wire::WebSocketFilter;
using tcp = boost::asio::ip::tcp;
using molt::test::Frame;
using molt::test::TestClient;

std::span<const std::uint8_t> WsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string WsText(const std::vector<std::uint8_t>& v) { return std::string(v.begin(), v.end()); }

// RFC 6455 §1.3's example key and its accept value.
constexpr std::string_view kUpgrade =
    "GET /play HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Origin: http://example.com\r\nSec-WebSocket-Version: 13\r\n\r\n";

// A client frame: FIN, `opcode`, masked with a fixed key.
std::vector<std::uint8_t> WsClientFrame(std::uint8_t opcode, std::span<const std::uint8_t> payload,
                                        bool fin = true, bool mask = true) {
  std::vector<std::uint8_t> f;
  f.push_back(static_cast<std::uint8_t>((fin ? 0x80 : 0) | opcode));
  const std::size_t n = payload.size();
  const std::uint8_t m = mask ? 0x80 : 0;
  if (n < 126) {
    f.push_back(static_cast<std::uint8_t>(m | n));
  } else if (n <= 0xFFFF) {
    f.push_back(m | 126);
    f.push_back(static_cast<std::uint8_t>(n >> 8));
    f.push_back(static_cast<std::uint8_t>(n & 0xFF));
  } else {
    f.push_back(m | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      f.push_back(static_cast<std::uint8_t>(n >> shift & 0xFF));
    }
  }
  const std::uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
  if (mask) {
    f.insert(f.end(), key, key + 4);
  }
  for (std::size_t i = 0; i < n; ++i) {
    f.push_back(mask ? payload[i] ^ key[i % 4] : payload[i]);
  }
  return f;
}

// A wire frame of `n` payload bytes: the size prefix, then the bytes.
std::vector<std::uint8_t> OneWireFrame(std::size_t n, std::uint8_t fill = 0xAB) {
  std::vector<std::uint8_t> f(4 + n, fill);
  const auto size = static_cast<std::uint32_t>(n);
  std::memcpy(f.data(), &size, 4);
  return f;
}

class WebSocketFilterTest : public ::testing::Test {
 protected:
  // Feeds the upgrade; returns the answer.
  std::string Upgrade(WebSocketFilter& ws) {
    std::vector<std::uint8_t> frames;
    EXPECT_TRUE(ws.Receive(WsBytes(kUpgrade), &frames).ok());
    std::vector<std::uint8_t> out;
    ws.TakeOutput(&out);
    return WsText(out);
  }
  Status Feed(WebSocketFilter& ws, std::span<const std::uint8_t> bytes,
              std::vector<std::uint8_t>* frames) {
    return ws.Receive(bytes, frames);
  }
};

TEST_F(WebSocketFilterTest, TheUpgradeIsAnsweredWithTheRfcsAcceptKey) {
  WebSocketFilter ws({});
  EXPECT_FALSE(ws.answered());
  const std::string answer = Upgrade(ws);
  EXPECT_EQ(answer,
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
  EXPECT_TRUE(ws.open());
  EXPECT_EQ(ws.path(), "/play");
}

TEST_F(WebSocketFilterTest, AnUpgradeSplitAnywhereAndTheFirstFramesBehindItAreRead) {
  WebSocketFilter ws({});
  std::vector<std::uint8_t> all(kUpgrade.begin(), kUpgrade.end());
  const std::vector<std::uint8_t> wire = OneWireFrame(10);
  const std::vector<std::uint8_t> f = WsClientFrame(0x2, wire);
  all.insert(all.end(), f.begin(), f.end());
  std::vector<std::uint8_t> frames;
  for (std::uint8_t b : all) {  // one byte at a time
    ASSERT_TRUE(ws.Receive(std::span(&b, 1), &frames).ok());
  }
  EXPECT_TRUE(ws.open());
  EXPECT_EQ(frames, wire);
}

TEST_F(WebSocketFilterTest, PlainHttpGetsAShortPlainAnswerNamingTheEndpoint) {
  WebSocketFilter ws({});
  std::vector<std::uint8_t> frames;
  const Status s = ws.Receive(WsBytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), &frames);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("WebSocket upgrade refused (426)"), std::string::npos) << s.message();
  std::vector<std::uint8_t> out;
  ws.TakeOutput(&out);
  const std::string answer = WsText(out);
  EXPECT_EQ(answer.rfind("HTTP/1.1 426 Upgrade Required\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos);
  EXPECT_NE(answer.find("this is a Molt WebSocket endpoint: connect with a WebSocket client"),
            std::string::npos)
      << answer;
  EXPECT_TRUE(ws.answered());
  EXPECT_FALSE(ws.open());
}

TEST_F(WebSocketFilterTest, NotHttpAWrongVersionABadKeyAndAHugeHeadAreRefused) {
  struct Case {
    std::string request;
    std::string status;
    std::string says;
  };
  const std::string big(9000, 'a');
  const Case cases[] = {
      {"\x16\x03\x01 hello\r\n\r\n", "400", "the request is not HTTP"},
      {"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
       "426", "WebSocket version \"8\" is not spoken here: use version 13"},
      {"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n",
       "400", "Sec-WebSocket-Key is missing or is not the base64 of 16 bytes"},
      {"GET / HTTP/1.1\r\nX-Big: " + big, "431", "the request head is over 8192 bytes"},
  };
  for (const Case& c : cases) {
    WebSocketFilter ws({});
    std::vector<std::uint8_t> frames;
    const Status s = ws.Receive(WsBytes(c.request), &frames);
    EXPECT_FALSE(s.ok()) << c.request;
    std::vector<std::uint8_t> out;
    ws.TakeOutput(&out);
    const std::string answer = WsText(out);
    EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 " + c.status) << answer;
    EXPECT_NE(answer.find(c.says), std::string::npos) << answer;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
}

TEST_F(WebSocketFilterTest, OriginsOutsideTheListAreRefused) {
  WebSocketFilter allowed({.origins = {"http://example.com"}});
  EXPECT_EQ(Upgrade(allowed).substr(0, 12), "HTTP/1.1 101");
  WebSocketFilter refused({.origins = {"https://game.example"}});
  std::vector<std::uint8_t> frames;
  const Status s = refused.Receive(WsBytes(kUpgrade), &frames);
  EXPECT_FALSE(s.ok());
  std::vector<std::uint8_t> out;
  refused.TakeOutput(&out);
  EXPECT_EQ(WsText(out).substr(0, 12), "HTTP/1.1 403");
  EXPECT_NE(WsText(out).find("origin \"http://example.com\" is not allowed here: add it to "
                             "net.websocket_origins"),
            std::string::npos)
      << WsText(out);
}

TEST_F(WebSocketFilterTest, FramesSentBeforeTheUpgradeWaitThenGoAsBinaryMessages) {
  WebSocketFilter ws({});
  const std::vector<std::uint8_t> small = OneWireFrame(3);
  const std::vector<std::uint8_t> mid = OneWireFrame(300);
  const std::vector<std::uint8_t> big = OneWireFrame(70000);
  ws.Send(small);
  EXPECT_FALSE(ws.has_output());
  const std::string answer = Upgrade(ws);
  const std::size_t head = answer.find("\r\n\r\n") + 4;
  ASSERT_EQ(answer.size(), head + 2 + small.size());
  EXPECT_EQ(static_cast<std::uint8_t>(answer[head]), 0x82);  // FIN, binary, unmasked
  EXPECT_EQ(static_cast<std::uint8_t>(answer[head + 1]), small.size());
  ws.Send(mid);
  ws.Send(big);
  std::vector<std::uint8_t> out;
  ws.TakeOutput(&out);
  ASSERT_EQ(out.size(), 4 + mid.size() + 10 + big.size());
  EXPECT_EQ(out[1], 126);
  EXPECT_EQ(out[2] << 8 | out[3], static_cast<int>(mid.size()));
  EXPECT_EQ(out[4 + mid.size() + 1], 127);
  ws.Close(1001);
  out.clear();
  ws.TakeOutput(&out);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0x88, 2, 0x03, 0xE9}));
  ws.Send(small);  // nothing after the close frame
  EXPECT_FALSE(ws.has_output());
}

TEST_F(WebSocketFilterTest, AFragmentedMessageWithAPingBetweenIsOneFrameAndThePingIsAnswered) {
  WebSocketFilter ws({});
  Upgrade(ws);
  const std::vector<std::uint8_t> wire = OneWireFrame(20);
  std::vector<std::uint8_t> bytes = WsClientFrame(0x2, std::span(wire).subspan(0, 7), false);
  const std::vector<std::uint8_t> ping = WsClientFrame(0x9, WsBytes("hi"));
  const std::vector<std::uint8_t> rest = WsClientFrame(0x0, std::span(wire).subspan(7), true);
  bytes.insert(bytes.end(), ping.begin(), ping.end());
  bytes.insert(bytes.end(), rest.begin(), rest.end());
  std::vector<std::uint8_t> frames;
  ASSERT_TRUE(ws.Receive(bytes, &frames).ok());
  EXPECT_EQ(frames, wire);
  std::vector<std::uint8_t> out;
  ws.TakeOutput(&out);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0x8A, 2, 'h', 'i'}));  // the pong
}

TEST_F(WebSocketFilterTest, BrokenRulesCloseWithTheirCodeAndSayWhy) {
  struct Case {
    std::vector<std::uint8_t> bytes;
    std::uint16_t code;
    std::string says;
  };
  const std::vector<std::uint8_t> wire = OneWireFrame(8);
  std::vector<std::uint8_t> two = wire;
  two.insert(two.end(), wire.begin(), wire.end());
  std::vector<std::uint8_t> rsv = WsClientFrame(0x2, wire);
  rsv[0] |= 0x40;
  const Case cases[] = {
      {WsClientFrame(0x2, wire, true, false), 1002, "an unmasked frame"},
      {WsClientFrame(0x1, WsBytes("hello")), 1003, "a text message: Molt takes binary messages"},
      {WsClientFrame(0x2, two), 1007, "a binary message longer than the wire frame it starts"},
      {WsClientFrame(0x2, std::span(wire).subspan(0, 6)), 1007,
       "a binary message of 6 bytes is not one wire frame"},
      {WsClientFrame(0x0, wire), 1002, "a continuation frame with no message to continue"},
      {WsClientFrame(0x9, std::vector<std::uint8_t>(126, 1)), 1002,
       "a control frame that is fragmented or over 125 bytes"},
      {WsClientFrame(0x3, wire), 1002, "unknown opcode 0x3"},
      {rsv, 1002, "reserved bits set"},
  };
  for (const Case& c : cases) {
    WebSocketFilter ws({});
    Upgrade(ws);
    std::vector<std::uint8_t> frames;
    const Status s = ws.Receive(c.bytes, &frames);
    ASSERT_FALSE(s.ok()) << c.says;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("(close " + std::to_string(c.code) + ")"), std::string::npos)
        << s.message();
    std::vector<std::uint8_t> out;
    ws.TakeOutput(&out);
    ASSERT_GE(out.size(), 4u) << c.says;
    EXPECT_EQ(out[0], 0x88);
    EXPECT_EQ(out[2] << 8 | out[3], c.code);
    EXPECT_NE(WsText(out).find(c.says.substr(0, 20)), std::string::npos) << WsText(out);
    EXPECT_FALSE(ws.Receive(WsClientFrame(0x2, wire), &frames).ok());  // nothing after it
  }
}

TEST_F(WebSocketFilterTest, TheClientsCloseIsAnsweredWithItsCode) {
  WebSocketFilter ws({});
  Upgrade(ws);
  const std::uint8_t going_away[2] = {0x03, 0xE9};
  std::vector<std::uint8_t> frames;
  ASSERT_TRUE(ws.Receive(WsClientFrame(0x8, going_away), &frames).ok());
  EXPECT_TRUE(ws.peer_closed());
  std::vector<std::uint8_t> out;
  ws.TakeOutput(&out);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0x88, 2, 0x03, 0xE9}));
  EXPECT_TRUE(ws.Receive(WsClientFrame(0x2, OneWireFrame(1)), &frames).ok());
  EXPECT_TRUE(frames.empty());  // nothing counts after it
}

// --- A real Network, a real WebSocket client ---

class WebSocketTest : public NetTest {
 protected:
  void SetUp() override {
    NetOptions o = NoResume();
    o.websocket = "127.0.0.1:0";
    Boot(std::move(o));
    Listen();
    ws_port_ = net_->websocket_port();
    ASSERT_NE(ws_port_, 0);
    ASSERT_NE(ws_port_, port_);
  }

  // A Beast client, upgraded, sending binary messages.
  struct Client {
    std::string error;  // why the last read ended the stream
    boost::asio::io_context io;
    websocket::stream<tcp::socket> ws{io};
    explicit Client(std::uint16_t port, const std::string& origin = "") {
      ws.next_layer().connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
      ws.set_option(websocket::stream_base::decorator([origin](websocket::request_type& req) {
        if (!origin.empty()) {
          req.set(beast::http::field::origin, origin);
        }
      }));
      ws.handshake("127.0.0.1", "/");
      ws.binary(true);
    }
    void Send(const std::vector<std::uint8_t>& frame) { ws.write(boost::asio::buffer(frame)); }
    // The next message that is not a Ping, as a Frame.
    Frame Next() {
      for (;;) {
        beast::flat_buffer buffer;
        beast::error_code ec;
        ws.read(buffer, ec);
        Frame f;
        if (ec) {
          f.closed = true;
          error = ec.message();
          return f;
        }
        const auto* data = static_cast<const std::uint8_t*>(buffer.data().data());
        f.bytes.assign(data, data + buffer.size());
        if (f.type() != molt::wire::Body::Ping) {
          return f;
        }
      }
    }
  };

  std::uint16_t ws_port_ = 0;
};

TEST_F(WebSocketTest, ABrowserStyleClientJoinsAndItsIntentsReachTheirChannel) {
  std::vector<std::string> said;
  const ChannelId say = DeclareSay("chat.Say", true, 0, [&](Session&, std::span<Value> args) {
    said.push_back(flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
  });
  std::string stats;
  Run([&] {
    Client c(ws_port_);
    c.Send(TestClient::HelloFrame("ada"));
    const Frame welcome = c.Next();
    ASSERT_EQ(welcome.type(), molt::wire::Body::Welcome);
    for (int i = 0; i < 3; ++i) {
      c.Send(TestClient::IntentFrame(say, SayPayload("hi " + std::to_string(i))));
    }
    c.Send(TestClient::IntentFrame(say, SayPayload(std::string(40, 'x'))));  // over the rule
    flatbuffers::FlatBufferBuilder b;
    c.Send(TestClient::Finish(b, molt::wire::Body::Ping,
                              molt::wire::CreatePing(b, 7, 1).Union()));  // answered in order
    const Frame pong = c.Next();
    ASSERT_EQ(pong.type(), molt::wire::Body::Pong) << c.error;
    EXPECT_EQ(pong.envelope()->body_as_Pong()->seq(), 7u);
    beast::error_code ignored;
    c.ws.close(websocket::close_code::normal, ignored);
  });
  EXPECT_EQ(said, (std::vector<std::string>{"hi 0", "hi 1", "hi 2"}));
  EXPECT_EQ(net_->channels().Find(say)->counters().rejected[static_cast<std::size_t>(
                Reject::kRuleViolated)],
            1u);
  // The client's close frame ends the session as a clean close.
  ASSERT_TRUE(RunUntil([&] { return net_->sessions().count() == 0; }));
  EXPECT_EQ(
      net_->Snapshot().sessions.by_reason[static_cast<std::size_t>(ExitReason::kClientClosed)], 1u);
}

TEST_F(WebSocketTest, TheStatsCountSessionsByTransport) {
  std::atomic<bool> joined{false};
  std::atomic<bool> done{false};
  std::thread t([&] {
    Client c(ws_port_);
    c.Send(TestClient::HelloFrame("ada"));
    EXPECT_EQ(c.Next().type(), molt::wire::Body::Welcome);
    TestClient tcp_client(port_);
    EXPECT_EQ(tcp_client.Hello("bob").type(), molt::wire::Body::Welcome);
    joined = true;
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  ASSERT_TRUE(RunUntil([&] { return joined.load(); }));
  const NetSnapshot snap = net_->Snapshot();
  EXPECT_EQ(snap.websocket_sessions, 1u);
  EXPECT_EQ(snap.tcp_sessions, 1u);
  EXPECT_EQ(snap.websocket_port, ws_port_);
  EXPECT_NE(NetStatsJson(*net_).find("\"sessions_websocket\":1"), std::string::npos);
  done = true;
  RunUntil([&] { return false; }, std::chrono::milliseconds(50));
  t.join();
}

// The server's end of a session reaches the client as its Bye message, then a close frame.
TEST_F(WebSocketTest, AKickIsAByeMessageThenACleanClose) {
  std::atomic<bool> joined{false};
  Frame bye;
  bool closed = false;
  std::thread t([&] {
    Client c(ws_port_);
    c.Send(TestClient::HelloFrame("ada"));
    EXPECT_EQ(c.Next().type(), molt::wire::Body::Welcome);
    joined = true;
    bye = c.Next();
    closed = c.Next().closed;
    EXPECT_EQ(c.ws.reason().code, websocket::close_code::normal);
  });
  ASSERT_TRUE(RunUntil([&] { return joined.load() && net_->sessions().count() == 1; }));
  const SessionId id = net_->sessions().ActiveIds().at(0);
  ASSERT_TRUE(net_->Kick(id, "out").ok());
  RunUntil([&] { return false; }, std::chrono::milliseconds(300));
  t.join();
  ASSERT_EQ(bye.type(), molt::wire::Body::Bye);
  EXPECT_EQ(molt::kernel::net::Text(bye.envelope()), "out");
  EXPECT_TRUE(closed);
}

TEST_F(WebSocketTest, PlainHttpOnTheWebSocketPortIsAnsweredNotLeftHanging) {
  std::string answer;
  Run([&] {
    TestClient c(ws_port_);
    ASSERT_TRUE(c.SendRaw("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    char buf[4096];
    for (;;) {  // to the server's close: an answer, then the end, never a hang
      pollfd p{c.fd(), POLLIN, 0};
      if (::poll(&p, 1, 3000) <= 0) {
        answer += "<timeout>";
        break;
      }
      const ssize_t n = ::recv(c.fd(), buf, sizeof(buf), 0);
      if (n <= 0) {
        break;
      }
      answer.append(buf, static_cast<std::size_t>(n));
    }
  });
  EXPECT_EQ(answer.rfind("HTTP/1.1 426 Upgrade Required\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("this is a Molt WebSocket endpoint"), std::string::npos) << answer;
  EXPECT_EQ(answer.find("<timeout>"), std::string::npos) << answer;
}

TEST_F(WebSocketTest, ATextMessageClosesWith1003AndNamesTheRule) {
  beast::error_code read_error;
  websocket::close_reason reason;
  Run([&] {
    Client c(ws_port_);
    c.ws.text(true);
    c.ws.write(boost::asio::buffer(std::string("{\"hello\": 1}")));
    EXPECT_TRUE(c.Next().closed);
    reason = c.ws.reason();
  });
  EXPECT_EQ(reason.code, 1003);
  EXPECT_NE(std::string(reason.reason.c_str()).find("a text message"), std::string::npos)
      << reason.reason.c_str();
}

TEST_F(WebSocketTest, OnlyTheListedOriginsMayConnect) {
  NetOptions o = NoResume();
  o.websocket = "127.0.0.1:0";
  o.websocket_origins = {"https://game.example"};
  Boot(std::move(o));
  Listen();
  const std::uint16_t port = net_->websocket_port();
  std::string refused;
  bool allowed = false;
  Run([&] {
    try {
      Client c(port, "https://evil.example");
    } catch (const beast::system_error& e) {
      refused = e.code().message();
    }
    Client ok(port, "https://game.example");
    ok.Send(TestClient::HelloFrame("ada"));
    allowed = ok.Next().type() == molt::wire::Body::Welcome;
  });
  EXPECT_FALSE(
      refused.empty());  // Beast: "The WebSocket handshake was declined by the remote peer"
  EXPECT_TRUE(allowed);
}

// While no generation serves, the Refuse (Starting) waits for the upgrade, then goes as a
// message of its own before the close.
TEST_F(WebSocketTest, ARefusalAtAcceptIsSentOnceTheUpgradeIsDone) {
  net_->SetServing(false);
  Frame refuse;
  Run([&] {
    Client c(ws_port_);
    c.Send(TestClient::HelloFrame("ada"));
    refuse = c.Next();
  });
  ASSERT_EQ(refuse.type(), molt::wire::Body::Refuse);
  EXPECT_EQ(refuse.envelope()->body_as_Refuse()->reason(), molt::wire::RefuseReason::Starting);
}

// wss://: the WebSocket under the same TLS as the TCP port (--tls-cert, --tls-key).
TEST_F(WebSocketTest, WssSpeaksTheSameFramesUnderTls) {
  const std::string dir = testing::TempDir() + "molt_ws_pki";
  std::filesystem::create_directories(dir);
  molt::test::TestPki pki(dir);
  NetOptions o = NoResume();
  o.websocket = "127.0.0.1:0";
  o.tls_cert_file = pki.path("server.pem");
  o.tls_key_file = pki.path("server.key");
  Boot(std::move(o));
  Listen();
  const std::uint16_t port = net_->websocket_port();
  Frame welcome;
  Run([&] {
    boost::asio::io_context io;
    boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
    ctx.load_verify_file(pki.path("ca.pem"));
    ctx.set_verify_mode(boost::asio::ssl::verify_peer);
    websocket::stream<boost::asio::ssl::stream<tcp::socket>> ws(io, ctx);
    beast::get_lowest_layer(ws).connect(
        tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    ws.next_layer().set_verify_callback(boost::asio::ssl::host_name_verification("localhost"));
    ws.next_layer().handshake(boost::asio::ssl::stream_base::client);
    ws.handshake("localhost", "/");
    ws.binary(true);
    ws.write(boost::asio::buffer(TestClient::HelloFrame("ada")));
    beast::flat_buffer buffer;
    ws.read(buffer);
    const auto* data = static_cast<const std::uint8_t*>(buffer.data().data());
    welcome.bytes.assign(data, data + buffer.size());
    beast::error_code ignored;
    ws.close(websocket::close_code::normal, ignored);
  });
  EXPECT_EQ(welcome.type(), molt::wire::Body::Welcome);
  std::filesystem::remove_all(dir);
}

TEST_F(WebSocketTest, ABadAddressIsRefusedNamingTheKey) {
  NetOptions o = NoResume();
  o.websocket = "127.0.0.1";
  Boot(std::move(o));
  const Status s = net_->Listen();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "net.websocket \"127.0.0.1\" is not ADDRESS:PORT (for example 127.0.0.1:7780, or "
            "0.0.0.0:0 for any free port)");
}

}  // namespace
}  // namespace molt::kernel::net

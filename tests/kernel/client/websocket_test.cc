// SPDX-License-Identifier: Apache-2.0
// libmolt_client over WebSocket (MOLT_CLIENT_WEBSOCKET): the client's side of the filter
// (wire/websocket.h) byte by byte against hand-written server bytes and against the server's
// side, then libmolt_client against an in-process Network's WebSocket port on loopback: a session
// end to end, a lost link resumed, refusals with their reason, and wss:// with a test CA.
#include "kernel/src/wire/websocket.h"

#include <filesystem>

#include "client_fixture.h"
#include "relay.h"
#include "tests/support/test_pki.h"

namespace molt::kernel::net {
namespace {

namespace fs = std::filesystem;
using wire::WebSocketFilter;
using wire::WebSocketOptions;

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string Take(WebSocketFilter& ws) {
  std::vector<std::uint8_t> out;
  ws.TakeOutput(&out);
  return std::string(out.begin(), out.end());
}

WebSocketFilter ClientFilter() {
  WebSocketOptions o;
  o.role = WebSocketOptions::kClient;
  o.host = "game.example:7780";
  return WebSocketFilter(std::move(o));
}

// The key of a client's upgrade request.
std::string KeyOf(const std::string& request) {
  const std::string field = "Sec-WebSocket-Key: ";
  const std::size_t at = request.find(field);
  return at == std::string::npos ? "" : request.substr(at + field.size(), 24);
}

// A server frame: FIN, `opcode`, unmasked (or masked with `mask`, which a server must not do).
std::string ServerFrame(std::uint8_t opcode, std::string_view payload, bool mask = false) {
  std::string f;
  f.push_back(static_cast<char>(0x80 | opcode));
  f.push_back(static_cast<char>((mask ? 0x80 : 0) | payload.size()));  // under 126 bytes here
  if (mask) {
    f.append(4, '\0');  // a zero mask: the payload as it is
  }
  f.append(payload);
  return f;
}

// A client frame as the server reads it: opcode, and the payload unmasked.
struct ClientFrame {
  std::uint8_t opcode = 0;
  bool masked = false;
  std::string payload;
};
ClientFrame ParseClientFrame(const std::string& bytes) {
  ClientFrame f;
  f.opcode = static_cast<std::uint8_t>(bytes.at(0)) & 0x0F;
  f.masked = (static_cast<std::uint8_t>(bytes.at(1)) & 0x80) != 0;
  const std::size_t n = static_cast<std::uint8_t>(bytes.at(1)) & 0x7F;  // under 126 bytes here
  const std::string key = bytes.substr(2, 4);
  f.payload = bytes.substr(6, n);
  for (std::size_t i = 0; i < f.payload.size(); ++i) {
    f.payload[i] = static_cast<char>(f.payload[i] ^ key[i % 4]);
  }
  return f;
}

std::vector<std::uint8_t> WireFrame(std::string_view body) {
  std::vector<std::uint8_t> f(4);
  const auto size = static_cast<std::uint32_t>(body.size());
  std::memcpy(f.data(), &size, 4);
  f.insert(f.end(), body.begin(), body.end());
  return f;
}

TEST(WebSocketClientFilterTest, TheRequestCarriesAFreshKeyAndTheServersAnswerOpensTheLink) {
  WebSocketFilter client = ClientFilter();
  const std::string request = Take(client);
  EXPECT_EQ(request.substr(0, 39), "GET / HTTP/1.1\r\nHost: game.example:7780");
  EXPECT_NE(request.find("\r\nUpgrade: websocket\r\n"), std::string::npos) << request;
  EXPECT_NE(request.find("\r\nSec-WebSocket-Version: 13\r\n"), std::string::npos) << request;
  EXPECT_EQ(KeyOf(request).substr(22), "==") << request;
  WebSocketFilter other = ClientFilter();
  EXPECT_NE(KeyOf(Take(other)), KeyOf(request));  // 16 random bytes each

  // A frame sent before the answer waits; the server's filter answers 101 with the accept key.
  const std::vector<std::uint8_t> hello = WireFrame("hello");
  client.Send(hello);
  EXPECT_FALSE(client.has_output());
  WebSocketFilter server({});
  std::vector<std::uint8_t> frames;
  ASSERT_TRUE(server.Receive(Bytes(request), &frames).ok());
  const std::string answer = Take(server);
  ASSERT_EQ(answer.substr(0, 12), "HTTP/1.1 101") << answer;
  ASSERT_TRUE(client.Receive(Bytes(answer), &frames).ok());
  EXPECT_TRUE(client.open());
  const std::string sent = Take(client);
  const ClientFrame f = ParseClientFrame(sent);
  EXPECT_EQ(f.opcode, 0x2);
  EXPECT_TRUE(f.masked);
  EXPECT_EQ(f.payload, std::string(hello.begin(), hello.end()));
  ASSERT_TRUE(server.Receive(Bytes(sent), &frames).ok());
  EXPECT_EQ(frames, hello);
  // Every message has its own mask: the same frame twice is not the same bytes twice.
  client.Send(hello);
  EXPECT_NE(Take(client), sent);

  // The server's messages come out as the frames' byte stream, split anywhere.
  const std::vector<std::uint8_t> welcome = WireFrame("welcome");
  server.Send(welcome);
  const std::string down = Take(server);
  frames.clear();
  for (char c : down) {
    ASSERT_TRUE(client.Receive(Bytes(std::string_view(&c, 1)), &frames).ok());
  }
  EXPECT_EQ(frames, welcome);
}

TEST(WebSocketClientFilterTest, ARefusalALieOrAMaskedFrameFailsNamingWhatTheServerDid) {
  struct Case {
    std::string answer;
    std::string error;
  };
  const Case cases[] = {
      {"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 28\r\n\r\n"
       "origin \"x\" is not allowed\r\n",
       "WebSocket upgrade refused by the server (403 Forbidden): origin \"x\" is not allowed"},
      {"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n",
       "WebSocket upgrade refused by the server (502 Bad Gateway)"},
      {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
       "WebSocket: the server's Sec-WebSocket-Accept does not match the key sent (a proxy that "
       "does not speak WebSocket?)"},
      {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
       "WebSocket: the server's 101 does not upgrade to websocket"},
      {"SSH-2.0-OpenSSH_9.2\r\n\r\n",
       "WebSocket: the server did not answer the upgrade in HTTP (bad version): is this a "
       "WebSocket port?"},
      {"HTTP/1.1 200 OK\r\n" + std::string(9000, 'x'),
       "WebSocket: the server's answer head is over 8192 bytes"},
  };
  for (const Case& c : cases) {
    WebSocketFilter client = ClientFilter();
    (void)Take(client);
    std::vector<std::uint8_t> frames;
    const Status s = client.Receive(Bytes(c.answer), &frames);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message(), c.error);
    EXPECT_FALSE(client.open());
    EXPECT_TRUE(frames.empty());
  }

  // Once open, a masked frame from the server breaks the rules: close 1002, saying so.
  WebSocketFilter client = ClientFilter();
  WebSocketFilter server({});
  std::vector<std::uint8_t> frames;
  ASSERT_TRUE(server.Receive(Bytes(Take(client)), &frames).ok());
  ASSERT_TRUE(client.Receive(Bytes(Take(server)), &frames).ok());
  const Status s = client.Receive(Bytes(ServerFrame(0x2, "\1\0\0\0x", true)), &frames);
  EXPECT_EQ(s.message(), "WebSocket: a masked frame (a server masks none) (close 1002)");
  const ClientFrame close = ParseClientFrame(Take(client));
  EXPECT_EQ(close.opcode, 0x8);
  EXPECT_EQ(close.payload.substr(0, 2), std::string("\x03\xEA", 2));
}

TEST(WebSocketClientFilterTest, PingsArePongedAndTheServersCloseIsAnsweredAndNamed) {
  WebSocketFilter client = ClientFilter();
  WebSocketFilter server({});
  std::vector<std::uint8_t> frames;
  ASSERT_TRUE(server.Receive(Bytes(Take(client)), &frames).ok());
  ASSERT_TRUE(client.Receive(Bytes(Take(server)), &frames).ok());
  ASSERT_TRUE(client.Receive(Bytes(ServerFrame(0x9, "tick")), &frames).ok());
  const ClientFrame pong = ParseClientFrame(Take(client));
  EXPECT_EQ(pong.opcode, 0xA);
  EXPECT_TRUE(pong.masked);
  EXPECT_EQ(pong.payload, "tick");
  EXPECT_FALSE(client.peer_closed());
  ASSERT_TRUE(client.Receive(Bytes(ServerFrame(0x8, "\x03\xE9going away")), &frames).ok());
  EXPECT_TRUE(client.peer_closed());
  EXPECT_EQ(client.peer_close(), "code 1001: going away");
  const ClientFrame echo = ParseClientFrame(Take(client));
  EXPECT_EQ(echo.opcode, 0x8);
  EXPECT_EQ(echo.payload, std::string("\x03\xE9", 2));
  EXPECT_TRUE(frames.empty());
}

// --- libmolt_client on a real Network's WebSocket port ---

class WebSocketClientTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    Serve(NoResume());
  }
  // Boots a Network with a WebSocket port (and `o`'s options), with math.Double and chat.Say.
  void Serve(NetOptions o) {
    o.websocket = "127.0.0.1:0";
    Boot(std::move(o));
    said_ = DeclareEvent("chat.Said");
    DeclareSay("chat.Say", true, 100, [this](Session& s, std::span<Value> args) {
      heard_.push_back(s.user() + ": " +
                       flatbuffers::GetRoot<molt::test::Say>(args[0].as.ptr)->text()->str());
      (void)net_->Send(said_, s.id(), SayPayload("echo " + heard_.back()));
    });
    DeclareAddRequest("math.Double", [this](Session&, std::span<Value> a, RequestToken t) {
      const auto* add = flatbuffers::GetRoot<molt::test::Add>(a[0].as.ptr);
      (void)net_->Reply(t, Status::Code::kOk, AddPayload(add->amount() * 2));
    });
    Listen();
    ws_port_ = net_->websocket_port();
    ASSERT_NE(ws_port_, 0);
  }
  // A new client over WebSocket, with `flags` besides.
  void WsClient(std::uint32_t flags, const char* ca_file = nullptr) {
    molt_client_destroy(client_);
    molt_client_options o{};
    o.struct_size = sizeof(o);
    o.connect_timeout_seconds = 5;
    o.flags = MOLT_CLIENT_WEBSOCKET | flags;
    o.tls_ca_file = ca_file;
    ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
    molt_client_on_state(client_, OnState, &journal_);
    molt_client_on_event(client_, MOLT_CLIENT_ALL_CHANNELS, OnEvent, &journal_);
    journal_ = {};
  }
  // Says something and asks for a double: both answered over the link.
  void Talk(const std::string& text, std::int32_t amount) {
    const std::vector<std::uint8_t> p = SayPayload(text);
    ASSERT_EQ(molt_client_intent(client_, Channel("chat.Say"), p.data(), p.size()), MOLT_OK);
    const std::vector<std::uint8_t> a = AddPayload(amount);
    const std::size_t before = journal_.responses.size();
    ASSERT_EQ(molt_client_request(client_, Channel("math.Double"), a.data(), a.size(), 5,
                                  OnResponse, &journal_),
              MOLT_OK);
    ASSERT_TRUE(Pump([&] { return journal_.responses.size() > before; }));
    ASSERT_EQ(journal_.responses.back().first, MOLT_OK);
    EXPECT_EQ(
        flatbuffers::GetRoot<molt::test::Add>(journal_.responses.back().second.data())->amount(),
        amount * 2);
    ASSERT_TRUE(Pump([&] { return !journal_.events.empty(); }));
    EXPECT_EQ(journal_.events.back(), "echo ada: " + text);
  }
  std::uint16_t ws_port_ = 0;
  ChannelId said_ = 0;
  std::vector<std::string> heard_;
};

TEST_F(WebSocketClientTest, ASessionOverWebSocketWorksEndToEndAndSaysBye) {
  WsClient(MOLT_CLIENT_NO_RECONNECT);
  ASSERT_TRUE(Connect("ada", ws_port_));
  EXPECT_EQ(journal_.states, (std::vector<std::string>{"connecting", "connected"}));
  Talk("hi", 21);
  EXPECT_EQ(heard_, std::vector<std::string>{"ada: hi"});
  EXPECT_EQ(net_->Snapshot().websocket_sessions, 1u);
  EXPECT_EQ(net_->Snapshot().tcp_sessions, 0u);
  // A full-speed sender is paced over WebSocket as over TCP: nothing refused, nothing lost.
  const std::vector<std::uint8_t> p = SayPayload("burst");
  int sent = 0;
  while (molt_client_intent(client_, Channel("chat.Say"), p.data(), p.size()) == MOLT_OK) {
    ++sent;
  }
  ASSERT_TRUE(Pump([&] { return heard_.size() == 1u + sent; }));
  EXPECT_EQ(net_->stats().transport_floods, 0u);
  EXPECT_EQ(net_->channels().Find(Channel("chat.Say"))->counters().rejected_total(), 0u);

  std::vector<std::string> ends;
  Connection end = kernel_->bus().Subscribe(
      "Kernel.SessionEnd", [&](std::string_view, Args a) { ends.emplace_back(a[1].AsString()); });
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return !ends.empty(); }));
  EXPECT_EQ(ends, std::vector<std::string>{"ClientClosed"});
  end.Disconnect();
}

TEST_F(WebSocketClientTest, ALostLinkReconnectsAndResumesTheSameSession) {
  Serve(NetOptions());  // the server keeps a lost link's session for 30 s
  WsClient(0);
  molt::test::Relay relay(ws_port_);
  ASSERT_TRUE(Connect("ada", relay.port()));
  const std::uint64_t session = molt_client_session(client_);
  Talk("before", 1);
  relay.Cut();
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_RECONNECTING; }));
  const std::vector<std::uint8_t> p = SayPayload("while away");
  ASSERT_EQ(molt_client_intent(client_, Channel("chat.Say"), p.data(), p.size()), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  EXPECT_EQ(molt_client_session(client_), session);
  EXPECT_EQ(journal_.states.back(), "connected (resumed)");
  ASSERT_TRUE(Pump([&] { return heard_.size() == 2u; }));
  EXPECT_EQ(heard_.back(), "ada: while away");
  Talk("after", 2);
  EXPECT_EQ(net_->stats().resumes, 1u);
  EXPECT_EQ(net_->sessions().stats().started, 1u);
  EXPECT_EQ(relay.connections(), 2);
}

TEST_F(WebSocketClientTest, ARefusedUpgradeOrAPortThatIsNotWebSocketClosesTheClientSayingWhy) {
  NetOptions o = NoResume();
  o.websocket_origins = {"https://game.example"};  // a native client sends no Origin
  Serve(o);
  WsClient(0);
  ASSERT_TRUE(Connect("ada", ws_port_));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CLOSED);
  EXPECT_EQ(journal_.states.back(),
            "closed (WebSocket upgrade refused by the server (403 Forbidden): a request without "
            "an Origin is refused: this endpoint takes only the origins in "
            "net.websocket_origins)");

  WsClient(0);  // the TCP port closes on an HTTP request: the reason says which port to use
  ASSERT_TRUE(Connect("ada", port_));
  EXPECT_EQ(molt_client_state(client_), MOLT_CLIENT_CLOSED);
  EXPECT_EQ(journal_.states.back(),
            "closed (the server closed the connection without answering the WebSocket upgrade: "
            "is 127.0.0.1:" +
                std::to_string(port_) +
                " a WebSocket port (moltd --ws)? One under TLS (wss://) needs MOLT_CLIENT_TLS.)");
  EXPECT_EQ(net_->sessions().stats().started, 0u);
}

TEST_F(WebSocketClientTest, WssCarriesTheSameSessionUnderTls) {
  const std::string dir = ::testing::TempDir() + "molt_wss_" + std::to_string(::getpid());
  fs::create_directories(dir);
  const molt::test::TestPki pki(dir);
  NetOptions o = NoResume();
  o.tls_cert_file = pki.path("server.pem");
  o.tls_key_file = pki.path("server.key");
  Serve(o);
  const std::string ca = pki.path("ca.pem");
  WsClient(MOLT_CLIENT_TLS | MOLT_CLIENT_NO_RECONNECT, ca.c_str());
  ASSERT_TRUE(Connect("ada", ws_port_));
  ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << journal_.states.back();
  Talk("secret", 4);
  EXPECT_EQ(net_->Snapshot().websocket_sessions, 1u);
  std::vector<std::string> ends;
  Connection end = kernel_->bus().Subscribe(
      "Kernel.SessionEnd", [&](std::string_view, Args a) { ends.emplace_back(a[1].AsString()); });
  ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);  // the Bye inside a message inside TLS
  ASSERT_TRUE(Pump([&] { return !ends.empty(); }));
  EXPECT_EQ(ends, std::vector<std::string>{"ClientClosed"});
  end.Disconnect();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace molt::kernel::net

// SPDX-License-Identifier: Apache-2.0
// TLS on real loopback sockets, with a CA and certificates made at test time: libmolt_client
// against an in-process Network serving TLS (end to end, refused certificates with their reason,
// a refusal sent inside TLS), the server's policy as `openssl s_client` sees it, and bad
// configuration named at Listen.
#include "kernel/src/wire/tls.h"

#include <filesystem>
#include <thread>

#include "client_fixture.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/wire/datagram_seal.h"
#include "tests/support/child_process.h"
#include "tests/support/test_pki.h"

namespace molt::kernel::net {
namespace {

namespace fs = std::filesystem;

class TlsTest : public ClientTest {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "molt_tls_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    pki_ = std::make_unique<molt::test::TestPki>(dir_);
    ClientTest::SetUp();
  }
  void TearDown() override {
    ClientTest::TearDown();
    fs::remove_all(dir_);
  }
  // The Network serves TLS with `name`.pem and `name`.key.
  void Serve(const std::string& name, NetOptions o = NoResume()) {
    o.tls_cert_file = pki_->path(name + ".pem");
    o.tls_key_file = pki_->path(name + ".key");
    Boot(o);
    echo_ = DeclareAddRequest("math.Double", [this](Session&, std::span<Value> a, RequestToken t) {
      const auto* add = flatbuffers::GetRoot<molt::test::Add>(a[0].as.ptr);
      (void)net_->Reply(t, Status::Code::kOk, AddPayload(add->amount() * 2));
    });
    Listen();
  }
  // A new client: TLS, trusting the test CA, expecting `server_name` (null: the host).
  void TlsClient(const char* server_name = nullptr, bool trust = true) {
    molt_client_destroy(client_);
    molt_client_options o{};
    o.struct_size = sizeof(o);
    o.connect_timeout_seconds = 5;
    o.flags = MOLT_CLIENT_TLS | MOLT_CLIENT_NO_RECONNECT;
    const std::string ca = pki_->path("ca.pem");
    o.tls_ca_file = trust ? ca.c_str() : nullptr;
    o.tls_server_name = server_name;
    ASSERT_EQ(molt_client_create(&o, &client_), MOLT_OK);
    molt_client_on_state(client_, OnState, &journal_);
    journal_ = {};
  }
  std::string dir_;
  std::unique_ptr<molt::test::TestPki> pki_;
  ChannelId echo_ = 0;
};

TEST_F(TlsTest, AVerifiedConnectionWorksEndToEnd) {
  Serve("server");
  for (const char* host : {"127.0.0.1", "localhost"}) {  // the certificate names both
    TlsClient();
    ASSERT_EQ(molt_client_connect(client_, host, port_, "ada", nullptr, 0, nullptr, 0), MOLT_OK);
    ASSERT_TRUE(Pump([&] { return molt_client_state(client_) != MOLT_CLIENT_CONNECTING; }));
    ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << journal_.states.back();
    const std::vector<std::uint8_t> p = AddPayload(21);
    ASSERT_EQ(molt_client_request(client_, Channel("math.Double"), p.data(), p.size(), 5,
                                  OnResponse, &journal_),
              MOLT_OK);
    ASSERT_TRUE(Pump([&] { return !journal_.responses.empty(); }));
    ASSERT_EQ(journal_.responses[0].first, MOLT_OK);
    EXPECT_EQ(flatbuffers::GetRoot<molt::test::Add>(journal_.responses[0].second.data())->amount(),
              42);
    // The Bye goes inside TLS too: the session ends as the client closing it.
    std::vector<std::string> ends;
    Connection end = kernel_->bus().Subscribe(
        "Kernel.SessionEnd", [&](std::string_view, Args a) { ends.emplace_back(a[1].AsString()); });
    ASSERT_EQ(molt_client_disconnect(client_), MOLT_OK);
    ASSERT_TRUE(Pump([&] { return !ends.empty(); }));
    EXPECT_EQ(ends, std::vector<std::string>{"ClientClosed"}) << host;
    end.Disconnect();
  }
}

// Keying material exported from a TLS session (the datagram link's key over TLS): the same at
// both ends, 32 bytes, another for another label, none before the handshake is done.
TEST_F(TlsTest, BothEndsExportTheSameKeyFromTheSessionAndNoneBeforeIt) {
  auto server_ctx =
      molt::kernel::wire::TlsContext::Server(pki_->path("server.pem"), pki_->path("server.key"));
  auto client_ctx = molt::kernel::wire::TlsContext::Client(pki_->path("ca.pem"));
  ASSERT_TRUE(server_ctx.ok() && client_ctx.ok());
  using molt::kernel::wire::TlsFilter;
  TlsFilter server(*server_ctx.value(), TlsFilter::kServer, "");
  TlsFilter client(*client_ctx.value(), TlsFilter::kClient, "127.0.0.1");
  const std::string label = molt::wire::DatagramSeal::kTlsExporterLabel;
  EXPECT_TRUE(client.ExportKey(label, 32).empty());
  ASSERT_TRUE(client.Begin().ok());
  std::vector<std::uint8_t> bytes, plain;
  for (int i = 0; i < 10 && !(client.handshake_done() && server.handshake_done()); ++i) {
    bytes.clear();
    client.TakeOutput(&bytes);
    ASSERT_TRUE(server.Receive(bytes, &plain).ok());
    bytes.clear();
    server.TakeOutput(&bytes);
    ASSERT_TRUE(client.Receive(bytes, &plain).ok());
  }
  ASSERT_TRUE(client.handshake_done() && server.handshake_done());
  const std::vector<std::uint8_t> key = client.ExportKey(label, 32);
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(server.ExportKey(label, 32), key);
  EXPECT_NE(client.ExportKey("EXPORTER-another", 32), key);
  EXPECT_NE(key, std::vector<std::uint8_t>(32, 0));
}

// Over TLS the Welcome offers the datagram port without a key: both ends export it, and the link
// comes up and carries a predicted intent and its ack.
TEST_F(TlsTest, OverTlsTheDatagramLinksKeyComesFromTheTlsSession) {
  NetOptions o = NoResume();
  o.udp = "127.0.0.1:0";
  Serve("server", o);
  std::vector<std::string> moves;
  DeclareSayOf(ChannelKind::kPredicted, "move",
               [&](Session&, std::span<Value>) { moves.push_back("step"); });
  TlsClient();
  ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0),
            MOLT_OK);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) != MOLT_CLIENT_CONNECTING; }));
  ASSERT_EQ(molt_client_state(client_), MOLT_CLIENT_CONNECTED) << journal_.states.back();
  ASSERT_TRUE(Pump([&] { return net_->datagrams().counts().opened >= 1; }));
  const std::vector<std::uint8_t> p = SayPayload("north");
  ASSERT_EQ(molt_client_predict(client_, Channel("move"), p.data(), p.size(), nullptr), MOLT_OK);
  ASSERT_TRUE(Pump([&] { return moves.size() == 1 && net_->datagrams().counts().opened >= 2; }));
  EXPECT_EQ(net_->datagrams().counts().refused_total(), 0u);
}

struct Refusal {
  const char* cert;
  const char* server_name;
  bool trust;
  const char* reason;
};

TEST_F(TlsTest, CertificatesThatAreNotTrustedForThisNameAreRefusedWithTheirReason) {
  const Refusal cases[] = {
      {"elsewhere", nullptr, true, "IP address mismatch"},
      {"elsewhere", "localhost", true, "hostname mismatch"},
      {"server", "elsewhere.example", true, "hostname mismatch"},
      {"self", nullptr, true, "self-signed certificate"},
      {"server", nullptr, false, "unable to get local issuer certificate"},  // the system's store
      {"expired", nullptr, true, "certificate has expired"},
  };
  for (const Refusal& c : cases) {
    Serve(c.cert);
    TlsClient(c.server_name, c.trust);
    ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0),
              MOLT_OK);
    ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CLOSED; }))
        << c.cert << ": " << journal_.states.back();
    EXPECT_EQ(journal_.states.back(),
              std::string("closed (TLS: the server's certificate is refused: ") + c.reason + ")")
        << c.cert;
    EXPECT_EQ(net_->sessions().stats().started, 0u);
  }
}

// Refusals decided at accept (here the handshake rate) travel inside TLS once the handshake is
// done, so a TLS client reads them; a client that does not speak TLS is cut and counted.
TEST_F(TlsTest, ARefusalAtAcceptIsSentInsideTlsAndAPlainClientIsCut) {
  NetOptions o = NoResume();
  o.handshakes_per_address = 0.01;  // one connection, then one per 100 s
  Serve("server", o);
  TlsClient();
  ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0),
            MOLT_OK);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CONNECTED; }));
  TlsClient();
  ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "bob", nullptr, 0, nullptr, 0),
            MOLT_OK);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CLOSED; }));
  EXPECT_EQ(journal_.states.back(),
            "closed (RateLimited: too many connections from 127.0.0.1; retry later)");

  Serve("server");
  Run([&] {
    molt::test::TestClient plain(port_);
    plain.Hello("ada");  // a molt Hello where a TLS ClientHello belongs
    EXPECT_EQ(plain.WaitClosed(), "closed");
  });
  EXPECT_EQ(net_->stats().handshakes_dropped[static_cast<std::size_t>(ExitReason::kTransportError)],
            1u);
}

// A TLS client that reaches a plain server says so, rather than "connection lost".
TEST_F(TlsTest, ATlsClientAtAPlainServerSaysTheServerDoesNotSpeakTls) {
  std::vector<std::string> lines;
  auto sink = Logger::Get().AddSink([&](const LogEntry& e) {
    if (e.message.find("refused a connection") != std::string_view::npos) {
      lines.emplace_back(e.message);
    }
  });
  Listen();  // the fixture's network: plain TCP
  TlsClient();
  ASSERT_EQ(molt_client_connect(client_, "127.0.0.1", port_, "ada", nullptr, 0, nullptr, 0),
            MOLT_OK);
  ASSERT_TRUE(Pump([&] { return molt_client_state(client_) == MOLT_CLIENT_CLOSED; }));
  EXPECT_EQ(journal_.states.back().rfind("closed (TLS: the peer does not speak TLS (", 0), 0u)
      << journal_.states.back();
  EXPECT_EQ(net_->stats().handshakes_dropped[static_cast<std::size_t>(ExitReason::kProtocolError)],
            1u);
  // The operator reads why in the server's log (the client got the same words in a Bye it could
  // not read).
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "refused a connection from 127.0.0.1 (ProtocolError): the client started a TLS "
            "handshake, but this server speaks plain TCP: give moltd --tls-cert and --tls-key, or "
            "connect without TLS");
}

// What a TLS scanner sees: TLS 1.3 by default, 1.2 allowed, 1.1 and older refused.
TEST_F(TlsTest, OpensslSClientSeesTls13AndOlderThan12IsRefused) {
  Serve("server");
  const std::string connect = "openssl s_client -connect 127.0.0.1:" + std::to_string(port_) +
                              " -CAfile " + pki_->path("ca.pem") + " -brief </dev/null 2>&1";
  std::string modern, tls12, tls11;
  Run([&] {
    modern = molt::test::Shell(connect);
    tls12 = molt::test::Shell(connect + " -tls1_2");
    tls11 = molt::test::Shell(connect + " -tls1_1");
  });
  EXPECT_NE(modern.find("Protocol version: TLSv1.3"), std::string::npos) << modern;
  EXPECT_NE(modern.find("Verification: OK"), std::string::npos) << modern;
  EXPECT_NE(tls12.find("Protocol version: TLSv1.2"), std::string::npos) << tls12;
  EXPECT_NE(tls12.find("Ciphersuite: ECDHE-"), std::string::npos) << tls12;
  EXPECT_EQ(tls11.find("Protocol version"), std::string::npos) << tls11;
}

TEST_F(TlsTest, BadTlsConfigurationIsNamedAtListen) {
  auto listen = [&](const std::string& cert, const std::string& key) {
    NetOptions o = NoResume();
    o.tls_cert_file = cert;
    o.tls_key_file = key;
    Boot(o);
    return net_->Listen().message();
  };
  EXPECT_EQ(listen(pki_->path("server.pem"), ""),
            "TLS needs both a certificate and its private key: give --tls-cert and --tls-key "
            "(net.tls_cert, net.tls_key), or neither");
  EXPECT_EQ(listen(pki_->path("nope.pem"), pki_->path("server.key")),
            "the TLS certificate " + pki_->path("nope.pem") +
                ": cannot read it: No such file or directory");
  EXPECT_EQ(listen(pki_->path("server.key"), pki_->path("server.key"))
                .rfind("the TLS certificate " + pki_->path("server.key") +
                           " is not a PEM certificate chain: ",
                       0),
            0u);
  EXPECT_EQ(listen(pki_->path("server.pem"), pki_->path("self.key")),
            "the TLS private key " + pki_->path("self.key") + " does not match the certificate " +
                pki_->path("server.pem") + " (key values mismatch)");
}

}  // namespace
}  // namespace molt::kernel::net

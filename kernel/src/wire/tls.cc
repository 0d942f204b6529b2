// SPDX-License-Identifier: Apache-2.0
// TlsContext and TlsFilter: OpenSSL over memory BIOs (see tls.h for the policy).
#include "kernel/src/wire/tls.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace molt::kernel::wire {
namespace {

// TLS 1.2's suites (1.3 has only AEAD ones, all allowed): forward-secret key exchange with AEAD
// ciphers, as Mozilla's "intermediate" configuration lists them.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The reason of OpenSSL's oldest queued error ("wrong version number"), and the queue cleared.
std::string OpenSslReason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "unknown error";
  }
  const char* reason = ERR_reason_error_string(e);
  if (reason != nullptr) {
    return reason;
  }
  std::array<char, 256> buf{};
  ERR_error_string_n(e, buf.data(), buf.size());
  return buf.data();
}

// "cannot read key.pem: No such file or directory", or "" when it opens.
std::string Unreadable(const std::string& what, const std::string& file) {
  std::ifstream in(file);
  if (in) {
    return "";
  }
  return fmt::format("{} {}: cannot read it: {}", what, file, std::strerror(errno));
}

bool IsIpAddress(const std::string& name) {
  in6_addr buf{};
  return ::inet_pton(AF_INET, name.c_str(), &buf) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), &buf) == 1;
}

}  // namespace

struct TlsContext::Impl {
  SSL_CTX* ctx = nullptr;
  ~Impl() { SSL_CTX_free(ctx); }

  // A context with the policy both ends share (tls.h).
  static Result<std::unique_ptr<Impl>> New(const SSL_METHOD* method) {
    ERR_clear_error();
    auto impl = std::make_unique<Impl>();
    impl->ctx = SSL_CTX_new(method);
    if (impl->ctx == nullptr) {
      return Status::Internal("TLS: cannot create a context: " + OpenSslReason());
    }
    SSL_CTX_set_min_proto_version(impl->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(impl->ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_cipher_list(impl->ctx, kTls12Ciphers);
    SSL_CTX_set_mode(impl->ctx, SSL_MODE_RELEASE_BUFFERS);
    return impl;
  }
};

TlsContext::TlsContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsContext::~TlsContext() = default;

Result<std::shared_ptr<TlsContext>> TlsContext::Server(const std::string& cert_file,
                                                       const std::string& key_file) {
  for (const auto& [what, file] :
       {std::pair{"the TLS certificate", cert_file}, std::pair{"the TLS private key", key_file}}) {
    if (std::string why = Unreadable(what, file); !why.empty()) {
      return Status::InvalidArgument(why);
    }
  }
  MOLT_ASSIGN_OR_RETURN(std::unique_ptr<Impl> made, Impl::New(TLS_server_method()));
  std::unique_ptr<Impl> impl = std::move(made);
  SSL_CTX_set_options(impl->ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(impl->ctx, cert_file.c_str()) != 1) {
    return Status::InvalidArgument(fmt::format(
        "the TLS certificate {} is not a PEM certificate chain: {}", cert_file, OpenSslReason()));
  }
  if (SSL_CTX_use_PrivateKey_file(impl->ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(impl->ctx) != 1) {
    const std::string reason = OpenSslReason();
    if (reason.find("mismatch") != std::string::npos) {
      return Status::InvalidArgument(
          fmt::format("the TLS private key {} does not match the certificate {} ({})", key_file,
                      cert_file, reason));
    }
    return Status::InvalidArgument(
        fmt::format("the TLS private key {} is not a PEM private key: {}", key_file, reason));
  }
  return std::shared_ptr<TlsContext>(new TlsContext(std::move(impl)));
}

Result<std::shared_ptr<TlsContext>> TlsContext::Client(const std::string& ca_file) {
  if (!ca_file.empty()) {
    if (std::string why = Unreadable("the TLS CA file", ca_file); !why.empty()) {
      return Status::InvalidArgument(why);
    }
  }
  MOLT_ASSIGN_OR_RETURN(std::unique_ptr<Impl> made, Impl::New(TLS_client_method()));
  std::unique_ptr<Impl> impl = std::move(made);
  SSL_CTX_set_verify(impl->ctx, SSL_VERIFY_PEER, nullptr);
  const int loaded = ca_file.empty()
                         ? SSL_CTX_set_default_verify_paths(impl->ctx)
                         : SSL_CTX_load_verify_locations(impl->ctx, ca_file.c_str(), nullptr);
  if (loaded != 1) {
    return Status::InvalidArgument(
        ca_file.empty() ? "TLS: the system's certificate store cannot be loaded: " + OpenSslReason()
                        : fmt::format("the TLS CA file {} holds no PEM certificate: {}", ca_file,
                                      OpenSslReason()));
  }
  return std::shared_ptr<TlsContext>(new TlsContext(std::move(impl)));
}

struct TlsFilter::Impl {
  SSL* ssl = nullptr;
  BIO* in = nullptr;   // ciphertext from the peer (owned by ssl)
  BIO* out = nullptr;  // ciphertext to the peer (owned by ssl)
  Role role = kServer;
  ~Impl() { SSL_free(ssl); }

  // Why the last operation failed, for an operator or an app.
  Status Failure(int ret) const {
    const int error = SSL_get_error(ssl, ret);
    const long verify = SSL_get_verify_result(ssl);
    if (role == kClient && verify != X509_V_OK) {
      ERR_clear_error();
      return Status::Rejected(fmt::format("TLS: the server's certificate is refused: {}",
                                          X509_verify_cert_error_string(verify)));
    }
    if (error == SSL_ERROR_SSL) {
      const std::string reason = OpenSslReason();
      if (reason == "wrong version number" || reason == "http request" ||
          reason == "packet length too long") {
        return Status::Rejected(fmt::format("TLS: the peer does not speak TLS ({})", reason));
      }
      return Status::Rejected("TLS: " + reason);
    }
    ERR_clear_error();
    return Status::Rejected(fmt::format("TLS: the connection failed (error {})", error));
  }
};

TlsFilter::TlsFilter(TlsContext& context, Role role, const std::string& server_name)
    : impl_(std::make_unique<Impl>()) {
  impl_->role = role;
  impl_->ssl = SSL_new(context.impl().ctx);
  impl_->in = BIO_new(BIO_s_mem());
  impl_->out = BIO_new(BIO_s_mem());
  SSL_set_bio(impl_->ssl, impl_->in, impl_->out);
  if (role == kServer) {
    SSL_set_accept_state(impl_->ssl);
    return;
  }
  SSL_set_connect_state(impl_->ssl);
  X509_VERIFY_PARAM* param = SSL_get0_param(impl_->ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (IsIpAddress(server_name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str());
  } else {
    SSL_set_tlsext_host_name(impl_->ssl, server_name.c_str());
    SSL_set1_host(impl_->ssl, server_name.c_str());
  }
}

TlsFilter::~TlsFilter() = default;

Status TlsFilter::Begin() { return Pump(); }

Status TlsFilter::Pump() {
  if (done_) {
    return Status();
  }
  ERR_clear_error();
  const int r = SSL_do_handshake(impl_->ssl);
  if (r != 1) {
    const int error = SSL_get_error(impl_->ssl, r);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      return Status();  // more from the peer first
    }
    return impl_->Failure(r);
  }
  done_ = true;
  if (!waiting_.empty()) {
    std::vector<std::uint8_t> plain = std::move(waiting_);
    waiting_.clear();
    return Send(plain);
  }
  return Status();
}

Status TlsFilter::Receive(std::span<const std::uint8_t> cipher, std::vector<std::uint8_t>* plain) {
  if (!cipher.empty() &&
      BIO_write(impl_->in, cipher.data(), static_cast<int>(cipher.size())) <= 0) {
    return Status::Internal("TLS: out of memory");
  }
  if (Status s = Pump(); !s.ok() || !done_) {
    return s;
  }
  std::array<std::uint8_t, 16 * 1024> buf;
  for (;;) {
    ERR_clear_error();
    const int n = SSL_read(impl_->ssl, buf.data(), static_cast<int>(buf.size()));
    if (n > 0) {
      plain->insert(plain->end(), buf.begin(), buf.begin() + n);
      continue;
    }
    const int error = SSL_get_error(impl_->ssl, n);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE ||
        error == SSL_ERROR_ZERO_RETURN) {  // ZERO_RETURN: the peer's close_notify; EOF follows
      return Status();
    }
    return impl_->Failure(n);
  }
}

Status TlsFilter::Send(std::span<const std::uint8_t> plain) {
  if (shut_ || plain.empty()) {
    return Status();
  }
  if (!done_) {
    waiting_.insert(waiting_.end(), plain.begin(), plain.end());
    return Status();
  }
  ERR_clear_error();
  const int n = SSL_write(impl_->ssl, plain.data(), static_cast<int>(plain.size()));
  if (n != static_cast<int>(plain.size())) {  // a memory BIO takes everything, or fails
    return impl_->Failure(n);
  }
  return Status();
}

bool TlsFilter::has_output() const { return BIO_ctrl_pending(impl_->out) > 0; }

void TlsFilter::TakeOutput(std::vector<std::uint8_t>* out) {
  const std::size_t pending = BIO_ctrl_pending(impl_->out);
  if (pending == 0) {
    return;
  }
  const std::size_t at = out->size();
  out->resize(at + pending);
  const int n = BIO_read(impl_->out, out->data() + at, static_cast<int>(pending));
  out->resize(at + static_cast<std::size_t>(n > 0 ? n : 0));
}

bool TlsFilter::Shutdown() {
  if (!done_) {
    return false;
  }
  if (!shut_) {
    shut_ = true;
    ERR_clear_error();
    SSL_shutdown(impl_->ssl);  // queues close_notify; the peer's answer is not waited for
    ERR_clear_error();
  }
  return true;
}

std::string TlsFilter::version() const { return done_ ? SSL_get_version(impl_->ssl) : ""; }

std::vector<std::uint8_t> TlsFilter::ExportKey(const std::string& label, std::size_t size) const {
  std::vector<std::uint8_t> key(size);
  if (!done_ || SSL_export_keying_material(impl_->ssl, key.data(), key.size(), label.data(),
                                           label.size(), nullptr, 0, 0) != 1) {
    return {};
  }
  return key;
}

}  // namespace molt::kernel::wire

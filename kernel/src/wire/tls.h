// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/wire/tls.h
//
// TLS for both ends of the wire, as a filter over the bytes a connection already moves: OpenSSL
// with memory BIOs, so the server's and the client's sockets keep their non-blocking write paths
// (and the client its descriptor for the app's event loop). Ciphertext read from the socket goes
// in through Receive(), plaintext comes out; plaintext to send goes in through Send(), and
// TakeOutput() hands the ciphertext (handshake messages included) to write.
//
//   auto ctx = TlsContext::Server("cert.pem", "key.pem");   // once, at Listen
//   TlsFilter tls(**ctx, TlsFilter::kServer, "");
//   tls.Receive(bytes_read, &plain);                        // then tls.TakeOutput(&out)
//   tls.Send(frame);                                        // queued until the handshake is done
//
// Policy: TLS 1.2 and 1.3 only; for 1.2 only ECDHE key exchange with AEAD ciphers (Mozilla's
// "intermediate" list), no compression, no renegotiation. A client verifies the server's
// certificate chain (the CA file given, or the system's store) and its name (the host it was
// asked to connect to), and sends that name as SNI. Errors name the certificate problem.
//
// Thread safety: a TlsFilter is used by one thread at a time; a TlsContext is shared read-only.
#ifndef MOLT_KERNEL_WIRE_TLS_H_
#define MOLT_KERNEL_WIRE_TLS_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace molt::kernel::wire {

class TlsContext {
 public:
  // A server's: the certificate chain (PEM, leaf first) and its private key (PEM). Fails naming
  // the file and what is wrong with it (unreadable, not PEM, the key does not match).
  static Result<std::shared_ptr<TlsContext>> Server(const std::string& cert_file,
                                                    const std::string& key_file);
  // A client's: trusts the CAs in `ca_file` (PEM), or the system's store when it is empty.
  static Result<std::shared_ptr<TlsContext>> Client(const std::string& ca_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit TlsContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class TlsFilter {
 public:
  enum Role { kServer, kClient };
  // `server_name`: a client's expected certificate name and SNI (a host name or an IP address).
  TlsFilter(TlsContext& context, Role role, const std::string& server_name);
  ~TlsFilter();
  TlsFilter(const TlsFilter&) = delete;
  TlsFilter& operator=(const TlsFilter&) = delete;

  // Ciphertext from the peer; the plaintext it carried is appended to `plain`. An error ends the
  // connection: its message names the TLS problem ("certificate verify failed: certificate has
  // expired", "the peer does not speak TLS", ...).
  Status Receive(std::span<const std::uint8_t> cipher, std::vector<std::uint8_t>* plain);
  // Plaintext to send. Before the handshake is done it waits inside the filter.
  Status Send(std::span<const std::uint8_t> plain);
  // Appends the ciphertext ready to be written to `out` (and forgets it).
  void TakeOutput(std::vector<std::uint8_t>* out);
  bool has_output() const;
  // Starts the handshake (a client's first flight). A server's starts at the first Receive().
  Status Begin();
  // close_notify: the last record; nothing is sent after it. False while the handshake is not
  // done (the caller may wait for it, or close without).
  bool Shutdown();
  bool handshake_done() const { return done_; }
  // "TLSv1.3", once the handshake is done.
  std::string version() const;
  // `size` bytes of keying material exported from the session (RFC 5705 / RFC 8446 7.5) under
  // `label`, the same at both ends and known to no one else; empty before the handshake is done.
  std::vector<std::uint8_t> ExportKey(const std::string& label, std::size_t size) const;

 private:
  Status Pump();  // drives the handshake, then flushes the plaintext waiting for it
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::uint8_t> waiting_;  // plaintext sent before the handshake was done
  bool done_ = false;
  bool shut_ = false;
};

}  // namespace molt::kernel::wire

#endif  // MOLT_KERNEL_WIRE_TLS_H_

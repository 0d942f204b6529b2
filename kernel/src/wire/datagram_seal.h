// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/wire/datagram_seal.h
//
// DatagramSeal: one direction pair of a session's datagram link, sealed with an AEAD
// (ChaCha20-Poly1305, OpenSSL) under the session's 32-byte key. A sealed datagram is
//
//   [0x4D][session: u64 LE][counter: u64 LE][ciphertext of the frame][tag: 16 bytes]
//
// with the 17-byte header as associated data and the nonce 4 zero bytes then the counter
// (little-endian): each side counts its own datagrams from 1, so no nonce repeats under a key
// (each direction has its own key: the key is split by direction, see Create). A datagram that
// does not open (a wrong key, a changed byte, truncated, a replay) changes nothing: Open returns
// why, and the window is moved only by one that authenticated.
//
//   Result<DatagramSeal> seal = DatagramSeal::Create(key, session, DatagramSeal::kServer);
//   std::vector<std::uint8_t> out = seal->Seal(frame);
//   Result<std::span<const std::uint8_t>> frame = seal->Open(datagram, &scratch);
//
// Thread safety: not thread-safe; one per link, on the thread that owns the link.
#ifndef MOLT_KERNEL_WIRE_DATAGRAM_SEAL_H_
#define MOLT_KERNEL_WIRE_DATAGRAM_SEAL_H_

#include <molt/kernel/status.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kernel/src/wire/replay_window.h"

namespace molt::wire {

class DatagramSeal {
 public:
  static constexpr std::size_t kKeyBytes = 32;
  // The label a session's key is exported from its TLS session under, at both ends (RFC 5705),
  // when its reliable link is TLS: the Welcome then carries none.
  static constexpr const char* kTlsExporterLabel = "EXPORTER-molt-datagram-link";
  static constexpr std::size_t kHeaderBytes = 17;
  static constexpr std::size_t kTagBytes = 16;
  static constexpr std::size_t kOverhead = kHeaderBytes + kTagBytes;
  static constexpr std::uint8_t kMagic = 0x4D;
  // Which end this is: the two directions seal under keys derived apart from the session's
  // (HKDF-SHA256 with the labels "molt c2s" and "molt s2c"), so a datagram reflected back to
  // its sender never opens.
  enum class End : std::uint8_t { kClient, kServer };

  // `key`: the session's 32 bytes (its Welcome's, or the TLS exporter's). InvalidArgument for
  // another size.
  static molt::kernel::Result<DatagramSeal> Create(std::span<const std::uint8_t> key,
                                                   std::uint64_t session, End end);
  DatagramSeal(DatagramSeal&&) noexcept;
  DatagramSeal& operator=(DatagramSeal&&) noexcept;
  ~DatagramSeal();

  // The session a datagram names in its header, or nullopt when it is not one of ours (too
  // short, another magic byte): what the receiver looks the seal up by.
  static std::optional<std::uint64_t> SessionOf(std::span<const std::uint8_t> datagram);

  // `frame` sealed with the next counter.
  std::vector<std::uint8_t> Seal(std::span<const std::uint8_t> frame);
  // The frame inside `datagram` (in `*scratch`), or why it does not open: InvalidArgument (not
  // sealed, or another session's), AlreadyExists (a replay: a counter taken already, older than
  // the window, or 0) or Rejected (does not authenticate). On failure nothing changes.
  molt::kernel::Result<std::span<const std::uint8_t>> Open(std::span<const std::uint8_t> datagram,
                                                           std::vector<std::uint8_t>* scratch);

  std::uint64_t session() const { return session_; }
  std::uint64_t sealed() const { return send_counter_; }
  const ReplayWindow& window() const { return window_; }

 private:
  struct Ciphers;
  DatagramSeal(std::uint64_t session, std::unique_ptr<Ciphers> ciphers);

  std::uint64_t session_ = 0;
  std::uint64_t send_counter_ = 0;
  ReplayWindow window_;
  std::unique_ptr<Ciphers> ciphers_;
};

}  // namespace molt::wire

#endif  // MOLT_KERNEL_WIRE_DATAGRAM_SEAL_H_

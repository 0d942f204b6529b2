// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/wire/wire.h
//
// What both ends of the wire share (schemas/molt_wire.fbs): the protocol version, and the two
// alignment rules that let FlatBuffers read fields in place. A frame is a size-prefixed Envelope
// and is verified from an 8-byte boundary; a channel payload is a byte vector that senders align
// to 8 bytes, and receivers copy to an aligned scratch buffer when a sender did not.
//
// Header-only, and the one part of the network both roles share: the server (net/) and the client
// library (client/) include it; nothing of net/ ships in libmolt_client.
#ifndef MOLT_KERNEL_WIRE_WIRE_H_
#define MOLT_KERNEL_WIRE_WIRE_H_

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

// The generated types (schemas/molt_wire.fbs) live in this namespace too.
namespace molt::wire {

// 2: the Replica body (a version-1 client would close on it). Bodies appended later do not bump
// it: clients ignore a server body they do not know.
inline constexpr std::uint32_t kProtocolVersion = 2;

// `bytes` on an 8-byte boundary: itself when it is, else a copy in `scratch`.
inline std::span<const std::uint8_t> Aligned(std::span<const std::uint8_t> bytes,
                                             std::vector<std::uint64_t>& scratch) {
  if (bytes.empty() || reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 == 0) {
    return bytes;
  }
  scratch.resize((bytes.size() + 7) / 8);
  std::memcpy(scratch.data(), bytes.data(), bytes.size());
  return std::span(reinterpret_cast<const std::uint8_t*>(scratch.data()), bytes.size());
}

// A payload vector aligned to 8 bytes in the frame, so the receiver can read it in place.
inline flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> PayloadVector(
    flatbuffers::FlatBufferBuilder& b, std::span<const std::uint8_t> payload) {
  b.ForceVectorAlignment(payload.size(), 1, 8);
  return b.CreateVector(payload.data(), payload.size());
}

// Bounds for verifying an envelope from a client: a hostile nesting cannot run away.
inline flatbuffers::Verifier::Options EnvelopeVerifierOptions() {
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 16;
  opts.max_tables = 64;
  return opts;
}

// The client's bounds for a server's envelope: a Welcome carries one table per channel and a
// replica snapshot two per field, so only the depth is held tight (frames are capped anyway).
inline flatbuffers::Verifier::Options ServerEnvelopeVerifierOptions() {
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 16;
  return opts;
}

}  // namespace molt::wire

#endif  // MOLT_KERNEL_WIRE_WIRE_H_

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/wire/envelope.h
//
// Building and reading envelopes (schemas/molt_wire.fbs), for both ends of the wire: a frame is a
// size-prefixed Envelope holding one body; durations travel as milliseconds; payloads as byte
// vectors. The server (net/) and the client library (client/) include it.
#ifndef MOLT_KERNEL_WIRE_ENVELOPE_H_
#define MOLT_KERNEL_WIRE_ENVELOPE_H_

#include <algorithm>
#include <cstdint>
#include <span>

#include "kernel/src/wire/wire.h"
#include "molt_wire_generated.h"

namespace molt::wire {

// `b` finished as a size-prefixed Envelope holding `body`: the frame as it goes on the wire,
// valid while `b` lives.
inline std::span<const std::uint8_t> FinishFrame(flatbuffers::FlatBufferBuilder& b, Body type,
                                                 flatbuffers::Offset<void> body) {
  b.FinishSizePrefixed(CreateEnvelope(b, type, body));
  return {b.GetBufferPointer(), b.GetSize()};
}

// `seconds` as the wire's milliseconds, rounded: 0 for none (or less), at most 4e9 (46 days).
inline std::uint32_t Millis(double seconds) {
  return seconds <= 0 ? 0u : static_cast<std::uint32_t>(std::min(seconds * 1000.0 + 0.5, 4.0e9));
}

// A received byte vector as a span over the frame (empty when the field is absent).
inline std::span<const std::uint8_t> BytesOf(const flatbuffers::Vector<std::uint8_t>* v) {
  return v == nullptr ? std::span<const std::uint8_t>() : std::span(v->data(), v->size());
}

}  // namespace molt::wire

#endif  // MOLT_KERNEL_WIRE_ENVELOPE_H_

// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt-relay/impairment.h
//
// Impairment: molt-relay's seeded model of a bad link, one per direction. Asked about each
// datagram in turn, it decides whether the datagram is lost, sent once or twice, and how long
// each copy waits. It knows no clock and no socket: the same settings and seed give the same
// verdicts in the same order, on any machine (std::mt19937_64 is specified bit for bit, and the
// model turns its numbers into probabilities and delays itself rather than through the library's
// distributions, which are not). Included by relay_options.h and relay.h.
//
// Each verdict draws the same six numbers whatever it decides (lost, twice, and for each of two
// copies its jitter and whether it is held back), so changing one probability does not reshuffle
// the other decisions of a seeded run.
//
// Thread safety: none; one thread asks.
#ifndef MOLT_HOSTS_MOLT_RELAY_IMPAIRMENT_H_
#define MOLT_HOSTS_MOLT_RELAY_IMPAIRMENT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <random>

namespace molt::relay {

// What the model does to each datagram (molt-relay's flags --drop ... --jitter-ms).
struct ImpairmentSettings {
  double drop = 0;       // probability 0..1 that a datagram is lost
  double duplicate = 0;  // probability 0..1 that a datagram that is not lost is sent twice
  double reorder = 0;    // probability 0..1 that a copy is held back an extra delay + jitter
  std::chrono::milliseconds delay{0};   // each copy waits this long ...
  std::chrono::milliseconds jitter{0};  // ... give or take up to this much (uniform), never < 0
};

// The model's decision about one datagram.
struct Verdict {
  struct Copy {
    std::chrono::microseconds delay{0};  // from the datagram's arrival to its send
    bool reordered = false;              // held back an extra delay + jitter
  };
  int copies = 0;              // 0: lost; 1; 2: duplicated
  std::array<Copy, 2> copy{};  // the first `copies` are meaningful

  bool dropped() const { return copies == 0; }
};

class Impairment {
 public:
  // REQUIRES: the probabilities within 0..1, delay and jitter not negative.
  Impairment(const ImpairmentSettings& settings, std::uint64_t seed)
      : settings_(settings), random_(seed) {}

  // The verdict about the next datagram.
  Verdict Next();

  // How long a held-back copy waits beyond its own delay: delay + jitter, at least 1 ms (a
  // reorder with neither would be no reorder at all).
  std::chrono::microseconds HoldBack() const;

 private:
  // A number in [0, 1) from the next 53 bits of the generator.
  double Uniform();

  ImpairmentSettings settings_;
  std::mt19937_64 random_;
};

}  // namespace molt::relay

#endif  // MOLT_HOSTS_MOLT_RELAY_IMPAIRMENT_H_

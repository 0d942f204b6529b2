// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/signing.h
//
// Ed25519 for deploys (spec §29, DESIGN.md §6), on OpenSSL's EVP: key pairs, signatures over
// byte-exact canonical strings, fingerprints, and the strict base64 they travel in.
//   - Keys are base64 of the raw 32 bytes; signatures base64 of the raw 64 bytes.
//   - Base64 is decoded strictly: the standard alphabet, a length that is a multiple of 4,
//     padding only at the end; a signature field over 100 characters is not even decoded.
//   - A fingerprint is the first 8 hex digits of the SHA-256 of the raw 32-byte public key.
//   - A private key file is PEM (PKCS #8), written with mode 0600.
//
// Thread safety: none needed (functions of their arguments).
#ifndef MOLT_KERNEL_LOADER_SIGNING_H_
#define MOLT_KERNEL_LOADER_SIGNING_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace molt::kernel::loader {

// Standard base64 with padding.
std::string Base64(std::string_view bytes);
// Strict decoding (see above); nullopt for anything else.
std::optional<std::string> DecodeBase64(std::string_view text);

// A private key: the raw 32-byte seed. Never printed.
struct PrivateKey {
  std::string seed;
};

// A new key pair from the system's random source.
Result<PrivateKey> GenerateKey();
// The key for a raw 32-byte seed (RFC 8032's "secret key").
Result<PrivateKey> KeyFromSeed(std::string_view seed);
// The public key of `key`, as base64 of its 32 bytes.
Result<std::string> PublicKeyOf(const PrivateKey& key);
// Writes `key` to `path` as PEM, mode 0600 (the file must not exist: no key is overwritten).
Status WritePrivateKey(const std::string& path, const PrivateKey& key);
// Reads a PEM private key file written by WritePrivateKey (or `openssl genpkey -algorithm
// ed25519`). Refuses a file others can read (fix: chmod 600).
Result<PrivateKey> ReadPrivateKey(const std::string& path);

// The base64 Ed25519 signature of `message` by `key`.
Result<std::string> Sign(const PrivateKey& key, std::string_view message);
// Whether `signature` (base64) is `public_key`'s (base64) over `message`. False for any
// malformed input.
bool Verify(std::string_view public_key, std::string_view message, std::string_view signature);

// The first 8 hex digits of the SHA-256 of the raw public key (base64), or "" when malformed.
std::string Fingerprint(std::string_view public_key);

// The canonical strings a deploy's signatures cover (spec §29, "molt" in place of "tt"): fields
// joined by a bare '\n', integers in base 10 with no sign, no leading zeros, nothing else; an
// absent optional field is "".
struct DeployFields {
  std::string branch;         // b
  std::string build;          // a: the SHA-256 of the build's manifest (it names every library's)
  std::string build_id;       // i: the build id ("<commit7>-<hash6>")
  std::uint64_t seq = 0;      // s
  std::string commit;         // c
  std::string channel;        // ch: "prod" or "dev"
  std::uint64_t sent_ms = 0;  // t
  std::string reason;         // r: "1" (a rollback), "resign" or ""
};
std::string CanonicalDeploy(const DeployFields& d);
// The r field of a deploy of `kind` (deploy, promote, rollback, resign).
inline std::string DeployReasonField(std::string_view kind) {
  return kind == "rollback" ? "1" : kind == "resign" ? "resign" : "";
}

struct PinFields {
  std::string branch;
  std::string build;
  std::string servers;    // server ids joined by ',' in message order
  std::uint32_t pct = 0;  // 0: absent
  std::string by;
  std::uint64_t sent_ms = 0;
  bool unpin = false;
};
std::string CanonicalPin(const PinFields& p);

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_SIGNING_H_

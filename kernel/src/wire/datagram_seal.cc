// SPDX-License-Identifier: Apache-2.0
// DatagramSeal: a session's datagrams sealed and opened with ChaCha20-Poly1305
// (datagram_seal.h).
#include "kernel/src/wire/datagram_seal.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <cstring>
#include <string>
#include <utility>

namespace molt::wire {
namespace {

using molt::kernel::Result;
using molt::kernel::Status;

struct CtxDelete {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CtxDelete>;

void PutLe64(std::uint8_t* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
}

std::uint64_t GetLe64(const std::uint8_t* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= std::uint64_t{in[i]} << (8 * i);
  }
  return v;
}

// The nonce of `counter`: 4 zero bytes, then the counter little-endian.
std::array<std::uint8_t, 12> Nonce(std::uint64_t counter) {
  std::array<std::uint8_t, 12> n{};
  PutLe64(n.data() + 4, counter);
  return n;
}

// HKDF-SHA256 of the session's key with `label`: one direction's key.
bool Derive(std::span<const std::uint8_t> key, const char* label, std::uint8_t* out) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  if (ctx == nullptr) {
    return false;
  }
  std::size_t size = DatagramSeal::kKeyBytes;
  const bool ok = EVP_PKEY_derive_init(ctx) > 0 &&
                  EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_key(ctx, key.data(), static_cast<int>(key.size())) > 0 &&
                  EVP_PKEY_CTX_add1_hkdf_info(ctx, reinterpret_cast<const unsigned char*>(label),
                                              static_cast<int>(std::strlen(label))) > 0 &&
                  EVP_PKEY_derive(ctx, out, &size) > 0 && size == DatagramSeal::kKeyBytes;
  EVP_PKEY_CTX_free(ctx);
  return ok;
}

CipherCtx KeyedCtx(const std::uint8_t* key, bool encrypt) {
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (ctx == nullptr) {
    return nullptr;
  }
  const int ok =
      encrypt ? EVP_EncryptInit_ex(ctx.get(), EVP_chacha20_poly1305(), nullptr, key, nullptr)
              : EVP_DecryptInit_ex(ctx.get(), EVP_chacha20_poly1305(), nullptr, key, nullptr);
  return ok > 0 ? std::move(ctx) : nullptr;
}

}  // namespace

struct DatagramSeal::Ciphers {
  CipherCtx seal;
  CipherCtx open;
};

DatagramSeal::DatagramSeal(std::uint64_t session, std::unique_ptr<Ciphers> ciphers)
    : session_(session), ciphers_(std::move(ciphers)) {}
DatagramSeal::DatagramSeal(DatagramSeal&&) noexcept = default;
DatagramSeal& DatagramSeal::operator=(DatagramSeal&&) noexcept = default;
DatagramSeal::~DatagramSeal() = default;

Result<DatagramSeal> DatagramSeal::Create(std::span<const std::uint8_t> key, std::uint64_t session,
                                          End end) {
  if (key.size() != kKeyBytes) {
    return Status::InvalidArgument("a datagram key is " + std::to_string(kKeyBytes) +
                                   " bytes, not " + std::to_string(key.size()));
  }
  std::uint8_t c2s[kKeyBytes];
  std::uint8_t s2c[kKeyBytes];
  if (!Derive(key, "molt c2s", c2s) || !Derive(key, "molt s2c", s2c)) {
    return Status::Internal("OpenSSL could not derive the datagram keys (HKDF-SHA256)");
  }
  const bool server = end == End::kServer;
  auto ciphers = std::make_unique<Ciphers>();
  ciphers->seal = KeyedCtx(server ? s2c : c2s, true);
  ciphers->open = KeyedCtx(server ? c2s : s2c, false);
  OPENSSL_cleanse(c2s, sizeof c2s);
  OPENSSL_cleanse(s2c, sizeof s2c);
  if (ciphers->seal == nullptr || ciphers->open == nullptr) {
    return Status::Internal("OpenSSL has no ChaCha20-Poly1305 here");
  }
  return DatagramSeal(session, std::move(ciphers));
}

std::optional<std::uint64_t> DatagramSeal::SessionOf(std::span<const std::uint8_t> datagram) {
  if (datagram.size() < kOverhead || datagram[0] != kMagic) {
    return std::nullopt;
  }
  return GetLe64(datagram.data() + 1);
}

std::vector<std::uint8_t> DatagramSeal::Seal(std::span<const std::uint8_t> frame) {
  std::vector<std::uint8_t> out(kOverhead + frame.size());
  const std::uint64_t counter = ++send_counter_;
  out[0] = kMagic;
  PutLe64(out.data() + 1, session_);
  PutLe64(out.data() + 9, counter);
  EVP_CIPHER_CTX* ctx = ciphers_->seal.get();
  const std::array<std::uint8_t, 12> nonce = Nonce(counter);
  int n = 0;
  // Each call can fail only on a broken context (checked at Create): ignoring them would send
  // garbage the peer refuses, never plaintext.
  (void)EVP_EncryptInit_ex(ctx, nullptr, nullptr, nullptr, nonce.data());
  (void)EVP_EncryptUpdate(ctx, nullptr, &n, out.data(), kHeaderBytes);
  (void)EVP_EncryptUpdate(ctx, out.data() + kHeaderBytes, &n, frame.data(),
                          static_cast<int>(frame.size()));
  (void)EVP_EncryptFinal_ex(ctx, out.data() + kHeaderBytes + frame.size(), &n);
  (void)EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTagBytes,
                            out.data() + kHeaderBytes + frame.size());
  return out;
}

Result<std::span<const std::uint8_t>> DatagramSeal::Open(std::span<const std::uint8_t> datagram,
                                                         std::vector<std::uint8_t>* scratch) {
  const std::optional<std::uint64_t> session = SessionOf(datagram);
  if (!session) {
    return Status::InvalidArgument("not a sealed datagram (" + std::to_string(datagram.size()) +
                                   " bytes)");
  }
  if (*session != session_) {
    return Status::InvalidArgument("a datagram for another session");
  }
  const std::uint64_t counter = GetLe64(datagram.data() + 9);
  if (!window_.Fresh(counter)) {
    return Status::AlreadyExists("a replayed or too old datagram (counter " +
                                 std::to_string(counter) + ")");
  }
  const std::size_t size = datagram.size() - kOverhead;
  scratch->resize(size);
  EVP_CIPHER_CTX* ctx = ciphers_->open.get();
  const std::array<std::uint8_t, 12> nonce = Nonce(counter);
  const std::uint8_t* tag = datagram.data() + kHeaderBytes + size;
  int n = 0;
  const bool ok = EVP_DecryptInit_ex(ctx, nullptr, nullptr, nullptr, nonce.data()) > 0 &&
                  EVP_DecryptUpdate(ctx, nullptr, &n, datagram.data(), kHeaderBytes) > 0 &&
                  EVP_DecryptUpdate(ctx, scratch->data(), &n, datagram.data() + kHeaderBytes,
                                    static_cast<int>(size)) > 0 &&
                  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTagBytes,
                                      const_cast<std::uint8_t*>(tag)) > 0 &&
                  EVP_DecryptFinal_ex(ctx, scratch->data() + size, &n) > 0;
  if (!ok) {
    scratch->clear();
    return Status::Rejected("a datagram that does not authenticate");
  }
  window_.Take(counter);
  return std::span<const std::uint8_t>(scratch->data(), size);
}

}  // namespace molt::wire

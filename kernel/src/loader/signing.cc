// SPDX-License-Identifier: Apache-2.0
// Ed25519 signatures and their encodings (signing.h), on OpenSSL's EVP.
#include "kernel/src/loader/signing.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "kernel/src/loader/build.h"

namespace molt::kernel::loader {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kSignatureBytes = 64;
constexpr std::size_t kMaxSignatureField = 100;

using Pkey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;
using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;

Pkey PrivatePkey(const PrivateKey& key) {
  return Pkey(key.seed.size() == kKeyBytes
                  ? EVP_PKEY_new_raw_private_key(
                        EVP_PKEY_ED25519, nullptr,
                        reinterpret_cast<const unsigned char*>(key.seed.data()), kKeyBytes)
                  : nullptr,
              EVP_PKEY_free);
}

}  // namespace

std::string Base64(std::string_view bytes) {
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto v = (static_cast<unsigned char>(bytes[i]) << 16) |
                   (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                   static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (const std::size_t left = bytes.size() - i; left > 0) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (left == 2) {
      v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    }
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += left == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  auto value = [](char c) -> int {
    const char* at = std::strchr(kAlphabet, c);
    return c != '\0' && at != nullptr ? static_cast<int>(at - kAlphabet) : -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=') {
        if (!last || j < 2) {
          return std::nullopt;  // padding only at the very end, at most two
        }
        ++pad;
        v[j] = 0;
      } else {
        if (pad > 0) {
          return std::nullopt;  // nothing after padding
        }
        v[j] = value(c);
        if (v[j] < 0) {
          return std::nullopt;
        }
      }
    }
    const unsigned n = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                       (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
    // Canonical only: the bits padding drops must be zero.
    if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0)) {
      return std::nullopt;
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) {
      out += static_cast<char>((n >> 8) & 0xff);
    }
    if (pad < 1) {
      out += static_cast<char>(n & 0xff);
    }
  }
  return out;
}

Result<PrivateKey> GenerateKey() {
  PrivateKey key;
  key.seed.resize(kKeyBytes);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.seed.data()), kKeyBytes) != 1) {
    return Status::Internal("the system's random source gave no bytes for a key");
  }
  return key;
}

Result<PrivateKey> KeyFromSeed(std::string_view seed) {
  if (seed.size() != kKeyBytes) {
    return Status::InvalidArgument("an Ed25519 secret key is 32 bytes, not " +
                                   std::to_string(seed.size()));
  }
  return PrivateKey{std::string(seed)};
}

Result<std::string> PublicKeyOf(const PrivateKey& key) {
  Pkey pkey = PrivatePkey(key);
  unsigned char pub[kKeyBytes];
  std::size_t n = sizeof pub;
  if (pkey == nullptr || EVP_PKEY_get_raw_public_key(pkey.get(), pub, &n) != 1 || n != kKeyBytes) {
    return Status::InvalidArgument("not an Ed25519 private key");
  }
  return Base64(std::string_view(reinterpret_cast<const char*>(pub), n));
}

Status WritePrivateKey(const std::string& path, const PrivateKey& key) {
  Pkey pkey = PrivatePkey(key);
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  if (pkey == nullptr || bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), pkey.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Status::Internal("cannot encode the private key");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError(
        "cannot create the key file \"" + path + "\": " + std::strerror(errno) +
        (errno == EEXIST ? " (a key is never overwritten: move it away first)" : ""));
  }
  const bool ok = ::write(fd, data, static_cast<std::size_t>(size)) == size && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return Status::IoError("cannot write the key file \"" + path + "\"");
  }
  return Status::Ok();
}

Result<PrivateKey> ReadPrivateKey(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::NotFound("key file \"" + path + "\" cannot be read: " + std::strerror(errno) +
                            " (make one with: molt keys init)");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::FailedPrecondition("key file \"" + path +
                                      "\" can be read by others: chmod 600 it (a private key "
                                      "is its owner's alone)");
  }
  Bio bio(BIO_new_file(path.c_str(), "r"), BIO_free);
  Pkey pkey(
      bio != nullptr ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr,
      EVP_PKEY_free);
  unsigned char seed[kKeyBytes];
  std::size_t n = sizeof seed;
  if (pkey == nullptr || EVP_PKEY_get_base_id(pkey.get()) != EVP_PKEY_ED25519 ||
      EVP_PKEY_get_raw_private_key(pkey.get(), seed, &n) != 1 || n != kKeyBytes) {
    return Status::InvalidArgument("key file \"" + path +
                                   "\" holds no Ed25519 private key (PEM, as molt keys init "
                                   "writes)");
  }
  return PrivateKey{std::string(reinterpret_cast<const char*>(seed), n)};
}

Result<std::string> Sign(const PrivateKey& key, std::string_view message) {
  Pkey pkey = PrivatePkey(key);
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char sig[kSignatureBytes];
  std::size_t n = sizeof sig;
  if (pkey == nullptr || ctx == nullptr ||
      EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &n, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1) {
    return Status::Internal("Ed25519 signing failed");
  }
  return Base64(std::string_view(reinterpret_cast<const char*>(sig), n));
}

bool Verify(std::string_view public_key, std::string_view message, std::string_view signature) {
  if (signature.size() > kMaxSignatureField) {
    return false;
  }
  const std::optional<std::string> pub = DecodeBase64(public_key);
  const std::optional<std::string> sig = DecodeBase64(signature);
  if (!pub || !sig || pub->size() != kKeyBytes || sig->size() != kSignatureBytes) {
    return false;
  }
  Pkey pkey(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                  reinterpret_cast<const unsigned char*>(pub->data()), kKeyBytes),
      EVP_PKEY_free);
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return pkey != nullptr && ctx != nullptr &&
         EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig->data()),
                          sig->size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

std::string Fingerprint(std::string_view public_key) {
  const std::optional<std::string> raw = DecodeBase64(public_key);
  if (!raw || raw->size() != kKeyBytes) {
    return "";
  }
  return Sha256Hex(*raw).substr(0, 8);
}

std::string CanonicalDeploy(const DeployFields& d) {
  return "molt1\n" + d.branch + "\n" + d.build + "\n" + d.build_id + "\n" + std::to_string(d.seq) +
         "\n" + d.commit + "\n" + d.channel + "\n" + std::to_string(d.sent_ms) + "\n" + d.reason;
}

std::string CanonicalPin(const PinFields& p) {
  return "molt1pin\n" + p.branch + "\n" + p.build + "\n" + p.servers + "\n" +
         (p.pct == 0 ? std::string() : std::to_string(p.pct)) + "\n" + p.by + "\n" +
         std::to_string(p.sent_ms) + "\n" + (p.unpin ? "1" : "");
}

}  // namespace molt::kernel::loader

// SPDX-License-Identifier: Apache-2.0
// File: tests/support/test_pki.h
//
// A certificate authority and server certificates made at test time (OpenSSL, P-256 keys), as
// PEM files in a directory:
//   ca.pem                       the test CA (trusted by the tests' clients)
//   server.pem / server.key      localhost and 127.0.0.1, signed by the CA, valid now
//   expired.pem / expired.key    the same names, signed by the CA, expired yesterday
//   elsewhere.pem / elsewhere.key  elsewhere.example only, signed by the CA
//   self.pem / self.key          localhost and 127.0.0.1, self-signed (nobody trusts it)
#ifndef MOLT_TESTS_SUPPORT_TEST_PKI_H_
#define MOLT_TESTS_SUPPORT_TEST_PKI_H_

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace molt::test {

class TestPki {
 public:
  explicit TestPki(std::string dir) : dir_(std::move(dir)) {
    EVP_PKEY* ca_key = EVP_EC_gen("P-256");
    X509* ca = Cert(ca_key, "Molt Test CA", nullptr, nullptr, nullptr, 0, kDay);
    Write("ca.pem", ca, "", nullptr);
    const char* here = "DNS:localhost,IP:127.0.0.1";
    Issue("server", here, ca, ca_key, -kDay, kDay);
    Issue("expired", here, ca, ca_key, -2 * kDay, -kDay);
    Issue("elsewhere", "DNS:elsewhere.example", ca, ca_key, -kDay, kDay);
    Issue("self", here, nullptr, nullptr, -kDay, kDay);
    X509_free(ca);
    EVP_PKEY_free(ca_key);
  }
  std::string path(const std::string& file) const { return dir_ + "/" + file; }

 private:
  static constexpr long kDay = 24 * 3600;

  void Issue(const std::string& name, const char* san, X509* ca, EVP_PKEY* ca_key, long not_before,
             long not_after) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = Cert(key, name.c_str(), san, ca, ca_key, not_before, not_after);
    Write(name + ".pem", cert, name + ".key", key);
    X509_free(cert);
    EVP_PKEY_free(key);
  }

  // `issuer` null: a CA certificate when `san` is null, else self-signed for `san`.
  static X509* Cert(EVP_PKEY* key, const char* cn, const char* san, X509* issuer,
                    EVP_PKEY* issuer_key, long not_before, long not_after) {
    static long serial = 1;
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), not_before);
    X509_gmtime_adj(X509_getm_notAfter(x), not_after);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                               -1, -1, 0);
    X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x, x, nullptr, nullptr, 0);
    auto add = [&](int nid, const char* value) {
      X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      if (e == nullptr) {
        throw std::runtime_error(std::string("test pki: bad extension ") + value);
      }
      X509_add_ext(x, e, -1);
      X509_EXTENSION_free(e);
    };
    if (san == nullptr) {
      add(NID_basic_constraints, "critical,CA:TRUE");
      add(NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      add(NID_basic_constraints, "CA:FALSE");
      add(NID_subject_alt_name, san);
      add(NID_ext_key_usage, "serverAuth");
    }
    X509_sign(x, issuer_key != nullptr ? issuer_key : key, EVP_sha256());
    return x;
  }

  void Write(const std::string& cert_file, X509* cert, const std::string& key_file,
             EVP_PKEY* key) const {
    FILE* f = std::fopen(path(cert_file).c_str(), "w");
    if (f == nullptr) {
      throw std::runtime_error("test pki: cannot write " + path(cert_file));
    }
    PEM_write_X509(f, cert);
    std::fclose(f);
    if (key != nullptr) {
      f = std::fopen(path(key_file).c_str(), "w");
      PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
      std::fclose(f);
    }
  }

  std::string dir_;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_TEST_PKI_H_

// SPDX-License-Identifier: Apache-2.0
// Ed25519 for deploys (loader/signing.h): RFC 8032's test vectors, strict base64, key files,
// fingerprints and the canonical strings, byte for byte.
#include "kernel/src/loader/signing.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

std::string FromHex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

struct Vector {
  const char* secret;
  const char* public_key;
  const char* message;
  const char* signature;
};

// RFC 8032, section 7.1, TEST 1 to 3.
constexpr Vector kRfc8032[] = {
    {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b"
     "4"
     "6bd25bf5f0595bbe24655141438e7a100b"},
    {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11"
     "d"
     "8c387b2eaeb4302aeeb00d291612bb0c00"},
    {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc"
     "6"
     "594a7c15e9716ed28dc027beceea1ec40a"},
};

TEST(SigningTest, Rfc8032VectorsSignAndVerify) {
  for (const Vector& v : kRfc8032) {
    Result<PrivateKey> key = KeyFromSeed(FromHex(v.secret));
    ASSERT_TRUE(key.ok());
    const std::string pub = Base64(FromHex(v.public_key));
    EXPECT_EQ(PublicKeyOf(*key).value(), pub);
    const std::string message = FromHex(v.message);
    const std::string sig = Sign(*key, message).value();
    EXPECT_EQ(sig, Base64(FromHex(v.signature)));
    EXPECT_TRUE(Verify(pub, message, sig));
    // One bit changed anywhere, and it fails.
    EXPECT_FALSE(Verify(pub, message + "x", sig));
    std::string bad = FromHex(v.signature);
    bad[10] = static_cast<char>(bad[10] ^ 1);
    EXPECT_FALSE(Verify(pub, message, Base64(bad)));
    std::string other = FromHex(v.public_key);
    other[0] = static_cast<char>(other[0] ^ 1);
    EXPECT_FALSE(Verify(Base64(other), message, sig));
  }
}

TEST(SigningTest, Base64IsStandardAndDecodedStrictly) {
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(DecodeBase64("Zm9vYmFy").value(), "foobar");
  EXPECT_EQ(DecodeBase64("Zg==").value(), "f");
  EXPECT_EQ(DecodeBase64("Zm8=").value(), "fo");
  for (const char* bad :
       {"Zg", "Zg=", "Z===", "Zg==Zg==", "Zm9v\n", "Zm 9", "Zh==", "Zm9=", "Zm-_", "=Zm9"}) {
    EXPECT_FALSE(DecodeBase64(bad).has_value()) << bad;
  }
  // A signature field over 100 characters is not looked at.
  const Vector& v = kRfc8032[1];
  const std::string pub = Base64(FromHex(v.public_key));
  EXPECT_FALSE(
      Verify(pub, FromHex(v.message), Base64(FromHex(v.signature)) + std::string(20, 'A')));
  EXPECT_FALSE(Verify("not base64", "", ""));
}

TEST(SigningTest, FingerprintsAreTheFirstEightHexOfTheKeysHash) {
  const std::string pub = Base64(FromHex(kRfc8032[0].public_key));
  const std::string fp = Fingerprint(pub);
  ASSERT_EQ(fp.size(), 8u);
  EXPECT_EQ(fp, Sha256Hex(FromHex(kRfc8032[0].public_key)).substr(0, 8));
  EXPECT_EQ(Fingerprint("AAAA"), "");  // not 32 bytes
}

TEST(SigningTest, KeyFilesAreMode0600NeverOverwrittenAndRefusedWhenOthersCanRead) {
  const std::string dir = ::testing::TempDir() + "molt_keys_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = dir + "/main.key";
  PrivateKey key = GenerateKey().value();
  ASSERT_TRUE(WritePrivateKey(path, key).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result<PrivateKey> back = ReadPrivateKey(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(PublicKeyOf(*back).value(), PublicKeyOf(key).value());
  Status again = WritePrivateKey(path, GenerateKey().value());
  EXPECT_NE(again.message().find("a key is never overwritten"), std::string::npos)
      << again.message();
  EXPECT_EQ(PublicKeyOf(ReadPrivateKey(path).value()).value(), PublicKeyOf(key).value());
  ::chmod(path.c_str(), 0644);
  EXPECT_NE(ReadPrivateKey(path).status().message().find("can be read by others: chmod 600"),
            std::string::npos);
  EXPECT_NE(ReadPrivateKey(dir + "/none.key").status().message().find("molt keys init"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(SigningTest, CanonicalStringsAreByteExact) {
  DeployFields d;
  d.branch = "prod";
  d.build = std::string(64, 'a');
  d.build_id = "12b63b9-3fa91c";
  d.seq = 42;
  d.commit = "12b63b9";
  d.channel = "prod";
  d.sent_ms = 1796281370952;
  EXPECT_EQ(CanonicalDeploy(d), "molt1\nprod\n" + std::string(64, 'a') +
                                    "\n12b63b9-3fa91c\n42\n12b63b9\nprod\n1796281370952\n");
  d.reason = "1";
  EXPECT_EQ(CanonicalDeploy(d).substr(CanonicalDeploy(d).size() - 2), "\n1");
  PinFields p;
  p.branch = "prod";
  p.build = "b";
  p.servers = "s1,s2";
  p.by = "ops";
  p.sent_ms = 7;
  EXPECT_EQ(CanonicalPin(p), "molt1pin\nprod\nb\ns1,s2\n\nops\n7\n");
  p.pct = 25;
  p.unpin = true;
  EXPECT_EQ(CanonicalPin(p), "molt1pin\nprod\nb\ns1,s2\n25\nops\n7\n1");
}

}  // namespace
}  // namespace molt::kernel::loader

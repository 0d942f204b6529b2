// SPDX-License-Identifier: Apache-2.0
// A client of one earlier wire protocol: built with the frozen schema of that protocol version
// (tests/sdk/compat/wire-<N>/molt_wire.fbs, compiled by flatc into this program's own include
// directory), it sends the Hello that version's client library sent and prints how today's
// server answers, decoded with that version's schema. On plain POSIX sockets; run by
// compat_test.cc against a real moltd.
//
//   compat_wire_client PORT    prints "Welcome session=<id> channels=<n>" or
//                              "Refuse <reason>: <text>"; exit 0 when a frame was read
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "molt_wire_generated.h"

namespace {

namespace w = ::molt::wire;

bool ReadExactly(int fd, std::uint8_t* out, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) {
      return false;
    }
    const ssize_t n = ::read(fd, out + got, size - got);
    if (n <= 0) {
      return false;
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: compat_wire_client PORT\n");
    return 2;
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[1])));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("compat_wire_client: connect");
    return 1;
  }
  // The Hello as that version's client library built it: no protocol hash, user "ada".
  flatbuffers::FlatBufferBuilder b(256);
  const std::vector<std::uint8_t> none;
  auto hello = w::CreateHelloDirect(b, MOLT_WIRE_VERSION, 0, "ada", &none, &none, &none);
  b.FinishSizePrefixed(w::CreateEnvelope(b, w::Body::Hello, hello.Union()));
  if (::write(fd, b.GetBufferPointer(), b.GetSize()) != static_cast<ssize_t>(b.GetSize())) {
    std::perror("compat_wire_client: write");
    return 1;
  }
  // The frame with its length prefix, 8-byte aligned: FlatBuffers reads fields in place.
  std::uint32_t size = 0;
  if (!ReadExactly(fd, reinterpret_cast<std::uint8_t*>(&size), 4) || size == 0 ||
      size > (1u << 20)) {
    std::fprintf(stderr, "compat_wire_client: no frame from the server\n");
    return 1;
  }
  std::vector<std::uint64_t> frame((4 + std::size_t{size} + 7) / 8);
  auto* bytes = reinterpret_cast<std::uint8_t*>(frame.data());
  std::memcpy(bytes, &size, 4);
  if (!ReadExactly(fd, bytes + 4, size)) {
    std::fprintf(stderr, "compat_wire_client: a frame of %u bytes was cut short\n", size);
    return 1;
  }
  flatbuffers::Verifier v(bytes, 4 + std::size_t{size});
  if (!w::VerifySizePrefixedEnvelopeBuffer(v)) {
    std::fprintf(stderr, "compat_wire_client: the frame does not verify with this schema\n");
    return 1;
  }
  const w::Envelope* env = w::GetSizePrefixedEnvelope(bytes);
  if (const w::Welcome* m = env->body_as_Welcome()) {
    std::printf("Welcome session=%llu channels=%u\n",
                static_cast<unsigned long long>(m->session_id()),
                m->channels() != nullptr ? m->channels()->size() : 0u);
  } else if (const w::Refuse* r = env->body_as_Refuse()) {
    std::printf("Refuse %s: %s\n", w::EnumNameRefuseReason(r->reason()),
                r->text() != nullptr ? r->text()->c_str() : "");
  } else {
    std::printf("unexpected body %d\n", static_cast<int>(env->body_type()));
  }
  ::close(fd);
  return 0;
}

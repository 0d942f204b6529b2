// SPDX-License-Identifier: Apache-2.0
// The struct-size rule (kernel/src/abi/struct_size.h) on a struct that has grown twice: what an
// older caller gives reads as zeros past its end, a newer caller's extra bytes are ignored, and a
// size below the first release's is refused with the struct's name, the size and the minimum.
#include "kernel/src/abi/struct_size.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace {

// Release 1 had `a`; release 2 appended `b`; this host knows `c` too.
struct grown_struct {
  std::uint32_t struct_size;
  std::uint32_t a;
  std::uint64_t b;
  std::uint64_t c;
};
constexpr std::uint32_t kRelease1 = offsetof(grown_struct, b);
constexpr std::uint32_t kRelease2 = offsetof(grown_struct, c);

}  // namespace

template <>
struct molt::kernel::abi::SizedStruct<grown_struct> {
  static constexpr const char* kName = "grown_struct";
  static constexpr const char* kSince = "ABI 1.7";
  static constexpr std::uint32_t kMinSize = kRelease1;
};

namespace molt::kernel::abi {
namespace {

TEST(StructSizeTest, FieldsAnOlderCallerDidNotHaveReadAsZero) {
  // The caller's memory past its struct_size is not its struct: it must never be read.
  grown_struct given{kRelease1, 7, 0xbad, 0xbad};
  Result<grown_struct> read = ReadSized(given);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->struct_size, kRelease1);
  EXPECT_EQ(read->a, 7u);
  EXPECT_EQ(read->b, 0u);
  EXPECT_EQ(read->c, 0u);
  given.struct_size = kRelease2;
  read = ReadSized(given);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->b, 0xbadu);
  EXPECT_EQ(read->c, 0u);
}

TEST(StructSizeTest, ANewerCallersExtraBytesAreIgnored) {
  struct {
    grown_struct known;
    std::uint64_t appended_later;
  } newer{{sizeof newer, 1, 2, 3}, 4};
  Result<grown_struct> read = ReadSized(newer.known);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->struct_size, sizeof newer);
  EXPECT_EQ(read->c, 3u);
}

TEST(StructSizeTest, ASizeBelowTheFirstReleaseIsRefusedWithBothSizes) {
  grown_struct given{kRelease1 - 1, 7, 0, 0};
  Result<grown_struct> read = ReadSized(given);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "grown_struct.struct_size is 7, below 8 (its size in ABI 1.7, the smallest accepted): "
            "set it to sizeof(grown_struct)");
}

TEST(StructSizeTest, WriteSizedFillsOnlyWhatTheCallersStructHas) {
  struct {
    grown_struct s;
  } out{{kRelease2, 0, 0, 0xcafe}};  // `c` is past the caller's struct: not ours to write
  const grown_struct value{sizeof(grown_struct), 1, 2, 3};
  ASSERT_TRUE(WriteSized(value, &out.s).ok());
  EXPECT_EQ(out.s.struct_size, kRelease2);
  EXPECT_EQ(out.s.a, 1u);
  EXPECT_EQ(out.s.b, 2u);
  EXPECT_EQ(out.s.c, 0xcafeu);
  out.s.struct_size = 4;
  EXPECT_FALSE(WriteSized(value, &out.s).ok());
  EXPECT_EQ(out.s.a, 1u);  // untouched on refusal
}

}  // namespace
}  // namespace molt::kernel::abi

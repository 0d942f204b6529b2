// SPDX-License-Identifier: Apache-2.0
// RelayStats (hosts/molt-relay/relay_stats.h): the one JSON line molt-relay prints on exit, with
// every count of both directions.
#include "hosts/molt-relay/relay_stats.h"

#include <gtest/gtest.h>

namespace molt::relay {
namespace {

TEST(RelayStatsTest, JsonLineHasEveryCountOfBothDirections) {
  RelayStats stats;
  stats.to_server = DirectionStats{10, 11, 1, 2, 3, 0, 0, 100, 110};
  stats.to_client = DirectionStats{11, 9, 2, 0, 1, 0, 0, 110, 90};
  stats.clients = 2;
  stats.rebinds = 1;
  EXPECT_EQ(stats.ToJson(),
            "{\"to_server\":{\"in\":10,\"out\":11,\"dropped\":1,\"duplicated\":2,\"reordered\":3,"
            "\"send_errors\":0,\"pending\":0,\"bytes_in\":100,\"bytes_out\":110},"
            "\"to_client\":{\"in\":11,\"out\":9,\"dropped\":2,\"duplicated\":0,\"reordered\":1,"
            "\"send_errors\":0,\"pending\":0,\"bytes_in\":110,\"bytes_out\":90},"
            "\"clients\":2,\"rebinds\":1}");
  EXPECT_EQ(stats.ToJson().find('\n'), std::string::npos);
}

TEST(RelayStatsTest, NothingRelayedIsAllZeros) {
  EXPECT_EQ(RelayStats().ToJson(),
            "{\"to_server\":{\"in\":0,\"out\":0,\"dropped\":0,\"duplicated\":0,\"reordered\":0,"
            "\"send_errors\":0,\"pending\":0,\"bytes_in\":0,\"bytes_out\":0},"
            "\"to_client\":{\"in\":0,\"out\":0,\"dropped\":0,\"duplicated\":0,\"reordered\":0,"
            "\"send_errors\":0,\"pending\":0,\"bytes_in\":0,\"bytes_out\":0},"
            "\"clients\":0,\"rebinds\":0}");
}

}  // namespace
}  // namespace molt::relay

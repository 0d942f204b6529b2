// SPDX-License-Identifier: Apache-2.0
// custom_host: a server host of your own around the Molt kernel. It serves the plugins of one
// directory on a port of its choosing, with its own defaults, until SIGTERM or SIGINT.
//
//   custom_host PLUGIN_DIR DATA_DIR PORT
#include <molt/kernel/server.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: custom_host PLUGIN_DIR DATA_DIR PORT\n");
    return 2;
  }
  molt::kernel::ServerOptions options;
  options.plugin_dir = argv[1];
  options.data_dir = argv[2];
  options.port = std::atoi(argv[3]);
  options.tick_rate = 30;         // this game needs no more
  options.admin = "127.0.0.1:0";  // the admin endpoint on a free port (moltd's is 7778)
  return molt::kernel::RunServer(options);
}

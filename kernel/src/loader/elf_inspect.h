// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/elf_inspect.h
//
// ElfExports: what a shared library offers the dynamic linker, read from its file before it is
// loaded: the symbols it exports (.dynsym entries defined here, global or weak or GNU-unique, with
// default or protected visibility), which of them are STB_GNU_UNIQUE, and whether it is marked
// DF_1_NODELETE. The loader refuses plugins that export more than their entry symbol, and keeps
// (never dlcloses) libraries that cannot be unloaded.
//
// Thread safety: a pure function.
#ifndef MOLT_KERNEL_LOADER_ELF_INSPECT_H_
#define MOLT_KERNEL_LOADER_ELF_INSPECT_H_

#include <molt/kernel/status.h>

#include <string>
#include <vector>

namespace molt::kernel::loader {

struct ElfExports {
  std::vector<std::string> symbols;         // every exported defined symbol
  std::vector<std::string> unique_symbols;  // the STB_GNU_UNIQUE ones among them
  bool nodelete = false;                    // DF_1_NODELETE: dlclose never unmaps it
};

// Reads `path` (a 64-bit little-endian ELF shared object). Errors name the file (as
// `display_name` when given, e.g. the original of a copy) and the problem.
Result<ElfExports> InspectElf(const std::string& path, const std::string& display_name = {});

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_ELF_INSPECT_H_

// SPDX-License-Identifier: Apache-2.0
// ElfExports: section headers -> .dynsym/.dynstr and .dynamic, with every offset bounds-checked
// (a hostile file must give an error, never a crash).
#include "kernel/src/loader/elf_inspect.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace molt::kernel::loader {
namespace {

template <class T>
bool ReadAt(const std::vector<char>& file, std::uint64_t offset, T* out) {
  if (offset > file.size() || file.size() - offset < sizeof(T)) {
    return false;
  }
  std::memcpy(out, file.data() + offset, sizeof(T));
  return true;
}

}  // namespace

Result<ElfExports> InspectElf(const std::string& path, const std::string& display_name) {
  const std::string where =
      "plugin file \"" + (display_name.empty() ? path : display_name) + "\": ";
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return Status::IoError(where + "cannot be read");
  }
  // One read of the whole file (a byte-wise istreambuf_iterator cost a reload ~20 ms).
  std::vector<char> file(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(file.data(), static_cast<std::streamsize>(file.size()))) {
    return Status::IoError(where + "cannot be read");
  }
  Elf64_Ehdr eh;
  if (!ReadAt(file, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return Status::InvalidArgument(where + "not an ELF shared library");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return Status::InvalidArgument(where + "not a 64-bit little-endian ELF file");
  }
  if (eh.e_type != ET_DYN) {
    return Status::InvalidArgument(where + "not a shared library (ELF type " +
                                   std::to_string(eh.e_type) + ")");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return Status::InvalidArgument(where + "malformed section header table");
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!ReadAt(file, eh.e_shoff + i * sizeof(Elf64_Shdr), &sections[i])) {
      return Status::InvalidArgument(where + "truncated section header table");
    }
  }
  ElfExports out;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type == SHT_DYNSYM) {
      if (sh.sh_link >= sections.size() || sh.sh_entsize != sizeof(Elf64_Sym)) {
        return Status::InvalidArgument(where + "malformed .dynsym section");
      }
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        if (!ReadAt(file, sh.sh_offset + off, &sym)) {
          return Status::InvalidArgument(where + "truncated .dynsym section");
        }
        const unsigned bind = ELF64_ST_BIND(sym.st_info);
        const unsigned type = ELF64_ST_TYPE(sym.st_info);
        const unsigned vis = ELF64_ST_VISIBILITY(sym.st_other);
        const bool exported = sym.st_shndx != SHN_UNDEF &&
                              (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
                              (vis == STV_DEFAULT || vis == STV_PROTECTED) && type != STT_SECTION &&
                              type != STT_FILE;
        if (!exported || sym.st_name >= strtab.sh_size) {
          continue;
        }
        const std::uint64_t name_at = strtab.sh_offset + sym.st_name;
        if (name_at >= file.size()) {
          return Status::InvalidArgument(where + "symbol name outside the file");
        }
        const char* name = file.data() + name_at;
        const std::size_t max = file.size() - name_at;
        const std::string symbol(name, strnlen(name, max));
        if (symbol.empty()) {
          continue;
        }
        out.symbols.push_back(symbol);
        if (bind == STB_GNU_UNIQUE) {
          out.unique_symbols.push_back(symbol);
        }
      }
    } else if (sh.sh_type == SHT_DYNAMIC) {
      for (std::uint64_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn;
        if (!ReadAt(file, sh.sh_offset + off, &dyn)) {
          return Status::InvalidArgument(where + "truncated .dynamic section");
        }
        if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_NODELETE) != 0) {
          out.nodelete = true;
        }
        if (dyn.d_tag == DT_NULL) {
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace molt::kernel::loader

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_declaration.h
//
// ProfileDeclaration: the declaration a profile store (Profiles, profiles.h) is run by, as it
// comes and goes with the plugin generations. It holds the spec in force and its defaults, parsed
// once; it decodes a stored document (parsed, migrated one schema version at a time, defaults
// filled in) and gates every save with the spec's validate. Detach() lets the plugin's callbacks
// go (a swap, a stop): every changed document is validated first and the verdict kept on its
// entry, so the saves made while no build is attached keep the gate. Adopt() takes the next
// declaration of the store: the loaded documents are migrated to its schema version, all or none,
// and the ones a migration replaced are kept until the swap ends, so that a failed swap's
// restored build (at the older version) takes them back.
//
//   ProfileDeclaration declaration(std::move(spec), LogScope("Profiles PlayerData"));
//   bool changed = false;
//   Result<boost::json::value> doc = declaration.Decode(stored, 1, "profile \"PlayerData/ada\"",
//                                                       &changed);
//   declaration.Detach(entries);                    // the declaring instance stopped
//   MOLT_RETURN_IF_ERROR(declaration.Adopt(std::move(next), entries));
//
// Thread safety: the kernel thread.
#ifndef MOLT_KERNEL_STORE_PROFILE_DECLARATION_H_
#define MOLT_KERNEL_STORE_PROFILE_DECLARATION_H_

#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernel/src/core/logger.h"
#include "kernel/src/store/profile_entries.h"
#include "kernel/src/store/profile_spec.h"

namespace molt::kernel::store {

class ProfileDeclaration {
 public:
  // `spec`'s defaults are parsed once; when they are not a JSON object the error is logged and
  // profiles get no defaults.
  ProfileDeclaration(ProfileSpec spec, LogScope log);
  ProfileDeclaration(const ProfileDeclaration&) = delete;
  ProfileDeclaration& operator=(const ProfileDeclaration&) = delete;

  const ProfileSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  // A declaration holds the store (false between Detach() and Adopt()).
  bool attached() const { return attached_; }

  // A new profile's document: the defaults.
  boost::json::value Fresh() const;
  // The document as stored (`data`, at schema version `from`): parsed, migrated, defaults filled;
  // `changed` when it differs from what is stored. Errors name `where`.
  Result<boost::json::value> Decode(const std::string& data, std::uint32_t from,
                                    const std::string& where, bool* changed) const;
  // spec.validate's verdict on `text`, `e`'s document; while detached, the one kept at Detach()
  // for the version `e` is at (OK when there is none).
  Status Validate(const ProfileEntry& e, const std::string& text) const;
  // The wait before load or save attempt `attempt` (0, 1, ...): spec.backoff's, the last one
  // repeating; 1 s when it is empty.
  Duration Backoff(std::uint32_t attempt) const;

  // The declaring instance lets go: validates every changed document of `entries` (the verdicts
  // stand until the document changes), then drops migrate and validate.
  void Detach(ProfileEntries& entries);
  // A new declaration of this store: `spec` replaces the old one (same name). Loaded documents
  // are migrated from the schema version they are at to spec.schema_version, all or none (an
  // error names the key and changes nothing); a lower schema version than the documents have is
  // refused while any is loaded, unless it is the one a failed swap restores (the documents go
  // back). Defaults fill in; changed documents are dirty.
  Status Adopt(ProfileSpec spec, ProfileEntries& entries);
  // Forgets the documents Adopt()'s migration replaced (the swap ended).
  void ForgetUndo();

 private:
  struct Undo {
    std::uint32_t schema_version = 0;  // of `docs`
    std::map<net::SessionId, boost::json::value> docs;
  };
  // The loaded documents of `entries` migrated to `spec`'s schema version (or taken back from
  // undo_ when `take_back`), those that change only; what they were goes to `undo`.
  Result<std::map<net::SessionId, boost::json::value>> Migrate(const ProfileSpec& spec,
                                                               const ProfileEntries& entries,
                                                               bool take_back, Undo& undo) const;
  // `spec` and `defaults` in force, `migrated` in place, defaults filled in every loaded entry.
  void Install(ProfileSpec spec, boost::json::value defaults,
               std::map<net::SessionId, boost::json::value> migrated, ProfileEntries& entries);

  ProfileSpec spec_;
  const LogScope log_;                            // "[Profiles <name>]"
  std::unique_ptr<boost::json::value> defaults_;  // spec_.defaults, parsed once
  bool attached_ = true;
  std::unique_ptr<Undo> undo_;  // the documents before the last adoption's migration
};

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_DECLARATION_H_

// SPDX-License-Identifier: Apache-2.0
// ProfileDeclaration: the spec a profile store runs by, its decoding and its gate, across
// declarations that come and go (profile_declaration.h).
#include "kernel/src/store/profile_declaration.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <utility>

#include "kernel/src/store/profile_document.h"

namespace molt::kernel::store {

namespace json = boost::json;

ProfileDeclaration::ProfileDeclaration(ProfileSpec spec, LogScope log)
    : spec_(std::move(spec)), log_(std::move(log)) {
  Result<json::value> defaults = ParseJson(spec_.defaults);
  if (!defaults.ok() || !defaults->is_object()) {
    log_.Error("the defaults are {}: profiles get no defaults (give a JSON object)",
               defaults.ok() ? "not a JSON object" : defaults.status().message());
  }
  defaults_ = std::make_unique<json::value>(
      defaults.ok() && defaults->is_object() ? std::move(defaults).value() : json::object());
}

json::value ProfileDeclaration::Fresh() const {
  json::value doc = json::object();
  FillDefaults(doc, *defaults_);
  return doc;
}

Result<json::value> ProfileDeclaration::Decode(const std::string& data, std::uint32_t from,
                                               const std::string& where, bool* changed) const {
  Result<json::value> parsed = ParseJson(data);
  if (!parsed.ok() || !parsed->is_object()) {
    return Status::InvalidArgument(fmt::format(
        "{} is {}", where, parsed.ok() ? "not a JSON object" : parsed.status().message()));
  }
  MOLT_ASSIGN_OR_RETURN(json::value doc,
                        MigrateDocument(spec_, std::move(parsed).value(), from, where));
  *changed = from != spec_.schema_version;
  *changed = FillDefaults(doc, *defaults_) || *changed;
  return doc;
}

Status ProfileDeclaration::Validate(const ProfileEntry& e, const std::string& text) const {
  if (spec_.validate) {
    return spec_.validate(text);
  }
  return e.verdict && e.verdict_version == e.version ? *e.verdict : Status::Ok();
}

Duration ProfileDeclaration::Backoff(std::uint32_t attempt) const {
  if (spec_.backoff.empty()) {
    return std::chrono::seconds(1);
  }
  return spec_.backoff[std::min<std::size_t>(attempt, spec_.backoff.size() - 1)];
}

void ProfileDeclaration::Detach(ProfileEntries& entries) {
  if (!attached_) {
    return;
  }
  entries.ForEach([this](ProfileEntry& e) {
    if (e.state == ProfileState::kLoaded && e.dirty() && spec_.validate) {
      e.verdict = spec_.validate(json::serialize(e.doc));
      e.verdict_version = e.version;
    }
  });
  spec_.migrate = nullptr;
  spec_.validate = nullptr;
  attached_ = false;
}

void ProfileDeclaration::ForgetUndo() { undo_.reset(); }

Status ProfileDeclaration::Adopt(ProfileSpec spec, ProfileEntries& entries) {
  Result<json::value> defaults = ParseJson(spec.defaults);
  if (!defaults.ok() || !defaults->is_object()) {
    return Status::InvalidArgument(
        fmt::format("the defaults of profile store \"{}\" are {}: give a JSON object", spec.name,
                    defaults.ok() ? "not a JSON object" : defaults.status().message()));
  }
  const std::uint32_t from = spec_.schema_version;
  // A failed swap's restored build takes back what the swap's adoption migrated.
  const bool take_back = spec.schema_version < from && undo_ != nullptr &&
                         undo_->schema_version == spec.schema_version;
  auto undo = std::make_unique<Undo>(Undo{from, {}});
  MOLT_ASSIGN_OR_RETURN(auto migrated, Migrate(spec, entries, take_back, *undo));
  if (take_back) {
    log_.Warn(
        "the documents migrated to schema version {} go back to version {}: the swap that "
        "migrated them failed",
        from, spec.schema_version);
    undo_.reset();
  } else if (spec.schema_version != from) {
    undo_ = std::move(undo);
  }
  Install(std::move(spec), std::move(defaults).value(), std::move(migrated), entries);
  return Status::Ok();
}

Result<std::map<net::SessionId, json::value>> ProfileDeclaration::Migrate(
    const ProfileSpec& spec, const ProfileEntries& entries, bool take_back, Undo& undo) const {
  std::map<net::SessionId, json::value> migrated;
  const std::uint32_t from = spec_.schema_version;
  if (spec.schema_version == from) {
    return migrated;
  }
  for (net::SessionId id : entries.Ids()) {
    const ProfileEntry* e = entries.Find(id);
    if (e->state != ProfileState::kLoaded) {
      continue;
    }
    const json::value* before = nullptr;
    if (take_back) {
      auto it = undo_->docs.find(id);
      before = it != undo_->docs.end() ? &it->second : nullptr;
    }
    if (spec.schema_version < from && before == nullptr) {
      return Status::FailedPrecondition(fmt::format(
          "profile store \"{}\" holds documents at schema version {} (profile \"{}\" is "
          "loaded): a build that reads up to {} cannot take it over; deploy a build at schema "
          "version {} or later",
          spec.name, from, e->key, spec.schema_version, from));
    }
    if (take_back) {
      migrated[id] = *before;
      continue;
    }
    MOLT_ASSIGN_OR_RETURN(json::value doc,
                          MigrateDocument(spec, e->doc, from, "profile \"" + e->key + "\""));
    migrated[id] = std::move(doc);
    undo.docs[id] = e->doc;
  }
  return migrated;
}

void ProfileDeclaration::Install(ProfileSpec spec, json::value defaults,
                                 std::map<net::SessionId, json::value> migrated,
                                 ProfileEntries& entries) {
  spec_ = std::move(spec);
  *defaults_ = std::move(defaults);
  attached_ = true;
  entries.ForEach([this, &migrated](ProfileEntry& e) {
    e.verdict.reset();
    if (e.state != ProfileState::kLoaded) {
      return;
    }
    bool changed = false;
    if (auto it = migrated.find(e.session); it != migrated.end()) {
      e.doc = std::move(it->second);
      changed = true;
    }
    if (FillDefaults(e.doc, *defaults_) || changed) {
      ++e.version;
    }
  });
}

}  // namespace molt::kernel::store

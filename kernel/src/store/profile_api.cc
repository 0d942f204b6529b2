// SPDX-License-Identifier: Apache-2.0
// The host API's profile slots (ABI 1.4) and the layer that ties a declaration to its instance.
#include "kernel/src/store/profile_api.h"

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/src/abi/bridge.h"
#include "kernel/src/abi/struct_size.h"
#include "kernel/src/store/profile_layer.h"
#include "kernel/src/store/profile_registry.h"

namespace molt::kernel::abi {
namespace {

static_assert(static_cast<int>(store::ProfileState::kNone) == MOLT_PROFILE_NONE &&
                  static_cast<int>(store::ProfileState::kPending) == MOLT_PROFILE_PENDING &&
                  static_cast<int>(store::ProfileState::kLoaded) == MOLT_PROFILE_LOADED &&
                  static_cast<int>(store::ProfileState::kFailed) == MOLT_PROFILE_FAILED &&
                  static_cast<int>(store::ProfileState::kLost) == MOLT_PROFILE_LOST,
              "the profile states are the ABI's numbers");

ProfileLayer& LayerOf(PluginInstance& p) {
  // The slots are only in tables whose layers AttachProfiles installed.
  return *p.shared().Layer<ProfileLayer>();
}

// The spec a plugin gave (a current struct, ReadSized), with its callbacks bound to `p`.
Result<store::ProfileSpec> ToProfileSpec(PluginInstance& p, const molt_profile_spec& in) {
  MOLT_RETURN_IF_ERROR(Required(in.name, "spec->name"));
  store::ProfileSpec out;
  out.name = in.name;
  out.defaults = in.defaults_json != nullptr ? in.defaults_json : "{}";
  out.schema_version = in.schema_version;
  auto seconds = [](double s, double fallback, const char* what) -> Result<Duration> {
    if (std::isnan(s) || s < 0 || s > 86400.0 * 365) {
      return Status::InvalidArgument(std::string(what) + " " + std::to_string(s) +
                                     " is not a number of seconds (0 takes the default)");
    }
    return Seconds(s == 0 ? fallback : s);
  };
  Result<Duration> autosave = seconds(in.autosave_seconds, 60, "spec->autosave_seconds");
  Result<Duration> lease = seconds(in.lease_seconds, 180, "spec->lease_seconds");
  if (!autosave.ok() || !lease.ok()) {
    return autosave.ok() ? lease.status() : autosave.status();
  }
  out.autosave = *autosave;
  out.lease_ttl = *lease;
  if (in.backoff_count > 0) {
    if (in.backoff_seconds == nullptr) {
      return Status::InvalidArgument("spec->backoff_seconds is NULL with backoff_count > 0");
    }
    out.backoff.clear();
    for (std::size_t i = 0; i < in.backoff_count; ++i) {
      Result<Duration> d = seconds(in.backoff_seconds[i], 0, "spec->backoff_seconds[i]");
      if (!d.ok() || *d <= Duration::zero()) {
        return Status::InvalidArgument("spec->backoff_seconds[" + std::to_string(i) +
                                       "] must be a delay above 0 s");
      }
      out.backoff.push_back(*d);
    }
  }
  out.kick_on_load_failure = (in.flags & MOLT_PROFILE_NO_KICK) == 0;
  out.mirror = (in.flags & MOLT_PROFILE_MIRROR) != 0;
  if (std::isnan(in.backup_seconds) || in.backup_seconds > 86400.0 * 3650) {
    return Status::InvalidArgument("spec->backup_seconds " + std::to_string(in.backup_seconds) +
                                   " is not a number of seconds (0: daily; below 0: no backups)");
  }
  out.backup_interval = in.backup_seconds < 0    ? Duration::zero()
                        : in.backup_seconds == 0 ? Duration(std::chrono::hours(24))
                                                 : Seconds(in.backup_seconds);
  PluginInstance* inst = &p;
  void* ud = in.user_data;
  if (molt_profile_migrate_fn fn = in.migrate) {
    out.migrate = [inst, fn, ud](std::uint32_t from, std::string doc) -> Result<std::string> {
      std::string next;
      const molt_status_t st = CallPlugin(*inst, [&] {
        return fn(
            ud, from, doc.data(), doc.size(),
            [](void* sink, const void* data, std::size_t size) {
              static_cast<std::string*>(sink)->append(static_cast<const char*>(data), size);
            },
            &next);
      });
      if (st != MOLT_OK) {
        inst->CountCallbackError();
        return Status(AbiCode(st), "plugin \"" + inst->label() + "\": " + inst->CallbackError(st));
      }
      return next;
    };
  }
  if (molt_profile_validate_fn fn = in.validate) {
    out.validate = [inst, fn, ud](std::string_view doc) -> Status {
      const molt_status_t st = CallPlugin(*inst, [&] { return fn(ud, doc.data(), doc.size()); });
      if (st == MOLT_OK) {
        return Status::Ok();
      }
      return Status(AbiCode(st), inst->CallbackError(st));
    };
  }
  return out;
}

molt_status_t ProfileDeclare(molt_context_t* ctx, const molt_profile_spec* given,
                             molt_cleanup_fn release, molt_profile_t* out) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{given, "spec"}, {out, "out_profile"}}));
    MOLT_ASSIGN_OR_RETURN(molt_profile_spec spec, ReadSized(*given));
    MOLT_ASSIGN_OR_RETURN(store::ProfileSpec ps, ToProfileSpec(p, spec));
    MOLT_RETURN_IF_ERROR(store::ProfileRegistry::Check(ps));
    ProfileLayer& layer = LayerOf(p);
    const std::uint32_t id = layer.IdOf(ps.name);
    if (p.dormant()) {
      layer.Stage(p, id, std::move(ps));
    } else if (Result<store::Profiles*> r = layer.registry().Declare(&p, p.label(), std::move(ps));
               !r.ok()) {
      return r.status();
    }
    PluginInstance::Resource r{Kind::kProfile, {}, 0, false, nullptr, release, spec.user_data};
    r.layer_id = id;
    *out = p.Own(std::move(r));
    return Status::Ok();
  });
}

// Runs `fn(profiles)` for a store `p` declared and holds.
template <class F>
molt_status_t WithProfiles(molt_context_t* ctx, molt_profile_t profile, F fn) noexcept {
  return Guard(ctx, [&](PluginInstance& p) -> Status {
    MOLT_ASSIGN_OR_RETURN(PluginInstance::Resource * r,
                          FindKind(p, profile, Kind::kProfile, "profile store"));
    ProfileLayer& layer = LayerOf(p);
    const std::string& name = layer.NameOf(r->layer_id);
    store::Profiles* profiles = layer.registry().Held(&p, name);
    if (profiles == nullptr) {
      return Status::FailedPrecondition("profile store \"" + name + "\" is not held by plugin \"" +
                                        p.label() +
                                        "\" yet: a swap's next generation holds it once it serves");
    }
    return fn(*profiles);
  });
}

molt_status_t ProfileState(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                           std::int32_t* out_state) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out_state, "out_state"));
    *out_state = static_cast<std::int32_t>(profiles.state(session));
    return Status::Ok();
  });
}

molt_status_t ProfileGet(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                         const char* path, molt_bytes_fn sink, void* sink_user_data) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    MOLT_ASSIGN_OR_RETURN(std::string text, profiles.Get(session, path != nullptr ? path : ""));
    ToSink(PluginInstance::From(ctx), sink, sink_user_data, text);
    return Status::Ok();
  });
}

molt_status_t ProfileSet(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                         const char* path, const char* json, std::size_t size) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(RequiredIfAny(json, size, "json", "size"));
    return profiles.Set(session, path != nullptr ? path : "",
                        std::string_view(json != nullptr ? json : "", size));
  });
}

molt_status_t ProfileSave(molt_context_t* ctx, molt_profile_t profile) noexcept {
  return WithProfiles(ctx, profile, [](store::Profiles& profiles) {
    profiles.SaveAll();
    return Status::Ok();
  });
}

molt_status_t ProfileSnapshot(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                              const char* label, std::uint64_t* out_id) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(Required(out_id, "out_id"));
    MOLT_ASSIGN_OR_RETURN(std::uint64_t id,
                          profiles.Snapshot(session, label != nullptr ? label : ""));
    *out_id = id;
    return Status::Ok();
  });
}

molt_status_t ProfileSnapshots(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                               molt_bytes_fn sink, void* sink_user_data) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(Required(reinterpret_cast<const void*>(sink), "sink"));
    MOLT_ASSIGN_OR_RETURN(std::vector<store::SnapshotInfo> list, profiles.Snapshots(session));
    boost::json::array out;
    for (const store::SnapshotInfo& i : list) {
      out.push_back(boost::json::object{{"id", i.id}, {"label", i.label}, {"taken_ms", i.taken}});
    }
    ToSink(PluginInstance::From(ctx), sink, sink_user_data, boost::json::serialize(out));
    return Status::Ok();
  });
}

molt_status_t ProfileRollback(molt_context_t* ctx, molt_profile_t profile, molt_session_t session,
                              std::uint64_t id) noexcept {
  return WithProfiles(ctx, profile,
                      [&](store::Profiles& profiles) { return profiles.Rollback(session, id); });
}

molt_status_t ProfileBackupNow(molt_context_t* ctx, molt_profile_t profile,
                               molt_session_t session) noexcept {
  return WithProfiles(ctx, profile,
                      [&](store::Profiles& profiles) { return profiles.BackupNow(session); });
}

// The status code a transaction's outcome completes with; never one process_wait reports for
// its own failures (MOLT_ERR_STATE, _INVALID_ARGUMENT, _STALE, _CANCELLED). The payload names
// the reason.
Status::Code TxnCode(store::TxnReason reason) {
  switch (reason) {
    case store::TxnReason::kOk:
      return Status::Code::kOk;
    case store::TxnReason::kDuplicateTransaction:
      return Status::Code::kAlreadyExists;
    case store::TxnReason::kProfileInactive:
      return Status::Code::kNotFound;
    case store::TxnReason::kMutatorError:
      return Status::Code::kInternal;
    case store::TxnReason::kSaveAFailed:
    case store::TxnReason::kSaveBFailed:
      return Status::Code::kIoError;
    case store::TxnReason::kAborted:
    case store::TxnReason::kSameProfile:
    case store::TxnReason::kBusy:
      return Status::Code::kRejected;
  }
  return Status::Code::kInternal;
}

molt_status_t ProfileTransact(molt_context_t* ctx, molt_profile_t profile, molt_session_t a,
                              molt_session_t b, const char* id, molt_profile_mutate_fn mutate,
                              void* user_data, molt_completion_t* out) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    if (Status s =
            Required({{reinterpret_cast<const void*>(mutate), "mutate"}, {out, "out_completion"}});
        !s.ok()) {
      return s;
    }
    PluginInstance& p = PluginInstance::From(ctx);
    std::shared_ptr<Completion> completion = OwnCompletion(p, out);
    PluginInstance* inst = &p;
    profiles.Transact(
        id != nullptr ? id : "", a, b,
        [inst, mutate, user_data](std::string& da, std::string& db) -> Status {
          // What the mutator writes to a sink (appended, call after call) replaces a document.
          struct Written {
            std::string text;
            bool any = false;
          } na, nb;
          molt_bytes_fn sink = [](void* to, const void* data, std::size_t size) {
            auto* w = static_cast<Written*>(to);
            w->any = true;
            w->text.append(static_cast<const char*>(data), size);
          };
          const molt_status_t st = CallPlugin(*inst, [&] {
            return mutate(user_data, da.data(), da.size(), db.data(), db.size(), sink, &na, sink,
                          &nb);
          });
          if (st != MOLT_OK) {
            if (st != MOLT_ERR_REJECTED) {
              inst->CountCallbackError();
            }
            return Status(AbiCode(st), inst->CallbackError(st));
          }
          if (na.any) {
            da = std::move(na.text);
          }
          if (nb.any) {
            db = std::move(nb.text);
          }
          return Status::Ok();
        },
        [completion](store::TxnResult result) {
          if (!completion->done()) {
            const std::string payload =
                result.ok()
                    ? std::string()
                    : std::string(store::TxnReasonName(result.reason)) + ": " + result.message;
            completion->Complete(Status(TxnCode(result.reason), payload), payload);
          }
        });
    return Status::Ok();
  });
}

molt_status_t ProfileKeyLoad(molt_context_t* ctx, molt_profile_t profile, const char* key,
                             molt_completion_t* out) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{key, "key"}, {out, "out_completion"}}));
    std::shared_ptr<Completion> completion = OwnCompletion(PluginInstance::From(ctx), out);
    profiles.LoadKey(key, [completion](Status s) {
      if (!completion->done()) {
        const std::string text = s.message();
        completion->Complete(std::move(s), text);
      }
    });
    return Status::Ok();
  });
}

molt_status_t ProfileKeySession(molt_context_t* ctx, molt_profile_t profile, const char* key,
                                molt_session_t* out) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    MOLT_RETURN_IF_ERROR(Required({{key, "key"}, {out, "out_session"}}));
    *out = profiles.KeySession(key);
    return *out != 0 ? Status::Ok()
                     : Status::NotFound("profile \"" + profiles.name() + "/" + key +
                                        "\" is not loaded here: profile_key_load it first");
  });
}

molt_status_t ProfileKeyRelease(molt_context_t* ctx, molt_profile_t profile,
                                const char* key) noexcept {
  return WithProfiles(ctx, profile, [&](store::Profiles& profiles) -> Status {
    if (key == nullptr) {
      profiles.ReleaseAllKeys();
      return Status::Ok();
    }
    return profiles.ReleaseKey(key);
  });
}

}  // namespace

void AttachProfiles(AbiShared& shared, store::ProfileRegistry& registry) {
  shared.AddLayer(std::make_unique<ProfileLayer>(registry));
  molt_host_api& api = shared.mutable_api();
  api.profile_declare = ProfileDeclare;
  api.profile_state = ProfileState;
  api.profile_get = ProfileGet;
  api.profile_set = ProfileSet;
  api.profile_save = ProfileSave;
  api.profile_snapshot = ProfileSnapshot;
  api.profile_snapshots = ProfileSnapshots;
  api.profile_rollback = ProfileRollback;
  api.profile_backup_now = ProfileBackupNow;
  api.profile_transact = ProfileTransact;
  api.profile_key_load = ProfileKeyLoad;
  api.profile_key_session = ProfileKeySession;
  api.profile_key_release = ProfileKeyRelease;
}

}  // namespace molt::kernel::abi

// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/store/profile_document.h
//
// A profile's document as a Boost.JSON value: parsing JSON text, the tokens of a JSON Pointer
// (RFC 6901) and its array indices, reading and writing the value a pointer names, filling the
// fields a document lacks from the defaults, and migrating it one schema version at a time.
// Nothing here knows of sessions, leases or the store: every part of the driver (Profiles,
// profiles.h) that reads or writes a document shares these helpers instead of keeping its own.
//
//   Result<boost::json::value> doc = ParseJson(R"({"coins":1})");
//   FillDefaults(*doc, defaults);                  // adds what `defaults` has and `doc` lacks
//   Result<std::vector<std::string>> path = PointerTokens("/items/0");   // {"items", "0"}
//
// Thread safety: plain functions, no shared state.
#ifndef MOLT_KERNEL_STORE_PROFILE_DOCUMENT_H_
#define MOLT_KERNEL_STORE_PROFILE_DOCUMENT_H_

#include <molt/kernel/status.h>

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/src/store/profile_spec.h"

namespace molt::kernel::store {

// JSON text -> value; kInvalidArgument naming what is wrong ("not valid JSON (...)").
Result<boost::json::value> ParseJson(std::string_view text);

// The tokens of a JSON Pointer, "~0" and "~1" decoded ("" is the whole document: no tokens);
// kInvalidArgument for a path that does not start with '/'.
Result<std::vector<std::string>> PointerTokens(std::string_view pointer);

// An array index token: digits only, within `size` (or == size, and "-", when `append`).
std::optional<std::size_t> PointerIndex(const std::string& token, std::size_t size, bool append);

// The value at `pointer` in `doc`: nullptr when there is nothing there; kInvalidArgument for a
// path that is not a JSON Pointer.
Result<const boost::json::value*> FindPointer(const boost::json::value& doc,
                                              std::string_view pointer);

// Puts `value` at `pointer` in `doc` ("": the whole document, which must be an object): objects
// on the way are created, "-" (or the array's size) appends. Errors name the pointer: kNotFound
// for an array index that is not there, kInvalidArgument for a path through a value that is
// neither object nor array (objects it created on the way before the error stay).
Status SetPointer(boost::json::value& doc, std::string_view pointer, boost::json::value value);

// Fills what `doc` lacks from `defaults`, objects recursively. True when it added anything.
bool FillDefaults(boost::json::value& doc, const boost::json::value& defaults);

// `doc` (at schema version `from`) migrated step by step to spec.schema_version with
// spec.migrate; kFailedPrecondition naming `where` when a step fails, returns what is not a JSON
// object, or is missing.
Result<boost::json::value> MigrateDocument(const ProfileSpec& spec, boost::json::value doc,
                                           std::uint32_t from, const std::string& where);

}  // namespace molt::kernel::store

#endif  // MOLT_KERNEL_STORE_PROFILE_DOCUMENT_H_

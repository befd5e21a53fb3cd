#include "profiles.h"

#ifdef MQLITE_TCK_HAVE_SQLITE
#include "sqlite_profile.h"
#endif
#ifdef MQLITE_TCK_HAVE_MEMORY
#include "memory_profile.h"
#endif
#ifdef MQLITE_TCK_HAVE_POSTGRES
#include <fstream>

#include "postgres_profile.h"
#endif
#ifdef MQLITE_TCK_HAVE_LMDB
#include "lmdb_profile.h"
#endif

namespace mqlite::tck {

std::string KnownStores() {
  std::string s;
#ifdef MQLITE_TCK_HAVE_SQLITE
  s += "sqlite[:DIR] ";
#endif
#ifdef MQLITE_TCK_HAVE_LMDB
  s += "lmdb[:DIR] ";
#endif
#ifdef MQLITE_TCK_HAVE_POSTGRES
  s += "postgres:URL|@FILE ";
#endif
#ifdef MQLITE_TCK_HAVE_MEMORY
  s += "memory[:shared] ";
#endif
  return s.empty() ? "(none built)" : s;
}

Result<StoreProfile> MakeProfile(const std::string& spec, Durability durability) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
#ifdef MQLITE_TCK_HAVE_SQLITE
  if (name == "sqlite") return SqliteTckProfile(arg, durability);
#endif
#ifdef MQLITE_TCK_HAVE_LMDB
  if (name == "lmdb") {
    LmdbOptions o;
    o.durability = durability;
    return LmdbTckProfile(
        arg, o,
        durability == Durability::kNormal ? "lmdb" : "lmdb_" + std::string(DurabilityName(durability)));
  }
#endif
#ifdef MQLITE_TCK_HAVE_POSTGRES
  // postgres:postgresql://... (the server's URL), or postgres:@FILE (a file
  // holding it, as the test cluster writes). Each test gets a schema of its
  // own in that database, dropped afterwards.
  if (name == "postgres") {
    std::string url = arg;
    if (!url.empty() && url[0] == '@') {
      std::ifstream in(url.substr(1));
      if (!in || !std::getline(in, url)) {
        return Status::InvalidArgument("--store postgres:" + arg + ": cannot read a URL from " +
                                       url.substr(1));
      }
    }
    if (url.empty()) {
      return Status::InvalidArgument(
          "--store postgres needs the server: postgres:postgresql://USER@HOST:PORT/DB or "
          "postgres:@FILE");
    }
    PostgresOptions o;
    o.url = url;
    o.durability = durability;
    return PostgresTckProfile(
        o, durability == Durability::kNormal ? "postgres"
                                             : "postgres_" + std::string(DurabilityName(durability)));
  }
#endif
#ifdef MQLITE_TCK_HAVE_MEMORY
  if (name == "memory") {
    if (durability != Durability::kNormal) {
      return Status::InvalidArgument("the memory store has no durability levels (got --durability " +
                                     std::string(DurabilityName(durability)) + ")");
    }
    // memory:shared — several engines over one store object (spec.md §9),
    // where the TckMultiEngine suite runs.
    if (arg == "shared") return MemoryTckProfile(/*shared=*/true);
    if (!arg.empty()) {
      return Status::InvalidArgument("the memory store takes no argument but 'shared' (got '" +
                                     arg + "')");
    }
    return MemoryTckProfile();
  }
#endif
  return Status::InvalidArgument("unknown store '" + name + "' (built: " + KnownStores() + ")");
}

}  // namespace mqlite::tck

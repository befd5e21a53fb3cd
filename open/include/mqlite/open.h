// Stores opened by URL: one function that opens any store built into this
// installation from a string, so tools and applications need not link or
// name each store's options struct (docs/cli.md, "Store URLs").
//
//   sqlite:PATH[?durability=normal|full|process_only&read_only=BOOL]
//   lmdb:DIR[?durability=...&map_size=SIZE&max_map_size=SIZE&read_only=BOOL]
//   postgresql://USER@HOST:PORT/DB[?schema=S&pool_size=N&durability=...&change_feed=BOOL&queue_cache_ms=N&<libpq params>]
//   memory:[?shared=BOOL]
//
// PATH and DIR are taken as written (relative to the working directory),
// after percent-decoding, so a path holding '?' or '%' spells them %3F and
// %25; `sqlite://PATH` and `lmdb://DIR` are accepted too (`sqlite:///abs`).
// SIZE is bytes with an optional binary suffix: 65536, 64KiB, 64MiB, 2GiB
// (K, M, G, T with or without "iB"/"B"). BOOL is true/false, 1/0, on/off,
// yes/no. `postgres://` is the same as `postgresql://`; mqlite's own
// parameters are removed and everything else goes to libpq unchanged.
// `memory:` is a fresh in-process store each time it is opened: nothing
// outlives the Store it returns. read_only=true opens an existing embedded
// store for inspection without its exclusive lock, so the application that
// owns it keeps running (StoreCapabilities::read_only: reads only).
//
// This library links every store the installation was built with; mqlite
// core stays store-free.
#ifndef MQLITE_OPEN_H_
#define MQLITE_OPEN_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/status.h"
#include "mqlite/store.h"

namespace mqlite {

// A parsed store URL. `scheme` is one of KnownStoreSchemes() ("postgres" is
// normalised to "postgresql"); `location` is the decoded PATH or DIR, the
// libpq URL with mqlite's parameters removed, or "" for memory; `params` are
// mqlite's own parameters, decoded, each checked for its store.
struct StoreUrl {
  std::string scheme;
  std::string location;
  std::map<std::string, std::string> params;
};

// Parses and checks `url` without touching anything: InvalidArgument naming
// the fault (no scheme, an unknown scheme — with the built ones listed —, an
// empty path, an unknown or repeated parameter, a bad value).
// Unimplemented when the scheme names a store this installation was built
// without (e.g. postgresql with MQLITE_WITH_POSTGRES=OFF), naming the CMake
// option and the stores that are built.
Result<StoreUrl> ParseStoreUrl(std::string_view url);

// ParseStoreUrl, then the store's own Open*Store. A refused open changes
// nothing and returns the store's status (DbLocked, SchemaVersionMismatch,
// Unavailable, ...); a PostgreSQL error is prefixed with the URL, its
// password shown as ***.
Result<std::unique_ptr<Store>> OpenStoreUrl(std::string_view url);
Result<std::unique_ptr<Store>> OpenStoreUrl(const StoreUrl& url);

// Every scheme mqlite knows ("sqlite", "lmdb", "postgresql", "memory"), and
// those built into this installation, in that order.
std::vector<std::string> KnownStoreSchemes();
std::vector<std::string> BuiltStoreSchemes();

// The URL forms of the built stores, one per line, for --help texts.
std::string StoreUrlHelp();

}  // namespace mqlite

#endif  // MQLITE_OPEN_H_

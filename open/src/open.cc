#include "mqlite/open.h"

#include <cctype>
#include <cstdint>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#ifdef MQLITE_OPEN_HAVE_SQLITE
#include "mqlite/sqlite.h"
#endif
#ifdef MQLITE_OPEN_HAVE_LMDB
#include "mqlite/lmdb.h"
#endif
#ifdef MQLITE_OPEN_HAVE_POSTGRES
#include "mqlite/postgres.h"
#endif
#ifdef MQLITE_OPEN_HAVE_MEMORY
#include "mqlite/memory.h"
#endif

namespace mqlite {
namespace {

struct SchemeInfo {
  const char* scheme;
  const char* form;         // for help and errors
  const char* cmake_option;  // how to build it in
  std::set<std::string> params;
  bool built;
};

const std::vector<SchemeInfo>& Schemes() {
  static const std::vector<SchemeInfo> schemes = {
      {"sqlite", "sqlite:PATH[?durability=normal|full|process_only&read_only=BOOL]",
       "MQLITE_WITH_SQLITE", {"durability", "read_only"},
#ifdef MQLITE_OPEN_HAVE_SQLITE
       true
#else
       false
#endif
      },
      {"lmdb",
       "lmdb:DIR[?durability=normal|full|process_only&map_size=SIZE&max_map_size=SIZE&"
       "read_only=BOOL]",
       "MQLITE_WITH_LMDB",
       {"durability", "map_size", "max_map_size", "read_only"},
#ifdef MQLITE_OPEN_HAVE_LMDB
       true
#else
       false
#endif
      },
      {"postgresql",
       "postgresql://USER@HOST:PORT/DB[?schema=NAME&pool_size=N&durability=normal|full|"
       "process_only&change_feed=BOOL&queue_cache_ms=N&notify_coalesce_ms=N&<libpq parameters>]",
       "MQLITE_WITH_POSTGRES",
       {"durability", "schema", "pool_size", "change_feed", "queue_cache_ms", "notify_coalesce_ms"},
#ifdef MQLITE_OPEN_HAVE_POSTGRES
       true
#else
       false
#endif
      },
      {"memory", "memory:[?shared=BOOL]", "MQLITE_WITH_MEMORY", {"shared"},
#ifdef MQLITE_OPEN_HAVE_MEMORY
       true
#else
       false
#endif
      },
  };
  return schemes;
}

template <typename Strings>
std::string Join(const Strings& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

std::string BuiltList() { return Join(BuiltStoreSchemes()); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view s, std::string_view what) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 1 < s.size() ? HexValue(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("store URL: bad percent-escape in " + std::string(what) +
                                     " '" + std::string(s) + "' (write '%' as %25)");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

Result<bool> ParseBool(const std::string& name, const std::string& v) {
  std::string l;
  for (char c : v) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "true" || l == "1" || l == "on" || l == "yes") return true;
  if (l == "false" || l == "0" || l == "off" || l == "no") return false;
  return Status::InvalidArgument("store URL: " + name + "=" + v +
                                 " is not a boolean (true/false, 1/0, on/off, yes/no)");
}

// Bytes with an optional binary suffix (K, KB, KiB, ... T).
Result<int64_t> ParseSize(const std::string& name, const std::string& v) {
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
  const Status bad = Status::InvalidArgument(
      "store URL: " + name + "=" + v +
      " is not a size (bytes, or a number with K, M, G or T: 65536, 64MiB, 2GiB)");
  if (i == 0 || i > 18) return bad;
  int64_t n = std::stoll(v.substr(0, i));
  std::string suffix;
  for (char c : v.substr(i)) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else {
    const char unit = suffix[0];
    const std::string rest = suffix.substr(1);
    if (rest != "" && rest != "B" && rest != "IB") return bad;
    if (unit == 'K') shift = 10;
    else if (unit == 'M') shift = 20;
    else if (unit == 'G') shift = 30;
    else if (unit == 'T') shift = 40;
    else return bad;
  }
  if (n > (std::numeric_limits<int64_t>::max() >> shift)) return bad;
  return n << shift;
}

Result<int64_t> ParseCount(const std::string& name, const std::string& v) {
  if (v.empty() || v.size() > 9) {
    return Status::InvalidArgument("store URL: " + name + "=" + v + " is not a count");
  }
  for (char c : v) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return Status::InvalidArgument("store URL: " + name + "=" + v + " is not a count");
    }
  }
  return std::stoll(v);
}

// A count within [lo, hi], named with its bounds when it is not.
Status CheckCountIn(const std::string& name, const std::string& v, int64_t lo, int64_t hi) {
  Result<int64_t> n = ParseCount(name, v);
  if (!n.ok()) return n.status();
  if (*n < lo || *n > hi) {
    return Status::InvalidArgument("store URL: " + name + "=" + v + " must be " +
                                   std::to_string(lo) + "–" + std::to_string(hi));
  }
  return Status::OK();
}

Status CheckParam(const std::string& scheme, const std::string& name, const std::string& v) {
  if (name == "durability") {
    if (Result<Durability> d = ParseDurability(v); !d.ok()) {
      return Status::InvalidArgument("store URL: durability=" + v +
                                     " is not normal, full or process_only");
    }
    return Status::OK();
  }
  if (name == "map_size" || name == "max_map_size") return ParseSize(name, v).status();
  if (name == "pool_size") return CheckCountIn(name, v, 1, 1024);
  if (name == "queue_cache_ms") return CheckCountIn(name, v, 0, 3'600'000);
  if (name == "notify_coalesce_ms") return CheckCountIn(name, v, 0, 1'000);
  if (name == "change_feed" || name == "shared" || name == "read_only") {
    return ParseBool(name, v).status();
  }
  if (name == "schema") {
    if (v.empty()) return Status::InvalidArgument("store URL: schema= is empty");
    return Status::OK();  // the store checks the characters and names them
  }
  return Status::InvalidArgument("store URL: '" + name + "' is not a " + scheme + " parameter");
}

// `user:password@` and `password=...` hidden from messages.
std::string Redact(std::string_view url) {
  std::string s(url);
  const size_t scheme_end = s.find("://");
  if (scheme_end != std::string::npos) {
    const size_t auth_begin = scheme_end + 3;
    const size_t at = s.find('@', auth_begin);
    const size_t slash = s.find('/', auth_begin);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = s.find(':', auth_begin);
      if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (size_t p = s.find("password="); p != std::string::npos; p = s.find("password=", p + 1)) {
    size_t end = s.find_first_of("& ", p);
    if (end == std::string::npos) end = s.size();
    s.replace(p + 9, end - p - 9, "***");
  }
  return s;
}

const SchemeInfo* FindScheme(const std::string& scheme) {
  for (const SchemeInfo& s : Schemes()) {
    if (scheme == s.scheme) return &s;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> KnownStoreSchemes() {
  std::vector<std::string> v;
  for (const SchemeInfo& s : Schemes()) v.emplace_back(s.scheme);
  return v;
}

std::vector<std::string> BuiltStoreSchemes() {
  std::vector<std::string> v;
  for (const SchemeInfo& s : Schemes()) {
    if (s.built) v.emplace_back(s.scheme);
  }
  return v;
}

std::string StoreUrlHelp() {
  std::string s;
  for (const SchemeInfo& i : Schemes()) {
    if (i.built) s += std::string("  ") + i.form + "\n";
  }
  return s;
}

Result<StoreUrl> ParseStoreUrl(std::string_view url) {
  const size_t colon = url.find(':');
  std::string scheme(url.substr(0, colon == std::string_view::npos ? 0 : colon));
  bool scheme_ok = !scheme.empty();
  for (char c : scheme) scheme_ok = scheme_ok && std::islower(static_cast<unsigned char>(c));
  if (colon == std::string_view::npos || !scheme_ok) {
    return Status::InvalidArgument("store URL '" + Redact(url) +
                                   "' has no scheme: write SCHEME:LOCATION, one of " +
                                   BuiltList() + " (e.g. sqlite:app.db)");
  }
  if (scheme == "postgres") scheme = "postgresql";
  const SchemeInfo* info = FindScheme(scheme);
  if (info == nullptr) {
    return Status::InvalidArgument("unknown store '" + scheme + "' in '" + Redact(url) +
                                   "' (built into this installation: " + BuiltList() + ")");
  }
  if (!info->built) {
    return Status::Unimplemented("the " + scheme +
                                 " store is not built into this installation (built: " +
                                 BuiltList() + "); rebuild mqlite with -D" + info->cmake_option +
                                 "=ON");
  }

  StoreUrl out;
  out.scheme = scheme;
  std::string_view rest = url.substr(colon + 1);
  const size_t q = rest.find('?');
  std::string_view location = rest.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);

  // mqlite's parameters out of the query; for PostgreSQL the rest stays in
  // the URL, verbatim, for libpq.
  std::string kept;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    Result<std::string> name = PercentDecode(item.substr(0, eq), "a parameter name");
    if (!name.ok()) return name.status();
    if (scheme == "postgresql" && info->params.count(*name) == 0) {
      kept += (kept.empty() ? "" : "&") + std::string(item);
      continue;
    }
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("store URL: parameter '" + *name + "' has no value (" +
                                     *name + "=VALUE)");
    }
    Result<std::string> value = PercentDecode(item.substr(eq + 1), "parameter " + *name);
    if (!value.ok()) return value.status();
    if (info->params.count(*name) == 0) {
      return Status::InvalidArgument("store URL: unknown " + scheme + " parameter '" + *name +
                                     "' (known: " + Join(info->params) + ")");
    }
    if (out.params.count(*name) != 0) {
      return Status::InvalidArgument("store URL: parameter '" + *name + "' given twice");
    }
    if (Status s = CheckParam(scheme, *name, *value); !s.ok()) return s;
    out.params.emplace(*name, std::move(*value));
  }

  if (scheme == "postgresql") {
    // libpq takes both spellings; the URL keeps the one written.
    std::string base(url.substr(0, colon + 1 + location.size()));
    out.location = kept.empty() ? base : base + "?" + kept;
    if (location.substr(0, 2) != "//") {
      return Status::InvalidArgument("store URL '" + Redact(url) +
                                     "': write postgresql://USER@HOST:PORT/DB");
    }
    return out;
  }
  if (location.substr(0, 2) == "//") location.remove_prefix(2);
  Result<std::string> decoded = PercentDecode(location, "the location");
  if (!decoded.ok()) return decoded.status();
  out.location = std::move(*decoded);
  if (scheme == "memory") {
    if (!out.location.empty()) {
      return Status::InvalidArgument("store URL: memory: takes no location (got '" +
                                     out.location + "'); write memory: or memory:?shared=true");
    }
    return out;
  }
  if (out.location.empty()) {
    return Status::InvalidArgument("store URL '" + std::string(url) + "' has no " +
                                   (scheme == "lmdb" ? "directory: write lmdb:DIR"
                                                     : "file: write sqlite:PATH"));
  }
  return out;
}

Result<std::unique_ptr<Store>> OpenStoreUrl(std::string_view url) {
  Result<StoreUrl> parsed = ParseStoreUrl(url);
  if (!parsed.ok()) return parsed.status();
  return OpenStoreUrl(*parsed);
}

Result<std::unique_ptr<Store>> OpenStoreUrl(const StoreUrl& url) {
  const auto param = [&](const char* name) -> const std::string* {
    auto it = url.params.find(name);
    return it == url.params.end() ? nullptr : &it->second;
  };
  // Parameter `name`, if given, parsed into *out (ParseStoreUrl checked it).
  const auto take = [&](const char* name, auto parse, auto* out) -> Status {
    const std::string* v = param(name);
    if (v == nullptr) return Status::OK();
    auto r = parse(name, *v);
    if (!r.ok()) return r.status();
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(*r);
    return Status::OK();
  };
  Durability durability = Durability::kNormal;
  MQLITE_RETURN_IF_ERROR(take(
      "durability", [](const std::string&, const std::string& v) { return ParseDurability(v); },
      &durability));
  bool read_only = false;
  MQLITE_RETURN_IF_ERROR(take("read_only", ParseBool, &read_only));
  Result<std::unique_ptr<Store>> store = Status::InvalidArgument(
      "store URL: unknown store '" + url.scheme + "' (built: " + BuiltList() + ")");
#ifdef MQLITE_OPEN_HAVE_SQLITE
  if (url.scheme == "sqlite") {
    SqliteOptions o;
    o.path = url.location;
    o.durability = durability;
    o.read_only = read_only;
    store = OpenSqliteStore(o);
  }
#endif
#ifdef MQLITE_OPEN_HAVE_LMDB
  if (url.scheme == "lmdb") {
    LmdbOptions o;
    o.dir = url.location;
    o.durability = durability;
    o.read_only = read_only;
    MQLITE_RETURN_IF_ERROR(take("map_size", ParseSize, &o.initial_map_bytes));
    MQLITE_RETURN_IF_ERROR(take("max_map_size", ParseSize, &o.max_map_bytes));
    store = OpenLmdbStore(o);
  }
#endif
#ifdef MQLITE_OPEN_HAVE_POSTGRES
  if (url.scheme == "postgresql") {
    PostgresOptions o;
    o.url = url.location;
    o.durability = durability;
    if (const std::string* v = param("schema")) o.schema = *v;
    MQLITE_RETURN_IF_ERROR(take("pool_size", ParseCount, &o.pool_size));
    MQLITE_RETURN_IF_ERROR(take("change_feed", ParseBool, &o.change_feed));
    MQLITE_RETURN_IF_ERROR(take("queue_cache_ms", ParseCount, &o.queue_cache_ms));
    MQLITE_RETURN_IF_ERROR(take("notify_coalesce_ms", ParseCount, &o.notify_coalesce_ms));
    store = OpenPostgresStore(o);
  }
#endif
#ifdef MQLITE_OPEN_HAVE_MEMORY
  if (url.scheme == "memory") {
    MemoryStoreOptions o;
    MQLITE_RETURN_IF_ERROR(take("shared", ParseBool, &o.shared));
    store = OpenMemoryStore(NewMemoryDatabase(), o);
  }
#endif
  // The embedded stores' errors name their file or directory already.
  if (!store.ok() && url.scheme == "postgresql") {
    return store.status().WithContext(Redact(url.location));
  }
  return store;
}

}  // namespace mqlite

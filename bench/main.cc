// mqlite-bench: the same Google Benchmark workloads on every store (SPEC §11),
// plus the raw-SQL floor and the raw-LMDB floor. Writes Google Benchmark's
// JSON with --benchmark_out=FILE --benchmark_out_format=json; bench/report.py
// turns that into docs/benchmarks.md. scripts/bench.sh does both.
//
//   mqlite-bench [--scale=full|smoke] [--data-dir=DIR]
//                [--stores=sqlite,memory,floor,lmdb,lmdb_floor,postgres,pg_floor]
//                [--pg-url=URL|@FILE]
//                [--no-full-durability] [--no-process-only] [Google Benchmark flags...]
//
// postgres and pg_floor need --pg-url (a server the bench may create and
// drop schemas on); given one, they run by default beside the others.
#include <lmdb.h>
#include <sqlite3.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench.h"
#include "mqlite/lmdb.h"
#include "mqlite/memory.h"
#include "mqlite/sqlite.h"
#ifdef MQLITE_BENCH_POSTGRES
#include "mqlite/postgres.h"
#endif

#ifndef MQLITE_BUILD_TYPE
#define MQLITE_BUILD_TYPE "unknown"
#endif

namespace mqlite::bench {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string FilesystemOf(const std::string& dir) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs (memory, not disk!)";
    case 0x794C7630: return "overlayfs";
    default: {
      std::ostringstream o;
      o << "0x" << std::hex << fs.f_type;
      return o.str();
    }
  }
}

std::string Kernel() {
  struct utsname u {};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release;
}

StoreSpec SqliteSpec(Durability durability) {
  StoreSpec s;
  s.name = "sqlite:" + std::string(DurabilityName(durability));
  s.label = SqliteLabel(durability);
  s.open = [durability](const std::string& dir) {
    SqliteOptions o;
    o.path = dir + "/mqlite.db";
    o.durability = durability;
    return OpenSqliteStore(o);
  };
  s.prepare_business = [](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    if (sqlite3_exec(db, "CREATE TABLE orders (id INTEGER PRIMARY KEY, item BLOB NOT NULL)",
                     nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Status::Internal(std::string("create orders: ") + sqlite3_errmsg(db));
    }
    return Status::OK();
  };
  // What an application does: prepare, bind, step, in the Tx.
  s.insert_business = [](TxContext& tx, int64_t i) -> Status {
    MQLITE_ASSIGN_OR_RETURN(sqlite3 * db, SqliteHandle(tx));
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db, "INSERT INTO orders (id, item) VALUES (?1, ?2)", -1, &st,
                                nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_bind_int64(st, 1, i);
      sqlite3_bind_blob(st, 2, "widget", 6, SQLITE_STATIC);
      rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) return Status::Internal(std::string("insert order: ") + sqlite3_errmsg(db));
    return Status::OK();
  };
  return s;
}

StoreSpec LmdbSpec(Durability durability) {
  StoreSpec s;
  s.name = "lmdb:" + std::string(DurabilityName(durability));
  s.label = LmdbLabel(durability, "grow from " +
                                      std::to_string(LmdbOptions{}.initial_map_bytes >> 20) + " MiB");
  s.open = [durability](const std::string& dir) {
    LmdbOptions o;
    o.dir = dir;
    o.durability = durability;
    return OpenLmdbStore(o);
  };
  // The application's own sub-database in the store's environment: created
  // once (the DBI is usable by later transactions after this one commits) ...
  s.prepare_business = [](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    MDB_dbi orders = 0;
    if (int rc = mdb_dbi_open(txn, "orders", MDB_CREATE, &orders); rc != 0) {
      return Status::Internal(std::string("create orders: ") + mdb_strerror(rc));
    }
    return Status::OK();
  };
  // ... then, as an application does, opened by name and written in the Tx.
  s.insert_business = [](TxContext& tx, int64_t i) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    MDB_dbi orders = 0;
    int rc = mdb_dbi_open(txn, "orders", 0, &orders);
    if (rc == 0) {
      unsigned char key[8];
      PutBigEndian(static_cast<uint64_t>(i), key);
      MDB_val k{sizeof key, key}, v{6, const_cast<char*>("widget")};
      rc = mdb_put(txn, orders, &k, &v, 0);
    }
    if (rc != 0) return Status::Internal(std::string("insert order: ") + mdb_strerror(rc));
    return Status::OK();
  };
  return s;
}

StoreSpec MemorySpec() {
  StoreSpec s;
  s.name = "memory:none";
  s.label = "durability=none (in-process memory)";
  s.open = [](const std::string&) { return OpenMemoryStore(NewMemoryDatabase()); };
  s.insert_business = [](TxContext& tx, int64_t i) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MemoryTxn * t, MemoryHandle(tx));
    return t->Put("orders", std::to_string(i), "widget");
  };
  return s;
}

int Usage(const std::string& bad) {
  std::cerr << "mqlite-bench: unknown or malformed option '" << bad << "'\n"
            << "usage: mqlite-bench [--scale=full|smoke] [--data-dir=DIR]\n"
            << "                    [--stores=sqlite,memory,floor,lmdb,lmdb_floor,postgres,pg_floor]\n"
            << "                    [--pg-url=URL|@FILE]\n"
            << "                    [--no-full-durability] [--no-process-only]\n"
            << "                    [Google Benchmark flags, e.g. --benchmark_out=r.json\n"
            << "                     --benchmark_out_format=json --benchmark_filter=REGEX]\n";
  return 2;
}

}  // namespace
}  // namespace mqlite::bench

int main(int argc, char** argv) {
  using namespace mqlite::bench;  // NOLINT(build/namespaces)
  using mqlite::Durability;
  Scale scale = FullScale();
  std::string data_dir = "mqlite-bench-data";
  const std::set<std::string> known = {"sqlite", "memory",     "floor",   "lmdb",
                                       "lmdb_floor", "postgres", "pg_floor"};
  std::set<std::string> stores = {"sqlite", "memory", "floor", "lmdb", "lmdb_floor"};
  bool stores_given = false;
  std::string pg_url;
  bool full_durability = true;
  bool process_only = true;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string f = std::string(flag) + "=";
      if (a.rfind(f, 0) == 0) return a.substr(f.size());
      return std::nullopt;
    };
    if (auto v = value("--scale")) {
      if (*v == "full") {
        scale = FullScale();
      } else if (*v == "smoke") {
        scale = SmokeScale();
      } else {
        return Usage(a);
      }
    } else if (auto v = value("--data-dir")) {
      data_dir = *v;
    } else if (auto v = value("--pg-url")) {
      pg_url = *v;
      if (!pg_url.empty() && pg_url[0] == '@') {  // the first line of a file
        std::ifstream in(pg_url.substr(1));
        if (!in || !std::getline(in, pg_url) || pg_url.empty()) {
          std::cerr << "mqlite-bench: cannot read a connection string from " << v->substr(1)
                    << "\n";
          return 2;
        }
      }
    } else if (auto v = value("--stores")) {
      stores.clear();
      stores_given = true;
      std::stringstream ss(*v);
      for (std::string s; std::getline(ss, s, ',');) {
        if (!known.count(s)) return Usage(a);
        stores.insert(s);
      }
    } else if (a == "--no-full-durability") {
      full_durability = false;
    } else if (a == "--no-process-only") {
      process_only = false;
    } else if (a.rfind("--benchmark_", 0) == 0 || a == "--help") {
      rest.push_back(argv[i]);
    } else {
      return Usage(a);
    }
  }
  if (!pg_url.empty() && !stores_given) stores.insert({"postgres", "pg_floor"});
  if ((stores.count("postgres") || stores.count("pg_floor")) && pg_url.empty()) {
    std::cerr << "mqlite-bench: postgres and pg_floor need --pg-url=URL|@FILE (a server the bench "
                 "may create and drop schemas on; scripts/bench.sh postgres starts one)\n";
    return 2;
  }
#ifndef MQLITE_BENCH_POSTGRES
  if (stores.count("postgres") || stores.count("pg_floor")) {
    std::cerr << "mqlite-bench: this build has no PostgreSQL store (MQLITE_WITH_POSTGRES=OFF)\n";
    return 2;
  }
#endif
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    std::cerr << "mqlite-bench: cannot create --data-dir " << data_dir << ": " << ec.message()
              << "\n";
    return 2;
  }
  data_dir = std::filesystem::canonical(data_dir).string();
  SetDataRoot(data_dir);

  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;

  benchmark::AddCustomContext("mqlite_version", "0.1.0");
  benchmark::AddCustomContext("sqlite_version", sqlite3_libversion());
  benchmark::AddCustomContext("lmdb_version", mdb_version(nullptr, nullptr, nullptr));
  benchmark::AddCustomContext("kernel", Kernel());
  benchmark::AddCustomContext("cpu_model", CpuModel());
  benchmark::AddCustomContext("filesystem", FilesystemOf(data_dir));
  benchmark::AddCustomContext("bench_dir", data_dir);
  benchmark::AddCustomContext("build_type", MQLITE_BUILD_TYPE);
  benchmark::AddCustomContext("group_commit_max",
                              std::to_string(mqlite::EngineOptions{}.group_commit_max));
  benchmark::AddCustomContext("scale", scale.name);
  benchmark::AddCustomContext("min_time_s", std::to_string(scale.min_time_s));

  // normal: every workload; full and process_only (SPEC §10): the core ones.
  std::vector<Durability> extra;
  if (full_durability) extra.push_back(Durability::kFull);
  if (process_only) extra.push_back(Durability::kProcessOnly);
  if (stores.count("sqlite")) {
    RegisterEngineWorkloads(SqliteSpec(Durability::kNormal), scale, /*core_only=*/false);
    for (Durability d : extra) RegisterEngineWorkloads(SqliteSpec(d), scale, /*core_only=*/true);
  }
  if (stores.count("lmdb")) {
    RegisterEngineWorkloads(LmdbSpec(Durability::kNormal), scale, /*core_only=*/false);
    for (Durability d : extra) RegisterEngineWorkloads(LmdbSpec(d), scale, /*core_only=*/true);
  }
  // Each embedded store beside its floor in one benchmark (paired.cc): the
  // ratios the report judges them by. Drain at normal and process_only (at
  // full it is minutes of syncs); sqliteq's big table at normal.
  std::vector<Durability> levels = {Durability::kNormal};
  levels.insert(levels.end(), extra.begin(), extra.end());
  for (Durability d : levels) {
    const bool normal = d == Durability::kNormal;
    const bool drain = d != Durability::kFull;
    if (stores.count("sqlite") && stores.count("floor")) {
      RegisterPairedWorkloads(
          SqliteSpec(d), "floor:" + std::string(DurabilityName(d)),
          [d](const std::string& dir) { return OpenSqlFloor(dir, d, /*spec=*/false); }, scale,
          drain, /*big_table=*/normal);
    }
    if (stores.count("lmdb") && stores.count("lmdb_floor")) {
      RegisterPairedWorkloads(
          LmdbSpec(d), "lmdb_floor:" + std::string(DurabilityName(d)),
          [d](const std::string& dir) { return OpenLmdbFloor(dir, d, /*spec=*/false); }, scale,
          drain, /*big_table=*/normal);
    }
  }
  if (stores.count("memory")) RegisterEngineWorkloads(MemorySpec(), scale, false);
  if (stores.count("floor")) {
    RegisterFloorWorkloads(Durability::kNormal, false, scale);
    RegisterFloorWorkloads(Durability::kNormal, true, scale);
    for (Durability d : extra) RegisterFloorWorkloads(d, false, scale);
  }
  if (stores.count("lmdb_floor")) {
    RegisterLmdbFloorWorkloads(Durability::kNormal, false, scale);
    RegisterLmdbFloorWorkloads(Durability::kNormal, true, scale);
    for (Durability d : extra) RegisterLmdbFloorWorkloads(d, false, scale);
    if (process_only) RegisterLmdbFloorWorkloads(Durability::kProcessOnly, true, scale);
  }
#ifdef MQLITE_BENCH_POSTGRES
  // PostgreSQL: normal and full are both synchronous_commit=on (one level,
  // run once as normal); process_only is off.
  if (stores.count("postgres") || stores.count("pg_floor")) {
    benchmark::AddCustomContext("postgres_version", PgServerVersion(pg_url));
  }
  if (stores.count("postgres")) {
    const StoreSpec normal = PostgresSpec(pg_url, Durability::kNormal);
    RegisterEngineWorkloads(normal, scale, /*core_only=*/false);
    RegisterSharedWorkloads(normal, scale, /*core_only=*/false);
    if (process_only) {
      const StoreSpec off = PostgresSpec(pg_url, Durability::kProcessOnly);
      RegisterEngineWorkloads(off, scale, /*core_only=*/true);
      RegisterSharedWorkloads(off, scale, /*core_only=*/true);
    }
    // The soak is about dead tuples, not syncs: at process_only it runs in
    // a fraction of the time.
    RegisterPgSoak(pg_url, process_only ? Durability::kProcessOnly : Durability::kNormal, scale);
  }
  if (stores.count("pg_floor")) {
    RegisterPgFloorWorkloads(pg_url, Durability::kNormal, scale);
    if (process_only) RegisterPgFloorWorkloads(pg_url, Durability::kProcessOnly, scale);
  }
  // The store beside its floor in one benchmark (paired.cc), at each level.
  if (stores.count("postgres") && stores.count("pg_floor")) {
    std::vector<Durability> pg_levels = {Durability::kNormal};
    if (process_only) pg_levels.push_back(Durability::kProcessOnly);
    for (Durability d : pg_levels) {
      RegisterPairedWorkloads(
          PostgresSpec(pg_url, d), "pg_floor:" + std::string(DurabilityName(d)),
          [pg_url, d](const std::string& dir) { return OpenPgFloor(pg_url, dir, d); }, scale,
          /*drain=*/d == Durability::kNormal, /*big_table=*/false);
    }
  }
#endif
  std::cerr << "mqlite-bench: scale " << scale.name << ", data in " << data_dir
            << " (filesystem " << FilesystemOf(data_dir) << ")" << std::endl;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(data_dir, ec);
  return 0;
}

#include "postgres_profile.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "pg_conn.h"
#include "postgres_pins.h"

namespace mqlite::tck {
namespace {

using pg_internal::PgConn;

// The schema of the fixture the running test uses: the business hooks get
// only the native handle, and the application table lives in that schema so
// tests never see each other's rows. Tests of one process run one at a time.
std::mutex g_mu;
std::string g_schema;

std::string CurrentSchema() {
  std::lock_guard<std::mutex> l(g_mu);
  return g_schema;
}

std::string FreshSchemaName() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  char rnd[9];
  std::snprintf(rnd, sizeof rnd, "%08x", rd());
  return "tck_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + rnd;
}

class PostgresFixture final : public StoreFixture {
 public:
  explicit PostgresFixture(PostgresOptions options) : options_(std::move(options)), owner_(::getpid()) {
    options_.schema = FreshSchemaName();
    std::lock_guard<std::mutex> l(g_mu);
    g_schema = options_.schema;
  }
  ~PostgresFixture() override {
    if (::getpid() != owner_) return;
    if (std::getenv("MQLITE_TCK_PG_KEEP") != nullptr) {  // for a post-mortem with psql
      std::fprintf(stderr, "[ postgres ] kept schema %s\n", options_.schema.c_str());
      return;
    }
    auto c = PgConn::Connect(options_.url);
    if (c.has_value()) {
      (void)(*c)->Simple("DROP SCHEMA IF EXISTS " + options_.schema + " CASCADE", "drop schema");
    }
  }

  Result<std::unique_ptr<Store>> Open() override { return OpenPostgresStore(options_); }
  const PostgresOptions& options() const { return options_; }

 private:
  PostgresOptions options_;
  pid_t owner_;
};

Status PgFailure(PGconn* c, std::string_view what) {
  return Status::Internal("tck business hook: " + std::string(what) + ": " + PQerrorMessage(c));
}

// One statement with binary byte-string parameters, inside the Tx.
Result<std::optional<std::string>> Run(void* native, const std::string& sql,
                                       std::initializer_list<std::string_view> params,
                                       std::string_view what) {
  if (native == nullptr) return Status::InvalidArgument("tck business hook: no PGconn* handle");
  auto* c = static_cast<PGconn*>(native);
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (std::string_view p : params) {
    values.push_back(p.data());
    lengths.push_back(static_cast<int>(p.size()));
    formats.push_back(1);
  }
  PGresult* r = PQexecParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr,
                             values.data(), lengths.data(), formats.data(), /*binary result=*/1);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    Status s = PgFailure(c, what);
    PQclear(r);
    return s;
  }
  std::optional<std::string> out;
  if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) {
    out = std::string(PQgetvalue(r, 0, 0), static_cast<size_t>(PQgetlength(r, 0, 0)));
  }
  PQclear(r);
  return out;
}

Status Prepare(void* native) {
  return Run(native,
             "CREATE TABLE IF NOT EXISTS " + CurrentSchema() +
                 ".tck_business (k bytea PRIMARY KEY, v bytea NOT NULL)",
             {}, "create tck_business")
      .status();
}

Status Put(void* native, std::string_view key, std::string_view value) {
  return Run(native,
             "INSERT INTO " + CurrentSchema() +
                 ".tck_business (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = "
                 "EXCLUDED.v",
             {key, value}, "put")
      .status();
}

Result<std::optional<std::string>> Get(void* native, std::string_view key) {
  return Run(native, "SELECT v FROM " + CurrentSchema() + ".tck_business WHERE k = $1", {key},
             "get");
}

}  // namespace

StoreProfile PostgresTckProfile(PostgresOptions options, std::string name) {
  StoreProfile p;
  p.name = std::move(name);
  p.exclusive = false;
  p.crash = CrashModel::kProcess;
  p.space = SpaceMode::kReused;
  p.make_fixture = [options = std::move(options)] {
    return std::make_unique<PostgresFixture>(options);
  };
  BusinessHooks hooks;
  hooks.prepare = Prepare;
  hooks.put = Put;
  hooks.get = Get;
  p.business = std::move(hooks);
  p.pins.push_back({"plan pins: every statement seeks its index with custom and generic plans on "
                    "100k ANALYZEd rows; a claim's buffers do not grow behind a blocked group "
                    "(SPEC §11)",
                    [](StoreFixture& f) -> Status {
                      auto* pf = dynamic_cast<PostgresFixture*>(&f);
                      if (pf == nullptr) return Status::Internal("not a PostgreSQL fixture");
                      return RunPostgresPlanPins(f, pf->options().url, pf->options().schema);
                    }});
  return p;
}

}  // namespace mqlite::tck

// SPEC §10 schema golden: the complete canonical DDL is hashed and pinned to
// the schema version token. Changing any statement without minting a new
// token fails here; so does a file whose tables differ from the DDL.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mqlite/sqlite.h"
#include "schema.h"
#include "sha256.h"

namespace mqlite {
namespace {

std::string CanonicalDdl() {
  std::string all;
  for (const char* ddl : internal::kSqliteSchema) {
    all += ddl;
    all += ";\n";
  }
  return all;
}

// SPEC §10: token ↔ DDL hash. A new layout needs a new token AND a new line.
TEST(SqliteSchemaGolden, DdlHashIsPinnedToTheToken) {
  EXPECT_STREQ(kSqliteSchemaToken, "mqlite-sqlite-4");
  EXPECT_EQ(internal::Sha256::Hex(internal::Sha256::Hash(CanonicalDdl())),
            "7087dd27153b288974bfb49a0a9fde67accf5b9f471e3017a5db7bd800113f9e")
      << "The SQLite DDL changed. Mint a new kSqliteSchemaToken and pin the new hash here.\n"
      << CanonicalDdl();
}

// SPEC §10: what a fresh file holds is exactly the canonical DDL, plus the token.
TEST(SqliteSchemaGolden, FreshFileHoldsExactlyTheCanonicalDdl) {
  char tmpl[] = "/tmp/mqlite-golden-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string path = dir + "/golden.db";
  {
    auto store = OpenSqliteStore({.path = path});
    ASSERT_TRUE(store.ok()) << store.error().ToString();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> stored;
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT sql FROM sqlite_master WHERE name LIKE 'mqlite%' "
                               "AND sql IS NOT NULL ORDER BY rowid",
                               -1, &st, nullptr),
            SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) {
    stored.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_finalize(st);
  std::vector<std::string> canonical(std::begin(internal::kSqliteSchema),
                                     std::end(internal::kSqliteSchema));
  EXPECT_EQ(stored, canonical);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT value FROM mqlite_meta WHERE key = 'schema_version'",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), kSqliteSchemaToken);
  sqlite3_finalize(st);
  int auto_vacuum = -1;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA auto_vacuum", -1, &st, nullptr), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) auto_vacuum = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  EXPECT_EQ(auto_vacuum, 2) << "G7: new files use auto_vacuum=INCREMENTAL";
  sqlite3_close(db);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mqlite

// Helpers for the PostgreSQL tests: where the test server is.
#ifndef MQLITE_STORES_POSTGRES_TESTS_PG_TEST_UTIL_H_
#define MQLITE_STORES_POSTGRES_TESTS_PG_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "pg_conn.h"

namespace mqlite::pg_internal {

// The server's connection string: MQLITE_TEST_PG_URL, else the file the
// CTest fixture wrote (MQLITE_TEST_PG_URL_FILE). A test run without either
// fails, naming the fix, rather than skipping.
inline std::string TestUrl() {
  if (const char* url = std::getenv("MQLITE_TEST_PG_URL"); url && *url) return url;
  if (const char* file = std::getenv("MQLITE_TEST_PG_URL_FILE"); file && *file) {
    std::ifstream in(file);
    std::string url;
    if (std::getline(in, url) && !url.empty()) return url;
  }
  ADD_FAILURE() << "no PostgreSQL server: run through ctest (its fixture starts one) or set "
                   "MQLITE_TEST_PG_URL";
  return "";
}

inline std::unique_ptr<PgConn> Connect() {
  Result<std::unique_ptr<PgConn>> c = PgConn::Connect(TestUrl());
  EXPECT_TRUE(c.has_value()) << c.status().ToString();
  return c.has_value() ? std::move(*c) : nullptr;
}

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_TESTS_PG_TEST_UTIL_H_

// The test PostgreSQL server as a postgresql:// URL, for tests that open
// stores by URL (mqlite/open.h): MQLITE_TEST_PG_URL, or the key=value
// connection string the pg_cluster CTest fixture wrote to
// MQLITE_TEST_PG_URL_FILE, turned into a URL. Without either the test fails
// naming the fix (it does not skip).
#ifndef MQLITE_OPEN_TESTS_PG_SERVER_URL_H_
#define MQLITE_OPEN_TESTS_PG_SERVER_URL_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace mqlite::test {

inline std::string PgServerUrl() {
  if (const char* url = std::getenv("MQLITE_TEST_PG_URL"); url && *url) return url;
  const char* file = std::getenv("MQLITE_TEST_PG_URL_FILE");
  std::string line;
  if (file == nullptr || !std::getline(std::ifstream(file) >> std::ws, line)) {
    ADD_FAILURE() << "no PostgreSQL server: run through ctest or set MQLITE_TEST_PG_URL";
    return "";
  }
  if (line.rfind("postgres", 0) == 0) return line;
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  for (std::string item; in >> item;) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return "postgresql://" + kv["user"] + "@" + kv["host"] + ":" + kv["port"] + "/" + kv["dbname"];
}

}  // namespace mqlite::test

#endif  // MQLITE_OPEN_TESTS_PG_SERVER_URL_H_

// Grades a store with the conformance kit: a fixture that opens the store on
// fresh data, a profile that declares its capabilities, one macro.
#include <stdlib.h>

#include <filesystem>

#include "mqlite/sqlite.h"
#include "mqlite/tck.h"

class CandidateFixture : public mqlite::tck::StoreFixture {
 public:
  CandidateFixture() : dir_(mkdtemp(tmpl_)) {}
  ~CandidateFixture() override { std::filesystem::remove_all(dir_); }
  mqlite::Result<std::unique_ptr<mqlite::Store>> Open() override {
    return mqlite::OpenSqliteStore({.path = dir_ + "/candidate.db"});
  }

 private:
  char tmpl_[32] = "/tmp/tck-candidate-XXXXXX";
  std::string dir_;
};

mqlite::tck::StoreProfile CandidateProfile() {
  mqlite::tck::StoreProfile p;
  p.name = "candidate";
  p.make_fixture = [] { return std::make_unique<CandidateFixture>(); };
  p.exclusive = true;                           // one engine per file
  p.crash = mqlite::tck::CrashModel::kProcess;  // survives SIGKILL
  return p;                                     // no business hooks: those tests skip
}

MQLITE_TCK_INSTANTIATE(Candidate, CandidateProfile);

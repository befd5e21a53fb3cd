// The CLI's command line: positionals and --flags, checked against one table
// of every flag (so a flag means the same in every command), then against
// the flags each command takes. Usage errors are exit code 2 (docs/cli.md).
#ifndef MQLITE_CLI_ARGS_H_
#define MQLITE_CLI_ARGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mqlite::cli {

// A usage error: the message, and the command whose usage to show ("" =
// the overview).
struct UsageError {
  std::string message;
  std::string command;
};

class Args {
 public:
  // Parses argv[1..]. "--name VALUE", "--name=VALUE", boolean "--name";
  // "--" ends the flags. Throws UsageError.
  static Args Parse(int argc, char** argv);

  const std::vector<std::string>& positionals() const { return pos_; }
  // Throws UsageError for a flag given that `allowed` (plus the global
  // flags) does not hold.
  void Allow(const std::string& command, const std::set<std::string>& allowed) const;

  bool Has(const std::string& flag) const { return flags_.count(flag) != 0; }
  std::optional<std::string> Get(const std::string& flag) const;  // the last one given
  std::vector<std::string> All(const std::string& flag) const;   // in order
  // Integers; UsageError naming the flag when not one, or outside [lo, hi].
  std::optional<int64_t> Int(const std::string& flag, int64_t lo, int64_t hi) const;
  // Durations: milliseconds, or a number with ms, s, m, h or d.
  std::optional<int64_t> Millis(const std::string& flag) const;

 private:
  std::vector<std::string> pos_;
  std::multimap<std::string, std::string> flags_;
  std::vector<std::string> order_;  // flag names as given, for Allow's message
};

// Parses "250", "250ms", "30s", "5m", "2h", "14d" into milliseconds.
std::optional<int64_t> ParseMillis(const std::string& text);

}  // namespace mqlite::cli

#endif  // MQLITE_CLI_ARGS_H_

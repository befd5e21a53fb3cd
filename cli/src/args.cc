#include "args.h"

#include <fmt/format.h>

#include <cctype>
#include <iterator>
#include <limits>

namespace mqlite::cli {
namespace {

// Every flag but the global ones, and whether it takes a value.
const std::map<std::string, bool>& CommandFlags() {
  static const std::map<std::string, bool> table = {
      // send
      {"body", true}, {"file", true}, {"property", true}, {"group", true}, {"delay", true},
      {"priority", true}, {"ttl", true}, {"message-id", true}, {"subject", true},
      {"correlation-id", true}, {"content-type", true},
      // peek, dlq list
      {"state", true}, {"from", true}, {"limit", true},
      // receive
      {"max", true}, {"wait", true}, {"complete", false}, {"abandon", false}, {"delete", false},
      // dlq redrive / purge
      {"to", true}, {"older-than", true}, {"batch", true},
      // dead-letter
      {"reason", true}, {"description", true},
      // stats
      {"watch", false}, {"interval", true}, {"count", true},
      // queue create / update
      {"lock-duration", true}, {"max-delivery", true}, {"default-ttl", true},
      {"dedup-window", true}, {"ordering", true}, {"dead-letter-on-expire", true},
      {"max-message-bytes", true}, {"dlq-max-age", true}, {"dlq-max-count", true},
      {"dlq-max-bytes", true},
      // queue delete
      {"yes", false},
  };
  return table;
}

// The flags every command takes.
const std::map<std::string, bool>& GlobalFlags() {
  static const std::map<std::string, bool> g = {
      {"store", true}, {"json", false}, {"timeout", true}, {"help", false}, {"version", false}};
  return g;
}

// Whether --name takes a value; nullopt for no such flag.
std::optional<bool> TakesValue(const std::string& name) {
  for (const auto* table : {&GlobalFlags(), &CommandFlags()}) {
    if (auto it = table->find(name); it != table->end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

Args Args::Parse(int argc, char** argv) {
  Args a;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      a.pos_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) {
      throw UsageError{fmt::format("unknown option '{}'", arg), ""};
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const std::optional<bool> takes_value = TakesValue(name);
    if (!takes_value) throw UsageError{fmt::format("unknown option '--{}'", name), ""};
    if (*takes_value) {
      if (!value) {
        if (i + 1 >= argc) throw UsageError{fmt::format("--{} needs a value", name), ""};
        value = argv[++i];
      }
    } else if (value) {
      throw UsageError{fmt::format("--{} takes no value", name), ""};
    }
    a.flags_.emplace(name, value.value_or(""));
    a.order_.push_back(name);
  }
  return a;
}

void Args::Allow(const std::string& command, const std::set<std::string>& allowed) const {
  for (const std::string& f : order_) {
    if (allowed.count(f) == 0 && GlobalFlags().count(f) == 0) {
      throw UsageError{fmt::format("'{}' takes no --{}", command, f), command};
    }
  }
}

std::optional<std::string> Args::Get(const std::string& flag) const {
  auto [b, e] = flags_.equal_range(flag);
  if (b == e) return std::nullopt;
  return std::prev(e)->second;  // a multimap keeps equal keys in insertion order
}

std::vector<std::string> Args::All(const std::string& flag) const {
  std::vector<std::string> v;
  auto [b, e] = flags_.equal_range(flag);
  for (auto it = b; it != e; ++it) v.push_back(it->second);
  return v;
}

std::optional<int64_t> Args::Int(const std::string& flag, int64_t lo, int64_t hi) const {
  std::optional<std::string> v = Get(flag);
  if (!v) return std::nullopt;
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(*v, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != v->size()) {
    throw UsageError{fmt::format("--{} {}: not an integer", flag, *v), ""};
  }
  if (n < lo || n > hi) {
    throw UsageError{fmt::format("--{} {}: must be {}–{}", flag, *v, lo, hi), ""};
  }
  return n;
}

std::optional<int64_t> ParseMillis(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 15) return std::nullopt;
  const int64_t n = std::stoll(text.substr(0, i));
  const std::string unit = text.substr(i);
  int64_t scale = 0;
  if (unit.empty() || unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else if (unit == "d") scale = 86'400'000;
  else return std::nullopt;
  if (n > std::numeric_limits<int64_t>::max() / scale) return std::nullopt;
  return n * scale;
}

std::optional<int64_t> Args::Millis(const std::string& flag) const {
  std::optional<std::string> v = Get(flag);
  if (!v) return std::nullopt;
  std::optional<int64_t> ms = ParseMillis(*v);
  if (!ms) {
    throw UsageError{
        fmt::format("--{} {}: not a duration (milliseconds, or 500ms, 30s, 5m, 2h, 7d)", flag, *v),
        ""};
  }
  return ms;
}

}  // namespace mqlite::cli

// A small command-line parser shared by the tern subcommands: `--name value`, `--name=value`,
// `-m value` and flags; unknown options are errors.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tern::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // valued: options that take a value; flags: options that do not. Aliases map short to long.
  Args(int argc, char** argv, const std::set<std::string>& valued,
       const std::set<std::string>& flags, const std::map<std::string, std::string>& aliases = {});

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  long long get_int(const std::string& name, long long fallback) const;
  // The same, refused (UsageError naming the flag and the range) outside [lo, hi]: a value is
  // never wrapped into a narrower type (--beam 4294967297 is an error, not 1).
  long long get_int(const std::string& name, long long fallback, long long lo, long long hi) const;
  // A finite decimal number; UsageError naming the flag otherwise.
  double get_real(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Every value a repeated option was given, in order (get() returns the last).
  std::vector<std::string> get_all(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::string> positional_;
};

}  // namespace tern::cli

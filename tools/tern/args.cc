#include "tools/tern/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace tern::cli {

Args::Args(int argc, char** argv, const std::set<std::string>& valued,
           const std::set<std::string>& flags, const std::map<std::string, std::string>& aliases) {
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      positional_.push_back(arg);
      continue;
    }
    std::string value;
    bool inline_value = false;
    const size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    auto alias = aliases.find(arg);
    if (alias != aliases.end()) arg = alias->second;
    const std::string name = arg.substr(arg.compare(0, 2, "--") == 0 ? 2 : 1);
    if (flags.count(name)) {
      if (inline_value) throw UsageError("option --" + name + " takes no value");
      values_[name] = "1";
    } else if (valued.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
      all_values_[name].push_back(value);
    } else {
      throw UsageError("unknown option " + std::string(argv[i]));
    }
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

long long Args::get_int(const std::string& name, long long fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno || end == it->second.c_str() || *end != '\0') {
    throw UsageError("option --" + name + " needs an integer, got \"" + it->second + "\"");
  }
  return v;
}

long long Args::get_int(const std::string& name, long long fallback, long long lo,
                        long long hi) const {
  const long long v = get_int(name, fallback);
  if (v < lo || v > hi) {
    throw UsageError("option --" + name + " must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi) + ", got " + get(name));
  }
  return v;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>() : it->second;
}

double Args::get_real(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (errno || end == it->second.c_str() || *end != '\0' || !std::isfinite(v)) {
    throw UsageError("option --" + name + " needs a finite number, got \"" + it->second + "\"");
  }
  return v;
}

}  // namespace tern::cli

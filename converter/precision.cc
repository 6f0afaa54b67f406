#include "converter/precision.h"

#include <cmath>
#include <cstdio>
#include <queue>

#include "converter/convert.h"
#include "converter/error.h"
#include "converter/quantize.h"

namespace tern::convert {

namespace {

DType DefaultDType(TensorRole role, DType base) {
  if (role == TensorRole::kVector) return DType::kF32;
  if (role == TensorRole::kEmbedding && base == DType::kI4) return DType::kI8;
  return base;
}

// Precision ladder, lowest first.
const DType kLadder[] = {DType::kI4, DType::kI8, DType::kF16, DType::kF32};

int Rank(DType d) {
  for (int i = 0; i < 4; ++i) {
    if (kLadder[i] == d) return i;
  }
  return 3;
}

std::string Bytes(uint64_t n) {
  char buf[48];
  if (n >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%llu bytes (%.2f MiB)", static_cast<unsigned long long>(n),
                  n / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  }
  return buf;
}

}  // namespace

KeepRule ParseKeepRule(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw Error("--keep \"" + text +
                "\": expected DTYPE:PATTERN, e.g. fp16:decoder.layers.*.fc2.weight");
  }
  KeepRule rule;
  try {
    rule.dtype = ParseDType(text.substr(0, colon));
  } catch (const Error& e) {
    throw Error("--keep \"" + text + "\": " + e.what());
  }
  rule.pattern = text.substr(colon + 1);
  return rule;
}

bool GlobMatch(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

double ParseBudget(const std::string& text) {
  if (text.empty()) throw Error("--auto-budget: empty value");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit(end);
  if (end == text.c_str() || !(v > 0) || !std::isfinite(v)) {
    throw Error("--auto-budget \"" + text +
                "\": expected bytes (e.g. 5000000, 12M) or a percentage (e.g. 40%)");
  }
  if (unit == "%") {
    if (v > 100) throw Error("--auto-budget \"" + text + "\": a percentage above 100");
    return -v;
  }
  double scale = 1;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1048576.0;
  else if (unit == "G" || unit == "GiB")
    scale = 1073741824.0;
  else
    throw Error("--auto-budget \"" + text + "\": unknown unit \"" + unit + "\" (use K, M, G or %)");
  return v * scale;
}

uint64_t StoredBytes(const std::vector<int64_t>& shape, DType dtype, int64_t group_size) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (dtype == DType::kF32 || dtype == DType::kF16 || shape.size() < 2) {
    return static_cast<uint64_t>(n) * (dtype == DType::kF16 ? 2 : 4);
  }
  const int64_t rows = shape[0];
  const int64_t cols = rows > 0 ? n / rows : 0;
  int64_t groups = 1;
  if (dtype == DType::kI4 && group_size > 0 && group_size < cols)
    groups = (cols + group_size - 1) / group_size;
  return static_cast<uint64_t>(rows) * DTypeRowBytes(dtype, static_cast<size_t>(cols)) +
         static_cast<uint64_t>(rows * groups) * 4;
}

PrecisionPlan PlanPrecision(const std::vector<ExpectedTensor>& layout,
                            const PrecisionRequest& request,
                            const std::function<HostTensor(const std::string&)>& load,
                            const std::string& tied_note) {
  PrecisionPlan plan;
  std::vector<bool> rule_used(request.keep.size(), false);
  std::map<std::string, bool> kept;
  for (const auto& e : layout) {
    DType d = DefaultDType(e.role, request.dtype);
    if (e.role != TensorRole::kVector) {
      for (size_t r = 0; r < request.keep.size(); ++r) {  // the last matching rule wins
        if (GlobMatch(request.keep[r].pattern, e.name)) {
          d = request.keep[r].dtype;
          rule_used[r] = true;
          kept[e.name] = true;
        }
      }
    }
    plan.dtype[e.name] = d;
  }
  for (size_t r = 0; r < request.keep.size(); ++r) {
    if (!rule_used[r]) {
      throw Error("--keep " + std::string(DTypeName(request.keep[r].dtype)) + ":" +
                  request.keep[r].pattern + " matches no weight matrix or embedding of this model" +
                  tied_note +
                  " (patterns match canonical names, e.g. decoder.layers.*.fc2.weight)");
    }
  }
  auto total = [&] {
    uint64_t sum = 0;
    for (const auto& e : layout)
      sum += StoredBytes(e.shape, plan.dtype[e.name], request.group_size);
    return sum;
  };
  plan.planned_bytes = total();
  if (request.budget.empty()) return plan;

  // --auto-budget: greedy by error removed per byte spent.
  uint64_t fp32 = 0;
  for (const auto& e : layout) fp32 += StoredBytes(e.shape, DType::kF32, 0);
  const double parsed = ParseBudget(request.budget);
  const uint64_t budget = parsed < 0
                              ? static_cast<uint64_t>(-parsed / 100.0 * static_cast<double>(fp32))
                              : static_cast<uint64_t>(parsed);
  if (budget < plan.planned_bytes) {
    throw Error("--auto-budget " + request.budget + " = " + Bytes(budget) + " is below the " +
                Bytes(plan.planned_bytes) + " this model needs at --dtype " +
                DTypeName(request.dtype) + (request.keep.empty() ? "" : " with the --keep rules") +
                "; lower --dtype or raise the budget");
  }
  struct Option {
    DType dtype;
    double error;  // relative squared error ||W - Q(W)||^2 / ||W||^2
    uint64_t bytes;
  };
  struct Candidate {
    std::string name;
    double numel;
    std::vector<Option> options;  // from the current dtype upwards
    size_t at = 0;
  };
  std::vector<Candidate> candidates;
  for (const auto& e : layout) {
    if (e.role == TensorRole::kVector || kept.count(e.name)) continue;
    const DType current = plan.dtype[e.name];
    if (current == DType::kF32) continue;
    const HostTensor t = load(e.name);
    double norm = 0;
    for (float v : t.values) norm += static_cast<double>(v) * v;
    Candidate c;
    c.name = e.name;
    c.numel = static_cast<double>(t.values.size());
    for (int r = Rank(current); r < 4; ++r) {
      Option o;
      o.dtype = kLadder[r];
      o.bytes = StoredBytes(e.shape, o.dtype, request.group_size);
      if (o.dtype == DType::kF32) {
        o.error = 0;
      } else {
        const std::vector<float> back = Decode(Encode(t, o.dtype, request.group_size));
        double err = 0;
        for (size_t i = 0; i < back.size(); ++i) {
          const double diff = static_cast<double>(t.values[i]) - back[i];
          err += diff * diff;
        }
        o.error = norm > 0 ? err / norm : 0;
      }
      c.options.push_back(o);
    }
    candidates.push_back(std::move(c));
  }
  auto priority = [&](const Candidate& c) {
    const Option& a = c.options[c.at];
    const Option& b = c.options[c.at + 1];
    const double gain = (a.error - b.error) * c.numel;  // error weighted by the matrix's size
    return gain / static_cast<double>(b.bytes - a.bytes);
  };
  using Entry = std::pair<double, size_t>;
  std::priority_queue<Entry> queue;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].options.size() > 1) queue.emplace(priority(candidates[i]), i);
  }
  uint64_t used = plan.planned_bytes;
  size_t upgrades = 0;
  while (!queue.empty()) {
    const size_t i = queue.top().second;
    queue.pop();
    Candidate& c = candidates[i];
    const uint64_t extra = c.options[c.at + 1].bytes - c.options[c.at].bytes;
    if (used + extra > budget) continue;  // this tensor stays; a cheaper one may still fit
    used += extra;
    ++c.at;
    ++upgrades;
    plan.dtype[c.name] = c.options[c.at].dtype;
    if (c.at + 1 < c.options.size()) queue.emplace(priority(c), i);
  }
  size_t listed = 0, unlisted = 0;
  for (const auto& c : candidates) {
    if (c.at == 0) continue;
    if (++listed > 12) {
      ++unlisted;
      continue;
    }
    char buf[200];
    std::snprintf(buf, sizeof buf, "auto-budget: %s -> %s (relative error %.2e -> %.2e)",
                  c.name.c_str(), DTypeName(c.options[c.at].dtype), c.options[0].error,
                  c.options[c.at].error);
    plan.notes.push_back(buf);
  }
  if (unlisted)
    plan.notes.push_back("auto-budget: ... and " + std::to_string(unlisted) +
                         " more tensors raised");
  plan.planned_bytes = total();
  plan.notes.push_back("auto-budget: " + std::to_string(upgrades) + " upgrades, " +
                       Bytes(plan.planned_bytes) + " of " + Bytes(budget) +
                       " budget (fp32: " + Bytes(fp32) + ")");
  return plan;
}

}  // namespace tern::convert

#include "tools/tern/bench_util.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace tern::cli::bench {

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double CpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int32_t> BenchIds(int32_t length, int32_t batch, int32_t vocab, int32_t last) {
  std::vector<int32_t> ids(static_cast<size_t>(length) * batch);
  const int64_t span = vocab - 4;
  for (int32_t b = 0; b < batch; ++b) {
    int32_t* row = ids.data() + static_cast<size_t>(b) * length;
    for (int32_t i = 0; i < length; ++i) {
      const int64_t n = static_cast<int64_t>(b) * length + i;
      row[i] = static_cast<int32_t>(4 + (n * 7919 + 17) % span);
    }
    if (last >= 0) row[length - 1] = last;
  }
  return ids;
}

Memory ReadMemory() {
  Memory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kb) == 1) m.peak = kb * 1024;
    if (std::sscanf(line.c_str(), "RssAnon: %lld kB", &kb) == 1) m.anon = kb * 1024;
    if (std::sscanf(line.c_str(), "RssFile: %lld kB", &kb) == 1) m.file = kb * 1024;
  }
  if (m.peak == 0) {  // No /proc: getrusage's ru_maxrss (KiB on Linux).
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) == 0)
      m.peak = static_cast<long long>(usage.ru_maxrss) * 1024;
  }
  return m;
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string(what) + ": " + s.message());
}

}  // namespace tern::cli::bench

// int8 greedy ids are the same on every architecture: the parity fixtures converted to int8
// decode to the ids recorded in tests/fixtures/parity/int8_greedy_ids.txt, on each backend.
// `make test` runs this binary on x86-64, on aarch64 and armv7 under qemu (default CPU), and
// once more on the older CPU models (qemu -cpu cortex-a72 / cortex-a7), so every kernel path
// (XNNPACK qd8 with and without dot-product instructions, the reference kernel) must agree.
//
// The file was written on x86-64 by running this test with TERN_WRITE_INT8_GOLDEN=1 (it then
// rewrites the file instead of checking). Regenerate it only when the fixtures or the
// quantizer change, and say why in the commit.
#include <catch2/catch_test_macros.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/tiny_model.h"

namespace tern {
namespace {

const char* const kFixtures[] = {"post_relu",       "pre_gelu",      "learned_pos",
                                 "shaw_rel",        "t5_bias",       "rotary_rms_swiglu",
                                 "universal_plain", "universal_act", "gqa_rotary"};

std::string GoldenPath() { return std::string(TERN_FIXTURES) + "/parity/int8_greedy_ids.txt"; }

// "<fixture> <backend> <sentence>" -> "id id id".
std::map<std::string, std::string> ReadGolden() {
  std::map<std::string, std::string> out;
  std::ifstream in(GoldenPath());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value = colon + 1 < line.size() ? line.substr(colon + 2) : "";
    out[line.substr(0, colon)] = value;
  }
  return out;
}

// Greedy ids of every fixture sentence, decoded one sentence at a time.
std::vector<std::string> GreedyIds(const std::string& fixture, Backend backend) {
  const testing::ParityFixture f = testing::LoadParityFixture(fixture, DType::kI8);
  auto model = Model::Load(f.model.data(), f.model.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = backend;
  limits.max_source_length = static_cast<int32_t>(f.src_seq);
  limits.max_target_length = static_cast<int32_t>(f.max_len);
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  REQUIRE(need.ok());
  std::vector<uint8_t> arena(need.value());
  Session session;
  Status s = session.Prepare(model.value(), limits, arena.data(), arena.size());
  INFO(s.message());
  REQUIRE(s.ok());
  std::vector<std::string> out;
  for (int64_t b = 0; b < f.batch; ++b) {
    std::vector<int32_t> ids(static_cast<size_t>(f.max_len));
    size_t length = 0;
    s = session.TranslateIds(Span<const int32_t>(f.src_ids.data() + b * f.src_seq,
                                                 static_cast<size_t>(f.src_lengths[b])),
                             Span<int32_t>(ids.data(), ids.size()), &length);
    REQUIRE(s.ok());
    std::ostringstream line;
    for (size_t i = 0; i < length; ++i) line << (i ? " " : "") << ids[i];
    out.push_back(line.str());
  }
  return out;
}

TEST_CASE("int8 greedy ids are identical on every architecture and backend", "[int8][arch]") {
  std::vector<Backend> backends = {Backend::kReference};
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  backends.push_back(Backend::kXnnpack);
#endif
  const bool write = std::getenv("TERN_WRITE_INT8_GOLDEN") != nullptr;
  std::ostringstream written;
  written << "# int8 greedy ids of the parity fixtures (see "
             "tests/runtime/models/int8_across_architectures_test.cc)\n";
  const std::map<std::string, std::string> golden = ReadGolden();
  for (const char* fixture : kFixtures) {
    for (Backend backend : backends) {
      const char* name = backend == Backend::kReference ? "reference" : "xnnpack";
      const std::vector<std::string> ids = GreedyIds(fixture, backend);
      for (size_t b = 0; b < ids.size(); ++b) {
        const std::string key = std::string(fixture) + " " + name + " " + std::to_string(b);
        written << key << ": " << ids[b] << "\n";
        if (write) continue;
        INFO(key);
        REQUIRE(golden.count(key) == 1);
        CHECK(ids[b] == golden.at(key));
      }
    }
  }
  if (write) {
    std::ofstream(GoldenPath()) << written.str();
    WARN("wrote " << GoldenPath());
  }
}

}  // namespace
}  // namespace tern

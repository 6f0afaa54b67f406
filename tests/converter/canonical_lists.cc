// The runtime's two canonical lists, printed as JSON for the tests that check the Python
// reference (tools/model/test_canonical_lists.py) and docs/CONVENTIONS.md
// (tests/converter/conventions_table_test.py) against them:
//
//   canonical_lists fields   the config fields (runtime/model/config_fields.h), in order
//   canonical_lists layout   reads a JSON array of config.json objects on stdin; prints one
//                            object per config: its "tensors" (name, shape, required), in the
//                            description's order (DescribeModel, as the converter expects them),
//                            or the "error" that refuses the config
#include <cstdio>
#include <exception>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/architectures/decoder_only_layout.h"
#include "converter/model_config_json.h"
#include "runtime/models/architectures.h"
#include "runtime/models/model_weights.h"

namespace {

nlohmann::ordered_json Layout(const nlohmann::json& config_json) {
  nlohmann::ordered_json out;
  try {
    const tern::ModelConfig c = tern::convert::ParseModelConfig(config_json.dump(), "config");
    // Only configs the runtime would load and prepare: the lists are about real models.
    tern::Status s = tern::CheckModelConfig(c);
    if (s.ok()) s = tern::CheckArchitectureConfig(c);
    if (!s.ok()) {
      out["error"] = s.message();
      return out;
    }
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const auto& t : tern::convert::ModelLayout(c)) {
      tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"required", t.required}});
    }
    out["tensors"] = tensors;
  } catch (const std::exception& e) {
    out["error"] = e.what();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode == "fields") {
    std::printf("%s\n", tern::convert::ConfigFieldsJson().c_str());
    return 0;
  }
  if (mode == "layout") {
    const std::string text{std::istreambuf_iterator<char>(std::cin),
                           std::istreambuf_iterator<char>()};
    const nlohmann::json configs = nlohmann::json::parse(text, nullptr, false);
    if (!configs.is_array()) {
      std::fprintf(stderr, "canonical_lists layout: stdin is not a JSON array of configs\n");
      return 2;
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& c : configs) out.push_back(Layout(c));
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  std::fprintf(stderr, "usage: canonical_lists fields | canonical_lists layout < configs.json\n");
  return 2;
}

// The writer stamps the oldest format minor version that has everything a file uses (schema
// compatibility rules, schema/README.md): 1.2 for the paper's attention, 1.3 once kv_heads
// (grouped-query attention) is used.
#include "converter/writer.h"

#include <catch2/catch_test_macros.hpp>

#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

uint16_t MinorOf(const ModelConfig& config) {
  const testing::AlignedBytes bytes(SerializeModel(testing::RandomContents(config, 1)));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  return model.value().format_minor();
}

TEST_CASE("the format minor version follows the features a file uses", "[writer]") {
  ModelConfig c = testing::TinyConfig();  // 2 heads
  CHECK(MinorOf(c) == 2);
  c.kv_heads = c.heads;  // the paper's attention, spelled out: still 1.2
  CHECK(MinorOf(c) == 2);
  c.kv_heads = 1;  // multi-query attention
  CHECK(MinorOf(c) == 3);
}

}  // namespace
}  // namespace tern::convert

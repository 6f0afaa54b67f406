// Test support for decoder-only models: a model loaded from its bytes and a Generator prepared
// for it, in the tests' own arena. Header-only, for Catch2 test files (it REQUIREs).
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "tests/support/tiny_model.h"

namespace tern::testing {

struct PreparedGenerator {
  AlignedBytes bytes;
  Model model;
  std::vector<uint8_t> arena;
  Generator generator;
};

// Loads `bytes` into p and prepares p->generator for `limits` in an arena of exactly the bytes
// Generator::RequiredArenaBytes asks for, filled with 0xCD (nothing may count on zeroed memory).
// Returns that size.
inline size_t PrepareGenerator(PreparedGenerator* p, AlignedBytes bytes, const Limits& limits) {
  p->bytes = std::move(bytes);
  auto model = Model::Load(p->bytes.data(), p->bytes.size());
  INFO(model.status().message());
  REQUIRE(model.ok());
  p->model = model.value();
  auto need = Generator::RequiredArenaBytes(p->model, limits);
  INFO(need.status().message());
  REQUIRE(need.ok());
  p->arena.assign(need.value(), 0xCD);
  const Status s = p->generator.Prepare(p->model, limits, p->arena.data(), p->arena.size());
  INFO(s.message());
  REQUIRE(s.ok());
  return need.value();
}

}  // namespace tern::testing

// Model::Load checks the file format only; the architecture (its required tensors and their
// shapes and dtypes, the architecture's config rules) is checked by ValidateArchitecture when a
// session or generator is prepared. PrepareStatus walks the way a user does, Load and then
// RequiredArenaBytes and Prepare of the object the model needs (Generator for a decoder-only
// model, else Session), and returns the first refusal. When Load accepts and the architecture
// check refuses, it also checks that RequiredArenaBytes, Prepare and ValidateArchitecture say
// the same thing (code and message), so a test that pins the message pins all three.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/models/architectures.h"
#include "tern/tern.hpp"
#include "tests/support/tiny_model.h"

namespace tern::testing {

inline Status PrepareStatus(const AlignedBytes& bytes) {
  auto model = Model::Load(bytes.data(), bytes.size());
  if (!model.ok()) return model.status();
  const Status check = ValidateArchitecture(model.value());
  if (check.ok()) return check;
  const bool language_model = model->config().architecture == Architecture::kDecoderOnly;
  Limits limits;
  limits.backend = Backend::kReference;
  const Result<size_t> need = language_model ? Generator::RequiredArenaBytes(*model, limits)
                                             : Session::RequiredArenaBytes(*model, limits);
  // A small arena: the architecture check comes before any size is computed.
  alignas(64) uint8_t arena[256];
  Session session;
  Generator generator;
  const Status prepared = language_model ? generator.Prepare(*model, limits, arena, sizeof arena)
                                         : session.Prepare(*model, limits, arena, sizeof arena);
  INFO("ValidateArchitecture: " << check.message());
  REQUIRE_FALSE(need.ok());
  CHECK(need.status().code() == check.code());
  CHECK(std::string(need.status().message()) == check.message());
  CHECK(prepared.code() == check.code());
  CHECK(std::string(prepared.message()) == check.message());
  return check;
}

inline Status PrepareStatus(const std::vector<uint8_t>& bytes) {
  return PrepareStatus(AlignedBytes(bytes));
}

}  // namespace tern::testing

// The objects behind tern::Session and tern::Generator, for code inside this repository that
// needs more than the public API: the C API, tests (logits, K/V state, fallback counters), the
// bench tools and the converter's quality report. Not installed: tern.hpp names no internal
// class, so a user of the installed headers cannot depend on runtime/models/.
#pragma once

#include <new>

#include "runtime/decoding/state.h"
#include "runtime/models/decoder_only.h"
#include "runtime/models/encoder_decoder.h"
#include "tern/tern.hpp"

namespace tern {
namespace internal {

// What a Session / Generator holds: the model, which owns the network's buffers, and the
// decoding algorithm's state (runtime/decoding/state.h); Prepare places both in one arena.
struct Translation {
  EncoderDecoder model;
  TranslationState decoding;
};
struct Generation {
  DecoderOnly model;
  GenerationState decoding;
};

// The one friend of Session and Generator: the objects were constructed in their storage by
// the constructors in session.cc / generator.cc, which check at compile time that they fit.
struct SessionAccess {
  static Translation& Get(Session& s) {
    return *std::launder(reinterpret_cast<Translation*>(s.storage_));
  }
  static const Translation& Get(const Session& s) {
    return *std::launder(reinterpret_cast<const Translation*>(s.storage_));
  }
  static Generation& Get(Generator& g) {
    return *std::launder(reinterpret_cast<Generation*>(g.storage_));
  }
  static const Generation& Get(const Generator& g) {
    return *std::launder(reinterpret_cast<const Generation*>(g.storage_));
  }
  static EncoderDecoder& Model(Session& s) { return Get(s).model; }
  static const EncoderDecoder& Model(const Session& s) { return Get(s).model; }
  static DecoderOnly& Model(Generator& g) { return Get(g).model; }
  static const DecoderOnly& Model(const Generator& g) { return Get(g).model; }
  static void* Storage(Session& s) { return s.storage_; }
  static void* Storage(SharedWeights& w) { return w.storage_; }
  static SharedPackedWeights* Get(SharedWeights* w) {
    return w == nullptr ? nullptr
                        : std::launder(reinterpret_cast<SharedPackedWeights*>(w->storage_));
  }
  static const SharedPackedWeights& Get(const SharedWeights& w) {
    return *std::launder(reinterpret_cast<const SharedPackedWeights*>(w.storage_));
  }
  static void* Storage(Generator& g) { return g.storage_; }
};

// Lower-level access (scoring, custom decoders, tests): Encode / DecodeStep / Prefill, limits,
// backend counters, and the decoding state to call GreedyDecode / BeamSearch / Generate with.
inline EncoderDecoder& encoder_decoder(Session& session) { return SessionAccess::Model(session); }
inline DecoderOnly& decoder_only(Generator& generator) { return SessionAccess::Model(generator); }
inline const TranslationState& translation_state(Session& session) {
  return SessionAccess::Get(session).decoding;
}
inline const GenerationState& generation_state(Generator& generator) {
  return SessionAccess::Get(generator).decoding;
}

}  // namespace internal
}  // namespace tern

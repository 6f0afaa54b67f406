// The model objects behind tern::Session and tern::Generator, for code inside this repository
// that needs more than the public API: the C API, tests (logits, K/V state, fallback counters),
// the bench tools and the converter's quality report. Not installed: tern.hpp names no internal
// class, so a user of the installed headers cannot depend on runtime/models/.
#pragma once

#include <new>

#include "runtime/models/decoder_only.h"
#include "runtime/models/encoder_decoder.h"
#include "tern/tern.hpp"

namespace tern {
namespace internal {

// The one friend of Session and Generator: the objects were constructed in their storage by
// the constructors in session.cc / generator.cc, which check at compile time that they fit.
struct SessionAccess {
  static EncoderDecoder& Model(Session& s) {
    return *std::launder(reinterpret_cast<EncoderDecoder*>(s.storage_));
  }
  static const EncoderDecoder& Model(const Session& s) {
    return *std::launder(reinterpret_cast<const EncoderDecoder*>(s.storage_));
  }
  static DecoderOnly& Model(Generator& g) {
    return *std::launder(reinterpret_cast<DecoderOnly*>(g.storage_));
  }
  static const DecoderOnly& Model(const Generator& g) {
    return *std::launder(reinterpret_cast<const DecoderOnly*>(g.storage_));
  }
  static void* Storage(Session& s) { return s.storage_; }
  static void* Storage(Generator& g) { return g.storage_; }
};

// Lower-level access (scoring, custom decoders, tests): Encode / DecodeStep / Prefill, limits,
// backend counters.
inline EncoderDecoder& encoder_decoder(Session& session) { return SessionAccess::Model(session); }
inline DecoderOnly& decoder_only(Generator& generator) { return SessionAccess::Model(generator); }

}  // namespace internal
}  // namespace tern

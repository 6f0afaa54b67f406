#include "runtime/api/session_internal.h"
#include "runtime/models/architectures.h"
#include "tern/tern.hpp"

namespace tern {

using internal::SessionAccess;

static_assert(sizeof(SharedPackedWeights) <= SharedWeights::kStorageBytes,
              "SharedPackedWeights does not fit in SharedWeights::kStorageBytes");
static_assert(alignof(SharedPackedWeights) <= 16, "SharedPackedWeights needs more alignment");

SharedWeights::SharedWeights() { new (SessionAccess::Storage(*this)) SharedPackedWeights(); }
SharedWeights::~SharedWeights() { SessionAccess::Get(this)->~SharedPackedWeights(); }

// The layers are those of the model class that runs the model (a translation model's
// EncoderDecoder, a language model's DecoderOnly), measured as a session would.
Result<size_t> SharedWeights::RequiredBytes(const Model& model, const Limits& limits) {
  TERN_RETURN_IF_ERROR(ValidateArchitecture(model));
  if (model.config().architecture == Architecture::kDecoderOnly)
    return DecoderOnly::SharedWeightsBytes(model, limits);
  return EncoderDecoder::SharedWeightsBytes(model, limits);
}

Status SharedWeights::Init(void* memory, size_t bytes) {
  return SessionAccess::Get(this)->Bind(memory, bytes);
}

bool SharedWeights::packed() const { return SessionAccess::Get(*this).packed(); }
size_t SharedWeights::used_bytes() const { return SessionAccess::Get(*this).used_bytes(); }

}  // namespace tern

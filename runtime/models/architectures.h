// Architecture-specific checks of a loaded model: which tensors must exist, with which shapes.
#pragma once

#include "runtime/core/status.h"
#include "runtime/model/model.h"

namespace tern {

// Dispatches on config.architecture; unknown or not-yet-supported architectures are an error.
Status ValidateArchitecture(const Model& model);
// Its config part (layer counts, T5 buckets, what Universal / decoder-only models support).
Status CheckArchitectureConfig(const ModelConfig& c);

}  // namespace tern

// Architecture-specific checks of a loaded model: which tensors must exist, with which shapes.
#pragma once

#include "runtime/core/status.h"

namespace tern {

class Model;

// Dispatches on config.architecture; unknown or not-yet-supported architectures are an error.
Status ValidateArchitecture(const Model& model);

}  // namespace tern

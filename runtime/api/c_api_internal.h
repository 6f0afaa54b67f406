// What the C API's translation part (c_api.cc) and generation part (c_generate.cc) share: the
// model handle, the thread's last error, and the C -> C++ conversions. Internal to libtern.
#pragma once

#include "runtime/api/platform.h"
#include "tern/tern.h"
#include "tern/tern.hpp"

struct tern_model {
  tern_model() = default;
  ~tern_model() { tern::platform::ReleaseModelFile(&file); }
  tern_model(const tern_model&) = delete;
  tern_model& operator=(const tern_model&) = delete;

  tern::platform::ModelFile file;  // empty when loaded from memory
  tern::Model model;
  // tern_model_share_weights: the packed weights its sessions and generators share.
  tern::SharedWeights shared_weights;
  bool sharing = false;
  tern::SharedWeights* shared() { return sharing ? &shared_weights : nullptr; }
  const tern::SharedWeights* shared() const { return sharing ? &shared_weights : nullptr; }
};

// The generator handle (c_generate.cc) and its text path (c_generate_text.cc): the tokenizer is
// loaded on the first text call.
struct tern_generator {
  const tern_model* model = nullptr;
  tern::Generator generator;
  tern::TextGenerator text;
  bool text_loaded = false;
};

namespace tern::capi {

// The calling thread's last failure message (tern_last_error).
const char* LastError();
// Records a failure's message as the calling thread's last error; returns its code.
tern_status Report(const Status& status);
tern_status Fail(StatusCode code, const char* message);

Limits ToLimits(const tern_limits* limits);

// C callbacks return int; the C++ one returns bool. The C function pointer travels in the
// user slot through Trampoline.
struct CallbackBridge {
  tern_token_callback callback;
  void* user;
};
bool Trampoline(void* user, int32_t sentence, int32_t step, int32_t token);

}  // namespace tern::capi

#include "runtime/core/status.h"

#include <cstdio>

namespace tern {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInternal:
      return "internal error";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kNotSupported:
      return "not supported";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kInvalidModel:
      return "invalid model";
    case StatusCode::kUnsupportedVersion:
      return "unsupported model version";
    case StatusCode::kMissingTensor:
      return "missing tensor";
    case StatusCode::kShapeMismatch:
      return "shape mismatch";
    case StatusCode::kDTypeMismatch:
      return "dtype mismatch";
    case StatusCode::kInvalidConfig:
      return "invalid config";
    case StatusCode::kArenaTooSmall:
      return "arena too small";
    case StatusCode::kOutOfMemory:
      return "out of memory";
    case StatusCode::kIoError:
      return "i/o error";
  }
  return "unknown status";
}

Status Status::Error(StatusCode code, const char* format, ...) {
  Status status;
  status.code_ = code;
  va_list args;
  va_start(args, format);
  std::vsnprintf(status.message_, kMaxMessage, format, args);
  va_end(args);
  return status;
}

}  // namespace tern

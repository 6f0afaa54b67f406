// Status codes with a message: how every fallible call in the runtime reports failure.
// The runtime is built without exceptions; a Status carries its message in a fixed buffer so
// that building one never allocates (it may be returned from the decode loop).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>

namespace tern {

// Grouped ranges, as ExecuTorch does, so callers can test a family with `code & 0xF0`.
enum class StatusCode : uint16_t {
  kOk = 0x00,
  kInternal = 0x01,
  kCancelled = 0x02,
  // Caller mistakes.
  kInvalidArgument = 0x10,
  kOutOfRange = 0x11,
  kNotSupported = 0x12,
  kFailedPrecondition = 0x13,
  // Model file problems.
  kInvalidModel = 0x20,
  kUnsupportedVersion = 0x21,
  kMissingTensor = 0x22,
  kShapeMismatch = 0x23,
  kDTypeMismatch = 0x24,
  kInvalidConfig = 0x25,
  // Memory.
  kArenaTooSmall = 0x30,
  kOutOfMemory = 0x31,
  // Platform.
  kIoError = 0x40,
};

const char* StatusCodeName(StatusCode code);

class Status {
 public:
  static constexpr size_t kMaxMessage = 200;

  Status() = default;  // Ok.
  static Status Ok() { return Status(); }
  // printf-style message; truncated to kMaxMessage - 1 characters.
  static Status Error(StatusCode code, const char* format, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
      ;

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const char* message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  char message_[kMaxMessage] = {0};
};

}  // namespace tern

#define TERN_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::tern::Status tern_status_ = (expr);        \
    if (!tern_status_.ok()) return tern_status_; \
  } while (0)

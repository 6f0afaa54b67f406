// Result<T>: a value or the Status that explains why there is none (ExecuTorch's Result).
#pragma once

#include <new>
#include <utility>

#include "runtime/core/status.h"

namespace tern {

template <typename T>
class Result {
 public:
  Result(const T& value) : has_value_(true) { new (&storage_) T(value); }        // NOLINT
  Result(T&& value) : has_value_(true) { new (&storage_) T(std::move(value)); }  // NOLINT
  Result(const Status& status) : status_(status) {                               // NOLINT
    if (status_.ok()) status_ = Status::Error(StatusCode::kInternal, "Result built from ok status");
  }
  Result(Result&& other) noexcept : status_(other.status_), has_value_(other.has_value_) {
    if (has_value_) new (&storage_) T(std::move(other.value()));
  }
  Result(const Result& other) : status_(other.status_), has_value_(other.has_value_) {
    if (has_value_) new (&storage_) T(other.value());
  }
  Result& operator=(const Result&) = delete;
  ~Result() {
    if (has_value_) value().~T();
  }

  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }
  T& value() { return *reinterpret_cast<T*>(&storage_); }
  const T& value() const { return *reinterpret_cast<const T*>(&storage_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  Status status_;
  bool has_value_ = false;
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace tern

#define TERN_CONCAT_INNER_(a, b) a##b
#define TERN_CONCAT_(a, b) TERN_CONCAT_INNER_(a, b)
// TERN_ASSIGN_OR_RETURN(auto x, Fn()); returns Fn()'s status on failure.
#define TERN_ASSIGN_OR_RETURN(lhs, expr) \
  TERN_ASSIGN_OR_RETURN_IMPL_(TERN_CONCAT_(tern_result_, __LINE__), lhs, expr)
#define TERN_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                                \
  if (!result.ok()) return result.status();            \
  lhs = std::move(result.value())

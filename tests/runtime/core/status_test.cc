// Status (codes, printf-style messages truncated to kMaxMessage - 1 characters), Result<T> and
// the TERN_ASSIGN_OR_RETURN / TERN_RETURN_IF_ERROR macros.
#include "runtime/core/status.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/core/result.h"

namespace {

using tern::Result;
using tern::Status;
using tern::StatusCode;

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::Error(StatusCode::kInvalidArgument, "%d is odd", x);
  return x / 2;
}

// Two TERN_ASSIGN_OR_RETURN on different lines of one function.
Status Quarter(int x, int* out) {
  TERN_ASSIGN_OR_RETURN(int h, Half(x));
  TERN_ASSIGN_OR_RETURN(const int q, Half(h));
  *out = q;
  return Status::Ok();
}

// The macro in a function that itself returns a Result.
Result<std::string> Describe(int x) {
  TERN_ASSIGN_OR_RETURN(int q, Half(x));
  return std::to_string(q);
}

Result<std::unique_ptr<int>> MakeBox(bool fail) {
  if (fail) return Status::Error(StatusCode::kOutOfMemory, "no box");
  return std::make_unique<int>(17);
}

Status Unbox(bool fail, int* out) {
  TERN_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(fail));
  *out = *box;
  return Status::Ok();
}

int g_steps = 0;
Status Step(bool fail) {
  ++g_steps;
  return fail ? Status::Error(StatusCode::kIoError, "step failed") : Status::Ok();
}
Status TwoSteps(bool fail_first) {
  TERN_RETURN_IF_ERROR(Step(fail_first));
  TERN_RETURN_IF_ERROR(Step(false));
  return Status::Ok();
}

// Counts live objects, to see Result construct and destroy its value exactly once.
struct Counted {
  static int live;
  int v;
  explicit Counted(int x) : v(x) { ++live; }
  Counted(const Counted& o) : v(o.v) { ++live; }
  Counted(Counted&& o) noexcept : v(o.v) { ++live; }
  ~Counted() { --live; }
};
int Counted::live = 0;

}  // namespace

TEST_CASE("Status: default is ok with an empty message", "[core][status]") {
  const Status s;
  REQUIRE(s.ok());
  REQUIRE(s.code() == StatusCode::kOk);
  REQUIRE(std::string(s.message()).empty());
  REQUIRE(Status::Ok().ok());
}

TEST_CASE("Status: Error formats printf-style", "[core][status]") {
  const Status s = Status::Error(StatusCode::kShapeMismatch, "tensor \"%s\" is [%d, %d], want %.1f",
                                 "fc1.weight", 3, 7, 2.5);
  REQUIRE_FALSE(s.ok());
  REQUIRE(s.code() == StatusCode::kShapeMismatch);
  REQUIRE(std::string(s.message()) == "tensor \"fc1.weight\" is [3, 7], want 2.5");
  const Status plain = Status::Error(StatusCode::kInternal, "no arguments");
  REQUIRE(std::string(plain.message()) == "no arguments");
}

TEST_CASE("Status: messages are truncated at kMaxMessage - 1 characters", "[core][status]") {
  const size_t max = Status::kMaxMessage;
  REQUIRE(max == 200);
  for (size_t len : {max - 2, max - 1, max, max + 1, size_t{1000}}) {
    std::string text;
    for (size_t i = 0; i < len; ++i) text.push_back(static_cast<char>('a' + i % 26));
    const Status s = Status::Error(StatusCode::kInvalidModel, "%s", text.c_str());
    const std::string got = s.message();
    INFO("len " << len);
    REQUIRE(got.size() == std::min(len, max - 1));
    REQUIRE(got == text.substr(0, max - 1));
  }
  // Formatting that overflows mid-number.
  std::string pad(195, 'x');
  const Status s = Status::Error(StatusCode::kInvalidModel, "%s%d", pad.c_str(), 123456789);
  REQUIRE(std::string(s.message()) == pad + "1234");
}

TEST_CASE("Status: code names are distinct and codes are grouped", "[core][status]") {
  const StatusCode codes[] = {StatusCode::kOk,
                              StatusCode::kInternal,
                              StatusCode::kCancelled,
                              StatusCode::kInvalidArgument,
                              StatusCode::kOutOfRange,
                              StatusCode::kNotSupported,
                              StatusCode::kFailedPrecondition,
                              StatusCode::kInvalidModel,
                              StatusCode::kUnsupportedVersion,
                              StatusCode::kMissingTensor,
                              StatusCode::kShapeMismatch,
                              StatusCode::kDTypeMismatch,
                              StatusCode::kInvalidConfig,
                              StatusCode::kArenaTooSmall,
                              StatusCode::kOutOfMemory,
                              StatusCode::kIoError};
  std::set<std::string> names;
  for (StatusCode c : codes) {
    const char* name = tern::StatusCodeName(c);
    REQUIRE(name != nullptr);
    REQUIRE(std::strlen(name) > 0);
    names.insert(name);
  }
  REQUIRE(names.size() == sizeof codes / sizeof codes[0]);
  REQUIRE(std::string(tern::StatusCodeName(StatusCode::kInvalidArgument)) == "invalid argument");
  REQUIRE(std::string(tern::StatusCodeName(StatusCode::kOk)) == "ok");
  REQUIRE((static_cast<int>(StatusCode::kShapeMismatch) & 0xF0) == 0x20);
  REQUIRE((static_cast<int>(StatusCode::kArenaTooSmall) & 0xF0) == 0x30);
  REQUIRE((static_cast<int>(StatusCode::kNotSupported) & 0xF0) == 0x10);
}

TEST_CASE("Result: holds a value or an error", "[core][status]") {
  Result<int> good = Half(14);
  REQUIRE(good.ok());
  REQUIRE(good.value() == 7);
  REQUIRE(*good == 7);
  REQUIRE(good.status().ok());

  Result<int> bad = Half(7);
  REQUIRE_FALSE(bad.ok());
  REQUIRE(bad.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(std::string(bad.status().message()) == "7 is odd");

  // A Result built from an ok Status has no value, so it must not claim success.
  Result<int> odd_ok = Status::Ok();
  REQUIRE_FALSE(odd_ok.ok());
  REQUIRE(odd_ok.status().code() == StatusCode::kInternal);

  Result<std::string> s = std::string("hello");
  REQUIRE(s->size() == 5);
  Result<std::string> copy(s);
  REQUIRE(copy.value() == "hello");
  Result<std::string> moved(std::move(s));
  REQUIRE(moved.value() == "hello");
  Result<std::string> err_copy(Result<std::string>(Status::Error(StatusCode::kIoError, "io")));
  REQUIRE_FALSE(err_copy.ok());
  REQUIRE(err_copy.status().code() == StatusCode::kIoError);
}

TEST_CASE("Result: constructs and destroys its value exactly once", "[core][status]") {
  Counted::live = 0;
  {
    Result<Counted> a = Counted(3);
    REQUIRE(Counted::live == 1);
    Result<Counted> b(a);
    REQUIRE(Counted::live == 2);
    Result<Counted> c(std::move(a));
    REQUIRE(Counted::live == 3);
    REQUIRE(c->v == 3);
    Result<Counted> e = Status::Error(StatusCode::kInternal, "none");
    Result<Counted> f(e);
    REQUIRE(Counted::live == 3);  // errors hold no value
  }
  REQUIRE(Counted::live == 0);
}

TEST_CASE("TERN_ASSIGN_OR_RETURN assigns or returns the error", "[core][status]") {
  int out = -1;
  REQUIRE(Quarter(12, &out).ok());
  REQUIRE(out == 3);

  out = -1;
  const Status first = Quarter(7, &out);  // fails in the first macro
  REQUIRE(first.code() == StatusCode::kInvalidArgument);
  REQUIRE(std::string(first.message()) == "7 is odd");
  REQUIRE(out == -1);

  const Status second = Quarter(6, &out);  // 6 -> 3, fails in the second
  REQUIRE(std::string(second.message()) == "3 is odd");
  REQUIRE(out == -1);

  Result<std::string> d = Describe(8);
  REQUIRE(d.ok());
  REQUIRE(d.value() == "4");
  Result<std::string> e = Describe(9);
  REQUIRE_FALSE(e.ok());
  REQUIRE(std::string(e.status().message()) == "9 is odd");

  REQUIRE(Unbox(false, &out).ok());
  REQUIRE(out == 17);
  REQUIRE(Unbox(true, &out).code() == StatusCode::kOutOfMemory);
}

TEST_CASE("TERN_RETURN_IF_ERROR stops at the first error", "[core][status]") {
  g_steps = 0;
  REQUIRE(TwoSteps(false).ok());
  REQUIRE(g_steps == 2);
  g_steps = 0;
  const Status s = TwoSteps(true);
  REQUIRE(s.code() == StatusCode::kIoError);
  REQUIRE(std::string(s.message()) == "step failed");
  REQUIRE(g_steps == 1);
}

// Inputs found while fuzzing the checkpoint readers (tests/fuzz/, docs/fuzzing.md), each
// reduced to the smallest file that shows the problem. Every one must be refused with a
// convert::Error: before the fixes these read outside the file, overflowed signed arithmetic,
// overflowed the stack, or leaked.
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "converter/error.h"
#include "converter/readers/checkpoint.h"
#include "converter/readers/pickle.h"
#include "converter/readers/zip.h"

namespace {

using tern::convert::Error;

void Put(std::string* s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A zip archive of stored entries, as torch.save writes (no zip64, no extra fields).
std::string StoredZip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, central;
  for (const auto& e : entries) {
    const uint32_t crc =
        tern::convert::Crc32(reinterpret_cast<const uint8_t*>(e.second.data()), e.second.size());
    const uint64_t offset = out.size();
    Put(&out, 0x04034b50, 4);
    Put(&out, 20, 2);  // version needed
    Put(&out, 0, 2);   // flags
    Put(&out, 0, 2);   // stored
    Put(&out, 0, 4);   // time, date
    Put(&out, crc, 4);
    Put(&out, e.second.size(), 4);
    Put(&out, e.second.size(), 4);
    Put(&out, e.first.size(), 2);
    Put(&out, 0, 2);
    out += e.first + e.second;
    Put(&central, 0x02014b50, 4);
    Put(&central, 20, 2);
    Put(&central, 20, 2);
    Put(&central, 0, 2);
    Put(&central, 0, 2);
    Put(&central, 0, 4);
    Put(&central, crc, 4);
    Put(&central, e.second.size(), 4);
    Put(&central, e.second.size(), 4);
    Put(&central, e.first.size(), 2);
    Put(&central, 0, 2);  // extra
    Put(&central, 0, 2);  // comment
    Put(&central, 0, 2);  // disk
    Put(&central, 0, 2);  // internal attributes
    Put(&central, 0, 4);  // external attributes
    Put(&central, offset, 4);
    central += e.first;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  Put(&out, 0x06054b50, 4);
  Put(&out, 0, 4);
  Put(&out, entries.size(), 2);
  Put(&out, entries.size(), 2);
  Put(&out, central.size(), 4);
  Put(&out, cd_offset, 4);
  Put(&out, 0, 2);
  return out;
}

// A string literal with embedded NULs, all of it.
template <size_t N>
std::string Lit(const char (&s)[N]) {
  return std::string(s, N - 1);
}

// Pickle pieces (protocol 2).
std::string Str(const std::string& s) {
  std::string out = "X";
  Put(&out, s.size(), 4);
  return out + s;
}
std::string Long(int64_t v) {  // LONG1 with 8 bytes: any int64
  std::string out = "\x8a\x08";
  Put(&out, static_cast<uint64_t>(v), 8);
  return out;
}
std::string Ints(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (int64_t x : v) out += Long(x);
  return out + "t";
}
// {"w": _rebuild_tensor_v2(storage("0", FloatStorage, numel), 0, size, stride, False, {})}
std::string StateDict(int64_t numel, const std::vector<int64_t>& size,
                      const std::vector<int64_t>& stride) {
  const std::string storage =
      "(" + Str("storage") + "ctorch\nFloatStorage\n" + Str("0") + Str("cpu") + Long(numel) + "tQ";
  const std::string tensor = "ctorch._utils\n_rebuild_tensor_v2\n(" + storage + Long(0) +
                             Ints(size) + Ints(stride) + "\x89}tR";
  return std::string("\x80\x02}(") + Str("w") + tensor + "u.";
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes) {
    char name[] = "/tmp/tern-fuzz-regression-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::string TorchFile(const std::string& pickle, const std::string& storage) {
  return StoredZip(
      {{"archive/data.pkl", pickle}, {"archive/data/0", storage}, {"archive/version", "3\n"}});
}

TEST_CASE("fuzz: a storage whose byte size overflows 64 bits is refused",
          "[fuzz][readers][torch]") {
  // numel 2^62 float32 elements: 2^62 * 4 wraps to 0, which matched the empty storage entry, and
  // the 2^20-element view then read 4 MiB past the end of the file.
  TempFile file(TorchFile(StateDict(int64_t{1} << 62, {1 << 20}, {1}), ""));
  REQUIRE_THROWS_AS(tern::convert::ReadTorchZip(file.path, {}), Error);
}

TEST_CASE("fuzz: a view whose last element overflows int64 is refused", "[fuzz][readers][torch]") {
  // size 2^24 + 1 with stride 2^40: (size - 1) * stride = 2^64 wrapped to 0, so the view seemed
  // to end at element 0 of its one-element storage; reading it jumps 4 TiB per element.
  const std::string one_float("\x00\x00\x80\x3f", 4);
  TempFile file(TorchFile(StateDict(1, {(int64_t{1} << 24) + 1}, {int64_t{1} << 40}), one_float));
  REQUIRE_THROWS_AS(tern::convert::ReadTorchZip(file.path, {}), Error);
}

TEST_CASE("fuzz: Checkpoint::Add checks view bounds without overflow", "[fuzz][readers]") {
  // The same view handed to Checkpoint::Add directly (the check every reader relies on).
  float storage = 1.0f;
  tern::convert::CheckpointTensor t;
  t.name = "w";
  t.where = "test";
  t.dtype = tern::convert::SourceDType::kF32;
  t.base = reinterpret_cast<const uint8_t*>(&storage);
  t.storage_elements = 1;
  t.shape = {(int64_t{1} << 24) + 1};
  t.strides = {int64_t{1} << 40};
  tern::convert::Checkpoint ckpt;
  REQUIRE_THROWS_AS(ckpt.Add(t), Error);
  // Two dimensions whose terms are each fine but whose sum overflows.
  t.shape = {(int64_t{1} << 23) + 1, (int64_t{1} << 23) + 1};
  t.strides = {int64_t{1} << 40, int64_t{1} << 40};
  REQUIRE_THROWS_AS(ckpt.Add(t), Error);
}

TEST_CASE("a broadcast view (stride 0) is capped, small ones still read",
          "[fuzz][readers][torch]") {
  // torch's expand: 2^40 elements over one float; widening it would ask for 4 TiB.
  const std::string one_float("\x00\x00\x80\x3f", 4);
  {
    TempFile file(TorchFile(StateDict(1, {int64_t{1} << 20, int64_t{1} << 20}, {0, 0}), one_float));
    REQUIRE_THROWS_WITH(tern::convert::ReadTorchZip(file.path, {}),
                        Catch::Matchers::ContainsSubstring("(a broadcast, stride 0) is refused"));
  }
  // A small broadcast is a legal tensor and reads as its repeated values.
  TempFile file(TorchFile(StateDict(1, {3, 2}, {0, 0}), one_float));
  const tern::convert::Checkpoint ckpt = tern::convert::ReadTorchZip(file.path, {});
  const tern::convert::HostTensor t = ckpt.Float(ckpt.tensors().begin()->first);
  CHECK(t.values == std::vector<float>(6, 1.0f));
}

TEST_CASE("fuzz: deeply nested pickles are refused before they overflow the stack",
          "[fuzz][readers][pickle]") {
  // EMPTY_LIST, then a million TUPLE1: each wraps the previous value. Destroying the million-deep
  // chain of shared_ptrs recursed once per level and overflowed the stack.
  std::string p = "\x80\x02]";
  p.append(1000000, '\x85');
  p += ".";
  REQUIRE_THROWS_AS(
      tern::convert::Unpickle(reinterpret_cast<const uint8_t*>(p.data()), p.size(), "deep.pkl"),
      Error);
}

TEST_CASE("fuzz: a pickle list that contains itself is refused", "[fuzz][readers][pickle]") {
  // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND: the list holds a shared_ptr to itself, a cycle
  // that is never freed (LeakSanitizer) and that any recursive walk would follow forever.
  const std::string p =
      Lit("\x80\x02]q\x00h\x00"
          "a.");
  REQUIRE_THROWS_AS(
      tern::convert::Unpickle(reinterpret_cast<const uint8_t*>(p.data()), p.size(), "cycle.pkl"),
      Error);
  // The same through a dict value and SETITEM.
  const std::string d =
      Lit("\x80\x02}q\x00"
          "X\x01\x00\x00\x00kh\x00s.");
  REQUIRE_THROWS_AS(
      tern::convert::Unpickle(reinterpret_cast<const uint8_t*>(d.data()), d.size(), "cycle.pkl"),
      Error);
}

TEST_CASE("fuzz: .npy shapes whose strides overflow are refused", "[fuzz][readers][npz]") {
  // A zero dimension makes the array empty, so the element count never exceeded its bound, but
  // the row-major strides of the other three 2^43-ish dimensions overflowed int64.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 10995116277760, 10995116277760, "
      "10995116277760), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string npy = "\x93NUMPY\x01";
  npy.push_back('\0');
  Put(&npy, header.size(), 2);
  npy += header;
  tern::convert::CheckpointTensor t;
  REQUIRE_THROWS_AS(tern::convert::ParseNpyHeader(reinterpret_cast<const uint8_t*>(npy.data()),
                                                  npy.size(), "x.npy", &t),
                    Error);
  // Fortran order computes its strides from the front: the same overflow.
  std::string fortran = npy;
  fortran.replace(fortran.find("False"), 5, "True ");
  REQUIRE_THROWS_AS(tern::convert::ParseNpyHeader(reinterpret_cast<const uint8_t*>(fortran.data()),
                                                  fortran.size(), "x.npy", &t),
                    Error);
}

TEST_CASE("fuzz: safetensors shapes whose strides overflow are refused",
          "[fuzz][readers][safetensors]") {
  // [0, 2^40, 2^40]: zero elements and zero bytes, so Parse accepted it, but the strides that
  // Checkpoint::Add derives for it (2^80) overflowed int64.
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[0,1099511627776,1099511627776],"data_offsets":[0,0]}})";
  std::string file;
  Put(&file, header.size(), 8);
  file += header;
  TempFile path(file);
  REQUIRE_THROWS_AS(tern::convert::ReadSafetensorsCheckpoint(path.path), Error);
}

}  // namespace

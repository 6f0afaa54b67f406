// SafetensorsFile::Parse over files built byte by byte here (8-byte little-endian header length,
// JSON header, data), every validation error with the tensor or file it names, and the
// WriteSafetensors -> Read round trip.
#include "converter/readers/safetensors.h"

#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "converter/error.h"

namespace {

using Catch::Matchers::ContainsSubstring;
using tern::convert::HostTensor;
using tern::convert::SafetensorsFile;

const char kLabel[] = "model.safetensors";

// An 8-byte little-endian length (the real one unless given), the header text, the data.
std::vector<uint8_t> File(const std::string& header, const std::vector<uint8_t>& data,
                          uint64_t length = UINT64_MAX) {
  if (length == UINT64_MAX) length = header.size();
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

template <typename T>
void Append(std::vector<uint8_t>& data, T value) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  data.insert(data.end(), b, b + sizeof(T));
}

std::vector<uint8_t> Zeros(size_t n) { return std::vector<uint8_t>(n, 0); }

SafetensorsFile Parse(const std::string& header, const std::vector<uint8_t>& data) {
  return SafetensorsFile::Parse(File(header, data), kLabel);
}

std::string TempPath(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "_" + std::to_string(::getpid()) + ".safetensors"))
      .string();
}

}  // namespace

TEST_CASE("Safetensors: a good file with every float and int dtype", "[converter][safetensors]") {
  std::vector<uint8_t> data;
  const float w[6] = {0.5f, -1.25f, 3.0f, 1e-20f, -0.0f, 65504.0f};
  for (float v : w) Append(data, v);                                                   // [0, 24)
  for (uint16_t h : {0x3C00, 0xC000, 0x3555}) Append(data, static_cast<uint16_t>(h));  // [24, 30)
  Append(data, int32_t{7});                                                            // [30, 38)
  Append(data, int32_t{-3});
  Append(data, int64_t{1} << 40);               // [38, 46)
  Append(data, 0.1);                            // [46, 54) F64
  Append(data, static_cast<uint16_t>(0x3F80));  // [54, 58) BF16: 1.0, -2.5
  Append(data, static_cast<uint16_t>(0xC020));
  const std::string header =
      R"({"__metadata__": {"format": "pt", "source": "test"},)"
      R"( "enc.fc1.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},)"
      R"( "enc.half": {"dtype": "F16", "shape": [3], "data_offsets": [24, 30]},)"
      R"( "enc.ids": {"dtype": "I32", "shape": [2], "data_offsets": [30, 38]},)"
      R"( "enc.big": {"dtype": "I64", "shape": [1, 1], "data_offsets": [38, 46]},)"
      R"( "enc.double": {"dtype": "F64", "shape": [], "data_offsets": [46, 54]},)"
      R"( "enc.brain": {"dtype": "BF16", "shape": [2], "data_offsets": [54, 58]},)"
      R"( "enc.empty": {"dtype": "F32", "shape": [0, 3], "data_offsets": [58, 58]}})";
  const SafetensorsFile file = Parse(header, data);
  REQUIRE(file.entries().size() == 7);
  REQUIRE(file.metadata() ==
          std::map<std::string, std::string>{{"format", "pt"}, {"source", "test"}});
  REQUIRE(file.has("enc.fc1.weight"));
  REQUIRE_FALSE(file.has("__metadata__"));
  REQUIRE_FALSE(file.has("enc.missing"));

  const auto& e = file.entries().at("enc.fc1.weight");
  REQUIRE(e.dtype == "F32");
  REQUIRE(e.shape == std::vector<int64_t>{2, 3});
  REQUIRE(e.begin == 0);
  REQUIRE(e.end == 24);

  const HostTensor t = file.Float("enc.fc1.weight");
  REQUIRE(t.name == "enc.fc1.weight");
  REQUIRE(t.shape == std::vector<int64_t>{2, 3});
  REQUIRE(t.values.size() == 6);
  REQUIRE(std::memcmp(t.values.data(), w, sizeof w) == 0);

  REQUIRE(file.Float("enc.half").values == std::vector<float>{1.0f, -2.0f, 0.333251953125f});
  REQUIRE(file.Float("enc.double").values == std::vector<float>{0.1f});
  REQUIRE(file.Float("enc.double").shape.empty());
  REQUIRE(file.Float("enc.brain").values == std::vector<float>{1.0f, -2.5f});
  REQUIRE(file.Float("enc.empty").values.empty());
  REQUIRE(file.Ints("enc.ids") == std::vector<int64_t>{7, -3});
  REQUIRE(file.Ints("enc.big") == std::vector<int64_t>{int64_t{1} << 40});
  REQUIRE(file.Float("enc.ids", true).values == std::vector<float>{7.0f, -3.0f});

  REQUIRE_THROWS_WITH(file.Float("enc.ids"), ContainsSubstring("enc.ids"));
  REQUIRE_THROWS_WITH(file.Ints("enc.fc1.weight"), ContainsSubstring("enc.fc1.weight"));
  REQUIRE_THROWS_WITH(file.Float("enc.missing"), ContainsSubstring("enc.missing"));
  REQUIRE_THROWS_WITH(file.Ints("enc.missing"), ContainsSubstring("enc.missing"));
}

TEST_CASE("Safetensors: header padding with spaces and an empty header are fine",
          "[converter][safetensors]") {
  std::vector<uint8_t> data;
  Append(data, 2.0f);
  const SafetensorsFile file =
      Parse(R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}      )", data);
  REQUIRE(file.Float("x").values == std::vector<float>{2.0f});
  REQUIRE(Parse("{}", {}).entries().empty());
}

TEST_CASE("Safetensors: files too short or with a bad header length", "[converter][safetensors]") {
  REQUIRE_THROWS_WITH(SafetensorsFile::Parse({1, 2, 3}, kLabel), ContainsSubstring(kLabel));
  REQUIRE_THROWS_AS(SafetensorsFile::Parse({}, kLabel), tern::convert::Error);
  const std::string header = R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
  // Length one past the end of the file.
  const auto past = File(header, Zeros(4), header.size() + 5);
  REQUIRE_THROWS_WITH(SafetensorsFile::Parse(past, kLabel),
                      ContainsSubstring(kLabel) && ContainsSubstring("header length") &&
                          ContainsSubstring(std::to_string(header.size() + 5)));
  // Length that would wrap around if added to a pointer.
  const auto huge = File(header, Zeros(4), UINT64_MAX - 3);
  REQUIRE_THROWS_WITH(SafetensorsFile::Parse(huge, kLabel), ContainsSubstring("header length"));
}

TEST_CASE("Safetensors: header that is not JSON, or not an object", "[converter][safetensors]") {
  REQUIRE_THROWS_WITH(Parse(R"({"x": {"dtype": "F32", )", Zeros(4)),
                      ContainsSubstring(kLabel) && ContainsSubstring("not valid JSON"));
  REQUIRE_THROWS_WITH(Parse("", {}), ContainsSubstring(kLabel));
  REQUIRE_THROWS_WITH(Parse("[1, 2, 3]", {}),
                      ContainsSubstring(kLabel) && ContainsSubstring("not a JSON object"));
  REQUIRE_THROWS_WITH(Parse(R"({"__metadata__": {"format": 3}})", {}),
                      ContainsSubstring("__metadata__.format"));
  REQUIRE_THROWS_WITH(Parse(R"({"__metadata__": [1]})", {}), ContainsSubstring("__metadata__"));
}

TEST_CASE("Safetensors: data_offsets past the end (truncated file) name the tensor",
          "[converter][safetensors]") {
  const std::string header =
      R"({"dec.out.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})";
  REQUIRE_THROWS_WITH(Parse(header, Zeros(20)), ContainsSubstring("\"dec.out.weight\"") &&
                                                    ContainsSubstring(kLabel) &&
                                                    ContainsSubstring("truncated"));
  // Begin after end: reported as reversed, not as outside the data section.
  REQUIRE_THROWS_WITH(
      Parse(R"({"dec.rev": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", Zeros(8)),
      ContainsSubstring("\"dec.rev\"") &&
          ContainsSubstring("data_offsets [8, 4] are reversed (the end comes before the begin)"));
  // Offsets so large that begin + size would overflow.
  REQUIRE_THROWS_WITH(
      Parse(
          R"({"dec.wrap": {"dtype": "U8", "shape": [4], "data_offsets": [18446744073709551614, 2]}})",
          Zeros(8)),
      ContainsSubstring("\"dec.wrap\"") && ContainsSubstring("are reversed"));
}

TEST_CASE("Safetensors: byte size must equal dtype x shape", "[converter][safetensors]") {
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.fc2.bias": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})",
            Zeros(24)),
      ContainsSubstring("\"enc.fc2.bias\"") && ContainsSubstring("20") &&
          ContainsSubstring("needs 24"));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.half": {"dtype": "F16", "shape": [3], "data_offsets": [0, 12]}})", Zeros(12)),
      ContainsSubstring("\"enc.half\"") && ContainsSubstring("needs 6"));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.scalar": {"dtype": "I64", "shape": [], "data_offsets": [0, 4]}})", Zeros(8)),
      ContainsSubstring("\"enc.scalar\"") && ContainsSubstring("needs 8"));
  // A shape whose element count overflows.
  REQUIRE_THROWS_WITH(
      Parse(
          R"({"enc.huge": {"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 4]}})",
          Zeros(4)),
      ContainsSubstring("\"enc.huge\""));
}

TEST_CASE("Safetensors: overlapping data ranges name the tensors", "[converter][safetensors]") {
  // "enc.a" is [0, 24), "enc.b" is [16, 40): 8 bytes shared.
  const std::string header =
      R"({"enc.a": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]},)"
      R"( "enc.b": {"dtype": "F32", "shape": [6], "data_offsets": [16, 40]}})";
  REQUIRE_THROWS_WITH(Parse(header, Zeros(40)),
                      ContainsSubstring(kLabel) && ContainsSubstring("overlap"));
  // Which tensors overlap must be in the message (converter/error.h: "the message always names
  // the file, tensor or field at fault").
  REQUIRE_THROWS_WITH(Parse(header, Zeros(40)),
                      ContainsSubstring("enc.a") && ContainsSubstring("enc.b"));
  // Touching ranges do not overlap.
  const std::string touching =
      R"({"enc.a": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]},)"
      R"( "enc.b": {"dtype": "F32", "shape": [4], "data_offsets": [24, 40]}})";
  REQUIRE(Parse(touching, Zeros(40)).entries().size() == 2);
  // A range inside another.
  const std::string inside =
      R"({"enc.outer": {"dtype": "U8", "shape": [32], "data_offsets": [0, 32]},)"
      R"( "enc.inner": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]}})";
  REQUIRE_THROWS_WITH(Parse(inside, Zeros(32)), ContainsSubstring("overlap"));
}

TEST_CASE("Safetensors: unsupported dtypes and malformed fields name the tensor",
          "[converter][safetensors]") {
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.q": {"dtype": "Q4_0", "shape": [2], "data_offsets": [0, 1]}})", Zeros(1)),
      ContainsSubstring("\"enc.q\"") && ContainsSubstring("unsupported dtype Q4_0"));
  REQUIRE_THROWS_WITH(Parse(R"({"enc.nodtype": {"shape": [1], "data_offsets": [0, 4]}})", Zeros(4)),
                      ContainsSubstring("\"enc.nodtype\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.noshape": {"dtype": "F32", "data_offsets": [0, 4]}})", Zeros(4)),
      ContainsSubstring("\"enc.noshape\""));
  REQUIRE_THROWS_WITH(Parse(R"({"enc.nooffsets": {"dtype": "F32", "shape": [1]}})", Zeros(4)),
                      ContainsSubstring("\"enc.nooffsets\""));
  REQUIRE_THROWS_WITH(Parse(R"({"enc.scalar_entry": 5})", Zeros(4)),
                      ContainsSubstring("\"enc.scalar_entry\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.dtypeint": {"dtype": 1, "shape": [1], "data_offsets": [0, 4]}})", Zeros(4)),
      ContainsSubstring("\"enc.dtypeint\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.negdim": {"dtype": "F32", "shape": [-1, 3], "data_offsets": [0, 4]}})",
            Zeros(4)),
      ContainsSubstring("\"enc.negdim\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.floatdim": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})",
            Zeros(4)),
      ContainsSubstring("\"enc.floatdim\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.shapeobj": {"dtype": "F32", "shape": {"a": 1}, "data_offsets": [0, 4]}})",
            Zeros(4)),
      ContainsSubstring("\"enc.shapeobj\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.negoff": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", Zeros(4)),
      ContainsSubstring("\"enc.negoff\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.stroff": {"dtype": "F32", "shape": [1], "data_offsets": ["0", "4"]}})",
            Zeros(4)),
      ContainsSubstring("\"enc.stroff\""));
  REQUIRE_THROWS_WITH(
      Parse(R"({"enc.threeoff": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}})",
            Zeros(8)),
      ContainsSubstring("\"enc.threeoff\""));
}

TEST_CASE("Safetensors: WriteSafetensors round trip", "[converter][safetensors]") {
  std::vector<HostTensor> tensors(3);
  tensors[0].name = "encoder.embed_tokens.weight";
  tensors[0].shape = {3, 7};
  tensors[1].name = "encoder.layer_norm.bias";
  tensors[1].shape = {13};
  tensors[2].name = "decoder.layers.0.fc1.weight";
  tensors[2].shape = {1, 1, 5};
  float next = -3.0f;
  for (auto& t : tensors) {
    for (int64_t i = 0; i < t.elements(); ++i) {
      t.values.push_back(next);
      next = next * -1.37f + 0.11f;
    }
  }
  tensors[1].values[0] = -0.0f;
  tensors[1].values[1] = 1e-42f;  // float subnormal
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"seed", "42"}};
  const std::string path = TempPath("tern_safetensors_roundtrip");
  tern::convert::WriteSafetensors(path, tensors, metadata);

  // The raw file: length prefix, then a header padded so the data starts 8-byte aligned.
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  REQUIRE(raw.size() >= 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | raw[static_cast<size_t>(i)];
  REQUIRE((8 + header_len) % 8 == 0);
  REQUIRE(raw.size() == 8 + header_len + (21 + 13 + 5) * 4);

  const SafetensorsFile file = SafetensorsFile::Read(path);
  std::filesystem::remove(path);
  REQUIRE(file.metadata() == metadata);
  REQUIRE(file.entries().size() == 3);
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    INFO(t.name);
    REQUIRE(file.has(t.name));
    const auto& e = file.entries().at(t.name);
    REQUIRE(e.dtype == "F32");
    REQUIRE(e.shape == t.shape);
    REQUIRE(e.begin == offset);  // data in the order given, back to back
    REQUIRE(e.end == offset + t.values.size() * 4);
    offset = e.end;
    const HostTensor back = file.Float(t.name);
    REQUIRE(back.shape == t.shape);
    REQUIRE(back.values.size() == t.values.size());
    REQUIRE(std::memcmp(back.values.data(), t.values.data(), t.values.size() * 4) == 0);
  }

  // No metadata: no "__metadata__" key at all.
  const std::string path2 = TempPath("tern_safetensors_nometa");
  tern::convert::WriteSafetensors(path2, {tensors[1]}, {});
  const SafetensorsFile plain = SafetensorsFile::Read(path2);
  std::filesystem::remove(path2);
  REQUIRE(plain.metadata().empty());
  REQUIRE(plain.Float("encoder.layer_norm.bias").values.size() == 13);
}

TEST_CASE("Safetensors: Read names a missing file", "[converter][safetensors]") {
  const std::string path = TempPath("tern_safetensors_missing");
  REQUIRE_THROWS_WITH(SafetensorsFile::Read(path), ContainsSubstring(path));
}

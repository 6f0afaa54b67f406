#include "converter/readers/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/core/fp16.h"

namespace tern::convert {

namespace {

size_t DTypeBytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error(path + ": cannot read size");
  in.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw Error(path + ": read failed");
  return bytes;
}

}  // namespace

SafetensorsFile SafetensorsFile::Read(const std::string& path) {
  return Parse(ReadFile(path), path);
}

SafetensorsFile SafetensorsFile::Parse(std::vector<uint8_t> bytes, const std::string& label) {
  SafetensorsFile file;
  file.label_ = label;
  file.bytes_ = std::move(bytes);
  const auto& b = file.bytes_;
  if (b.size() < 8) throw Error(label + ": too small to be a safetensors file");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | b[static_cast<size_t>(i)];
  if (header_size > b.size() - 8 || header_size > (uint64_t{100} << 20)) {
    throw Error(label + ": header length " + std::to_string(header_size) + " exceeds the file");
  }
  file.data_start_ = 8 + static_cast<size_t>(header_size);
  const uint64_t data_size = b.size() - file.data_start_;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(b.begin() + 8,
                                   b.begin() + static_cast<std::ptrdiff_t>(file.data_start_));
  } catch (const nlohmann::json::exception& e) {
    throw Error(label + ": header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) throw Error(label + ": header is not a JSON object");
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw Error(label + ": __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw Error(label + ": __metadata__." + m.key() + " is not a string");
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = label + ": tensor \"" + name + "\"";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets")) {
      throw Error(where + " needs dtype, shape and data_offsets");
    }
    SafetensorsEntry e;
    if (!v["dtype"].is_string()) throw Error(where + ": dtype is not a string");
    e.dtype = v["dtype"].get<std::string>();
    const size_t elem = DTypeBytes(e.dtype);
    if (elem == 0) throw Error(where + ": unsupported dtype " + e.dtype);
    if (!v["shape"].is_array()) throw Error(where + ": shape is not an array");
    uint64_t count = 1;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40)) {
        throw Error(where + ": invalid dimension in shape");
      }
      e.shape.push_back(d.get<int64_t>());
      if (e.shape.back() != 0 &&
          count > (uint64_t{1} << 40) / static_cast<uint64_t>(e.shape.back())) {
        throw Error(where + ": shape is too large");
      }
      count *= static_cast<uint64_t>(e.shape.back());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      throw Error(where + ": data_offsets must be two non-negative integers");
    }
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    if (e.begin > e.end) {
      throw Error(where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + "] are reversed (the end comes before the begin)");
    }
    if (e.end > data_size) {
      throw Error(where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + ") lie outside the " + std::to_string(data_size) +
                  "-byte data section (truncated file?)");
    }
    if (e.end - e.begin != count * elem) {
      throw Error(where + ": has " + std::to_string(e.end - e.begin) + " bytes, but " + e.dtype +
                  " with its shape needs " + std::to_string(count * elem));
    }
    ranges.push_back({{e.begin, e.end}, name});
    file.entries_[name] = std::move(e);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first.first < ranges[i - 1].first.second) {
      throw Error(label + ": data of tensors \"" + ranges[i - 1].second + "\" and \"" +
                  ranges[i].second + "\" overlap");
    }
  }
  return file;
}

HostTensor SafetensorsFile::Float(const std::string& name, bool allow_int) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw Error(label_ + ": no tensor \"" + name + "\"");
  const SafetensorsEntry& e = it->second;
  HostTensor t;
  t.name = name;
  t.shape = e.shape;
  const uint8_t* p = bytes_.data() + data_start_ + e.begin;
  const size_t n = static_cast<size_t>(t.elements());
  t.values.resize(n);
  auto load = [&](auto tag, size_t i) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    return v;
  };
  for (size_t i = 0; i < n; ++i) {
    float v;
    if (e.dtype == "F32") {
      v = load(float{}, i);
    } else if (e.dtype == "F16") {
      v = Fp16ToFp32(load(uint16_t{}, i));
    } else if (e.dtype == "BF16") {
      const uint32_t bits = static_cast<uint32_t>(load(uint16_t{}, i)) << 16;
      std::memcpy(&v, &bits, 4);
    } else if (e.dtype == "F64") {
      v = static_cast<float>(load(double{}, i));
    } else if (allow_int && e.dtype == "I32") {
      v = static_cast<float>(load(int32_t{}, i));
    } else if (allow_int && e.dtype == "I64") {
      v = static_cast<float>(load(int64_t{}, i));
    } else {
      throw Error(label_ + ": tensor \"" + name + "\" has dtype " + e.dtype +
                  "; expected a float type");
    }
    t.values[i] = v;
  }
  return t;
}

std::vector<int64_t> SafetensorsFile::Ints(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw Error(label_ + ": no tensor \"" + name + "\"");
  const SafetensorsEntry& e = it->second;
  const uint8_t* p = bytes_.data() + data_start_ + e.begin;
  std::vector<int64_t> out;
  if (e.dtype == "I32") {
    for (uint64_t o = 0; o < e.end - e.begin; o += 4) {
      int32_t v;
      std::memcpy(&v, p + o, 4);
      out.push_back(v);
    }
  } else if (e.dtype == "I64") {
    for (uint64_t o = 0; o < e.end - e.begin; o += 8) {
      int64_t v;
      std::memcpy(&v, p + o, 8);
      out.push_back(v);
    }
  } else {
    throw Error(label_ + ": tensor \"" + name + "\" has dtype " + e.dtype +
                "; expected I32 or I64");
  }
  return out;
}

void WriteSafetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t size = t.values.size() * 4;
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8) text.push_back(' ');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot create");
  uint64_t n = text.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.values.data()),
              static_cast<std::streamsize>(t.values.size() * 4));
  }
  if (!out) throw Error(path + ": write failed");
}

}  // namespace tern::convert

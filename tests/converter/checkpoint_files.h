// Test helpers that write checkpoint files byte by byte: stored zip archives (optionally
// damaged), torch.save-style archives around a hand-written pickle, safetensors with any dtype.
// Header-only (the converter tests are the *_test.cc files of this directory).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "converter/readers/zip.h"

namespace tern::testing {

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/tern-converter-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~ScratchDir() { std::system(("rm -rf " + path).c_str()); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void Put16(std::string* s, uint32_t v) {
  s->push_back(static_cast<char>(v & 0xFF));
  s->push_back(static_cast<char>((v >> 8) & 0xFF));
}
inline void Put32(std::string* s, uint32_t v) {
  Put16(s, v & 0xFFFF);
  Put16(s, v >> 16);
}

// A zip archive of stored entries. `method` goes into both headers (8 = claims deflate).
inline std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& entries,
                           uint16_t method = 0) {
  std::string out, central;
  for (const auto& e : entries) {
    const uint32_t crc =
        convert::Crc32(reinterpret_cast<const uint8_t*>(e.second.data()), e.second.size());
    const uint32_t offset = static_cast<uint32_t>(out.size());
    Put32(&out, 0x04034b50);
    Put16(&out, 20);
    Put16(&out, 0);
    Put16(&out, method);
    Put32(&out, 0);
    Put32(&out, crc);
    Put32(&out, static_cast<uint32_t>(e.second.size()));
    Put32(&out, static_cast<uint32_t>(e.second.size()));
    Put16(&out, static_cast<uint32_t>(e.first.size()));
    Put16(&out, 0);
    out += e.first;
    out += e.second;
    Put32(&central, 0x02014b50);
    Put16(&central, 20);
    Put16(&central, 20);
    Put16(&central, 0);
    Put16(&central, method);
    Put32(&central, 0);
    Put32(&central, crc);
    Put32(&central, static_cast<uint32_t>(e.second.size()));
    Put32(&central, static_cast<uint32_t>(e.second.size()));
    Put16(&central, static_cast<uint32_t>(e.first.size()));
    Put16(&central, 0);
    Put16(&central, 0);
    Put16(&central, 0);
    Put16(&central, 0);
    Put32(&central, 0);
    Put32(&central, offset);
    central += e.first;
  }
  const uint32_t cd_offset = static_cast<uint32_t>(out.size());
  out += central;
  Put32(&out, 0x06054b50);
  Put16(&out, 0);
  Put16(&out, 0);
  Put16(&out, static_cast<uint32_t>(entries.size()));
  Put16(&out, static_cast<uint32_t>(entries.size()));
  Put32(&out, static_cast<uint32_t>(central.size()));
  Put32(&out, cd_offset);
  Put16(&out, 0);
  return out;
}

// A torch.save-style archive: archive/data.pkl = pickle, archive/data/<key> = storages.
inline std::string TorchArchive(const std::string& pickle,
                                const std::map<std::string, std::string>& storages = {}) {
  std::vector<std::pair<std::string, std::string>> entries = {{"archive/data.pkl", pickle}};
  for (const auto& kv : storages) entries.emplace_back("archive/data/" + kv.first, kv.second);
  entries.emplace_back("archive/version", "3\n");
  return MakeZip(entries);
}

// Pickle building blocks (protocol 2, as torch.save writes).
inline std::string PickleString(const std::string& s) {
  std::string out = "X";
  Put32(&out, static_cast<uint32_t>(s.size()));
  return out + s;
}
inline std::string PickleInt(uint8_t v) { return std::string("K") + static_cast<char>(v); }
// {name: _rebuild_tensor_v2(storage(key, dtype_global, numel), offset, size, stride, False,
// OrderedDict())}
inline std::string PickleStateDict(const std::vector<std::string>& items_code) {
  std::string p =
      "\x80\x02"
      "ccollections\nOrderedDict\n)R(";
  for (const auto& item : items_code) p += item;
  return p + "u.";
}
inline std::string PickleTensor(const std::string& name, const std::string& storage_type,
                                const std::string& key, uint8_t numel, uint8_t offset,
                                const std::vector<uint8_t>& size,
                                const std::vector<uint8_t>& stride) {
  std::string p = PickleString(name) + "ctorch._utils\n_rebuild_tensor_v2\n(";
  p += "(" + PickleString("storage") + "ctorch\n" + storage_type + "\n" + PickleString(key) +
       PickleString("cpu") + PickleInt(numel) + "tQ";
  p += PickleInt(offset);
  p += "(";
  for (uint8_t s : size) p += PickleInt(s);
  p += "t(";
  for (uint8_t s : stride) p += PickleInt(s);
  p += "t\x89"
       "ccollections\nOrderedDict\n)Rt"
       "R";
  return p;
}

inline std::string Floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// A safetensors file from raw tensors: name -> (dtype, shape, bytes).
struct RawTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
inline void WriteRawSafetensors(const std::string& path,
                                const std::map<std::string, RawTensor>& tensors,
                                const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::string data;
  for (const auto& kv : tensors) {
    header[kv.first] = {{"dtype", kv.second.dtype},
                        {"shape", kv.second.shape},
                        {"data_offsets", {offset, offset + kv.second.bytes.size()}}};
    offset += kv.second.bytes.size();
    data += kv.second.bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8) text.push_back(' ');
  std::string out;
  Put32(&out, static_cast<uint32_t>(text.size()));
  Put32(&out, 0);
  WriteBytes(path, out + text + data);
}

}  // namespace tern::testing

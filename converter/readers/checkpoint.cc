#include "converter/readers/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "converter/error.h"
#include "converter/readers/pickle.h"
#include "converter/readers/safetensors.h"
#include "converter/readers/zip.h"
#include "runtime/core/fp16.h"

namespace tern::convert {

namespace {

struct DTypeInfo {
  SourceDType dtype;
  const char* name;
  size_t bytes;
  bool is_float;
};

const DTypeInfo kDTypes[] = {
    {SourceDType::kF32, "F32", 4, true},   {SourceDType::kF16, "F16", 2, true},
    {SourceDType::kBF16, "BF16", 2, true}, {SourceDType::kF64, "F64", 8, true},
    {SourceDType::kI64, "I64", 8, false},  {SourceDType::kI32, "I32", 4, false},
    {SourceDType::kI16, "I16", 2, false},  {SourceDType::kI8, "I8", 1, false},
    {SourceDType::kU8, "U8", 1, false},    {SourceDType::kBool, "BOOL", 1, false}};

const DTypeInfo& Info(SourceDType dtype) {
  for (const auto& d : kDTypes) {
    if (d.dtype == dtype) return d;
  }
  return kDTypes[0];
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Row-major strides; false when they overflow int64 (possible even for an empty array: a zero
// dimension makes the element count 0 but not the other dimensions' strides).
bool ContiguousStrides(const std::vector<int64_t>& shape, std::vector<int64_t>* strides) {
  strides->assign(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) {
    if (shape[i] < 0 || __builtin_mul_overflow((*strides)[i], shape[i], &(*strides)[i - 1]) ||
        (*strides)[i - 1] > (int64_t{1} << 50)) {
      return false;
    }
  }
  return true;
}

// Checks that every element of the view lies inside its storage, without overflow.
void CheckBounds(const CheckpointTensor& t) {
  const std::string where = t.where + ": tensor \"" + t.name + "\"";
  if (t.shape.size() != t.strides.size()) throw Error(where + ": shape and strides differ in rank");
  int64_t count = 1;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 0 || t.strides[i] < 0) throw Error(where + ": negative size or stride");
    if (__builtin_mul_overflow(count, t.shape[i], &count) || count > (int64_t{1} << 40)) {
      throw Error(where + ": shape " + ShapeString(t.shape) + " is too large");
    }
  }
  if (count == 0) return;
  // A view with more elements than its storage repeats elements (stride 0: torch's expand).
  // Widened to float32 it would cost 4 bytes per element however small the file, so such views
  // are capped (real broadcast weights are small).
  constexpr int64_t kMaxRepeatedElements = int64_t{1} << 26;
  if (count > t.storage_elements && count > kMaxRepeatedElements) {
    throw Error(where + ": a view of " + std::to_string(count) + " elements over a storage of " +
                std::to_string(t.storage_elements) +
                " (a broadcast, stride 0) is refused above 2^26 elements");
  }
  int64_t last = t.offset;
  bool overflow = t.offset < 0;
  for (size_t i = 0; i < t.shape.size() && !overflow; ++i) {
    int64_t step = 0;
    overflow = __builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &step) ||
               __builtin_add_overflow(last, step, &last);
  }
  if (overflow || last >= t.storage_elements) {
    throw Error(where + " with shape " + ShapeString(t.shape) + ", strides " +
                ShapeString(t.strides) + " and offset " + std::to_string(t.offset) + " reaches " +
                (overflow ? std::string("past int64") : "element " + std::to_string(last)) +
                " of a storage of " + std::to_string(t.storage_elements) + " elements");
  }
}

// Calls f(element_index_in_storage) for every element in row-major order.
template <typename F>
void ForEachElement(const CheckpointTensor& t, F f) {
  const int64_t n = t.elements();
  if (n == 0) return;
  if (t.contiguous()) {
    for (int64_t i = 0; i < n; ++i) f(t.offset + i);
    return;
  }
  std::vector<int64_t> index(t.shape.size(), 0);
  int64_t at = t.offset;
  for (int64_t i = 0; i < n; ++i) {
    f(at);
    for (size_t d = t.shape.size(); d-- > 0;) {
      if (++index[d] < t.shape[d]) {
        at += t.strides[d];
        break;
      }
      at -= (t.shape[d] - 1) * t.strides[d];
      index[d] = 0;
    }
  }
}

template <typename T>
T Load(const uint8_t* base, int64_t element) {
  T v;
  std::memcpy(&v, base + static_cast<size_t>(element) * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

const char* SourceDTypeName(SourceDType dtype) { return Info(dtype).name; }
size_t SourceDTypeBytes(SourceDType dtype) { return Info(dtype).bytes; }
bool SourceDTypeIsFloat(SourceDType dtype) { return Info(dtype).is_float; }

bool ParseSourceDType(const std::string& name, SourceDType* out) {
  for (const auto& d : kDTypes) {
    if (name == d.name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

int64_t CheckpointTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool CheckpointTensor::contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string CheckpointTensor::shape_string() const { return ShapeString(shape); }

const CheckpointTensor& Checkpoint::at(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(label_ + ": no tensor \"" + name + "\"");
  return it->second;
}

void Checkpoint::Add(CheckpointTensor tensor) {
  if (tensor.strides.empty() && !tensor.shape.empty() &&
      !ContiguousStrides(tensor.shape, &tensor.strides)) {
    throw Error(tensor.where + ": tensor \"" + tensor.name + "\": shape " +
                ShapeString(tensor.shape) + " is too large");
  }
  CheckBounds(tensor);
  if (tensors_.count(tensor.name))
    throw Error(tensor.where + ": tensor \"" + tensor.name + "\" appears twice");
  const std::string name = tensor.name;
  tensors_.emplace(name, std::move(tensor));
}

HostTensor Checkpoint::Float(const std::string& name) const {
  const CheckpointTensor& t = at(name);
  if (!SourceDTypeIsFloat(t.dtype)) {
    throw Error(t.where + ": tensor \"" + name + "\" has dtype " + SourceDTypeName(t.dtype) +
                "; expected a float type (F32, F16, BF16 or F64)");
  }
  HostTensor out;
  out.name = name;
  out.shape = t.shape;
  out.values.resize(static_cast<size_t>(t.elements()));
  float* o = out.values.data();
  switch (t.dtype) {
    case SourceDType::kF32:
      if (t.contiguous()) {
        std::memcpy(o, t.base + static_cast<size_t>(t.offset) * 4, out.values.size() * 4);
      } else {
        ForEachElement(t, [&](int64_t e) { *o++ = Load<float>(t.base, e); });
      }
      break;
    case SourceDType::kF16:
      ForEachElement(t, [&](int64_t e) { *o++ = Fp16ToFp32(Load<uint16_t>(t.base, e)); });
      break;
    case SourceDType::kBF16:
      ForEachElement(t, [&](int64_t e) {
        const uint32_t bits = static_cast<uint32_t>(Load<uint16_t>(t.base, e)) << 16;
        std::memcpy(o++, &bits, 4);
      });
      break;
    case SourceDType::kF64:
      ForEachElement(t, [&](int64_t e) { *o++ = static_cast<float>(Load<double>(t.base, e)); });
      break;
    default:
      break;
  }
  return out;
}

std::vector<int64_t> Checkpoint::Ints(const std::string& name) const {
  const CheckpointTensor& t = at(name);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.elements()));
  switch (t.dtype) {
    case SourceDType::kI64:
      ForEachElement(t, [&](int64_t e) { out.push_back(Load<int64_t>(t.base, e)); });
      break;
    case SourceDType::kI32:
      ForEachElement(t, [&](int64_t e) { out.push_back(Load<int32_t>(t.base, e)); });
      break;
    case SourceDType::kI16:
      ForEachElement(t, [&](int64_t e) { out.push_back(Load<int16_t>(t.base, e)); });
      break;
    case SourceDType::kI8:
      ForEachElement(t, [&](int64_t e) { out.push_back(Load<int8_t>(t.base, e)); });
      break;
    case SourceDType::kU8:
    case SourceDType::kBool:
      ForEachElement(t, [&](int64_t e) { out.push_back(Load<uint8_t>(t.base, e)); });
      break;
    default:
      throw Error(t.where + ": tensor \"" + name + "\" has dtype " + SourceDTypeName(t.dtype) +
                  "; expected an integer type");
  }
  return out;
}

std::string Checkpoint::Text(const std::string& name) const {
  const CheckpointTensor& t = at(name);
  if ((t.dtype != SourceDType::kI8 && t.dtype != SourceDType::kU8) || t.shape.size() != 1 ||
      !t.contiguous()) {
    throw Error(t.where + ": tensor \"" + name + "\" is not a 1-D byte array");
  }
  return std::string(reinterpret_cast<const char*>(t.base + t.offset),
                     static_cast<size_t>(t.elements()));
}

nlohmann::json Checkpoint::ObjectJson(const std::string& key) const {
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  return PickleToJson(it->second, label_ + ": " + key);
}

// ---------------------------------------------------------------------------------------------
// safetensors

namespace {

void AddSafetensorsEntries(Checkpoint* ckpt, const std::shared_ptr<SafetensorsFile>& file,
                           const std::string& path) {
  for (const auto& entry : file->entries()) {
    CheckpointTensor t;
    t.name = entry.first;
    if (!ParseSourceDType(entry.second.dtype, &t.dtype)) {
      throw Error(path + ": tensor \"" + entry.first + "\": unsupported dtype " +
                  entry.second.dtype);
    }
    t.shape = entry.second.shape;
    t.base = file->data_section() + entry.second.begin;
    t.storage_elements =
        static_cast<int64_t>((entry.second.end - entry.second.begin) / SourceDTypeBytes(t.dtype));
    t.where = path;
    t.storage_id = path + "@" + std::to_string(entry.second.begin);
    ckpt->Add(std::move(t));
  }
}

}  // namespace

Checkpoint ReadSafetensorsCheckpoint(const std::string& path) {
  auto file = std::make_shared<SafetensorsFile>(SafetensorsFile::Read(path));
  Checkpoint ckpt;
  ckpt.label_ = path;
  ckpt.format_ = "safetensors";
  ckpt.files_ = {path};
  ckpt.metadata_ = file->metadata();
  AddSafetensorsEntries(&ckpt, file, path);
  ckpt.Keep(file);
  return ckpt;
}

Checkpoint ReadShardedSafetensors(const std::string& index_path) {
  auto bytes = FileBytes::Open(index_path);
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(bytes->data(), bytes->data() + bytes->size());
  } catch (const nlohmann::json::exception& e) {
    throw Error(index_path + ": index is not valid JSON (" + e.what() + ")");
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw Error(index_path + ": index needs an object \"weight_map\" {tensor name: shard file}");
  }
  Checkpoint ckpt;
  ckpt.label_ = index_path;
  ckpt.format_ = "safetensors-sharded";
  ckpt.files_ = {index_path};
  std::map<std::string, std::string> weight_map;
  std::vector<std::string> shards;
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      throw Error(index_path + ": weight_map[\"" + it.key() + "\"] is not a file name");
    const std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
      throw Error(index_path + ": shard \"" + shard +
                  "\" must be a file name in the index's directory");
    }
    weight_map[it.key()] = shard;
    if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
  }
  std::sort(shards.begin(), shards.end());
  if (index.contains("metadata") && index["metadata"].is_object()) {
    for (auto it = index["metadata"].begin(); it != index["metadata"].end(); ++it) {
      ckpt.metadata_[it.key()] =
          it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    }
  }
  for (const auto& shard : shards) {
    const std::string path = DirName(index_path) + "/" + shard;
    auto file = std::make_shared<SafetensorsFile>(SafetensorsFile::Read(path));
    for (const auto& entry : file->entries()) {
      auto it = weight_map.find(entry.first);
      if (it == weight_map.end()) {
        throw Error(path + ": tensor \"" + entry.first + "\" is not in the index " + index_path);
      }
      if (it->second != shard) {
        throw Error(path + ": tensor \"" + entry.first + "\" belongs to shard " + it->second +
                    " per the index");
      }
    }
    AddSafetensorsEntries(&ckpt, file, path);
    ckpt.files_.push_back(path);
    ckpt.Keep(file);
  }
  for (const auto& kv : weight_map) {
    if (!ckpt.has(kv.first)) {
      throw Error(index_path + ": tensor \"" + kv.first + "\" is listed for " + kv.second +
                  " but is not in it");
    }
  }
  return ckpt;
}

// ---------------------------------------------------------------------------------------------
// torch.save zip

namespace {

std::string Describe(const PickleRef& v) { return PickleDescribe(*v); }

// Collects name -> tensor from a state dict; nested dicts are an error (choose with state_key).
void CollectTensors(const PickleRef& dict, const std::string& where,
                    std::vector<std::pair<std::string, PickleRef>>* out) {
  std::vector<std::string> odd;
  std::vector<std::string> nested;
  for (const auto& kv : dict->dict) {
    if (kv.first->kind != PickleValue::Kind::kString) {
      throw Error(where + ": state dict key is a " + Describe(kv.first) + ", expected a string");
    }
    if (kv.second->kind == PickleValue::Kind::kTensor) {
      out->emplace_back(kv.first->s, kv.second);
    } else {
      odd.push_back(kv.first->s);
      if (kv.second->kind == PickleValue::Kind::kDict) nested.push_back(kv.first->s);
    }
  }
  if (!odd.empty()) {
    std::string list;
    for (size_t i = 0; i < odd.size() && i < 6; ++i) list += (i ? ", \"" : "\"") + odd[i] + "\"";
    if (odd.size() > 6) list += ", ...";
    std::string hint;
    if (!nested.empty())
      hint = "; if the weights are under " + ("\"" + nested[0] + "\"") + ", pass --state-key " +
             nested[0];
    throw Error(where + ": not a state dict of tensors: entries " + list + " are not tensors" +
                hint);
  }
}

}  // namespace

Checkpoint ReadTorchZip(const std::string& path, const CheckpointOptions& options) {
  auto file = FileBytes::Open(path);
  if (!LooksLikeZip(file->data(), file->size())) {
    if (file->size() >= 2 && file->data()[0] == 0x80 && file->data()[1] <= 5) {
      throw Error(path +
                  ": legacy (pre-1.6, non-zip) torch.save format is not supported; re-save it with "
                  "torch.save(state_dict, path) in PyTorch >= 1.6");
    }
    throw Error(path + ": not a torch.save zip archive (no zip signature)");
  }
  ZipArchive zip = ZipArchive::Open(file);
  const ZipEntry* pkl = nullptr;
  std::string prefix;
  for (const auto& e : zip.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      if (pkl) throw Error(path + ": more than one data.pkl in the archive");
      pkl = &e;
      prefix = e.name.substr(0, slash + 1);
    }
  }
  if (!pkl) {
    throw Error(
        path + ": no <archive>/data.pkl entry: not a torch.save file" +
        std::string(zip.Find("constants.pkl") ? " (TorchScript archives are not supported)" : ""));
  }
  if (const ZipEntry* order = zip.Find(prefix + "byteorder")) {
    const std::string value(reinterpret_cast<const char*>(zip.Data(*order)),
                            static_cast<size_t>(order->size));
    if (value != "little")
      throw Error(path + ": byteorder is \"" + value +
                  "\"; only little-endian files are supported");
  }
  const std::string where = path + ": " + pkl->name;
  PickleRef root = Unpickle(zip.Data(*pkl), static_cast<size_t>(pkl->size), where);
  if (root->kind != PickleValue::Kind::kDict) {
    throw Error(where + ": the saved object is a " + Describe(root) + ", expected a state dict" +
                (root->kind == PickleValue::Kind::kObject
                     ? " (a whole pickled model? save model.state_dict() instead)"
                     : ""));
  }
  const PickleRef top_level = root;
  std::string key_path;
  if (!options.extra_state_keys.empty() && options.state_key.empty())
    throw Error(where + ": extra state dicts need a state key");
  if (!options.state_key.empty()) {
    size_t start = 0;
    while (start <= options.state_key.size()) {
      const size_t dot = options.state_key.find('.', start);
      const std::string key = options.state_key.substr(
          start, dot == std::string::npos ? std::string::npos : dot - start);
      PickleRef next;
      for (const auto& kv : root->dict) {
        if (kv.first->kind == PickleValue::Kind::kString && kv.first->s == key) next = kv.second;
      }
      key_path += (key_path.empty() ? "" : ".") + key;
      if (!next) throw Error(where + ": no entry \"" + key_path + "\" (--state-key)");
      if (next->kind != PickleValue::Kind::kDict) {
        throw Error(where + ": entry \"" + key_path + "\" is a " + Describe(next) + ", not a dict");
      }
      root = next;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  std::vector<std::pair<std::string, PickleRef>> tensors;
  CollectTensors(root, where + (key_path.empty() ? "" : " [\"" + key_path + "\"]"), &tensors);
  Checkpoint ckpt;
  if (!options.state_key.empty()) {
    // The other top-level entries: option objects (kept as plain data) and further tensor dicts.
    const std::string state_top = options.state_key.substr(0, options.state_key.find('.'));
    std::map<std::string, PickleRef> top;
    for (const auto& kv : top_level->dict) {
      if (kv.first->kind == PickleValue::Kind::kString && kv.first->s != state_top)
        top[kv.first->s] = kv.second;
    }
    for (const std::string& key : options.extra_state_keys) {
      auto it = top.find(key);
      if (it == top.end())
        throw Error(where + ": no entry \"" + key + "\" (beside the state dict)");
      if (it->second->kind != PickleValue::Kind::kDict) {
        throw Error(where + ": entry \"" + key + "\" is a " + Describe(it->second) +
                    ", not a dict of tensors");
      }
      std::vector<std::pair<std::string, PickleRef>> extra;
      CollectTensors(it->second, where + " [\"" + key + "\"]", &extra);
      for (auto& e : extra) tensors.emplace_back(key + "." + e.first, std::move(e.second));
      top.erase(it);
    }
    ckpt.objects_ = std::move(top);
  }
  ckpt.label_ = path;
  ckpt.format_ = "torch-zip";
  ckpt.files_ = {path};
  for (const auto& kv : tensors) {
    const PickleTensor& pt = kv.second->tensor;
    CheckpointTensor t;
    t.name = kv.first;
    if (!ParseSourceDType(pt.storage->dtype, &t.dtype))
      throw Error(where + ": unknown storage dtype");
    const std::string entry_name = prefix + "data/" + pt.storage->key;
    const ZipEntry* entry = zip.Find(entry_name);
    t.where = path + ": " + entry_name;
    if (!entry)
      throw Error(path + ": tensor \"" + t.name + "\": storage entry " + entry_name +
                  " is missing");
    if (pt.storage->numel > (int64_t{1} << 40)) {
      throw Error(t.where + ": storage of tensor \"" + t.name + "\" claims " +
                  std::to_string(pt.storage->numel) + " elements, more than this reader accepts");
    }
    const uint64_t need = static_cast<uint64_t>(pt.storage->numel) * SourceDTypeBytes(t.dtype);
    if (entry->size != need) {
      throw Error(t.where + ": storage of tensor \"" + t.name + "\" has " +
                  std::to_string(entry->size) + " bytes; " + std::to_string(pt.storage->numel) +
                  " " + SourceDTypeName(t.dtype) + " elements need " + std::to_string(need));
    }
    t.base = zip.Data(*entry);
    t.storage_elements = pt.storage->numel;
    t.shape = pt.shape;
    t.strides = pt.strides;
    t.offset = pt.offset;
    t.storage_id = entry_name;
    ckpt.Add(std::move(t));
  }
  ckpt.Keep(file);
  return ckpt;
}

// ---------------------------------------------------------------------------------------------
// numpy .npy / .npz

namespace {

class NpyHeaderParser {
 public:
  NpyHeaderParser(const std::string& text, const std::string& label) : s_(text), label_(label) {}

  void Parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    Skip();
    Expect('{');
    while (true) {
      Skip();
      if (Peek() == '}') break;
      const std::string key = String();
      Skip();
      Expect(':');
      Skip();
      if (key == "descr") {
        if (Peek() != '\'' && Peek() != '"')
          Fail("descr is not a simple dtype string (structured arrays are not supported)");
        *descr = String();
        have_descr = true;
      } else if (key == "fortran_order") {
        *fortran = Word();
        have_fortran = true;
      } else if (key == "shape") {
        *shape = Tuple();
        have_shape = true;
      } else {
        Fail("unknown header key \"" + key + "\"");
      }
      Skip();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      Skip();
      if (Peek() != '}') Fail("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape)
      Fail("header lacks descr, fortran_order or shape");
  }

 private:
  [[noreturn]] void Fail(const std::string& what) {
    throw Error(label_ + ": bad .npy header: " + what);
  }
  char Peek() { return i_ < s_.size() ? s_[i_] : '\0'; }
  void Skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  void Expect(char c) {
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string String() {
    const char q = Peek();
    if (q != '\'' && q != '"') Fail("expected a quoted string");
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) Fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool Word() {
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    Fail("fortran_order is not True or False");
  }
  std::vector<int64_t> Tuple() {
    Expect('(');
    std::vector<int64_t> out;
    while (true) {
      Skip();
      if (Peek() == ')') {
        ++i_;
        return out;
      }
      if (Peek() < '0' || Peek() > '9') Fail("shape is not a tuple of non-negative integers");
      int64_t v = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        if (v > (int64_t{1} << 40)) Fail("dimension too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (Peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      if (out.size() > 16) Fail("more than 16 dimensions");
      Skip();
      if (Peek() == ',')
        ++i_;
      else if (Peek() != ')')
        Fail("expected ',' or ')' in shape");
    }
  }

  const std::string& s_;
  std::string label_;
  size_t i_ = 0;
};

}  // namespace

size_t ParseNpyHeader(const uint8_t* data, size_t size, const std::string& label,
                      CheckpointTensor* out) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0)
    throw Error(label + ": not a .npy array (bad magic)");
  const int major = data[6];
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(data[8] | (data[9] << 8));
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(label + ": truncated .npy header");
    header_len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8) |
                 (static_cast<size_t>(data[10]) << 16) | (static_cast<size_t>(data[11]) << 24);
    start = 12;
  } else {
    throw Error(label + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > size - start || header_len > (1u << 20))
    throw Error(label + ": truncated .npy header");
  const std::string text(reinterpret_cast<const char*>(data + start), header_len);
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  NpyHeaderParser(text, label).Parse(&descr, &fortran, &shape);
  static const struct {
    const char* descr;
    SourceDType dtype;
  } kDescr[] = {
      {"<f4", SourceDType::kF32}, {"<f2", SourceDType::kF16}, {"<f8", SourceDType::kF64},
      {"<i8", SourceDType::kI64}, {"<i4", SourceDType::kI32}, {"<i2", SourceDType::kI16},
      {"|i1", SourceDType::kI8},  {"|u1", SourceDType::kU8},  {"|b1", SourceDType::kBool}};
  bool known = false;
  for (const auto& d : kDescr) {
    if (descr == d.descr) {
      out->dtype = d.dtype;
      known = true;
    }
  }
  if (!known) {
    throw Error(label + ": .npy dtype '" + descr + "' is not supported" +
                (descr.size() > 0 && descr[0] == '>' ? " (big-endian)" : "") +
                "; expected <f4, <f2, <f8 or an integer type");
  }
  out->shape = shape;
  if (!ContiguousStrides(shape, &out->strides)) throw Error(label + ": .npy shape is too large");
  if (fortran) {  // column-major: the first index varies fastest
    int64_t stride = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      out->strides[i] = stride;
      if (i + 1 < shape.size() &&
          (__builtin_mul_overflow(stride, shape[i], &stride) || stride > (int64_t{1} << 50))) {
        throw Error(label + ": .npy shape is too large");
      }
    }
  }
  return start + header_len;
}

Checkpoint ReadNpz(const std::string& path) {
  auto file = FileBytes::Open(path);
  if (!LooksLikeZip(file->data(), file->size()))
    throw Error(path + ": not an .npz archive (no zip signature)");
  ZipArchive zip = ZipArchive::Open(file);
  Checkpoint ckpt;
  ckpt.label_ = path;
  ckpt.format_ = "npz";
  ckpt.files_ = {path};
  for (const auto& e : zip.entries()) {
    const std::string where = path + ": " + e.name;
    if (!EndsWith(e.name, ".npy")) throw Error(where + ": not a .npy entry");
    const uint8_t* data = zip.Data(e);
    CheckpointTensor t;
    t.name = e.name.substr(0, e.name.size() - 4);
    t.where = where;
    const size_t header = ParseNpyHeader(data, static_cast<size_t>(e.size), where, &t);
    const uint64_t have = e.size - header;
    uint64_t count = 1;
    for (int64_t d : t.shape) {
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) ||
          count > (uint64_t{1} << 40)) {
        throw Error(where + ": array " + ShapeString(t.shape) + " is too large");
      }
    }
    const uint64_t need = count * SourceDTypeBytes(t.dtype);
    if (have != need) {
      throw Error(where + ": array " + ShapeString(t.shape) + " of " + SourceDTypeName(t.dtype) +
                  " needs " + std::to_string(need) + " bytes, the entry has " +
                  std::to_string(have) + " (truncated?)");
    }
    t.base = data + header;
    t.storage_elements = static_cast<int64_t>(count);
    t.storage_id = where;
    ckpt.Add(std::move(t));
  }
  ckpt.Keep(file);
  return ckpt;
}

// ---------------------------------------------------------------------------------------------

Checkpoint Checkpoint::Open(const std::string& path, const CheckpointOptions& options) {
  if (EndsWith(path, ".index.json")) return ReadShardedSafetensors(path);
  auto head = FileBytes::Open(path);
  // A .tern file (size-prefixed FlatBuffer, file identifier "TERN" at byte 8) is already
  // converted: say so instead of a safetensors header-length error.
  if (head->size() >= 12 && std::memcmp(head->data() + 8, "TERN", 4) == 0) {
    throw Error(path + ": looks like a .tern model (already converted), not a checkpoint; " +
                "tern inspect shows it, tern translate runs it");
  }
  if (LooksLikeZip(head->data(), head->size())) {
    ZipArchive zip = ZipArchive::Open(head);
    bool npy = !zip.entries().empty();
    for (const auto& e : zip.entries()) npy = npy && EndsWith(e.name, ".npy");
    if (npy) return ReadNpz(path);
    return ReadTorchZip(path, options);
  }
  if (EndsWith(path, ".pt") || EndsWith(path, ".pth") || EndsWith(path, ".bin"))
    return ReadTorchZip(path, options);
  if (EndsWith(path, ".npz")) return ReadNpz(path);
  return ReadSafetensorsCheckpoint(path);
}

}  // namespace tern::convert

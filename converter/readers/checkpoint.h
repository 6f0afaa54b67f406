// Every checkpoint format the converter reads, behind one interface: a set of named tensors,
// each a (possibly strided) view of bytes that stay mapped while the Checkpoint lives.
//
//   *.safetensors                one safetensors file
//   *.safetensors.index.json     sharded safetensors (Hugging Face): {"weight_map": {name: file}}
//   *.pt, *.pth, *.bin           torch.save zip archive of a state_dict (restricted unpickler:
//                                nothing in the file is executed)
//   *.npz                        numpy.savez archive of .npy arrays (Marian's format)
//
// The format is decided by the file's first bytes (zip, safetensors header, JSON index), not
// only by its name. Every reader validates its input completely before handing out tensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "converter/host_tensor.h"
#include "converter/readers/file_bytes.h"
#include "converter/readers/pickle.h"

namespace tern::convert {

// Source element types, named as safetensors names them.
enum class SourceDType { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };
const char* SourceDTypeName(SourceDType dtype);
size_t SourceDTypeBytes(SourceDType dtype);
bool SourceDTypeIsFloat(SourceDType dtype);
// "F32", ... -> SourceDType; false when unknown.
bool ParseSourceDType(const std::string& name, SourceDType* out);

struct CheckpointTensor {
  std::string name;
  SourceDType dtype = SourceDType::kF32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;   // in elements, one per dimension
  const uint8_t* base = nullptr;  // first byte of the storage (little-endian elements)
  int64_t storage_elements = 0;   // how many elements the storage holds
  int64_t offset = 0;             // first element of this view, in elements
  std::string where;              // file (and entry) the data comes from, for errors
  std::string storage_id;         // views with the same id share storage (tied weights)

  int64_t elements() const;
  bool contiguous() const;
  std::string shape_string() const;
};

struct CheckpointOptions {
  // torch.save files whose top level is a dict holding the state dict under a key (training
  // checkpoints: {"epoch": 3, "model": {...}}): the key to descend into; dots descend further.
  std::string state_key;
  // Further top-level dicts of tensors beside the state dict (OpenNMT-py's "generator"): their
  // tensors join the state dict's as "KEY.NAME". Only with state_key.
  std::vector<std::string> extra_state_keys;
};

class Checkpoint {
 public:
  static Checkpoint Open(const std::string& path, const CheckpointOptions& options = {});

  const std::string& label() const { return label_; }
  // "safetensors", "safetensors-sharded", "torch-zip" or "npz".
  const std::string& format() const { return format_; }
  // Files read (the index first for sharded checkpoints), for the source digest.
  const std::vector<std::string>& files() const { return files_; }
  const std::map<std::string, CheckpointTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const CheckpointTensor& at(const std::string& name) const;

  // Values widened to float32, strides honoured. Integer or bool tensors are an error naming
  // the tensor and its dtype ("dtype surprise").
  HostTensor Float(const std::string& name) const;
  // Integer tensors as int64 (floats are an error).
  std::vector<int64_t> Ints(const std::string& name) const;
  // The raw bytes of a contiguous 1-D I8/U8 tensor (Marian's embedded model.yml).
  std::string Text(const std::string& name) const;

  // A training checkpoint's other top-level entries (torch.save with state_key: fairseq's "args"
  // and "cfg", OpenNMT-py's "opt" and "vocab"), as the restricted unpickler read them: plain
  // data, nothing executed. Empty for other formats.
  const std::map<std::string, PickleRef>& objects() const { return objects_; }
  // objects() entry `key` as JSON (see PickleToJson); null when there is no such entry.
  nlohmann::json ObjectJson(const std::string& key) const;

  // Assembled by the format readers (and tests).
  void Add(CheckpointTensor tensor);
  void Keep(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }

 private:
  std::string label_;
  std::string format_;
  std::vector<std::string> files_;
  std::map<std::string, CheckpointTensor> tensors_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, PickleRef> objects_;
  std::vector<std::shared_ptr<const void>> owners_;

  friend Checkpoint ReadSafetensorsCheckpoint(const std::string&);
  friend Checkpoint ReadShardedSafetensors(const std::string&);
  friend Checkpoint ReadTorchZip(const std::string&, const CheckpointOptions&);
  friend Checkpoint ReadNpz(const std::string&);
};

Checkpoint ReadSafetensorsCheckpoint(const std::string& path);
Checkpoint ReadShardedSafetensors(const std::string& index_path);
Checkpoint ReadTorchZip(const std::string& path, const CheckpointOptions& options);
Checkpoint ReadNpz(const std::string& path);

// Parses a .npy header (format 1.0-3.0); fills dtype/shape/strides and returns the byte
// offset of the data. `label` names the file and entry in errors.
size_t ParseNpyHeader(const uint8_t* data, size_t size, const std::string& label,
                      CheckpointTensor* out);

}  // namespace tern::convert

#include "converter/architectures/architecture.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/decoder_only_layout.h"
#include "converter/error.h"
#include "converter/model_config_json.h"
#include "converter/readers/file_bytes.h"

namespace tern::convert {

namespace arch {

bool Sources::Skipped(const std::string& name) const {
  for (const auto& p : skip_) {
    if (name.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

void Sources::Direct(MappedCheckpoint* out, const std::string& canonical,
                     const std::string& source) {
  out->source_names[canonical] = source;
  if (!Has(source)) return;
  Use(source);
  const Checkpoint* ckpt = &ckpt_;
  out->tensors[canonical] = MappedTensor{source, [ckpt, source] { return ckpt->Float(source); }};
}

void Sources::Rows(MappedCheckpoint* out, const std::string& canonical, const std::string& source,
                   int64_t begin, int64_t count, int64_t total) {
  const std::string label =
      source + " rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ")";
  out->source_names[canonical] = label;
  if (!Has(source)) return;
  Use(source);
  const Checkpoint* ckpt = &ckpt_;
  out->tensors[canonical] =
      MappedTensor{label, [ckpt, source, begin, count, total] {
                     HostTensor full = ckpt->Float(source);
                     if (full.shape.empty() || full.shape[0] != total) {
                       throw Error(ckpt->at(source).where + ": tensor \"" + source +
                                   "\" has shape " + full.shape_string() + ", expected " +
                                   std::to_string(total) + " rows (3 x d_model: q, k, v)");
                     }
                     const int64_t row = full.elements() / total;
                     HostTensor t;
                     t.name = source;
                     t.shape = full.shape;
                     t.shape[0] = count;
                     t.values.assign(full.values.begin() + begin * row,
                                     full.values.begin() + (begin + count) * row);
                     return t;
                   }};
}

void Sources::Squeeze(MappedCheckpoint* out, const std::string& canonical,
                      const std::string& source) {
  out->source_names[canonical] = source;
  if (!Has(source)) return;
  Use(source);
  const Checkpoint* ckpt = &ckpt_;
  out->tensors[canonical] = MappedTensor{source, [ckpt, source] {
                                           HostTensor t = ckpt->Float(source);
                                           while (t.shape.size() > 1 && t.shape[0] == 1)
                                             t.shape.erase(t.shape.begin());
                                           return t;
                                         }};
}

void Sources::CheckAllUsed(const std::string& hint) const {
  for (const auto& kv : ckpt_.tensors()) {
    if (used_.count(kv.first) || Skipped(kv.first)) continue;
    throw Error(ckpt_.label() + ": unexpected tensor \"" + kv.first + "\" " + hint);
  }
}

bool SameValues(const Checkpoint& ckpt, const std::string& a, const std::string& b) {
  const CheckpointTensor& ta = ckpt.at(a);
  const CheckpointTensor& tb = ckpt.at(b);
  if (ta.shape != tb.shape) return false;
  if (!ta.storage_id.empty() && ta.storage_id == tb.storage_id && ta.offset == tb.offset &&
      ta.strides == tb.strides && ta.dtype == tb.dtype) {
    return true;  // the same view of the same storage (torch.save keeps tied weights shared)
  }
  const HostTensor va = ckpt.Float(a);
  const HostTensor vb = ckpt.Float(b);
  return va.values == vb.values;
}

namespace {

struct Mismatch {
  bool ok = true;
  int64_t row = 0, col = 0;
  float got = 0, want = 0;
};

// Tolerance: the storage dtype's rounding (f16 / bf16 checkpoints), plus the angle error of a
// table computed in float32 (torch), which grows with the position.
Mismatch Compare(const std::vector<float>& got, const std::vector<float>& want, int64_t d,
                 double base_tol) {
  Mismatch m;
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i) / d;
    const double tol = base_tol + 4e-7 * static_cast<double>(row);
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
      m.ok = false;
      m.row = row;
      m.col = static_cast<int64_t>(i) % d;
      m.got = got[i];
      m.want = want[i];
      return m;
    }
  }
  return m;
}

const char* LayoutName(ref::SinusoidLayout layout) {
  switch (layout) {
    case ref::SinusoidLayout::kInterleaved:
      return "interleaved";
    case ref::SinusoidLayout::kConcatenated:
      return "concatenated";
    case ref::SinusoidLayout::kSplitHalves:
      return "split_halves";
    case ref::SinusoidLayout::kFairseq:
      return "fairseq";
  }
  return "?";
}

}  // namespace

int64_t VerifyPositionTable(const Checkpoint& ckpt, const std::string& name, int64_t d_model,
                            ref::SinusoidLayout layout, bool ignore,
                            std::vector<std::string>* notes, int64_t zero_row) {
  HostTensor t = ckpt.Float(name);
  const std::string where = ckpt.at(name).where + ": position table \"" + name + "\"";
  std::vector<int64_t> dims;
  for (int64_t d : t.shape) {
    if (d != 1) dims.push_back(d);
  }
  if (t.shape.empty() || t.shape.back() != d_model || dims.size() > 2) {
    throw Error(where + " has shape " + t.shape_string() + ", expected [positions, " +
                std::to_string(d_model) + "]");
  }
  const int64_t rows = t.elements() / d_model;
  std::vector<float> want(static_cast<size_t>(rows * d_model));
  ref::SinusoidalPositions(0, rows, d_model, layout, want.data());
  if (zero_row >= 0 && zero_row < rows) {
    std::fill(want.begin() + zero_row * d_model, want.begin() + (zero_row + 1) * d_model, 0.0f);
  }
  const SourceDType stored = ckpt.at(name).dtype;
  const double tol = stored == SourceDType::kF16    ? 1e-3
                     : stored == SourceDType::kBF16 ? 8e-3
                                                    : 1e-5;
  const Mismatch m = Compare(t.values, want, d_model, tol);
  if (m.ok) {
    notes->push_back("verified and dropped " + name + ": equals the runtime's " +
                     LayoutName(layout) + " sinusoidal table (" + std::to_string(rows) +
                     " positions)");
    return rows;
  }
  char detail[160];
  std::snprintf(detail, sizeof detail, "row %lld, column %lld: %.7g stored, %.7g computed",
                static_cast<long long>(m.row), static_cast<long long>(m.col),
                static_cast<double>(m.got), static_cast<double>(m.want));
  std::string matches;
  std::vector<float> alt(want.size());
  for (ref::SinusoidLayout other :
       {ref::SinusoidLayout::kInterleaved, ref::SinusoidLayout::kConcatenated,
        ref::SinusoidLayout::kSplitHalves}) {
    if (other == layout || !matches.empty()) continue;
    ref::SinusoidalPositions(0, rows, d_model, other, alt.data());
    if (Compare(t.values, alt, d_model, tol).ok) {
      matches = "; it is the " + std::string(LayoutName(other)) + " layout instead";
    }
  }
  const std::string message =
      where + " is not the sinusoidal table the runtime computes for sinusoid_layout=" +
      LayoutName(layout) + " (" + detail + ")" + matches;
  if (!ignore) {
    throw Error(
        message +
        "; --ignore-position-table drops it and uses the runtime's table (outputs will differ)");
  }
  notes->push_back("warning: " + message + "; dropped anyway (--ignore-position-table)");
  return rows;
}

std::string ReadTextFile(const std::string& path) {
  // Through FileBytes: a fifo or device is refused instead of blocking open().
  const auto file = FileBytes::Open(path);
  return std::string(reinterpret_cast<const char*>(file->data()), file->size());
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

nlohmann::json ParseJsonText(const std::string& text, const std::string& label) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(label + ": not valid JSON (" + e.what() + ")");
  }
}

nlohmann::json ReadHfConfigJson(const Checkpoint& ckpt, const ArchitectureOptions& options,
                                const std::string& arch, MappedCheckpoint* out) {
  out->config_label =
      options.config.empty() ? DirName(options.checkpoint) + "/config.json" : options.config;
  if (!FileExists(out->config_label)) {
    throw Error(ckpt.label() + ": --arch " + arch +
                " needs the model's Hugging Face config.json (beside the checkpoint, or --config "
                "PATH)");
  }
  nlohmann::json j = ParseJsonText(ReadTextFile(out->config_label), out->config_label);
  if (!j.is_object()) throw Error(out->config_label + ": not a JSON object");
  return j;
}

void ApplyOverrides(const ArchitectureOptions& options, MappedCheckpoint* out) {
  if (options.overrides_json.empty()) return;
  const nlohmann::json j = ParseJsonText(options.overrides_json, "--set");
  for (const auto& key : ApplyConfigOverrides(j, "--set", &out->config)) {
    out->notes.push_back("config " + key + " = " + j[key].dump() + " (--set)");
  }
}

int32_t CountLayers(const Sources& src, const std::string& prefix) {
  std::set<int64_t> seen;
  for (const auto& kv : src.ckpt().tensors()) {
    const std::string& name = kv.first;
    if (name.compare(0, prefix.size(), prefix) != 0 || src.Skipped(name)) continue;
    size_t i = prefix.size();
    int64_t v = 0;
    size_t digits = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 6)
      v = v * 10 + (name[i++] - '0'), ++digits;
    if (digits == 0 || i >= name.size() || name[i] != '.') continue;
    seen.insert(v);
  }
  if (seen.empty()) return 0;
  const int64_t n = *seen.rbegin() + 1;
  if (static_cast<int64_t>(seen.size()) != n) {
    for (int64_t k = 0; k < n; ++k) {
      if (!seen.count(k)) {
        throw Error(src.ckpt().label() + ": layer " + prefix + std::to_string(k) +
                    " is missing (layers up to " + std::to_string(n - 1) + " exist)");
      }
    }
  }
  return static_cast<int32_t>(n);
}

// The project's own layout: names are canonical already.
MappedCheckpoint MapTern(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  MappedCheckpoint out;
  std::string text;
  if (!options.config.empty()) {
    text = ReadTextFile(options.config);
    out.config_label = options.config;
  } else if (ckpt.metadata().count("config")) {
    text = ckpt.metadata().at("config");
    out.config_label = ckpt.label() + " (metadata \"config\")";
  } else {
    out.config_label = DirName(options.checkpoint) + "/config.json";
    if (!FileExists(out.config_label)) {
      throw Error(ckpt.label() +
                  ": no config: pass --config, or put config.json beside the checkpoint");
    }
    text = ReadTextFile(out.config_label);
  }
  out.config = ParseModelConfig(text, out.config_label);
  ApplyOverrides(options, &out);
  std::vector<ExpectedTensor> layout;
  try {
    layout = ModelLayout(out.config);
  } catch (const Error& e) {
    throw Error(out.config_label + ": " + e.what());
  }
  Sources src(ckpt, options.skip_prefixes);
  for (const auto& e : layout) src.Direct(&out, e.name, e.name);
  src.CheckAllUsed("(not part of this architecture/config; wrong config or name map?)");
  return out;
}

}  // namespace arch

CheckpointOptions DefaultCheckpointOptions(const std::string& arch) {
  CheckpointOptions out;
  if (arch == "fairseq") out.state_key = "model";
  if (arch == "opennmt") {
    out.state_key = "model";
    out.extra_state_keys = {"generator"};
  }
  return out;
}

const std::vector<std::string>& ArchitectureNames() {
  static const std::vector<std::string> names = {
      "tern",   "marian", "marian_npz", "nn_transformer", "annotated", "bart", "mbart",
      "gpt2",   "llama",  "qwen2",      "mistral",        "gemma",     "t5",   "mt5",
      "m2m100", "nllb",   "fairseq",    "opennmt",        "auto"};
  return names;
}

namespace {
MappedCheckpoint MapByName(const Checkpoint& ckpt, const ArchitectureOptions& options);
}  // namespace

std::string DetectArchitecture(const ArchitectureOptions& options) {
  const std::string path =
      options.config.empty() ? arch::DirName(options.checkpoint) + "/config.json" : options.config;
  if (!arch::FileExists(path)) {
    throw Error(
        "--arch auto needs the model's Hugging Face config.json (beside the checkpoint, or "
        "--config PATH); " +
        path + " does not exist");
  }
  const nlohmann::json j = arch::ParseJsonText(arch::ReadTextFile(path), path);
  // config.json's model_type, else its architectures' class name.
  static const struct {
    const char* model_type;
    const char* class_name;
    const char* arch;
  } kKnown[] = {{"llama", "LlamaForCausalLM", "llama"},
                {"qwen2", "Qwen2ForCausalLM", "qwen2"},
                {"mistral", "MistralForCausalLM", "mistral"},
                {"gemma", "GemmaForCausalLM", "gemma"},
                {"gpt2", "GPT2LMHeadModel", "gpt2"},
                {"marian", "MarianMTModel", "marian"},
                {"t5", "T5ForConditionalGeneration", "t5"},
                {"mt5", "MT5ForConditionalGeneration", "mt5"},
                {"m2m100", "M2M100ForConditionalGeneration", "m2m100"},
                {"bart", "BartForConditionalGeneration", "bart"},
                {"mbart", "MBartForConditionalGeneration", "mbart"}};
  const std::string model_type =
      j.is_object() && j.contains("model_type") && j["model_type"].is_string()
          ? j["model_type"].get<std::string>()
          : "";
  std::string class_name;
  if (j.is_object() && j.contains("architectures") && j["architectures"].is_array() &&
      !j["architectures"].empty() && j["architectures"][0].is_string()) {
    class_name = j["architectures"][0].get<std::string>();
  }
  // NLLB-200 is an M2M100 model with NLLB's tokenizer (tokenizer_class NllbTokenizer[Fast]).
  auto refine = [&j](const std::string& arch) -> std::string {
    if (arch == "m2m100" && j.contains("tokenizer_class") && j["tokenizer_class"].is_string() &&
        j["tokenizer_class"].get<std::string>().compare(0, 4, "Nllb") == 0)
      return "nllb";
    return arch;
  };
  for (const auto& k : kKnown) {
    if (model_type == k.model_type) return refine(k.arch);
  }
  for (const auto& k : kKnown) {
    if (model_type.empty() && class_name == k.class_name) return refine(k.arch);
  }
  std::string known;
  for (const auto& k : kKnown) known += (known.empty() ? "" : ", ") + std::string(k.model_type);
  throw Error(path + ": --arch auto does not know \"model_type\" \"" + model_type +
              "\" (architectures \"" + class_name + "\"); it knows " + known);
}

MappedCheckpoint MapCheckpoint(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  if (options.arch == "auto") {
    ArchitectureOptions detected = options;
    detected.arch = DetectArchitecture(options);
    MappedCheckpoint out = MapCheckpoint(ckpt, detected);
    out.arch = detected.arch;
    out.notes.insert(out.notes.begin(),
                     "--arch auto: " + detected.arch + " (from " + out.config_label + ")");
    return out;
  }
  MappedCheckpoint out = MapByName(ckpt, options);
  out.arch = options.arch;
  return out;
}

namespace {

MappedCheckpoint MapByName(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  if (options.arch == "tern") return arch::MapTern(ckpt, options);
  if (options.arch == "marian") return arch::MapMarian(ckpt, options);
  if (options.arch == "marian_npz") return arch::MapMarianNpz(ckpt, options);
  if (options.arch == "nn_transformer") return arch::MapNnTransformer(ckpt, options);
  if (options.arch == "annotated") return arch::MapAnnotated(ckpt, options);
  if (options.arch == "bart") return arch::MapBart(ckpt, options);
  if (options.arch == "mbart") return arch::MapMbart(ckpt, options);
  if (options.arch == "gpt2") return arch::MapGpt2(ckpt, options);
  if (options.arch == "llama") return arch::MapLlama(ckpt, options);
  if (options.arch == "qwen2") return arch::MapQwen2(ckpt, options);
  if (options.arch == "mistral") return arch::MapMistral(ckpt, options);
  if (options.arch == "gemma") return arch::MapGemma(ckpt, options);
  if (options.arch == "t5") return arch::MapT5(ckpt, options);
  if (options.arch == "mt5") return arch::MapMt5(ckpt, options);
  if (options.arch == "m2m100") return arch::MapM2M100(ckpt, options);
  if (options.arch == "nllb") return arch::MapNllb(ckpt, options);
  if (options.arch == "fairseq") return arch::MapFairseq(ckpt, options);
  if (options.arch == "opennmt") return arch::MapOpenNmt(ckpt, options);
  std::string names;
  for (const auto& n : ArchitectureNames()) names += (names.empty() ? "" : ", ") + n;
  throw Error("unknown --arch \"" + options.arch + "\"; expected one of " + names);
}

}  // namespace

}  // namespace tern::convert

#include "converter/writer.h"

#include <algorithm>

#include "converter/error.h"
#include "converter/output_file.h"
#include "converter/tokenizer/bpe_table.h"
#include "flatbuffers/flatbuffers.h"
#include "runtime/model/model.h"
#include "runtime/models/architectures.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tern_generated.h"

namespace tern::convert {

namespace {

size_t AlignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Every field of config_fields.h in its order (the order fixes the bytes); kSparse fields only
// when they differ from their default, so files that do not use them stay what format 1.2 wrote.
flatbuffers::Offset<schema::Config> BuildConfig(flatbuffers::FlatBufferBuilder& fbb,
                                                const ModelConfig& config) {
  const ModelConfig c = FileConfig(config);
  schema::ConfigBuilder b(fbb);
#define TERN_ADD_IF(name, def, flags, value) \
  if (!((flags)&FieldFlag::kSparse) || c.name != (def)) b.add_##name(value);
#define TERN_ADD_INT(name, key, def, lo, hi, flags, since) TERN_ADD_IF(name, def, flags, c.name)
#define TERN_ADD_FLOAT(name, key, def, range, flags, since) TERN_ADD_IF(name, def, flags, c.name)
#define TERN_ADD_BOOL(name, key, def, flags, since) TERN_ADD_IF(name, def, flags, c.name)
#define TERN_ADD_ENUM(name, key, Type, SchemaEnum, def, flags, since) \
  TERN_ADD_IF(name, def, flags, static_cast<schema::SchemaEnum>(c.name))
  TERN_CONFIG_FIELDS(TERN_ADD_INT, TERN_ADD_FLOAT, TERN_ADD_BOOL, TERN_ADD_ENUM)
#undef TERN_ADD_IF
#undef TERN_ADD_INT
#undef TERN_ADD_FLOAT
#undef TERN_ADD_BOOL
#undef TERN_ADD_ENUM
  return b.Finish();
}

// Builds the FlatBuffer with the given data offsets. ForceDefaults keeps every field present, so
// the buffer's size does not depend on the offset values (needed for the two-pass layout).
std::vector<uint8_t> BuildDescription(const TernContents& c,
                                      const std::vector<const EncodedTensor*>& order,
                                      const std::vector<uint64_t>& offsets) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  fbb.ForceDefaults(true);
  std::vector<flatbuffers::Offset<schema::Tensor>> tensors;
  for (size_t i = 0; i < order.size(); ++i) {
    const EncodedTensor& t = *order[i];
    auto name = fbb.CreateString(t.name);
    auto shape = fbb.CreateVector(t.shape);
    flatbuffers::Offset<schema::Quantization> quant = 0;
    if (!t.scales.empty()) {
      auto scales = fbb.CreateVector(t.scales);
      quant = schema::CreateQuantization(fbb, scales, 0, 0, static_cast<int32_t>(t.group_size));
    }
    tensors.push_back(schema::CreateTensor(fbb, name, static_cast<schema::DType>(t.dtype), shape,
                                           quant, offsets[i], t.data.size()));
  }
  auto tensor_vec = fbb.CreateVector(tensors);
  flatbuffers::Offset<schema::Tokenizer> tokenizer = 0;
  if (c.bpe_tokenizer) {
    if (!c.source_tokenizer.empty() || !c.target_tokenizer.empty()) {
      throw Error(
          "a model file holds a byte-level BPE tokenizer or SentencePiece models, not both");
    }
    tokenizer = BuildBpeTokenizer(fbb, *c.bpe_tokenizer);
  } else if (!c.target_vocabulary_map.empty()) {
    if (c.source_tokenizer.empty() || c.target_tokenizer.empty() || c.vocabulary_map.empty()) {
      throw Error("a target vocabulary map goes with a mapped SentencePiece model per side");
    }
    auto src_model = fbb.CreateVector(c.source_tokenizer);
    auto src_ids = fbb.CreateVector(c.vocabulary_map);
    auto src_mapped = schema::CreateMappedSentencePiece(fbb, src_model, src_ids);
    auto tgt_model = fbb.CreateVector(c.target_tokenizer);
    auto tgt_ids = fbb.CreateVector(c.target_vocabulary_map);
    auto tgt_mapped = schema::CreateMappedSentencePiece(fbb, tgt_model, tgt_ids);
    tokenizer = schema::CreateTokenizer(fbb, schema::TokenizerKind_SentencePieceMappedPair, 0, 0, 0,
                                        src_mapped, tgt_mapped);
  } else if (!c.vocabulary_map.empty()) {
    if (c.source_tokenizer.empty() || !c.target_tokenizer.empty()) {
      throw Error("a vocabulary map goes with one SentencePiece model serving both sides");
    }
    auto model = fbb.CreateVector(c.source_tokenizer);
    auto ids = fbb.CreateVector(c.vocabulary_map);
    auto mapped = schema::CreateMappedSentencePiece(fbb, model, ids);
    tokenizer =
        schema::CreateTokenizer(fbb, schema::TokenizerKind_SentencePieceMapped, 0, 0, 0, mapped);
  } else if (c.NonDefaultPromptSpecials()) {
    // (Only a decoder-only model may hold one: Model::Load checks that, before any file is
    // written.)
    if (!c.target_tokenizer.empty()) {
      throw Error("a prompt's BOS / EOS rule goes with a language model's one SentencePiece model");
    }
    auto model = fbb.CreateVector(c.source_tokenizer);
    auto specials =
        schema::CreateSentencePieceSpecials(fbb, model, c.prompt_add_bos, c.prompt_add_eos);
    tokenizer = schema::CreateTokenizer(fbb, schema::TokenizerKind_SentencePieceSpecials, 0, 0, 0,
                                        0, 0, specials);
  } else if (!c.source_tokenizer.empty()) {
    auto src = fbb.CreateVector(c.source_tokenizer);
    auto tgt = fbb.CreateVector(c.target_tokenizer);
    tokenizer = schema::CreateTokenizer(fbb, schema::TokenizerKind_SentencePiece, src, tgt);
  }
  // Each part is built in its own statement: the order of a call's arguments is unspecified
  // (GCC evaluates them in another order on aarch64 than on x86-64), and the builder's layout
  // follows the order of the calls, so nested Create calls would give each host other bytes.
  // This is the order x86-64 builds took, so their files stay byte for byte what they were.
  auto creation_options = fbb.CreateString(c.creation_options);
  auto source_format = fbb.CreateString(c.source_format);
  auto source_digest = fbb.CreateString(c.source_digest);
  auto converter_version = fbb.CreateString(c.converter_version);
  auto metadata = schema::CreateMetadata(fbb, converter_version, source_digest, source_format,
                                         creation_options);
  flatbuffers::Offset<schema::Shortlist> shortlist = 0, compact_shortlist = 0;
  if (c.shortlist && c.CompactShortlist()) {
    const std::vector<uint16_t> ids16(c.shortlist->ids.begin(), c.shortlist->ids.end());
    auto ids = fbb.CreateVector(ids16);
    auto row_offsets = fbb.CreateVector(c.shortlist->row_offsets);
    auto frequent = fbb.CreateVector(c.shortlist->frequent);
    compact_shortlist =
        schema::CreateShortlist(fbb, c.shortlist->k, frequent, row_offsets, /*ids=*/0, ids);
  } else if (c.shortlist) {
    auto ids = fbb.CreateVector(c.shortlist->ids);
    auto row_offsets = fbb.CreateVector(c.shortlist->row_offsets);
    auto frequent = fbb.CreateVector(c.shortlist->frequent);
    shortlist = schema::CreateShortlist(fbb, c.shortlist->k, frequent, row_offsets, ids);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<schema::Language>>> languages = 0;
  if (!c.languages.empty()) {
    std::vector<std::pair<std::string, int32_t>> sorted = c.languages;
    std::sort(sorted.begin(), sorted.end());
    std::vector<flatbuffers::Offset<schema::Language>> entries;
    for (const auto& l : sorted) {
      auto code = fbb.CreateString(l.first);
      entries.push_back(schema::CreateLanguage(fbb, code, l.second));
    }
    languages = fbb.CreateVector(entries);
  }
  auto config = BuildConfig(fbb, c.config);
  auto model = schema::CreateModel(fbb, 1, FormatMinor(c), config, tensor_vec, tokenizer, metadata,
                                   shortlist, languages, compact_shortlist);
  schema::FinishSizePrefixedModelBuffer(fbb, model);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace

uint16_t FormatMinor(const TernContents& contents) {
  // 1.2 files read the same in every 1.x reader: the floor. Each config field that differs from
  // its default needs the minor that added it (config_fields.h's since column; kv_heads = heads
  // is stored as the default), and each enum value the minor that added it (ValueSince: GeGLU is
  // 1.6); the byte-level BPE tokenizer is 1.4, the vocabulary shortlist 1.5 (with 16-bit ids
  // 1.11), a SentencePiece language model's own BOS / EOS rule 1.10.
  const ModelConfig c = FileConfig(contents.config);
  uint16_t minor = 2;
  auto need = [&minor](bool used, uint16_t since) {
    if (used && since > minor) minor = since;
  };
#define TERN_NEED(name, def, since) need(!(c.name == (def)), since);
#define TERN_NEED_INT(name, key, def, lo, hi, flags, since) TERN_NEED(name, def, since)
#define TERN_NEED_FLOAT(name, key, def, range, flags, since) TERN_NEED(name, def, since)
#define TERN_NEED_BOOL(name, key, def, flags, since) TERN_NEED(name, def, since)
#define TERN_NEED_ENUM(name, key, Type, SchemaEnum, def, flags, since) \
  TERN_NEED(name, def, since) need(true, ValueSince(c.name));
  TERN_CONFIG_FIELDS(TERN_NEED_INT, TERN_NEED_FLOAT, TERN_NEED_BOOL, TERN_NEED_ENUM)
#undef TERN_NEED
#undef TERN_NEED_INT
#undef TERN_NEED_FLOAT
#undef TERN_NEED_BOOL
#undef TERN_NEED_ENUM
  need(contents.bpe_tokenizer.has_value(), 4);
  need(contents.shortlist.has_value(), 5);
  need(!contents.languages.empty(), 7);
  need(!contents.vocabulary_map.empty(), 8);
  need(!contents.target_vocabulary_map.empty(), 9);
  need(contents.NonDefaultPromptSpecials(), 10);
  need(contents.CompactShortlist(), 11);
  return minor;
}

bool TernContents::CompactShortlist() const {
  // No row ids (K = 0, only frequent ids): nothing to halve, so the file stays 1.5.
  if (!shortlist || shortlist_wide_ids || shortlist->ids.empty()) return false;
  for (int32_t id : shortlist->ids) {
    if (id < 0 || id > 0xFFFF) return false;
  }
  return true;
}

std::vector<uint8_t> SerializeModel(const TernContents& c) {
  std::vector<const EncodedTensor*> order;
  for (const auto& t : c.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const EncodedTensor* a, const EncodedTensor* b) { return a->name < b->name; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->name == order[i - 1]->name)
      throw Error("duplicate tensor \"" + order[i]->name + "\"");
  }
  std::vector<uint64_t> offsets(order.size(), 0);
  const size_t description_size = BuildDescription(c, order, offsets).size();
  size_t cursor = AlignUp(description_size, kTensorDataAlignment);
  size_t end = cursor;
  for (size_t i = 0; i < order.size(); ++i) {
    offsets[i] = cursor;
    end = cursor + order[i]->data.size();
    cursor = AlignUp(end, kTensorDataAlignment);
  }
  std::vector<uint8_t> bytes = BuildDescription(c, order, offsets);
  if (bytes.size() != description_size)
    throw Error("internal: model description size changed between passes");
  // The file ends with the last tensor's data (no trailing padding), so any truncation is
  // detectable.
  bytes.resize(end, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    std::copy(order[i]->data.begin(), order[i]->data.end(),
              bytes.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
  }
  return bytes;
}

void WriteModelFile(const std::string& path, const TernContents& contents, bool overwrite) {
  const std::string target = CheckOutputPath(path, overwrite, contents.inputs);
  const std::vector<uint8_t> bytes = SerializeModel(contents);
  // Check with the runtime's own loader before anything reaches the destination.
  std::vector<uint8_t> aligned(bytes.size() + kTensorDataAlignment);
  const size_t shift =
      (kTensorDataAlignment - reinterpret_cast<uintptr_t>(aligned.data()) % kTensorDataAlignment) %
      kTensorDataAlignment;
  std::copy(bytes.begin(), bytes.end(), aligned.begin() + static_cast<std::ptrdiff_t>(shift));
  auto loaded = Model::Load(aligned.data() + shift, bytes.size());
  if (!loaded.ok())
    throw Error(std::string("the converted model does not load: ") + loaded.status().message());
  // Load checks the format only; a session would refuse missing or misshaped tensors at
  // Prepare, which is too late to catch the converter's own mistakes.
  const Status architecture = ValidateArchitecture(loaded.value());
  if (!architecture.ok()) {
    throw Error(std::string("the converted model does not load: ") + architecture.message());
  }
  if (contents.bpe_tokenizer) {  // what a text path will load
    const auto tokenizer = BpeTokenizer::FromModel(loaded.value());
    if (!tokenizer.ok()) {
      throw Error(std::string("the converted tokenizer does not load: ") +
                  tokenizer.status().message());
    }
  }
  if (!contents.vocabulary_map.empty()) {
    Tokenizer tokenizer, target;
    Status s = tokenizer.LoadMapped(loaded.value());
    if (s.ok()) s = target.LoadMappedTarget(loaded.value());
    if (!s.ok()) throw Error(std::string("the converted tokenizer does not load: ") + s.message());
  }
  std::vector<uint8_t>().swap(aligned);
  // Never in place: a temporary file beside the target, fsynced, then moved onto it.
  TempFile temp(target);
  temp.Write(bytes.data(), bytes.size());
  temp.Commit(overwrite);
}

}  // namespace tern::convert

#include "runtime/model/languages.h"

#include <algorithm>
#include <cstring>

#include "tern_generated.h"

namespace tern {

namespace {

// Levenshtein distance of two short codes (longer ones are cut: codes are a few characters).
int EditDistance(const char* a, const char* b) {
  constexpr size_t kMax = 32;
  const size_t n = std::min(std::strlen(a), kMax), m = std::min(std::strlen(b), kMax);
  int row[kMax + 1];
  for (size_t j = 0; j <= m; ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int up = row[j];
      const int substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min(std::min(up + 1, row[j - 1] + 1), substitute);
      diagonal = up;
    }
  }
  return row[m];
}

}  // namespace

Status CheckLanguages(const schema::Model& model, int32_t src_vocab, int32_t tgt_vocab) {
  const auto* table = model.languages();
  if (table == nullptr) return Status::Ok();
  const int32_t vocab = std::min(src_vocab, tgt_vocab);
  for (flatbuffers::uoffset_t i = 0; i < table->size(); ++i) {
    const schema::Language* l = table->Get(i);
    if (l->code() == nullptr || l->code()->size() == 0) {
      return Status::Error(StatusCode::kInvalidModel, "languages[%u]: empty code",
                           static_cast<unsigned>(i));
    }
    if (l->token() < 0 || l->token() >= vocab) {
      return Status::Error(StatusCode::kInvalidModel,
                           "languages[%u] \"%.40s\": token %d is outside the vocabulary (%d)",
                           static_cast<unsigned>(i), l->code()->c_str(), l->token(), vocab);
    }
    if (i > 0 && std::strcmp(table->Get(i - 1)->code()->c_str(), l->code()->c_str()) >= 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "languages[%u] \"%.40s\": codes must be sorted and unique",
                           static_cast<unsigned>(i), l->code()->c_str());
    }
  }
  return Status::Ok();
}

Status FindLanguage(const schema::Model& model, const char* code, int32_t* token) {
  const auto* table = model.languages();
  if (table == nullptr || table->size() == 0) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "this model has no language table (convert a multilingual model with "
                         "its tokenizer_config.json)");
  }
  if (code != nullptr) {
    if (const schema::Language* l = table->LookupByKey(code)) {
      *token = l->token();
      return Status::Ok();
    }
  }
  // The three nearest codes, by edit distance, then table order.
  const schema::Language* best[3] = {nullptr, nullptr, nullptr};
  int distance[3] = {0, 0, 0};
  for (const schema::Language* l : *table) {
    const int d = EditDistance(code ? code : "", l->code()->c_str());
    for (int k = 0; k < 3; ++k) {
      if (best[k] == nullptr || d < distance[k]) {
        for (int m = 2; m > k; --m) {
          best[m] = best[m - 1];
          distance[m] = distance[m - 1];
        }
        best[k] = l;
        distance[k] = d;
        break;
      }
    }
  }
  char nearest[120] = "";
  for (int k = 0; k < 3 && best[k] != nullptr; ++k) {
    std::strncat(nearest, k ? ", " : "", sizeof nearest - std::strlen(nearest) - 1);
    std::strncat(nearest, best[k]->code()->c_str(), 32);
  }
  return Status::Error(StatusCode::kInvalidArgument,
                       "unknown language code \"%.40s\"; nearest known: %s", code ? code : "",
                       nearest);
}

}  // namespace tern

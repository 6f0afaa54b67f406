#include "converter/shortlist.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "converter/error.h"

namespace tern::convert {

namespace {

// (source, target) -> dense pair index, open addressing: the corpus' co-occurring pairs are
// tens of millions for an 8k vocabulary, too many for std::unordered_map's nodes.
class PairIndex {
 public:
  PairIndex() : keys_(1 << 20, kEmpty), values_(1 << 20) {}
  // The pair's index, added if new.
  uint32_t Insert(uint64_t key) {
    size_t slot = Find(key);
    if (keys_[slot] == key) return values_[slot];
    if ((count_ + 1) * 2 > keys_.size()) {
      Grow();
      slot = Find(key);
    }
    keys_[slot] = key;
    values_[slot] = count_;
    return count_++;
  }
  uint32_t At(uint64_t key) const { return values_[Find(key)]; }  // key must be present
  uint32_t size() const { return count_; }
  template <typename F>
  void ForEach(F f) const {
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != kEmpty) f(keys_[i], values_[i]);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  size_t Find(uint64_t key) const {
    const size_t mask = keys_.size() - 1;
    size_t slot = (key * 0x9E3779B97F4A7C15ull) >> 20 & mask;
    while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask;
    return slot;
  }
  void Grow() {
    std::vector<uint64_t> keys(keys_.size() * 2, kEmpty);
    std::vector<uint32_t> values(keys.size());
    keys.swap(keys_);
    values.swap(values_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == kEmpty) continue;
      keys_[Find(keys[i])] = keys[i];
      values_[Find(keys[i])] = values[i];
    }
  }
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
  uint32_t count_ = 0;
};

uint64_t Key(int32_t s, int32_t t) {
  return static_cast<uint64_t>(static_cast<uint32_t>(s)) << 32 | static_cast<uint32_t>(t);
}

std::vector<int32_t> Distinct(const IdSequence& ids) {
  std::vector<int32_t> d(ids);
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

void CheckIds(const std::vector<IdSequence>& lines, int32_t vocab, const char* side) {
  for (size_t i = 0; i < lines.size(); ++i) {
    for (int32_t id : lines[i]) {
      if (id < 0 || id >= vocab) {
        throw Error(std::string("shortlist corpus, ") + side + " line " + std::to_string(i + 1) +
                    ": token id " + std::to_string(id) + " is outside the vocabulary (" +
                    std::to_string(vocab) + ")");
      }
    }
  }
}

// Dunning's G^2 for a 2x2 table of sentence counts; 0 unless s and t attract each other.
double LogLikelihoodRatio(double k11, double cs, double ct, double n) {
  const double k12 = cs - k11, k21 = ct - k11, k22 = n - cs - ct + k11;
  if (k11 * n <= cs * ct) return 0;
  auto term = [](double k, double expected) { return k > 0 ? k * std::log(k / expected) : 0.0; };
  return 2 * (term(k11, cs * ct / n) + term(k12, cs * (n - ct) / n) + term(k21, (n - cs) * ct / n) +
              term(k22, (n - cs) * (n - ct) / n));
}

}  // namespace

LexicalScore ParseLexicalScore(const std::string& name) {
  if (name == "ibm1") return LexicalScore::kIbm1;
  if (name == "llr") return LexicalScore::kLogLikelihood;
  throw Error("unknown shortlist score \"" + name + "\" (ibm1 or llr)");
}

ShortlistData BuildShortlist(const std::vector<IdSequence>& source,
                             const std::vector<IdSequence>& target, int32_t src_vocab,
                             int32_t tgt_vocab, const ShortlistOptions& options) {
  if (source.size() != target.size()) {
    throw Error("shortlist corpus: the source has " + std::to_string(source.size()) +
                " lines, the target " + std::to_string(target.size()));
  }
  if (options.k < 0 || options.f < 0) throw Error("shortlist: K and F must be >= 0");
  if (options.k == 0 && options.f == 0) {
    throw Error("shortlist: K = 0 and F = 0 would allow no token but the special ids");
  }
  if (options.k > tgt_vocab || options.f > tgt_vocab) {
    throw Error("shortlist: K = " + std::to_string(options.k) +
                " and F = " + std::to_string(options.f) + " must not exceed tgt_vocab_size " +
                std::to_string(tgt_vocab));
  }
  CheckIds(source, src_vocab, "source");
  CheckIds(target, tgt_vocab, "target");
  std::vector<char> special(static_cast<size_t>(tgt_vocab), 0);
  for (int32_t id : options.special_ids)
    if (id >= 0 && id < tgt_vocab) special[static_cast<size_t>(id)] = 1;

  // Sentence pairs with tokens on both sides; the frequent tokens count every target token.
  std::vector<size_t> pairs;
  std::vector<double> target_count(static_cast<size_t>(tgt_vocab), 0);
  for (size_t i = 0; i < source.size(); ++i) {
    for (int32_t t : target[i]) target_count[static_cast<size_t>(t)] += 1;
    if (!source[i].empty() && !target[i].empty()) pairs.push_back(i);
  }
  if (pairs.empty()) {
    throw Error("shortlist corpus is empty: no line has tokens on both sides");
  }
  ShortlistData out;
  out.k = static_cast<int32_t>(options.k);
  out.tgt_vocab = tgt_vocab;
  std::vector<int32_t> order(static_cast<size_t>(tgt_vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return target_count[static_cast<size_t>(a)] > target_count[static_cast<size_t>(b)];
  });
  std::vector<char> in_frequent(static_cast<size_t>(tgt_vocab), 0);
  for (int32_t t : order) {
    if (static_cast<int64_t>(out.frequent.size()) == options.f) break;
    if (special[static_cast<size_t>(t)]) continue;
    out.frequent.push_back(t);
    in_frequent[static_cast<size_t>(t)] = 1;
  }
  std::sort(out.frequent.begin(), out.frequent.end());

  // The support: every (source, target) pair that shares a sentence; IBM model 1's NULL word
  // is source id src_vocab.
  PairIndex index;
  for (size_t i : pairs) {
    std::vector<int32_t> s = Distinct(source[i]), t = Distinct(target[i]);
    if (options.score == LexicalScore::kIbm1) s.push_back(src_vocab);
    for (int32_t a : s)
      for (int32_t b : t) index.Insert(Key(a, b));
  }
  std::vector<double> score(index.size(), 0);
  if (options.score == LexicalScore::kLogLikelihood) {
    std::vector<double> cooc(index.size(), 0), cs(static_cast<size_t>(src_vocab), 0),
        ct(static_cast<size_t>(tgt_vocab), 0);
    for (size_t i : pairs) {
      const std::vector<int32_t> s = Distinct(source[i]), t = Distinct(target[i]);
      for (int32_t a : s) cs[static_cast<size_t>(a)] += 1;
      for (int32_t b : t) ct[static_cast<size_t>(b)] += 1;
      for (int32_t a : s)
        for (int32_t b : t) cooc[index.At(Key(a, b))] += 1;
    }
    const double n = static_cast<double>(pairs.size());
    index.ForEach([&](uint64_t key, uint32_t p) {
      const auto a = static_cast<size_t>(key >> 32), b = static_cast<size_t>(key & 0xffffffffu);
      score[p] = LogLikelihoodRatio(cooc[p], cs[a], ct[b], n);
    });
  } else {
    // EM for t(target | source), uniform start over the support.
    std::vector<double> row_size(static_cast<size_t>(src_vocab) + 1, 0);
    index.ForEach([&](uint64_t key, uint32_t) { row_size[key >> 32] += 1; });
    std::vector<float> prob(index.size());
    index.ForEach(
        [&](uint64_t key, uint32_t p) { prob[p] = static_cast<float>(1.0 / row_size[key >> 32]); });
    std::vector<double> count(index.size()), total(static_cast<size_t>(src_vocab) + 1);
    std::vector<uint32_t> cell;
    for (int iteration = 0; iteration < options.iterations; ++iteration) {
      std::fill(count.begin(), count.end(), 0.0);
      std::fill(total.begin(), total.end(), 0.0);
      for (size_t i : pairs) {
        const IdSequence& s = source[i];
        const IdSequence& t = target[i];
        const size_t m = s.size() + 1;
        cell.resize(m * t.size());
        for (size_t j = 0; j < t.size(); ++j) {
          for (size_t a = 0; a < m; ++a) {
            cell[j * m + a] = index.At(Key(a + 1 < m ? s[a] : src_vocab, t[j]));
          }
          double sum = 0;
          for (size_t a = 0; a < m; ++a) sum += prob[cell[j * m + a]];
          for (size_t a = 0; a < m; ++a) {
            const double posterior = prob[cell[j * m + a]] / sum;
            count[cell[j * m + a]] += posterior;
            total[a + 1 < m ? static_cast<size_t>(s[a]) : static_cast<size_t>(src_vocab)] +=
                posterior;
          }
        }
      }
      index.ForEach([&](uint64_t key, uint32_t p) {
        prob[p] = static_cast<float>(count[p] / total[key >> 32]);
      });
    }
    for (size_t p = 0; p < prob.size(); ++p) score[p] = prob[p];
  }

  // Each row: its K best targets that are not frequent or special, best first (ties: lower id).
  std::vector<std::vector<std::pair<double, int32_t>>> rows(static_cast<size_t>(src_vocab));
  index.ForEach([&](uint64_t key, uint32_t p) {
    const auto a = static_cast<size_t>(key >> 32);
    const auto b = static_cast<int32_t>(key & 0xffffffffu);
    if (a >= rows.size() || special[static_cast<size_t>(b)] ||
        in_frequent[static_cast<size_t>(b)] || score[p] <= 0) {
      return;
    }
    rows[a].emplace_back(score[p], b);
  });
  out.row_offsets.push_back(0);
  for (auto& row : rows) {
    const size_t keep = std::min(row.size(), static_cast<size_t>(options.k));
    std::partial_sort(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep), row.end(),
                      [](const std::pair<double, int32_t>& x, const std::pair<double, int32_t>& y) {
                        return x.first != y.first ? x.first > y.first : x.second < y.second;
                      });
    for (size_t r = 0; r < keep; ++r) out.ids.push_back(row[r].second);
    out.row_offsets.push_back(static_cast<uint32_t>(out.ids.size()));
    std::vector<std::pair<double, int32_t>>().swap(row);
  }
  return out;
}

std::vector<int32_t> Candidates(const ShortlistData& shortlist, const IdSequence& source,
                                const std::vector<int32_t>& special_ids) {
  std::vector<int32_t> c(shortlist.frequent);
  c.insert(c.end(), special_ids.begin(), special_ids.end());
  for (int32_t s : source) {
    if (s < 0 || static_cast<size_t>(s) + 1 >= shortlist.row_offsets.size()) continue;
    c.insert(c.end(), shortlist.ids.begin() + shortlist.row_offsets[static_cast<size_t>(s)],
             shortlist.ids.begin() + shortlist.row_offsets[static_cast<size_t>(s) + 1]);
  }
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

ShortlistCoverage MeasureCoverage(const ShortlistData& shortlist,
                                  const std::vector<IdSequence>& source,
                                  const std::vector<IdSequence>& target,
                                  const std::vector<int32_t>& special_ids) {
  if (source.size() != target.size()) {
    throw Error("shortlist evaluation: the source has " + std::to_string(source.size()) +
                " lines, the target " + std::to_string(target.size()));
  }
  ShortlistCoverage r;
  size_t tokens = 0, covered = 0, candidates = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    const std::vector<int32_t> c = Candidates(shortlist, source[i], special_ids);
    for (int32_t t : target[i]) {
      ++tokens;
      covered += std::binary_search(c.begin(), c.end(), t);
    }
    candidates += c.size();
    r.max_candidates = std::max(r.max_candidates, c.size());
  }
  r.sentences = source.size();
  r.recall = tokens ? static_cast<double>(covered) / static_cast<double>(tokens) : 1.0;
  r.mean_candidates =
      r.sentences ? static_cast<double>(candidates) / static_cast<double>(r.sentences) : 0;
  return r;
}

std::string ShortlistText(const ShortlistData& shortlist) {
  std::ostringstream o;
  o << "tern-shortlist 2\nvocab " << shortlist.row_offsets.size() - 1 << ' ' << shortlist.tgt_vocab
    << "\nk " << shortlist.k << "\nfrequent";
  for (int32_t id : shortlist.frequent) o << ' ' << id;
  o << '\n';
  for (size_t s = 0; s + 1 < shortlist.row_offsets.size(); ++s) {
    if (shortlist.row_offsets[s] == shortlist.row_offsets[s + 1]) continue;
    o << s << '\t';
    for (uint32_t i = shortlist.row_offsets[s]; i < shortlist.row_offsets[s + 1]; ++i) {
      o << (i == shortlist.row_offsets[s] ? "" : " ") << shortlist.ids[i];
    }
    o << '\n';
  }
  return o.str();
}

ShortlistData ReadShortlistText(const std::string& path, int32_t src_vocab, int32_t tgt_vocab) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  std::string line;
  size_t number = 0;
  auto fail = [&](const std::string& what) {
    throw Error(path + ":" + std::to_string(number) + ": " + what);
  };
  auto next = [&](const char* what) {
    if (!std::getline(f, line)) fail(std::string("missing ") + what);
    ++number;
  };
  auto ids_of = [&](std::istringstream& in, int32_t vocab, std::vector<int32_t>* ids) {
    long long v;
    while (in >> v) {
      if (v < 0 || v >= vocab) {
        fail("id " + std::to_string(v) + " is outside the vocabulary (" + std::to_string(vocab) +
             ")");
      }
      ids->push_back(static_cast<int32_t>(v));
    }
    if (!in.eof()) fail("expected token ids");
  };
  ShortlistData out;
  out.tgt_vocab = tgt_vocab;
  next("the header");
  if (line != "tern-shortlist 1" && line != "tern-shortlist 2")
    fail("not a tern shortlist (expected \"tern-shortlist 2\", or 1)");
  if (line == "tern-shortlist 2") {
    next("the vocab line");
    std::istringstream in(line);
    std::string word;
    long long src = -1, tgt = -1;
    if (!(in >> word >> src >> tgt) || word != "vocab" || !(in >> std::ws).eof())
      fail("expected \"vocab SRC_VOCAB TGT_VOCAB\"");
    if (src != src_vocab || tgt != tgt_vocab) {
      fail("built for vocabularies of " + std::to_string(src) + " source and " +
           std::to_string(tgt) + " target tokens; this model has " + std::to_string(src_vocab) +
           " and " + std::to_string(tgt_vocab) + " (a shortlist belongs to its tokenizer)");
    }
  }
  next("the k line");
  {
    std::istringstream in(line);
    std::string word;
    long long k = -1;
    if (!(in >> word >> k) || word != "k" || k < 0 || k > tgt_vocab || !(in >> std::ws).eof())
      fail("expected \"k K\" with 0 <= K <= tgt_vocab_size " + std::to_string(tgt_vocab));
    out.k = static_cast<int32_t>(k);
  }
  next("the frequent line");
  {
    std::istringstream in(line);
    std::string word;
    if (!(in >> word) || word != "frequent") fail("expected \"frequent ID ...\"");
    ids_of(in, tgt_vocab, &out.frequent);
    if (out.frequent.size() > static_cast<size_t>(tgt_vocab))
      fail("more frequent ids than the target vocabulary");
  }
  if (out.k == 0 && out.frequent.empty()) fail("k = 0 and no frequent ids allow no token");
  out.row_offsets.assign(1, 0);
  long long previous = -1;
  while (std::getline(f, line)) {
    ++number;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) fail("expected SOURCE_ID<TAB>IDS");
    std::istringstream head(line.substr(0, tab));
    long long s = -1;
    if (!(head >> s) || !(head >> std::ws).eof() || s < 0 || s >= src_vocab) {
      fail("source id \"" + line.substr(0, tab) + "\" is not in [0, " + std::to_string(src_vocab) +
           ")");
    }
    if (s <= previous) fail("source ids must ascend");
    while (static_cast<long long>(out.row_offsets.size()) <= s)
      out.row_offsets.push_back(static_cast<uint32_t>(out.ids.size()));
    std::istringstream in(line.substr(tab + 1));
    const size_t before = out.ids.size();
    ids_of(in, tgt_vocab, &out.ids);
    if (out.ids.size() - before > static_cast<size_t>(out.k))
      fail("row of source " + std::to_string(s) + " has more than k = " + std::to_string(out.k) +
           " ids");
    out.row_offsets.push_back(static_cast<uint32_t>(out.ids.size()));
    previous = s;
  }
  while (static_cast<long long>(out.row_offsets.size()) <= src_vocab)
    out.row_offsets.push_back(static_cast<uint32_t>(out.ids.size()));
  return out;
}

}  // namespace tern::convert

// The quality report: BLEU on ids, token agreement and logit error between two models.
#include "converter/quality.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::WithinAbs;

TEST_CASE("corpus BLEU-4 on ids", "[quality]") {
  CHECK_THAT(CorpusBleu({{1, 2, 3, 4, 5}}, {{1, 2, 3, 4, 5}}), WithinAbs(100.0, 1e-9));
  CHECK(CorpusBleu({{1, 2, 3}}, {{4, 5, 6}}) == 0.0);
  CHECK(CorpusBleu({{1, 2, 3, 4}}, {{1, 2, 3, 4, 5, 6, 7, 8}}) < 100.0);  // brevity penalty
  // Hand-computed: hyp 1 2 3 4 6 vs ref 1 2 3 4 5: p1 4/5, p2 3/4, p3 2/3, p4 1/2, BP 1.
  const double expected = 100.0 * std::pow(0.8 * 0.75 * (2.0 / 3.0) * 0.5, 0.25);
  CHECK_THAT(CorpusBleu({{1, 2, 3, 4, 6}}, {{1, 2, 3, 4, 5}}), WithinAbs(expected, 1e-9));
  // Clipping: a repeated id counts once per reference occurrence.
  CHECK_THAT(
      CorpusBleu({{7, 7, 7, 7, 1, 2, 3, 4}, {1, 2, 3, 4}},
                 {{7, 1, 2, 3, 4, 9, 9, 9}, {1, 2, 3, 4}}),
      WithinAbs(100.0 * std::pow((9.0 / 12) * (7.0 / 10) * (5.0 / 8) * (3.0 / 6), 0.25), 1e-9));
}

TEST_CASE("id files: one sentence per line, errors name the line", "[quality]") {
  testing::ScratchDir dir;
  testing::WriteBytes(dir / "ids.txt", "4 5 6 0\n\n7 0\n");
  const auto lines = ReadIdLines(dir / "ids.txt");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == IdSequence{4, 5, 6, 0});
  CHECK(lines[1].empty());
  testing::WriteBytes(dir / "bad.txt", "4 5\n6 x 7\n");
  REQUIRE_THROWS_WITH(ReadIdLines(dir / "bad.txt"),
                      ContainsSubstring("bad.txt: line 2: \"x\" is not a token id"));
}

TEST_CASE("a model compared with itself agrees fully; int4 does not", "[quality]") {
  ConvertOptions o;
  o.checkpoint = testing::CheckpointFixture("marian/pytorch_model.bin");
  o.arch = "marian";
  const TernContents fp32 = BuildContents(o);
  const std::vector<IdSequence> sources = {{5, 9, 12, 0}, {3, 0}, {}, {17, 4, 4, 8, 2, 0}};
  const std::vector<IdSequence> references = {{6, 6, 4}, {2, 2}, {}, {8, 8, 8, 8}};
  QualityReport same = CompareModels(fp32, fp32, sources, references, 10);
  CHECK(same.sentences == 3);  // the empty line is skipped
  CHECK(same.identical == 3);
  CHECK(same.agreeing == same.positions);
  CHECK(same.max_abs_logit_error == 0.0);
  CHECK(same.top1_agreeing == same.steps);
  CHECK(same.has_bleu);
  CHECK(same.bleu_reference == same.bleu_converted);
  o.dtype = DType::kI4;
  o.group_size = 8;
  QualityReport q = CompareModels(fp32, BuildContents(o), sources, references, 10);
  q.label = "i4";
  CHECK(q.max_abs_logit_error > 0.0);
  CHECK(q.mean_abs_logit_error > 0.0);
  CHECK(q.mean_abs_logit_error <= q.max_abs_logit_error);
  const std::string text = q.Format();
  CHECK_THAT(text, ContainsSubstring("quality report: i4 vs fp32, 3 sentences") &&
                       ContainsSubstring("token agreement") &&
                       ContainsSubstring("BLEU-4 on ids vs references"));
  REQUIRE_THROWS_WITH(CompareModels(fp32, fp32, sources, {{1}}, 10),
                      ContainsSubstring("4 source lines but 1 reference lines"));
  REQUIRE_THROWS_WITH(CompareModels(fp32, fp32, {{99, 0}}, {}, 10),
                      ContainsSubstring("source line 1"));
}

}  // namespace
}  // namespace tern::convert

// tern translate: stdin lines -> translations on stdout, one line each.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/load.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern translate -m MODEL --ids [options] < input\n"
    "\n"
    "Reads one sentence per line from stdin and writes its translation to stdout.\n"
    "With --ids, a line is space-separated source token ids (EOS included, as the model\n"
    "expects) and the output is the generated ids (without the start token and EOS).\n"
    "\n"
    "options:\n"
    "  -m, --model PATH      the .tern model\n"
    "  --ids                 token ids in and out\n"
    "  --batch N             sentences translated together (default 1)\n"
    "  --max-source N        longest source in tokens (default: min(256, max_positions))\n"
    "  --max-length N        longest output in tokens incl. EOS (default: min(256, max_positions))\n";

std::vector<int32_t> ParseIds(const std::string& line, size_t line_number) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (errno || *end != '\0' || v < INT32_MIN || v > INT32_MAX) {
      throw std::runtime_error("line " + std::to_string(line_number) + ": \"" + word + "\" is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

}  // namespace

int Translate(int argc, char** argv) {
  Args args(argc, argv, {"model", "batch", "max-source", "max-length"}, {"ids", "help"}, {{"-m", "--model"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args.has("model")) throw UsageError("--model is required");
  if (!args.has("ids")) {
    throw UsageError("text input needs the tokenizer support of a later version; use --ids");
  }
  LoadedModel loaded = LoadModel(args.get("model"));
  const ModelConfig& config = loaded.model.config();
  const long long default_length = config.max_positions < 256 ? config.max_positions : 256;
  Limits limits;
  limits.max_batch = static_cast<int32_t>(args.get_int("batch", 1));
  limits.max_source_length = static_cast<int32_t>(args.get_int("max-source", default_length));
  limits.max_target_length = static_cast<int32_t>(args.get_int("max-length", default_length));
  auto need = Session::RequiredArenaBytes(loaded.model, limits);
  if (!need.ok()) throw std::runtime_error(need.status().message());
  std::vector<uint8_t> arena(need.value());
  Session session;
  Status status = session.Prepare(loaded.model, limits, arena.data(), arena.size());
  if (!status.ok()) throw std::runtime_error(status.message());

  const int64_t stride = limits.max_source_length;
  const int64_t out_stride = limits.max_target_length;
  std::vector<int32_t> src(static_cast<size_t>(limits.max_batch * stride));
  std::vector<int32_t> lengths(static_cast<size_t>(limits.max_batch));
  std::vector<int32_t> out(static_cast<size_t>(limits.max_batch * out_stride));
  std::vector<int32_t> out_lengths(static_cast<size_t>(limits.max_batch));
  std::vector<bool> empty;  // empty lines pass through as empty lines
  std::string line;
  size_t line_number = 0;
  int32_t filled = 0;
  auto flush = [&]() {
    std::vector<int32_t> real_index;
    int32_t batch = 0;
    for (int32_t i = 0; i < filled; ++i) {
      if (empty[static_cast<size_t>(i)]) continue;
      if (batch != i) {
        std::copy(src.begin() + i * stride, src.begin() + (i + 1) * stride, src.begin() + batch * stride);
        lengths[static_cast<size_t>(batch)] = lengths[static_cast<size_t>(i)];
      }
      ++batch;
    }
    if (batch > 0) {
      GreedyOptions options;
      Status s = session.TranslateIds(src.data(), stride, lengths.data(), batch, options, out.data(),
                                      out_stride, out_lengths.data());
      if (!s.ok()) throw std::runtime_error("line " + std::to_string(line_number) + ": " + s.message());
    }
    int32_t next = 0;
    for (int32_t i = 0; i < filled; ++i) {
      if (!empty[static_cast<size_t>(i)]) {
        for (int32_t k = 0; k < out_lengths[static_cast<size_t>(next)]; ++k) {
          std::cout << (k ? " " : "") << out[static_cast<size_t>(next * out_stride + k)];
        }
        ++next;
      }
      std::cout << '\n';
    }
    std::cout.flush();
    filled = 0;
    empty.clear();
  };
  while (std::getline(std::cin, line)) {
    ++line_number;
    const std::vector<int32_t> ids = ParseIds(line, line_number);
    if (static_cast<int64_t>(ids.size()) > stride) {
      throw std::runtime_error("line " + std::to_string(line_number) + ": " + std::to_string(ids.size()) +
                               " tokens; --max-source is " + std::to_string(stride));
    }
    std::copy(ids.begin(), ids.end(), src.begin() + filled * stride);
    lengths[static_cast<size_t>(filled)] = static_cast<int32_t>(ids.size());
    empty.push_back(ids.empty());
    if (++filled == limits.max_batch) flush();
  }
  if (filled > 0) flush();
  return 0;
}

}  // namespace tern::cli

// tern convert's shortlist options: build the vocabulary shortlist from parallel text (or read
// its text form), and its held-out recall. converter/shortlist.h does the work.
#pragma once

#include <string>
#include <vector>

#include "converter/writer.h"
#include "tools/tern/args.h"

namespace tern::cli {

struct ShortlistRequest {
  std::vector<std::string> corpus;    // SRC TGT, or empty
  std::vector<std::string> held_out;  // --shortlist-eval SRC TGT, or empty
  std::string file;                   // --shortlist
  std::string write;                  // --write-shortlist
  long long k = 50, f = 50;
  std::string score = "ibm1";
  bool wide_ids = false;  // --shortlist-ids 32: the 1.5 form, for readers older than 1.11
  bool wanted() const { return !corpus.empty() || !file.empty(); }
};

// Lines of a UTF-8 text file encoded with a serialized SentencePiece model (the one embedded in
// the output); empty lines stay empty. Errors name the file and line.
std::vector<convert::IdSequence> EncodeLines(const std::string& path,
                                             const std::vector<uint8_t>& spm, bool append_eos,
                                             int32_t eos_id);

// Takes the options out of args (the pairs are taken from argv before Args parses it) and
// checks how they combine; UsageError otherwise.
ShortlistRequest ParseShortlistRequest(const Args& args, std::vector<std::string> corpus,
                                       std::vector<std::string> held_out);

// Sets contents->shortlist (encoding the corpus with the embedded tokenizers); notes on stderr
// unless quiet. Throws convert::Error naming a bad input.
void AddShortlist(const ShortlistRequest& request, bool quiet, convert::TernContents* contents);

// Prints the recall on the held-out text (stdout), if asked.
void ReportShortlist(const ShortlistRequest& request, const convert::TernContents& contents);

}  // namespace tern::cli

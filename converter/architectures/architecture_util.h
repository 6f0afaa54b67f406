// Helpers shared by the architecture name maps (internal to converter/architectures).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "converter/architectures/architecture.h"
#include "runtime/kernels/reference/positions.h"

namespace tern::convert::arch {

// Tracks which source tensors a map has used; the rest must be skipped or are unexpected.
class Sources {
 public:
  Sources(const Checkpoint& ckpt, const std::vector<std::string>& skip_prefixes)
      : ckpt_(ckpt), skip_(skip_prefixes) {}

  const Checkpoint& ckpt() const { return ckpt_; }
  bool Has(const std::string& name) const { return ckpt_.has(name) && !Skipped(name); }
  bool Skipped(const std::string& name) const;
  void Use(const std::string& name) { used_.insert(name); }

  // canonical <- source, unchanged (a no-op for a missing source: the layout check reports it).
  void Direct(MappedCheckpoint* out, const std::string& canonical, const std::string& source);
  // canonical <- rows [begin, begin + count) of a source whose first dimension is `total`
  // (nn.MultiheadAttention's packed in_proj_weight / in_proj_bias).
  void Rows(MappedCheckpoint* out, const std::string& canonical, const std::string& source,
            int64_t begin, int64_t count, int64_t total);
  // canonical <- source with its leading size-1 dimensions removed ([1, V] -> [V]).
  void Squeeze(MappedCheckpoint* out, const std::string& canonical, const std::string& source);
  // Throws "unexpected tensor" for the first source tensor not used nor skipped.
  void CheckAllUsed(const std::string& hint) const;

 private:
  const Checkpoint& ckpt_;
  std::vector<std::string> skip_;
  std::set<std::string> used_;
};

// True when two source tensors hold the same values (same shape; bitwise equal as float32).
bool SameValues(const Checkpoint& ckpt, const std::string& a, const std::string& b);

// Verifies that a stored sinusoidal table equals the runtime's table for `layout` (rows x
// d_model after removing size-1 dimensions, within float32 rounding of the writer), so it can be
// dropped. Returns the number of rows. On a mismatch: an error saying which layout (if any) the
// table does match, or, with `ignore`, a note.
// The rows are absolute positions (row 0 is position 0, also for kFairseq, whose sequences start
// at pad + 1); zero_row >= 0: a row the writer zeroed (fairseq's padding_idx), which must be 0.
int64_t VerifyPositionTable(const Checkpoint& ckpt, const std::string& name, int64_t d_model,
                            ref::SinusoidLayout layout, bool ignore,
                            std::vector<std::string>* notes, int64_t zero_row = -1);

std::string ReadTextFile(const std::string& path);
std::string DirName(const std::string& path);
bool FileExists(const std::string& path);
nlohmann::json ParseJsonText(const std::string& text, const std::string& label);

// The Hugging Face config.json a map of `arch` reads: --config, else the one beside the
// checkpoint; its path goes to out->config_label. Missing, not JSON or not an object: an error.
nlohmann::json ReadHfConfigJson(const Checkpoint& ckpt, const ArchitectureOptions& options,
                                const std::string& arch, MappedCheckpoint* out);

// Applies `--set`/--config overrides (partial tern config JSON) onto the mapped config.
void ApplyOverrides(const ArchitectureOptions& options, MappedCheckpoint* out);

// Largest N + 1 such that "<prefix>N." starts some source tensor name; checks 0..N-1 all exist.
int32_t CountLayers(const Sources& src, const std::string& prefix);

MappedCheckpoint MapTern(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapMarian(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapMarianNpz(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapNnTransformer(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapAnnotated(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapBart(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapMbart(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapGpt2(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapLlama(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapQwen2(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapMistral(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapGemma(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapT5(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapMt5(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapM2M100(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapNllb(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapFairseq(const Checkpoint& ckpt, const ArchitectureOptions& options);
MappedCheckpoint MapOpenNmt(const Checkpoint& ckpt, const ArchitectureOptions& options);

}  // namespace tern::convert::arch

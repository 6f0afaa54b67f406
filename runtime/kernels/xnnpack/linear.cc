#include "runtime/kernels/xnnpack/linear.h"

#include <pthreadpool.h>
#include <xnnpack.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/core/fp16.h"
#include "runtime/kernels/vectorized/linear_qd8.h"
#include "runtime/kernels/vectorized/linear_sign.h"
#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/kernel_check.h"
#include "runtime/kernels/xnnpack/linear_paths.h"

namespace tern::xnn {

namespace {

std::atomic<uint32_t> g_unsupported_for_testing{0};
std::atomic<bool> g_prefer_loops{true};

// The paths XNNPACK has for a weight, best first.
int Candidates(const WeightView& w, LinearPath* out) {
  switch (w.dtype) {
    case DType::kF32:
      out[0] = LinearPath::kF32;
      return 1;
    case DType::kF16:
      out[0] = LinearPath::kF16;
      out[1] = LinearPath::kF16AsF32;
      return 2;
    case DType::kI8:
      if (w.group_size != 0) return 0;  // int8 with block scales: no XNNPACK operator
      out[0] = LinearPath::kQd8Qc8w;
      out[1] = LinearPath::kF32Qc8w;
      return 2;
    case DType::kI4:
      if (w.group_size == 0) {
        out[0] = LinearPath::kQd8Qc4w;
        if (!F32Qc4wTakes(w.cols)) return 1;
        out[1] = LinearPath::kF32Qc4w;
        return 2;
      }
      // XNNPACK's blockwise int4 wants blocks of a multiple of 32 that divide the row.
      if (w.group_size % XNN_MIN_BLOCKSIZE == 0 && w.cols % w.group_size == 0) {
        out[0] = LinearPath::kQd8Qb4w;
        return 1;
      }
      return 0;
    case DType::kI32:
      return 0;
  }
  return 0;
}

// The paths worth trying for a weight, best first: its candidates up to the first whose operator
// computes wrong results on this CPU (kernel_check.h), less that one. The next path runs (f16's
// f32-compute path), or tern's own loops (ops::Linear) when none is left.
int Chain(const WeightView& w, LinearPath* out) {
  LinearPath all[kLinearPathCount];
  const int count = Candidates(w, all);
  int kept = 0;
  for (int i = 0; i < count; ++i) {
    if (PathTrusted(all[i])) {
      out[kept++] = all[i];
    } else if (Traits(all[i]).activations == Activations::kQd8) {
      // Not its f32-activation sibling, which would change the results: tern's integer loops
      // compute the qd8 path's math, to its bits for one scale per row (linear_qd8.h).
      break;
    }
  }
  return kept;
}

}  // namespace

// XNNPACK 2024-11's f32_qc4w GEMM on ARM (aarch64 and armv7) computes garbage for rows with an
// odd number of input channels (measured under qemu: errors 10^5..10^8 times the int4 tolerance,
// even K exact; x86-64 is exact for both), so there odd K skips that path and runs the
// vectorizable loops (vectorized/linear.h). Real models have even widths; the qd8 path, tried
// first, is unaffected.
bool F32Qc4wTakes(int64_t cols) {
#if defined(__aarch64__) || defined(__arm__)
  return cols % 2 == 0;
#else
  (void)cols;
  return true;
#endif
}

ScratchLayout Layout(LinearPath path, const LinearSpec& spec) {
  const PathTraits& t = Traits(path);
  const size_t n = static_cast<size_t>(spec.weight.rows);
  const size_t k = static_cast<size_t>(spec.weight.cols);
  ScratchLayout l;
  switch (t.small) {
    case Small::kNothing:
      break;
    case Small::kF16Bias:
      if (spec.bias) l.small_bytes = Align64(n * sizeof(uint16_t));
      break;
    case Small::kRowScales:
      l.small_bytes = Align64(n * sizeof(float));
      break;
    case Small::kBlockScales:
      l.small_bytes =
          Align64(n * static_cast<size_t>(spec.weight.groups_per_row()) * sizeof(uint16_t));
      break;
  }
  if (t.repack == Repack::kToUnsigned || (t.repack == Repack::kClearPadding && k % 2)) {
    l.kernel_bytes = Align64(n * spec.weight.row_bytes());
  }
  return l;
}

namespace {

// Part p of a layer cut into spec.parts: its output rows, their scales and bias; the strides
// stay the whole layer's (each part writes its columns of the same y).
LinearSpec PartSpec(const LinearSpec& spec, int p) {
  if (spec.parts <= 1) return spec;
  const WeightView& w = spec.weight;
  const int64_t begin = PartBegin(w.rows, spec.parts, p);
  const int64_t end = PartBegin(w.rows, spec.parts, p + 1);
  LinearSpec part = spec;
  part.parts = 1;
  part.weight.data = w.row(begin);
  part.weight.rows = end - begin;
  if (w.scales != nullptr) part.weight.scales = w.scales + begin * w.groups_per_row();
  if (spec.bias != nullptr) part.bias = spec.bias + begin;
  return part;
}

uint16_t Bf16(float value) {  // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace

// Fills scratch per Layout(path, spec) and says what to hand XNNPACK. With repack_kernel false
// (the dry run), the kernel stays the file's bytes: XNNPACK does not read it before asking for
// the packed memory, and for small layers that it does pack, the values do not matter. whole_n:
// the output rows of the whole layer (spec may be one part of it; the f16 output buffer is
// the whole layer's).
Operands PrepareOperands(LinearPath path, const LinearSpec& spec, int64_t whole_n, uint8_t* scratch,
                         bool repack_kernel) {
  const PathTraits& t = Traits(path);
  const WeightView& w = spec.weight;
  const int64_t n = w.rows;
  const ScratchLayout l = Layout(path, spec);
  Operands o;
  o.k = static_cast<size_t>(w.cols);
  o.n = static_cast<size_t>(n);
  // Quantized and f16 activations live in the context's contiguous buffers.
  o.input_stride =
      t.activations == Activations::kF32 ? static_cast<size_t>(spec.input_stride) : o.k;
  o.output_stride = t.activations == Activations::kF16 ? static_cast<size_t>(whole_n)
                                                       : static_cast<size_t>(spec.output_stride);
  o.block_size = static_cast<size_t>(w.group_size);
  o.zero_point = t.repack == Repack::kToUnsigned ? 8 : 0;
  o.kernel = w.data;
  o.bias = t.bias_by == BiasBy::kRunLinear ? nullptr : spec.bias;
  switch (t.small) {
    case Small::kNothing:
      break;
    case Small::kF16Bias:
      if (spec.bias) {
        uint16_t* bias16 = reinterpret_cast<uint16_t*>(scratch);
        for (int64_t i = 0; i < n; ++i) bias16[i] = Fp32ToFp16(spec.bias[i]);
        o.bias = bias16;
      }
      break;
    case Small::kRowScales: {
      // A zero scale (an all-zero row) becomes 1: the row's weights are 0 either way, and
      // XNNPACK never sees a degenerate scale.
      float* scales = reinterpret_cast<float*>(scratch);
      for (int64_t i = 0; i < n; ++i) scales[i] = w.scales[i] > 0.0f ? w.scales[i] : 1.0f;
      o.scales = scales;
      break;
    }
    case Small::kBlockScales: {
      const int64_t count = n * w.groups_per_row();
      uint16_t* scales = reinterpret_cast<uint16_t*>(scratch);
      for (int64_t i = 0; i < count; ++i) scales[i] = Bf16(w.scales[i] > 0.0f ? w.scales[i] : 1.0f);
      o.scales = scales;
      break;
    }
  }
  if (l.kernel_bytes && repack_kernel) {  // see Repack
    uint8_t* kernel = scratch + l.small_bytes;
    const size_t row_bytes = w.row_bytes();
    const uint8_t flip = t.repack == Repack::kToUnsigned ? 0x88u : 0x00u;
    for (int64_t r = 0; r < n; ++r) {
      uint8_t* row = kernel + r * row_bytes;
      std::memcpy(row, w.row(r), row_bytes);
      if (w.cols % 2) row[row_bytes - 1] &= 0x0F;
      for (size_t i = 0; i < row_bytes; ++i) row[i] ^= flip;
    }
    o.kernel = kernel;
  }
  return o;
}

namespace {

xnn_status CreateOperator(LinearPath path, const Operands& o, xnn_operator_t* op) {
  if (g_unsupported_for_testing.load(std::memory_order_relaxed) & PathBit(path)) {
    return xnn_status_unsupported_hardware;
  }
  const PathTraits& t = Traits(path);
  return t.create != nullptr ? t.create(o, op) : xnn_status_invalid_parameter;
}

// Dry run of one path: true with the arena bytes when this CPU supports it. With a cache (in
// WeightsCache::Mode::kMeasure) the packed weights are asked of it instead of the allocator:
// *bytes is then the operator's alone and cache->measured_bytes() the packed weights'.
bool Measure(LinearPath path, const LinearSpec& spec, int64_t whole_n, size_t* bytes,
             WeightsCache* cache = nullptr) {
  const ScratchLayout l = Layout(path, spec);
  // Real scales / f16 bias (small: one value per row or block), from the heap: this runs in
  // RequiredArenaBytes, before there is an arena.
  uint8_t* small = nullptr;
  if (l.small_bytes) {
    small = static_cast<uint8_t*>(std::malloc(l.small_bytes));
    if (small == nullptr) return false;
  }
  Operands o = PrepareOperands(path, spec, whole_n, small, /*repack_kernel=*/false);
  if (cache != nullptr) o.cache = cache->provider();
  xnn_operator_t op = nullptr;
  bool supported = false;
  {
    MeasureScope scope;
    const xnn_status status = CreateOperator(path, o, &op);
    if (status == xnn_status_success) {
      supported = cache == nullptr;  // a cache refuses every packing: success would mean none
      xnn_delete_operator(op);
    } else if (status == xnn_status_out_of_memory &&
               (cache != nullptr ? cache->measured_bytes() > 0 : scope.refused())) {
      supported = true;  // Everything was checked; only the packed weights' memory was refused.
    }
    *bytes = scope.bytes();
  }
  std::free(small);
  return supported;
}

// The status of an XNNPACK operator that could not be created at prepare.
StatusCode PrepareError(xnn_status s) {
  return s == xnn_status_out_of_memory ? StatusCode::kArenaTooSmall : StatusCode::kInternal;
}

Status NotInSharedWeights(const char* what, const WeightView& w) {
  return Status::Error(StatusCode::kFailedPrecondition,
                       "%s [%lld, %lld]: the shared weights hold no packed layer like this one "
                       "(they were packed for another model, for other kernels, or for sessions "
                       "of another thread count)",
                       what, static_cast<long long>(w.rows), static_cast<long long>(w.cols));
}

// The shared weights' key of a copied layer (SharedEntry::seed; XNNPACK's packed layers carry its
// hash of shape and micro-kernel): FNV-1a of the weight's dtype, shape and block size.
uint32_t CopySeed(const WeightView& w) {
  uint32_t h = 2166136261u;
  const int64_t fields[4] = {static_cast<int64_t>(w.dtype), w.rows, w.cols, w.group_size};
  for (int64_t f : fields) {
    for (int b = 0; b < 8; ++b) h = (h ^ static_cast<uint8_t>(f >> (8 * b))) * 16777619u;
  }
  return h;
}

// WeightsCache::Fill for a layer's copy (data: its WeightView): its rows as they are, or packed for
// the sign loops.
void CopyRows(void* at, const void* data) {
  const auto& w = *static_cast<const WeightView*>(data);
  std::memcpy(at, w.data, w.row_bytes() * static_cast<size_t>(w.rows));
}
void PackPanels(void* at, const void* data) {
  vec::PackSignPanels(*static_cast<const WeightView*>(data), at);
}

// A layer without an operator: its weight's bytes copied into the arena (or the shared weights),
// where the choice planned them (LinearSpec::copy_weight).
Status CopyWeight(const LinearSpec& spec, const LinearChoice& choice, WeightsCache* cache,
                  int32_t first_packed, LinearKernel* out) {
  if (choice.copy_bytes == 0) return Status::Ok();
  // int8 rows the sign loops take are packed for them (the same bytes); a weight holding a -128
  // keeps its rows for the other loops. Both follow from the weight and the CPU alone, so a
  // session reusing shared weights finds what the packing session wrote.
  const bool panels = vec::SignPanelsBeatXnnpack(spec.weight) && vec::SignPanelsExact(spec.weight);
  const void* copy = nullptr;
  if (cache != nullptr) {
    copy = cache->Copy(first_packed, &spec.weight, choice.copy_bytes, CopySeed(spec.weight),
                       panels ? PackPanels : CopyRows);
    if (copy == nullptr && cache->mismatch())
      return NotInSharedWeights("vectorized loops", spec.weight);
  } else if (void* at = AllocateInArenaScope(choice.copy_bytes, kBlockAlignment)) {
    (panels ? PackPanels : CopyRows)(at, &spec.weight);
    copy = at;
  }
  if (copy == nullptr) {
    return Status::Error(StatusCode::kArenaTooSmall,
                         "vectorized loops [%lld, %lld]: no room for the weight's copy (the dry "
                         "run planned it)",
                         static_cast<long long>(spec.weight.rows),
                         static_cast<long long>(spec.weight.cols));
  }
  if (panels) {
    out->panel_weight = vec::SignPanelsView(spec.weight, copy);
    return Status::Ok();
  }
  out->weight_copy = copy;
  return Status::Ok();
}

}  // namespace

const char* LinearPathName(LinearPath path) {
  return static_cast<int>(path) < kLinearPathCount ? Traits(path).name : "?";
}

LinearPath PreferredPath(const WeightView& weight) {
  LinearPath chain[4];
  return Chain(weight, chain) > 0 ? chain[0] : LinearPath::kReference;
}

int CutParts(int threads, int64_t n) {
  if (threads < 2 || threads > kMaxParts) return 1;
  return n >= threads * kPartAlign ? threads : 1;
}

int64_t PartBegin(int64_t n, int parts, int p) {
  if (p >= parts) return n;
  // The even cut, rounded to the nearest multiple of kPartAlign (CutParts keeps every part
  // non-empty: n >= parts * kPartAlign).
  const int64_t even = n * p / parts;
  return (even + kPartAlign / 2) / kPartAlign * kPartAlign;
}

void SetUnsupportedPathsForTesting(uint32_t mask) { g_unsupported_for_testing.store(mask); }
void SetPreferLoopsForTesting(bool prefer) { g_prefer_loops.store(prefer); }
uint32_t UnsupportedPathsForTesting() { return g_unsupported_for_testing.load(); }

Status LinearPlanner::Choose(const LinearSpec& spec, LinearChoice* out) {
  const WeightView& w = spec.weight;
  if (w.rows < 1 || w.cols < 1 || spec.max_rows < 1 || spec.input_stride < w.cols ||
      spec.output_stride < w.rows) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "linear layer [%lld, %lld]: invalid shape or strides",
                         static_cast<long long>(w.rows), static_cast<long long>(w.cols));
  }
  if (spec.parts < 1 || spec.parts > kMaxParts ||
      (spec.parts > 1 && w.rows < spec.parts * kPartAlign)) {
    return Status::Error(
        StatusCode::kInvalidArgument, "linear layer [%lld, %lld]: cannot cut into %d parts",
        static_cast<long long>(w.rows), static_cast<long long>(w.cols), spec.parts);
  }
  for (int i = 0; i < count_; ++i) {
    const Entry& e = entries_[i];
    if (e.dtype == w.dtype && e.n == w.rows && e.k == w.cols && e.group == w.group_size &&
        e.bias == (spec.bias != nullptr) && e.parts == spec.parts && e.copy == spec.copy_weight &&
        e.prefer_loops == spec.prefer_loops) {
      *out = e.choice;
      return Status::Ok();
    }
  }
  TERN_RETURN_IF_ERROR(Initialize());
  LinearChoice choice;
  LinearPath chain[4];
  int length = Chain(w, chain);
  // A session's int8 / int4 per-row layers on tern's loops where they beat XNNPACK's GEMM on
  // this CPU: the qd8 path's math and bits, so only where that path would run (not where a test
  // forced it off).
  if (spec.prefer_loops && g_prefer_loops.load() && length > 0 &&
      (chain[0] == LinearPath::kQd8Qc8w || chain[0] == LinearPath::kQd8Qc4w) &&
      (g_unsupported_for_testing.load() & PathBit(chain[0])) == 0 &&
      vec::SignPanelsBeatXnnpack(w)) {
    length = 0;
  }
  for (int i = 0; i < length; ++i) {
    // A path is taken when every part of the layer can run on it.
    LinearChoice c;
    c.path = chain[i];
    c.parts = spec.parts;
    c.shareable = true;
    bool supported = true;
    for (int p = 0; p < spec.parts && supported; ++p) {
      const LinearSpec part = PartSpec(spec, p);
      size_t bytes = 0;
      supported = Measure(chain[i], part, w.rows, &bytes);
      if (!supported) break;
      c.xnn_bytes += bytes;
      const size_t scratch = Layout(chain[i], part).total();
      if (scratch > c.scratch_bytes) c.scratch_bytes = scratch;
      WeightsCache measure;
      measure.Start(WeightsCache::Mode::kMeasure, nullptr);
      size_t operator_bytes = 0;
      if (c.shareable && Measure(chain[i], part, w.rows, &operator_bytes, &measure)) {
        c.operator_bytes += operator_bytes;
        c.packed_bytes += Align64(measure.measured_bytes());
      } else {
        c.shareable = false;
      }
    }
    if (supported) {
      if (!c.shareable) c.operator_bytes = c.packed_bytes = 0;
      choice = c;
      break;
    }
  }
  if (choice.path == LinearPath::kReference && spec.copy_weight) {
    // The copy is the layer's packed weight: in the arena, or one entry of shared weights.
    // (Packed for the sign loops where they take the weight: the rows' sums follow.)
    choice.copy_bytes = vec::SignPanelsBeatXnnpack(w) ? vec::SignPanelsBytes(w)
                                                      : w.row_bytes() * static_cast<size_t>(w.rows);
    choice.xnn_bytes = Footprint(choice.copy_bytes, kBlockAlignment);
    choice.shareable = true;
    choice.operator_bytes = 0;
    choice.packed_bytes = Align64(choice.copy_bytes);
  }
  if (count_ < kMaxEntries) {
    entries_[count_++] = Entry{w.dtype,
                               w.rows,
                               w.cols,
                               w.group_size,
                               spec.bias != nullptr,
                               spec.parts,
                               spec.copy_weight,
                               spec.prefer_loops,
                               choice};
  }
  *out = choice;
  return Status::Ok();
}

void ContextNeeds::Add(const LinearSpec& spec, LinearPath path) {
  const size_t rows = static_cast<size_t>(spec.max_rows);
  const size_t k = static_cast<size_t>(spec.weight.cols);
  const size_t n = static_cast<size_t>(spec.weight.rows);
  auto grow = [](size_t* have, size_t want) { *have = want > *have ? want : *have; };
  const Activations activations = Traits(path).activations;
  if (activations == Activations::kQd8) {
    qd8 = true;
    grow(&qd8_input_bytes, Qd8InputBytes(rows, k));
    grow(&qd8_params_bytes, Qd8ParamsBytes(rows));
  } else if (activations == Activations::kF16) {
    f16 = true;
    grow(&f16_input_bytes, F16Bytes(rows, k));
    grow(&f16_output_bytes, F16Bytes(rows, n));
  }
  if (path == LinearPath::kReference && spec.max_rows > 0) {
    grow(&qd8_rows_bytes, vec::LinearQd8ScratchBytes(spec.weight, spec.max_rows));
  }
}

namespace {

xnn_status CreateContextOperators(const ContextNeeds& needs, Context* c) {
  xnn_status s = xnn_status_success;
  if (needs.qd8) {
    s = xnn_create_convert_nc_f32_qd8(0, &c->to_qd8);
    if (s != xnn_status_success) return s;
  }
  if (needs.f16) {
    s = xnn_create_unary_elementwise_nc(xnn_unary_convert, xnn_datatype_fp32, xnn_datatype_fp16,
                                        nullptr, nullptr, nullptr, 0, &c->to_f16);
    if (s != xnn_status_success) return s;
    s = xnn_create_unary_elementwise_nc(xnn_unary_convert, xnn_datatype_fp16, xnn_datatype_fp32,
                                        nullptr, nullptr, nullptr, 0, &c->from_f16);
  }
  return s;
}

}  // namespace

Status MeasureContext(const ContextNeeds& needs, size_t* xnn_bytes) {
  *xnn_bytes = 0;
  if (!needs.qd8 && !needs.f16) return Status::Ok();
  TERN_RETURN_IF_ERROR(Initialize());
  Context c;
  xnn_status s;
  {
    MeasureScope scope(SIZE_MAX);
    s = CreateContextOperators(needs, &c);
    *xnn_bytes = scope.bytes();
    xnn_delete_operator(c.to_qd8);
    xnn_delete_operator(c.to_f16);
    xnn_delete_operator(c.from_f16);
  }
  if (s != xnn_status_success) {
    return Status::Error(StatusCode::kNotSupported, "XNNPACK conversion operators: status %d",
                         static_cast<int>(s));
  }
  return Status::Ok();
}

Status CreateContext(const ContextNeeds& needs, Context* c) {
  const xnn_status s = CreateContextOperators(needs, c);
  if (s != xnn_status_success) {
    return Status::Error(PrepareError(s), "XNNPACK conversion operators: status %d",
                         static_cast<int>(s));
  }
  return Status::Ok();
}

Status CreateLinear(const LinearSpec& spec, const LinearChoice& choice, Context* context,
                    void* scratch, LinearKernel* out, WeightsCache* cache, int32_t first_packed) {
  *out = LinearKernel();
  out->context = context;
  out->path = choice.path;
  out->n = spec.weight.rows;
  out->k = spec.weight.cols;
  out->dtype = spec.weight.dtype;
  out->group_size = spec.weight.group_size;
  out->input_stride = spec.input_stride;
  out->output_stride = spec.output_stride;
  out->bias_after_run = Traits(choice.path).bias_by == BiasBy::kRunLinear ? spec.bias : nullptr;
  // A call that is one task per thread (a cut operator's parts; the loops, which cut a layer
  // with a pool on every call: RunLinearLoops, RunQd8LoopsGroup) takes the lower threshold. With
  // the default one SmolLM-135M's 576 x 576 int4 attention output on the loops ran on the
  // calling thread in 15.5 us where two threads took 11.2 (AMD EPYC).
  const int threads = context != nullptr && context->pool != nullptr
                          ? static_cast<int>(pthreadpool_get_threads_count(context->pool))
                          : 1;
  const bool loops = choice.path == LinearPath::kReference;
  if (loops ? CutParts(threads, spec.weight.rows) > 1 : choice.parts > 1) {
    out->own = RowClassGovernors(PoolGovernor::kMinCutPooledNs);
    out->own_group = RowClassGovernors(PoolGovernor::kMinCutPooledNs);
  }
  if (loops) return CopyWeight(spec, choice, cache, first_packed, out);
  if (choice.parts != spec.parts) {
    return Status::Error(StatusCode::kInternal, "linear layer: %d parts planned, %d asked for",
                         choice.parts, spec.parts);
  }
  // Reusing shared packed weights, XNNPACK finds them before it would read the kernel.
  const bool reuse = cache != nullptr && cache->mode() == WeightsCache::Mode::kReuse;
  out->parts = choice.parts;
  for (int p = 0; p < choice.parts; ++p) {
    const LinearSpec part = PartSpec(spec, p);
    // Each part's operator packs its weights at creation, so the next part reuses the scratch.
    Operands o = PrepareOperands(choice.path, part, spec.weight.rows,
                                 static_cast<uint8_t*>(scratch), /*repack_kernel=*/!reuse);
    if (cache != nullptr) {
      cache->Expect(first_packed + p);
      o.cache = cache->provider();
    }
    xnn_operator_t op = nullptr;
    const xnn_status s = CreateOperator(choice.path, o, &op);
    if (s != xnn_status_success && cache != nullptr && cache->mismatch()) {
      return NotInSharedWeights(LinearPathName(choice.path), spec.weight);
    }
    if (s != xnn_status_success) {
      return Status::Error(
          PrepareError(s),
          "%s [%lld, %lld]: XNNPACK status %d at prepare (the dry run accepted it)",
          LinearPathName(choice.path), static_cast<long long>(out->n),
          static_cast<long long>(out->k), static_cast<int>(s));
    }
    out->part_ops[p] = op;
    out->begin[p] = PartBegin(spec.weight.rows, choice.parts, p);
  }
  out->begin[choice.parts] = spec.weight.rows;
  out->op = out->part_ops[0];
  return Status::Ok();
}

}  // namespace tern::xnn

// Linear layers y = x W^T + b through XNNPACK's fully-connected operators (the same math as
// ref::Linear; see runtime/kernels/reference/linear.h).
//
// Lifecycle: LinearPlanner::Choose (dry run: path + exact arena bytes) -> CreateLinear inside an
// ArenaScope at prepare (packs the weights into the arena) -> RunLinear per call (reshape only
// when the row count changes, which allocates nothing; setup; run; linear_run.cc), or RunLinears
// for layers that read the same input.
//
// Paths per weight dtype, best first; Choose takes the first one this CPU supports:
//   f32  fully_connected_nc_f32
//   f16  fully_connected_nc_f16 (activations converted f32 <-> f16 around it),
//        fully_connected_nc_f32_f16 (f32 compute; XNNPACK widens the f16 weights when packing)
//   i8   convert_nc_f32_qd8 + fully_connected_nc_qd8_f32_qc8w (activations quantized per row),
//        fully_connected_nc_f32_qc8w
//   i4   per row: convert_nc_f32_qd8 + fully_connected_nc_qd8_f32_qc4w, fully_connected_nc_f32_qc4w
//        per block: convert_nc_f32_qd8 + fully_connected_nc_qd8_f32_qb4w (block a multiple of
//        32 dividing the row; block scales rounded to bf16, as XNNPACK takes them)
// and tern's own loops when none applies (ops::Linear: vectorized/linear_qd8.h for int8 / int4,
// vectorized/linear.h for floats). A path whose XNNPACK kernel computes wrong results on the CPU
// (kernel_check.h) is left out, and with it a qd8 path's f32-activation sibling: the integer
// loops then compute the qd8 path's math.
//
// With a thread pool of 2 to kMaxParts threads, a layer's output rows (n) are cut into one
// operator per thread (LinearSpec::parts, CutParts), each run as one pool task on its own thread
// (below kTiledPartsRows rows of x; from there each part is tiled over the pool in turn),
// instead of one operator whose tiles XNNPACK spreads over the pool. XNNPACK's tiling makes about
// five tiles per thread and hands them out by work stealing: at 16 rows on an AVX-512 VNNI VM its
// pooled qd8 GEMM was 0.97-1.08x one thread on the paper-base layers, the cut 1.15-1.64x
// (`tern bench --linear --split`, bench/results/2026-12-05-split-threads.md). Each part packs
// only its rows, so the packed bytes stay those of one operator. Every output is computed by the
// same micro-kernel from the same inputs either way: the cut gives the whole layer's bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/kernels/xnnpack/pool_governor.h"
#include "runtime/kernels/xnnpack/row_loops.h"
#include "runtime/kernels/xnnpack/weights_cache.h"

struct xnn_operator;
struct pthreadpool;

namespace tern::xnn {

enum class LinearPath : uint8_t {
  kReference = 0,
  kF32 = 1,
  kF16 = 2,
  kF16AsF32 = 3,
  kQd8Qc8w = 4,
  kF32Qc8w = 5,
  kQd8Qc4w = 6,
  kF32Qc4w = 7,
  kQd8Qb4w = 8,
};
inline constexpr int kLinearPathCount = 9;

// The best path for a weight (kReference when XNNPACK has none for its dtype / block size).
LinearPath PreferredPath(const WeightView& weight);
// "fully_connected_nc_f32", ...; "reference" for kReference.
const char* LinearPathName(LinearPath path);

inline constexpr uint32_t PathBit(LinearPath path) { return 1u << static_cast<uint32_t>(path); }

// For tests: paths whose bit is set behave as if XNNPACK returned
// xnn_status_unsupported_hardware (as the f16 operators do on ARMv8.0 and armv7), so fallbacks
// run on any machine. Process-wide; set it before RequiredArenaBytes/Prepare.
void SetUnsupportedPathsForTesting(uint32_t mask);
uint32_t UnsupportedPathsForTesting();
// For tests of XNNPACK's operators in sessions (cut layers, shared packed weights): false makes
// sessions ignore LinearSpec::prefer_loops. Process-wide; default true.
void SetPreferLoopsForTesting(bool prefer);

// Most operators one layer is cut into (one per thread). With more threads than this a layer stays
// one operator and XNNPACK tiles it over the pool.
inline constexpr int kMaxParts = 8;
// Output rows of a part start at multiples of this: a multiple of the nr of most of XNNPACK's
// GEMMs (8, 16, 32), so a part rarely pads a tile the whole operator would not (AVX512-FP16's
// f16 GEMM has nr 64). The bits do not depend on it: each output is computed alone. They do
// depend on XNNPACK choosing the same micro-kernel for every part as for the whole layer, which
// XNNPACK 2024-11 does for parts of 32 rows or more (its alternative kernel is taken only when
// nr exceeds the output channels); linear_test checks cut == whole on every path.
inline constexpr int64_t kPartAlign = 32;
// Rows of x from which a cut layer's parts run one after another, each tiled by XNNPACK over the
// pool, instead of one part per thread. With many rows a part's tiles are many, and a layer cut
// into one task per thread scaled worse than XNNPACK's tiling on the AMX VM: paper-base shapes
// at 512 rows and 2 threads 1.05-1.95x one thread as tasks, 1.50-2.09x tiled part by part
// (`tern bench --linear --split`); at 64 rows the tasks won (1.47-1.78x against 1.17-1.59x).
// An encoder pass of 16 x 128 tokens at 2 threads: 60-69 ms against 71-93 as tasks.
inline constexpr int64_t kTiledPartsRows = 256;
// Most layers one RunLinears call runs (Q, K and V).
inline constexpr int kMaxGroup = 3;

// How many operators a layer of n output rows is cut into for a session of `threads` threads:
// threads when 2 <= threads <= kMaxParts and every part keeps at least kPartAlign rows, else 1.
int CutParts(int threads, int64_t n);
// What every layer large enough is cut into with `threads` threads (1: none is cut).
inline int LargeLayerParts(int threads) { return CutParts(threads, INT64_MAX / 2); }
// The first output row of part p of `parts` (p == parts: n).
int64_t PartBegin(int64_t n, int parts, int p);

// One linear layer as prepare sees it.
struct LinearSpec {
  WeightView weight;            // [n, k]
  const float* bias = nullptr;  // [n] or null
  int64_t max_rows = 1;         // most rows (m) of any call
  int64_t input_stride = 0;     // row stride of x in the calls (elements)
  int64_t output_stride = 0;    // row stride of y in the calls
  int32_t parts = 1;            // operators the output rows are cut into (CutParts)
  // A layer no operator takes (kReference: tern's own loops) gets a copy of its weight's bytes
  // in the arena, as an operator packs its own: a session's arena is on huge pages where the
  // caller can give it them (the tools do), a file mapping is not, and streaming int4 rows from
  // 4 KiB pages took a TLB walk per page (one row of x through SmolLM-shaped layers: 8.4-10
  // GB/s from 4 KiB pages, 12.2-12.7 from 2 MiB ones). The model's bytes are then given back
  // like packed ones (Model::Consumed). Sessions set it; kernel tests that run loops on their
  // own weights do not.
  bool copy_weight = false;
  // Run the layer on tern's loops instead of XNNPACK where they are faster on this CPU
  // (vec::SignPanelsBeatXnnpack: int8 / int4 per row on AVX2-only CPUs), with the same bits.
  // Sessions set it; kernel tests of XNNPACK's paths do not.
  bool prefer_loops = false;
};

// Bytes are those of all the layer's parts together.
struct LinearChoice {
  LinearPath path = LinearPath::kReference;
  int32_t parts = 1;         // operators (the spec's parts; 1 for kReference)
  size_t xnn_bytes = 0;      // arena bytes of its XNNPACK operators (structs + packed weights)
  size_t scratch_bytes = 0;  // prepare-time scratch CreateLinear needs (repacked data; one part's)
  // With shared packed weights (weights_cache.h): whether the operators take them from a
  // cache, the arena bytes of the operators alone, and the packed bytes in the shared region
  // (each part's rounded up to 64, as the region places them; one region entry per part).
  bool shareable = false;
  size_t operator_bytes = 0;
  size_t packed_bytes = 0;
  size_t copy_bytes = 0;  // kReference with spec.copy_weight: the weight's bytes, copied
};

// Chooses each layer's path and measures its arena bytes by a dry run (allocator.h's
// MeasureScope: the operator is created up to the point where XNNPACK asks for the packed
// weights' memory, which is recorded and refused). Memoized by dtype, shape and bias, so a
// model measures each distinct layer shape once. Deterministic: the same model, limits and CPU
// give the same choices and bytes, in RequiredArenaBytes and in Prepare.
class LinearPlanner {
 public:
  Status Choose(const LinearSpec& spec, LinearChoice* out);

 private:
  struct Entry {
    DType dtype;
    int64_t n, k, group;
    bool bias;
    int32_t parts;
    bool copy;
    bool prefer_loops;
    LinearChoice choice;
  };
  static constexpr int kMaxEntries = 32;
  Entry entries_[kMaxEntries];
  int count_ = 0;
};

// What the per-session conversion operators and activation scratch must hold, accumulated over
// the chosen paths.
struct ContextNeeds {
  bool qd8 = false;
  bool f16 = false;
  size_t qd8_input_bytes = 0;   // int8 activations: max rows * k (+ XNN_EXTRA_BYTES)
  size_t qd8_params_bytes = 0;  // per-row quantization params (+ XNNPACK's extra entries)
  size_t f16_input_bytes = 0;   // f16 activations in: max rows * k
  size_t f16_output_bytes = 0;  // f16 activations out: max rows * n
  // Rows of x quantized once for the integer loops of layers without an operator that take
  // them (vec::LinearQd8ScratchBytes).
  size_t qd8_rows_bytes = 0;
  void Add(const LinearSpec& spec, LinearPath path);
};

// Per session: thread pool, conversion operators, activation scratch (all in the arena except
// the pool).
struct Context {
  pthreadpool* pool = nullptr;
  xnn_operator* to_qd8 = nullptr;    // convert_nc_f32_qd8
  xnn_operator* to_f16 = nullptr;    // unary convert f32 -> f16
  xnn_operator* from_f16 = nullptr;  // unary convert f16 -> f32
  int8_t* qd8_input = nullptr;
  size_t qd8_input_bytes = 0;
  void* qd8_params = nullptr;  // xnn_quantization_params[]
  size_t qd8_params_bytes = 0;
  uint16_t* f16_input = nullptr;
  size_t f16_input_bytes = 0;
  uint16_t* f16_output = nullptr;
  size_t f16_output_bytes = 0;
  void* qd8_rows = nullptr;  // vec::QuantizedRows' scratch (64-byte aligned)
  size_t qd8_rows_bytes = 0;
  // What each conversion operator was last reshaped for (rows, channels, in/out stride, and
  // whether for the pool: XNNPACK tiles it for the thread count it is reshaped with).
  int64_t qd8_shape[5] = {-1, -1, -1, -1, -1};
  int64_t to_f16_shape[5] = {-1, -1, -1, -1, -1};
  int64_t from_f16_shape[5] = {-1, -1, -1, -1, -1};
  // What probes of the pool may cost, shared by every layer's governor and the attention's.
  PoolBudget pool_budget;
  // Whether each pass of the model (a decoder step...) may use the pool at all.
  PassGovernor passes;
  // The float loops between the layers on the pool (ops::LayerNorm, AddRows, Activate).
  RowLoops row_loops;
  // Calls XNNPACK could not run, answered by the reference kernel instead (0 when all is well).
  uint64_t fallback_calls = 0;
  // RunLinears calls that ran their layers as one group.
  uint64_t group_calls = 0;
};

// Arena bytes of the context's conversion operators (dry run).
Status MeasureContext(const ContextNeeds& needs, size_t* xnn_bytes);
// Creates the conversion operators (inside an ArenaScope). The caller has set the scratch
// pointers and sizes and the pool.
Status CreateContext(const ContextNeeds& needs, Context* context);

struct LinearKernel {
  xnn_operator* op = nullptr;  // the whole layer's operator, or its first part's
  // A layer cut into parts (parts > 1): part p's operator computes output rows
  // [begin[p], begin[p + 1]) and runs as one pool task (part_ops[0] == op).
  int32_t parts = 1;
  xnn_operator* part_ops[kMaxParts] = {};
  int64_t begin[kMaxParts + 1] = {};
  Context* context = nullptr;
  LinearPath path = LinearPath::kReference;
  int64_t n = 0, k = 0;
  DType dtype = DType::kF32;  // the weight's, and its block size: layers without an operator
  int64_t group_size = 0;     // of one shape share governors only if their loops are the same
  int64_t input_stride = 0, output_stride = 0;
  int64_t reshaped_rows = -1;
  bool reshaped_tiled = false;  // parts reshaped for the pool (TiledParts)
  // Without an operator: the arena's copy of the weight's bytes (LinearSpec::copy_weight), which
  // the session's WeightView then points at; null: the loops read the model's bytes.
  const void* weight_copy = nullptr;
  // Or, for int8 weights the AVX2 sign loops take (vec::SignPanelsBeatXnnpack), the arena's copy
  // packed for them (vec::SignPanelsView; data null: none): their calls read it, and the
  // session's view of the weight keeps the model's rows (a shortlist reads them), as for a layer
  // with an operator.
  WeightView panel_weight;
  const float* bias_after_run = nullptr;  // bias RunLinear adds itself (paths noted in linear.cc)
  // With a thread pool: whether this layer uses it (pool_governor.h). Layers of one shape and
  // path share the first one's governors (`shared`, set by the session): they take the same
  // time, and a model's 48 layers of 512 x 512 then learn from every call of any of them, where
  // each alone probed too rarely to leave the calling thread within a translation.
  RowClassGovernors own;
  RowClassGovernors* shared = nullptr;
  RowClassGovernors& governors() { return shared != nullptr ? *shared : own; }
  // The same for the groups this layer leads in RunLinears (shared likewise).
  RowClassGovernors own_group;
  RowClassGovernors* shared_group = nullptr;
  RowClassGovernors& group_governors() {
    return shared_group != nullptr ? *shared_group : own_group;
  }
};

// Creates the operators of `choice` for `spec` inside an ArenaScope. scratch: choice.scratch_bytes
// bytes, 64-byte aligned, only needed during the call. cache (optional, for a shareable choice):
// where the packed weights go or come from (weights_cache.h); part p is packed layer
// first_packed + p of the region.
Status CreateLinear(const LinearSpec& spec, const LinearChoice& choice, Context* context,
                    void* scratch, LinearKernel* out, WeightsCache* cache = nullptr,
                    int32_t first_packed = 0);

// y[m, n] (row stride ldy) = x[m, k] (row stride ldx) W^T + b. Returns false when XNNPACK cannot
// run this call (strides or rows beyond what prepare planned, or an XNNPACK error; counted in
// context->fallback_calls): the caller then runs the reference kernel. Allocates nothing.
bool RunLinear(LinearKernel& kernel, const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy);

// A layer without an XNNPACK operator (kernel.op null): y = x W^T + b by the vectorizable loops
// `loops` (int8 / int4: vectorized/linear_qd8.h; float: vectorized/linear.h), which take any
// rows of W as a weight of their own. With the context's pool and a layer of at least
// kPartAlign rows per thread, its output rows are cut as CutParts / PartBegin cut a layer's
// operators, each part one pool task, when the layer's governor measures that faster: the
// encoder's and a batch's layers whose XNNPACK kernel is wrong on the CPU (kernel_check.h) run
// there. Each output is computed on its own, so the bits do not depend on the cut. Allocates
// nothing.
using LinearLoops = void (*)(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                             const float* bias, float* y, int64_t ldy);
void RunLinearLoops(LinearKernel& kernel, LinearLoops loops, const float* x, int64_t m, int64_t ldx,
                    const WeightView& w, const float* bias, float* y, int64_t ldy);
// RunLinearLoops with the integer loops (vec::LinearQd8), on rows of x quantized once into the
// context's qd8_rows where the loops take them (vec::LinearQd8TakesRows): with a pool, the rows
// are quantized by every thread, a share each, and then each part of the layer reads them all.
void RunQd8Loops(LinearKernel& kernel, const float* x, int64_t m, int64_t ldx, const WeightView& w,
                 const float* bias, float* y, int64_t ldy);
// 2 to kMaxGroup layers without an operator that read the same x (Q, K and V), each taking
// quantized rows: x quantized once for all of them (RunQd8Loops would quantize it per layer: a
// fifth of their time at 512 rows), with a pool in one fork-join for the rows and one for
// every layer's parts. Where they do not take quantized rows (too few rows, another CPU), with a
// pool: every layer's parts in one fork-join, each quantizing x itself (governed as a group).
// The bits of one RunQd8Loops per layer. Returns false, having run nothing, when a layer has an
// operator or other loops, the layers are of other sessions or widths, or (without quantized
// rows) there is no pool: the caller then runs each layer alone.
bool RunQd8LoopsGroup(LinearKernel* const* kernels, const WeightView* const* weights,
                      const float* const* biases, int count, const float* x, int64_t m, int64_t ldx,
                      float* const* ys, const int64_t* ldys);

// y_i = x W_i^T + b_i for 2 to kMaxGroup layers that read the same x (Q, K and V of one
// attention; a gated FFN's W1 and W3), with the bits of one RunLinear per layer: x is converted
// once (int8 rows on the qd8 paths), and with a pool every part of every layer is one task of a
// single fork-join, where one call per layer pays a conversion and a fork-join each. At 16 rows
// the paper-base model's 512 x 512 projections take about 8 us each on one thread, about what a
// fork-join costs, so alone they mostly stayed on the calling thread; three together pay for
// one. Returns false, having counted nothing, when the layers cannot run as one group (f16
// paths, layers of other sessions or input widths, strides other than planned, a whole layer
// beside a pool) or XNNPACK fails: the caller then runs each layer alone.
bool RunLinears(LinearKernel* const* kernels, int count, const float* x, int64_t m, int64_t ldx,
                float* const* ys, const int64_t* ldys);

}  // namespace tern::xnn

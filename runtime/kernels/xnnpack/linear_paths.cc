#include "runtime/kernels/xnnpack/linear_paths.h"

#include <cmath>

namespace tern::xnn {

namespace {

constexpr float kNoMin = -INFINITY;
constexpr float kNoMax = INFINITY;

const float* F32(const void* p) { return static_cast<const float*>(p); }

constexpr PathTraits kPaths[] = {
    {LinearPath::kReference, "reference", Activations::kNone, Small::kNothing, Repack::kNever,
     BiasBy::kOperator, nullptr, nullptr, nullptr, nullptr, nullptr},
    {LinearPath::kF32, "fully_connected_nc_f32", Activations::kF32, Small::kNothing, Repack::kNever,
     BiasBy::kOperator,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_f32(o.k, o.n, o.input_stride, o.output_stride,
                                                F32(o.kernel), F32(o.bias), kNoMin, kNoMax, 0,
                                                nullptr, o.cache, op);
     },
     xnn_reshape_fully_connected_nc_f32, xnn_setup_fully_connected_nc_f32, nullptr, nullptr},
    {LinearPath::kF16, "fully_connected_nc_f16", Activations::kF16, Small::kF16Bias, Repack::kNever,
     BiasBy::kOperator,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_f16(o.k, o.n, o.input_stride, o.output_stride, o.kernel,
                                                o.bias, kNoMin, kNoMax, 0, nullptr, o.cache, op);
     },
     xnn_reshape_fully_connected_nc_f16, nullptr, nullptr, xnn_setup_fully_connected_nc_f16},
    {LinearPath::kF16AsF32, "fully_connected_nc_f32_f16", Activations::kF32, Small::kF16Bias,
     Repack::kNever, BiasBy::kOperator,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_f32_f16(o.k, o.n, o.input_stride, o.output_stride,
                                                    o.kernel, o.bias, kNoMin, kNoMax, 0, nullptr,
                                                    o.cache, op);
     },
     xnn_reshape_fully_connected_nc_f32_f16, xnn_setup_fully_connected_nc_f32_f16, nullptr,
     nullptr},
    {LinearPath::kQd8Qc8w, "fully_connected_nc_qd8_f32_qc8w", Activations::kQd8, Small::kRowScales,
     Repack::kNever, BiasBy::kOperator,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_qd8_f32_qc8w(
           o.k, o.n, o.input_stride, o.output_stride, F32(o.scales),
           static_cast<const int8_t*>(o.kernel), F32(o.bias), kNoMin, kNoMax, 0, nullptr, o.cache,
           op);
     },
     xnn_reshape_fully_connected_nc_qd8_f32_qc8w, nullptr,
     xnn_setup_fully_connected_nc_qd8_f32_qc8w, nullptr},
    {LinearPath::kF32Qc8w, "fully_connected_nc_f32_qc8w", Activations::kF32, Small::kRowScales,
     Repack::kNever, BiasBy::kRunLinear,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_f32_qc8w(
           o.k, o.n, o.input_stride, o.output_stride, F32(o.scales),
           static_cast<const int8_t*>(o.kernel), F32(o.bias), kNoMin, kNoMax, 0, nullptr, o.cache,
           op);
     },
     xnn_reshape_fully_connected_nc_f32_qc8w, xnn_setup_fully_connected_nc_f32_qc8w, nullptr,
     nullptr},
    {LinearPath::kQd8Qc4w, "fully_connected_nc_qd8_f32_qc4w", Activations::kQd8, Small::kRowScales,
     Repack::kClearPadding, BiasBy::kOperator,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_qd8_f32_qc4w(
           o.k, o.n, o.input_stride, o.output_stride, o.zero_point, F32(o.scales), o.kernel,
           F32(o.bias), kNoMin, kNoMax, 0, nullptr, o.cache, op);
     },
     xnn_reshape_fully_connected_nc_qd8_f32_qc4w, nullptr,
     xnn_setup_fully_connected_nc_qd8_f32_qc4w, nullptr},
    {LinearPath::kF32Qc4w, "fully_connected_nc_f32_qc4w", Activations::kF32, Small::kRowScales,
     Repack::kToUnsigned, BiasBy::kRunLinear,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_f32_qc4w(
           o.k, o.n, o.input_stride, o.output_stride, o.zero_point, F32(o.scales),
           static_cast<const uint8_t*>(o.kernel), F32(o.bias), kNoMin, kNoMax, 0, nullptr, o.cache,
           op);
     },
     xnn_reshape_fully_connected_nc_f32_qc4w, xnn_setup_fully_connected_nc_f32_qc4w, nullptr,
     nullptr},
    {LinearPath::kQd8Qb4w, "fully_connected_nc_qd8_f32_qb4w", Activations::kQd8,
     Small::kBlockScales, Repack::kToUnsigned, BiasBy::kOperator,
     [](const Operands& o, xnn_operator_t* op) {
       return xnn_create_fully_connected_nc_qd8_f32_qb4w(
           o.k, o.n, o.input_stride, o.output_stride, o.block_size, o.zero_point,
           static_cast<const uint16_t*>(o.scales), o.kernel, F32(o.bias), kNoMin, kNoMax, 0,
           nullptr, o.cache, op);
     },
     xnn_reshape_fully_connected_nc_qd8_f32_qb4w, nullptr,
     xnn_setup_fully_connected_nc_qd8_f32_qb4w, nullptr},
};

constexpr bool RowsInPathOrder() {
  for (int i = 0; i < kLinearPathCount; ++i) {
    if (static_cast<int>(kPaths[i].path) != i) return false;
  }
  return true;
}
static_assert(sizeof kPaths / sizeof kPaths[0] == kLinearPathCount, "a row per LinearPath");
static_assert(RowsInPathOrder(), "kPaths[p] describes path p");

}  // namespace

const PathTraits& Traits(LinearPath path) { return kPaths[static_cast<size_t>(path)]; }

}  // namespace tern::xnn

// baracuda: the umbrella header. Includes every public header of the library:
//
//   core/status.hpp      Status, Code, Expected<T>: the one error type
//   core/dtype.hpp       DType: names, sizes, traits
//   core/numeric.hpp     host f16 / bf16 / fp8 types and conversions
//   core/dispatch.hpp    runtime DType -> compile-time type (host code)
//   core/tensor.hpp      TensorLayout, MatrixLayout, broadcasting, collapsed dims
//   core/sku.hpp         KernelSku, Backend, PrecisionInfo
//   core/preference.hpp  PlanPreference, MathMode
//   core/workspace.hpp   Workspace
//   core/runtime.hpp     DeviceCaps, Device, Stream, Event, DeviceBuffer, copies, library handles
//   core/plan.hpp        Plan<Descriptor, Args>: select / workspace_size / run / sku
//   ops/elementwise.hpp  UnaryPlan, UnaryBackwardPlan, BinaryPlan, BinaryBackwardPlan, CastPlan
//   ops/reduce.hpp       ReducePlan, ReduceBackwardPlan, ArgReducePlan, BoolReducePlan, CountReducePlan, TracePlan
//   ops/softmax.hpp      SoftmaxPlan, SoftmaxBackwardPlan
//   ops/scan.hpp         ScanPlan, ScanBackwardPlan (cumsum, cumprod, cummax, cummin, logcumsumexp)
//   ops/normalization.hpp LayerNormPlan, RMSNormPlan and their backward
//   ops/attention.hpp    SdpaPlan, FlashSdpaPlan and their backward (scaled dot-product attention)
//   ops/rope.hpp         RopePlan, RopeBackwardPlan (rotary position embedding)
//   ops/alibi.hpp        AlibiPlan, AlibiBackwardPlan, alibi_slopes()
//   ops/decode.hpp       SdpaDecodePlan (attention decode over a paged / contiguous KV cache)
//   ops/kv_cache.hpp     KvCacheAppendPlan
//
// None of them needs a CUDA header: a plain C++20 compiler can include this file.
#pragma once

#include "baracuda/core/status.hpp"
#include "baracuda/core/dtype.hpp"
#include "baracuda/core/numeric.hpp"
#include "baracuda/core/dispatch.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/preference.hpp"
#include "baracuda/core/workspace.hpp"
#include "baracuda/core/runtime.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "baracuda/ops/gemm.hpp"
#include "baracuda/ops/gemm_bin.hpp"
#include "baracuda/ops/gemm_grouped.hpp"
#include "baracuda/ops/gemm_int4.hpp"
#include "baracuda/ops/gemm_quant.hpp"
#include "baracuda/ops/gumbel_softmax.hpp"
#include "baracuda/ops/normalization.hpp"
#include "baracuda/ops/batch_norm.hpp"
#include "baracuda/ops/reduce.hpp"
#include "baracuda/ops/scan.hpp"
#include "baracuda/ops/softmax.hpp"
#include "baracuda/ops/sparsemax.hpp"
#include "baracuda/ops/attention.hpp"
#include "baracuda/ops/rope.hpp"
#include "baracuda/ops/alibi.hpp"
#include "baracuda/ops/decode.hpp"
#include "baracuda/ops/kv_cache.hpp"

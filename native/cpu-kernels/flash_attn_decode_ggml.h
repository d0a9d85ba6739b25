// ggml's side of flash_attn_decode.h: ggml_compute_forward_flash_attn_ext_f16 (ops.cpp) calls
// hearth_flash_attn_decode first on every thread of the op (hearth-kernels.ts makes that edit). It takes the op when
// the query rows per sequence are fewer than ggml's tile (generating rows; prompts keep ggml's tiled kernel),
// Q is fp32, K and V fp16 with one head size, the mask fp16 and shared by the heads, and there is no ALiBi, logit
// soft-capping or attention sinks; and returns false (ggml computes the op) otherwise.
#pragma once

#include "flash_attn_decode.h"

#if defined(HEARTH_FLASH_ATTN_DECODE)
static bool hearth_flash_attn_decode(const ggml_compute_params * params, ggml_tensor * dst) {
    const ggml_tensor * q = dst->src[0];
    const ggml_tensor * k = dst->src[1];
    const ggml_tensor * v = dst->src[2];
    const ggml_tensor * mask = dst->src[3];
    float scale = 1.0f, maxBias = 0.0f, softcap = 0.0f;
    memcpy(&scale, (const float *) dst->op_params + 0, sizeof(float));
    memcpy(&maxBias, (const float *) dst->op_params + 1, sizeof(float));
    memcpy(&softcap, (const float *) dst->op_params + 2, sizeof(float));
    if (params->use_ref || dst->src[4] != nullptr || maxBias != 0.0f || softcap != 0.0f) return false;
    if (q->type != GGML_TYPE_F32 || k->type != GGML_TYPE_F16 || v->type != GGML_TYPE_F16 || dst->type != GGML_TYPE_F32) return false;
    if (q->ne[1] >= ggml_fa_tile_config::Q) return false;
    if (k->ne[0] != v->ne[0] || q->ne[0] != k->ne[0] || dst->ne[0] != v->ne[0]) return false;
    if (k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] || k->ne[3] != v->ne[3]) return false;
    if (k->ne[2] == 0 || k->ne[3] == 0 || q->ne[2] % k->ne[2] != 0 || q->ne[3] % k->ne[3] != 0) return false;
    if (dst->ne[1] != q->ne[2] || dst->ne[2] != q->ne[1] || dst->ne[3] != q->ne[3]) return false;
    if (q->nb[0] != sizeof(float) || k->nb[0] != sizeof(ggml_fp16_t) || v->nb[0] != sizeof(ggml_fp16_t) || dst->nb[0] != sizeof(float)) return false;
    if (mask != nullptr && (mask->type != GGML_TYPE_F16 || mask->ne[2] != 1 || mask->ne[0] < k->ne[1] || mask->ne[1] < q->ne[1])) return false;

    hearth_fa::Problem p;
    p.headSize = k->ne[0];
    p.cells = k->ne[1];
    p.rows = q->ne[1];
    p.heads = q->ne[2];
    p.kvHeads = k->ne[2];
    p.seqs = q->ne[3];
    p.kvSeqs = k->ne[3];
    p.q = (const char *) q->data;
    p.qRow = q->nb[1];
    p.qHead = q->nb[2];
    p.qSeq = q->nb[3];
    p.k = (const char *) k->data;
    p.kCell = k->nb[1];
    p.kHead = k->nb[2];
    p.kSeq = k->nb[3];
    p.v = (const char *) v->data;
    p.vCell = v->nb[1];
    p.vHead = v->nb[2];
    p.vSeq = v->nb[3];
    p.mask = mask ? (const char *) mask->data : nullptr;
    p.maskRow = mask ? mask->nb[1] : 0;
    p.maskSeq = mask ? mask->nb[3] : 0;
    p.maskSeqs = mask ? mask->ne[3] : 1;
    p.scale = scale;
    p.dst = (char *) dst->data;
    p.dstRow = dst->nb[1];
    return hearth_fa::run(p, params->ith, params->nth);
}
#endif

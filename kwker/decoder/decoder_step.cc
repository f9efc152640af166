// One decode step of a Llama-family decoder, every layer in one native call (kwker_decoder.h).
//
// Compiled as the generic library (shapes read from kwd_model) and, at run time, as decoder
// packages with -DKWD_SPEC and the shapes as macros: the same template then sees compile-time
// constants, so loops over head_dim and hidden unroll and vectorise for the engine's flags.
// Results do not depend on which: every reduction runs in 16 lane accumulators combined by a
// fixed tree, multiplies and adds stay separate (-ffp-contract=off), and nothing is reassociated.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kwker/kwker.h"
#include "kwker_decoder.h"

namespace {

constexpr int kLanes = 16;

struct RuntimeDims {
  static constexpr int kHeadDim = 0;  // 0: read head_dim at run time
  int layers, hidden, heads, kv_heads, head_dim, inter, vocab, mode, group, lm_mode, lm_group;
  explicit RuntimeDims(const kwd_model &m)
      : layers(m.layers), hidden(m.hidden), heads(m.heads), kv_heads(m.kv_heads),
        head_dim(m.head_dim), inter(m.inter), vocab(m.vocab), mode(m.mode), group(m.group),
        lm_mode(m.lm_mode), lm_group(m.lm_group) {}
};

#ifdef KWD_SPEC
struct SpecDims {
  static constexpr int layers = KWD_LAYERS, hidden = KWD_HIDDEN, heads = KWD_HEADS,
                       kv_heads = KWD_KV_HEADS, head_dim = KWD_HEAD_DIM, inter = KWD_INTER,
                       vocab = KWD_VOCAB, mode = KWD_MODE, group = KWD_GROUP,
                       lm_mode = KWD_LM_MODE, lm_group = KWD_LM_GROUP;
  static constexpr int kHeadDim = KWD_HEAD_DIM;
};
#define KWD_STR2(x) #x
#define KWD_STR(x) KWD_STR2(x)
const char kBuildInfo[] = "layers=" KWD_STR(KWD_LAYERS) " hidden=" KWD_STR(KWD_HIDDEN)
    " heads=" KWD_STR(KWD_HEADS) " kv_heads=" KWD_STR(KWD_KV_HEADS) " head_dim="
    KWD_STR(KWD_HEAD_DIM) " inter=" KWD_STR(KWD_INTER) " vocab=" KWD_STR(KWD_VOCAB)
    " mode=" KWD_STR(KWD_MODE) " group=" KWD_STR(KWD_GROUP) " lm_mode=" KWD_STR(KWD_LM_MODE)
    " lm_group=" KWD_STR(KWD_LM_GROUP);
#else
const char kBuildInfo[] = "generic";
#endif

inline float reduce_lanes(float *acc) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

inline float dot(const float *__restrict a, const float *__restrict b, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  for (int l = 0; i + l < n; ++l) acc[l] += a[i + l] * b[i + l];
  return reduce_lanes(acc);
}

// HF's RMSNorm in float32: w * (x * rsqrt(mean(x^2) + eps)).
inline void rmsnorm(const float *__restrict x, const float *__restrict w, float *__restrict out,
                    int n, float eps) {
  const float r = 1.0f / std::sqrt(dot(x, x, n) / float(n) + eps);
  for (int i = 0; i < n; ++i) out[i] = w[i] * (x[i] * r);
}

// Rotary embedding in HF's rotate-half form: (v1, v2) -> (v1 c - v2 s, v2 c + v1 s).
inline void rope(const float *__restrict v, const float *__restrict c, const float *__restrict s,
                 float *__restrict out, int hd) {
  const int half = hd / 2;
  for (int i = 0; i < half; ++i) {
    out[i] = v[i] * c[i] - v[i + half] * s[i];
    out[i + half] = v[i + half] * c[i] + v[i] * s[i];
  }
}

struct AttnJob {
  int heads, group_heads, kv_heads, head_dim;
  int64_t past, cap;
  float scaling;
  const float *q;          // [batch, heads, head_dim], rotated
  const float *k, *v;      // this layer's cache
  const uint8_t *mask;     // [batch, past + 1] or null
  float *scores;           // [batch * heads, past + 1]
  float *out;              // [batch, heads * head_dim]
};

template <class D>
void attend(void *ctx, int task) {
  const AttnJob &j = *static_cast<const AttnJob *>(ctx);
  const int hd = D::kHeadDim ? D::kHeadDim : j.head_dim;
  const int b = task / j.heads, h = task % j.heads, g = h / j.group_heads;
  const int64_t t = j.past + 1;
  const float *q = j.q + (int64_t(b) * j.heads + h) * hd;
  const float *kb = j.k + (int64_t(b) * j.kv_heads + g) * j.cap * hd;
  const float *vb = j.v + (int64_t(b) * j.kv_heads + g) * j.cap * hd;
  const uint8_t *mask = j.mask ? j.mask + int64_t(b) * t : nullptr;
  float *sc = j.scores + int64_t(task) * t;
  float *out = j.out + (int64_t(b) * j.heads + h) * hd;
  float mx = -INFINITY;
  for (int64_t p = 0; p < t; ++p) {
    if (mask && !mask[p]) continue;
    sc[p] = dot(q, kb + p * hd, hd) * j.scaling;
    if (sc[p] > mx) mx = sc[p];
  }
  float acc[kLanes] = {};
  for (int64_t p = 0; p < t; ++p) {
    float e = (mask && !mask[p]) ? 0.0f : std::exp(sc[p] - mx);
    sc[p] = e;
    acc[p % kLanes] += e;
  }
  const float sum = reduce_lanes(acc);
  for (int d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int64_t p = 0; p < t; ++p) {
    const float e = sc[p];
    if (e == 0.0f) continue;
    const float *vp = vb + p * hd;
    for (int d = 0; d < hd; ++d) out[d] += e * vp[d];
  }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int d = 0; d < hd; ++d) out[d] *= inv;
}

struct Scratch {
  std::vector<float> buf;
  float *get(size_t n) {
    if (buf.size() < n) buf.resize(n);
    return buf.data();
  }
};

int fail(char *err, int errcap, const char *what) {
  if (err && errcap > 0) std::snprintf(err, size_t(errcap), "%s", what);
  return 1;
}

int linear_failed(char *err, int errcap, const char *which, int layer) {
  char msg[512];
  std::snprintf(msg, sizeof msg, "layer %d, %s projection: %s", layer, which, kwker_last_error());
  return fail(err, errcap, msg);
}

template <class D>
int run(const D &d, const kwd_model &m, const kwd_call &c, char *err, int errcap) {
  const int B = c.batch, H = d.hidden, hd = d.head_dim, nh = d.heads, nkv = d.kv_heads;
  const int nq = nh * hd, nk = nkv * hd, nqkv = nq + 2 * nk, I = d.inter;
  const int64_t t = c.past + 1;
  if (B < 1 || c.past < 0 || c.cap < t)
    return fail(err, errcap, "decode step: batch must be >= 1 and the cache must hold past + 1 "
                             "positions");
  static thread_local Scratch scratch;
  const size_t per_row = size_t(H) * 3 + size_t(nqkv) + size_t(nq) * 2 + size_t(2 * I) + size_t(I) + hd;
  float *base = scratch.get(size_t(B) * per_row + size_t(B) * nh * size_t(t));
  float *x = base, *xn = x + size_t(B) * H, *tmp = xn + size_t(B) * H;
  float *qkv = tmp + size_t(B) * H, *qr = qkv + size_t(B) * nqkv, *att = qr + size_t(B) * nq;
  float *gu = att + size_t(B) * nq, *act = gu + size_t(B) * 2 * I, *cs = act + size_t(B) * I;
  float *scores = cs + size_t(B) * hd;
  std::memcpy(x, c.x, sizeof(float) * size_t(B) * H);
  // cos / sin per row (HF: cos(inv_freq * position) * attention_scaling, in float32).
  const int half = hd / 2;
  for (int b = 0; b < B; ++b) {
    float *cb = cs + size_t(b) * hd;
    const float pos = float(c.positions[b]);
    for (int i = 0; i < half; ++i) {
      const float f = m.inv_freq[i] * pos;
      cb[i] = std::cos(f) * m.rope_scale;
      cb[half + i] = std::sin(f) * m.rope_scale;
    }
  }
  const int mode = d.mode, group = d.group, thr = m.threads;
  for (int l = 0; l < d.layers; ++l) {
    const kwd_layer &L = m.layer[l];
    for (int b = 0; b < B; ++b) rmsnorm(x + size_t(b) * H, L.attn_norm, xn + size_t(b) * H, H, m.eps);
    if (kwker_linear(mode, xn, B, H, L.qkv, nqkv, group, L.qkv_bias, qkv, thr) != KWKER_OK)
      return linear_failed(err, errcap, "qkv", l);
    float *kc = c.k_cache[l], *vc = c.v_cache[l];
    for (int b = 0; b < B; ++b) {
      const float *row = qkv + size_t(b) * nqkv, *cb = cs + size_t(b) * hd, *sb = cb + half;
      for (int h = 0; h < nh; ++h) rope(row + h * hd, cb, sb, qr + (size_t(b) * nh + h) * hd, hd);
      for (int g = 0; g < nkv; ++g) {
        const int64_t at = ((int64_t(b) * nkv + g) * c.cap + c.past) * hd;
        rope(row + nq + g * hd, cb, sb, kc + at, hd);
        std::memcpy(vc + at, row + nq + nk + g * hd, sizeof(float) * size_t(hd));
      }
    }
    AttnJob job{nh, nh / nkv, nkv, hd, c.past, c.cap, m.scaling, qr, kc, vc, c.mask, scores, att};
    if (kwker_run_tasks(B * nh, thr, attend<D>, &job) != KWKER_OK)
      return linear_failed(err, errcap, "attention", l);
    if (kwker_linear(mode, att, B, nq, L.o, H, group, L.o_bias, tmp, thr) != KWKER_OK)
      return linear_failed(err, errcap, "output", l);
    for (size_t i = 0; i < size_t(B) * H; ++i) x[i] = x[i] + tmp[i];
    for (int b = 0; b < B; ++b) rmsnorm(x + size_t(b) * H, L.mlp_norm, xn + size_t(b) * H, H, m.eps);
    if (kwker_linear(mode, xn, B, H, L.gate_up, 2 * I, group, L.gate_up_bias, gu, thr) != KWKER_OK)
      return linear_failed(err, errcap, "gate/up", l);
    for (int b = 0; b < B; ++b) {
      const float *gr = gu + size_t(b) * 2 * I, *ur = gr + I;
      float *ar = act + size_t(b) * I;
      for (int i = 0; i < I; ++i) ar[i] = gr[i] / (1.0f + std::exp(-gr[i])) * ur[i];
    }
    if (kwker_linear(mode, act, B, I, L.down, H, group, L.down_bias, tmp, thr) != KWKER_OK)
      return linear_failed(err, errcap, "down", l);
    for (size_t i = 0; i < size_t(B) * H; ++i) x[i] = x[i] + tmp[i];
  }
  for (int b = 0; b < B; ++b) rmsnorm(x + size_t(b) * H, m.final_norm, xn + size_t(b) * H, H, m.eps);
  if (kwker_linear(d.lm_mode, xn, B, H, m.lm_head, d.vocab, d.lm_group, m.lm_head_bias, c.logits,
                   thr) != KWKER_OK)
    return linear_failed(err, errcap, "LM head", d.layers);
  return 0;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int kwd_abi(void) { return KWD_ABI; }

__attribute__((visibility("default"))) const char *kwd_build_info(void) { return kBuildInfo; }

__attribute__((visibility("default"))) int kwd_step(const kwd_model *model, const kwd_call *call,
                                                    char *err, int errcap) {
  if (!model || !call || model->abi != KWD_ABI)
    return fail(err, errcap, "decode step: model description missing or of another ABI version");
  struct Runner {  // the caller's choice of threads, for this call only
    kwker_thread_runner prev;
    ~Runner() { kwker_set_thread_runner(prev); }
  } runner{kwker_set_thread_runner(model->runner)};
#ifdef KWD_SPEC
  const kwd_model &m = *model;
  if (m.layers != SpecDims::layers || m.hidden != SpecDims::hidden || m.heads != SpecDims::heads ||
      m.kv_heads != SpecDims::kv_heads || m.head_dim != SpecDims::head_dim ||
      m.inter != SpecDims::inter || m.vocab != SpecDims::vocab || m.mode != SpecDims::mode ||
      m.group != SpecDims::group || m.lm_mode != SpecDims::lm_mode ||
      m.lm_group != SpecDims::lm_group)
    return fail(err, errcap, "decode step: this package was built for other shapes (" KWD_STR(
        KWD_HIDDEN) " hidden ...); the cache key is wrong, please report it");
  return run(SpecDims{}, m, *call, err, errcap);
#else
  return run(RuntimeDims(*model), *model, *call, err, errcap);
#endif
}

}  // extern "C"

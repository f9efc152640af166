/* The decode step of a Llama-family decoder (Llama, Mistral, Qwen2, SmolLM) as one native call
 * per token: every layer's RMSNorm, fused QKV projection, rotary embedding, attention over the
 * KV cache, output projection, SiLU-gated MLP and residuals, then the final norm and the LM
 * head. The projections run the CPU backend's linear kernels (kwker_linear, packed weights).
 *
 * decoder_step.cc is compiled twice from the same text: once with the wheel (the generic
 * library, lib/libkwker_decoder.so, every shape a run-time value) and, at run time, once per
 * architecture, mode and engine into a "decoder package" whose shapes are compile-time
 * constants (kwker.cpu_backend._package, cached under KWKER_CACHE_DIR). Both export the entry
 * points below with this ABI, and compute the same numbers bit for bit (no fast-math, no
 * contraction: the order of every floating-point operation is fixed by the source). */
#ifndef KWKER_DECODER_H_
#define KWKER_DECODER_H_
#include <stdint.h>

#include "kwker/kwker.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KWD_ABI 1

typedef struct {
  const float *attn_norm, *mlp_norm;  /* [hidden] RMSNorm weights */
  const void *qkv;                    /* packed [q | k | v] rows */
  const float *qkv_bias;              /* [(heads + 2 kv_heads) head_dim] or NULL */
  const void *o;                      /* packed [hidden, heads head_dim] */
  const float *o_bias;
  const void *gate_up;                /* packed [gate | up] rows, [2 inter, hidden] */
  const float *gate_up_bias;
  const void *down;                   /* packed [hidden, inter] */
  const float *down_bias;
} kwd_layer;

typedef struct {
  int abi; /* KWD_ABI */
  int layers, hidden, heads, kv_heads, head_dim, inter, vocab;
  int mode, group;          /* KWKER_LINEAR_* mode and int4 group of every layer's projections */
  int lm_mode, lm_group;    /* the LM head's (GGUF files often store it in another format) */
  int threads;              /* 0 = Kwker's thread budget */
  float eps, scaling, rope_scale; /* RMSNorm epsilon, attention scale, rotary amplitude scale */
  const float *inv_freq;          /* [head_dim / 2] rotary inverse frequencies */
  const float *final_norm;        /* [hidden] */
  const void *lm_head;            /* packed [vocab, hidden] */
  const float *lm_head_bias;
  const kwd_layer *layer;         /* [layers] */
  kwker_thread_runner runner;     /* where the step's parallel work runs (NULL: Kwker's pool) */
} kwd_model;

typedef struct {
  int batch;
  int64_t past;              /* tokens already in the cache: the new token is written there */
  int64_t cap;               /* capacity (third dimension) of the cache buffers */
  const float *x;            /* [batch, hidden] embeddings of the new tokens */
  const int64_t *positions;  /* [batch] rotary positions */
  const uint8_t *mask;       /* [batch, past + 1], 1 = attend; NULL attends everywhere */
  float *const *k_cache;     /* [layers] of [batch, kv_heads, cap, head_dim] */
  float *const *v_cache;
  float *logits;             /* [batch, vocab] */
} kwd_call;

/* Runs one decode step. Returns 0, or a nonzero code with a message in err (errcap bytes). */
int kwd_step(const kwd_model *model, const kwd_call *call, char *err, int errcap);
/* "generic" or the shapes a package was specialised for, e.g. "hidden=576 heads=9 ...". */
const char *kwd_build_info(void);
int kwd_abi(void);

#ifdef __cplusplus
}
#endif
#endif /* KWKER_DECODER_H_ */

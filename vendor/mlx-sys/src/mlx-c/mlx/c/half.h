/* Copyright © 2023-2024 Apple Inc. */

#ifndef MLX_HALF_H
#define MLX_HALF_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__ARM_FEATURE_FP16_SCALAR_ARITHMETIC) || defined(__aarch64__)
#define HAS_FLOAT16
#include <arm_fp16.h>
typedef __fp16 float16_t;
#endif

#if defined(__ARM_FEATURE_BF16) || defined(__aarch64__)
#define HAS_BFLOAT16
#include <arm_bf16.h>
typedef __bf16 bfloat16_t;
#endif

/* laya-bench patch: x86-64 and other targets without a native 16-bit float type
 * get 16-bit storage types, so the float16/bfloat16 accessors exist there too. The C
 * API passes these only by pointer (array data, item out-parameters), never by value
 * in arithmetic, so the bit pattern is all that crosses it. */
#if !defined(HAS_FLOAT16)
#define HAS_FLOAT16
#include <stdint.h>
typedef uint16_t float16_t;
#endif

#if !defined(HAS_BFLOAT16)
#define HAS_BFLOAT16
#include <stdint.h>
typedef uint16_t bfloat16_t;
#endif

#ifdef __cplusplus
}
#endif

#endif

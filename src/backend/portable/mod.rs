//! The portable CPU backend (FP32 compute on `gemm`).

//! The cuBLAS baselines' `cublasGemmEx` call, for either element type.

use super::super::{BLayout, ElementType};
use crate::gemm::host::Mnk;
use anyhow::{Result, ensure};
use gpu_runtime::blas::sys as cublas;

/// cuBLAS's name of `element`.
fn data_type(element: ElementType) -> cublas::cudaDataType_t {
    match element {
        ElementType::Bf16 => cublas::cudaDataType_t::CUDA_R_16BF,
        ElementType::F16 => cublas::cudaDataType_t::CUDA_R_16F,
    }
}

/// Queues row-major `C = A B^T` (B `n x k`: the TN GEMM) or `C = A B` (B `k x n`: the NN
/// GEMM) with `cublasGemmEx`: A, B and C in `element`, FP32 compute, the default algorithm.
///
/// # Safety
/// `handle` is a live cuBLAS handle on the GPU's stream; `a`, `b` and `c` are device
/// addresses of A (`m x k`), B (`n x k`, or `k x n` for [`BLayout::KN`]) and C (`m x n`) in
/// `element`, row-major, packed.
pub(super) unsafe fn gemm_ex(
    handle: cublas::cublasHandle_t,
    element: ElementType,
    size: Mnk,
    (a, b, b_layout, c): (u64, u64, BLayout, u64),
) -> Result<()> {
    let (alpha, beta) = (1.0f32, 0.0f32);
    let (mi, ni, ki) = (size.m as i32, size.n as i32, size.k as i32);
    // Row-major C = A B^T is column-major C^T (n x m, ld n) = B A^T, where A's memory is A^T
    // column-major (ld k): op N; B's (n x k row-major) is B^T column-major (ld k): op T — the
    // TN GEMM. With B k x n row-major, its memory is B column-major... as C^T = B^T A^T needs:
    // op N, ld n — the NN GEMM.
    let (op_b, ldb) = match b_layout {
        BLayout::KN => (cublas::cublasOperation_t::CUBLAS_OP_N, ni),
        BLayout::NK => (cublas::cublasOperation_t::CUBLAS_OP_T, ki),
    };
    let t = data_type(element);
    // SAFETY: the caller's contract; the buffers hold what the leading dimensions describe.
    let status = unsafe {
        cublas::cublasGemmEx(
            handle,
            op_b,
            cublas::cublasOperation_t::CUBLAS_OP_N,
            ni,
            mi,
            ki,
            (&alpha as *const f32).cast(),
            b as *const _,
            t,
            ldb,
            a as *const _,
            t,
            ki,
            (&beta as *const f32).cast(),
            c as *mut _,
            t,
            ni,
            cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    };
    ensure!(
        status == cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
        "cublasGemmEx ({size}, {}) failed: {status:?}",
        element.label()
    );
    Ok(())
}

//! Every instruction wrapper of `gpu::ptx` is assembled in some kernel.

use super::*;

/// What an instruction wrapper leaves in the PTX, told apart from what every other wrapper
/// leaves, so that a row of the table below fails when its own wrapper's uses go. Every form
/// but [`Emits::Intrinsic`] is looked for among the instructions that came from inline asm
/// (LLVM's `// begin inline asm` ... `// end inline asm`), so code that LLVM generates with
/// the same instruction (a plain 16-byte store is `st.global.v4.b32` too) does not count.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Emits {
    /// An instruction with exactly this opcode.
    Op(&'static str),
    /// An instruction with exactly this opcode and this many operands: for wrappers that share
    /// an opcode (the zero-filling copies' extra source-size operand, the named barrier's
    /// thread count).
    OpWith(&'static str, usize),
    /// Any of these opcodes: a wrapper generic over the value it moves.
    AnyOf(&'static [&'static str]),
    /// `mov.u32 r, REG;` of this special register.
    Reads(&'static str),
    /// A loop whose whole body is this wait (its result branching back to it): the blocking
    /// waits, `while !wait() {}`, apart from a single non-blocking test of the same
    /// instruction.
    SpinLoop(&'static str),
    /// An instruction with exactly this opcode, from an LLVM intrinsic rather than inline asm.
    Intrinsic(&'static str),
}

/// The instructions of each kernel of `arch`'s PTX that came from inline asm.
pub(crate) fn asm_instructions(
    arch: Arch,
) -> &'static std::collections::BTreeMap<String, Vec<PtxInstr>> {
    static CACHE: [OnceLock<std::collections::BTreeMap<String, Vec<PtxInstr>>>; Arch::ALL.len()] =
        [const { OnceLock::new() }; Arch::ALL.len()];
    let slot = &CACHE[Arch::ALL.iter().position(|&a| a == arch).expect("an arch")];
    slot.get_or_init(|| {
        // Each kernel's inline-asm lines, as the body of a kernel of their own, for the PTX
        // reader to split into instructions.
        let mut only_asm = String::new();
        let (mut in_kernel, mut in_asm) = (false, false);
        for line in host::device_code::module_text(arch).lines() {
            let code = line.trim();
            if let Some(rest) = code
                .strip_prefix(".visible .entry ")
                .or_else(|| code.strip_prefix(".entry "))
            {
                if in_kernel {
                    only_asm.push_str("}\n");
                }
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                only_asm.push_str(&format!(".entry {name}()\n{{\n"));
                in_kernel = true;
            } else if code.contains(".func ") && in_kernel {
                only_asm.push_str("}\n");
                in_kernel = false;
            } else if code == "// begin inline asm" {
                in_asm = true;
            } else if code == "// end inline asm" {
                in_asm = false;
            } else if in_asm && in_kernel {
                only_asm.push_str(line);
                only_asm.push('\n');
            }
        }
        if in_kernel {
            only_asm.push_str("}\n");
        }
        ptx_builder::ptx_text::kernel_instructions(&only_asm)
    })
}

/// The wait instructions that are the whole body of a loop in any kernel of `arch`'s PTX:
/// a label, the wait's inline-asm scope, a `setp` on its result and a branch back to the
/// label, with no other branch and no other label in between.
pub(crate) fn spin_loop_waits(arch: Arch) -> &'static std::collections::BTreeSet<String> {
    static CACHE: [OnceLock<std::collections::BTreeSet<String>>; Arch::ALL.len()] =
        [const { OnceLock::new() }; Arch::ALL.len()];
    let slot = &CACHE[Arch::ALL.iter().position(|&a| a == arch).expect("an arch")];
    slot.get_or_init(|| {
        let module =
            ptx_builder::fingerprint::ModuleFingerprints::new(host::device_code::module_text(arch));
        let mut waits = std::collections::BTreeSet::new();
        for name in module.kernels() {
            let text = module.normal_form(name).expect("a kernel");
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let Some(label) = line.strip_suffix(" :") else {
                    continue;
                };
                let branch = |l: &str| l.split(' ').any(|t| t == "bra" || t.starts_with("bra."));
                let back = format!(" {label} ;");
                let Some(len) = lines[i + 1..]
                    .iter()
                    .take(8)
                    .position(|l| branch(l) && l.ends_with(&back))
                else {
                    continue;
                };
                let body = &lines[i + 1..i + 1 + len];
                let wait: Vec<&str> = body
                    .iter()
                    .filter(|l| l.starts_with("mbarrier.") && l.contains("wait"))
                    .map(|l| l.split(' ').next().unwrap_or(""))
                    .collect();
                let exits = body.iter().any(|l| branch(l) || l.ends_with(" :"));
                if let ([wait], false) = (wait.as_slice(), exits) {
                    waits.insert(wait.to_string());
                }
            }
        }
        waits
    })
}

/// Whether some kernel of `arch`'s PTX holds what `emits` describes.
pub(crate) fn emitted(arch: Arch, emits: Emits) -> bool {
    let kernels = || asm_instructions(arch).values().flatten();
    match emits {
        Emits::Intrinsic(op) => inspection(arch)
            .kernels
            .values()
            .any(|k| k.ptx.iter().any(|i| i.opcode == op)),
        Emits::Op(op) => kernels().any(|i| i.opcode == op),
        Emits::OpWith(op, n) => kernels().any(|i| i.opcode == op && operands(i).len() == n),
        Emits::AnyOf(ops) => kernels().any(|i| ops.contains(&i.opcode.as_str())),
        Emits::Reads(reg) => {
            kernels().any(|i| i.opcode == "mov.u32" && operands(i).last() == Some(&reg))
        }
        Emits::SpinLoop(op) => spin_loop_waits(arch).contains(op),
    }
}

/// Every wrapper of the instruction layer (`gpu/src/ptx/`) is used by some kernel, so ptxas
/// assembles each one in CI: for each wrapper, what it must leave in the PTX of some kernel
/// ([`Emits`]: the full instruction form, precise enough that no other wrapper's use leaves
/// it). A wrapper missing from this table fails the test: a new instruction comes with a use.
///
/// Wrappers built on another one and its only caller (`read` on `load_shared`,
/// `as_generic_ptr` on `shared_to_generic`, the blocking waits on the sm_90 `try_wait`s) leave
/// the same instructions and fail together. On sm_80 the blocking waits are loops around the
/// same `test_wait`s that the non-blocking wrappers emit, so those are checked on sm_90,
/// where only a direct use emits them.
#[test]
fn every_instruction_wrapper_is_assembled_in_some_kernel() {
    use Emits::{AnyOf, Intrinsic, Op, OpWith, Reads, SpinLoop};
    // (wrapper, what it emits, archs whose PTX must contain it)
    const BOTH: &[Arch] = &[Arch::Sm80, Arch::Sm90];
    const SM90: &[Arch] = &[Arch::Sm90];
    const SM80: &[Arch] = &[Arch::Sm80];
    const SM90A: &[Arch] = &[Arch::Sm90a];
    let table: &[(&str, Emits, &[Arch])] = &[
        ("cp_async_ca", OpWith("cp.async.ca.shared.global", 3), BOTH),
        ("cp_async_cg", OpWith("cp.async.cg.shared.global", 3), BOTH),
        (
            "cp_async_ca_zfill",
            OpWith("cp.async.ca.shared.global", 4),
            BOTH,
        ),
        (
            "cp_async_cg_zfill",
            OpWith("cp.async.cg.shared.global", 4),
            BOTH,
        ),
        ("commit_group", Op("cp.async.commit_group"), BOTH),
        ("wait_group", Op("cp.async.wait_group"), BOTH),
        ("wait_all", Op("cp.async.wait_all"), BOTH),
        (
            "cp_async_mbarrier_arrive",
            Op("cp.async.mbarrier.arrive.shared.b64"),
            BOTH,
        ),
        (
            "cp_async_mbarrier_arrive_noinc",
            Op("cp.async.mbarrier.arrive.noinc.shared.b64"),
            BOTH,
        ),
        ("mbarrier_init", Op("mbarrier.init.shared.b64"), BOTH),
        ("mbarrier_inval", Op("mbarrier.inval.shared.b64"), BOTH),
        ("mbarrier_arrive", Op("mbarrier.arrive.shared.b64"), BOTH),
        (
            "mbarrier_arrive_drop",
            Op("mbarrier.arrive_drop.shared.b64"),
            BOTH,
        ),
        (
            "mbarrier_pending_count",
            Op("mbarrier.pending_count.b64"),
            BOTH,
        ),
        (
            "mbarrier_test_wait",
            Op("mbarrier.test_wait.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_test_wait_parity",
            Op("mbarrier.test_wait.parity.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_try_wait",
            Op("mbarrier.try_wait.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_try_wait_parity",
            Op("mbarrier.try_wait.parity.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_wait",
            SpinLoop("mbarrier.test_wait.shared.b64"),
            SM80,
        ),
        (
            "mbarrier_wait",
            SpinLoop("mbarrier.try_wait.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_wait_parity",
            SpinLoop("mbarrier.test_wait.parity.shared.b64"),
            SM80,
        ),
        (
            "mbarrier_wait_parity",
            SpinLoop("mbarrier.try_wait.parity.shared.b64"),
            SM90,
        ),
        ("trap", Op("trap"), BOTH),
        ("fma_f32", Intrinsic("fma.rn.f32"), BOTH),
        (
            "atom_add_relaxed_gpu",
            Op("atom.relaxed.gpu.global.add.u32"),
            BOTH,
        ),
        (
            "atom_add_acq_rel_gpu",
            Op("atom.acq_rel.gpu.global.add.u32"),
            BOTH,
        ),
        ("st_relaxed_gpu", Op("st.relaxed.gpu.global.u32"), BOTH),
        ("ld_global_v4", Op("ld.global.v4.b32"), BOTH),
        ("st_global_v4", Op("st.global.v4.b32"), BOTH),
        ("as_generic_ptr", Op("cvta.shared.u64"), BOTH),
        ("shared_to_generic", Op("cvta.shared.u64"), BOTH),
        ("read", AnyOf(&["ld.shared.b32", "ld.shared.v4.b32"]), BOTH),
        ("write", AnyOf(&["st.shared.b32", "st.shared.v4.b32"]), BOTH),
        // One row per `SharedValue` implementation: 4-byte scalars and `[f32; 4]`.
        ("load_shared", Op("ld.shared.b32"), BOTH),
        ("load_shared", Op("ld.shared.v4.b32"), BOTH),
        ("store_shared", Op("st.shared.b32"), BOTH),
        ("store_shared", Op("st.shared.v4.b32"), BOTH),
        ("thread_idx_x", Reads("%tid.x"), BOTH),
        ("block_dim_x", Reads("%ntid.x"), BOTH),
        ("block_idx_x", Reads("%ctaid.x"), BOTH),
        ("block_idx_y", Reads("%ctaid.y"), BOTH),
        ("grid_dim_x", Reads("%nctaid.x"), BOTH),
        ("block_dim_y", Reads("%ntid.y"), BOTH),
        ("block_dim_z", Reads("%ntid.z"), BOTH),
        ("grid_dim_y", Reads("%nctaid.y"), BOTH),
        ("grid_dim_z", Reads("%nctaid.z"), BOTH),
        // gpu::math's instructions and gpu::reduce's, in the self-test's kernels.
        ("ex2_approx_ftz_f32", Op("ex2.approx.ftz.f32"), BOTH),
        ("ex2_approx_f32", Op("ex2.approx.f32"), BOTH),
        ("lg2_approx_ftz_f32", Op("lg2.approx.ftz.f32"), BOTH),
        ("rcp_approx_ftz_f32", Op("rcp.approx.ftz.f32"), BOTH),
        ("rcp_rn_f32", Op("rcp.rn.f32"), BOTH),
        ("rsqrt_approx_ftz_f32", Op("rsqrt.approx.ftz.f32"), BOTH),
        ("sqrt_rn_f32", Op("sqrt.rn.f32"), BOTH),
        ("tanh_approx_f32", Op("tanh.approx.f32"), BOTH),
        ("div_rn_f32", Op("div.rn.f32"), BOTH),
        ("shfl_sync_bfly_b32", Op("shfl.sync.bfly.b32"), BOTH),
        ("shfl_sync_down_b32", Op("shfl.sync.down.b32"), BOTH),
        ("redux_sync_add_u32", Op("redux.sync.add.u32"), BOTH),
        ("redux_sync_min_u32", Op("redux.sync.min.u32"), BOTH),
        ("redux_sync_max_u32", Op("redux.sync.max.u32"), BOTH),
        ("redux_sync_add_s32", Op("redux.sync.add.s32"), BOTH),
        ("redux_sync_min_s32", Op("redux.sync.min.s32"), BOTH),
        ("redux_sync_max_s32", Op("redux.sync.max.s32"), BOTH),
        ("zero_chunk", Op("cvta.global.u64"), BOTH),
        ("lane_id", Reads("%laneid"), BOTH),
        ("barrier_sync", OpWith("barrier.sync", 1), BOTH),
        ("barrier_sync_threads", OpWith("barrier.sync", 2), BOTH),
        ("barrier_sync_named", OpWith("barrier.sync", 2), SM90),
        ("barrier_arrive_named", OpWith("barrier.arrive", 2), SM90A),
        ("shfl_sync_idx", Op("shfl.sync.idx.b32"), BOTH),
        ("syncwarp", Op("bar.warp.sync"), SM90),
        (
            "cp_async_bulk_global_to_shared",
            Op("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
            SM90,
        ),
        (
            "cp_async_bulk_shared_to_global",
            Op("cp.async.bulk.global.shared::cta.bulk_group"),
            SM90,
        ),
        ("bulk_commit_group", Op("cp.async.bulk.commit_group"), SM90),
        (
            "bulk_wait_group_read",
            Op("cp.async.bulk.wait_group.read"),
            SM90,
        ),
        ("bulk_wait_group", Op("cp.async.bulk.wait_group"), SM90),
        (
            "mbarrier_expect_tx",
            Op("mbarrier.expect_tx.relaxed.cta.shared::cta.b64"),
            SM90,
        ),
        (
            "mbarrier_arrive_expect_tx",
            Op("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"),
            SM90,
        ),
        (
            "fence_proxy_async_shared",
            Op("fence.proxy.async.shared::cta"),
            SM90,
        ),
        (
            "fence_mbarrier_init",
            Op("fence.mbarrier_init.release.cluster"),
            SM90,
        ),
        ("elect_one", Op("elect.sync"), SM90),
        (
            "cp_async_bulk_tensor_global_to_shared",
            Op("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"),
            SM90,
        ),
        (
            "cp_async_bulk_tensor_global_to_shared_multicast",
            Op(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
            ),
            SM90A,
        ),
        (
            "cp_async_bulk_tensor_shared_to_global",
            Op("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"),
            SM90,
        ),
        ("prefetch_tensormap", Op("prefetch.tensormap"), SM90),
        (
            "l2_policy_evict_first",
            Op("createpolicy.fractional.L2::evict_first.b64"),
            SM90,
        ),
        (
            "cp_async_bulk_global_to_shared_l2_hint",
            Op("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"),
            SM90,
        ),
        (
            "cp_async_bulk_shared_to_global_l2_hint",
            Op("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint"),
            SM90,
        ),
        (
            "setmaxnreg_inc",
            Op("setmaxnreg.inc.sync.aligned.u32"),
            SM90A,
        ),
        (
            "setmaxnreg_dec",
            Op("setmaxnreg.dec.sync.aligned.u32"),
            SM90A,
        ),
        ("pack_bf16x2", Op("cvt.rn.bf16x2.f32"), SM90A),
        (
            "ldmatrix_x4",
            Op("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
            SM90A,
        ),
        (
            "stmatrix_x4",
            Op("stmatrix.sync.aligned.m8n8.x4.shared.b16"),
            SM90A,
        ),
        // Thread block clusters (sm_90: the DSMEM workload uses every one).
        ("cluster_ctarank", Reads("%cluster_ctarank"), SM90),
        ("cluster_nctarank", Reads("%cluster_nctarank"), SM90),
        ("cluster_id_x", Reads("%clusterid.x"), SM90),
        ("cluster_ctaid_x", Reads("%cluster_ctaid.x"), SM90),
        ("is_explicit_cluster", Op("mov.pred"), SM90),
        (
            "barrier_cluster_arrive_release",
            Op("barrier.cluster.arrive.release.aligned"),
            SM90,
        ),
        (
            "barrier_cluster_arrive_relaxed",
            Op("barrier.cluster.arrive.relaxed.aligned"),
            SM90,
        ),
        (
            "barrier_cluster_wait",
            Op("barrier.cluster.wait.acquire.aligned"),
            SM90,
        ),
        ("mapa", Op("mapa.shared::cluster.u32"), SM90),
        ("load_cluster", Op("ld.shared::cluster.b32"), SM90),
        ("load_cluster", Op("ld.shared::cluster.v4.b32"), SM90),
        ("store_cluster", Op("st.shared::cluster.v4.b32"), SM90),
        (
            "st_async_v4_b32",
            Op("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32"),
            SM90,
        ),
        (
            "red_async_add_u32",
            Op("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32"),
            SM90,
        ),
        (
            "mbarrier_arrive_cluster",
            Op("mbarrier.arrive.release.cluster.shared::cluster.b64"),
            SM90,
        ),
        (
            "mbarrier_arrive_cluster_cta",
            Op("mbarrier.arrive.release.cta.shared::cluster.b64"),
            SM90A,
        ),
        (
            "mbarrier_try_wait_parity_acquire_cluster",
            SpinLoop("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64"),
            SM90,
        ),
        ("fence_acq_rel_cluster", Op("fence.acq_rel.cluster"), SM90),
        (
            "cp_async_bulk_shared_to_cluster",
            Op("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"),
            SM90,
        ),
        (
            "cp_async_bulk_global_to_shared_multicast",
            Op(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
            ),
            SM90,
        ),
        ("clock64", Op("mov.u64"), SM90),
        ("ld_global_cg_u32", Op("ld.global.cg.b32"), SM90),
        ("ld_global_cg_v4", Op("ld.global.cg.v4.b32"), SM90),
        // The k-tile issues and the tied waits are macro-made (one per shape and type, not
        // listed as wrappers); the accumulator-rule test checks them in every kernel.
        (
            "wgmma_wait_group",
            Op("wgmma.wait_group.sync.aligned"),
            SM90A,
        ),
        ("pack_f16x2", Op("cvt.rn.f16x2.f32"), SM90A),
    ];
    // The wrappers defined in the instruction layer's sources.
    let dir = ptx_builder::workspace_root().join("gpu/src/ptx");
    let mut defined = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("gpu/src/ptx") {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let line = line.trim_start();
            let name = if let Some(rest) = line
                .strip_prefix("pub fn ")
                .or_else(|| line.strip_prefix("pub unsafe fn "))
                .or_else(|| line.strip_prefix("pub const unsafe fn "))
                .or_else(|| line.strip_prefix("pub const fn "))
                .or_else(|| line.strip_prefix("unsafe fn "))
            {
                rest
            } else if line.contains(" => \"") {
                line // special_register! / wait_instruction! / unary_f32! / shfl! / redux!
            } else {
                continue;
            };
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `scalar_shared_value!`'s rows name types, not wrappers.
            if matches!(name.as_str(), "u32" | "i32" | "f32") {
                continue;
            }
            // Constructors and plain address arithmetic emit nothing of their own; `load` /
            // `store` / `load_multicast` are the per-rank halves of the tensor-copy wrappers.
            if ![
                "from_addr",
                "from_generic_address",
                "from_bits",
                "bits",
                "addr",
                "add",
                "cast",
                "load",
                "store",
                "load_multicast",
                "",
            ]
            .contains(&name.as_str())
            {
                defined.push(name);
            }
        }
    }
    for name in &defined {
        assert!(
            table.iter().any(|(w, _, _)| w == name),
            "ptx wrapper `{name}` has no entry here: add what it emits, and a kernel using it"
        );
    }
    for &(wrapper, emits, archs) in table {
        for &arch in archs {
            assert!(
                emitted(arch, emits),
                "`{wrapper}` ({emits:?}) is in no kernel of the {arch} PTX"
            );
        }
    }
}

//! The tensor-core kernels (sm_90a): wgmma fed by TMA, multicast, the accumulator rule; clusters.

use super::*;

/// Every GEMM entry point (BF16 and FP16), with its family, whether it stores C by tensor
/// copies and whether it is warp-specialized (a producer warpgroup).
pub(crate) fn bf16_entries() -> Vec<(
    &'static workloads::gemm16::Gemm16Kernel,
    &'static str,
    bool,
    bool,
)> {
    use workloads::gemm16::Gemm16Style;
    workloads::gemm16::GEMM16_KERNELS
        .iter()
        .flat_map(|k| {
            let specialized = matches!(
                k.style,
                Gemm16Style::WsCooperative | Gemm16Style::WsPingpong
            );
            let [tensor_store, direct] = k.entries.names();
            [
                (k, tensor_store, true, specialized),
                (k, direct, false, specialized),
            ]
        })
        .collect()
}

/// The tensor-core kernels are in the sm_90a module only, and lower to what they document:
/// `HGMMA.64x256x16.F32.BF16` (`HGMMA.64x256x16.F32` for FP16; `64x128x16` for ping-pong's
/// 128 x 128 tiles, two per k-step) fed by `UTMALDG` (by 16-byte `LDGSTS` in the `cp_async` style),
/// A through `LDSM` where it is multiplied from registers, C staged by `STSM` and stored by
/// `UTMASTG` (tensor-store entry points) or stored by 16-byte `STG` (direct), `setmaxnreg` in the
/// warp-specialized ones (40 for the producer, 232 for the consumers), and no local memory —
/// the 128 accumulators stay in registers.
#[test]
fn tensor_core_kernels_lower_to_hgmma_fed_by_tma() {
    use workloads::gemm16::{ASource, ElementType, Gemm16Style};
    for (family, entry, tensor_store, specialized) in bf16_entries() {
        for arch in Arch::PORTABLE {
            assert!(
                inspection(arch).kernel(entry).is_none(),
                "{entry} is in the {arch} PTX"
            );
        }
        let view = kernel(Arch::Sm90a, entry);
        let sass = sass_ops(view);
        let width = family.style.geometry().tile_n;
        let hgmma = match family.element {
            ElementType::Bf16 => format!("HGMMA.64x{width}x16.F32.BF16"),
            ElementType::F16 => format!("HGMMA.64x{width}x16.F32"),
        };
        assert!(sass.contains(&hgmma), "{entry}: {sass:?}");
        let cp_async = family.style == Gemm16Style::CpAsync;
        // Plain, or multicast in a cluster (a cluster sharing both tiles would have no plain one).
        assert_eq!(
            sass.iter().any(|o| o.starts_with("UTMALDG.2D")),
            !cp_async,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o == "LDGSTS.E.BYPASS.128"),
            cp_async,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o.starts_with("LDSM.16.M88.4")),
            family.a_source == ASource::Registers,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o.starts_with("STSM.16.M88.4")),
            tensor_store,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o == "UTMASTG.2D"),
            tensor_store,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o.starts_with("STG.E.128")),
            !tensor_store,
            "{entry}"
        );
        assert!(
            sass.iter().any(|o| o.starts_with("WARPGROUP.ARRIVE")),
            "{entry}"
        );
        let resources = view.resources.as_ref().expect("ptxas resources");
        if specialized {
            // The register split adds up only from 168 per thread at 384 threads:
            // (40 + 2 * 232) * 128 = 64512 = 384 * 168, so the consumers take exactly what the
            // producer gives back. Assembled with fewer, the block would be launched with fewer
            // and `setmaxnreg.inc` would wait for registers it never gets.
            assert_eq!(resources.registers, 168, "{entry}");
        }
        assert_eq!(
            (
                resources.stack_frame_bytes,
                resources.spill_store_bytes,
                resources.spill_load_bytes
            ),
            (0, 0, 0),
            "{entry}: local memory"
        );
        assert!(
            !sass
                .iter()
                .any(|o| o.starts_with("LDL") || o.starts_with("STL")),
            "{entry}: local memory"
        );
        let mut setmaxnreg: Vec<String> = view
            .ptx
            .iter()
            .filter(|i| i.opcode.starts_with("setmaxnreg"))
            .map(|i| format!("{} {}", i.opcode, i.operands))
            .collect();
        setmaxnreg.sort();
        if specialized {
            assert_eq!(
                setmaxnreg,
                [
                    "setmaxnreg.dec.sync.aligned.u32 40",
                    "setmaxnreg.inc.sync.aligned.u32 232"
                ],
                "{entry}"
            );
        } else {
            assert!(setmaxnreg.is_empty(), "{entry}: {setmaxnreg:?}");
        }
    }
}

/// The BF16 families that run in clusters share their tiles as documented: the kernel
/// declares its cluster (`.reqnctapercluster`, recorded in the entry point), copies its slice
/// of the shared tile with multicast tensor copies (`UTMALDG.2D.MULTICAST`), releases stages
/// to every block of its group with the CTA-scope remote arrival, and syncs the cluster at
/// the start and the end — so exactly two `MEMBAR.ALL.GPU`, those of the two cluster
/// barriers' release, none per stage. The single-block families have none of it.
#[test]
fn cluster_bf16_kernels_multicast_their_shared_tile() {
    use workloads::gemm16::{Gemm16Entries, TileCluster};
    let mut clustered = 0;
    for (family, entry, _, _) in bf16_entries() {
        let in_cluster = family.cluster != TileCluster::NONE;
        let view = kernel(Arch::Sm90a, entry);
        let sass = sass_ops(view);
        let declared = match &family.entries {
            Gemm16Entries::TensorMaps {
                tensor_store,
                direct,
            } => [tensor_store.cluster(), direct.cluster()],
            Gemm16Entries::Pointers {
                tensor_store,
                direct,
            } => [tensor_store.cluster(), direct.cluster()],
        };
        let expected = in_cluster.then_some([family.cluster.blocks(), 1, 1]);
        assert_eq!(declared, [expected, expected], "{entry}");
        assert_eq!(
            sass.iter().any(|o| o == "UTMALDG.2D.MULTICAST"),
            in_cluster,
            "{entry}"
        );
        for op in [
            "mbarrier.arrive.release.cta.shared::cluster.b64",
            "barrier.cluster.arrive.release.aligned",
            "barrier.cluster.wait.acquire.aligned",
            "mapa.shared::cluster.u32",
        ] {
            assert_eq!(view.has_ptx(op), in_cluster, "{entry}: {op}");
        }
        // The remote release must not be the cluster-scope one (a GPU-wide fence per stage).
        assert!(
            !view.has_ptx("mbarrier.arrive.release.cluster.shared::cluster.b64"),
            "{entry}"
        );
        let gpu_fences = sass.iter().filter(|o| *o == "MEMBAR.ALL.GPU").count();
        assert_eq!(gpu_fences, if in_cluster { 2 } else { 0 }, "{entry}");
        clustered += usize::from(in_cluster);
    }
    // ws_cooperative_2x1 and _1x2, ws_pingpong_2x1: two entry points each.
    assert_eq!(clustered, 6);
}

/// Every tensor load of the warp-specialized `n x k` families is preceded by the `expect_tx` of
/// the bytes it brings this block: a whole tile for a plain copy, every receiver's slice for a
/// multicast one — so each stage expects its A tile (16 KiB) and its B tile (32 KiB; 16 KiB
/// for ping-pong's 128 columns) whichever block copies them. 2 x 1: A local, B multicast (two
/// halves); 1 x 2: A multicast (2 x 8 KiB), B local; one block: both local.
#[test]
fn multicast_copies_expect_every_receivers_bytes() {
    use workloads::gemm16::{ASource, BLayout, Gemm16Style, TileCluster};
    let mut checked = 0;
    for (family, entry, _, _) in bf16_entries() {
        if !matches!(
            family.style,
            Gemm16Style::WsCooperative | Gemm16Style::WsPingpong
        ) || family.b_layout != BLayout::NK
            || family.a_source != ASource::SharedMemory
        {
            continue;
        }
        let view = kernel(Arch::Sm90a, entry);
        // Constants moved into registers, for the expect_tx operand.
        let mut constants = std::collections::BTreeMap::new();
        let mut expected: Option<u64> = None;
        let mut loads = std::collections::BTreeSet::new();
        for i in &view.ptx {
            let ops = operands(i);
            if i.opcode == "mov.b32" && ops.len() == 2 {
                if let Ok(v) = ops[1].parse::<u64>() {
                    constants.insert(ops[0].to_string(), v);
                }
            } else if i.opcode == "mbarrier.expect_tx.relaxed.cta.shared::cta.b64" {
                let bytes = ops.last().expect("an operand");
                expected = Some(
                    bytes
                        .parse()
                        .ok()
                        .or_else(|| constants.get(*bytes).copied())
                        .unwrap_or_else(|| panic!("{entry}: expect_tx of {bytes}")),
                );
            } else if i
                .opcode
                .starts_with("cp.async.bulk.tensor.2d.shared::cluster.global")
            {
                let multicast = i.opcode.ends_with(".multicast::cluster");
                let bytes = expected
                    .take()
                    .unwrap_or_else(|| panic!("{entry}: a tensor load without its expect_tx"));
                loads.insert((multicast, bytes));
            }
        }
        let g = family.style.geometry();
        let (a_tile, b_tile) = (128 * u64::from(g.tile_m), 128 * u64::from(g.tile_n));
        let want: std::collections::BTreeSet<(bool, u64)> = match family.cluster {
            TileCluster { m: 2, n: 1 } => [(false, a_tile), (true, b_tile)].into(),
            TileCluster { m: 1, n: 2 } => [(true, a_tile), (false, b_tile)].into(),
            _ => [(false, a_tile), (false, b_tile)].into(),
        };
        assert_eq!(loads, want, "{entry}");
        checked += 1;
    }
    // ws_cooperative, _2x1, _1x2, ws_pingpong, _2x1, and the FP16 ws_cooperative and
    // ws_pingpong, two entry points each.
    assert_eq!(checked, 14);
}

/// The accumulator rule (PTX ISA: no access to a `wgmma.mma_async`'s accumulator registers
/// until a `wgmma.wait_group` covers it), for multiplies issued and waited for in separate
/// statements (`gpu::wgmma::InFlight`, `Issued`). In every sm_90a kernel:
/// - each k-tile is one region: `wgmma.fence`, four `wgmma.mma_async` naming one and the same
///   accumulator registers (tied, not copied between them) — or eight, alternating between two
///   disjoint sets (two 64-row tiles stacked: ping-pong's 128 x 128) — `wgmma.commit_group`;
/// - on every path of the kernel's control flow (its branches and labels) from each region
///   on, until a `wgmma.wait_group N` with at least `N` regions committed after it on that
///   path (which leaves it complete), no instruction but other regions' multiplies on the same
///   accumulators names any of its accumulator registers (no copy, no phi move, no read), and
///   none writes the A registers of a region that takes A from registers — so nothing can run
///   on them while a multiply is in flight; and every path meets such a wait before the
///   kernel returns.
///
/// And some kernel keeps a k-tile in flight across the wait for the next stage
/// (`wgmma.wait_group 1`), some takes A from registers, some multiplies FP16, and some keeps
/// two tiles' multiplies in flight at once (attention: `S = Q K^T` waited for with the
/// previous block's `P V` still running), and some multiplies two stacked tiles in one region.
#[test]
fn no_instruction_touches_an_accumulator_while_a_wgmma_is_in_flight() {
    let (mut regions, mut register_a, mut in_flight, mut fp16, mut two_tiles) = (0, 0, 0, 0, 0);
    let mut stacked = 0;
    let labels = ptx_builder::ptx_text::kernel_labels(host::device_code::module_text(Arch::Sm90a));
    for (name, view) in &inspection(Arch::Sm90a).kernels {
        let found =
            accumulator_rule(&view.ptx, &labels[name]).unwrap_or_else(|e| panic!("{name}: {e}"));
        regions += found.regions;
        register_a += found.register_a;
        fp16 += found.fp16;
        stacked += found.stacked;
        in_flight += usize::from(found.keeps_one_in_flight);
        two_tiles += usize::from(found.two_tiles_in_flight);
    }
    assert!(regions >= 4, "found {regions} wgmma regions");
    assert!(register_a >= 1, "no wgmma takes A from registers");
    assert!(
        in_flight >= 4,
        "{in_flight} kernels keep a k-tile in flight"
    );
    assert!(fp16 >= 1, "no kernel multiplies FP16");
    assert!(two_tiles >= 1, "no kernel keeps two tiles in flight");
    assert!(
        stacked >= 1,
        "no kernel multiplies two stacked tiles at once"
    );
}

/// What [`accumulator_rule`] found in a kernel that keeps it.
struct WgmmaRegions {
    regions: usize,
    register_a: usize,
    fp16: usize,
    stacked: usize,
    keeps_one_in_flight: bool,
    two_tiles_in_flight: bool,
}

/// One issue region: where its multiplies are, their accumulator list, and the A registers
/// (A from registers).
struct Region {
    mmas: std::ops::Range<usize>,
    commit: usize,
    accumulators: Vec<String>,
    a_registers: Vec<String>,
}

/// `instr`, met while `region`'s multiplies may be in flight, neither names their
/// accumulators nor writes their A registers.
fn check_untouched(
    instr: &PtxInstr,
    region: &Region,
    names_register: &impl Fn(&str, &str) -> bool,
) -> Result<(), String> {
    let text = format!("{} {}", instr.opcode, instr.operands);
    if let Some(reg) = region
        .accumulators
        .iter()
        .find(|reg| names_register(&text, reg))
    {
        return Err(format!(
            "`{text}` names accumulator {reg} while a multiply is in flight"
        ));
    }
    let destination = instr.operands.split(',').next().unwrap_or_default().trim();
    if let Some(reg) = region
        .a_registers
        .iter()
        .find(|reg| destination == reg.as_str())
    {
        return Err(format!(
            "`{text}` writes A register {reg} while a multiply reads it"
        ));
    }
    Ok(())
}

/// Checks the accumulator rule (see the test above) on one kernel's instructions and labels.
fn accumulator_rule(ptx: &[PtxInstr], labels: &[(usize, String)]) -> Result<WgmmaRegions, String> {
    let mut found = WgmmaRegions {
        regions: 0,
        register_a: 0,
        fp16: 0,
        stacked: 0,
        keeps_one_in_flight: false,
        two_tiles_in_flight: false,
    };
    let lists = |instr: &PtxInstr| -> Vec<String> {
        let ops = &instr.operands;
        let mut out = Vec::new();
        let mut rest = ops.as_str();
        while let (Some(open), Some(close)) = (rest.find('{'), rest.find('}')) {
            out.push(rest[open..=close].to_string());
            rest = &rest[close + 1..];
        }
        out
    };
    let registers = |list: &str| -> Vec<String> {
        list.trim_matches(['{', '}'])
            .split(',')
            .map(|r| r.trim().to_string())
            .collect()
    };
    let names_register = |text: &str, reg: &str| {
        text.match_indices(reg).any(|(at, _)| {
            !text[at + reg.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
        })
    };
    // Each issue region.
    let mut regions: Vec<Region> = Vec::new();
    let mut i = 0;
    while i < ptx.len() {
        if ptx[i].opcode.starts_with("wgmma.mma_async") {
            return Err(format!(
                "a wgmma.mma_async outside a fence..commit region at {i}"
            ));
        }
        if ptx[i].opcode != "wgmma.fence.sync.aligned" {
            i += 1;
            continue;
        }
        // Four multiplies on one tile, or eight on two stacked ones (alternating).
        let mmas = ptx[i + 1..]
            .iter()
            .take_while(|r| r.opcode.starts_with("wgmma.mma_async.sync.aligned.m64n"))
            .count();
        let region: Vec<&PtxInstr> = ptx[i + 1..].iter().take(mmas + 1).collect();
        let opcodes: Vec<&str> = region.iter().map(|r| r.opcode.as_str()).collect();
        if !(mmas == 4 || mmas == 8)
            || opcodes.get(mmas) != Some(&"wgmma.commit_group.sync.aligned")
        {
            return Err(format!(
                "a fence not followed by 4 (or 8 stacked) multiplies and a commit: {opcodes:?}"
            ));
        }
        let tiles = mmas / 4;
        let mut accumulators = Vec::new();
        for t in 0..tiles {
            let first = lists(region[t]);
            let Some(list) = first.first() else {
                return Err(format!("no register list in `{}`", region[t].operands));
            };
            if list.matches("%r").count() < 32 {
                return Err(format!("too few accumulators: {list}"));
            }
            for mma in region[..mmas].iter().skip(t).step_by(tiles) {
                if lists(mma).first() != Some(list) {
                    return Err("a tile's four multiplies name different accumulators".into());
                }
            }
            accumulators.extend(registers(list));
        }
        let distinct: std::collections::HashSet<&String> = accumulators.iter().collect();
        if distinct.len() != accumulators.len() {
            return Err("two stacked tiles share accumulators".into());
        }
        if opcodes[0].ends_with(".f16.f16") {
            found.fp16 += 1;
        }
        found.stacked += usize::from(tiles == 2);
        // A from registers: a second register list (four registers) before B's descriptor.
        let mut a_registers = Vec::new();
        if lists(region[0]).len() > 1 {
            found.register_a += 1;
            for mma in &region[..mmas] {
                a_registers.extend(registers(&lists(mma)[1]));
            }
        }
        regions.push(Region {
            mmas: i + 1..i + 1 + mmas,
            commit: i + 1 + mmas,
            accumulators,
            a_registers,
        });
        found.regions += 1;
        i += mmas + 2;
    }
    // The control flow: each instruction's successors (a branch's label, the next one unless
    // the branch is unconditional; none after `ret` or `exit`).
    let target = |label: &str| {
        labels
            .iter()
            .find(|(_, l)| l == label.trim())
            .map(|(at, _)| *at)
            .ok_or_else(|| format!("a branch to an unknown label `{label}`"))
    };
    let mut successors: Vec<Vec<usize>> = Vec::with_capacity(ptx.len());
    for (j, instr) in ptx.iter().enumerate() {
        let next = (j + 1 < ptx.len()).then_some(j + 1);
        successors.push(if instr.opcode.starts_with("bra") {
            let to = target(&instr.operands)?;
            match (instr.predicate.is_some(), next) {
                (true, Some(next)) => vec![to, next],
                _ => vec![to],
            }
        } else if instr.opcode == "ret" || instr.opcode == "exit" {
            Vec::new()
        } else {
            next.into_iter().collect()
        });
    }
    // Which region each multiply and commit belongs to.
    let mut owner = vec![None; ptx.len()];
    for (r, region) in regions.iter().enumerate() {
        for j in region.mmas.clone() {
            owner[j] = Some(r);
        }
        owner[region.commit] = Some(r);
    }
    for region in &regions {
        // Paths from just after the commit: (instruction, groups committed since), the count
        // capped past the largest wait (7).
        if successors[region.commit].is_empty() {
            return Err(format!(
                "the multiplies at {} may be in flight when the kernel returns",
                region.mmas.start
            ));
        }
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<(usize, usize, bool)> = successors[region.commit]
            .iter()
            .map(|&j| (j, 0, false))
            .collect();
        while let Some((j, later, other_tile)) = stack.pop() {
            if !seen.insert((j, later, other_tile)) {
                continue;
            }
            let instr = &ptx[j];
            let (mut later, mut other_tile) = (later, other_tile);
            if instr.opcode == "wgmma.wait_group.sync.aligned" {
                let n: usize = instr
                    .operands
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.trim_end_matches(';').parse().ok())
                    .ok_or_else(|| format!("a wait without a count: `{}`", instr.operands))?;
                if n <= later {
                    found.two_tiles_in_flight |= n >= 1 && other_tile;
                    continue; // complete on this path
                }
            } else if let Some(g) = owner[j].map(|g| &regions[g]) {
                if g.commit == j {
                    later = (later + 1).min(8);
                    other_tile |= g.accumulators != region.accumulators;
                }
                if g.accumulators != region.accumulators {
                    check_untouched(instr, region, &names_register)?;
                }
            } else {
                check_untouched(instr, region, &names_register)?;
            }
            if successors[j].is_empty() {
                return Err(format!(
                    "the multiplies at {} may be in flight when the kernel returns",
                    region.mmas.start
                ));
            }
            stack.extend(successors[j].iter().map(|&s| (s, later, other_tile)));
        }
    }
    found.keeps_one_in_flight = ptx
        .iter()
        .any(|i| i.opcode == "wgmma.wait_group.sync.aligned" && i.operands.trim() == "1");
    Ok(found)
}

/// The checker itself: a k-tile loop kept in flight passes; the same loop with a copy of an
/// accumulator before its wait, or with the wait missing, fails, naming what broke it.
#[test]
fn the_accumulator_rule_check_catches_a_touched_register() {
    let instr = |opcode: &str, operands: &str| PtxInstr {
        predicate: None,
        opcode: opcode.to_string(),
        operands: operands.to_string(),
    };
    let acc: Vec<String> = (0..32).map(|i| format!("%r{}", 100 + i)).collect();
    let list = format!("{{{}}}", acc.join(", "));
    let k_tile = |out: &mut Vec<PtxInstr>| {
        out.push(instr("wgmma.fence.sync.aligned", ""));
        for _ in 0..4 {
            out.push(instr(
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
                &format!("{list}, %rd1, %rd2, p, 1, 1, 0, 0"),
            ));
        }
        out.push(instr("wgmma.commit_group.sync.aligned", ""));
    };
    let mut good = Vec::new();
    k_tile(&mut good);
    good.push(instr(
        "mbarrier.try_wait.parity.shared::cta.b64",
        "p, [%r5], %r6",
    ));
    k_tile(&mut good);
    good.push(instr("wgmma.wait_group.sync.aligned", "1"));
    good.push(instr("wgmma.wait_group.sync.aligned", "0"));
    good.push(instr("cvt.rn.bf16x2.f32", "%r7, %r101, %r100"));
    let found = accumulator_rule(&good, &[]).expect("the clean loop passes");
    assert_eq!((found.regions, found.keeps_one_in_flight), (2, true));

    let mut touched = good.clone();
    touched.insert(7, instr("mov.b32", "%r900, %r131"));
    let err = accumulator_rule(&touched, &[])
        .err()
        .expect("a copy in flight fails");
    assert!(err.contains("%r131"), "{err}");
    // `%r1000` is not `%r100`: only whole register names count.
    let mut other = good.clone();
    other.insert(7, instr("mov.b32", "%r1000, %r1001"));
    assert!(accumulator_rule(&other, &[]).is_ok());
    let unwaited: Vec<PtxInstr> = good[..good.len() - 2].to_vec();
    assert!(accumulator_rule(&unwaited, &[]).is_err());

    // A loop laid out with its wait first (as attention's is): the walk follows the branch
    // back to the wait, so the loop passes; a copy of an accumulator before that wait fails.
    let looped = |first: PtxInstr| {
        let mut out = vec![first, instr("wgmma.wait_group.sync.aligned", "0")];
        out.push(instr("cvt.rn.bf16x2.f32", "%r7, %r101, %r100"));
        k_tile(&mut out);
        out.push(instr("bra.uni", "$L__BB0_1"));
        out
    };
    let labels = [(0, "$L__BB0_1".to_string())];
    let clean = looped(instr("mov.b32", "%r5, %r6"));
    assert!(accumulator_rule(&clean, &labels).is_ok());
    let err = accumulator_rule(&looped(instr("mov.b32", "%r900, %r101")), &labels)
        .err()
        .expect("a copy before the loop's wait fails");
    assert!(err.contains("%r101"), "{err}");
    // In PTX order alone the region would reach the end unwaited.
    assert!(accumulator_rule(&clean[..clean.len() - 1], &labels).is_err());

    // A from registers: writing one of them while the multiply reads it fails.
    let a_list = "{%r200, %r201, %r202, %r203}";
    let mut with_a = vec![instr("wgmma.fence.sync.aligned", "")];
    for _ in 0..4 {
        with_a.push(instr(
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
            &format!("{list}, {a_list}, %rd2, p, 1, 1, 0"),
        ));
    }
    with_a.push(instr("wgmma.commit_group.sync.aligned", ""));
    let mut written = with_a.clone();
    written.push(instr("mov.b32", "%r202, 0"));
    written.push(instr("wgmma.wait_group.sync.aligned", "0"));
    with_a.push(instr("wgmma.wait_group.sync.aligned", "0"));
    assert_eq!(
        accumulator_rule(&with_a, &[]).map(|f| f.register_a).ok(),
        Some(1)
    );
    let err = accumulator_rule(&written, &[])
        .err()
        .expect("a write of an A register in flight fails");
    assert!(err.contains("A register %r202"), "{err}");
}

/// ptxas assembles the sm_90a module without a warning: in particular none saying that it
/// serialized `wgmma.mma_async` instructions (what it does when it cannot prove the
/// accumulators untouched between a multiply and its wait).
#[test]
fn ptxas_does_not_serialize_any_wgmma() {
    let ptxas = ptx_builder::nvtools::require(ptx_builder::nvtools::Tool::Ptxas)
        .unwrap_or_else(|e| panic!("ptxas is needed for this test: {e}"));
    let dir = std::env::temp_dir().join(format!("wgmma-warnings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("sm_90a.ptx");
    std::fs::write(&ptx, host::device_code::module_text(Arch::Sm90a)).unwrap();
    let output = std::process::Command::new(ptxas)
        .args(["-v", "-arch=sm_90a"])
        .arg(&ptx)
        .arg("-o")
        .arg(dir.join("sm_90a.cubin"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    let warnings: Vec<&str> = report
        .lines()
        .filter(|l| l.to_lowercase().contains("warn"))
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(report.contains("bf16_gemm_ws_cooperative"), "{report}");
}

/// The cluster instructions (DSMEM, cluster barriers, remote arrivals, multicast) are in the
/// sm_90 PTX only: the sm_80 module has none, and none of the DSMEM kernels.
#[test]
fn cluster_instructions_are_in_the_sm90_ptx_only() {
    let marks = [
        "%cluster_",
        "%clusterid",
        "%is_explicit_cluster",
        "barrier.cluster.",
        "mapa.",
        "shared::cluster",
        "st.async",
        "red.async",
        "multicast::cluster",
        "fence.acq_rel.cluster",
    ];
    let sm80 = host::device_code::module_text(Arch::Sm80);
    for mark in marks {
        assert!(!sm80.contains(mark), "`{mark}` in the sm_80 PTX");
    }
    assert!(!sm80.contains("dsmem_"), "a DSMEM kernel in the sm_80 PTX");
    let sm90 = host::device_code::module_text(Arch::Sm90);
    for mark in marks {
        assert!(sm90.contains(mark), "`{mark}` missing from the sm_90 PTX");
    }
}

//! The kernel pickers of `gpu-kernels` against what the H200 measured: at every shape of the
//! stored runs named below, the family or schedule `Gemm32` and `Gemm16` pick must be the
//! one measured fastest, or the shape must be listed among the known losses with how far the
//! pick was behind (to 0.1 point). A change to a cost model that wins or loses a shape, a new
//! run with other winners, or a loss that grew or shrank fails here, naming the shape.
//!
//! When it fails after a deliberate change: the message prints every shape's verdict as a
//! line of the loss table; take the new lines and say in the change why they are acceptable.

use gpu_kernels::GemmShape;
use gpu_kernels::gemm16::Gemm16Schedule;
use gpu_kernels::gemm32::Gemm32Family;
use serde_json::Value;
use std::path::PathBuf;

/// The H200's SM count: the pickers' argument on the GPU that measured.
const H200_SMS: u32 = 132;

/// A shape where the picker's choice lost to another candidate: the run file, the size as the
/// run writes it, the pick, the measured winner, and how much longer the pick took (percent).
type Loss = (&'static str, &'static str, &'static str, &'static str, f64);

const GEMM32_RUNS: &[&str] = &["gemm32-final-2026-12-04-h200.json"];

/// `Gemm32Family::for_shape` where it is not the fastest family (the fit's cost: 98.9% of
/// the best on average, docs/results.md "What a user calls: Gemm32"). The model's waves and
/// per-block costs do not see 1-5% effects of tile counts near a wave's edge (1280^3-3072^3),
/// nor the larger ones where a split family's reduction is cheaper than it thinks (M or N of
/// one or two tiles: 96x8192x8192, 256x256x16384) or the 5-stage pipeline's occupancy with
/// short-wide shapes (1000x4000x2000).
const GEMM32_LOSSES: &[Loss] = &[
    (
        "gemm32-final-2026-12-04-h200.json",
        "1280x1280x1280",
        "gemm_split_k_2",
        "gemm_thread_pipeline_5",
        0.0,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "1664x1664x1664",
        "gemm_split_k_2x2",
        "gemm_split_k_1x8_64x64",
        0.9,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "1792x1792x1792",
        "gemm_split_k_2x2",
        "gemm_split_k_1x8_64x64",
        0.9,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "2560x2560x2560",
        "gemm_thread_pipeline_5",
        "gemm_split_k_1x8_64x64",
        5.4,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "3072x3072x3072",
        "gemm_split_k_2",
        "gemm_thread_pipeline_5",
        3.8,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "1000x4000x2000",
        "gemm_thread_pipeline_5",
        "gemm_split_k_2",
        8.8,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "256x256x16384",
        "gemm_split_k_8x8_64x64",
        "gemm_split_k_4x8_64x64",
        5.5,
    ),
    (
        "gemm32-final-2026-12-04-h200.json",
        "96x8192x8192",
        "gemm_split_k_1x8_64x64",
        "gemm_split_k_2x2",
        7.9,
    ),
];

const GEMM16_RUNS: &[&str] = &[
    "bf16-gemm-gemm16-dispatch-2026-12-04-h200.json",
    "bf16-gemm-schedule-fit-2026-12-04-h200.json",
    "bf16-gemm-schedule-fit-k-2026-12-04-h200.json",
];

/// `Gemm16Schedule::for_shape` where the other schedule was faster (BF16, B n x k): within
/// 2.5% where K is short (1024) or N narrow (512), the cooperative epilogue costing less than
/// the model's half k-tile, and 4.1% at 1536^3 (144 cooperative tiles: 12 SMs take two, where
/// ping-pong's 144 x 2 halves even out better than the model's waves say).
const GEMM16_LOSSES: &[Loss] = &[
    (
        "bf16-gemm-gemm16-dispatch-2026-12-04-h200.json",
        "1536x1536x1536",
        "bf16_gemm_ws_cooperative",
        "bf16_gemm_ws_pingpong",
        4.1,
    ),
    (
        "bf16-gemm-gemm16-dispatch-2026-12-04-h200.json",
        "8192x4096x1024",
        "bf16_gemm_ws_cooperative",
        "bf16_gemm_ws_pingpong",
        0.7,
    ),
    (
        "bf16-gemm-gemm16-dispatch-2026-12-04-h200.json",
        "4096x4096x1024",
        "bf16_gemm_ws_cooperative",
        "bf16_gemm_ws_pingpong",
        2.4,
    ),
    (
        "bf16-gemm-schedule-fit-2026-12-04-h200.json",
        "8192x8192x1024",
        "bf16_gemm_ws_cooperative",
        "bf16_gemm_ws_pingpong",
        2.3,
    ),
    (
        "bf16-gemm-schedule-fit-2026-12-04-h200.json",
        "8192x512x4096",
        "bf16_gemm_ws_cooperative",
        "bf16_gemm_ws_pingpong",
        1.3,
    ),
    (
        "bf16-gemm-schedule-fit-k-2026-12-04-h200.json",
        "5000x5000x2048",
        "bf16_gemm_ws_pingpong",
        "bf16_gemm_ws_cooperative",
        2.1,
    ),
];

fn run(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/runs")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn shape_of(size: &str) -> GemmShape {
    let dims: Vec<u32> = size.split('x').map(|d| d.parse().unwrap()).collect();
    let [m, n, k] = dims[..] else {
        panic!("`{size}` is not MxNxK")
    };
    GemmShape { m, n, k }
}

/// A loss as the runs give it: file, size, the pick, the winner, the loss in %.
type Verdict = (String, String, String, String, f64);

/// Every (file, size, pick, winner, loss %) where the pick is not the fastest of
/// `candidates` that ran and passed; shapes where a candidate is missing are skipped only
/// if the pick is missing too (none of the runs above has such a shape).
fn verdicts(
    files: &[&'static str],
    candidates: &[&str],
    pick: impl Fn(GemmShape) -> &'static str,
) -> (usize, Vec<Verdict>) {
    let mut shapes = 0;
    let mut losses = Vec::new();
    for file in files {
        let report = run(file);
        for problem in report["problems"].as_array().unwrap() {
            let size = problem["size"].as_str().unwrap();
            let time = |name: &str| {
                problem["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["name"] == name && r["passed"] == true)
                    .and_then(|r| r["median_ms"].as_f64())
            };
            let chosen = pick(shape_of(size));
            let chosen_ms =
                time(chosen).unwrap_or_else(|| panic!("{file} {size}: `{chosen}` did not run"));
            let (winner, winner_ms) = candidates
                .iter()
                .filter_map(|&c| Some((c, time(c)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            shapes += 1;
            if winner != chosen {
                let loss = (chosen_ms / winner_ms - 1.0) * 100.0;
                losses.push((
                    file.to_string(),
                    size.to_string(),
                    chosen.to_string(),
                    winner.to_string(),
                    loss,
                ));
            }
        }
    }
    (shapes, losses)
}

/// Fails unless `found` and `expected` list the same shapes with the same picks, winners
/// and losses (to 0.1 point), printing the table that would match.
fn assert_losses(
    what: &str,
    shapes: usize,
    found: &[(String, String, String, String, f64)],
    expected: &[Loss],
) {
    let key = |f: &str, s: &str| format!("{f} {s}");
    let mut wrong = Vec::new();
    for (file, size, pick, winner, loss) in found {
        match expected.iter().find(|e| key(e.0, e.1) == key(file, size)) {
            Some(e) if e.2 == pick && e.3 == winner && (e.4 - loss).abs() < 0.05 => {}
            Some(e) => wrong.push(format!(
                "{size} ({file}): listed as {} behind {} by {:.1}%, measured {pick} behind \
                 {winner} by {loss:.1}%",
                e.2, e.3, e.4
            )),
            None => wrong.push(format!(
                "{size} ({file}): {pick} picked, {winner} measured faster by {loss:.1}%: not \
                 listed as a loss"
            )),
        }
    }
    for e in expected {
        if !found.iter().any(|f| key(&f.0, &f.1) == key(e.0, e.1)) {
            wrong.push(format!(
                "{} ({}): listed as a loss, but the pick {} is the fastest measured there",
                e.1, e.0, e.2
            ));
        }
    }
    let table: Vec<String> = found
        .iter()
        .map(|(f, s, p, w, l)| format!("    (\"{f}\", \"{s}\", \"{p}\", \"{w}\", {l:.1}),"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{what}: {} of {shapes} shapes disagree with the loss table:\n{}\n\nthe measured \
         losses, as the table would list them:\n{}",
        wrong.len(),
        wrong.join("\n"),
        table.join("\n")
    );
    // The losses are the exception: a picker that lost at most shapes would be no picker.
    assert!(
        found.len() * 4 <= shapes,
        "{what}: the pick lost at {} of {shapes} shapes",
        found.len()
    );
}

#[test]
fn gemm32_picks_the_family_measured_fastest_or_a_listed_loss() {
    let names: Vec<&str> = Gemm32Family::ALL
        .iter()
        .filter(|f| {
            f.predicted_micros(shape_of("1024x1024x1024"), H200_SMS)
                .is_some()
        })
        .map(|f| f.kernel().name)
        .collect();
    let (shapes, found) = verdicts(GEMM32_RUNS, &names, |s| {
        Gemm32Family::for_shape(s, H200_SMS, true).kernel().name
    });
    assert!(shapes >= 34, "{shapes} shapes");
    assert_losses("Gemm32", shapes, &found, GEMM32_LOSSES);
}

#[test]
fn gemm16_picks_the_schedule_measured_faster_or_a_listed_loss() {
    let name = |s: Gemm16Schedule| match s {
        Gemm16Schedule::Cooperative => "bf16_gemm_ws_cooperative",
        Gemm16Schedule::PingPong => "bf16_gemm_ws_pingpong",
    };
    let candidates = [
        name(Gemm16Schedule::Cooperative),
        name(Gemm16Schedule::PingPong),
    ];
    let (shapes, found) = verdicts(GEMM16_RUNS, &candidates, |s| {
        name(Gemm16Schedule::for_shape(s, H200_SMS))
    });
    assert!(shapes >= 60, "{shapes} shapes");
    assert_losses("Gemm16", shapes, &found, GEMM16_LOSSES);
}

//! The host half's checks without a GPU: sizes, chains, expected sums.

use super::*;

#[test]
fn sizes_parse_or_say_why_not() {
    assert_eq!(parse_reach("4:1").unwrap(), Reach::new(4, 1));
    assert_eq!(parse_reach(" 4 : 3 : 8 ").unwrap().steps, Some(8));
    assert!(parse_reach("4:1:0").unwrap_err().contains("steps"));
    assert_eq!(parse_reach("8").unwrap().distance, 1);
    assert!(parse_reach("1").unwrap_err().contains("2 to 16"));
    assert!(parse_reach("4:4").unwrap_err().contains("1 to 3"));
    assert!(parse_reach("4:0").unwrap_err().contains("1 to 3"));
    assert!(parse_reach("17:1").unwrap_err().contains("2 to 16"));
    assert!(parse_reach("x:1").unwrap_err().contains("like 4:1"));
    assert!(parse_reach("4:x").unwrap_err().contains("like 4:1"));
    assert_eq!(
        parse_reach("16:8").unwrap().to_string(),
        "cluster 16, peer +8"
    );
}

#[test]
fn peers_and_feeders_stay_in_the_cluster_and_pair_up() {
    let reach = Reach::new(4, 3);
    for b in 0..16 {
        let (peer, feeder) = peer_and_feeder(b, reach);
        assert_eq!(peer / 4, b / 4);
        assert_eq!(feeder / 4, b / 4);
        assert_eq!(peer_and_feeder(peer, reach).1, b);
    }
    assert_eq!(peer_and_feeder(5, reach), (4, 6));
}

#[test]
fn chains_visit_every_slot_once() {
    for slots in [super::super::SHORT_CHAIN_SLOTS, 1 << 12] {
        let mut seen = vec![false; slots as usize];
        let mut slot = 0;
        for _ in 0..slots {
            assert!(!seen[slot as usize]);
            seen[slot as usize] = true;
            slot = chain_next(slot, slots);
        }
        assert_eq!(slot, 0);
    }
    let chain = chain_words(ChainKind::L2);
    assert_eq!(chain.len(), 4096 * 32);
    assert_eq!(chain[32 * 5], chain_next(5, 4096));
    assert_eq!(chain_end(0, 1, 4096, 4096), 0);
    assert_ne!(chain_end(0, 1, 4096, 99), chain_end(0, 1, 4096, 100));
    // The kernels' jump lands where walking does.
    for (steps, slots) in [(0, 4096), (1, 4096), (12345, 4096), (5_000_000, 1 << 23)] {
        let walked = (0..steps).fold(0, |slot, _| chain_next(slot, slots));
        assert_eq!(super::super::chain_jump(steps, slots), walked, "{steps}");
    }
    assert_eq!(
        chain_end(3, 132, 1 << 23, 10),
        (0..10).fold(super::super::chain_start(3, 132, 1 << 23), |s, _| {
            chain_next(s, 1 << 23)
        })
    );
}

#[test]
fn expected_sums_follow_each_mode() {
    let reach = Reach::new(2, 1);
    let slice_sums: Vec<u32> = (0..GLOBAL_SLICES * THREADS).collect();
    let local = expected_sums(BandwidthMode::LocalRead, reach, 2, &slice_sums);
    let remote = expected_sums(BandwidthMode::RemoteRead, reach, 2, &slice_sums);
    // In a cluster of two, each block reads the other's buffer.
    let t = THREADS as usize;
    assert_eq!(remote[..t], local[t..]);
    assert_eq!(remote[t..], local[..t]);
    let dram = expected_sums(BandwidthMode::DramRead, reach, 2, &slice_sums);
    assert_ne!(
        dram,
        expected_sums(BandwidthMode::L2Read, reach, 2, &slice_sums)
    );
}

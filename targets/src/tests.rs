use crate::Target;

/// Device names and memory sizes as the driver reports them, from the
/// benchmark reports in docs/benchmarks.
const H100_DEVICE: (&str, u64) = ("NVIDIA H100 80GB HBM3", 85_017_493_504);
const H200_DEVICE: (&str, u64) = ("NVIDIA H200", 150_109_880_320);

#[test]
fn the_h100s_facts() {
    let t = Target::H100;
    assert_eq!((t.name, t.part, t.model, t.sm), ("h100", "NVIDIA H100 SXM", "H100", "sm_90a"));
    assert_eq!((t.sms, t.smem_per_cta_bytes, t.smem_per_sm_bytes), (132, 232_448, 233_472));
    assert_eq!((t.registers_per_sm, t.max_registers_per_thread), (65_536, 255));
    assert_eq!((t.l2_bytes, t.hbm_bytes, t.hbm_bytes_per_s), (52_428_800, 85_899_345_920, 3_350_000_000_000));
    assert_eq!(t.l2_sector_bytes, 32);
    assert_eq!((t.bf16_flops, t.fp8_flops, t.boost_clock_hz), (989_000_000_000_000, 1_979_000_000_000_000, 1_980_000_000));
    assert_eq!((t.max_cluster_size, t.active_clusters), (8, [(2, 66), (4, 30), (8, 15)]));
}

#[test]
fn the_h200_is_the_h100_with_more_and_faster_memory() {
    let t = Target::H200;
    assert_eq!((t.name, t.part, t.model, t.sm), ("h200", "NVIDIA H200", "H200", "sm_90a"));
    assert_eq!((t.hbm_bytes, t.hbm_bytes_per_s), (151_397_597_184, 4_800_000_000_000));
    assert_eq!(t.l2_bytes, 62_914_560, "the L2 the driver reports on the H200");
    let memory = |t: Target| Target { name: "", part: "", model: "", l2_bytes: 0, hbm_bytes: 0, hbm_bytes_per_s: 0, ..t };
    assert_eq!(memory(Target::H200), memory(Target::H100));
}

#[test]
fn the_default_is_the_h200() {
    assert_eq!(Target::DEFAULT, Target::H200);
    assert_eq!(<&Target>::default(), &Target::H200);
}

#[test]
fn targets_are_found_by_name() {
    assert_eq!(Target::NAMES, ["h100", "h200"]);
    for t in Target::ALL {
        assert_eq!(Target::from_name(t.name), Ok(t));
    }
    assert_eq!(Target::from_name("h300"), Err("unknown target 'h300' (known targets: h100, h200)".to_string()));
    assert!(Target::from_name("H100").is_err(), "names are lower case");
    assert!(Target::from_name("").is_err());
}

#[test]
fn devices_are_recognised_by_name_and_memory() {
    let (h100, h100_memory) = H100_DEVICE;
    let (h200, h200_memory) = H200_DEVICE;
    assert!(Target::H100.matches_device(h100, h100_memory));
    assert!(Target::H200.matches_device(h200, h200_memory));
    assert!(!Target::H100.matches_device(h200, h200_memory));
    assert!(!Target::H200.matches_device(h100, h100_memory));
    assert_eq!(Target::of_device(h100, h100_memory), Some(&Target::H100));
    assert_eq!(Target::of_device(h200, h200_memory), Some(&Target::H200));
    // Spellings the driver may use: case, separators, a form factor.
    assert!(Target::H100.matches_device("NVIDIA H100-SXM5-80GB", h100_memory));
    assert!(Target::H200.matches_device("nvidia h200 sxm 141gb", h200_memory));
}

#[test]
fn a_device_of_another_model_or_memory_is_no_target() {
    let (h200, h200_memory) = H200_DEVICE;
    // The name alone, or the memory alone, is not enough.
    assert!(!Target::H200.matches_device(h200, 85_017_493_504));
    assert!(!Target::H200.matches_device("NVIDIA GH200 480GB", h200_memory));
    assert!(!Target::H100.matches_device("NVIDIA A100-SXM4-80GB", 85_031_714_816));
    // An H100 NVL (94 GB) has other SMs and bandwidth than the SXM part.
    assert_eq!(Target::of_device("NVIDIA H100 NVL", 99_857_989_632), None);
    // A MIG slice reports its own share of the memory.
    assert_eq!(Target::of_device(h200, 18 << 30), None);
    assert_eq!(Target::of_device("", 0), None);
}

#[test]
fn a_balanced_persistent_grid_keeps_the_turns_on_the_fewest_clusters() {
    use crate::fewest_keeping_turns;
    // 200 tiles on 132 SMs take two turns either way: 100 CTAs do it.
    assert_eq!(fewest_keeping_turns(200, 132), 100);
    // One turn: one CTA a tile; two whole turns: every SM; three turns of 265: 89 CTAs.
    assert_eq!(fewest_keeping_turns(64, 132), 64);
    assert_eq!(fewest_keeping_turns(264, 132), 132);
    assert_eq!(fewest_keeping_turns(265, 132), 89);
    // Never none, never more than there are.
    assert_eq!(fewest_keeping_turns(0, 132), 1);
    assert_eq!(fewest_keeping_turns(5, 0), 1);
}

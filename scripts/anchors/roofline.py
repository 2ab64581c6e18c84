"""A GEMM's least HBM traffic and its roofline time, as tilec-report counts
them (report/src/schema.rs, `Shape::roofline_bytes`), for the anchor
harnesses and comparisons; and the geometric mean they summarise with."""
import math

# The H200's HBM bandwidth and dense FP8 peak (docs/targets.md).
HBM_BYTES_PER_S = 4.8e12
FP8_PEAK = 1979e12
# Block-scaled FP8's scale block: one scale per row of A and per 128x128 block of B, per 128 of K.
SCALE_BLOCK = 128


def gemm_bytes(m, n, k, dtype):
    """(read, written): A and B read (BF16 or FP8, with block-scaled FP8's
    f32 scales), C written in BF16."""
    if dtype == "bf16":
        return 2 * (m * k + n * k), 2 * m * n
    k_blocks = -(-k // SCALE_BLOCK)
    scales = 4 * (m * k_blocks + -(-n // SCALE_BLOCK) * k_blocks)
    return m * k + n * k + scales, 2 * m * n


def fp8_roofline_s(m, n, k):
    """Block-scaled FP8's time at the lower of the H200's FP8 peak and what
    its HBM moves."""
    read, written = gemm_bytes(m, n, k, "fp8")
    return max(2 * m * n * k / FP8_PEAK, (read + written) / HBM_BYTES_PER_S)


def geomean(values):
    """The geometric mean, or None of nothing."""
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

#!/usr/bin/env python3
"""Draws GEMM shapes MxNxK for judging config selection off the benchmark, one a line.

The same seed always gives the same shapes, so a set is named by its seed: the cost model's
constants are fitted on one seed's shapes (the training set) and judged on another's (the
validation set, docs/cost-model.md). The draw follows what a user brings:
  - M log-uniform from 1 to 16384 (decode sizes to large batches), N and K log-uniform from
    256 to 32768;
  - a third of the shapes with N and K not multiples of 64 (K stays a multiple of 16, so that
    rows of A and B are 16-byte aligned for TMA in both BF16 and FP8; N a multiple of 8);
  - a fifth with a deep K, at least 8 x max(M, N) (K drawn up to 65536 for those).
With --decode the draw is decode-time GEMMs instead (issue 47's set): M log-uniform from 1 to 16
(the tokens of a decode step), N and K log-uniform from 2048 to 16384 in steps of 256 (an LLM
layer's widths).
usage: draw-shapes.py --seed S --count N [--decode]"""
import argparse
import math
import random


def log_uniform(rng, lo, hi):
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def round_to(x, step, lo):
    return max(lo, step * int(round(x / step)))


def draw(seed, count):
    rng = random.Random(seed)
    shapes = []
    for i in range(count):
        deep = i % 5 == 0
        odd = i % 3 == 1
        m = log_uniform(rng, 1, 16384)
        n = log_uniform(rng, 256, 32768)
        if deep:
            # Deep K: at least 8 x max(M, N), so M and N come from a smaller range.
            m = log_uniform(rng, 1, 4096)
            n = log_uniform(rng, 256, 4096)
            k = log_uniform(rng, 8 * max(m, n), max(65536, 8 * max(m, n)))
        else:
            k = log_uniform(rng, 256, 32768)
        if odd:
            n = round_to(n, 8, 256)
            k = round_to(k, 16, 256)
            # Not a multiple of 64: nudge by one step where rounding landed on one.
            n += 8 if n % 64 == 0 else 0
            k += 16 if k % 64 == 0 else 0
        else:
            n = round_to(n, 64, 256)
            k = round_to(k, 64, 256)
        shapes.append((m, n, k))
    return shapes


def draw_decode(seed, count):
    rng = random.Random(seed)
    return [(log_uniform(rng, 1, 16), round_to(log_uniform(rng, 2048, 16384), 256, 2048), round_to(log_uniform(rng, 2048, 16384), 256, 2048)) for _ in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--decode", action="store_true", help="decode-time shapes: M from 1 to 16, N and K of LLM layers")
    args = parser.parse_args()
    for m, n, k in (draw_decode if args.decode else draw)(args.seed, args.count):
        print(f"{m}x{n}x{k}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Finds the LLVM passes tilec's kernels do without: takes passes out of an LLVM pipeline one at
a time and keeps each removal that leaves the PTX of the quick kernel corpus
(scripts/ptx-corpus.sh --quick) byte for byte as the reference pipeline gives it.

    scripts/prune-llvm-pipeline.py START_FILE [--reference PIPELINE] [--passes a,b,...]

START_FILE holds the pipeline to prune, in LLVM's textual form, e.g. O3's as LLVM prints it:
    opt -mtriple=nvptx64-nvidia-cuda -mcpu=sm_90a -passes='default<O3>' \\
        -print-pipeline-passes any.ll -o /dev/null
(drop the trailing `verify,print` or `BitcodeWriterPass`). The reference is `default<O3>`
unless given. Every pass is tried, last first, unless --passes names the ones to try. The
pruned pipeline is printed; check it on the whole corpus (scripts/ptx-corpus.sh, both
pipelines, then compare the folders) before it replaces backend/src/llvm_pipeline.rs.
Each try is a quick-corpus compile, a few seconds; build tilec (release) first.
"""
import argparse
import copy
import filecmp
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse(text):
    """A pipeline as a list of [name, children] (children None for a pass)."""
    pos = 0

    def node():
        nonlocal pos
        start, angle = pos, 0
        while pos < len(text):
            c = text[pos]
            if c == '<':
                angle += 1
            elif c == '>':
                angle -= 1
            elif angle == 0 and c in ',()':
                break
            pos += 1
        name = text[start:pos]
        if pos < len(text) and text[pos] == '(':
            pos += 1
            kids = []
            while text[pos] != ')':
                kids.append(node())
                if text[pos] == ',':
                    pos += 1
            pos += 1
            return [name, kids]
        return [name, None]

    nodes = []
    while pos < len(text):
        nodes.append(node())
        if pos < len(text) and text[pos] == ',':
            pos += 1
    return nodes


def show(nodes):
    """The text of a pipeline; an adaptor left with no passes goes too."""
    parts = []
    for name, kids in nodes:
        if kids is None:
            parts.append(name)
        elif kids:
            inner = show(kids)
            if inner:
                parts.append(f'{name}({inner})')
    return ','.join(parts)


def passes(nodes, path=()):
    for i, (name, kids) in enumerate(nodes):
        if kids is None:
            yield path + (i,), name
        else:
            yield from passes(kids, path + (i,))


def without(nodes, path):
    pruned = copy.deepcopy(nodes)
    level = pruned
    for i in path[:-1]:
        level = level[i][1]
    del level[path[-1]]
    return pruned


def corpus(out, pipeline):
    subprocess.run(['bash', os.path.join(ROOT, 'scripts/ptx-corpus.sh'), '--quick', out,
                    f'--llvm-pass-pipeline={pipeline}'], check=True, cwd=ROOT)


def same(reference, out):
    names = sorted(f for f in os.listdir(reference) if f.endswith('.ptx'))
    return all(os.path.getsize(os.path.join(reference, f)) > 0 and
               filecmp.cmp(os.path.join(reference, f), os.path.join(out, f), shallow=False)
               for f in names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('start')
    ap.add_argument('--reference', default='default<O3>')
    ap.add_argument('--passes', help='the pass names to try, comma-separated (default: all)')
    args = ap.parse_args()
    text = open(args.start).read().strip()
    nodes = parse(text)
    if show(nodes) != text:
        sys.exit('prune-llvm-pipeline: cannot read the pipeline back as written')
    with tempfile.TemporaryDirectory() as tmp:
        reference = os.path.join(tmp, 'reference')
        corpus(reference, args.reference)
        names = args.passes.split(',') if args.passes else list(dict.fromkeys(n.split('<')[0] for _, n in passes(nodes)))
        for name in names:
            for path in reversed([p for p, n in passes(nodes) if n.split('<')[0] == name]):
                trial = without(nodes, path)
                out = os.path.join(tmp, 'trial')
                subprocess.run(['rm', '-rf', out], check=True)
                corpus(out, show(trial))
                kept = not same(reference, out)
                print(f"{name} at {'.'.join(map(str, path))}: {'kept' if kept else 'removed'}", file=sys.stderr, flush=True)
                if not kept:
                    nodes = trial
    print(show(nodes))


if __name__ == '__main__':
    main()

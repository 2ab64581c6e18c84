"""Single calls timed with CUDA events as tilec-bench times them (DESIGN
section 8), for the anchor harnesses that run beside it through PyTorch:
inputs rotated so the L2 does not hold them, contenders in interleaved
rounds, the stream held while the host enqueues a batch."""
import statistics

import torch

# Bytes the rotated input sets fill at least: past the L2 (50 MB) twice.
ROTATION_BYTES = 120 << 20


def time_events(sets, contenders, rounds):
    """Median ms of each contender's single calls, rounds interleaved, each
    call on the next input set; the stream is held by a sleep kernel while
    the host enqueues a batch, so host launch time stays out."""
    names = list(contenders)
    times = {name: [] for name in names}
    call = 0
    for _ in range(3):
        for name in names:
            contenders[name](sets[call % len(sets)])
            call += 1
    torch.cuda.synchronize()
    batch = 10
    done = 0
    while done < rounds:
        n = min(batch, rounds - done)
        marks = []
        torch.cuda._sleep(int(2e6 + 5e5 * n * len(names)))
        for r in range(n):
            order = names if (done + r) % 2 == 0 else names[::-1]
            for name in order:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                contenders[name](sets[call % len(sets)])
                end.record()
                call += 1
                marks.append((name, start, end))
        torch.cuda.synchronize()
        for name, start, end in marks:
            times[name].append(start.elapsed_time(end))
        done += n
    return {name: statistics.median(t) for name, t in times.items()}, times

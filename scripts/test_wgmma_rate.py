"""Tests of wgmma-rate.py's generated CUDA (no nvcc here: the source is read, not built)."""
import re
import subprocess
import sys
import unittest
from pathlib import Path

SCRIPT = Path(__file__).with_name("wgmma-rate.py")


def kernels(source):
    """Each generated kernel's name and body, in order."""
    parts = re.split(r"\n__global__ void __launch_bounds__\(\d+, 1\) ", source)[1:]
    return [(p.split("(", 1)[0], p) for p in parts]


class WgmmaRate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        result = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        cls.source = result.stdout

    def test_each_wgmma_names_its_accumulators_descriptors_and_scale(self):
        found = kernels(self.source)
        self.assertGreater(len(found), 20)
        for name, body in found:
            n = int(re.search(r"_n(\d+)_", name).group(1))
            asm = re.search(r'wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k32\.f32\.e4m3\.e4m3 \{([^}]*)\}, %(\d+), %(\d+), p, 1, 1;', body)
            self.assertIsNotNone(asm, name)
            self.assertEqual(int(asm.group(1)), n, name)
            self.assertEqual(asm.group(2).split(", "), [f"%{i}" for i in range(n // 2)], name)
            self.assertEqual((int(asm.group(3)), int(asm.group(4))), (n // 2, n // 2 + 1), name)
            self.assertIn(f"setp.ne.b32 p, %{n // 2 + 2}, 0;", body, name)
            # The wgmma's own N / 2, and the loop that fences them after the wait.
            self.assertEqual(body.count('"+f"(acc['), n // 2 + 1, name)

    def test_without_promotion_every_k_block_accumulates(self):
        # ptxas drops a wgmma whose sums the next one overwrites unread, so a
        # K block that restarted its sums would time a quarter of the work.
        for name, body in kernels(self.source):
            promotes = "_promote" in name
            self.assertIn("const int scale_d = k > 0;" if promotes else "const int scale_d = 1;", body, name)
            self.assertEqual("fin[rb][i] += s * acc[i];" in body, promotes, name)

    def test_stagger_delays_only_the_second_consumer(self):
        for name, body in kernels(self.source):
            self.assertEqual("if (wg == 1) { while (clock64() - t0 <" in body, name.endswith("_stagger"), name)

    def test_main_runs_every_kernel_once(self):
        names = [name for name, _ in kernels(self.source)]
        table = self.source.split("Variant vs[] = {", 1)[1].split("};", 1)[0]
        self.assertEqual(re.findall(r'\{"(k_[a-z0-9_]+)", ', table), names)
        self.assertEqual(len(set(names)), len(names))


if __name__ == "__main__":
    unittest.main()

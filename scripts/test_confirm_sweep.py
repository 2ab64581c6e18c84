"""Tests of confirm-sweep.py on a bundle and measurements made up here."""
import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).with_name("confirm-sweep.py")

CONFIGS = {
    "8x256x512_r1": "64x16x128 stages=8 warps=4 pipeline",
    "8x256x512_r2": "64x32x128 stages=8 warps=4 pipeline",
    "8x256x512_r3": "64x48x128 stages=8 warps=4 pipeline",
    "512x512x512_r1": "128x128x64 stages=5 warps=12 ws2 persistent",
    "512x512x512_r2": "128x64x64 stages=6 warps=8 ws1 persistent",
    "64x64x64_r1": "64x64x64 stages=2 warps=4 pipeline",
    "64x64x64_r2": "64x32x64 stages=2 warps=4 pipeline",
}


class ConfirmSweep(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.bundle = self.dir / "bundle"
        (self.bundle / "artifacts").mkdir(parents=True)
        lines = []
        for artifact, config in CONFIGS.items():
            (self.bundle / "artifacts" / artifact).mkdir()
            (self.bundle / "artifacts" / artifact / "kernel.ptx").write_text(artifact)
            lines.append(f"{artifact.rsplit('_', 1)[0]} {artifact} {config} \n")
        (self.bundle / "sweep.txt").write_text("".join(lines))
        (self.bundle / "run-sweep.sh").write_text("")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def measurements(self, times, **changes):
        records = [
            {"dtype": "bf16", "artifact": a, "config": changes.get(a, CONFIGS[a]), "median_ms": ms}
            for a, ms in times.items()
        ]
        path = self.dir / "m.json"
        path.write_text(json.dumps({"schema": "tilec-measurements/1", "records": records}))
        return path

    def run_script(self, measurements):
        dest = self.dir / "dest"
        result = subprocess.run([sys.executable, SCRIPT, self.bundle, measurements, dest], capture_output=True, text=True)
        return result, dest

    def test_keeps_the_pick_and_the_fastest_other(self):
        times = {"8x256x512_r1": 1.0, "8x256x512_r2": 0.9, "8x256x512_r3": 0.95,
                 "512x512x512_r1": 0.5, "512x512x512_r2": 0.6, "64x64x64_r2": 0.1}
        result, dest = self.run_script(self.measurements(times))
        self.assertEqual(result.returncode, 0, result.stderr)
        kept = [line.split()[1] for line in (dest / "sweep.txt").read_text().splitlines()]
        # Where the pick is the fastest, its rival is the second fastest; a shape whose pick
        # was not timed is left out, and said so.
        self.assertEqual(kept, ["8x256x512_r1", "8x256x512_r2", "512x512x512_r1", "512x512x512_r2"])
        self.assertEqual(sorted(p.name for p in (dest / "artifacts").iterdir()), sorted(kept))
        self.assertTrue((dest / "run-sweep.sh").exists())
        self.assertIn("64x64x64: the pick was not timed", result.stderr)

    def test_refuses_measurements_of_another_ranking(self):
        times = {"8x256x512_r1": 1.0, "8x256x512_r2": 0.9}
        result, _ = self.run_script(self.measurements(times, **{"8x256x512_r2": "64x64x128 stages=8 warps=4 pipeline"}))
        self.assertEqual(result.returncode, 1)
        self.assertIn("8x256x512_r2: timed as '64x64x128", result.stderr)

    def test_refuses_a_file_that_is_no_measurements(self):
        path = self.dir / "other.json"
        path.write_text(json.dumps({"schema": "tilec-calibration/1"}))
        result, _ = self.run_script(path)
        self.assertEqual(result.returncode, 1)
        self.assertIn("not a measurements file", result.stderr)


if __name__ == "__main__":
    unittest.main()

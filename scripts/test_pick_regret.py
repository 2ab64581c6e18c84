"""Tests of pick-regret.py on measurements made up here."""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).with_name("pick-regret.py")


def measurements(directory, times, schema="tilec-measurements/1"):
    path = Path(directory) / "m.json"
    records = [{"artifact": a, "median_ms": ms} for a, ms in times.items()]
    path.write_text(json.dumps({"schema": schema, "records": records}))
    return path


class PickRegret(unittest.TestCase):
    def run_script(self, times, *flags, schema="tilec-measurements/1"):
        with tempfile.TemporaryDirectory() as directory:
            path = measurements(directory, times, schema)
            return subprocess.run([sys.executable, SCRIPT, *flags, path], capture_output=True, text=True)

    def test_counts_the_picks_within_the_margin(self):
        times = {"8x256x512_r1": 1.06, "8x256x512_r2": 1.0, "512x512x512_r1": 1.04, "512x512x512_r3": 1.0,
                 "64x64x64_r1": 0.9, "64x64x64_r2": 1.0, "1x1x1_r2": 1.0}
        result = self.run_script(times)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("within 5% of the fastest on 2 of 3 shapes", result.stdout)
        self.assertIn("8x256x512: 1.060", result.stdout)
        self.assertNotIn("512x512x512:", result.stdout)
        self.assertIn("1x1x1: the pick (r1) was not timed", result.stderr)
        wider = self.run_script(times, "--margin", "0.1")
        self.assertIn("within 10% of the fastest on 3 of 3 shapes", wider.stdout)

    def test_refuses_a_file_that_is_no_measurements(self):
        result = self.run_script({}, schema="tilec-calibration/1")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("not a measurements file", result.stderr)


if __name__ == "__main__":
    unittest.main()

"""Checks what `tributary subscribe --json` received from examples/c/publish.c (run by `make c-example`).

usage: c_publish_check.py SUBSCRIBE.json BLOCKS

The publisher's source 1 "sine" (channels sin50 and cos120, V, 1 kHz, float64) must arrive as BLOCKS
blocks of 100 samples, contiguous in sample index and time (100 ms apart), equal to the sine and
cosine publish.c computes (to 1e-12: C's libm and numpy may round the last bit differently), whether
publish.c pushed them channel-major or interleaved; then its message "publish.c done".
"""
import json
import sys

import numpy as np


def main(path, blocks):
    packages = [json.loads(line) for line in open(path, encoding="utf-8") if line.startswith("{")]
    configurations = [p for p in packages if p["kind"] == "configuration" and p["source_id"] == 1]
    assert configurations, "no configuration of source 1"
    channels = configurations[0]["content"]["channels"]
    assert [c["description"] for c in channels] == ["sin50", "cos120"], channels
    assert all(c["unit"] == "V" and c["sampling_rate"] == 1000.0 for c in channels), channels
    analog = [p for p in packages if p["kind"] == "analog" and p["source_id"] == 1]
    assert len(analog) == blocks, f"{len(analog)} analog blocks, expected {blocks}"
    first_time = analog[0]["timestamp_ns"]
    for b, package in enumerate(analog):
        content = package["content"]
        assert content["format"] == "float64" and content["channel_count"] == 2 and content["sample_count"] == 100, content
        assert content["first_sample"] == 100 * b, (b, content["first_sample"])
        assert package["timestamp_ns"] == first_time + b * 100_000_000, (b, package["timestamp_ns"] - first_time)
        t = (b * 100 + np.arange(100)) / 1000.0
        expected = np.vstack([np.sin(2 * np.pi * 50 * t), 0.5 * np.cos(2 * np.pi * 120 * t)])
        assert np.allclose(np.array(content["samples"]), expected, rtol=0, atol=1e-12), f"block {b}'s samples differ"
    messages = [p["content"]["text"] for p in packages if p["kind"] == "message"]
    assert messages == ["publish.c done"], messages
    print(f"c_publish_check: {blocks} blocks of 2 x 100 samples, contiguous, and the message arrived as published")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

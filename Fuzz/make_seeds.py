"""Writes the fuzzers' seed corpus: one valid frame of every kind, plus a stream of all of them."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Tests/Interop"))
import wire_spec  # noqa: E402

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
frames = wire_spec.one_of_every_kind()
for name, data in frames.items():
    # The wire fuzzer's first byte picks the piece size; 0xff feeds whole 256-byte pieces.
    (out / f"{name}.bin").write_bytes(b"\xff" + data)
(out / "all-kinds.bin").write_bytes(b"\x07" + b"".join(frames.values()))

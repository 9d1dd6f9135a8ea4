#!/usr/bin/env python3
"""Writes the seed corpus (tests/fuzz/corpus/<target>/): a few short inputs per target. Every read past the end
of an input gives 0, and 0 always means "the plain, valid choice", so a seed only spells out the first bytes.
Rerun after changing how the targets decode their input: python3 tests/fuzz/make_seeds.py"""
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

THRESHOLD = {
    # dtype index, rank, dims...: then every tensor takes the expected dtype and shape
    "float-scalar": [0, 0],
    "float-2x3": [0, 2, 2, 3],
    "half-3d": [1, 3, 2, 3, 4],
    "bf16-4d": [2, 4, 1, 2, 3, 4],
    "int8-1d": [3, 1, 5],
    "int32-2d": [5, 2, 4, 4],
    "int64-1d": [6, 1, 3],
    "float-broadcast-self": [0, 2, 3, 4, 2, 1, 1],
}

DROPOUT = {}
for op, name in enumerate(["dropout", "genmask", "genmask-v2", "genmask-v2-tensor", "dropout-v3", "do-mask",
                           "dropout-backward", "v3-grad"]):
    # op, dtype index, rank, then per dim: size, 0 (7: add 120)
    DROPOUT[name + "-float-2x3"] = [op, 0, 2, 2, 0, 3, 0]
    DROPOUT[name + "-half-1d"] = [op, 1, 1, 7, 0]
    DROPOUT[name + "-bf16-3d"] = [op, 2, 3, 2, 0, 3, 0, 4, 0]
    DROPOUT[name + "-float-130"] = [op, 0, 1, 2, 7]


def write(target, seeds):
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    for name, values in seeds.items():
        (folder / name).write_bytes(bytes(values))


write("fuzz_threshold_backward", THRESHOLD)
write("fuzz_dropout_family", DROPOUT)

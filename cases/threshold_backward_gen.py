#!/usr/bin/env python3
"""Regenerates the generated parts of cases/threshold_backward.json (run from the repository root):
the 300 "mainline_atk_*" cases, modelled on the mix of the mainline ATK set (spec dropout_threshold.md 2.5:
int32/fp32/int8/fp16/bf16/uint8, a threshold scalar of the tensors' dtype, random shapes up to 8-d, values
around the threshold), here with random broadcasting too. Thresholds are exactly representable in their
scalar dtype, so the golden (which reads the JSON value) and the op (which reads the scalar) agree.
Hand-written cases are kept as they are. Deterministic (fixed seed)."""
import json
import random

import numpy as np

PATH = "cases/threshold_backward.json"
PREFIX = "mainline_atk_"
DTYPES = ["int32", "fp32", "int8", "fp16", "bf16", "uint8"]


def representable(dtype, value):
    if dtype == "fp32":
        return float(np.float32(value))
    if dtype == "fp16":
        return float(np.float16(value))
    if dtype == "bf16":  # round to 8 significant bits (RNE) through the fp32 bits
        bits = int(np.float32(value).view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.uint32(bits).view(np.float32))
    return int(value)


def random_shape(rng):
    rank = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8])
    shape = []
    budget = 20000
    for _ in range(rank):
        dim = rng.choice([1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 64, 65])
        while dim > 1 and dim * max(1, int(np.prod(shape))) > budget:
            dim //= 2
        shape.append(max(dim, 1))
    return shape


def broadcast_operand(rng, shape):
    """A shape that broadcasts to `shape`: some dims set to 1, maybe leading dims dropped."""
    own = [1 if rng.random() < 0.4 else d for d in shape]
    drop = rng.randint(0, len(own)) if own and rng.random() < 0.3 else 0
    return own[drop:]


def atk_case(rng, index):
    dtype = DTYPES[index % len(DTYPES)]
    shape = random_shape(rng)
    case = {"name": f"{PREFIX}{index:03d}", "dtype": dtype, "shape": shape}
    if dtype in ("int8",):
        t = rng.randint(-100, 100)
        spread = 20
    elif dtype == "uint8":
        t = rng.randint(0, 240)
        spread = 15
    elif dtype == "int32":
        t = rng.choice([0, rng.randint(-1000, 1000), rng.randint(-2**30, 2**30)])
        spread = 50
    else:
        t = representable(dtype, rng.choice([0.0, 1.0, -1.0, rng.uniform(-10, 10), rng.uniform(-1000, 1000)]))
        spread = max(1.0, abs(t) * 0.01) if dtype != "bf16" else max(1.0, abs(t) * 0.05)
    lo, hi = t - spread, t + spread
    if dtype == "uint8":
        lo, hi = max(lo, 0), min(hi, 255)
    if dtype in ("int8",):
        lo, hi = max(lo, -128), min(hi, 127)
    case["threshold"] = {"dtype": dtype, "value": t}
    self_spec = {"range": [lo, hi]}
    if dtype in ("fp32", "fp16", "bf16"):
        self_spec["special"] = {"values": [t], "fraction": 0.1}  # ties: self == threshold drops
    mode = rng.random()
    if mode < 0.25 and shape:
        self_spec["shape"] = broadcast_operand(rng, shape)
    elif mode < 0.45 and shape:
        case["gradOutput"] = {"shape": broadcast_operand(rng, shape)}
    elif mode < 0.55 and shape:
        # both broadcast: complementary 1s
        ones = [rng.random() < 0.5 for _ in shape]
        case["gradOutput"] = {"shape": [1 if o else d for o, d in zip(ones, shape)]}
        self_spec["shape"] = [d if o else 1 for o, d in zip(ones, shape)]
    case["self"] = self_spec
    return case


def main():
    with open(PATH) as f:
        suite = json.load(f)
    kept = [c for c in suite["cases"] if not c["name"].startswith(PREFIX)]
    rng = random.Random(20261130)
    suite["cases"] = kept + [atk_case(rng, i) for i in range(300)]
    with open(PATH, "w") as f:
        f.write(compact(suite))


def compact(suite):
    """One case per line, like the hand-written file."""
    lines = ["{"]
    for key in ("op", "aclnn_name", "about"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(suite[key])},")
    for key in ("cases", "bench"):
        lines.append(f"  {json.dumps(key)}: [")
        rows = [("    " + json.dumps(c)) for c in suite[key]]
        lines.append(",\n".join(rows))
        lines.append("  ]" + ("," if key == "cases" else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

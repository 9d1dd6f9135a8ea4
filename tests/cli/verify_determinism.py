#!/usr/bin/env python3
"""The determinism matrix: runs `gradkit verify` (every suite, or --op) once per GRADKIT_NUM_THREADS value and
fails unless every run passes and every case's output digest (FNV-1a of all its outputs' bytes) is the same in
every run: results must not depend on the thread count, whatever the precision gate. The first thread count runs
the full gate; the others run --digest-only (no goldens: outputs with the same digest pass the same gate).

Usage: verify_determinism.py GRADKIT_CLI [--threads 1,2,3,8] [--op NAME] [--env NAME=VALUE ...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run_verify(cli, threads, op, extra_env, directory, digest_only):
    path = os.path.join(directory, f"threads{threads}.json")
    env = dict(os.environ, GRADKIT_NUM_THREADS=str(threads), **extra_env)
    command = [cli, "verify", "--json", path] + (["--op", op] if op else []) + (["--digest-only"] if digest_only else [])
    result = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "(no output)"
    print(f"threads {threads}: {summary}")
    if result.returncode != 0 or not re.match(r"[1-9][0-9]* passed, 0 failed(, [0-9]+ skipped)?$", summary):
        print(result.stdout[-4000:])
        return None
    with open(path) as handle:
        rows = json.load(handle)
    return {(row["op"], row["case"], row["dtype"]): row.get("output_digest", "") for row in rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cli")
    parser.add_argument("--threads", default="1,2,3,8")
    parser.add_argument("--op", default="")
    parser.add_argument("--env", action="append", default=[])
    args = parser.parse_args()
    extra_env = dict(item.split("=", 1) for item in args.env)
    counts = [int(t) for t in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as directory:
        runs = {t: run_verify(args.cli, t, args.op, extra_env, directory, t != counts[0]) for t in counts}
    if any(digests is None for digests in runs.values()):
        print("FAIL: a verify run failed")
        return 1
    reference = runs[counts[0]]
    differing = []
    for threads in counts[1:]:
        if runs[threads].keys() != reference.keys():
            print(f"FAIL: threads {threads} ran other cases than threads {counts[0]}")
            return 1
        for key, digest in runs[threads].items():
            if digest != reference[key]:
                differing.append((threads, key))
    for threads, (op, case, dtype) in differing[:20]:
        print(f"FAIL: {op} {case} {dtype}: outputs with {threads} threads differ from {counts[0]} thread(s)")
    if differing:
        return 1
    print(f"determinism: {len(reference)} cases, identical outputs for {len(counts)} thread counts ({args.threads})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

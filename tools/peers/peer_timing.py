"""What every speed peer of `gradkit bench` prints: the fastest of `repeat` timed steps after one warm-up, as
"seconds <x>" (tools/gradkit/harness/peer.cpp reads that line)."""

# A warm-up step longer than this is reported alone instead of timing `repeat` more steps: bf16 matmuls on a CPU
# without bf16 units can take minutes a step, and then the warm-up is the measurement.
LONG_STEP_SECONDS = 20.0


def print_fastest(timed, repeat):
    """Calls timed() (one step, returning its seconds) once to warm up, then `repeat` times (at least once), and
    prints the fastest; a warm-up over LONG_STEP_SECONDS is printed alone."""
    warm = timed()
    if warm > LONG_STEP_SECONDS:
        print(f"seconds {warm!r}")
        return
    best = min(timed() for _ in range(max(repeat, 1)))
    print(f"seconds {best!r}")

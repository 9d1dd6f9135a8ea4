"""Seeds for randomly generated test problems, derived from their parameters."""
import zlib


def stable_seed(*key):
    """A seed from the parameters, the same in every process and run (Python's hash() of a string is salted per
    process, so a seed taken from it made every run draw other problems)."""
    return zlib.crc32(repr(key).encode()) % 2**31

"""Where the tests find the built gradkit Python package: <build>/python/gradkit, from GRADKIT_PYTHON_DIR, else next
to the library GRADKIT_LIB names (ctest sets it to <build>/lib/libgradkit.so*), else build/python. Importing this
module puts the package's folder first on sys.path, or skips the importing test module when the build has none
(GRADKIT_BUILD_PYTHON=OFF; ./run.sh test turns it on)."""
import os
import sys

import pytest


def gradkit_python_dir():
    """<build>/python, from GRADKIT_PYTHON_DIR, else next to the library GRADKIT_LIB names, else build/python."""
    explicit = os.environ.get("GRADKIT_PYTHON_DIR")
    if explicit:
        return explicit
    lib = os.environ.get("GRADKIT_LIB")
    if lib:
        return os.path.abspath(os.path.join(os.path.dirname(lib), "..", "python"))
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))


PYTHON_DIR = gradkit_python_dir()
if not os.path.isdir(os.path.join(PYTHON_DIR, "gradkit")):
    pytest.skip(f"no gradkit module in {PYTHON_DIR} (configure with -DGRADKIT_BUILD_PYTHON=ON)",
                allow_module_level=True)
sys.path.insert(0, PYTHON_DIR)

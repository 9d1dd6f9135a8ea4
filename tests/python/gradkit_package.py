"""Where the tests find the gradkit Python package. By default the built one: <build>/python/gradkit, from
GRADKIT_PYTHON_DIR, else next to the library GRADKIT_LIB names (ctest sets it to <build>/lib/libgradkit.so*), else
build/python; importing this module puts that folder first on sys.path, or skips the importing test module when
the build has none (GRADKIT_BUILD_PYTHON=OFF; ./run.sh test turns it on).

With GRADKIT_PACKAGE=installed (tests/python/wheel/check_wheel.sh), the package installed into the interpreter's
environment instead: sys.path is left alone, PYTHON_DIR is the folder that holds it, and a gradkit imported from this source tree is an error."""
import os
import sys

import pytest

SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def gradkit_python_dir():
    """<build>/python, from GRADKIT_PYTHON_DIR, else next to the library GRADKIT_LIB names, else build/python."""
    explicit = os.environ.get("GRADKIT_PYTHON_DIR")
    if explicit:
        return explicit
    lib = os.environ.get("GRADKIT_LIB")
    if lib:
        return os.path.abspath(os.path.join(os.path.dirname(lib), "..", "python"))
    return os.path.join(SOURCE_ROOT, "build", "python")


if os.environ.get("GRADKIT_PACKAGE") == "installed":
    import gradkit

    if os.path.abspath(gradkit.__file__).startswith(SOURCE_ROOT + os.sep):
        raise RuntimeError(f"GRADKIT_PACKAGE=installed, yet gradkit was imported from the source tree: "
                           f"{gradkit.__file__}")
    PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(gradkit.__file__)))  # the site-packages folder
else:
    PYTHON_DIR = gradkit_python_dir()
    if not os.path.isdir(os.path.join(PYTHON_DIR, "gradkit")):
        pytest.skip(f"no gradkit module in {PYTHON_DIR} (configure with -DGRADKIT_BUILD_PYTHON=ON)",
                    allow_module_level=True)
    sys.path.insert(0, PYTHON_DIR)

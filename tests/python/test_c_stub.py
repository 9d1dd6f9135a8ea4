"""python/gradkit/_C.pyi (the type stub of the compiled module, tools/make_c_stub.py) matches the built module: every
function with its parameter names, types and docstring. A binding changed without a regenerated stub fails here."""
import os
import subprocess
import sys

from gradkit_package import PYTHON_DIR

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_stub_matches_the_module():
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_c_stub.py"), "--check"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_stub_is_shipped_with_the_package():
    import gradkit

    assert os.path.exists(os.path.join(os.path.dirname(gradkit.__file__), "_C.pyi"))
    assert os.path.exists(os.path.join(os.path.dirname(gradkit.__file__), "py.typed"))

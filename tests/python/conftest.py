import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_sessionfinish(session):
    """With GRADKIT_IMPORTS_LOG set, write the interpreter and every imported module's file to it, so that
    tools/check_build_deps.py can check that run.sh installs the packages the tests import."""
    log = os.environ.get("GRADKIT_IMPORTS_LOG")
    if not log:
        return
    files = {sys.executable}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path:
            files.add(os.path.abspath(path))
    with open(log, "w") as f:
        f.write("\n".join(sorted(files)) + "\n")

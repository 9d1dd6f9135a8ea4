import os
import sys

# gradkit_ctypes and test_dropout_common live one folder up.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

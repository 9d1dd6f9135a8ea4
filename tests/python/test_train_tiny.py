"""examples/train_tiny.py end to end: a tiny mHC decoder block trained 50 steps on gradkit's operators and on the
pure-torch reference, in one process and as two processes under torch.distributed (gloo, DDP).

Why these tolerances. Both runs start from the same weights, data and dropout masks, so step 0 is the same
forward up to the order of fp32 sums (<= 1e-5 relative; measured 1e-7). After that the runs are chaotic: h_in and
the gradient of x cross the mHC interface in bf16, and an fp32 difference in the last bit moves some elements by a
whole bf16 ulp (2^-8), which training amplifies step after step. How far two equally correct implementations drift
is measured by a third run, "reference64", the reference with mHC evaluated in fp64: reference vs reference64 is
the natural spread, and the gates below hold it with a margin (measured at lr 0.02: first 10 steps 5e-4, any
step 7%, mean of the last 10 steps 0.3%; gradkit vs reference 2e-4, 8%, 1.7%; two processes vs one 4e-4, 8%,
0.8%). The curves are a test of fit, not of precision (a gradient 10% off in one parameter stays inside them),
so the step-0 gradients of every parameter are compared as well, before any drift.

--attention compressor (compressed attention through gradkit.compressor / reference.compressor) has gates of its
own, from the same kind of evidence. Its compressed rows and the compressor's input cross a bf16 interface as well,
so the runs part earlier and further: over seeds 0-3, reference vs reference64 measured at most 2e-6 at step 0, 7e-4
over the first 4 steps, 16% at any step and 4.9% in the mean of the last 10 steps, and up to 2.7e-3 normwise in a
step-0 gradient (mhc_attention.bias: a bf16 rounding of cmp_kv or of x flips when the fp32 sums differ in the last
bit); gradkit vs reference 1.2e-6, 5e-4, 12%, 6.4% and 1.5e-3. The gates below hold those with a margin of about 2
(7 for the first steps, 4 for the gradients), and a 10% error in one parameter's gradient still fails.

--attention flash (causal 4-head attention through gradkit.flash_attention, fp32, against
reference.flash_attention in fp32 and in fp64) keeps the gates of --attention torch: its attention is fp32 on both
sides, so the runs part only through the mHC bf16 interface, as there. Measured (seed 0): reference vs reference64
7.6e-8 at step 0, 4.7e-4 over the first 10 steps, 6.4% at any step, 2.0% in the last-10 mean, 2.0e-4 in a step-0
gradient; gradkit vs reference 7.6e-8, 4.5e-4, 6.4%, 1.9%, 2.1e-4 (seed 1: at most 6.5e-4, 3.9%, 0.9%, 5.6e-4).

--residual mhc (every sub-block wrapped in gradkit.nn.HyperConnection: MhcPre, MhcSinkhorn, MhcPost and their
backwards, the streams in bf16; the reference variants run the same module in pure torch in fp32 / fp64) has gates
of its own: its residual streams themselves cross a bf16 interface after every block, so a last-bit difference
moves them a whole bf16 ulp from the first step on. Over seeds 0-3, reference vs reference64 measured at most 5e-7
at step 0, 2.9e-3 over the first 10 steps, 22% at any step and 9.6% in the mean of the last 10 steps (seed 3), and
1.1e-3 normwise in a step-0 gradient (mhc_attention.pre.bias); gradkit vs reference 2.3e-7, 2.2e-3, 11%, 3.5% and
2.6e-3 (mhc_attention.pre.bias, seed 2). The gates below hold those with a margin of about 2 (4 for the
gradients, where a 10% error in one parameter's gradient still fails).

--attention csa / hca (gradkit.nn.CompressedSparseAttention: 1 head of 512, H = 1024, global batch 4) runs only
gradkit and reference, so that each mode stays well under a minute on 2 cores with Debian torch's generic BLAS (the
layer's 1024-wide fp32 matmuls dominate; measured gradkit + reference + reference64 40-45 s for HCA, 70-93 s for
CSA). The layer's q, kv, compressed rows and output cross bf16 interfaces, SparseFlashMla rounds P to bf16 on its
native tile path, and CSA's top-k can flip on a near tie, so the runs part from step 0 on and the curves fall less in
50 steps (last-10 mean 0.45-0.70 of the start). Measured over seeds 0-2 with reference64 (maxima; gradkit vs
reference / reference vs reference64):
  HCA: step 0 4.7e-5 / 2.7e-6, first 10 steps 0.15 / 6.4e-2, any step 27% / 19%, last-10 mean 8.3% / 3.9%, a
       step-0 gradient 5.2e-2 (mhc_attention.bias, seed 0) / 2.5e-3; curves fall to 0.48-0.69.
  CSA: step 0 1.0e-4 / 4.7e-6, first 10 steps 0.12 / 7.3e-2, any step 47% / 95% (seed 1: one run's loss spikes),
       last-10 mean 14% / 12.5%, a step-0 gradient 5.3e-2 (mhc_attention.bias) / 2.0e-3; curves fall to 0.45-0.70.
The gates hold the larger of each pair with a margin of about 2 (CSA's any-step gate, 2.0, then only catches a
divergence; the falls_to fractions hold the slowest seed with a margin of 1.15). Few tokens make a flipped bf16
rounding weigh more, so the step-0 gradients' gate (0.1) cannot catch a 10% error in one parameter's gradient:
tests/python/test_sparse_attention_torch.py gates the layer's gradients against fp64 at 2^-7 / 1e-2 instead.
"""
import json
import os
import subprocess
import sys

import pytest

from test_gradkit_module import PYTHON_DIR

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_tiny.py")
STEP0, FIRST10, ANY_STEP, LAST10_MEAN = 1e-5, 2e-3, 0.2, 0.05
# --attention compressor: (steps compared closely, their gate, any step, mean of the last 10, step-0 gradients).
COMPRESSOR_GATES = {"first": 4, "first_gate": 5e-3, "any": 0.3, "last10": 0.12, "gradients": 1e-2}
# --attention csa / hca (gradkit.nn.CompressedSparseAttention; 1 head, global batch 4: see the module docstring), per
# mode; falls_to: the last-10 mean below that fraction of step 0's loss.
SPARSE_GATES = {
    "hca": {"step0": 1e-4, "first": 10, "first_gate": 0.3, "any": 0.5, "last10": 0.2, "gradients": 0.1,
            "falls_to": 0.8},
    "csa": {"step0": 2e-4, "first": 10, "first_gate": 0.25, "any": 2.0, "last10": 0.3, "gradients": 0.1,
            "falls_to": 0.85},
}
# --residual mhc: the same keys.
MHC_GATES = {"first": 10, "first_gate": 6e-3, "any": 0.4, "last10": 0.2, "gradients": 1e-2}


def run(tmp_path, name, *args):
    path = tmp_path / f"{name}.json"
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    subprocess.run([sys.executable, SCRIPT, "--json", str(path), *args], check=True, env=env, capture_output=True,
                   text=True, timeout=600)
    with open(path) as f:
        return json.load(f)


def assert_curves_agree(a, b, first=10, first_gate=FIRST10, any_step=ANY_STEP, last10=LAST10_MEAN, step0=STEP0):
    relative = [abs(x - y) / y for x, y in zip(a, b)]
    assert len(a) == len(b) == 50
    assert relative[0] <= step0, relative[0]
    assert max(relative[:first]) <= first_gate, relative[:first]
    assert max(relative) <= any_step, max(relative)
    assert abs(sum(a[-10:]) - sum(b[-10:])) / sum(b[-10:]) <= last10


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("train_tiny")
    plot = tmp_path / "curves.png"
    curves = run(tmp_path, "single", "--variants", "gradkit", "reference", "reference64", "--plot", str(plot))
    curves["plot"] = plot
    return curves


def test_both_curves_decrease(single):
    for variant in ("gradkit", "reference"):
        curve = single[variant]
        assert sum(curve[-10:]) / 10 < 0.4 * curve[0], variant  # 3.3 -> about 0.6


def test_gradkit_agrees_with_the_reference_as_closely_as_two_references(single):
    assert_curves_agree(single["reference"], single["reference64"])  # the gates hold the natural spread
    assert_curves_agree(single["gradkit"], single["reference"])


def test_first_gradients_match_the_reference(single):
    """The step-0 gradient of every parameter, before any drift: within 1e-3 normwise of the reference's (measured
    6e-5, the same as reference64's; a gradient 10% off in one mHC parameter fails). The floor covers k.bias,
    whose exact gradient is 0 (softmax ignores a per-row constant), so both are rounding noise."""
    total = sum(reference_norm for _, reference_norm in single["step0_gradients"]["gradkit"].values())
    for variant in ("gradkit", "reference64"):
        for name, (difference, reference_norm) in single["step0_gradients"][variant].items():
            assert difference <= 1e-3 * reference_norm + 1e-7 * total, (variant, name, difference, reference_norm)


def test_plot_is_a_png(single):
    with open(single["plot"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_two_processes_match_one_on_the_same_global_batch(single, tmp_path):
    distributed = run(tmp_path, "ddp", "--world-size", "2")
    for variant in ("gradkit", "reference"):
        assert_curves_agree(distributed[variant], single[variant])


@pytest.fixture(scope="module")
def compressed(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("train_tiny_compressor")
    return run(tmp_path, "compressor", "--attention", "compressor", "--variants", "gradkit", "reference",
               "reference64")


def assert_first_gradients_match(gradients, gate=1e-3):
    total = sum(reference_norm for _, reference_norm in gradients["gradkit"].values())
    for variant in ("gradkit", "reference64"):
        for name, (difference, reference_norm) in gradients.get(variant, {}).items():
            assert difference <= gate * reference_norm + 1e-7 * total, (variant, name, difference, reference_norm)


@pytest.fixture(scope="module")
def flash(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("train_tiny_flash")
    return run(tmp_path, "flash", "--attention", "flash", "--variants", "gradkit", "reference", "reference64")


def test_flash_attention_trains_and_agrees_with_the_reference(flash):
    for variant in ("gradkit", "reference"):
        curve = flash[variant]
        assert sum(curve[-10:]) / 10 < 0.4 * curve[0], variant  # 3.1 -> about 0.4
    assert_curves_agree(flash["reference"], flash["reference64"])
    assert_curves_agree(flash["gradkit"], flash["reference"])
    assert_first_gradients_match(flash["step0_gradients"])


def assert_trains_and_agrees(curves, gates):
    """Both curves fall below 0.4 of their start over the last 10 steps; reference vs reference64 and gradkit vs
    reference agree within `gates`; the step-0 gradients too."""
    for variant in ("gradkit", "reference"):
        curve = curves[variant]
        assert sum(curve[-10:]) / 10 < 0.4 * curve[0], variant
    for a, b in (("reference", "reference64"), ("gradkit", "reference")):
        assert_curves_agree(curves[a], curves[b], first=gates["first"], first_gate=gates["first_gate"],
                            any_step=gates["any"], last10=gates["last10"])
    assert_first_gradients_match(curves["step0_gradients"], gates["gradients"])


def test_compressed_attention_trains_and_agrees_with_the_reference(compressed):
    assert_trains_and_agrees(compressed, COMPRESSOR_GATES)  # the curve: 3.2 -> about 0.75
    assert any(name.startswith("compressed.") for name in compressed["step0_gradients"]["gradkit"])


def test_plot_without_matplotlib_fails_before_training(tmp_path):
    """--plot without matplotlib stops at the argument check (exit 2, naming the extra), not after 50 steps."""
    hide_matplotlib = ("import runpy, sys; sys.modules['matplotlib'] = None; "
                       f"sys.argv = ['train_tiny.py', '--plot', {str(tmp_path / 'x.png')!r}]; "
                       f"runpy.run_path({SCRIPT!r}, run_name='__main__')")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    result = subprocess.run([sys.executable, "-c", hide_matplotlib], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stderr
    assert "--plot needs matplotlib" in result.stderr and "gradkit[plot]" in result.stderr
    assert "step" not in result.stdout  # no training ran


@pytest.fixture(scope="module")
def hyper_connection(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("train_tiny_mhc")
    plot = tmp_path / "curves.png"
    curves = run(tmp_path, "mhc", "--residual", "mhc", "--variants", "gradkit", "reference", "reference64", "--plot",
                 str(plot))
    curves["plot"] = plot
    return curves


def test_whole_mhc_layer_trains_and_agrees_with_the_reference(hyper_connection):
    """--residual mhc: gradkit.nn.HyperConnection on gradkit's operators against the same module in pure torch."""
    assert_trains_and_agrees(hyper_connection, MHC_GATES)  # the curve: 3.3 -> about 0.6
    # Every HyperConnection's parameters took part (MhcPre's, reached through MhcSinkhorn and MhcPost).
    names = set(hyper_connection["step0_gradients"]["gradkit"])
    for block in ("mhc_attention", "mhc_mlp"):
        assert {f"{block}.pre.{p}" for p in ("phi", "alpha", "bias", "gamma")} <= names, sorted(names)
    with open(hyper_connection["plot"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _has(name):
    import gradkit

    return hasattr(gradkit._C, name)


@pytest.mark.parametrize("mode", ["hca", "csa"])
def test_compressed_sparse_attention_trains_and_agrees_with_the_reference(tmp_path, mode):
    """--attention csa / hca: gradkit.nn.CompressedSparseAttention (SparseFlashMla + Grad, the compressors and, for
    CSA, LightningIndexerV2, SoftmaxL1Norm and the indexer's KL loss grad) against the same layer in pure torch."""
    needed = ["sparse_flash_mla_grad"] + (["sparse_flash_mla_softmax_l1_norm"] if mode == "csa" else [])
    missing = [name for name in needed if not _has(name)]
    if missing:
        pytest.skip(f"not in this build yet: {missing}")
    # Without reference64 (the natural spread, measured offline: the module docstring), to stay well under a minute.
    curves = run(tmp_path, mode, "--attention", mode, "--variants", "gradkit", "reference")
    gates = SPARSE_GATES[mode]
    for variant in ("gradkit", "reference"):
        curve = curves[variant]
        assert sum(curve[-10:]) / 10 < gates["falls_to"] * curve[0], variant  # 3.2-3.3 -> 0.45-0.70 of that
    assert_curves_agree(curves["gradkit"], curves["reference"], first=gates["first"], first_gate=gates["first_gate"],
                        any_step=gates["any"], last10=gates["last10"], step0=gates["step0"])
    assert_first_gradients_match(curves["step0_gradients"], gates["gradients"])
    assert any(name.startswith("sparse.attention.") for name in curves["step0_gradients"]["gradkit"])
    if mode == "csa":
        assert "sparse.attention.index_wq" in curves["step0_gradients"]["gradkit"]  # the KL loss reached the indexer


def test_one_variant_alone_prints_its_curve(tmp_path):
    """Any variant may run alone: the printout and the curves hold just it (it once assumed a reference run)."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    result = subprocess.run([sys.executable, SCRIPT, "--variants", "gradkit", "--steps", "3"], check=True, env=env,
                            capture_output=True, text=True, timeout=600)
    lines = result.stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["step", "gradkit"] and "reference" not in lines[0], lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["0", "1", "2"], lines
    assert all(float(line.split()[1]) > 0 for line in lines[1:]), lines

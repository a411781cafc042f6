"""The GPU recipe (``python bench/train.py --gpu``) run on CPU with a tiny config so that it cannot rot:
the same code path (channels-last weights and inputs, bf16 autocast, ``torch.compile`` of the training step,
the throughput report with FLOPs per sample and the peak-share fields), a handful of steps.

The compile backend here is ``eager`` (dynamo traces the model, no C++ compilation: seconds, not minutes, on
a busy 2-core host); the recipe itself uses ``inductor``. FLOPs per sample are checked against a hand count."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch

from bench import train as bench_train
from gotk.nets.networks import build_model
from gotk.train.flops import forward_flops, peak_bf16_flops, peak_report, train_flops_per_sample


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory, sample_archive) -> Path:
    """4 real games for train/val and 2 others for test (``--test-from``), sevenplane."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset
    from gotk.sources.archives import SgfSource, iter_sources

    folder = tmp_path_factory.mktemp("gpu-recipe")
    items = [s for s in iter_sources([sample_archive]) if isinstance(s, SgfSource)][:6]
    for name, part in (("games.zip", items[:4]), ("heldout-test.zip", items[4:])):
        with zipfile.ZipFile(folder / name, "w") as zf:
            for s in part:
                zf.writestr(s.member, s.data)
    out = folder / "data"
    encode_dataset([folder / "games.zip", folder / "heldout-test.zip"], out,
                   EncodeOptions(encoder="sevenplane", split="train=0.75,val=0.25", test_from=["*heldout-test*"]),
                   workers=1, progress=False)
    return out


def test_gpu_recipe_on_cpu(tiny_dataset: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(bench_train.REPO_ROOT)
    out = bench_train.main(["--gpu", "--device", "cpu", "--data", str(tiny_dataset), "--steps", "6",
                            "--log-every", "2", "--model", "resnet", "--blocks", "1", "--filters", "8",
                            "--batch-size", "16", "--workers", "0", "--threads", "1", "--warmup-steps", "2",
                            "--compile", "eager", "--work", str(tmp_path), "--json-out", str(tmp_path / "r.json")])
    # the recipe's settings reached the run (the options given override the preset)
    s = out["settings"]
    assert (s["gpu"], s["device"], s["amp"], s["channels_last"], s["optimizer"], s["lr"]) == \
        (True, "cpu", True, True, "sgd", 0.2)
    tp = out["throughput"]
    assert tp["device"] == "cpu" and tp["amp"] is True and tp["amp_dtype"] == "bfloat16"
    assert tp["channels_last"] is True and tp["compile"] == "eager"
    assert tp["windows"] == 3 and tp["samples_per_s"] > 0
    # resnet 1 block x 8 filters on 7 planes, by hand: stem 3x3 7->8, two 3x3 8->8, 1x1 8->1, pass linear 8->1
    points = 19 * 19
    fwd = 2 * (points * 8 * 7 * 9 + 2 * points * 8 * 8 * 9 + points * 8 + 8)
    assert tp["train_flops_per_sample"] == 3 * fwd
    assert tp["achieved_tflops"] == pytest.approx(tp["samples_per_s"] * 3 * fwd / 1e12, rel=1e-3, abs=1e-4)
    # no peak for a CPU: the share is absent and the report says why
    assert tp["peak_bf16_tflops"] is None and tp["peak_share"] is None and "not in the table" in tp["flops_note"]
    assert out["steps"] == 6 and 0.0 <= out["test"]["top1"] <= 1.0 and out["test"]["positions"] > 0
    assert (tmp_path / "r.json").is_file()


def test_peak_table_and_share() -> None:
    assert peak_bf16_flops("NVIDIA H100 80GB HBM3") == (989e12, "NVIDIA H100 SXM")
    assert peak_bf16_flops("NVIDIA H100 PCIe")[0] == 756e12
    assert peak_bf16_flops("NVIDIA H200")[0] == 989e12
    assert peak_bf16_flops("NVIDIA A100-SXM4-80GB")[0] == 312e12
    assert peak_bf16_flops("NVIDIA L4")[0] == 121e12 and peak_bf16_flops("NVIDIA L40S")[0] == 362e12
    assert peak_bf16_flops("NVIDIA L40")[0] == 181e12
    assert peak_bf16_flops("NVIDIA H100 NVL")[0] == 835e12 and peak_bf16_flops("NVIDIA GH200 480GB")[1].startswith(
        "NVIDIA GH200")
    assert peak_bf16_flops("cpu: AMD EPYC") == (None, None) and peak_bf16_flops("NVIDIA A10G") == (None, None)
    r = peak_report(10_000.0, 2 * 10**9, "NVIDIA H100 80GB HBM3")
    assert r["achieved_tflops"] == 20.0 and r["peak_share"] == pytest.approx(20 / 989, abs=1e-5)


def test_flops_of_a_book_network() -> None:
    model = build_model("small", 7, 19)
    points = 19 * 19
    convs = 48 * 7 * 49 + 32 * 48 * 25 + 32 * 32 * 25 + 32 * 32 * 25
    dense = 32 * points * 512 + 512 * 362
    assert forward_flops(model, (7, 19, 19)) == 2 * (points * convs + dense + points * 32)  # + point logits (1x1)
    assert train_flops_per_sample(model, (7, 19, 19)) == 3 * forward_flops(model, (7, 19, 19))
    assert model.training  # restored
    assert next(model.parameters()).dtype == torch.float32

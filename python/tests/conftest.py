"""Shared fixtures: the repository's test models, and whether a GPU is usable."""

import os
import pathlib

import pytest

import conflux

SOURCE_DIR = pathlib.Path(os.environ.get("CONFLUX_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
MODELS = SOURCE_DIR / "tests" / "models" / "data"
EXAMPLE = SOURCE_DIR / "examples" / "conv_block.onnx"


def has_gpu():
    return conflux._conflux.available_devices() > 0


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    # CTest reads this line to report the GPU run as skipped, not passed.
    print("no CUDA device: the gpu tests are skipped")
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def example():
    return EXAMPLE


def model_dirs():
    return sorted(p for p in MODELS.iterdir() if (p / "model.onnx").exists())

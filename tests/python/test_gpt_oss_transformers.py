"""A real loader reads what `mxq quantize` writes: a tiny random gpt-oss model saved by
transformers, quantized by the mxq command to gpt-oss's MXFP4 expert layout, loaded back by
transformers (Mxfp4Config(dequantize=True)). Its expert weights must equal `mxq dequantize`'s byte
for byte, and its logits those of the fake-quantized model (the dequantized checkpoint loaded as a
plain bf16 model). Skipped without transformers or the mxq command ($MXQ_CLI, else the repository's
build/tools/cli/mxq)."""
import glob
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from mxq_testing import REPO  # noqa: E402


def _mxq_cli():
    path = os.environ.get("MXQ_CLI") or os.path.join(REPO, "build", "tools", "cli", "mxq")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no mxq command at {path} (set MXQ_CLI)")
    return path


def _run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def _tensors(folder):
    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        out.update(safetensors_torch.load_file(f))
    return out


def test_transformers_loads_mxq_gpt_oss_mxfp4(tmp_path):
    mxq_cli = _mxq_cli()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    config = transformers.GptOssConfig(
        vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=64, sliding_window=16,
        layer_types=["sliding_attention", "full_attention"])
    model = transformers.GptOssForCausalLM(config).to(torch.bfloat16)
    with torch.no_grad():
        for layer in model.model.layers:  # weights of every magnitude a real model has
            layer.mlp.experts.gate_up_proj.normal_(0, 0.05)
            layer.mlp.experts.down_proj.normal_(0, 0.05)
    src, quantized, dequantized = (str(tmp_path / n) for n in ("src", "q", "d"))
    model.save_pretrained(src)
    saved = _tensors(src)
    assert saved["model.layers.0.mlp.experts.gate_up_proj"].shape == (4, 64, 128)  # (E, in, out)

    _run(mxq_cli, "quantize", src, quantized, "--format", "mxfp4", "--no-stats")
    _run(mxq_cli, "dequantize", quantized, dequantized)
    stored = _tensors(quantized)
    assert stored["model.layers.0.mlp.experts.gate_up_proj_blocks"].shape == (4, 128, 2, 16)
    assert "model.layers.0.mlp.experts.gate_up_proj" not in stored

    loaded = transformers.GptOssForCausalLM.from_pretrained(
        quantized, quantization_config=transformers.Mxfp4Config(dequantize=True),
        dtype=torch.bfloat16).to(device)
    reference = _tensors(dequantized)
    for i, layer in enumerate(loaded.model.layers):
        for proj in ("gate_up_proj", "down_proj"):
            got = getattr(layer.mlp.experts, proj).detach().cpu()
            want = reference[f"model.layers.{i}.mlp.experts.{proj}"]
            assert got.dtype == want.dtype == torch.bfloat16 and got.shape == want.shape, proj
            assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (i, proj)

    fake = transformers.GptOssForCausalLM.from_pretrained(dequantized, dtype=torch.bfloat16).to(device)
    ids = torch.randint(0, 128, (2, 24), device=device)
    with torch.no_grad():
        got, want = loaded(ids).logits, fake(ids).logits
        original = model.to(device)(ids).logits
    assert torch.equal(got, want)
    assert not torch.equal(got, original)  # the experts really were quantized

#!/usr/bin/env python3
"""The small-config model zoo for CI: real model classes from torchvision, timm and Hugging Face
transformers, built small (two layers, widths of 8-64, small images, short sequences) with
random weights and a fixed seed, exported by PyTorch's own exporters, with onnxruntime's outputs
as the expected results.

Each model goes to data/<name>_<exporter>/model.onnx with test_data_set_0/{input,output}_N.pb,
the layout of ONNX's backend tests, so build/bin/onnx_conformance runs them (CI: on the
reference target, after the passes, and compiled for sm_90). Exporters: "dynamo" (torch.onnx's
default, opset 18+) and "script" (the TorchScript exporter, opset 17). A model an exporter
cannot produce is listed in data/EXPORT_ERRORS.txt with the exporter's error, not dropped
silently. Parameters initialised to one constant (zero biases, unit norm scales, zero-initialised
heads) are made random, and batch norms are calibrated on random data, so that no op hides
behind a zero. Weights stay inside model.onnx (every file is far below 2 GB).

Usage: python3 tests/zoo/make_zoo.py [NAME...]   (needs torch, torchvision, timm, transformers,
onnx, onnxscript, onnxruntime; nothing is downloaded: every model is built from a config)
"""
import contextlib
import io
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
SEED = 20261201
MAX_BYTES = 1 << 20  # per model.onnx: the CI zoo stays small


def randomise(model, rng):
    """Every floating parameter and buffer that is one constant becomes random (same scale)."""
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if not p.is_floating_point() or p.numel() == 0:
                continue
            if "running_var" in name:
                continue  # calibrated below
            flat = p.detach().reshape(-1)
            if torch.all(flat == flat[0]):
                scale = 1.0 if flat[0].item() == 0 else abs(flat[0].item())
                noise = torch.from_numpy(rng.standard_normal(p.shape).astype(np.float32))
                base = flat[0].item() if "weight" in name and flat[0].item() != 0 else 0.0
                p.copy_(base + 0.1 * scale * noise)


def calibrate_batch_norms(model, example, batches=4, batch_size=8):
    """Running statistics from a few batches of random data instead of 0 and 1."""
    if not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return
    model.train()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.reset_running_stats()
                m.momentum = None  # cumulative average
        gen = torch.Generator().manual_seed(SEED)
        # Batches of several (a batch of 1 has no variance at a 1x1 feature map).
        for _ in range(batches):
            model(*[torch.randn((batch_size,) + tuple(t.shape[1:]), generator=gen)
                    if t.is_floating_point() else t.expand((batch_size,) + tuple(t.shape[1:]))
                    for t in example])
    model.eval()


# ---- the models: name -> (builder, example inputs) ------------------------------------------

def image(n=1, c=3, h=32, w=32):
    return (torch.randn(n, c, h, w),)


def tokens(vocab=64, n=1, length=8):
    return torch.randint(0, vocab, (n, length))


def tv():
    import torchvision.models as m
    from torchvision.models import mobilenetv3, efficientnet, convnext, regnet
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer
    from torchvision.models.densenet import DenseNet
    from torchvision.models.resnet import ResNet, BasicBlock, Bottleneck
    from torchvision.models.shufflenetv2 import ShuffleNetV2
    from torchvision.models.vgg import VGG, make_layers
    from torchvision.models.mnasnet import MNASNet
    from torchvision.models.squeezenet import Fire
    from torchvision.models.segmentation import lraspp
    from torchvision.models.segmentation.deeplabv3 import ASPP
    from torchvision.models.segmentation.fcn import FCNHead

    class TinyResNet(ResNet):
        """ResNet's own blocks and forward with 8-32 channels (ResNet hard-codes 64)."""
        def __init__(self, block, layers):
            super().__init__(block, [1, 1, 1, 1], num_classes=10)
            self.inplanes = 8
            self.conv1 = torch.nn.Conv2d(3, 8, 7, 2, 3, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(8)
            self.layer1 = self._make_layer(block, 8, layers[0])
            self.layer2 = self._make_layer(block, 16, layers[1], stride=2)
            self.layer3 = self._make_layer(block, 16, layers[2], stride=2)
            self.layer4 = self._make_layer(block, 32, layers[3], stride=2)
            self.fc = torch.nn.Linear(32 * block.expansion, 10)

    def mbv3(arch):
        settings, last = mobilenetv3._mobilenet_v3_conf(arch, width_mult=0.25)
        return mobilenetv3.MobileNetV3(settings[:4], 64, num_classes=10)

    def effnet():
        settings, last = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25,
                                                          depth_mult=0.25)
        return efficientnet.EfficientNet(settings[:4], 0.2, num_classes=10, last_channel=64)

    def cnext():
        cnb = convnext.CNBlockConfig
        return convnext.ConvNeXt([cnb(8, 16, 1), cnb(16, None, 1)], num_classes=10)

    def regnet_tiny():
        params = regnet.BlockParams.from_init_params(depth=3, w_0=8, w_a=8.0, w_m=2.0,
                                                     group_width=8)
        return regnet.RegNet(params, num_classes=10, stem_width=8)

    class Segmenter(torch.nn.Module):
        """A backbone's low (stride 2) and high (stride 4) features, torchvision's segmentation
        head, upsampled to the input size (Resize), as torchvision's segmentation models do."""
        def __init__(self, head, wants_dict=False):
            super().__init__()
            self.low = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 2, 1),
                                           torch.nn.BatchNorm2d(16), torch.nn.ReLU())
            self.high = torch.nn.Conv2d(16, 32, 3, 2, 1)
            self.head = head
            self.wants_dict = wants_dict

        def forward(self, x):
            low = self.low(x)
            high = self.high(low)
            y = self.head({"low": low, "high": high} if self.wants_dict else high)
            return torch.nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear",
                                                   align_corners=False)

    def deeplab_head():
        return torch.nn.Sequential(ASPP(32, [2, 4, 6], out_channels=16),
                                   torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),
                                   torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                                   torch.nn.Conv2d(16, 3, 1))

    def vgg():
        v = VGG(make_layers([8, "M", 16, "M", 32, "M"], batch_norm=True), num_classes=10)
        v.classifier = torch.nn.Sequential(torch.nn.Linear(32 * 7 * 7, 32), torch.nn.ReLU(),
                                           torch.nn.Linear(32, 10))
        return v

    def squeezenet():
        """SqueezeNet's Fire modules and head at a tenth of its width."""
        return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 2), torch.nn.ReLU(),
                                   torch.nn.MaxPool2d(3, 2, ceil_mode=True),
                                   Fire(16, 4, 8, 8), Fire(16, 4, 8, 8),
                                   torch.nn.MaxPool2d(3, 2, ceil_mode=True), Fire(16, 8, 16, 16),
                                   torch.nn.Conv2d(32, 10, 1), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())

    return {
        "tv_resnet_basic": (lambda: TinyResNet(BasicBlock, [1, 1, 1, 1]), image()),
        "tv_resnet_bottleneck": (lambda: TinyResNet(Bottleneck, [1, 1, 1, 1]), image()),
        "tv_mobilenet_v2": (lambda: m.MobileNetV2(num_classes=10, width_mult=0.25,
                                                   inverted_residual_setting=[[1, 16, 1, 1],
                                                                              [6, 24, 2, 2],
                                                                              [6, 32, 1, 2]]),
                            image()),
        "tv_mobilenet_v3_small": (lambda: mbv3("mobilenet_v3_small"), image()),
        "tv_mobilenet_v3_large": (lambda: mbv3("mobilenet_v3_large"), image()),
        "tv_efficientnet": (effnet, image()),
        "tv_convnext": (cnext, image()),
        "tv_densenet": (lambda: DenseNet(growth_rate=4, block_config=(2, 2),
                                         num_init_features=8, num_classes=10), image()),
        "tv_shufflenet_v2": (lambda: ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 128],
                                                  num_classes=10), image()),
        "tv_regnet": (regnet_tiny, image()),
        "tv_vgg": (vgg, image(h=56, w=56)),
        "tv_mnasnet": (lambda: MNASNet(0.1, num_classes=10), image()),
        "tv_squeezenet": (squeezenet, image(h=64, w=64)),
        "tv_vit": (lambda: VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                             num_heads=2, hidden_dim=32, mlp_dim=64,
                                             num_classes=10), image()),
        "tv_swin": (lambda: SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[1, 1],
                                            num_heads=[1, 2], window_size=[4, 4],
                                            num_classes=10), image()),
        "tv_lraspp_head": (lambda: Segmenter(lraspp.LRASPPHead(16, 32, 3, 16), True), image()),
        "tv_deeplabv3_head": (lambda: Segmenter(deeplab_head()), image()),
        "tv_fcn_head": (lambda: Segmenter(FCNHead(32, 3)), image()),
    }


def hf():
    import transformers as t

    def bert_like(config_cls, model_cls, **kw):
        cfg = config_cls(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=32, **kw)
        return model_cls(cfg).eval()

    class Logits(torch.nn.Module):
        """The model's first output tensor only (HF models return dict-like outputs)."""
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(*args, return_dict=False)[0]

    ids = tokens()
    mask = torch.ones_like(ids)
    return {
        "hf_bert": (lambda: Logits(bert_like(t.BertConfig, t.BertModel)), (ids, mask)),
        "hf_distilbert": (lambda: Logits(t.DistilBertModel(t.DistilBertConfig(
            vocab_size=64, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
            max_position_embeddings=32))), (ids, mask)),
        "hf_roberta": (lambda: Logits(bert_like(t.RobertaConfig, t.RobertaModel, pad_token_id=1)),
                       (ids + 2, mask)),
        "hf_gpt2_lm": (lambda: Logits(t.GPT2LMHeadModel(t.GPT2Config(
            vocab_size=64, n_embd=32, n_layer=2, n_head=2, n_positions=32))), (ids,)),
        "hf_llama": (lambda: Logits(t.LlamaForCausalLM(t.LlamaConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
            use_cache=False))), (ids,)),
        "hf_t5_encoder": (lambda: Logits(t.T5EncoderModel(t.T5Config(
            vocab_size=64, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2))), (ids,)),
        "hf_vit": (lambda: Logits(t.ViTModel(t.ViTConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            image_size=32, patch_size=8))), image()),
        "hf_whisper_encoder": (lambda: Logits(t.WhisperModel(t.WhisperConfig(
            vocab_size=64, num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=1,
            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_source_positions=16)).get_encoder()),
            (torch.randn(1, 16, 32),)),
    }


def timm_models():
    import timm
    from timm.models.mlp_mixer import MlpMixer
    return {
        "timm_resnet10t": (lambda: timm.create_model("resnet10t", num_classes=10,
                                                     pretrained=False, stem_width=8,
                                                     channels=(8, 16, 32, 64)), image()),
        "timm_mixer": (lambda: MlpMixer(num_classes=10, img_size=32, patch_size=8,
                                        num_blocks=2, embed_dim=32), image()),
        "timm_deit": (lambda: timm.create_model("deit_tiny_patch16_224", num_classes=10,
                                                pretrained=False, img_size=32, patch_size=8,
                                                embed_dim=32, depth=2, num_heads=2),
                      image()),
    }


# ---- export and expected outputs ---------------------------------------------------------------

def export(model, example, path, exporter):
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            torch.onnx.export(model, example, path, dynamo=True, external_data=False,
                              optimize=True)
        else:
            torch.onnx.export(model, example, path, dynamo=False, opset_version=17)


def write_case(name, model, example, exporter):
    out = os.path.join(DATA, f"{name}_{exporter}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "test_data_set_0"))
    path = os.path.join(out, "model.onnx")
    export(model, example, path, exporter)
    m = onnx.load(path)
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        shutil.rmtree(out)
        raise RuntimeError(f"model.onnx is {size} bytes, over the zoo's {MAX_BYTES}")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, (info, t) in enumerate(zip(sess.get_inputs(), example)):
        feeds[info.name] = t.numpy()
        tp = numpy_helper.from_array(t.numpy(), info.name)
        with open(os.path.join(out, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(tp.SerializeToString())
    results = sess.run(None, feeds)
    for i, (info, r) in enumerate(zip(sess.get_outputs(), results)):
        tp = numpy_helper.from_array(np.asarray(r), info.name)
        with open(os.path.join(out, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(tp.SerializeToString())
    ops = sorted({n.op_type for n in m.graph.node})
    opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    return f"{name}_{exporter}: opset {opset}, {len(m.graph.node)} nodes, {size} bytes; " \
           f"ops {' '.join(ops)}"


def main(names):
    torch.manual_seed(SEED)
    models = {}
    for family in (tv, hf, timm_models):
        try:
            models.update(family())
        except ImportError as e:
            print(f"skipping {family.__name__}: {e}", file=sys.stderr)
    os.makedirs(DATA, exist_ok=True)
    errors = []
    for name, (build, example) in models.items():
        if names and name not in names:
            continue
        rng = np.random.default_rng(SEED)
        torch.manual_seed(SEED)
        try:
            model = build().eval()
            randomise(model, rng)
            calibrate_batch_norms(model, example)
        except Exception as e:  # a config this torchvision/timm/transformers does not take
            errors.append(f"{name}: building it failed: {type(e).__name__}: "
                          + " ".join(str(e).split())[:300])
            print(errors[-1], file=sys.stderr)
            continue
        for exporter in ("dynamo", "script"):
            try:
                print(write_case(name, model, example, exporter))
            except Exception as e:  # an exporter's failure is recorded, not hidden
                message = " ".join(str(e).split())[:300]
                errors.append(f"{name}_{exporter}: {type(e).__name__}: {message}")
                print(errors[-1], file=sys.stderr)
                shutil.rmtree(os.path.join(DATA, f"{name}_{exporter}"), ignore_errors=True)
    if not names:
        with open(os.path.join(DATA, "EXPORT_ERRORS.txt"), "w") as f:
            f.write("# Models an exporter could not produce (make_zoo.py), with its error.\n")
            f.writelines(e + "\n" for e in errors)


if __name__ == "__main__":
    main(sys.argv[1:])

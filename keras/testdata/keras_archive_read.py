"""Reads a .keras archive (or a .weights.h5) as Keras 3 would, with Python's
zipfile and h5py only, and checks it against NumPy's reading of the same
model's .npz (np.load, by Keras' variable names).

  python3 keras_archive_read.py MODEL.keras|MODEL.weights.h5 WEIGHTS.npz LAYOUT.json

LAYOUT.json maps each h5 dataset Keras 3 reads ("layers/dense_1/vars/0") to
the .npz name of the variable it must hold ("a2/kernel"). Prints a JSON
report; exits 1 on the first difference.
"""
import io
import json
import sys
import zipfile

import h5py
import numpy as np

path, npz_path, layout_path = sys.argv[1:4]
layout = json.load(open(layout_path))
report = {}
if path.endswith(".keras"):
    with zipfile.ZipFile(path) as zf:
        report["members"] = sorted(zf.namelist())
        config = json.loads(zf.read("config.json"))
        metadata = json.loads(zf.read("metadata.json"))
        h5_bytes = zf.read("model.weights.h5")
    report["class_name"] = config["class_name"]
    report["layers"] = [l["class_name"] for l in config["config"]["layers"]]
    report["keras_version"] = metadata["keras_version"]
    report["compile_config"] = config.get("compile_config")
    h5 = h5py.File(io.BytesIO(h5_bytes), "r")
else:
    h5 = h5py.File(path, "r")

datasets, groups = {}, []
h5.visititems(lambda name, obj: datasets.__setitem__(name, np.array(obj))
              if isinstance(obj, h5py.Dataset) else groups.append(name))
report["root_vars"] = "vars" in h5
report["layer_groups"] = sorted(g for g in groups if g.startswith("layers/") and g.endswith("/vars"))
npz = np.load(npz_path)
problems = []
if sorted(datasets) != sorted(layout):
    problems.append({"datasets": sorted(datasets), "expected": sorted(layout)})
for h5_name, var in layout.items():
    if h5_name not in datasets:
        continue
    got, want = datasets[h5_name], npz[var]
    if got.dtype != np.float32 or got.shape != want.shape or not np.array_equal(got, want):
        problems.append({"dataset": h5_name, "variable": var, "shape": list(got.shape),
                         "want_shape": list(want.shape)})
report["problems"] = problems
print(json.dumps(report))
sys.exit(1 if problems else 0)

"""onnxruntime session options for the stage-3 cross-encoder: 20 real (question, paragraph) pairs from musique
(~107 tokens each), one at a time as stage 3 runs them, 5 alternating rounds per option; prints the median ms.

    python bench_results/probes/ort_options_probe.py
"""
from _scale_library import REPO  # also puts the repo on sys.path

import time, numpy as np, onnxruntime as ort
from thread_rag.onnx_models import packaged_onnx_dir, OnnxEncoder
d = packaged_onnx_dir('ms-marco-MiniLM-L-12-v2')
enc = OnnxEncoder(d, max_tokens=256)
# 20 real pairs: musique paragraphs
from thread_rag.bench.datasets import load_dataset
ds = load_dataset('musique', REPO.parent / 'shared' / 'data')
q = ds.queries[0].text
ps = [doc.text for doc in ds.corpus[:20]]
es = enc.encodings([(q, p) for p in ps])
print('mean tokens', np.mean([len(e.ids) for e in es]), ort.__version__)
def mk(level=None, spin=None, threads=2):
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    if level is not None: o.graph_optimization_level = level
    if spin is not None: o.add_session_config_entry('session.intra_op.allow_spinning', spin)
    return ort.InferenceSession(str(d/'model.onnx'), o, providers=['CPUExecutionProvider'])
variants = {'default': mk(), 'basic': mk(ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
            'disable': mk(ort.GraphOptimizationLevel.ORT_DISABLE_ALL), 'nospin': mk(spin='0'), 't1': mk(threads=1)}
print([i.name for i in variants['default'].get_inputs()], variants['default'].get_session_options().graph_optimization_level)
def run(s):
    t = time.perf_counter()
    for e in es:
        s.run(None, {'input_ids': np.asarray([e.ids], np.int64), 'attention_mask': np.asarray([e.attention_mask], np.int64), 'token_type_ids': np.asarray([e.type_ids], np.int64)})
    return (time.perf_counter() - t) * 1000
for s in variants.values(): run(s)
res = {k: [] for k in variants}
for _ in range(5):
    for k, s in variants.items(): res[k].append(run(s))
for k, v in res.items(): print(k, [round(x) for x in v], 'median', round(float(np.median(v))))

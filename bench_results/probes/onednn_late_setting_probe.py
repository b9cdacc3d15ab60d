"""Does ONEDNN_PRIMITIVE_CACHE_CAPACITY still work when set after `import torch` (as the embedder sets it)? A bf16
Linear(384 -> 1536) over inputs of 399 sequence lengths (a new oneDNN kernel per shape); prints the RSS growth.

    python bench_results/probes/onednn_late_setting_probe.py none     # variable unset (oneDNN's 1,024)
    python bench_results/probes/onednn_late_setting_probe.py late     # set to 8 after import torch
    ONEDNN_PRIMITIVE_CACHE_CAPACITY=8 python bench_results/probes/onednn_late_setting_probe.py early
"""
import os, sys, torch
if sys.argv[1] == "late":
    os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = "8"
def rss():
    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) // 1024
lin = torch.nn.Linear(384, 1536).to(torch.bfloat16)
r0 = rss()
with torch.inference_mode():
    for L in range(1, 400):
        lin(torch.randn(64, L, 384, dtype=torch.bfloat16))
print(sys.argv[1], 'rss growth MiB', rss() - r0, torch.backends.mkldnn.is_available())

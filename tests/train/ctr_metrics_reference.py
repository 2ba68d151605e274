# Prints the inputs and the scikit-learn reference values of tests/train/ctr_metrics_test.cc
# (pip install scikit-learn; run: python3 tests/train/ctr_metrics_reference.py).
import numpy as np, sklearn
from sklearn.metrics import roc_auc_score, log_loss, average_precision_score
rng = np.random.default_rng(14)
n = 40
p = np.round(rng.uniform(0.02, 0.98, n), 2).astype(np.float32)
y = (rng.uniform(size=n) < p * 0.8 + 0.1).astype(np.float32)
w = rng.choice([0.5, 1.0, 2.0, 3.0], n).astype(np.float32)
g = rng.integers(0, 6, n)
pd = p.astype(np.float64); wd = w.astype(np.float64)
def fmt(a, f): return "{" + ", ".join(f(x) for x in a) + "}"
print("const std::vector<float> kP =", fmt(p, lambda x: repr(float(x)) + "f"), ";")
print("const std::vector<float> kY =", fmt(y, lambda x: str(int(x))), ";")
print("const std::vector<float> kW =", fmt(w, lambda x: repr(float(x)) + "f"), ";")
print("const std::vector<int64_t> kG =", fmt(g, str), ";")
def all_metrics(sw, rate=1.0):
    sw = sw.copy() if sw is not None else np.ones(n)
    sw = np.where(y == 0, sw / rate, sw)
    auc = roc_auc_score(y, pd, sample_weight=sw)
    ll = log_loss(y, pd, sample_weight=sw)
    ctr = np.sum(sw * y) / np.sum(sw)
    ne = ll / log_loss(y, np.full(n, ctr), sample_weight=sw)
    cal = np.sum(sw * pd) / np.sum(sw * y)
    ap = average_precision_score(y, pd, sample_weight=sw)
    num = den = 0.0; used = skipped = 0
    for k in sorted(set(g)):
        m = g == k
        if len(set(y[m])) < 2: skipped += 1; continue
        a = roc_auc_score(y[m], pd[m], sample_weight=sw[m]); num += sw[m].sum() * a; den += sw[m].sum(); used += 1
    return dict(auc=auc, logloss=ll, ne=ne, cal=cal, ap=ap, gauc=num/den, used=used, skipped=skipped)
print("// sklearn", sklearn.__version__)
for name, sw, rate in [("unweighted", None, 1.0), ("weighted", wd, 1.0), ("downsampled", wd, 0.25)]:
    print(name, {k: float(v) if isinstance(v, float) else v for k, v in all_metrics(sw, rate).items()})

#!/usr/bin/env python3
"""scikit-learn LogisticRegression on ctrain's fixed-length LibSVM: the reference for
`--model lr` in bench/zoo_bench.sh (FuxiCTR's LR layer does not train on raw numeric
values: its xavier-initialised numeric weights meet the values as stored).

Features: a scipy CSR matrix [N, feature_size] with the value of each id:val pair (the
same sparse features ctrain's lr reads), lbfgs, C = --c (default 1.0), intercept on.
Deterministic (--seed is recorded only). Prints one JSON line with auc and valid_logloss.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402


def csr(ds, feature_size):
    from scipy.sparse import csr_matrix
    n, f = ds.ids.shape
    return csr_matrix((ds.values.ravel(), ds.ids.ravel(), np.arange(0, n * f + 1, f)), shape=(n, feature_size))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", required=True)
    p.add_argument("--valid", required=True)
    p.add_argument("--field-size", type=int, default=39)
    p.add_argument("--feature-size", type=int, required=True)
    p.add_argument("--id-offset", type=int, default=0)
    p.add_argument("--c", type=float, default=1.0, help="inverse L2 strength")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    import sklearn
    from sklearn.linear_model import LogisticRegression
    tr = common.load_data(a.train, a.field_size, a.id_offset)
    va = common.load_data(a.valid, a.field_size, a.id_offset)
    for ds, path in ((tr, a.train), (va, a.valid)):
        common.check_ids(ds, a.feature_size, path)
    clf = LogisticRegression(C=a.c, max_iter=2000).fit(csr(tr, a.feature_size), tr.labels)
    pr = clf.predict_proba(csr(va, a.feature_size))[:, 1]
    common.emit({"peer": "sklearn", "model": "lr", "sklearn": sklearn.__version__, "seed": a.seed,
                 "C": a.c, "iterations": int(clf.n_iter_[0]),
                 "auc": common.auc(va.labels, pr), "valid_logloss": common.logloss(va.labels, pr)})


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""The report of bench/zoo_bench.sh: reads its runs (one JSON object per line), prints the
accuracy and throughput tables as Markdown and writes the summary JSON.

Usage: zoo_report.py RUNS.jsonl OUT.json "deepfm lr ..."

Roofline: the best (max) sgemm GFLOP/s of the repeats / the GEMM FLOPs per training example (forward + backward data + backward weights = 3 x 2·in·out
per GEMM, docs/model.md), for the bench's configuration (F 39, K 16, MLP 200-200, 3 cross
layers, CIN 16,16,16, dlrm 13 dense fields, bottom 64,64, top 200,200): gemm_flops(kind).
"""

import json
import statistics
import sys

F, K, DEEP, CROSS, CIN, ND, BOTTOM, TOP = 39, 16, [200, 200], 3, [16, 16, 16], 13, [64, 64], [200, 200]


def mlp_flops(i, hidden, out):
    dims = [i] + hidden + ([out] if out else [])
    return sum(6 * a * b for a, b in zip(dims, dims[1:]))


def gemm_flops(kind):
    D = F * K
    if kind in ("lr", "fm"):
        return 0
    if kind in ("deepfm", "wide_deep"):
        return mlp_flops(D, DEEP, 1)
    if kind == "dcn":   # cross: x_l . w_l is a [B,D]x[D,1] GEMM per layer
        return mlp_flops(D, DEEP, None) + CROSS * 6 * D + 6 * (D + DEEP[-1])
    if kind == "dcn_v2":
        return mlp_flops(D, DEEP, None) + CROSS * 6 * D * D + 6 * (D + DEEP[-1])
    if kind == "dlrm":  # the pairwise dots as a [n,K]x[K,n] GEMM per example
        n = F - ND + 1
        return mlp_flops(ND, BOTTOM, K) + 6 * n * n * K + mlp_flops(n * (n - 1) // 2 + K, TOP, 1)
    if kind == "xdeepfm":
        prev, cin = F, 0
        for h in CIN:
            cin += 6 * h * F * prev * K
            prev = h
        return mlp_flops(D, DEEP, 1) + cin + 6 * sum(CIN)
    raise ValueError(kind)


def roof_cell(v):
    """A fraction above 1 means the roofline run itself was slowed (e.g. OpenMP threads descheduled on a
    loaded machine): shown, but marked as not meaningful."""
    if v is None:
        return "–"
    return f"{v:.2f}" if v <= 1.05 else f"{v:.2f} (roofline run disturbed)"


def stats(v):
    v = [x for x in v if x is not None]
    if not v:
        return None
    return {"min": min(v), "median": statistics.median(v), "max": max(v), "runs": v}


def fmt(s, key="median", digits=4):
    if not s:
        return "–"
    return f"{s[key]:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def main(runs_path, out_path, models):
    runs = [json.loads(line) for line in open(runs_path) if line.strip()]
    models = models.split()
    acc = [r for r in runs if r.get("bench") == "accuracy"]
    tp = [r for r in runs if r.get("bench") == "throughput"]
    roof = [r for r in runs if r.get("bench") == "roofline"]
    summary = {"bench": "zoo", "models": models, "accuracy": {}, "throughput": {}}

    if acc:
        print("| model | reference | ctrain AUC median (min–max) | reference AUC | ctrain logloss | reference logloss"
              " | AUC ≥ ref − 0.003 | logloss ≤ ref + 0.003 |")
        print("|---|---|---|---|---|---|---|---|")
    for m in models:
        ct = [r for r in acc if r["model"] == m and r["peer"] == "ctrain"]
        ref = [r for r in acc if r["model"] == m and r["peer"] != "ctrain"]
        if not ct or not ref:
            continue
        row = {"ctrain_auc": stats([r["auc"] for r in ct]), "ctrain_logloss": stats([r["valid_logloss"] for r in ct]),
               "reference": ref[0]["peer"], "ref_auc": stats([r["auc"] for r in ref]),
               "ref_logloss": stats([r["valid_logloss"] for r in ref])}
        row["auc_ok"] = row["ctrain_auc"]["median"] >= row["ref_auc"]["median"] - 0.003
        row["logloss_ok"] = row["ctrain_logloss"]["median"] <= row["ref_logloss"]["median"] + 0.003
        summary["accuracy"][m] = row
        ok = lambda b: "✔" if b else "✘"
        print(f"| {m} | {row['reference']} | {fmt(row['ctrain_auc'])} | {fmt(row['ref_auc'])} | "
              f"{fmt(row['ctrain_logloss'])} | {fmt(row['ref_logloss'])} | {ok(row['auc_ok'])} | "
              f"{ok(row['logloss_ok'])} |")

    if tp:
        print()
        print("| model | threads | ctrain ex/s median (min) | FuxiCTR | PyTorch | ctrain / FuxiCTR | ctrain / PyTorch"
              " | ctrain / GEMM roofline | load1 |")
        print("|---|---|---|---|---|---|---|---|---|")
    threads = sorted({r["threads"] for r in tp})
    for m in models:
        for t in threads:
            sel = lambda p: stats([r["examples_per_sec"] for r in tp if r["model"] == m and r["threads"] == t
                                   and r["peer"] == p])
            ct, fx, pt = sel("ctrain"), sel("fuxictr"), sel("pytorch")
            if not ct:
                continue
            loads = [r["load1"] for r in tp if r["model"] == m and r["threads"] == t]
            g = stats([r["gflops"] for r in roof if r["threads"] == t])
            flops = gemm_flops(m)
            roof_eps = g["max"] * 1e9 / flops if g and flops else None  # the best GEMM rate seen is the roofline
            ratio = lambda a, b: a["median"] / b["median"] if a and b and b["median"] > 0 else None
            row = {"ctrain": ct, "fuxictr": fx, "pytorch": pt, "ctrain_over_fuxictr": ratio(ct, fx),
                   "ctrain_over_pytorch": ratio(ct, pt), "gemm_flops_per_example": flops,
                   "roofline_gflops": g, "roofline_examples_per_sec": roof_eps,
                   "ctrain_over_roofline": ct["median"] / roof_eps if roof_eps else None,
                   "load1": {"min": min(loads), "max": max(loads)}}
            summary["throughput"].setdefault(m, {})[str(t)] = row
            n = lambda s: f"{s['median']:,.0f} ({s['min']:,.0f})" if s else "–"
            x = lambda v, d=2: f"{v:.{d}f}" if v is not None else "–"
            print(f"| {m} | {t} | {n(ct)} | {n(fx)} | {n(pt)} | {x(row['ctrain_over_fuxictr'])}× | "
                  f"{x(row['ctrain_over_pytorch'])}× | {roof_cell(row['ctrain_over_roofline'])} | "
                  f"{min(loads):.1f}–{max(loads):.1f} |")
    with open(out_path, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"\n(JSON: {out_path})")


if __name__ == "__main__":
    main(*sys.argv[1:4])

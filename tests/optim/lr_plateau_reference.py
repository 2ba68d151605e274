# The reference of tests/optim/lr_plateau_test.cc: PyTorch's
# torch.optim.lr_scheduler.ReduceLROnPlateau (threshold_mode "abs") stepped
# with the same metric sequences. Reads the cases (JSON) from argv[1], prints
# {"lrs": [[the rate after each step, ...], ...]} as JSON (17 significant
# digits: the doubles exactly). Exit 3 when torch is not installed.
import json, sys, warnings

try:
    import torch
except ImportError:
    print("torch is not installed", file=sys.stderr)
    sys.exit(3)

warnings.simplefilter("ignore")
cases = json.load(open(sys.argv[1]))
out = []
for c in cases:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=c["lr"])
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode=c["mode"], factor=c["factor"], patience=c["patience"], threshold=c["min_delta"],
        threshold_mode="abs", cooldown=c["cooldown"], min_lr=c["min_lr"])
    lrs = []
    for m in c["metrics"]:
        sched.step(float("nan") if m is None else m)
        lrs.append(float(opt.param_groups[0]["lr"]))
    out.append(lrs)
print(json.dumps({"torch": torch.__version__, "lrs": out}))

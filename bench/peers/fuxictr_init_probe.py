#!/usr/bin/env python3
"""Which of FuxiCTR's initialisation choices makes its zoo models beat ctrain's on the real split (issue #22).

Runs bench/peers/fuxictr_zoo.py (same arguments, same JSON line) after re-initialising the tables by
--variant, once FuxiCTR's own BaseModel.reset_parameters has run:
  default    FuxiCTR as shipped: categorical tables normal(std 1e-4); a numeric field's embedding is an
             nn.Linear(1, K) (xavier_normal: std sqrt(2 / (1 + K)), 0.34 at K 16), its LR weight an
             nn.Linear(1, 1) (std 1).
  small      every table normal(1e-4), numeric fields' Linear(1, *) included (ctrain's
             normal(1e-4) initialisation of every row).
  glorot     categorical normal(1e-4); numeric fields' Linear(1, *) normal(std sqrt(2 / (feature_size + K))),
             ctrain's default spread (tf.glorot_normal over [feature_size, K]).
  allglorot  every table normal(std sqrt(2 / (feature_size + K))): ctrain's default for every row.
  catglorot  categorical tables at ctrain's default spread, numeric fields as shipped.
  noclip     as shipped, without train_step's gradient clipping at norm 10.
Example (seed 1, DeepFM, the zoo bench's settings and split: bench/zoo_bench.sh writes train/valid files):
  python3 bench/peers/fuxictr_init_probe.py --variant small --model deepfm --field-size 39 --embedding-size 16 \
    --deep-layers 200,200 --dropout 0 --num-dense-fields 13 --batch-size 256 --learning-rate 0.001 \
    --train tr.libsvm --valid va.libsvm --id-offset 1 --feature-size 922 --epochs 3 --seed 1 --threads 1
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuxictr_zoo  # noqa: E402
from torch import nn  # noqa: E402

VARIANTS = ("default", "small", "glorot", "allglorot", "catglorot", "noclip")


def main(argv):
    if "--variant" not in argv:
        sys.exit("fuxictr_init_probe.py: --variant {%s} is required" % "|".join(VARIANTS))
    i = argv.index("--variant")
    if i + 1 >= len(argv) or argv[i + 1] not in VARIANTS:
        sys.exit("fuxictr_init_probe.py: --variant takes one of %s" % ", ".join(VARIANTS))
    variant = argv[i + 1]
    rest = argv[:i] + argv[i + 2:]
    feature_size = int(rest[rest.index("--feature-size") + 1])
    finish = fuxictr_zoo.ZooModel.finish

    def probe_finish(self):
        finish(self)
        for name, m in self.named_modules():
            numeric = isinstance(m, nn.Linear) and m.in_features == 1 and "embedding" in name
            if isinstance(m, nn.Embedding) and variant in ("allglorot", "catglorot"):
                nn.init.normal_(m.weight, std=(2.0 / (feature_size + m.embedding_dim)) ** 0.5)
            elif numeric and variant == "small":
                nn.init.normal_(m.weight, std=1e-4)
            elif numeric and variant in ("glorot", "allglorot"):
                nn.init.normal_(m.weight, std=(2.0 / (feature_size + m.out_features)) ** 0.5)
        if variant == "noclip":
            self._max_gradient_norm = float("inf")

    fuxictr_zoo.ZooModel.finish = probe_finish
    fuxictr_zoo.main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Benchmark: our PGD-10 against torchattacks' on the same model and batch; CAS over the digits test set.

Also times one PreActResNet-18 PGD-AT step on CIFAR-shaped random tensors (``--prn-batch``; the
CIFAR-10 epoch at batch 128 is 391 steps). Writes JSON and prints a markdown table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from icml25_shared.bench import BenchmarkReport, compare

from crossclass_at import PGD, DigitsCNN, PreActResNet18, cas, class_attribution, correlation_matrix
from crossclass_at.data import load_digits_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/crossclass_at/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prn-batch", type=int, default=16, help="batch of the PreActResNet-18 cases (0: skip them)")
    args = parser.parse_args()
    import torchattacks

    report = BenchmarkReport("crossclass-at", packages=["crossclass-at", "torch", "torchattacks"])
    torch.manual_seed(0)
    d = load_digits_split(random_state=0)
    cases = [("PGD-10, DigitsCNN(width=32), digits batch 256", DigitsCNN(), d.x_train[:256], d.y_train[:256])]
    if args.prn_batch:
        cases.append((f"PGD-10, PreActResNet-18, CIFAR-shaped batch {args.prn_batch}", PreActResNet18(),
                      torch.rand(args.prn_batch, 3, 32, 32), torch.randint(0, 10, (args.prn_batch,))))
    for label, model, x, y in cases:
        ours_attack = PGD(eps=8 / 255, alpha=2 / 255, steps=10, random_start=False)
        peer_attack = torchattacks.PGD(model, eps=8 / 255, alpha=2 / 255, steps=10, random_start=False)
        same = torch.equal(ours_attack(model, x, y), peer_attack(x, y))
        report.add(compare(lambda m=model, x=x, y=y, a=ours_attack: a(m, x, y), lambda x=x, y=y, a=peer_attack: a(x, y),
                           label=label, ours_name="crossclass_at.PGD", peer_name="torchattacks.PGD",
                           repeats=args.repeats, sizes={"batch": len(x), "input": list(x.shape[1:])},
                           metrics={"identical": same}))
    model = DigitsCNN()

    def score() -> float:
        return cas(correlation_matrix(class_attribution(model, d.x_test, d.y_test, attack=PGD(eps=0.1, steps=20),
                                                        generator=torch.Generator().manual_seed(0))))

    report.add(compare(score, None, label="CAS over the digits test set (PGD-20, DigitsCNN)",
                       ours_name="class_attribution+cas", repeats=max(1, args.repeats // 2),
                       sizes={"n": len(d.x_test)}, metrics={"cas": score()}))
    if args.prn_batch:
        model = PreActResNet18()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        x, y = torch.rand(args.prn_batch, 3, 32, 32), torch.randint(0, 10, (args.prn_batch,))
        attack = PGD(eps=8 / 255, steps=10, bn_mode="train")

        def step() -> None:
            adv = attack(model, x, y)
            model.train()
            loss = torch.nn.functional.cross_entropy(model(adv), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        report.add(compare(step, None, label=f"PGD-AT step, PreActResNet-18, batch {args.prn_batch}",
                           ours_name="PGD-10 + SGD step", repeats=max(1, args.repeats // 2),
                           sizes={"batch": args.prn_batch, "input": [3, 32, 32]}))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()

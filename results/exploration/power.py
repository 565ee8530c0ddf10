"""How likely is one run of the CPU recipe to reach McNemar p < 0.01 on 128 problems? (issue #17, round 5)

Pools the seeded runs of the `cpu` profile's recipe (commit c8d0b8c on: the three reference runs on the
reported test problems, now in round6/g4-reference/cpu-curriculum{,-seed1,-seed2}, and round 5's single-pass runs on the
development set, round5/it1-s*), estimates the discordant rate d = (gained + lost) / n and the net
effect delta = (gained - lost) / n, and simulates new runs of n problems with those rates (exact McNemar,
helpers.statistics.mcnemar_exact_p). Run from the repository root: python results/exploration/power.py"""
import json
import random
from pathlib import Path

from helpers.statistics import mcnemar_exact_p

R = Path("results")
EXP = R / "exploration"


def read_runs(summary_dirs, result_dirs):
    """{label: (gained, lost, n)} from reference runs' summary.json and exploration runs' result.json."""
    runs = {}
    for run_dir in summary_dirs:
        t = json.loads((run_dir / "summary.json").read_text())["problems"]["mcnemar_start_vs_grpo"]["all"]["correct"]
        runs[str(run_dir.relative_to(EXP if EXP in run_dir.parents else R))] = (t["lora_only"], t["base_only"], t["n"])
    for run_dir in result_dirs:
        r = json.loads((run_dir / "result.json").read_text())
        runs[str(run_dir.relative_to(EXP))] = (r["gained"], r["lost"], 128)
    return runs


def show(runs):
    for name, (g, l, n) in runs.items():
        print(f"{name:28s} gained {g:2d} lost {l:2d} of {n}: net {g - l:+d}, p = {mcnemar_exact_p(l, g):.3g}")


def pooled(runs):
    """Discordant rate d and net effect delta over the pooled runs, printed."""
    G, L, N = (sum(v[i] for v in runs.values()) for i in range(3))
    d, delta = (G + L) / N, (G - L) / N
    print(f"pooled over {len(runs)} runs: discordant rate d = {d:.3f}, net effect delta = {delta:.4f} "
          f"({delta * 128:+.1f} of 128)")
    return d, delta


SEEDS = ("cpu-curriculum", "cpu-curriculum-seed1", "cpu-curriculum-seed2")
runs = read_runs([EXP / "round6" / "g4-reference" / name for name in SEEDS], sorted((EXP / "round5").glob("it1-s*")))
show(runs)
for d in sorted((EXP / "round5").glob("it2-s*")):  # mu = 2: shown, not pooled
    r = json.loads((d / "result.json").read_text())
    print(f"{'(mu = 2, not pooled) ' + d.name:28s} gained {r['gained']:2d} lost {r['lost']:2d} of 128: "
          f"net {r['gained'] - r['lost']:+d}, p = {mcnemar_exact_p(r['lost'], r['gained']):.3g}")
d, delta = pooled(runs)

def power(n, d, delta, alpha=0.01, sims=4000, seed=0):
    """Share of simulated runs of n problems with exact McNemar p < alpha (gain in the direction of delta);
    each call draws from its own seeded stream, so equal arguments give equal answers."""
    rng, hits = random.Random(seed), 0
    for _ in range(sims):
        k = sum(rng.random() < d for _ in range(n))  # discordant problems
        gained = sum(rng.random() < (d + delta) / (2 * d) for _ in range(k))
        hits += gained > k - gained and mcnemar_exact_p(k - gained, gained) < alpha
    return hits / sims


for n in (128, 256, 512, 768):
    print(f"n = {n:3d} problems: P(p < 0.01) = {power(n, d, delta):.2f}")
for net in (8, 12, 17, 20):
    print(f"net effect {net:+d} of 128 (same d): P(p < 0.01 on 128) = {power(128, d, net / 128):.2f}")

# Round 6 (G = 8, the cpu profile from commit 33b2ff1 to round 8): its reference runs, now in
# round8/unscaled-reference/cpu-curriculum{,-seed1,-seed2}, and round 6's development-set runs round6/g8-s*, pooled the same way.
print("\nG = 8:")
g8 = read_runs([EXP / "round8" / "unscaled-reference" / name for name in SEEDS], sorted((EXP / "round6").glob("g8-s*")))
show(g8)
d8, delta8 = pooled(g8)
for n in (128, 256):
    print(f"n = {n:3d} problems: P(p < 0.01) = {power(n, d8, delta8):.2f}")

#!/usr/bin/python3
"""Property test of backend-compare's verdict: a wrong backend is never missed.

For configs and faults drawn at random with a fixed seed, every fault the simulated device injects
is caught: backend-compare exits 1, the first divergent node it reports is the faulted one, and
where the outputs are beyond their end-to-end tolerance the node it says the error grows from is the
faulted one too.

Configs: the shipped ones that compute quickly, small llama_decoder, attention and mlp configs
generated with random sizes, weight types, settings and placements on the simulated devices, and a
GGUF model fixture. Faults: by index and by name, with and without --placed (placed where the
placement puts the node on a simulated device), on every compute node type of those configs at
least once, then at random up to --cases.

    compare_faults.py BACKEND_COMPARE REPO [--seed N] [--cases N] [--jobs N] [-v]
Exit 0 when every fault is caught, 1 otherwise (each miss listed), 2 on a setup error.
"""
import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True

# Shipped configs cheap enough to fault (under a second a run on one thread), with the maps that put
# their CUDA devices on simulated ones, and what a run costs next to the default config's: faults go
# to the cheapest config that has the node type, and the rest the more often the cheaper a config
# is (a fixed figure, not a measured one, so that the draw depends on the seed alone).
SHIPPED = {"default.json": 1, "attention.json": 1, "all-ops.json": 1, "gguf-example.json": 1, "mlp.json": 2,
           "llama-decoder-offload.json": 10}
MAPS = ["--map", "CUDA0=SIM0", "--map", "CUDA1=SIM1"]
WEIGHT_TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q5_1", "q4_K", "q6_K"]


class Config:
    def __init__(self, name, path, extra=(), placed=False, cost=1):
        self.name, self.path, self.extra, self.placed, self.cost = name, path, list(extra), placed, cost
        self.nodes = {}  # mode ("pair" / "placed") -> the no-fault report's nodes


def generated_configs(rng, out_dir, count):
    """Small configs with random sizes, weight types and placements on SIM0 (and SIM1)."""
    configs = []
    for k in range(count):
        kind = ["llama_decoder", "llama_decoder", "attention", "mlp"][k % 4]
        wtype = rng.choice(WEIGHT_TYPES)
        n_head = rng.choice([2, 4])
        head_dim = rng.choice([32, 64]) if wtype in ("f32", "f16", "bf16") else 64
        # Rows hold whole blocks: 32 values in the legacy types, 256 in the k-quants.
        n_embd = 256 if wtype.endswith("_K") else n_head * head_dim
        if kind == "llama_decoder":
            n_tokens = rng.choice([1, 3, 8])
            params = {"n_layers": rng.choice([1, 2]), "n_embd": n_embd, "n_head": n_head,
                      "n_head_kv": rng.choice([n_head, n_head // 2]), "n_ff": rng.choice([256, 512]),
                      "n_tokens": n_tokens, "n_kv": n_tokens + rng.choice([0, 8]),
                      "n_vocab": rng.choice([128, 300]), "weight_type": wtype, "flash_attn": rng.random() < 0.5}
        elif kind == "attention":
            n_tokens = rng.choice([1, 4, 8])
            params = {"n_embd": n_embd, "n_head": n_head, "n_head_kv": rng.choice([n_head, 1]), "n_tokens": n_tokens,
                      "n_kv": n_tokens + rng.choice([0, 16]), "flash_attn": rng.random() < 0.5, "weight_type": wtype}
        else:
            params = {"n_layers": rng.choice([1, 2]), "n_embd": 256, "n_hidden": rng.choice([256, 512]),
                      "n_batch": rng.choice([1, 4]), "activation": rng.choice(["gelu", "silu", "relu"]),
                      "weight_type": wtype}
        placement = {"backends": ["SIM0", "CPU"]}
        if kind == "llama_decoder" and params["n_layers"] == 2 and rng.random() < 0.5:
            placement = {"backends": ["SIM0", "SIM1", "CPU"], "split": {"mode": "layer", "devices": ["SIM0", "SIM1"]}}
        name = f"gen{k}-{kind}-{wtype}"
        path = os.path.join(out_dir, name + ".json")
        with open(path, "w") as f:
            json.dump({"name": name, "seed": rng.randrange(1 << 30), "graph": {"model": kind, "params": params},
                       "placement": placement}, f)
        # Some refuse an op on SIM0: skipped nodes in a pair, splits in a placed run.
        extra = ["-P", "SIM0:unsupported=" + rng.choice(["rope", "soft_max", "rms_norm"])] if rng.random() < 0.3 else []
        configs.append(Config(name, path, extra, placed=True))
    return configs


def run(tool, args, timeout=300):
    """(exit code, report or None, stderr) of one backend-compare run with --format json."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        p = subprocess.run([tool, *args, "--format", "json", "-o", out.name], capture_output=True, text=True,
                           timeout=timeout)
        try:
            report = json.load(open(out.name))
        except (OSError, ValueError):
            report = None
    return p.returncode, report, p.stderr


# One CPU thread: OpenMP teams spin while they wait, which costs dearly on a busy CI machine.
def pair_args(config):
    return ["-t", "1", "-c", config.path, "-b", "CPU,SIM0", *MAPS, *config.extra]


def placed_args(config):
    return ["-t", "1", "-c", config.path, "--placed", *MAPS, *config.extra]


def survey(tool, config):
    """The no-fault reports: the nodes each mode computes (and where, placed); both must pass."""
    modes = [("pair", pair_args(config))] + ([("placed", placed_args(config))] if config.placed else [])
    for mode, args in modes:
        rc, report, err = run(tool, args)
        if rc != 0 or report is None:
            raise SystemExit(f"compare_faults: {config.name} ({mode}) without a fault exits {rc}, not 0:\n{err}")
        config.nodes[mode] = [n for n in report["nodes"] if "nmse" in n]
    return config


def candidates(configs):
    """Every (config, mode, node) a fault can go to: a node the target computes; placed, on a SIM."""
    out = []
    for c in configs:
        for mode, nodes in c.nodes.items():
            for n in nodes:
                if mode == "placed" and not n.get("device", "").startswith("SIM"):
                    continue
                out.append((c, mode, n))
    return out


def draw_cases(rng, pool, n_cases):
    """Every node type at least once (in the cheapest config that has it), then random ones, a
    config the more often the cheaper it is; addressing by index or name at random."""
    by_type = {}
    for cand in pool:
        by_type.setdefault(cand[2]["op"], []).append(cand)
    chosen = []
    for t in sorted(by_type):
        cheapest = min(c[0].cost for c in by_type[t])
        chosen.append(rng.choice([c for c in by_type[t] if c[0].cost == cheapest]))
    # The rest half placed, half not, so that both paths are faulted often.
    pools = [[c for c in pool if c[1] == mode] for mode in ("placed", "pair")]
    pools = [p for p in pools if p]
    weights = [[1.0 / c[0].cost for c in p] for p in pools]
    while len(chosen) < n_cases:
        k = len(chosen) % len(pools)
        chosen.append(rng.choices(pools[k], weights[k])[0])
    cases = []
    for k, (c, mode, n) in enumerate(chosen):
        # Alternate at first so that each addressing and mode is sure to appear.
        by = ["index", "name"][k % 2] if k < 4 else rng.choice(["index", "name"])
        cases.append((c, mode, n, by))
    return cases, sorted(by_type)


def check_case(tool, case):
    """None when the fault is caught as it must be, else what went wrong."""
    c, mode, n, by = case
    item = str(n["index"]) if by == "index" else n["name"]
    device = n.get("device", "SIM0") if mode == "placed" else "SIM0"
    args = (placed_args(c) if mode == "placed" else pair_args(c)) + ["-P", f"{device}:fault_node={item}"]
    rc, report, err = run(tool, args)
    what = f"{c.name} {mode} fault_node={item} (#{n['index']} {n['name']}, {n['op']})"
    if rc != 1 or report is None:
        return f"{what}: exit {rc}, expected 1\n{err}"
    if report["first_divergent"] != n["index"]:
        return f"{what}: first divergent node {report['first_divergent']}, expected {n['index']}\n{err}"
    e2e = report["end_to_end"]
    growth = e2e.get("growth_node")
    if e2e.get("judged") and not e2e["ok"] and (growth is None or growth["index"] != n["index"]):
        return f"{what}: the error grows from {growth and growth['index']}, expected {n['index']}\n{err}"
    if f"first divergent node: #{n['index']} " not in err:
        return f"{what}: stderr does not name #{n['index']}\n{err}"
    return None


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tool")
    p.add_argument("repo")
    p.add_argument("--seed", type=int, default=32)
    p.add_argument("--cases", type=int, default=80, help="faults in all (at least one per node type)")
    p.add_argument("--generated", type=int, default=8, help="configs generated at random")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    start = time.monotonic()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        configs = [Config(name, os.path.join(args.repo, "configs", name), placed="offload" in name, cost=cost)
                   for name, cost in SHIPPED.items()]
        configs += generated_configs(rng, tmp, args.generated)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            configs = list(pool.map(lambda c: survey(args.tool, c), configs))
            cases, types = draw_cases(rng, candidates(configs), args.cases)
            misses = [m for m in pool.map(lambda case: check_case(args.tool, case), cases) if m]
    for m in misses:
        print("MISSED " + m)
    placed = sum(1 for c in cases if c[1] == "placed")
    by_name = sum(1 for c in cases if c[3] == "name")
    print(f"compare_faults: {len(cases)} faults over {len(configs)} configs and {len(types)} node types "
          f"({by_name} by name, {len(cases) - by_name} by index; {placed} placed): "
          f"{len(misses)} missed, {time.monotonic() - start:.1f} s")
    if args.verbose:
        print("node types: " + ", ".join(types))
        for c in configs:
            print(f"  {c.name}: {' '.join(c.extra)} {', '.join(f'{m} {len(n)} nodes' for m, n in c.nodes.items())}, "
                  f"cost {c.cost}, {sum(1 for k in cases if k[0] is c)} faults")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

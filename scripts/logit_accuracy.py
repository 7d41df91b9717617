#!/usr/bin/env python3
"""How far candidate logits are from exact ones: the measures this project judges backends by.

    python=$(scripts/python-env)
    "$python" scripts/logit_accuracy.py EXACT.npy CANDIDATE.npy [CANDIDATE.npy ...] [--json]

EXACT is a (tokens, vocab) .npy of float64 logits (scripts/real_model_reference.py writes one);
each CANDIDATE is a .npy of the same shape (any float type: llama.cpp's are float32, written by
scripts/llamacpp_logits.cpp). For each candidate it prints:
  nmse         sum((x - ref)^2) / sum(ref^2) over all logits (normalised mean squared error);
  worst        the largest NMSE of a single position (row), and that position's index;
  argmax       how many positions have the exact argmax as their argmax (the greedy next token).
With --tokens (the sequence's ids) also the mean KL divergence of each candidate's next-token
distribution from the exact one (with its standard error) and the perplexity ratio on the next tokens,
written from their definitions: an independent check of backend-compare --kld.
With --json it prints one JSON object {"exact": ..., "positions": N, "candidates": [{...}, ...]}
instead of the table. A candidate whose shape differs from EXACT's is an error (exit 2).
"""
import argparse
import json
import sys

import numpy as np


def log_softmax(x):
    top = x.max(axis=1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=1, keepdims=True))


def divergence(exact, got, tokens):
    """KL(exact || candidate) per position, mean and its standard error, and the perplexity ratio on
    the sequence's next tokens: llama-perplexity's headline figures, written here from their
    definitions (a second implementation beside backend-compare --kld's)."""
    n = len(tokens) - 1
    log_p, log_q = log_softmax(exact[:n]), log_softmax(got[:n])
    kld = (np.exp(log_p) * (log_p - log_q)).sum(axis=1)
    nxt = np.asarray(tokens[1:])
    ln_ratio = log_p[np.arange(n), nxt] - log_q[np.arange(n), nxt]   # nll(candidate) - nll(exact)
    return {"kld_mean": float(kld.mean()), "kld_uncertainty": float(kld.std() / np.sqrt(n - 1)),
            "ppl_ratio": float(np.exp(ln_ratio.mean()))}


def measures(exact, candidate, tokens=None):
    """The figures for one candidate, computed in float64 (candidates are widened first)."""
    got = np.asarray(candidate, dtype=np.float64)
    diff2 = ((got - exact) ** 2).sum(axis=1)      # per position
    ref2 = (exact ** 2).sum(axis=1)
    per_position = diff2 / ref2
    worst = int(per_position.argmax())
    out = {
        "nmse": float(diff2.sum() / ref2.sum()),
        "worst_position_nmse": float(per_position[worst]),
        "worst_position": worst,
        "argmax_agree": int((got.argmax(axis=1) == exact.argmax(axis=1)).sum()),
        "positions": int(exact.shape[0]),
    }
    if tokens is not None:
        out.update(divergence(exact, got, tokens))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exact", help="float64 reference logits .npy (tokens, vocab)")
    parser.add_argument("candidates", nargs="+", help="logits .npy files of the same shape")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--tokens", help="the sequence's token ids (a JSON array file or a comma list): adds the mean "
                        "KL divergence from exact and the perplexity ratio on the next tokens")
    args = parser.parse_args()
    tokens = None
    if args.tokens:
        from real_model_reference import parse_tokens  # noqa: PLC0415 - the one token-list reader of the scripts
        try:
            tokens = parse_tokens(args.tokens)
        except (ValueError, OSError) as e:
            print(f"logit_accuracy: {e}", file=sys.stderr)
            sys.exit(2)

    exact = np.load(args.exact).astype(np.float64, copy=False)
    if exact.ndim != 2:
        print(f"logit_accuracy: {args.exact} has shape {exact.shape}, not (tokens, vocab)", file=sys.stderr)
        sys.exit(2)
    rows = []
    for path in args.candidates:
        candidate = np.load(path)
        if candidate.shape != exact.shape:
            print(f"logit_accuracy: {path} has shape {candidate.shape}, the exact logits {exact.shape}", file=sys.stderr)
            sys.exit(2)
        if tokens is not None and len(tokens) != exact.shape[0]:
            print(f"logit_accuracy: {len(tokens)} tokens for {exact.shape[0]} positions", file=sys.stderr)
            sys.exit(2)
        rows.append(dict(file=path, **measures(exact, candidate, tokens)))
        del candidate   # one candidate in memory at a time (each can be 1-2 GB)

    if args.json:
        print(json.dumps({"exact": args.exact, "positions": int(exact.shape[0]), "candidates": rows}, indent=2))
        return
    n = exact.shape[0]
    print(f"exact: {args.exact} ({n} positions x {exact.shape[1]})")
    kld_head = f" {'mean KLD':>20s} {'PPL ratio':>9s}" if tokens is not None else ""
    print(f"{'nmse':>10s} {'worst pos nmse':>14s} {'at':>5s} {'argmax':>9s}{kld_head}  candidate")
    for r in rows:
        kld = f" {r['kld_mean']:9.6f} +- {r['kld_uncertainty']:8.6f} {r['ppl_ratio']:9.5f}" if tokens is not None else ""
        print(f"{r['nmse']:10.3e} {r['worst_position_nmse']:14.3e} {r['worst_position']:5d} "
              f"{r['argmax_agree']:4d}/{n:<4d}{kld}  {r['file']}")


if __name__ == "__main__":
    main()

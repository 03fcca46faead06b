#!/usr/bin/env python3
"""The peer for bench/offers.sh: `skypool offers H100:8` done the way a Python CLI does it.

It reads the same catalog files and answers the same query (the H100 family, 8 per node, every
provider, on-demand, cheapest first) and prints the same kind of table, with nothing but the
standard library. SkyPilot, dstack and Modal's client are Python CLIs that import far more than
this (pandas, pydantic, grpc) before they print anything, so this is a floor for them, not their
real cost.
"""
import csv
import os
import sys

MODELS = {"H100-SXM", "H100-PCIe", "H100-NVL"}
COUNT = 8


def rows(path):
    with open(path, newline="") as f:
        lines = (line for line in f if not line.startswith("#"))
        yield from csv.DictReader(lines, delimiter="\t")


def main():
    catalog = sys.argv[1] if len(sys.argv) > 1 else "catalog"
    offers = []
    for provider in ("aws", "digitalocean", "modal"):
        for r in rows(os.path.join(catalog, provider + ".tsv")):
            if r["accelerator"] in MODELS and int(r["count"]) == COUNT and r["price"] != "-":
                offers.append((float(r["price"]), provider, r))
    offers.sort(key=lambda o: (o[0], o[1], o[2]["region"], o[2]["zone"]))
    for i, (price, provider, r) in enumerate(offers[:20], 1):
        print(f"{i:<3} {provider:<13} {r['region']:<15} {r['zone']:<14} {r['instance_type']:<13} "
              f"{r['count']}x {r['accelerator']:<10} {price:.2f}")


if __name__ == "__main__":
    main()

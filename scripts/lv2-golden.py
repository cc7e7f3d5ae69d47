#!/usr/bin/env python3
"""Golden data for tests/lv2.rs (issue #15): the RDF of Debian's lv2-dev and
lv2-examples packages as rdflib reads it, independent of forager's parser.

The test serves `usr/lib/lv2` of the extracted packages at http://lv2plug.in/
and seeds the crawl with every bundle's manifest.ttl (where LV2 hosts start).
For each Turtle file this writes `PATH<TAB>SHA256<TAB>TRIPLES<TAB>REACHABLE`:
rdflib's distinct triple count with the file's served URL as base, and
whether a crawl from the manifests reaches it (following subject and object
IRIs, not rdf:type objects, that name another served file).

Usage (Debian bookworm, lv2 1.18.4-2):
    apt-get download lv2-dev lv2-examples
    for d in lv2-*.deb; do dpkg -x "$d" lv2-root; done
    pip install rdflib==7.6.0
    python3 scripts/lv2-golden.py lv2-root/usr/lib/lv2 > tests/data/lv2-golden.tsv
"""
import hashlib
import sys
from collections import deque
from pathlib import Path

import rdflib
from rdflib import RDF, URIRef

rdflib.NORMALIZE_LITERALS = False  # RDF 1.1 term equality (see rdf-oracle.py)
BASE = "http://lv2plug.in/"


def main(root: Path) -> None:
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.ttl"))
    graphs = {}
    for rel in files:
        g = rdflib.Graph()
        g.parse(root / rel, format="turtle", publicID=BASE + rel)
        graphs[rel] = g
    reachable = {f for f in files if f.endswith("/manifest.ttl")}
    queue = deque(sorted(reachable))
    while queue:
        g = graphs[queue.popleft()]
        for s, p, o in g:
            for term in (s, None if p == RDF.type else o):
                if isinstance(term, URIRef) and str(term).startswith(BASE):
                    rel = str(term)[len(BASE):].split("#")[0]
                    if rel in graphs and rel not in reachable:
                        reachable.add(rel)
                        queue.append(rel)
    for rel in files:
        sha = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        triples = len(set(graphs[rel]))
        print(f"{rel}\t{sha}\t{triples}\t{int(rel in reachable)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

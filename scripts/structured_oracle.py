#!/usr/bin/env python3
"""Regenerates tests/data/structured/golden.tsv: per page of the corpus, the
statement counts an independent extractor finds (extruct, its JSON-LD and
RDFa output turned into RDF with rdflib; microdata items counted as the W3C
"Microdata to RDF" note maps them; microformats2 items counted).

    python3 -m venv /tmp/oracle && /tmp/oracle/bin/pip install extruct rdflib
    /tmp/oracle/bin/python scripts/structured_oracle.py

The Rust test tests/structured_oracle.rs compares forager's counts with the
file; CI needs no Python. Nothing is fetched: the schema.org context is
replaced by its @vocab, as forager does; any other remote context fails
its block.
"""
import json
import logging
import os
import sys

import extruct
from extruct.utils import parse_html
import rdflib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "structured")
SCHEMA_ORG = {"https://schema.org", "https://schema.org/", "http://schema.org", "http://schema.org/",
              "https://www.schema.org/", "http://www.schema.org/",
              "https://schema.org/docs/jsonldcontext.json"}


def base_url(name):
    # Must match tests/structured_oracle.rs.
    return "http://corpus.test/" + name


def local_contexts(ctx):
    if isinstance(ctx, str):
        if ctx in SCHEMA_ORG:
            return {"@vocab": "http://schema.org/"}
        raise ValueError("remote context " + ctx)
    if isinstance(ctx, list):
        return [local_contexts(c) for c in ctx]
    return ctx


def replace_contexts(doc):
    if isinstance(doc, dict):
        return {k: (local_contexts(v) if k == "@context" else replace_contexts(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [replace_contexts(d) for d in doc]
    return doc


def json_ld_count(html, url):
    # extruct fails the page on a block that is not JSON: read its blocks one
    # at a time, each one JSON-LD document.
    extractor = extruct.JsonLdExtractor()
    tree = parse_html(html.encode("utf-8"), encoding="utf-8")
    total = set()
    for script in tree.xpath('descendant-or-self::script[@type="application/ld+json"]'):
        try:
            for block in extractor._extract_items(script):
                doc = replace_contexts(block)
                g = rdflib.Dataset()
                g.parse(data=json.dumps(doc), format="json-ld", base=url)
                total |= {(s, p, o) for s, p, o, _ in g.quads()}
        except Exception as e:  # a bad block yields nothing, as in forager
            logging.info("%s: JSON-LD block refused: %s", url, e)
    return len(total)


def microdata_count(html, url):
    items = extruct.MicrodataExtractor().extract(html, base_url=url)

    def count(item):
        n = 0
        types = item.get("type")
        if isinstance(types, str):
            types = [types]
        n += len(types or [])
        for values in (item.get("properties") or {}).values():
            if not isinstance(values, list):
                values = [values]
            for v in values:
                n += 1
                if isinstance(v, dict) and ("properties" in v or "type" in v):
                    n += count(v)
        return n

    return sum(count(i) for i in items)


def rdfa_count(html, url):
    nodes = extruct.RDFaExtractor().extract(html, base_url=url)
    g = rdflib.Graph()
    g.parse(data=json.dumps(nodes), format="json-ld", base=url)
    return len(g)


def microformats_count(html, url):
    items = extruct.MicroformatExtractor().extract(html, base_url=url)

    def count(item):
        n = 1
        for child in item.get("children", []) or []:
            n += count(child)
        for values in (item.get("properties") or {}).values():
            for v in values if isinstance(values, list) else [values]:
                if isinstance(v, dict) and "type" in v:
                    n += count(v)
        return n

    return sum(count(i) for i in items)


def main():
    rows = []
    for folder in sorted(os.listdir(ROOT)):
        path = os.path.join(ROOT, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith(".html"):
                continue
            rel = folder + "/" + name
            with open(os.path.join(path, name), "rb") as f:
                html = f.read().decode("utf-8", "replace")
            url = base_url(rel)
            counts = [json_ld_count(html, url), microdata_count(html, url),
                      rdfa_count(html, url), microformats_count(html, url)]
            rows.append((rel, counts))
    out = os.path.join(ROOT, "golden.tsv")
    with open(out, "w") as f:
        f.write("# page\tjson-ld\tmicrodata\trdfa\tmicroformats  (scripts/structured_oracle.py, extruct %s, rdflib %s)\n"
                % (getattr(extruct, "__version__", "?"), rdflib.__version__))
        for rel, c in rows:
            f.write("%s\t%d\t%d\t%d\t%d\n" % (rel, *c))
    print("wrote", out, len(rows), "pages", file=sys.stderr)


if __name__ == "__main__":
    main()
